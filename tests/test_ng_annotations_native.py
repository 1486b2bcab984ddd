"""The fast paths of annotation verify against their twins: the C array hashes
(``shardkit.hashing._murmur``) against numpy and ``mmh3``, the one-step gunzip against
:func:`gunzip_capped`, the gzip values read a run at a time against the walk over every value,
and verify with and without the C accelerator on damaged layers (the same problems)."""

from __future__ import annotations

import gzip
import os
import random
import zlib
from pathlib import Path
from typing import Any

import mmh3
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_ng_annotations import make_annotations, write
from test_ng_annotations_verify import _damaged, _verify

import shardkit
from shardkit.errors import ShardkitError
from shardkit.formats.neuroglancer import annotation_spill
from shardkit.formats.neuroglancer.decode import gunzip_capped, gunzip_one
from shardkit.hashing import murmur

native = murmur._native
ng_native = annotation_spill._native
needs_native = pytest.mark.skipif(native is None or ng_native is None,
                                  reason="the C accelerators are not built")

def test_accelerators_built_when_required():
    # SHARDKIT_REQUIRE_NATIVE=1 (as for the SWH extension): a missing build is a failure
    if os.environ.get("SHARDKIT_REQUIRE_NATIVE") and not os.environ.get("SHARDKIT_NO_NATIVE"):
        assert native is not None and ng_native is not None
    if os.environ.get("SHARDKIT_NO_NATIVE"):
        assert native is None and ng_native is None


EDGE_IDS = [0, 1, 2, 255, 256, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**32 + 1, 2**53 + 1,
            2**63 - 1, 2**63, 2**64 - 2, 2**64 - 1, 0x0123456789ABCDEF, 0xFEDCBA9876543210]


def _mmh3(v: int) -> int:
    return mmh3.hash64(v.to_bytes(8, "little"), 0, False, False)[0]


def _ids() -> np.ndarray:
    rng = np.random.default_rng(7)
    return np.concatenate([np.array(EDGE_IDS, np.uint64),
                           rng.integers(0, 2**64, 5000, dtype=np.uint64, endpoint=False),
                           np.arange(1000, dtype=np.uint64)])


def test_murmur_known_answers():
    # cloud-volume's pinned example (minishard 18), then mmh3 one key at a time
    assert int(murmur.hash_uint64_array([1822975381 >> 6])[0]) & 0x7FF == 18
    ids = _ids()
    want = np.array([_mmh3(v) for v in ids.tolist()], np.uint64)
    with np.errstate(over="ignore"):
        numpy_twin = murmur._hash_uint64_numpy(ids)
    assert np.array_equal(numpy_twin, want)
    assert np.array_equal(murmur.hash_uint64_array(ids), want)
    assert [murmur.hash_uint64(v) for v in EDGE_IDS] == want[: len(EDGE_IDS)].tolist()
    assert murmur.hash_uint64_array(np.zeros(0, np.uint64)).tolist() == []
    # shape kept, and lists of ints taken
    assert murmur.hash_uint64_array(ids[:12].reshape(3, 4)).shape == (3, 4)
    assert murmur.hash_uint64_array([0, 2**64 - 1]).tolist() == [_mmh3(0), _mmh3(2**64 - 1)]


@needs_native
def test_native_murmur_equals_numpy_and_mmh3():
    ids = _ids()
    out = np.empty(len(ids), "<u8")
    native.murmur_u64(ids, out)
    with np.errstate(over="ignore"):
        assert np.array_equal(out, murmur._hash_uint64_numpy(ids))
    assert out[: len(EDGE_IDS)].tolist() == [_mmh3(v) for v in EDGE_IDS]
    # big-endian input is hashed as its values (converted to little-endian first)
    assert np.array_equal(murmur.hash_uint64_array(ids.astype(">u8")), out)


