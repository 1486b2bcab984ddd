"""Neuroglancer datasets over fsspec URLs: a real HTTP server honouring Range, and memory://.

The server binds 127.0.0.1 on an ephemeral port, runs in a thread for the test module only, and
counts the requests it serves, so the number of range requests a lookup costs is asserted.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections.abc import Iterator
from http import HTTPStatus
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import shardkit
from shardkit.errors import EntryNotFoundError
from shardkit.formats.neuroglancer import open_dataset
from shardkit.writers.neuroglancer import write_sharded_dataset

pytest.importorskip("aiohttp", reason="fsspec's HTTP filesystem needs aiohttp")

DATA = Path(__file__).parent / "data" / "neuroglancer"
MANIFEST = json.loads((DATA / "manifest.json").read_text())["datasets"]
_RANGE = re.compile(r"^bytes=(\d+)-(\d*)$")


class RangeHandler(SimpleHTTPRequestHandler):
    """Static files with ``Range: bytes=a-b`` support; every request is logged on the server."""

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _record(self) -> None:
        self.server.requests.append((self.command, self.path,  # type: ignore[attr-defined]
                                     self.headers.get("Range")))

    def do_HEAD(self) -> None:
        self._record()
        super().do_HEAD()

    def do_GET(self) -> None:
        self._record()
        header = self.headers.get("Range")
        path = self.translate_path(self.path)
        if header is None or not os.path.isfile(path):
            super().do_GET()
            return
        m = _RANGE.match(header.strip())
        size = os.path.getsize(path)
        if m is None or int(m.group(1)) >= size:
            self.send_response(HTTPStatus.REQUESTED_RANGE_NOT_SATISFIABLE)
            self.send_header("Content-Range", f"bytes */{size}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        start = int(m.group(1))
        end = min(int(m.group(2)) if m.group(2) else size - 1, size - 1)
        with open(path, "rb") as fh:
            fh.seek(start)
            body = fh.read(end - start + 1)
        self.send_response(HTTPStatus.PARTIAL_CONTENT)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def server() -> Iterator[ThreadingHTTPServer]:
    def handler(*args: Any, **kwargs: Any) -> RangeHandler:
        return RangeHandler(*args, directory=str(DATA), **kwargs)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.requests = []  # type: ignore[attr-defined]
    httpd.timeout = 5
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.1},
                              daemon=True)
    thread.start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


def url(server: ThreadingHTTPServer, name: str) -> str:
    host, port = server.server_address[:2]
    return f"http://{host}:{port}/{name}"


def ranged(server: ThreadingHTTPServer, since: int) -> list[tuple[str, str, str | None]]:
    return server.requests[since:]  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_http_every_key(server: ThreadingHTTPServer, name: str) -> None:
    meta = MANIFEST[name]
    ds = open_dataset(url(server, name))
    keys = sorted(int(k["decimal"]) for k in meta["keys"].values())
    values = ds.get_many(keys)
    assert [hashlib.sha256(v).hexdigest() for v in values] == [
        meta["keys"][f"{k:016x}"]["sha256"] for k in keys]
    assert sorted(ds.keys()) == keys  # listing the folder through the server's index page
    ds.close()


def test_http_cold_lookup_is_three_range_requests(server: ThreadingHTTPServer) -> None:
    name = "cv_murmur_raw_shardbits0"
    meta = MANIFEST[name]
    ds = open_dataset(url(server, name))
    entries = list(meta["keys"].values())
    by_minishard: dict[int, dict[str, Any]] = {}
    for e in entries:
        by_minishard.setdefault(e["minishard"], e)
    first, second = list(by_minishard.values())[:2]
    before = len(server.requests)  # type: ignore[attr-defined]
    assert hashlib.sha256(ds[int(first["decimal"])]).hexdigest() == first["sha256"]
    reqs = ranged(server, before)
    assert len(reqs) == 3, reqs
    assert all(method == "GET" and rng is not None for method, _, rng in reqs)
    m = first["minishard"]
    assert reqs[0][2] == f"bytes={16 * m}-{16 * m + 15}"
    # same minishard again: the index is cached, one request for the data
    same = next(e for e in entries if e["minishard"] == m and e is not first)
    before = len(server.requests)  # type: ignore[attr-defined]
    assert hashlib.sha256(ds[int(same["decimal"])]).hexdigest() == same["sha256"]
    assert len(ranged(server, before)) == 1
    before = len(server.requests)  # type: ignore[attr-defined]
    assert hashlib.sha256(ds[int(second["decimal"])]).hexdigest() == second["sha256"]
    assert len(ranged(server, before)) == 3
    ds.close()


def test_http_many_chunks_coalesce(server: ThreadingHTTPServer) -> None:
    name = "cv_identity_raw"
    meta = MANIFEST[name]
    ds = open_dataset(url(server, name))
    keys = [int(k["decimal"]) for k in meta["keys"].values()]
    before = len(server.requests)  # type: ignore[attr-defined]
    values = ds.get_many(keys)
    reqs = ranged(server, before)
    # 4 shards: per shard one request for the index entries, one for the minishard indices,
    # one for the data (all within the coalescing gap)
    assert len(reqs) <= 3 * 4, reqs
    assert len(reqs) < len(keys) // 10
    assert [hashlib.sha256(v).hexdigest() for v in values] == [
        meta["keys"][f"{k:016x}"]["sha256"] for k in keys]
    ds.close()


def test_http_missing_shard_and_key(server: ThreadingHTTPServer) -> None:
    ds = open_dataset(url(server, "ts_kv_identity_minishardbits0_shardbits5"))
    present = {int(k["decimal"]) for k in
               MANIFEST["ts_kv_identity_minishardbits0_shardbits5"]["keys"].values()}
    missing = next(k for k in range(2**40, 2**40 + 100) if k not in present)
    assert missing not in ds
    with pytest.raises(EntryNotFoundError):
        ds[missing]
    ds.close()


def test_http_verify_and_map(server: ThreadingHTTPServer) -> None:
    ds = open_dataset(url(server, "ts_image_identity_gzipindex"))
    assert ds.verify() == []
    assert ds.read_chunk("8_8_40", (0, 0, 0)).shape == (1, 16, 16, 16)
    assert ds.sections()[0].name == "0.shard/shard_index"
    ds.close()


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
