"""The test HTTP server itself: ranges are honoured and every request is counted."""

from __future__ import annotations

from pathlib import Path

import fsspec


def test_range_server_serves_ranges_and_counts(tmp_path: Path, range_server) -> None:
    data = bytes(range(256)) * 40
    (tmp_path / "blob.bin").write_bytes(data)
    srv = range_server(tmp_path)
    fs = fsspec.filesystem("http", skip_instance_cache=True)
    assert fs.cat_file(srv.url("blob.bin"), start=100, end=164) == data[100:164]
    ranged = [r for r in srv.requests if r.range]
    assert [(r.status, r.body_bytes, r.range) for r in ranged] == [(206, 64, "bytes=100-163")]
    srv.reset()
    assert srv.count() == 0
    assert fs.cat_file(srv.url("blob.bin")) == data
    assert srv.bytes_sent == len(data)
    assert not fs.exists(srv.url("missing.bin"))
    assert srv.requests[-1].status == 404
