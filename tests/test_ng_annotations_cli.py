"""The command line on annotation layers: create from NDJSON, info, ls, get, verify, diff."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import shardkit
from shardkit.cli import main

META = {"annotation_type": "line", "dimensions": {"x": [1, "nm"], "y": [1, "nm"]},
        "properties": [{"id": "kind", "type": "uint8", "enum_values": [0, 1],
                        "enum_labels": ["pre", "post"]}],
        "relationships": ["seg"], "limit": 8}


def _ndjson(path: Path, n: int = 40, bad: str | None = None) -> Path:
    lines = [json.dumps({"id": i + 1, "point_a": [i, 0], "point_b": [i, 10],
                         "properties": {"kind": i % 2}, "relationships": {"seg": [i % 4]}})
             for i in range(n)]
    if bad is not None:
        lines.insert(3, bad)
    path.write_text("\n".join(lines) + "\n")
    return path


def test_create_then_read_everywhere(tmp_path, capsys):
    src = _ndjson(tmp_path / "in.ndjson")
    out = tmp_path / "layer"
    assert main(["create", "--format", "ng-annotations", "--metadata", json.dumps(META),
                 str(out), str(src), "--json"]) == 0
    done = json.loads(capsys.readouterr().out)
    assert done["annotations"] == 40 and done["spatial_levels"] >= 2 and done["sharded"]
    layer = shardkit.open(out)
    assert layer[5].to_dict() == {"id": 5, "type": "line", "point_a": [4.0, 0.0],
                                  "point_b": [4.0, 10.0], "properties": {"kind": 0},
                                  "labels": {"kind": "pre"}, "relationships": {"seg": [0]}}
    assert not list(tmp_path.glob(".layer.*"))  # no temporary folder left
    assert main(["get", str(out), "6", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["point_a"] == [5.0, 0.0] and got["labels"] == {"kind": "post"}
    assert main(["ls", str(out)]) == 0
    assert sorted(int(x) for x in capsys.readouterr().out.split()) == list(range(1, 41))
    assert main(["info", str(out), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["annotation_count"] == 40 and info["annotation_type"] == "line"
    assert [i["key"] for i in info["indexes"]][:2] == ["by_id", "rel_seg"]
    assert main(["verify", str(out)]) == 0
    capsys.readouterr()
    # a second layer with one annotation moved: diff names it
    other = tmp_path / "other"
    moved = _ndjson(tmp_path / "in2.ndjson").read_text().replace('"point_b": [7, 10]',
                                                                 '"point_b": [7, 11]')
    (tmp_path / "in2.ndjson").write_text(moved)
    meta = {**META, "lower_bound": [0, 0], "upper_bound": [40, 12]}
    assert main(["create", "--format", "ng-annotations", "--metadata", json.dumps(meta),
                 str(other), str(tmp_path / "in2.ndjson")]) == 0
    capsys.readouterr()
    main(["diff", str(out), str(other)])
    text = capsys.readouterr().out
    assert "changed: 8 " in text


def test_create_refuses_bad_lines_and_metadata(tmp_path, capsys):
    out = tmp_path / "layer"
    src = _ndjson(tmp_path / "in.ndjson", bad='{"id": 99, "point_a": [1, 2]}')
    assert main(["create", "--format", "ng-annotations", "--metadata", json.dumps(META),
                 str(out), str(src)]) == 2
    err = capsys.readouterr().err
    assert "in.ndjson:4" in err and "point_b is missing" in err
    assert not out.exists() and not list(tmp_path.glob(".layer.*"))
    assert main(["create", "--format", "ng-annotations", "--metadata",
                 json.dumps({"dimensions": META["dimensions"]}), str(out), str(src)]) == 2
    assert "annotation_type is required" in capsys.readouterr().err
    assert main(["create", "--format", "ng-annotations", "--metadata",
                 json.dumps({**META, "colour": 1}), str(out), str(src)]) == 2
    assert "unknown field(s) colour" in capsys.readouterr().err
    assert main(["create", "--format", "ng-annotations", "--codec", "zlib", "--metadata",
                 json.dumps(META), str(out), str(src)]) == 2
    assert "--codec not supported" in capsys.readouterr().err
    for bad, message in (("[1, 2]", "in.ndjson:4: must be a JSON object (an annotation), not "
                                    "list"), ("{1", "in.ndjson:4: not JSON: ")):
        src = _ndjson(tmp_path / "in.ndjson", bad=bad)
        assert main(["create", "--format", "ng-annotations", "--metadata", json.dumps(META),
                     str(out), str(src)]) == 2
        assert message in capsys.readouterr().err
        assert not out.exists()


def test_verify_exit_code_names_the_problem(tmp_path, capsys):
    src = _ndjson(tmp_path / "in.ndjson")
    out = tmp_path / "layer"
    meta = {**META, "sharded": False}
    assert main(["create", "--format", "ng-annotations", "--metadata", json.dumps(meta),
                 str(out), str(src)]) == 0
    raw = bytearray((out / "by_id" / "3").read_bytes())
    raw[16] = 7  # kind: not an enum value
    (out / "by_id" / "3").write_bytes(bytes(raw))
    capsys.readouterr()
    assert main(["verify", str(out), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    text = json.dumps(report)
    assert "/by_id/3/properties/kind" in text


@pytest.mark.parametrize("stdin", [True])
def test_create_from_stdin(tmp_path, capsys, monkeypatch, stdin):
    import io

    src = _ndjson(tmp_path / "in.ndjson", n=5)
    monkeypatch.setattr("sys.stdin", io.StringIO(src.read_text()))
    assert main(["create", "--format", "ng-annotations", "--metadata", json.dumps(META),
                 str(tmp_path / "l"), "-"]) == 0
    assert len(shardkit.open(tmp_path / "l")) == 5


def _layer(tmp_path: Path, name: str, sharded: bool) -> Path:
    src = _ndjson(tmp_path / f"{name}.ndjson", n=30)
    out = tmp_path / name
    assert main(["create", "--format", "ng-annotations", "--metadata",
                 json.dumps({**META, "sharded": sharded}), str(out), str(src)]) == 0
    return out


def test_bulk_verify_takes_a_layer_as_one_target(tmp_path, capsys):
    from shardkit import bulk

    good, bad = _layer(tmp_path, "good", True), _layer(tmp_path, "bad", False)
    (bad / "rel_seg" / "2").unlink()  # by_id relates annotations to segment 2: now unlisted
    capsys.readouterr()
    results = {Path(r["target"]).name: r
               for r in bulk.run([str(good), str(bad)], jobs=1).results}
    assert results["good"]["status"] == "sound" and results["good"]["problems"] == []
    assert results["bad"]["status"] == "unsound"
    assert {p["check"] for p in results["bad"]["problems"]} == {"relationship"}
    assert len(results["bad"]["problems"]) == 7  # annotations 3, 7, ..., 27
    assert main(["verify", str(good), str(bad)]) == 1


def test_view_tree_of_a_layer(tmp_path):
    from shardkit.view.model import build_root

    for sharded in (True, False):
        layer = shardkit.open(_layer(tmp_path, f"v{sharded}", sharded))
        kids = build_root(layer).kids()
        nodes = {n.key: n for n in kids.nodes(0, len(kids))}
        assert list(nodes)[:3] == ["info", "annotations", "cells of spatial0"]
        first = nodes["annotations"].kids().nodes(0, 1)[0]
        assert first.key == "1" and first.path == "/annotations/1"
        cell = nodes["cells of spatial0"].kids().nodes(0, 1)[0]
        assert cell.key == "0_0"
        assert ("shard files" in nodes["by_id"].value) == sharded
        if sharded:
            shard = nodes["by_id"].kids().nodes(0, 1)[0]
            assert shard.key.endswith(".shard") and shard.end > 0
