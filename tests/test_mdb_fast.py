"""Xet MDB: the probe-table lookups of a mapped shard give exactly what the general path gives
(every sample, a generated 10,000-file shard, colliding and all-ones truncated keys)."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import numpy as np
import pytest
from mdb_inputs import random_inputs

from shardkit.formats.xet_mdb import (
    ChunkEntry,
    ChunkRef,
    FileInfo,
    MdbShard,
    XetHash,
)
from shardkit.formats.xet_mdb._fast import ProbeTable
from shardkit.formats.xet_mdb.model import _FileInfoSlots, _get_terms
from shardkit.sources import FileSource
from shardkit.writers.xet_mdb import build_mdb

DATA = Path(__file__).parent / "data" / "mdb"
SAMPLES = [*sorted(DATA.glob("real/*/*.mdb")),
           DATA / "hf_server_global_dedup" / "gpt2-64-8bits.tflite.shard"]


def _ids(p: Path) -> str:
    return f"{p.parent.name}-{p.name[:8]}"


def _same_file(a: FileInfo | None, b: FileInfo | None) -> None:
    assert a == b
    if a is not None and b is not None:
        assert type(a) is FileInfo and type(a.hash) is XetHash
        assert (a.flags, a.reserved, a.record_index, a.offset, a.num_records) == (
            b.flags, b.reserved, b.record_index, b.offset, b.num_records)
        assert a.terms == b.terms and a.sha256 == b.sha256 and hash(a) == hash(b)


def _same_ref(a: ChunkRef | None, b: ChunkRef | None) -> None:
    assert a == b
    if a is not None and b is not None:
        assert type(a) is ChunkRef and type(a.chunk) is ChunkEntry
        assert type(a.xorb_hash) is XetHash and type(a.chunk.hash) is XetHash


def _check_all(s: MdbShard) -> tuple[int, int]:
    """Every file and chunk of ``s`` (and absent keys) through both paths."""
    files = chunks = 0
    for f in s.files:
        for key in (f.hash, bytes(f.hash), str(f.hash)):
            _same_file(s.file(key), s._file_general(key))
        assert s.file(f.hash) is not None
        files += 1
    keyed = s.footer is not None and s.footer.is_keyed
    for x in s.xorbs:
        for c in x.chunks:
            for key in (c.hash, bytes(c.hash), str(c.hash)):
                got = s.find_chunk(key, keyed=keyed)
                _same_ref(got, s._find_chunk_general(key, keyed=keyed))
                assert got is not None and got.chunk.hash == c.hash
            chunks += 1
    rnd = random.Random(5)
    for _ in range(50):
        missing = XetHash(rnd.randbytes(32))
        assert s.file(missing) is None and s.file(missing, "no") == "no"
        assert s.find_chunk(missing) is None and s.find_chunk(missing, keyed=True) is None
    return files, chunks


@pytest.mark.parametrize("path", SAMPLES, ids=_ids)
def test_every_sample_fast_equals_general(path: Path) -> None:
    s = MdbShard(FileSource(path))
    files, chunks = _check_all(s)
    assert files + chunks > 0
    # the probe table is what answered (a mapped shard; file lookups need the table)
    assert s._fast_chunk.__qualname__.startswith("chunk_lookup")
    if s.file_lookup is not None and files:
        assert s._fast_file.__qualname__.startswith("file_lookup")


def test_global_dedup_sample_keys_plain_hashes() -> None:
    s = MdbShard(FileSource(SAMPLES[-1]))
    assert s.footer is not None and s.footer.is_keyed
    stored = s.xorbs[0].chunks[3].hash
    ref = s.find_chunk(stored, keyed=True)
    assert ref is not None and ref.chunk_index == 3
    assert s.find_chunk(stored) == s._find_chunk_general(stored)  # keyed twice: absent
    assert s.find_chunk(stored) is None


def test_generated_10k_files_fast_equals_general(tmp_path: Path) -> None:
    # files 1..3 share a truncated key, file 4's key is all one bits (the general path's)
    same = bytes.fromhex("0123456789abcdef")
    files, xorbs = random_inputs(10_000, 1000, 10, 11, plain_every=3,
                                 prefixes={1: same, 2: same, 3: same, 4: b"\xff" * 8})
    path = tmp_path / "gen.mdb"
    path.write_bytes(build_mdb(files, xorbs))
    s = MdbShard(FileSource(path))
    assert s.file_lookup is not None and s.chunk_lookup is not None
    assert _check_all(s) == (10_000, 10_000)
    for want in files[:5] + files[-100:]:
        got = s.file(want.hash)
        assert got is not None and got.terms == want.terms and got.sha256 == want.sha256
        assert got.verification_hashes == want.verification_hashes
    assert s._fast_file.__qualname__.startswith("file_lookup")
    assert s.file is s._fast_file and s.find_chunk is s._fast_chunk  # no dispatch per call
    # the server form (no tables): chunks through the section's own index, files by dict
    server = tmp_path / "server.mdb"
    server.write_bytes(build_mdb(files, xorbs, form="server"))
    bare = MdbShard(FileSource(server))
    assert bare.file_lookup is None
    assert _check_all(bare) == (10_000, 10_000)
    assert bare._fast_chunk.__qualname__.startswith("chunk_lookup")
    assert bare._fast_file.__qualname__.startswith("dict_lookup")
    # closed: no lookup reads a released mapping through a stale closure
    s.close()
    assert s._fast_file is None and s._fast_chunk is None
    assert "file" not in vars(s) and "find_chunk" not in vars(s)


def test_probe_table_finds_every_value_in_order() -> None:
    rnd = np.random.default_rng(3)
    keys = rnd.integers(0, 2**63, 5000, dtype=np.uint64) * np.uint64(2)
    keys[100:140] = keys[7]  # a run of equal keys, unsorted input
    keys[-3:] = 0
    values = np.arange(len(keys), dtype=np.uint64)
    t = ProbeTable(keys, values)
    assert len(t.slots) >= 4 * len(keys) and t.nbytes == len(t.slots) * 8
    want: dict[int, list[int]] = {}
    for k, v in zip(keys.tolist(), values.tolist(), strict=True):
        want.setdefault(k, []).append(v)
    for k, vs in want.items():
        j = (k >> t.shift) << 1
        while t.slots[j] < k:
            j += 2
        got = []
        while t.slots[j] == k:
            got.append(t.slots[j + 1])
            j += 2
        assert got == vs
    empty = ProbeTable(np.zeros(0, np.uint64), np.zeros(0, np.uint64))
    assert list(empty.slots) == [2**64 - 1] * len(empty.slots)


def test_file_info_is_a_slotted_frozen_dataclass_either_way_built(tmp_path: Path) -> None:
    """A lookup fills _FileInfoSlots and then assigns the class: what comes back is a plain
    frozen FileInfo (no setting, pickles and copies through its constructor, equal to one
    built by the constructor and to the general path's)."""
    import copy
    import dataclasses
    import pickle
    import threading

    files, xorbs = random_inputs(30, 6, 5, 12, plain_every=3)
    path = tmp_path / "small.mdb"
    path.write_bytes(build_mdb(files, xorbs))
    s = MdbShard(FileSource(path))
    want = next(f for f in files if f.sha256 is not None)
    got = s.file(want.hash)
    assert s._fast_file.__qualname__.startswith("file_lookup")  # the probe table's lookup
    assert type(got) is FileInfo and _FileInfoSlots.__slots__ == FileInfo.__slots__
    assert got is not None and not hasattr(got, "__dict__")
    assert [f.name for f in dataclasses.fields(FileInfo)] == [
        "hash", "flags", "terms", "verification_hashes", "sha256", "reserved", "record_index",
        "offset"]
    built = FileInfo(got.hash, got.flags, got.terms, got.verification_hashes, got.sha256,
                     record_index=got.record_index, offset=got.offset)
    fresh = s.file(want.hash)  # terms not decoded yet: equality and hash decode them
    assert fresh == built and built == fresh and hash(fresh) == hash(built)
    assert repr(built) == repr(got) and got.num_records == built.num_records == 4
    assert got.terms == want.terms and got.sha256 == want.sha256
    assert got == s._file_general(want.hash)
    assert FileInfo(want.hash, 0, (), (), None).reserved == 0
    for clone in (pickle.loads(pickle.dumps(s.file(want.hash))), copy.copy(s.file(want.hash)),
                  copy.deepcopy(got)):
        assert clone == got and type(clone) is FileInfo and clone.terms == want.terms
    assert dataclasses.replace(got, flags=0) != got
    assert dataclasses.replace(got, flags=0).terms == got.terms
    assert dataclasses.asdict(got)["sha256"] == want.sha256
    with pytest.raises(dataclasses.FrozenInstanceError):
        got.flags = 1  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del got.hash  # type: ignore[misc]
    # eight threads decoding one object's terms all see the same tuple
    shared = s.file(want.hash)
    seen: list[object] = []
    threads = [threading.Thread(target=lambda: seen.append(shared.terms)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) == 8 and all(t == want.terms for t in seen)
    # the first decode of fresh lookups, raced: threads released at once read the lazy
    # fields of the same undecoded object (each thread in its own field order), with a tiny
    # switch interval so that they interleave within a decode
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for f in files * 20:
            _race_first_decode(s, f)
    finally:
        sys.setswitchinterval(interval)


def _race_first_decode(s: MdbShard, want: FileInfo, n: int = 6) -> None:
    import threading

    fresh = s.file(want.hash)
    assert fresh is not None and type(_get_terms(fresh)) is bytes  # nothing decoded yet
    names = ("terms", "verification_hashes", "sha256")
    start = threading.Barrier(n)
    read: list[tuple[object, ...]] = []

    def decode(k: int) -> None:
        start.wait()
        order = names[k % 3:] + names[:k % 3]
        got = {name: getattr(fresh, name) for name in order}
        read.append(tuple(got[name] for name in names))

    threads = [threading.Thread(target=decode, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    expect = (want.terms, want.verification_hashes, want.sha256)
    assert len(read) == n and all(r == expect for r in read), want.hash
