"""Neuroglancer datasets over fsspec URLs: a real HTTP server honouring Range, and memory://.

The server (``range_server`` fixture, ``tests/httpserver.py``) counts every request and the
body bytes it sends, so each test asserts what an operation costs: requests, bytes, and that
no byte of a shard is requested twice.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import shardkit
from shardkit.errors import EntryNotFoundError
from shardkit.formats.neuroglancer import open_dataset
from shardkit.writers.neuroglancer import _gzip, build_shard, write_sharded_dataset

DATA = Path(__file__).parent / "data" / "neuroglancer"
MANIFEST = json.loads((DATA / "manifest.json").read_text())["datasets"]
_RANGE = re.compile(r"^bytes=(\d+)-(\d+)$")
MURMUR_GZIP = {"@type": "neuroglancer_uint64_sharded_v1", "hash": "murmurhash3_x86_128",
               "preshift_bits": 0, "minishard_bits": 6, "shard_bits": 1,
               "minishard_index_encoding": "gzip", "data_encoding": "gzip"}


def ranges_by_file(srv: Any) -> dict[str, list[tuple[int, int]]]:
    """``path -> [(start, end)]`` of every ranged GET since the last reset."""
    out: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for r in srv.requests:
        if r.method == "GET" and r.range is not None:
            m = _RANGE.match(r.range)
            assert m is not None, r
            out[r.path].append((int(m.group(1)), int(m.group(1)) + r.body_bytes))
    return out


def assert_no_byte_twice(srv: Any) -> None:
    for path, spans in ranges_by_file(srv).items():
        spans.sort()
        for (_, e1), (s2, _) in itertools.pairwise(spans):
            assert s2 >= e1, f"{path}: bytes requested twice: {spans}"


@pytest.fixture(scope="module")
def murmur_gzip(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[int, bytes]]:
    """A ~1 MB murmurhash + gzip dataset (2 shards, 2,000 chunks), as in the issue's table."""
    rng = np.random.default_rng(5)
    items = {int(k): rng.bytes(int(rng.integers(100, 900)))
             for k in rng.integers(1, 2**63, 2000, dtype=np.uint64)}
    root = tmp_path_factory.mktemp("ng-remote")
    write_sharded_dataset(root / "ds", items, MURMUR_GZIP)
    return root, items


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_http_every_key(range_server: Any, name: str) -> None:
    srv = range_server(DATA)
    meta = MANIFEST[name]
    ds = open_dataset(srv.url(name))
    keys = sorted(int(k["decimal"]) for k in meta["keys"].values())
    values = ds.get_many(keys)
    assert [hashlib.sha256(v).hexdigest() for v in values] == [
        meta["keys"][f"{k:016x}"]["sha256"] for k in keys]
    assert sorted(ds.keys()) == keys  # listing the folder through the server's index page
    ds.close()


def test_http_open_reads_info_once_and_summary_is_free(range_server: Any,
                                                       murmur_gzip: Any) -> None:
    root, _ = murmur_gzip
    srv = range_server(root)
    info_size = (root / "ds" / "info").stat().st_size
    ds = open_dataset(srv.url("ds"))
    assert [(r.method, r.path, r.body_bytes) for r in srv.requests] == [
        ("GET", "/ds/info", info_size)]
    srv.reset()
    summary = ds.summary()
    assert srv.count() == 0  # counts need a scan: not done remotely unless asked
    assert summary["sharding"] == MURMUR_GZIP and summary["chunk_count"] is None
    assert summary["counts"].startswith("not counted")
    srv.reset()
    counted = ds.summary(count_chunks=True)
    assert counted["chunk_count"] == 2000 and counted["shard_files"] == 2
    # the listing once, then per shard its index and its minishard indices (coalesced)
    assert srv.count("HEAD") == 0 and srv.count() <= 2 + 2 * 2
    ds.close()
    # through shardkit.open (format detection included): at most three requests
    srv.reset()
    with shardkit.open(srv.url("ds")) as ds:
        assert ds.format_id == "neuroglancer"
        assert srv.count() <= 3 and srv.bytes_sent <= 3 * info_size


def test_http_cold_lookup_is_three_range_requests(range_server: Any) -> None:
    srv = range_server(DATA)
    name = "cv_murmur_raw_shardbits0"
    meta = MANIFEST[name]
    ds = open_dataset(srv.url(name))
    entries = list(meta["keys"].values())
    by_minishard: dict[int, dict[str, Any]] = {}
    for e in entries:
        by_minishard.setdefault(e["minishard"], e)
    first, second = list(by_minishard.values())[:2]
    srv.reset()
    assert hashlib.sha256(ds[int(first["decimal"])]).hexdigest() == first["sha256"]
    reqs = srv.requests
    assert len(reqs) == 3, reqs
    assert all(r.method == "GET" and r.range is not None for r in reqs)
    m = first["minishard"]
    assert reqs[0].range == f"bytes={16 * m}-{16 * m + 15}" and reqs[0].body_bytes == 16
    assert reqs[2].body_bytes == first["stored_length"]
    # same minishard again: the index is cached, one request for the data
    same = next(e for e in entries if e["minishard"] == m and e is not first)
    srv.reset()
    assert hashlib.sha256(ds[int(same["decimal"])]).hexdigest() == same["sha256"]
    assert srv.count() == 1 and srv.bytes_sent == same["stored_length"]
    srv.reset()
    assert hashlib.sha256(ds[int(second["decimal"])]).hexdigest() == second["sha256"]
    assert srv.count() == 3
    ds.close()


