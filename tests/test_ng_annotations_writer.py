"""The annotation writer's output, byte for byte, and its temporary files.

The layers of fixed-seed inputs below are hashed file by file; the hashes were taken from the
writer as it was before shards were written as streams (each shard built whole in memory), so
the streaming writer is checked to write the very same bytes. Only ``raw`` encodings are
hashed (gzip bytes depend on the zlib in use); gzip layers are compared across memory bounds
and read back value by value.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_ng_annotations import make_annotations, same, write

import shardkit

RAW_HASHED = {"@type": "neuroglancer_uint64_sharded_v1", "hash": "murmurhash3_x86_128",
              "preshift_bits": 0, "minishard_bits": 3, "shard_bits": 2,
              "minishard_index_encoding": "raw", "data_encoding": "raw"}
RAW_SPATIAL = {"@type": "neuroglancer_uint64_sharded_v1", "hash": "identity",
               "preshift_bits": 1, "minishard_bits": 2, "shard_bits": 1,
               "minishard_index_encoding": "raw", "data_encoding": "raw"}
GZIP_HASHED = {**RAW_HASHED, "minishard_index_encoding": "gzip", "data_encoding": "gzip"}
GZIP_SPATIAL = {**RAW_SPATIAL, "minishard_index_encoding": "gzip", "data_encoding": "gzip"}
RAW = {"by_id": RAW_HASHED, "relationships": RAW_HASHED, "spatial": RAW_SPATIAL}
GZIP = {"by_id": GZIP_HASHED, "relationships": GZIP_HASHED, "spatial": GZIP_SPATIAL}

CASES: dict[str, tuple[str, int, Any]] = {
    "point_raw": ("point", 1500, RAW),
    "polyline_raw": ("polyline", 700, RAW),
    "line_mixed": ("line", 600, {**RAW, "post": False, "spatial": False}),
    "ellipsoid_raw": ("ellipsoid", 500, RAW),
}


def _digest(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(root)).encode() + b"\0")
            h.update(hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def _layer(tmp_path: Path, name: str, bucket_bytes: int | None = None) -> Path:
    kind, n, sharded = CASES[name]
    kw: dict[str, Any] = {} if bucket_bytes is None else {"bucket_bytes": bucket_bytes}
    write(tmp_path / name, make_annotations(kind, n, seed=11), kind, sharded=sharded,
          limit=25, **kw)
    return tmp_path / name


if __name__ == "__main__":  # prints the hashes (how DIGESTS below were made)
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for case in CASES:
            print(f'    "{case}": "{_digest(_layer(Path(tmp), case))}",', file=sys.stdout)


DIGESTS = {
    "point_raw": "fffb55fd5d6e2d1736b4afa953927366b530ad2f481f48c166a3cf32008fca26",
    "polyline_raw": "2423be1a22722b3eaa3ce8f9b391ec3ca140035afb5a83a2cecb7a22b553b818",
    "line_mixed": "81fe5d85934994153b814655350101a7ff489d72a2cc80d18d36e54fff02e186",
    "ellipsoid_raw": "7a0ee8fbbb429b45a3884a03fab50f6673cc60d29006b3ac49b86989b1bba861",
}


@pytest.fixture
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks, value batches and parts far smaller than the layer (many of each)."""
    from shardkit.writers import ng_annotation_shards, ng_annotations

    monkeypatch.setattr(ng_annotations, "_CHUNK", 64)
    monkeypatch.setattr(ng_annotation_shards, "_VALUE_ROWS", 5)


@pytest.mark.parametrize("case", sorted(CASES))
def test_layers_are_the_bytes_the_whole_shard_writer_wrote(tmp_path: Path, case: str) -> None:
    root = _layer(tmp_path, case)
    assert _digest(root) == DIGESTS[case]
    assert not [p for p in root.rglob(".*")]  # no temporary file left


@pytest.mark.parametrize("case", sorted(CASES))
def test_in_small_parts_the_bytes_are_the_same(tmp_path: Path, case: str,
                                               small_batches: None) -> None:
    from shardkit.writers.ng_annotation_shards import ShardParts

    made: list[int] = []
    real_init = ShardParts.__init__

    def init(self: ShardParts, *a: Any, **k: Any) -> None:
        real_init(self, *a, **k)
        made.append(self.buckets.parts)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ShardParts, "__init__", init)
        root = _layer(tmp_path, case, bucket_bytes=1024)
    assert made and max(made) > 1  # shards written from many parts
    assert _digest(root) == DIGESTS[case]
    assert not [p for p in root.rglob(".*")]