@needs_native
def test_native_hashes_refuse_buffers_that_disagree():
    with pytest.raises(ValueError):
        native.murmur_u64(b"\0" * 12, bytearray(12))
    with pytest.raises(ValueError):
        native.murmur_u64(b"\0" * 16, bytearray(8))
    with pytest.raises(TypeError):
        native.murmur_u64(b"\0" * 8, b"\0" * 8)  # not writable
    keys = np.ones(4, "<u8")
    with pytest.raises(ValueError):
        ng_native.keyed_rows(b"\0" * 20, 0, keys, bytearray(8))
    with pytest.raises(ValueError):
        ng_native.keyed_rows(b"\0" * 21, 20, keys, bytearray(8))  # not whole rows
    with pytest.raises(ValueError):
        ng_native.keyed_rows(b"\0" * 40, 20, keys[:3], bytearray(16))  # too few keys
    with pytest.raises(ValueError):
        ng_native.keyed_rows(b"\0" * 40, 20, keys, bytearray(8))  # output too small


@needs_native
@pytest.mark.parametrize("width", [1, 4, 7, 8, 12, 20, 24, 33, 64])
def test_native_row_hash_equals_numpy(width):
    rng = np.random.default_rng(width)
    recs = rng.integers(0, 256, (777, width), dtype=np.uint8)
    recs[0] = 0
    recs[1] = 255
    keys = annotation_spill.random_odd(-(-width // 8) + 3)  # more keys than needed
    want = annotation_spill._hash_rows_numpy(recs, keys)
    assert np.array_equal(annotation_spill.hash_rows(recs, keys), want)
    # a strided view (a column slice) is hashed as its rows
    wide = np.concatenate([recs, recs], axis=1)
    assert np.array_equal(annotation_spill.hash_rows(wide[:, :width], keys), want)
    # distinct rows hash apart
    assert len(set(want.tolist())) == len(np.unique(recs, axis=0))


@needs_native
@pytest.mark.parametrize("ncols", [1, 2, 3, 4])
def test_native_multiset_sum_equals_numpy(ncols):
    rng = np.random.default_rng(ncols)
    cols = [rng.integers(0, 2**64, 3001, dtype=np.uint64) for _ in range(ncols)]
    cols[0][:3] = [0, 2**64 - 1, 2**63]
    d = annotation_spill.MultisetHash()
    want = d._sum(tuple(cols))
    got = ng_native.multiset_sum(int(d.key), np.array(d.muls, "<u8"), tuple(cols))
    assert got == want
    # through add, in parts and in another order: the same digest
    d.add("whole", *cols)
    order = rng.permutation(3001)
    for part in np.array_split(order, 7):
        d.add("parts", *(c[part] for c in cols))
    assert d.sums["whole"] == d.sums["parts"] == want
    assert d.counts["parts"] == 3001
    # int64 columns (cell refs) are taken as their uint64 bits, as numpy casts them
    signed = cols[0].view(np.int64)
    d.add("signed", signed, *cols[1:])
    assert d.sums["signed"] == want
    with pytest.raises(ValueError):
        ng_native.multiset_sum(1, np.ones(4, "<u8"), (cols[0], cols[0][:-1]))  # lengths differ
    with pytest.raises(ValueError):
        ng_native.multiset_sum(1, np.ones(5, "<u8"), (cols[0],) * 5)  # more than 4
    with pytest.raises(ValueError):
        d.add("bad", cols[0], cols[0][:-1])


def test_multiset_digest_without_the_accelerator(monkeypatch):
    cols = (np.arange(50, dtype=np.uint64), np.arange(50, dtype=np.uint64) * 3)
    d = annotation_spill.MultisetHash(key=9)
    d.add("c", *cols)
    monkeypatch.setattr(annotation_spill, "_native", None)
    d.add("py", *cols)
    assert d.sums["c"] == d.sums["py"] == d._sum(cols)


@needs_native
def test_native_copy_spans_equals_numpy():
    rng = np.random.default_rng(3)
    buf = rng.integers(0, 256, 5000, dtype=np.uint8)
    starts = rng.integers(0, 4000, 300).astype(np.uint64)
    lengths = rng.integers(0, 1000, 300).astype(np.uint64)
    lengths[:5] = 0
    starts[5], lengths[5] = 4999, 1  # the last byte
    starts[6], lengths[6] = 5000, 0  # an empty span at the end
    got = annotation_spill.copy_spans(buf, starts, lengths)
    want = annotation_spill._copy_spans_numpy(buf, starts, lengths)
    assert np.array_equal(got, want) and len(got) == int(lengths.sum())
    one = [buf[int(s) : int(s) + int(n)] for s, n in zip(starts, lengths, strict=True)]
    assert np.array_equal(got, np.concatenate(one))
    for bad_start, bad_len in ((4999, 2), (5001, 0), (2**64 - 1, 2), (2**62, 2**62 + 7),
                               (3, 2**63 + 1)):
        s_, n_ = np.array([bad_start], np.uint64), np.array([bad_len], np.uint64)
        with pytest.raises(ValueError):
            annotation_spill.copy_spans(buf, s_, n_)
        with pytest.raises(ValueError):
            annotation_spill._copy_spans_numpy(buf, s_, n_)
    with pytest.raises(ValueError):  # the destination not filled exactly
        ng_native.copy_spans(buf, starts, lengths, np.empty(int(lengths.sum()) + 1, np.uint8))


def _minishard_outcome(fn: Any, raw: bytes, base: int) -> tuple[Any, ...]:
    from shardkit.formats.neuroglancer import decode

    try:
        if fn is None:
            index = decode.decode_minishard_index(raw, base, offset=7, field="/f")
        else:
            index = fn(raw, len(raw) // 24, base, 7, "/f")
    except ShardkitError as exc:
        return ("error", type(exc).__name__, exc.message, exc.offset, exc.field)
    return ("ok", index.ids.tolist(), index.starts.tolist(), index.ends.tolist(), index.base,
            index.ids.dtype.str, index.starts.flags.writeable)


def _raw_index(ids: list[int], offsets: list[int], sizes: list[int]) -> bytes:
    return np.array(ids + offsets + sizes, np.uint64).astype("<u8").tobytes()


@needs_native
def test_native_minishard_decode_equals_numpy():
    from shardkit.formats.neuroglancer import decode

    m = 2**64 - 1
    cases = [
        (_raw_index([5, 1, 0, 9], [0, 0, 3, 0], [10, 20, 0, 7]), 100),  # a duplicate id
        (_raw_index([m], [m - 5], [5]), 0),  # one entry: no running sum to wrap
        (_raw_index([m, 1], [0, 0], [1, 1]), 0),  # the id sum wraps
        (_raw_index([1, 1], [m, 0], [1, 1]), 0),  # delta plus size wraps, and the ends sum
        (_raw_index([1], [m], [1]), 0),  # delta plus size wraps alone
        (_raw_index([1, 2], [m - 40, 0], [10, 10]), 40),  # the last end plus base wraps
        (_raw_index([1, 2], [m - 60, 0], [10, 10]), 40),  # just inside
    ]
    rng = np.random.default_rng(9)
    for _ in range(300):
        n = int(rng.integers(1, 12))
        big = bool(rng.integers(0, 2))
        hi = 2**64 if big else 2**20
        vals = rng.integers(0, hi, 3 * n, dtype=np.uint64, endpoint=False)
        cases.append((vals.astype("<u8").tobytes(), int(rng.integers(0, 2**62 if big else 99))))
    seen = set()
    for raw, base in cases:
        want = _minishard_outcome(decode._decode_minishard_numpy, raw, base)
        got = _minishard_outcome(None, raw, base)
        assert got == want
        seen.add(got[0] if got[0] == "ok" else got[2].split(":")[1])
    assert len(seen) == 3  # sound indexes, and both errors
    assert _minishard_outcome(None, b"\0" * 25, 0)[0] == "error"  # not a multiple of 24
    assert decode.decode_minishard_index(b"", 5).base == 5
    with pytest.raises(ValueError):
        ng_native.minishard_index(b"\0" * 24, 0, np.empty(2, np.uint64), np.empty(1, np.uint64),
                                  np.empty(1, np.uint64))


def test_row_hash_needs_its_keys():
    recs = np.zeros((3, 20), np.uint8)
    with pytest.raises(ValueError, match="not enough keys"):
        annotation_spill.hash_rows(recs, annotation_spill.random_odd(3))
    assert annotation_spill.hash_rows(np.zeros((0, 20), np.uint8),
                                      annotation_spill.random_odd(4)).tolist() == []


def _outcome(fn: Any, data: bytes, limit: int) -> tuple[Any, ...]:
    try:
        return ("ok", fn(data, limit))
    except ShardkitError as exc:
        return ("error", type(exc).__name__, exc.message)


def test_gunzip_one_gives_gunzip_capped_answers_or_defers():
    random.seed(5)
    plain = bytes(range(256)) * 8 + random.randbytes(1500)
    streams = [gzip.compress(plain), gzip.compress(b""), gzip.compress(plain) * 2,
               gzip.compress(plain) + b"junk", gzip.compress(b"x" * (3 << 20)), b"", b"\x1f"]
    base = gzip.compress(plain)
    for _ in range(400):
        b = bytearray(base)
        for _ in range(random.randint(1, 3)):
            b[random.randrange(len(b))] = random.randrange(256)
        if random.random() < 0.3:
            b = b[: random.randrange(len(b))]
        streams.append(bytes(b))
    deferred = 0
    for data in streams:
        for limit in (1 << 30, len(plain), len(plain) - 1):
            want = _outcome(gunzip_capped, data, limit)
            got = gunzip_one(data, limit)
            if got is None:
                deferred += 1  # gunzip_capped decides: its output or its error
                continue
            assert want == ("ok", got)
            assert got == zlib.decompress(data, wbits=31)
    assert gunzip_one(gzip.compress(plain), 1 << 30) == plain
    assert gunzip_one(gzip.compress(plain) * 2, 1 << 30) is None  # two members
    assert gunzip_one(gzip.compress(plain), len(plain) - 1) is None  # over the cap
    assert gunzip_one(gzip.compress(b"x" * (3 << 20)), 1 << 30) is None  # past one step
    assert 10 < deferred < len(streams) * 3


def _gzip_layer(tmp_path: Path, damage: bool) -> tuple[Path, Any]:
    anns = make_annotations("point", 300, seed=11)
    spec = {"@type": "neuroglancer_uint64_sharded_v1", "hash": "murmurhash3_x86_128",
            "preshift_bits": 0, "minishard_bits": 2, "shard_bits": 1,
            "minishard_index_encoding": "gzip", "data_encoding": "gzip"}
    root = tmp_path / "l"
    write(root, anns, "point", sharded={"pre": spec, "post": spec, "by_id": True}, limit=25)
    layer = shardkit.open(root)
    if damage:  # the deflate streams of two values of rel_pre, in its first shard file
        kv = layer.relationships_index["pre"].kv
        number = kv.shard_numbers()[0]
        reader = kv.shard(number)
        index = next(i for _, i in reader.iter_minishards() if len(i) >= 2)
        path = root / "rel_pre" / kv.spec.shard_name(number)
        raw = bytearray(path.read_bytes())
        for j in (0, len(index) - 1):
            start, end = int(index.starts[j]) + index.base, int(index.ends[j]) + index.base
            raw[start + 10 : end - 8] = b"\xff" * (end - 8 - start - 10)
        path.write_bytes(bytes(raw))
    return root, anns


@pytest.mark.parametrize("damage", [False, True])
def test_gzip_value_blocks_equal_the_walk_over_every_value(tmp_path, damage):
    root, _ = _gzip_layer(tmp_path, damage)
    index = shardkit.open(root).relationships_index["pre"]
    bad_walk: list[tuple[int, str]] = []
    bad_blocks: list[tuple[int, str]] = []
    walk = [(k, bytes(v)) for k, v in index.items(lambda r, k, e: bad_walk.append((k, e.message)))]
    blocks = []
    for ids, block, starts, ends in index.value_blocks(
            lambda r, k, e: bad_blocks.append((k, e.message))):
        blocks += [(int(k), block[int(a) : int(b)]) for k, a, b in zip(ids, starts, ends,
                                                                       strict=True)]
    assert blocks == walk and bad_blocks == bad_walk
    assert len(bad_walk) == (2 if damage else 0)
    assert len(walk) == 11 - len(bad_walk)  # segments 0..10 of "pre"


def test_inflated_values_are_handed_over_in_bounded_blocks(tmp_path, monkeypatch):
    from shardkit.formats.neuroglancer import annotation_index

    root, _ = _gzip_layer(tmp_path, damage=True)
    index = shardkit.open(root).relationships_index["pre"]
    walk = [(k, bytes(v)) for k, v in index.items(lambda r, k, e: None)]
    longest = max(len(v) for _, v in walk)
    monkeypatch.setattr(annotation_index, "_BLOCK_BYTES", 3 * longest)
    blocks = list(index.value_blocks(lambda r, k, e: None))
    assert [(int(k), b[int(a) : int(e)]) for ids, b, st, en in blocks
            for k, a, e in zip(ids, st, en, strict=True)] == walk
    assert len(blocks) >= len(walk) // 3 > 1  # cut at about 3 values
    assert max(len(b) for _, b, _, _ in blocks) <= 4 * longest
    assert _verify(root) == _verify(root, exact=True)


def test_gzip_relationship_values_checked_as_blocks(tmp_path):
    root, anns = _gzip_layer(tmp_path, damage=True)
    problems = shardkit.open(root).verify()
    gz = [p for p in problems if p.check == "gzip"]
    assert len(gz) == 2 and all(p.message.startswith("rel_pre/") for p in gz)
    # the annotations of the two lost segments: by_id relates them, the index lacks them
    rel = [p for p in problems if p.check == "relationship"]
    lost = {p.message.split()[4].rstrip(",") for p in rel}
    segs = {int(p.field.split("/")[2]) for p in rel}
    assert len(segs) == 2 and segs <= set(range(11))
    assert lost == {str(a["id"]) for a in anns if a["relationships"]["pre"][0] in segs}
    assert _verify(root) == _verify(root, exact=True)


@pytest.mark.parametrize(("kind", "sharded"), [("point", True), ("point", False),
                                               ("line", True)])
def test_verify_without_the_accelerator_finds_the_same_problems(tmp_path, kind, sharded,
                                                                monkeypatch):
    root = _damaged(tmp_path, kind, sharded)
    with_c = (_verify(root), _verify(root, exact=True))
    from shardkit.formats.neuroglancer import decode

    monkeypatch.setattr(murmur, "_native", None)
    monkeypatch.setattr(annotation_spill, "_native", None)
    monkeypatch.setattr(decode, "_native", lambda: None)
    without = (_verify(root), _verify(root, exact=True))
    assert with_c == without and with_c[0] == with_c[1]
    assert {"by_id", "relationship", "spatial_missing"} <= {p[0] for p in with_c[0]}


# -- the indexes: reads sized before they allocate, runs of bounded width ---------------------


def test_unsharded_reads_allocate_the_file_not_the_cap(tmp_path, monkeypatch):
    import tracemalloc

    from shardkit.errors import LimitExceededError
    from shardkit.formats.neuroglancer import annotation_index

    anns = make_annotations("point", 40, seed=2)
    write(tmp_path / "l", anns, "point", sharded=False, limit=10)
    index = shardkit.open(tmp_path / "l").by_id
    name = str(anns[3]["id"])
    want = (tmp_path / "l" / "by_id" / name).read_bytes()
    tracemalloc.start()
    try:
        got = index.read(name)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert got == want and peak < (1 << 20)  # not MAX_VALUE_BYTES (1 GiB)
    assert index.read("12345678") is None
    monkeypatch.setattr(annotation_index, "MAX_VALUE_BYTES", len(want) - 1)
    with pytest.raises(LimitExceededError, match=f"{len(want)} bytes, more than"):
        index.read(name)


def test_wide_runs_are_read_value_by_value(tmp_path, monkeypatch):
    from shardkit.formats.neuroglancer import annotation_index, annotation_verify

    anns = make_annotations("point", 200, seed=4)
    write(tmp_path / "l", anns, "point", sharded=True, limit=20)
    root = _damaged(tmp_path / "d", "point", True)
    index = shardkit.open(tmp_path / "l").by_id
    whole = [(int(k), bytes(b[int(s) : int(e)])) for ids, b, st, en in index.blocks()
             for k, s, e in zip(ids, st, en, strict=True)]
    problems = _verify(root)
    reads = []
    real = annotation_index.ShardedIndex._one_by_one

    def one_by_one(*a: Any) -> Any:
        for item in real(*a):
            reads.append(len(item[1]))
            yield item

    monkeypatch.setattr(annotation_index, "_MAX_RUN_SPAN", 64)
    monkeypatch.setattr(annotation_verify, "_MAX_RUN_SPAN", 64)
    monkeypatch.setattr(annotation_index.ShardedIndex, "_one_by_one", staticmethod(one_by_one))
    index = shardkit.open(tmp_path / "l").by_id
    blocks = list(index.blocks())
    assert [(int(k), bytes(b[int(s) : int(e)])) for ids, b, st, en in blocks
            for k, s, e in zip(ids, st, en, strict=True)] == whole
    assert len(blocks) == len(whole) == len(anns)  # a block per value
    assert reads and max(reads) <= 64
    reads.clear()
    assert _verify(root) == problems
    assert len(reads) >= 120  # by_id's values, read one by one in verify too


# -- any input: hypothesis draws them -------------------------------------------------------

@needs_native
@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), max_size=40))
def test_murmur_paths_agree_on_any_ids(values):
    ids = np.array(values, np.uint64)
    out = np.empty(len(ids), "<u8")
    native.murmur_u64(ids, out)
    assert out.tolist() == [_mmh3(v) for v in values]
    with np.errstate(over="ignore"):
        assert murmur._hash_uint64_numpy(ids).tolist() == out.tolist()