def test_http_get_many_coalesces(range_server: Any, murmur_gzip: Any) -> None:
    root, items = murmur_gzip
    srv = range_server(root)
    ds = open_dataset(srv.url("ds"))
    keys = sorted(items)[::40]  # 50 keys over both shards
    srv.reset()
    assert ds.get_many(keys) == [items[k] for k in keys]
    # per shard: index entries, minishard indices, data (each one coalesced request or a
    # few concurrent ones), never one request per key
    assert srv.count() <= 3 * 2 + 4, srv.requests
    assert srv.count("HEAD") == 0
    assert_no_byte_twice(srv)
    # what is read beyond the wanted bytes is only the gaps coalescing reads through
    spans = sum(len(v) for v in ranges_by_file(srv).values())
    total = sum((root / "ds" / n).stat().st_size for n in ("0.shard", "1.shard"))
    assert srv.bytes_sent <= total
    assert spans == srv.count()
    # a second call reads only data (past the 1,024-byte shard index): indices are cached
    srv.reset()
    assert ds.get_many(keys[:10]) == [items[k] for k in keys[:10]]
    starts = [s for spans in ranges_by_file(srv).values() for s, _ in spans]
    assert 2 <= len(starts) <= 10 and min(starts) >= 1024
    assert ds.kv.cache.hits >= 10
    ds.close()


def test_http_verify_one_pass_per_shard(range_server: Any, murmur_gzip: Any) -> None:
    root, _ = murmur_gzip
    srv = range_server(root)
    sizes = {f"/ds/{n}": (root / "ds" / n).stat().st_size for n in ("0.shard", "1.shard")}
    ds = open_dataset(srv.url("ds"))
    srv.reset()
    assert ds.verify() == []
    # the folder listing (fsspec asks for the index page, then follows its redirect) and one
    # request per shard: each 0.5 MB shard fits in one block
    shard_requests = ranges_by_file(srv)
    assert {p: len(v) for p, v in shard_requests.items()} == {p: 1 for p in sizes}
    assert srv.count() <= 2 + len(sizes) and srv.count("HEAD") == 0
    assert srv.bytes_sent == sum(sizes.values())  # every byte exactly once
    ds.close()
    # small blocks: ceil(size / block) + a few requests per shard, still no byte twice
    block = 64 * 1024
    ds = open_dataset(srv.url("ds"), block_size=block)
    srv.reset()
    assert ds.verify() == []
    assert_no_byte_twice(srv)
    for path, spans in ranges_by_file(srv).items():
        assert len(spans) <= math.ceil(sizes[path] / block) + 4, (path, spans)
        assert all(e - s <= block for s, e in spans)
    assert srv.bytes_sent <= sum(sizes.values())
    ds.close()


def test_http_verify_finds_a_broken_gzip_chunk(range_server: Any, tmp_path: Path) -> None:
    items = {k: bytes([k % 251]) * 300 for k in range(1, 200)}
    spec = {**MURMUR_GZIP, "shard_bits": 0, "minishard_bits": 2}
    write_sharded_dataset(tmp_path / "ds", items, spec)
    shard = tmp_path / "ds" / "0.shard"
    data = bytearray(shard.read_bytes())
    member = _gzip(items[7])  # as the writer does
    at = data.find(member)
    assert at > 0
    data[at + len(member) - 6] ^= 0xFF  # the gzip trailer's CRC no longer matches
    shard.write_bytes(bytes(data))
    srv = range_server(tmp_path)
    ds = open_dataset(srv.url("ds"))
    problems = ds.verify()
    assert [(p.check, p.field) for p in problems] == [("gzip", "/chunks/7")]
    assert problems[0].offset == at
    assert_no_byte_twice(srv)
    ds.close()


def test_http_verify_tensorstore_layout(range_server: Any) -> None:
    """Tensorstore puts each minishard index after its data: still one pass, no byte twice."""
    srv = range_server(DATA)
    ds = open_dataset(srv.url("ts_kv_identity_preshift_gzipdata"), block_size=4096)
    srv.reset()
    assert ds.verify() == []
    assert_no_byte_twice(srv)
    folder = DATA / "ts_kv_identity_preshift_gzipdata"
    assert srv.bytes_sent <= sum(p.stat().st_size for p in folder.glob("*.shard"))
    ds.close()


