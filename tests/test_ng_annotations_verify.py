"""Annotation verify in bounded memory: the digest pass of point layers, the comparisons across
indexes hash-partitioned into buckets (spilled to a temporary folder), and gzip values named
by the walk over every value. Each path is compared with the others on damaged layers: the
same problems, whatever the number of buckets."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_ng_annotations import make_annotations, write

import shardkit
from shardkit.formats.neuroglancer import annotation_spill, annotation_verify
from shardkit.formats.neuroglancer.annotation_spill import Buckets, MultisetHash, groups


def _key(p: Any) -> tuple[Any, ...]:
    return (p.check, p.message, p.field or "", p.offset if p.offset is not None else -1)


def _verify(root: Path, **kw: Any) -> list[tuple[Any, ...]]:
    return sorted(_key(p) for p in shardkit.open(root).verify(**kw))


def _damaged(tmp_path: Path, kind: str, sharded: bool) -> Path:
    """A layer whose relationship and spatial indexes come from other annotations: one
    annotation dropped, one with other property bytes, one related to another segment."""
    anns = make_annotations(kind, 120, seed=3)
    root, other = tmp_path / "l", tmp_path / "other"
    write(root, anns, kind, sharded=sharded, limit=15)
    changed = [dict(a) for a in anns]
    changed[7] = {**changed[7], "properties": {**changed[7]["properties"], "big": 12345}}
    changed[9] = {**changed[9], "relationships": {**changed[9]["relationships"], "pre": [77]}}
    del changed[5]
    info = shardkit.open(root).info
    write(other, changed, kind, sharded=sharded, limit=15,
          lower_bound=info["lower_bound"], upper_bound=info["upper_bound"])
    assert shardkit.open(other).info["spatial"] == info["spatial"]  # the same grids
    for name in ["rel_pre"] + [s["key"] for s in info["spatial"]]:
        shutil.rmtree(root / name)
        shutil.copytree(other / name, root / name)
    return root


@pytest.mark.parametrize(("kind", "sharded"), [("point", True), ("point", False),
                                               ("line", True), ("polyline", False)])
def test_every_path_finds_the_same_problems(tmp_path, kind, sharded):
    root = _damaged(tmp_path, kind, sharded)
    spill = tmp_path / "spill"
    spill.mkdir()
    fast = _verify(root)
    exact = _verify(root, exact=True)
    flushed = []
    real_flush = Buckets.flush

    def flush(self: Buckets) -> None:
        flushed.append(self.parts)
        real_flush(self)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Buckets, "flush", flush)
        many = _verify(root, exact=True, bucket_bytes=512, tmp_dir=str(spill))
    checks = {p[0] for p in fast}
    assert {"by_id", "relationship"} <= checks
    assert "spatial_missing" in checks
    assert fast == exact == many
    assert flushed and min(flushed) > 4  # many buckets, spilled to files
    assert os.listdir(spill) == []  # and removed


def test_problems_name_the_index_key_and_field(tmp_path):
    root = _damaged(tmp_path, "point", False)
    anns = make_annotations("point", 120, seed=3)
    problems = shardkit.open(root).verify()
    seven, five = anns[7]["id"], anns[5]["id"]
    differs = [p for p in problems if p.check == "by_id" and f"annotation {seven}:" in p.message]
    assert differs and all("its record differs" in p.message for p in differs)
    assert "rel_pre" in {p.field.split("/")[1] for p in differs}
    assert all(p.field.split("/")[-2] == "annotations" for p in differs)
    rel = [p for p in problems if p.check == "relationship"]
    pre9 = anns[9]["relationships"]["pre"][0]
    assert any(p.field == "/rel_pre/77/ids" and f"lists annotation {anns[9]['id']}" in p.message
               for p in rel)
    assert any(p.field == f"/rel_pre/{pre9}/ids" and "lacks annotation" in p.message
               for p in rel)
    assert any(p.check == "relationship" and str(five) in p.message for p in problems)


def test_a_sound_point_layer_keeps_nothing_per_annotation(tmp_path, monkeypatch):
    anns = make_annotations("point", 300, seed=1)
    write(tmp_path / "l", anns, "point", sharded=True, limit=20)
    made = []
    real_init = Buckets.__init__

    def init(self: Buckets, *a: Any, **kw: Any) -> None:
        made.append(1)
        real_init(self, *a, **kw)

    monkeypatch.setattr(Buckets, "__init__", init)
    assert shardkit.open(tmp_path / "l").verify() == []
    assert made == []  # the digests agreed: no rows kept
    assert shardkit.open(tmp_path / "l").verify(exact=True, bucket_bytes=256) == []
    assert made  # the exact path made its tables


def test_a_bad_gzip_value_is_named_and_the_walk_goes_on(tmp_path):
    anns = make_annotations("point", 200, seed=2)
    spec = {"@type": "neuroglancer_uint64_sharded_v1", "hash": "identity", "preshift_bits": 0,
            "minishard_bits": 0, "shard_bits": 0, "minishard_index_encoding": "raw",
            "data_encoding": "gzip"}
    write(tmp_path / "l", anns, "point", sharded={"spatial": spec, "by_id": True}, limit=10)
    layer = shardkit.open(tmp_path / "l")
    lvl = layer.spatial[-1]
    reader = lvl.index.kv.shard(0)
    minishards = list(reader.iter_minishards())
    index = minishards[0][1]
    start, end = int(index.starts[0]) + index.base, int(index.ends[0]) + index.base
    code = int(index.ids[0])
    path = tmp_path / "l" / lvl.key / "0.shard"
    raw = bytearray(path.read_bytes())
    raw[start + 10 : end - 8] = b"\xff" * (end - 8 - start - 10)  # the deflate stream
    path.write_bytes(bytes(raw))
    problems = shardkit.open(tmp_path / "l").verify()
    gz = [p for p in problems if p.check == "gzip"]
    assert len(gz) == 1
    assert gz[0].field == f"/{lvl.key}/chunks/{code}" and gz[0].offset == start
    assert gz[0].message.startswith(f"{lvl.key}/0.shard: ")
    assert not [p for p in problems if p.check == "shard"]  # the other cells were read
    # the annotations of that cell only: missing from the spatial index
    missing = {p.message.split()[1] for p in problems if p.check == "spatial_missing"}
    assert missing and len(missing) <= 10


def test_buckets_spill_and_come_back_whole(tmp_path):
    rng = np.random.default_rng(0)
    dtype = [("id", "<u8"), ("v", "<u4")]
    rows = np.zeros(5000, dtype)
    rows["id"] = rng.integers(0, 2**64, 5000, dtype=np.uint64)
    rows["v"] = np.arange(5000)
    with Buckets(dtype, "id", 16, bucket_bytes=2048, tmp_dir=str(tmp_path)) as b:
        for part in np.array_split(rows, 37):
            b.add(part)
        assert b.spilled and len(os.listdir(b.folder)) == 16
        got = [b.bucket(p) for p in range(16)]
        for p, part in enumerate(got):
            assert (annotation_spill.bucket_of(part["id"], 16) == p).all()
            assert (np.diff(part["v"].astype(np.int64)) > 0).all()  # order kept
        back = np.concatenate(got)
        assert sorted(back["v"].tolist()) == list(range(5000))
        sizes = [sum(b.sizes[p] for p in g) * b.dtype.itemsize for g in groups([b], 8192)]
        assert all(s <= 8192 for s in sizes) and sum(sizes) == rows.nbytes
    assert os.listdir(tmp_path) == []


def test_multiset_digest():
    d = MultisetHash(key=7)
    a = np.array([1, 2, 3, 3], np.uint64)
    d.add("x", a, a * 2)
    d.add("y", a[::-1], a[::-1] * 2)
    d.add("z", np.array([1, 2, 3, 4], np.uint64), np.array([2, 4, 6, 6], np.uint64))
    assert d.same("x", "y") and not d.same("x", "z")
    e = MultisetHash()
    assert e.key != MultisetHash().key  # keyed at random per run


def test_verify_layer_options_are_the_default_path(tmp_path):
    anns = make_annotations("point", 50)
    write(tmp_path / "l", anns, "point", sharded=False, limit=10)
    layer = shardkit.open(tmp_path / "l")
    assert annotation_verify.verify_layer(layer) == layer.verify() == []


def test_sharded_by_id_indices_are_decoded_once(tmp_path, monkeypatch):
    from shardkit.formats.neuroglancer import shard as shard_module

    anns = make_annotations("point", 400, seed=4)
    write(tmp_path / "l", anns, "point", sharded=True, limit=30)
    layer = shardkit.open(tmp_path / "l")
    minishards = {}
    for key, index in layer.indexes():
        total = 0
        for number in index.kv.shard_numbers():
            entries = index.kv.shard(number).shard_index()
            total += int((entries[:, 0] != entries[:, 1]).sum())
        minishards[key] = total
    calls = []
    real = shard_module.decode_minishard_index
    monkeypatch.setattr(shard_module, "decode_minishard_index",
                        lambda *a, **kw: calls.append(1) or real(*a, **kw))
    assert shardkit.open(tmp_path / "l").verify() == []
    # by_id's once (read as the shard checks hand them over), the others' twice
    assert len(calls) == minishards["by_id"] + 2 * (sum(minishards.values())
                                                     - minishards["by_id"])


def test_values_read_in_runs_give_the_same_results(tmp_path, monkeypatch):
    from shardkit.formats.neuroglancer import annotation_index

    anns = make_annotations("line", 300, seed=5)
    write(tmp_path / "l", anns, "line", sharded=True, limit=30)
    root = _damaged(tmp_path / "d", "point", True)
    whole = (sorted(a.id for a in shardkit.open(tmp_path / "l")), _verify(root))
    reads = []
    real_runs = annotation_index._runs
    monkeypatch.setattr(annotation_index, "_RUN_BYTES", 64)
    monkeypatch.setattr(annotation_index, "_runs",
                        lambda s, e: reads.append(1) or real_runs(s, e))
    monkeypatch.setattr(annotation_verify, "_runs", annotation_index._runs)
    runs = (sorted(a.id for a in shardkit.open(tmp_path / "l")), _verify(root))
    assert runs == whole and whole[0] == sorted(a["id"] for a in anns)
    assert len(real_runs(np.arange(0, 6400, 64, dtype=np.uint64),
                         np.arange(64, 6464, 64, dtype=np.uint64))) > 10
    assert reads


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


@pytest.mark.parametrize(("kind", "sharded"), [("point", True), ("point", False),
                                               ("line", True)])
def test_the_writer_in_many_parts_writes_the_same_files(tmp_path, kind, sharded, monkeypatch):
    from shardkit.writers import ng_annotations

    anns = make_annotations(kind, 500, seed=6)
    write(tmp_path / "one", anns, kind, sharded=sharded, limit=40)
    flushed = []
    real_flush = Buckets.flush

    def flush(self: Buckets) -> None:
        flushed.append(self.folder or "")
        real_flush(self)

    monkeypatch.setattr(Buckets, "flush", flush)
    monkeypatch.setattr(ng_annotations, "_CHUNK", 64)
    write(tmp_path / "many", anns, kind, sharded=sharded, limit=40, bucket_bytes=1024)
    assert flushed  # partitioned through files
    assert _files(tmp_path / "one") == _files(tmp_path / "many")
    assert not [p for p in (tmp_path / "many").iterdir() if p.name.startswith(".")]
    with pytest.raises(ValueError, match="unique"):
        write(tmp_path / "dup", [*anns, anns[17]], kind, sharded=sharded, bucket_bytes=1024)