@pytest.mark.parametrize("kind", ["point", "polyline", "axis_aligned_bounding_box"])
def test_gzip_shards_in_small_parts_are_the_same_and_read_back(
        tmp_path: Path, kind: str, small_batches: None) -> None:
    anns = make_annotations(kind, 400, seed=5)
    write(tmp_path / "one", anns, kind, sharded=GZIP, limit=30)
    write(tmp_path / "many", anns, kind, sharded=GZIP, limit=30, bucket_bytes=1024)
    assert _files(tmp_path / "one") == _files(tmp_path / "many")
    layer = shardkit.open(tmp_path / "many")
    assert len(layer) == len(anns)
    for want in anns[::7]:
        same(layer.get(want["id"]), want)
    pre = sorted(a["id"] for a in anns if 3 in a["relationships"]["pre"])
    assert sorted(a.id for a in layer.related("pre", 3)) == pre
    assert layer.verify() == []
    assert not [p for p in (tmp_path / "many").rglob(".*")]


def test_a_shard_file_is_the_layout_of_shard_pieces(tmp_path: Path) -> None:
    """ShardFile, fed a minishard at a time, writes what the in-memory builder builds."""
    from shardkit.formats.neuroglancer import ShardingSpec
    from shardkit.writers.neuroglancer import build_shards
    from shardkit.writers.ng_annotation_shards import ShardFile, global_minishards

    rng = np.random.default_rng(3)
    for enc in ("raw", "gzip"):
        spec = ShardingSpec.coerce({**RAW_HASHED, "shard_bits": 0, "minishard_bits": 4,
                                    "data_encoding": enc, "minishard_index_encoding": enc})
        keys = np.unique(rng.integers(1, 1 << 40, 300, dtype=np.uint64))
        items = {int(k): rng.bytes(int(rng.integers(0, 40))) for k in keys}
        gm = global_minishards(spec, keys)
        order = np.lexsort((keys, gm))
        with open(tmp_path / f"{enc}.shard", "wb") as fh:
            sf = ShardFile(fh, spec, str(tmp_path))
            for j in order.tolist():  # one key a call: a minishard comes in many calls
                sf.add(int(gm[j]), keys[j : j + 1], [items[int(keys[j])]])
            sf.finish()
        assert (tmp_path / f"{enc}.shard").read_bytes() == build_shards(items, spec)["0.shard"]
        with open(tmp_path / "x.shard", "wb") as fh:
            sf = ShardFile(fh, spec, str(tmp_path))
            sf.add(5, keys[:1], [b"a"])
            with pytest.raises(ValueError, match="ascending"):
                sf.add(2, keys[1:2], [b"b"])
            sf.close()


def test_a_failure_mid_shard_leaves_no_file_under_its_name(tmp_path: Path,
                                                           small_batches: None) -> None:
    from shardkit.writers import ng_annotation_shards

    anns = make_annotations("point", 600, seed=2)
    write(tmp_path / "good", anns, "point", sharded=RAW, limit=25)
    good = _files(tmp_path / "good")
    calls = {"n": 0}
    real_add = ng_annotation_shards.ShardFile.add

    def failing_add(self: Any, *a: Any, **k: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 40:  # some shards done, one half written
            raise OSError(28, "No space left on device")
        real_add(self, *a, **k)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ng_annotation_shards.ShardFile, "add", failing_add)
        with pytest.raises(OSError, match="No space"):
            write(tmp_path / "bad", anns, "point", sharded=RAW, limit=25)
    bad = _files(tmp_path / "bad")
    assert "info" not in bad  # the layer is not complete
    assert bad and set(bad) < set(good)
    for name, data in bad.items():  # what is there is whole: a file is complete or absent
        assert data == good[name], name
    assert not [p for p in (tmp_path / "bad").rglob(".*")]  # no temporary file left


def test_remote_destination_gets_the_same_bytes(tmp_path: Path) -> None:
    fsspec = pytest.importorskip("fsspec")
    anns = make_annotations("line", 300, seed=4)
    write(tmp_path / "local", anns, "line", sharded=GZIP, limit=30)
    url = f"memory://ann-{tmp_path.name}/layer"
    write(url, anns, "line", sharded=GZIP, limit=30)  # type: ignore[arg-type]
    fs = fsspec.filesystem("memory")
    root = url[len("memory:/"):]
    got = {p[len(root) + 1:]: fs.cat_file(p) for p in fs.find(root)}
    assert got == _files(tmp_path / "local")
    fs.rm(root, recursive=True)


POINT = {"dimensions": {"x": [1, "nm"], "y": [1, "nm"], "z": [1, "nm"]},
         "annotation_type": "point"}


@pytest.mark.parametrize("fast", [True, False])
def test_values_past_float32_are_refused_not_stored_as_inf(tmp_path: Path, fast: bool) -> None:
    """A coordinate or a float32 property too large for float32 is a ValueError (the
    vectorised and the one-by-one encoders agree), not inf in the file."""
    from shardkit.writers.neuroglancer import write_annotations

    props = [{"id": "score", "type": "float32"}, {"id": "c", "type": "rgb"}]
    colour: Any = [1, 2, 3] if fast else "#010203"  # a colour string goes one by one
    good = {"id": 1, "point": [1.0, 2.0, 3.0], "properties": {"score": 1.0, "c": colour}}
    for bad in ({**good, "id": 2, "point": [1e39, 0.0, 0.0]},
                {**good, "id": 2, "properties": {"score": -1e39, "c": colour}}):
        with pytest.raises(ValueError, match="annotation 2"):
            write_annotations(tmp_path / "l", [good, bad], properties=props, **POINT)
        assert not (tmp_path / "l" / "info").exists()
    # NaN and inf property values are float32 values: kept
    info = write_annotations(tmp_path / "ok", [
        good, {**good, "id": 2, "properties": {"score": float("inf"), "c": colour}}],
        properties=props, **POINT)
    assert info["properties"][0]["id"] == "score"
    layer = shardkit.open(tmp_path / "ok")
    assert layer.get(2).properties["score"] == np.float32(np.inf)
    assert list(layer.get(1).properties["c"]) == [1, 2, 3]


