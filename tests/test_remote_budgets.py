"""Request and byte budgets of ZSS and Amudai over HTTP (a real local server, counted).

Budgets (block = the remote block size, 64 KiB by default):

- open + ``summary()``: at most 3 requests, and only the blocks holding what the summary shows
  (ZSS: the header and the root block's framing; ``record_count`` only with ``counts=True``);
- one cold lookup: ZSS reads the index path and one data block (one request each), Amudai
  the metadata and, per column, its block map and the block holding the row;
- ``verify``: every byte read at most once, in at most ceil(size / block) + 3 requests.
"""

from __future__ import annotations

import math
import random
from bisect import bisect_left
from pathlib import Path

import pytest
from shardkit.generated import amudai_shard_pb2 as spb

import shardkit
from shardkit.remote import DEFAULT_BLOCK_SIZE as BLOCK
from shardkit.writers.amudai import field, write_amudai
from shardkit.writers.zss import write_zss

pytest.importorskip("aiohttp", reason="fsspec's HTTP filesystem needs aiohttp")
import itertools

from httpserver import RangeServer

ROWS = 60_000


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    d = tmp_path_factory.mktemp("budgets")
    rng = random.Random(7)
    records = sorted(b"%08d-%s" % (i, rng.randbytes(24).hex().encode()) for i in range(40_000))
    write_zss(d / "big.zss", records, codec="zlib", approx_block_size=64 * 1024)
    write_amudai(d / "stress.amudai.shard",
                 [field("id", "Int64"), field("name", "String"), field("score", "Float64")],
                 [{"id": list(range(ROWS)), "name": [f"name-{i * 7919 % 100003}"
                                                     for i in range(ROWS)],
                   "score": [i * 0.5 for i in range(ROWS)]}])
    server = RangeServer(d)
    server.dir = d
    server.records = records
    yield server
    server.close()


def spans(server) -> list[tuple[int, int]]:
    out = []
    for r in server.requests:
        lo, _hi = r.range.removeprefix("bytes=").split("-")
        out.append((int(lo), int(lo) + r.body_bytes))
    return sorted(out)


def assert_each_byte_once(server) -> None:
    got = spans(server)
    for (_, a_end), (b_start, _) in itertools.pairwise(got):
        assert a_end <= b_start, got


def overlaps(span: tuple[int, int], wanted: list[tuple[int, int]]) -> bool:
    return any(span[0] < hi and lo < span[1] for lo, hi in wanted)


# -- ZSS ------------------------------------------------------------------------------------------


def test_zss_open_and_summary(srv) -> None:
    srv.reset()
    with shardkit.open(srv.url("big.zss")) as z:
        info = z.summary()
        assert "record_count" not in info
        assert info["levels"] >= 2
    assert srv.count() <= 3
    size = (srv.dir / "big.zss").stat().st_size
    assert srv.bytes_sent <= 2 * BLOCK + (size % BLOCK)  # the first block and the tail
    srv.reset()
    with shardkit.open(srv.url("big.zss")) as z:
        assert z.summary(counts=True)["record_count"] == len(srv.records)
    assert srv.count() <= math.ceil(size / BLOCK) + 3
    assert_each_byte_once(srv)


def test_zss_cold_lookup_reads_the_index_path_and_one_data_block(srv) -> None:
    local = shardkit.open(srv.dir / "big.zss")
    key = srv.records[23_456][:8]
    path, v = [], local.root
    while True:  # the blocks a lookup must read, from the local file
        info = local.frame(v)
        path.append((info.offset, info.offset + info.size))
        if info.level == 0:
            break
        ib = local.index_block(v)
        v = ib.children[max(bisect_left(ib.keys, key) - 1, 0)]
    with shardkit.open(srv.url("big.zss")) as z:
        srv.reset()
        assert list(z.search(prefix=key)) == [srv.records[23_456]]
    got = spans(srv)
    assert len(got) <= len(path)  # one request per block of the path, or fewer
    assert all(overlaps(s, path) for s in got)
    assert srv.bytes_sent <= sum(hi - lo for lo, hi in path) + 2 * BLOCK * len(path)
    local.close()


def test_zss_verify_reads_each_byte_once(srv) -> None:
    size = (srv.dir / "big.zss").stat().st_size
    srv.reset()
    with shardkit.open(srv.url("big.zss")) as z:
        assert z.verify() == []
    assert srv.count() <= math.ceil(size / BLOCK) + 3
    assert_each_byte_once(srv)
    assert srv.bytes_sent == size


# -- Amudai ---------------------------------------------------------------------------------------


def test_amudai_open_and_summary(srv) -> None:
    srv.reset()
    with shardkit.open(srv.url("stress.amudai.shard")) as s:
        info = s.summary()
        assert info["record_count"] == ROWS
    assert srv.count() <= 3
    size = (srv.dir / "stress.amudai.shard").stat().st_size
    assert srv.bytes_sent <= 3 * BLOCK + (size % BLOCK)


def test_amudai_cold_row_reads_its_blocks_only(srv) -> None:
    row = 31_234
    local = shardkit.open(srv.dir / "stress.amudai.shard")
    needed = []  # per column: the block map and the block holding the row
    for node in local.schema:
        sfd = local.stripe_field(0, node.schema_id)
        buf = local._buffers(sfd, "/")[spb.DATA]
        ref, mref = buf.buffer.range, buf.block_map.range
        table = local.block_table(
            (srv.dir / "stress.amudai.shard").read_bytes()[mref.start:mref.end],
            mref.start, "/")
        needed.append((mref.start, mref.end))
        pos = 0
        for logical, ofs, size in table:
            if pos <= row < pos + logical:
                needed.append((ref.start + ofs, ref.start + ofs + size))
            pos += logical
    expected = {n.name: local[n.name][row] for n in local.schema}
    local.close()
    with shardkit.open(srv.url("stress.amudai.shard")) as s:
        s.stripes, s.schema  # noqa: B018 - the metadata, read at open's tail
        srv.reset()
        assert s[row] == expected
        got = spans(srv)
        assert len(got) <= len(needed)
        assert all(overlaps(span, needed) for span in got)
        assert srv.bytes_sent <= sum(hi - lo for lo, hi in needed) + 2 * BLOCK * len(needed)
        srv.reset()
        assert s[row + 1]["id"] == row + 1  # the same blocks: no request
        assert srv.count() == 0


def test_amudai_verify_reads_each_byte_once(srv) -> None:
    size = (srv.dir / "stress.amudai.shard").stat().st_size
    srv.reset()
    with shardkit.open(srv.url("stress.amudai.shard")) as s:
        assert s.verify() == []
    assert srv.count() <= math.ceil(size / BLOCK) + 3
    assert_each_byte_once(srv)
    assert srv.bytes_sent == size


def test_amudai_two_level_over_http(range_server) -> None:
    data = Path(__file__).parent / "data" / "amudai"
    server = range_server(data)
    with shardkit.open(server.url("twolevel.amudai.shard")) as s, \
            shardkit.open(data / "twolevel.amudai.shard") as local:
        assert s[:] == local[:]
        server.reset()
        assert s.verify() == []
        files = {r.path for r in server.requests}
        for name in files:
            got = [(int(r.range[6:].split("-")[0]), r.body_bytes) for r in server.requests
                   if r.path == name]
            assert sum(b for _, b in got) <= (data / name.lstrip("/")).stat().st_size
