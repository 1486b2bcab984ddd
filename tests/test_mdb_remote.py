"""Xet MDB over HTTP: request and byte budgets against a real local server honouring Range.

Open/info reads the header and the footer (in one batch), a lookup through the lookup tables
reads the table and the record it points at, and verify reads every byte once in large blocks.
"""

from __future__ import annotations

import itertools
import math
import shutil
from pathlib import Path

import pytest
from mdb_inputs import random_inputs

import shardkit
from shardkit.formats.xet_mdb import (
    FOOTER_SIZE,
    HEADER_SIZE,
    FileInfo,
    MdbShard,
    XetHash,
    XorbInfo,
    _io,
)
from shardkit.sources import BytesSource, FsspecSource
from shardkit.writers.xet_mdb import build_mdb

DATA = Path(__file__).parent / "data" / "mdb"
SESSION = DATA / "real" / "session" / (
    "b04ac8152506ea5af6b90a7378a3d35c46cbef373a597241937795e323cea8f1.mdb")
UPLOAD = next((DATA / "real" / "upload_body").glob("*.mdb"))


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[FileInfo], list[XorbInfo]]:
    folder = tmp_path_factory.mktemp("mdb_remote")
    files, xorbs = random_inputs(3000, 300, 8, 7)
    (folder / "big.mdb").write_bytes(build_mdb(files, xorbs))
    (folder / "server.mdb").write_bytes(build_mdb(files, xorbs, form="server"))
    shutil.copy(SESSION, folder / SESSION.name)
    shutil.copy(UPLOAD, folder / UPLOAD.name)
    return folder, files, xorbs


def _gets(srv) -> list[tuple[int, int]]:  # (start, end) of every ranged GET
    out = []
    for r in srv.requests:
        if r.method == "GET":
            assert r.range is not None, "a GET without Range: the whole file was asked for"
            lo, _, hi = r.range.removeprefix("bytes=").partition("-")
            out.append((int(lo), int(hi) + 1))
    return out


@pytest.mark.parametrize("name", ["big.mdb", SESSION.name])
def test_open_and_info_read_only_header_and_footer(range_server, big, name: str) -> None:
    folder = big[0]
    srv = range_server(folder)
    size = (folder / name).stat().st_size
    s = MdbShard(FsspecSource(srv.url(name)))
    summary = s.summary()
    assert srv.count() <= 3
    assert sorted(_gets(srv)) == [(0, HEADER_SIZE), (size - FOOTER_SIZE, size)]
    assert srv.bytes_sent == HEADER_SIZE + FOOTER_SIZE
    local = MdbShard(BytesSource((folder / name).read_bytes())).summary()
    assert summary["counts_from"] == "lookup tables" and summary["terms"] is None
    for k in ("files", "xorbs", "chunks", "totals", "variant", "lookup_tables", "header"):
        assert summary[k] == local[k], k


def test_lookups_read_the_table_and_the_record_only(range_server, big) -> None:
    folder, files, xorbs = big
    srv = range_server(folder)
    size = (folder / "big.mdb").stat().st_size
    s = MdbShard(FsspecSource(srv.url("big.mdb")))
    f = s.footer
    srv.reset()
    want = files[1234]
    got = s.file(want.hash)
    assert got is not None and got.terms == want.terms and got.sha256 == want.sha256
    gets = _gets(srv)
    assert len(gets) == 2 and srv.count() == 2  # the file table (one range), then the record
    assert gets[0] == (f.file_lookup_offset, f.file_lookup_offset + 12 * len(files))
    assert gets[1][1] - gets[1][0] <= 8 * 48
    before = srv.bytes_sent
    assert before < size / 10
    # a second lookup: the table is held, one request for the record
    srv.reset()
    assert s.file(files[7].hash).hash == files[7].hash and srv.count() == 1
    assert s.file(XetHash(bytes(32))) is None
    # xorbs and chunks through their tables
    srv.reset()
    x = s.xorb(xorbs[42].hash)
    assert x is not None and x.chunks == xorbs[42].chunks
    assert srv.count() == 2
    srv.reset()
    c = xorbs[99].chunks[5]
    ref = s.find_chunk(c.hash)
    assert ref is not None and ref.xorb_hash == xorbs[99].hash and ref.chunk_index == 5
    assert ref.chunk == c
    assert srv.count() == 2  # the chunk table, then xorb header .. chunk record in one range
    assert srv.bytes_sent < size / 5
    assert s._mem_data is None  # the whole file was never fetched


