"""ZSS and Amudai under stress: decompression and allocation bombs, threads, killed writers."""

from __future__ import annotations

import io
import os
import random
import signal
import subprocess
import sys
import threading
import tracemalloc
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from shardkit.generated import amudai_common_pb2 as cpb
from shardkit.generated import amudai_shard_pb2 as spb

import shardkit
from shardkit.formats.amudai.blocks import MAX_DECOMPRESSED, decode_binary_values
from shardkit.formats.amudai.wire import MAX_ITEMS, check_items
from shardkit.formats.zss import ZssFile
from shardkit.sources import BytesSource, CountingSource
from shardkit.writers.amudai import build_amudai, field, write_amudai
from shardkit.writers.zss import ZssWriter, build_zss, write_zss

DATA = Path(__file__).parent / "data"
GIB = 1 << 30


def zlib_zeros(size: int) -> bytes:
    """A zlib stream of ``size`` zero bytes, built in a blink: deflate repeats itself on zeros.

    Only its first ``size`` bytes are right: the stream ends without its Adler-32, which a
    reader that refuses the body first never reaches.
    """
    c = zlib.compressobj(9)
    mib = bytes(1 << 20)
    first = c.compress(mib) + c.flush(zlib.Z_SYNC_FLUSH)
    again = c.compress(mib) + c.flush(zlib.Z_SYNC_FLUSH)
    assert c.compress(mib) + c.flush(zlib.Z_SYNC_FLUSH) == again
    return first + again * (size // (1 << 20) - 1)


def test_zss_two_gib_block_refused_in_bounded_memory() -> None:
    bomb = zlib_zeros(2 * GIB)
    real = zlib.compress
    calls = []

    def compress(body: bytes) -> bytes:  # the first block written is the data block
        calls.append(len(body))
        return bomb if len(calls) == 1 else real(body)

    buf = io.BytesIO()
    w = ZssWriter(buf, codec="zlib")
    w._compress = compress
    w.add_many([b"a", b"b"])
    w.close()
    data = buf.getvalue()
    tracemalloc.start()
    try:
        z = shardkit.open(data)
        with pytest.raises(shardkit.LimitExceededError) as info:
            list(z)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 512 << 20, peak
    assert info.value.field == "/blocks/@0/payload"
    assert info.value.offset == z.frame(0).payload_offset
    problems = z.verify()
    assert [p.check for p in problems][:1] == ["codec"]


def test_zss_big_legitimate_block_still_reads() -> None:
    records = [b"%08d" % i + b"x" * 4000 for i in range(6000)]  # 24 MB in one block
    data = build_zss(records, codec="zlib", approx_block_size=64 << 20)
    z = shardkit.open(data)
    assert list(z) == records and z.verify() == []
    bz = shardkit.open(build_zss(records[:3000], codec="bz2", approx_block_size=64 << 20))
    assert list(bz) == records[:3000]


def test_zss_stored_block_over_the_cap_refused_without_reading_it() -> None:
    # none+crc32c: the framing gives the body's size, so a block over max_block_size is refused
    # before its payload is read (it used to be read, CRC-checked and copied first)
    records = [b"%08d" % i + b"x" * 200 for i in range(10_000)]  # 2 MB in one block
    data = build_zss(records, codec="none+crc32c", approx_block_size=64 << 20)
    cap = 64 << 10
    ops: list[Callable[[ZssFile], Any]] = [
        lambda z: list(z.search(prefix=b"0000")), list, lambda z: list(z.iter_blocks()), len,
        lambda z: z.summary(counts=True), lambda z: z.decode_payload(z.frame(0), b"")]
    for block_size in (0, 4096):  # 4096: the one-request block reads of remote sources
        for op in ops:
            src = CountingSource(BytesSource(data), block_size=block_size)
            z = ZssFile(src, max_block_size=cap)
            before = src.stats.bytes_read
            with pytest.raises(shardkit.LimitExceededError, match="exceeds the 65536-byte cap"
                               ) as info:
                op(z)
            assert src.stats.bytes_read - before < cap + 3 * 4096, (block_size, op)
            assert info.value.field == "/blocks/@0/payload"
            assert info.value.offset == z.frame(0).offset
        src = CountingSource(BytesSource(data), block_size=block_size)
        z = ZssFile(src, max_block_size=cap)
        before = src.stats.bytes_read
        problems = z.verify()
        assert src.stats.bytes_read - before < cap
        assert problems[0].check == "codec" and "exceeds" in problems[0].message
    assert list(ZssFile(BytesSource(data), max_block_size=len(data))) == records


def test_amudai_lz4_and_zstd_bombs_refused_before_allocating() -> None:
    # a binary LZ4 block whose offsets promise 2 GiB of values
    n = 2
    offsets = np.array([0, 1 << 30, 2 << 30], "<u8").tobytes()
    values = (b"\x11\x00" + (16).to_bytes(4, "little") + b"\x08\x00" + bytes(16) + offsets)
    with pytest.raises(shardkit.LimitExceededError, match="cap"):
        decode_binary_values(memoryview(values), n, 0, base=100, field="/x")
    # just under the cap: LZ4 cannot expand 16 bytes that far
    offsets = np.array([0, 1 << 20, MAX_DECOMPRESSED], "<u8").tobytes()
    values = (b"\x11\x00" + (16).to_bytes(4, "little") + b"\x08\x00" + bytes(16) + offsets)
    with pytest.raises(shardkit.LayoutError, match="cannot hold"):
        decode_binary_values(memoryview(values), n, 0, base=100, field="/x")
    # Zstd: the output is capped at what the block declares
    import zstandard

    frame = zstandard.ZstdCompressor().compress(bytes(64 << 20))
    offsets = np.array([0, 10, 20], "<u8").tobytes()
    pad = bytes(-(8 + len(frame)) % 8)
    values = (b"\x10\x00" + len(frame).to_bytes(4, "little") + b"\x08\x00" + frame + pad
              + offsets)
    tracemalloc.start()
    try:
        with pytest.raises(shardkit.LayoutError, match="declares"):
            decode_binary_values(memoryview(values), n, 0, base=100, field="/x")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20


def test_protobuf_repeated_fields_capped_before_parsing() -> None:
    raw = b"\x0a\x00" * (MAX_ITEMS + 10)  # a StripeList of empty stripes
    with pytest.raises(shardkit.LimitExceededError, match="more than"):
        check_items(raw, spb.StripeList.DESCRIPTOR, field="/stripe_list")
    ok = spb.StripeList()
    for _ in range(3):
        ok.stripes.add().total_record_count = 5
    assert check_items(ok.SerializeToString(), spb.StripeList.DESCRIPTOR) >= 3
    deep = cpb.AnyValue()  # nesting, bounded by the walk too
    cur = deep
    for _ in range(80):
        cur = cur.list_value.elements.add()
    with pytest.raises(shardkit.LimitExceededError, match="nested"):
        check_items(deep.SerializeToString(), cpb.AnyValue.DESCRIPTOR, max_depth=64)


# -- threads ------------------------------------------------------------------------------------


def run_threads(work: Callable[[int], Any], n: int = 8) -> list[Any]:
    results: list[Any] = [None] * n
    errors: list[BaseException] = []

    def go(k: int) -> None:
        try:
            results[k] = work(k)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=go, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    return results


@pytest.mark.parametrize("cache_blocks", [64, 2])
def test_zss_reader_shared_by_threads(cache_blocks: int) -> None:
    path = DATA / "zss" / "medium_zlib.zss"
    with shardkit.open(path) as z:
        records = list(z)
        prefixes = sorted({r[:3] for r in random.Random(1).sample(records, 40)})
        alone = {p: list(z.search(prefix=p)) for p in prefixes}
    shared = shardkit.ZssFile(shardkit.FileSource(path), cache_blocks=cache_blocks,
                              cache_index_blocks=2)

    def work(k: int) -> tuple[Any, ...]:
        found = {p: list(shared.search(prefix=p)) for p in prefixes[k % 3::2]}
        member = all(r in shared for r in records[k::97])
        everything = list(shared) if k % 4 == 0 else None
        problems = shared.verify() if k == 1 else []
        return found, member, everything, problems

    for found, member, everything, problems in run_threads(work):
        assert found == {p: alone[p] for p in found}
        assert member and problems == []
        assert everything in (None, records)
    shared.close()


def test_amudai_reader_shared_by_threads() -> None:
    path = DATA / "amudai" / "twolevel.amudai.shard"
    with shardkit.open(path) as s:
        columns = {k: s[k] for k in s.keys()}
        rows = s[:]
    shared = shardkit.open(path)

    def work(k: int) -> tuple[Any, ...]:
        keys = list(columns)[k::3]
        return ({c: shared[c] for c in keys}, [shared[i] for i in range(k, len(rows), 5)],
                shared.verify() if k < 2 else [])

    for k, (cols, some_rows, problems) in enumerate(run_threads(work)):
        assert cols == {c: columns[c] for c in cols}
        assert some_rows == rows[k::5]
        assert problems == []
    shared.close()


def test_remote_readers_shared_by_threads(range_server) -> None:
    srv = range_server(DATA)
    with shardkit.open(DATA / "zss" / "medium_none.zss") as z:
        records = list(z)
    with shardkit.open(srv.url("zss/medium_none.zss"), cache=256 << 10, block_size=16 << 10
                       ) as shared:
        def work(k: int) -> bool:
            picks = records[k::50]
            return all(list(shared.search(prefix=r)) == [x for x in records if
                                                         x.startswith(r)][:len(
                                                             list(shared.search(prefix=r)))]
                       for r in picks[:5]) and all(r in shared for r in picks)

        assert all(run_threads(work))


# -- writers: temporary name, then rename -------------------------------------------------------


def test_amudai_writer_failure_leaves_old_file(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "t.amudai.shard"
    write_amudai(path, [field("v", "Int64")], [{"v": [1, 2, 3]}])
    old = path.read_bytes()
    import shardkit.writers._atomic as atomic

    real = os.replace

    def fail(src: Any, dst: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic.os, "replace", fail)
    with pytest.raises(OSError, match="space"):
        write_amudai(path, [field("v", "Int64")], [{"v": [4, 5]}])
    monkeypatch.setattr(atomic.os, "replace", real)
    assert path.read_bytes() == old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.amudai.shard"]
    files = write_amudai(tmp_path / "two.amudai.shard", [field("v", "Int64")],
                         [{"v": [1]}, {"v": [2, 3]}], two_level=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["t.amudai.shard", *(f.name for f in files)])
    with shardkit.open(files[0]) as s:
        assert s["v"] == [1, 2, 3] and s.verify() == []


def test_writer_hits_file_size_limit(tmp_path: Path) -> None:
    """A full disk, simulated with RLIMIT_FSIZE: no file under the final name."""
    script = f"""
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))
from shardkit.writers.zss import write_zss
from shardkit.writers.amudai import write_amudai, field
import random
rng = random.Random(1)
recs = sorted(rng.randbytes(40) for _ in range(20_000))
kind = sys.argv[1]
try:
    if kind == "zss":
        write_zss({str(tmp_path / 'f.zss')!r}, recs, codec="none+crc32c")
    else:
        write_amudai({str(tmp_path / 'f.amudai.shard')!r}, [field("b", "Binary")],
                     [{{"b": recs}}])
except OSError as exc:
    print("OSError", exc.errno)
"""
    for kind in ("zss", "amudai"):
        out = subprocess.run([sys.executable, "-c", script, kind], capture_output=True,
                             text=True, timeout=60)
        assert "OSError 27" in out.stdout, (out.stdout, out.stderr)
        assert list(tmp_path.iterdir()) == []


def test_writer_killed_leaves_no_partial_file(tmp_path: Path) -> None:
    target = tmp_path / "k.zss"
    write_zss(target, [b"old"])
    script = f"""
import os, signal, sys
from shardkit.writers.zss import ZssWriter
import shardkit.writers.zss as w
real = w.ZssWriter._write_block
count = [0]
def slow(self, *a):
    count[0] += 1
    if count[0] == 3:
        os.kill(os.getpid(), signal.SIGKILL)
    return real(self, *a)
w.ZssWriter._write_block = slow
w.write_zss({str(target)!r}, (b"%08d" % i for i in range(100_000)), approx_block_size=4096)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60)
    assert out.returncode == -signal.SIGKILL
    with shardkit.open(target) as z:
        assert list(z) == [b"old"]
    leftovers = [p.name for p in tmp_path.iterdir() if p.name != "k.zss"]
    assert all(p.startswith(".k.zss.") and p.endswith(".tmp") for p in leftovers)
    with pytest.raises(shardkit.ShardkitError):  # a leftover temporary never opens as a shard
        for p in leftovers:
            shardkit.open(tmp_path / p)


def test_bytes_source_shared_by_threads() -> None:
    data = build_amudai([field("v", "Int64")], [{"v": list(range(50_000))}])
    shared = shardkit.open(BytesSource(data))
    got = run_threads(lambda k: shared.rows(k * 1000, k * 1000 + 3))
    assert got == [[{"v": k * 1000 + i} for i in range(3)] for k in range(8)]
