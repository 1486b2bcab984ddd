"""What bulk verify reads: ``readinto`` into reused buffers, each byte about once, and the
window checks of SWH ``verify`` against the object-by-object walk they stand in for."""

from __future__ import annotations

import hashlib
import os
import struct
from pathlib import Path

import pytest

import shardkit
from shardkit import bulk
from shardkit.formats.swh import verify as swh_verify
from shardkit.formats.swh.reader import LOCAL_VERIFY_BLOCK
from shardkit.sources import BytesSource, CountingSource, FileSource, readinto
from shardkit.writers.swh import delete, write_swh


def test_file_readinto_fills_a_reused_buffer_and_stops_at_the_end(tmp_path: Path) -> None:
    data = bytes(range(256)) * 40
    (tmp_path / "f").write_bytes(data)
    src = FileSource(tmp_path / "f")
    buf = bytearray(1000)
    assert src.readinto(100, buf) == 1000 and bytes(buf) == data[100:1100]
    assert src.readinto(len(data) - 10, buf) == 10 and bytes(buf[:10]) == data[-10:]
    assert src.readinto(len(data), buf) == 0
    with pytest.raises(shardkit.ShardkitError):
        src.readinto(len(data) + 1, buf)
    counted = CountingSource(src)
    assert readinto(counted, 5, memoryview(buf)[:7]) == 7 and bytes(buf[:7]) == data[5:12]
    assert counted.stats.ranges == [(5, 12)] and counted.stats.bytes_read == 7
    # a source without one: read_range, then copied
    assert readinto(BytesSource(data), 250, buf) == 1000 and bytes(buf) == data[250:1250]
    src.close()


def _shard(path: Path, n: int = 3000) -> dict[bytes, bytes]:
    values = {hashlib.sha256(b"%d" % i).digest(): b"v%d" % i * (1 + i % 50) for i in range(n)}
    write_swh(path, values.items())
    return values


def test_swh_verify_through_a_counter_reads_each_byte_about_once(tmp_path: Path) -> None:
    path = tmp_path / "s.shard"
    _shard(path, 20000)
    size = path.stat().st_size
    counted = CountingSource(FileSource(path))
    with shardkit.open(counted) as shard:
        assert shard.verify() == []
        h = shard.header
    ranges = counted.stats.ranges
    # the index once, the objects once (chunks start at an object: a little overlap)
    index_reads = [r for r in ranges if r[0] >= h.index_position and r[1] <= h.hash_position]
    assert sum(e - s for s, e in index_reads) == h.index_size
    obj = [r for r in ranges if h.objects_position <= r[0] < h.index_position]
    assert sum(e - s for s, e in obj) < 1.01 * h.objects_size
    covered = bytearray(size)
    for s, e in ranges:
        covered[s:e] = b"\1" * (e - s)
    # every size field read (a value may be skipped where it straddles two chunks)
    with shardkit.open(path) as shard:
        assert all(covered[e.offset : e.offset + 8] == b"\1" * 8 for e in shard.iter_entries())
    # plus the header's block (LOCAL_VERIFY_BLOCK, not the 8 MiB of a URL's blocks)
    assert counted.stats.bytes_read < 1.01 * size + LOCAL_VERIFY_BLOCK


def _flip(path: Path, offset: int, value: bytes) -> None:
    data = bytearray(path.read_bytes())
    data[offset : offset + len(value)] = value
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("window", [swh_verify.WINDOW, 700])
def test_swh_window_checks_agree_with_the_walk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               window: int) -> None:
    """Sound shards with deleted objects pass; a size field past the section, an overlap and
    a non-zero byte in a deleted object give the walk's problems, whatever the windows."""
    monkeypatch.setattr(swh_verify, "WINDOW", window)
    path = tmp_path / "s.shard"
    values = _shard(path)
    victims = list(values)[10:20]
    delete(path, victims)
    with shardkit.open(CountingSource(FileSource(path))) as shard:
        assert shard.verify() == []
        assert shard.verify(content_hash="sha256") != []  # values are not their sha256
        h = shard.header
        entries = sorted(shard.iter_entries(with_sizes=True), key=lambda e: e.offset)
    first, second = entries[0], entries[1]
    # a size that runs past the section
    bad = tmp_path / "big.shard"
    bad.write_bytes(path.read_bytes())
    _flip(bad, second.offset, struct.pack(">Q", h.objects_size))
    with shardkit.open(CountingSource(FileSource(bad))) as shard:
        problems = shard.verify()
    assert [p.check for p in problems][:1] == ["object_bounds"]
    assert problems[0].offset == second.offset
    # a size one too big: the next object overlaps it
    over = tmp_path / "over.shard"
    over.write_bytes(path.read_bytes())
    (size,) = struct.unpack(">Q", path.read_bytes()[first.offset : first.offset + 8])
    _flip(over, first.offset, struct.pack(">Q", size + 1))
    with shardkit.open(CountingSource(FileSource(over))) as shard:
        checks = [p.check for p in shard.verify()]
    assert "object_overlap" in checks
    # a deleted object's bytes are zeros: one non-zero byte is unreferenced data
    holes = tmp_path / "hole.shard"
    holes.write_bytes(path.read_bytes())
    live = {e.offset for e in entries}
    gap = next(e.offset + 8 + e.size for e in entries if e.offset + 8 + e.size not in live
               and e.offset + 8 + e.size < h.index_position)
    _flip(holes, gap + 3, b"\x01")
    with shardkit.open(CountingSource(FileSource(holes))) as shard:
        problems = shard.verify()
    assert [(p.check, p.offset) for p in problems] == [("unreferenced_data", gap)]