@pytest.mark.parametrize("name", ["big.mdb", "server.mdb", SESSION.name, UPLOAD.name])
def test_verify_reads_every_byte_once_in_large_blocks(range_server, big, monkeypatch,
                                                      name: str) -> None:
    folder = big[0]
    block = 64 << 10
    monkeypatch.setattr(_io, "BLOCK_SIZE", block)
    srv = range_server(folder)
    size = (folder / name).stat().st_size
    s = MdbShard(FsspecSource(srv.url(name)))
    problems = s.verify()
    assert srv.bytes_sent == size  # every byte exactly once
    assert srv.count() <= math.ceil(size / block) + 3
    gets = sorted(_gets(srv))
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(gets))  # no byte twice
    local = MdbShard(BytesSource((folder / name).read_bytes()))
    assert s.files == local.files and s.xorbs == local.xorbs
    assert problems == local.verify()
    # the real samples are sound; the generated ones have random (unverifiable) hashes
    assert (problems == []) == (name in (SESSION.name, UPLOAD.name))


def test_remote_equals_local_everywhere(range_server, big) -> None:
    folder = big[0]
    srv = range_server(folder)
    for name in ("big.mdb", "server.mdb", SESSION.name, UPLOAD.name):
        remote = MdbShard(FsspecSource(srv.url(name)))
        local = MdbShard(BytesSource((folder / name).read_bytes()))
        for f in local.files[:50]:
            assert remote.file(f.hash) == f
        for x in local.xorbs[:20]:
            assert remote.xorb(x.hash) == x
            assert remote.find_chunk(x.chunks[0].hash) == local.find_chunk(x.chunks[0].hash)
        assert remote.to_dict()["files"] == local.to_dict()["files"]
        assert remote.content_hash() == local.content_hash()


class _BatchSource:
    """A remote-like source (no ``view``) with ``read_ranges``: records every batch."""

    def __init__(self, data: bytes) -> None:
        self.data, self.name, self.batches = data, "batch://x.mdb", []

    @property
    def size(self) -> int:
        return len(self.data)

    def read_range(self, start: int, end: int) -> bytes:
        self.batches.append([(start, end)])
        return self.data[start:end]

    def read_ranges(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        self.batches.append(list(ranges))
        return [self.data[s:e] for s, e in ranges]

    def close(self) -> None:
        pass


def test_batched_reads_when_the_source_offers_them(big, monkeypatch) -> None:
    monkeypatch.setattr(_io, "BLOCK_SIZE", 64 << 10)
    data = (big[0] / "big.mdb").read_bytes()
    src = _BatchSource(data)
    s = MdbShard(src)
    assert src.batches == [[(0, HEADER_SIZE), (len(data) - FOOTER_SIZE, len(data))]]
    assert s.verify() == MdbShard(BytesSource(data)).verify()
    gaps = src.batches[1]
    assert len(src.batches) == 2 and len(gaps) == math.ceil((len(data) - 248) / (64 << 10))
    assert sum(e - s_ for s_, e in gaps) == len(data) - HEADER_SIZE - FOOTER_SIZE


def test_keys_and_files_through_a_counting_source() -> None:
    """A source with neither a mapping nor batched reads (CountingSource) lists every key."""
    from shardkit.sources import CountingSource, open_source

    for path in sorted(Path(__file__).parent.glob("data/mdb/real/*/*.mdb")):
        with shardkit.open(path) as direct:
            want = list(direct.keys())
        with shardkit.open(CountingSource(open_source(path))) as counted:
            assert list(counted.keys()) == want
            assert [f.hash for f in counted.files] == want
