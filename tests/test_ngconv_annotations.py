"""``ng shard`` / ``ng unshard`` of annotation layers: values moved as they are, keys changed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_ng_annotations import DIMS, PROPS, make_annotations

import shardkit
from shardkit.cli import main
from shardkit.ng.convert import shard_layer, unshard_layer
from shardkit.writers.neuroglancer import write_annotations


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.name != "info"}


@pytest.mark.parametrize("kind", ["point", "ellipsoid"])
def test_shard_then_unshard_gives_the_same_files(tmp_path, kind):
    anns = make_annotations(kind, 150, seed=5)
    write_annotations(tmp_path / "u", anns, annotation_type=kind, dimensions=DIMS,
                      properties=PROPS, relationships=["pre", "post"], sharded=False, limit=20)
    report = shard_layer(tmp_path / "u", tmp_path / "s")
    info = json.loads((tmp_path / "s" / "info").read_text())
    assert "sharding" in info["by_id"] and all("sharding" in r for r in info["relationships"])
    assert all(s["sharding"]["hash"] == "identity" for s in info["spatial"])
    assert info["by_id"]["sharding"]["hash"] == "murmurhash3_x86_128"
    assert set(report.specs) == {"by_id", "rel_pre", "rel_post",
                                 *(s["key"] for s in info["spatial"])}
    assert not list((tmp_path / "s" / "by_id").glob("[0-9]*[0-9]"))  # shard files only
    unsharded, sharded = shardkit.open(tmp_path / "u"), shardkit.open(tmp_path / "s")
    for a in anns:
        assert sharded.raw(a["id"]) == unsharded.raw(a["id"])
    for li, level in enumerate(info["spatial"]):
        for cell in [(0, 0, 0), tuple(g - 1 for g in level["grid_shape"])]:
            assert [x.id for x in sharded.read_cell(li, cell)] == \
                [x.id for x in unsharded.read_cell(li, cell)]
    assert sharded.verify() == []
    unshard_layer(tmp_path / "s", tmp_path / "back")
    assert _files(tmp_path / "back") == _files(tmp_path / "u")
    back = json.loads((tmp_path / "back" / "info").read_text())
    assert back == json.loads((tmp_path / "u" / "info").read_text())


def test_cli_shard_with_given_spec_per_index(tmp_path, capsys):
    anns = make_annotations("point", 80, seed=6)
    write_annotations(tmp_path / "u", anns, annotation_type="point", dimensions=DIMS,
                      properties=PROPS, relationships=["pre", "post"], sharded=False, limit=30)
    spec = {"@type": "neuroglancer_uint64_sharded_v1", "hash": "murmurhash3_x86_128",
            "preshift_bits": 0, "minishard_bits": 1, "shard_bits": 2,
            "minishard_index_encoding": "raw", "data_encoding": "raw"}
    assert main(["ng", "shard", str(tmp_path / "u"), str(tmp_path / "s"), "--spec",
                 json.dumps({"by_id": spec}), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["specs"]["by_id"] == spec
    assert sorted(p.name for p in (tmp_path / "s" / "by_id").iterdir()) == [
        "0.shard", "1.shard", "2.shard", "3.shard"]
    layer = shardkit.open(tmp_path / "s")
    assert sorted(layer.keys()) == sorted(a["id"] for a in anns)
    assert layer.verify() == []
    assert main(["ng", "unshard", str(tmp_path / "s"), str(tmp_path / "b")]) == 0
    assert _files(tmp_path / "b") == _files(tmp_path / "u")