@needs_native
@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300), st.integers(1, 40), st.lists(st.integers(0, 2**64 - 1),
                                                            min_size=7, max_size=9))
def test_row_hash_paths_agree_on_any_rows(data, width, keys):
    rows = len(data) // width
    recs = np.frombuffer(data[: rows * width], np.uint8).reshape(rows, width)
    ks = [np.uint64(k) for k in keys]
    if len(ks) < -(-width // 8) + 1:
        return
    assert annotation_spill.hash_rows(recs, ks).tolist() == \
        annotation_spill._hash_rows_numpy(recs, ks).tolist()


@needs_native
@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200), st.lists(st.tuples(st.integers(0, 260), st.integers(0, 260)),
                                         max_size=12))
def test_copy_spans_paths_agree_on_any_spans(data, spans):
    buf = np.frombuffer(data, np.uint8)
    starts = np.array([s for s, _ in spans], np.uint64)
    lengths = np.array([n for _, n in spans], np.uint64)
    outcomes = []
    for fn in (annotation_spill.copy_spans, annotation_spill._copy_spans_numpy):
        try:
            outcomes.append(fn(buf, starts, lengths).tobytes())
        except ValueError:
            outcomes.append(None)
    assert outcomes[0] == outcomes[1]
    fits = all(s + n <= len(data) for s, n in spans)
    assert (outcomes[0] is not None) == fits
    if fits:
        assert outcomes[0] == b"".join(data[s : s + n] for s, n in spans)