def test_bulk_results_stay_small(tmp_path: Path) -> None:
    path = tmp_path / "s.shard"
    _shard(path)
    result = bulk.run_one(str(path))
    assert result["status"] == "sound" and result["problems"] == []
    assert len(repr(result)) < 400


def _uleb(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _python_split(body: bytes) -> list[bytes] | None:
    from shardkit.formats._sorted_set import _BodyError, _decode_records_python

    try:
        return _decode_records_python(body)
    except _BodyError:
        return None


def test_c_record_bodies_agree_with_the_python_decoder() -> None:
    """``_records.split`` and ``check_sorted`` against the pure-Python loops, on bodies well
    formed, out of order, and broken every way (non-minimal, cut off, past the end)."""
    import random

    from shardkit.formats._sorted_set import _records

    if _records is None:
        pytest.skip("built without the C accelerator")
    rng = random.Random(5)
    bodies = [b"", b"\x00", b"\x80\x00", b"\x81", b"\x05abc", b"\xff" * 10 + b"\x01",
              _uleb(200) + b"x" * 200, _uleb(200) + b"x" * 199, b"\x80\x80\x00",
              b"\x01a\x00\x01a",
              # 9-byte lengths (the most allowed), a 10th byte, values far past any body
              b"\xff" * 8 + b"\x7f", b"\x80" * 8 + b"\x01", b"\x80" * 9 + b"\x01",
              b"\x81" + b"\x80" * 7 + b"\x00", b"\x00\x7f", _uleb(1 << 62) + b"x",
              # a length one past the end, after records, and in a long ASCII body
              b"\x02a", b"\x01a\x02b", b"\x05abcd" * 200 + b"\x06abcde",
              b"\x05abcd" * 200 + b"\x05abc",
              # order: duplicates, a prefix before its extension and after it, empty records
              b"\x01a\x01a", b"\x01a\x02ab", b"\x02ab\x01a", b"\x00" * 5, b"\x01a\x00",
              b"\x03abc\x03abd\x03abc"]
    for _ in range(300):
        recs = [rng.randbytes(rng.choice([0, 1, 3, 40, 127, 128, 300])) for _ in range(
            rng.randrange(6))]
        if rng.random() < 0.5:
            recs.sort()
        body = b"".join(_uleb(len(r)) + r for r in recs)
        if rng.random() < 0.3 and body:
            cut = rng.randrange(len(body))
            body = body[:cut] + bytes([rng.randrange(256)]) + body[cut + 1 :]
        bodies.append(body)
    for body in bodies:
        want = _python_split(body)
        assert _records.split(body) == want, body
        assert _records.split(bytearray(body)) == want, body
        got = _records.check_sorted(body)
        if want is None:
            assert got is None
            continue
        bad = next((j for j in range(1, len(want)) if want[j] < want[j - 1]), -1)
        assert got == (len(want), bad, want[0] if want else None,
                       want[-1] if want else None), body


def test_workers_get_the_malloc_settings(tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Local workers (and a ``connect("local")`` cluster's) keep freed buffers of up to 32
    MiB instead of unmapping them: each block's buffers are not faulted in and zeroed again."""
    import bulk_tasks

    path = tmp_path / "s.shard"
    _shard(path, 100)
    # what an earlier Dask cluster of this process leaves in os.environ does not count
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")
    summary = bulk.run([str(path)], bulk_tasks.malloc_env, jobs=1, progress=False)
    assert summary.results[0]["env"] == list(bulk.WORKER_MALLOC.values())
    pytest.importorskip("distributed")
    client, close = bulk.connect("local", jobs=1)
    try:
        summary = bulk.run([str(path)], bulk_tasks.malloc_env, client=client, progress=False)
    finally:
        close()
    assert summary.results[0]["env"] == list(bulk.WORKER_MALLOC.values())
    assert os.environ["MALLOC_TRIM_THRESHOLD_"] == "65536"  # the caller's, as it was


def test_local_cluster_workers_do_not_profile(tmp_path: Path) -> None:
    """``connect("local")``'s workers run without Dask's 10 ms stack sampler (no dashboard
    shows it; it cost them 7-10% CPU), and the caller's Dask config is left as it was."""
    import bulk_tasks

    distributed = pytest.importorskip("distributed")
    import dask

    path = tmp_path / "s.shard"
    _shard(path, 100)
    client, close = bulk.connect("local", jobs=1)
    try:
        summary = bulk.run([str(path)], bulk_tasks.dask_profiling, client=client,
                           progress=False)
        assert isinstance(client, distributed.Client)
    finally:
        close()
    assert summary.results[0]["profile"] is False
    assert dask.config.get("distributed.worker.profile.enabled") is True