@pytest.mark.parametrize("value", [3, "zz"])
def test_an_enum_value_outside_its_values_is_refused(tmp_path: Path, value: Any) -> None:
    from shardkit.writers.neuroglancer import write_annotations

    props = [{"id": "kind", "type": "uint8", "enum_values": [0, 1, 2],
              "enum_labels": ["a", "b", "c"]}]
    anns = [{"id": i, "point": [float(i), 0.0, 0.0], "properties": {"kind": i % 3}}
            for i in range(1, 20)]
    with pytest.raises(ValueError, match="annotation 7: property kind"):
        write_annotations(tmp_path / "l", [*anns[:6], {**anns[6], "properties": {"kind": value}},
                                           *anns[7:]], properties=props, **POINT)
    write_annotations(tmp_path / "ok", [*anns, {"id": 99, "point": [0.0, 0.0, 0.0],
                                                "properties": {"kind": "c"}}],
                      properties=props, **POINT)
    layer = shardkit.open(tmp_path / "ok")
    assert layer.get(99).properties["kind"] == 2 and layer.get(4).properties["kind"] == 1
    assert layer.verify() == []


@pytest.mark.parametrize(("window", "gap"), [(1 << 20, 1 << 16), (64, 8), (1, 0)])
def test_read_ranges_reads_every_range_in_few_calls(tmp_path: Path, window: int,
                                                    gap: int) -> None:
    """The pieces' reader: sorted ranges (fixed or varied sizes, empty ones, far and near
    gaps) come back byte for byte, in at most one call per window or far gap."""
    import os

    from shardkit.writers import ng_annotation_values as nv

    rng = np.random.default_rng(8)
    data = rng.bytes(4_000_000)
    (tmp_path / "f").write_bytes(data)
    fd = os.open(tmp_path / "f", os.O_RDONLY)
    calls: list[int] = []
    real = os.pread

    def pread(fd_: int, n: int, off: int) -> bytes:
        calls.append(n)
        return real(fd_, n, off)

    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(nv.os, "pread", pread)
            for sizes in (np.full(500, 28), rng.integers(0, 90, 500)):
                gaps = rng.choice([0, 3, 40, 5000], 500)
                starts = np.cumsum(gaps + np.concatenate(([0], sizes[:-1])))
                ends = starts + sizes
                calls.clear()
                out, offsets = nv.read_ranges(fd, starts, ends, window=window, gap=gap)
                want = b"".join(data[s:e] for s, e in zip(starts.tolist(), ends.tolist(),
                                                           strict=True))
                assert out.tobytes() == want
                assert offsets.tolist() == [0, *np.cumsum(sizes).tolist()]
                far = int(np.sum(starts[1:] - ends[:-1] > gap))
                assert len(calls) <= far + 1 + int(ends[-1] - starts[0]) // window + 1
                if window > 1000:  # big windows: one call per far gap at most
                    assert len(calls) <= far + 1
            assert nv.read_ranges(fd, np.zeros(0, np.int64), np.zeros(0, np.int64))[0].size == 0
    finally:
        os.close(fd)


def test_an_ellipsoid_past_float32_is_refused(tmp_path: Path) -> None:
    from shardkit.writers.neuroglancer import write_annotations

    big = float(np.finfo(np.float32).max)
    anns = [{"id": 1, "center": [1.0, 1.0, 1.0], "radii": [1.0, 1.0, 1.0]},
            {"id": 5, "center": [big, 0.0, 0.0], "radii": [big, 1.0, 1.0]}]
    with pytest.raises(ValueError, match="annotation 5: its bounding box"):
        write_annotations(tmp_path / "l", anns, annotation_type="ellipsoid",
                          dimensions=POINT["dimensions"])
    assert not (tmp_path / "l" / "info").exists()


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 1000, 1003])
def test_all_bits_is_every_row_set(n: int) -> None:
    from shardkit.writers.ng_annotations import _all_bits, _bits_rows, _set_bits

    want = np.zeros((n + 7) // 8, np.uint8)
    _set_bits(want, np.arange(n))
    assert _all_bits(n).tolist() == want.tolist()
    got = list(_bits_rows(_all_bits(n), n))
    assert (np.concatenate(got).tolist() if got else []) == list(range(n))