def test_http_missing_shard_and_key(range_server: Any) -> None:
    srv = range_server(DATA)
    ds = open_dataset(srv.url("ts_kv_identity_minishardbits0_shardbits5"))
    present = {int(k["decimal"]) for k in
               MANIFEST["ts_kv_identity_minishardbits0_shardbits5"]["keys"].values()}
    missing = next(k for k in range(2**40, 2**40 + 100) if k not in present)
    assert missing not in ds
    with pytest.raises(EntryNotFoundError):
        ds[missing]
    ds.close()


def test_http_verify_and_map(range_server: Any) -> None:
    srv = range_server(DATA)
    ds = open_dataset(srv.url("ts_image_identity_gzipindex"))
    assert ds.verify() == []
    assert ds.read_chunk("8_8_40", (0, 0, 0)).shape == (1, 16, 16, 16)
    assert ds.sections()[0].name == "0.shard/shard_index"
    ds.close()


def test_http_bare_shard_with_spec(range_server: Any, tmp_path: Path) -> None:
    items = {k: k.to_bytes(8, "little") for k in range(50)}
    spec = {**MURMUR_GZIP, "shard_bits": 0}
    (tmp_path / "a.shard").write_bytes(build_shard(items, spec))
    srv = range_server(tmp_path)
    with shardkit.open(srv.url("a.shard"), spec=spec) as shard:
        assert shard[7] == items[7]
        assert shard.verify() == []


def test_memory_filesystem_roundtrip() -> None:
    rng = np.random.default_rng(3)
    items = {int(k): rng.bytes(50) for k in rng.integers(0, 2**64, 64, dtype=np.uint64)}
    spec = {"@type": "neuroglancer_uint64_sharded_v1", "hash": "murmurhash3_x86_128",
            "preshift_bits": 0, "minishard_bits": 2, "shard_bits": 2,
            "minishard_index_encoding": "gzip", "data_encoding": "raw"}
    write_sharded_dataset("memory://shardkit-ng-test/ds", items, spec)
    with shardkit.open("memory://shardkit-ng-test/ds") as ds:
        assert sorted(ds.keys()) == sorted(items)
        assert all(ds[k] == v for k, v in items.items())
        assert ds.verify() == []


def test_cli_over_http(range_server: Any, murmur_gzip: Any, capsys: Any,
                       tmp_path: Path) -> None:
    from shardkit.cli import main

    root, items = murmur_gzip
    srv = range_server(root)
    url = srv.url("ds")
    assert main(["info", "--json", url]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["sharding"] == MURMUR_GZIP and out["chunk_count"] is None
    assert srv.count() <= 3
    srv.reset()
    assert main(["verify", url]) == 0
    assert "OK" in capsys.readouterr().out
    # detection and info, the folder listing, one request per shard
    assert srv.count() <= 3 + 2 + 2 and srv.count("HEAD") == 0
    assert_no_byte_twice(srv)
    srv.reset()
    key = sorted(items)[3]
    assert main(["get", url, str(key), "-o", str(tmp_path / "value")]) == 0
    assert (tmp_path / "value").read_bytes() == items[key]
    assert srv.count() <= 3 + 3  # detection and info, then the three reads of a cold chunk


def test_http_get_many_coalesce_gap(range_server: Any, murmur_gzip: Any) -> None:
    """``coalesce_gap`` trades requests for bytes: 0 reads exactly the chunks asked for."""
    root, items = murmur_gzip
    srv = range_server(root)
    picks = sorted(items)[::40]
    sent = {}
    for gap in (0, 1 << 16):
        ds = open_dataset(srv.url("ds"), coalesce_gap=gap)
        assert ds.get_many(picks) == [items[k] for k in picks]  # indices now cached
        srv.reset()
        assert ds.get_many(picks) == [items[k] for k in picks]
        stored = 0
        for k in picks:
            ref = ds.kv.shard(ds.spec.locate(k).shard).locate(k)
            assert ref is not None
            stored += ref.size
        sent[gap] = (srv.count(), srv.bytes_sent)
        if gap == 0:
            assert srv.bytes_sent == stored
        else:
            assert srv.bytes_sent > stored
        assert_no_byte_twice(srv)
        ds.close()
    assert sent[0][0] > sent[1 << 16][0]  # more requests, fewer bytes
    assert sent[0][1] < sent[1 << 16][1]


def test_open_dataset_url_without_slash_reads_info_once(range_server) -> None:
    """A URL that names no file kind: the first block is no shard, then ``info`` is read once."""
    srv = range_server(DATA)
    name = "cv_murmur_raw_shardbits0"
    with shardkit.open(srv.url(name)) as ds:
        keys = sorted(ds.keys())
    assert keys == sorted(int(k["decimal"]) for k in MANIFEST[name]["keys"].values())
    info_gets = [r for r in srv.requests if r.path.endswith(f"{name}/info")]
    assert len(info_gets) == 1
