"""A user's script: ZSS, Amudai and the byte sources, checked with mypy --strict."""

from __future__ import annotations

import shardkit
from shardkit.formats.amudai import AmudaiShard
from shardkit.formats.zss import ZssFile
from shardkit.remote import RemoteSource
from shardkit.sources import BytesSource, FileSource, read_ranges


def zss_records(path: str) -> list[bytes]:
    z = ZssFile(FileSource(path))
    found: list[bytes] = list(z.search(prefix=b"a"))
    n: int = len(z)
    info: dict[str, object] = z.summary(counts=True)
    problems = z.verify()
    return [*found, bytes(n)] if info and not problems else found


def amudai_rows(data: bytes) -> int:
    with AmudaiShard(BytesSource(data)) as s:
        rows: list[dict[str, object]] = s.rows(0, 10)
        one: dict[str, object] = s[0]
        column: list[object] = s["id"]
        count: int = s.record_count
        return len(rows) + len(one) + len(column) + count + len(s)


def remote(url: str) -> bytes:
    src = RemoteSource(url, block_size=1 << 16, cache=1 << 20)
    a, b = read_ranges(src, [(0, 4), (10, 20)])
    return a + b + src.read_range(0, 1)


def opened(path: str) -> object:
    return shardkit.open(path, cache=1 << 20, block_size=1 << 16)
