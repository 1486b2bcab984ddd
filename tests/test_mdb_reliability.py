"""Xet MDB: the writer never leaves a partial shard under the final name, and one reader
shared by 8 threads gives exactly what one thread gives."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from shardkit.formats.xet_mdb import MdbShard
from shardkit.sources import BytesSource, FileSource
from shardkit.writers import xet_mdb as w

DATA = Path(__file__).parent / "data" / "mdb"
SESSION = DATA / "real" / "session" / (
    "b04ac8152506ea5af6b90a7378a3d35c46cbef373a597241937795e323cea8f1.mdb")


def _sample() -> MdbShard:
    return MdbShard(FileSource(SESSION))


def test_write_to_a_path_renames_a_complete_file(tmp_path: Path) -> None:
    s = _sample()
    target = tmp_path / "out.mdb"
    n = w.write_mdb(target, s.files, s.xorbs)
    assert n == target.stat().st_size and target.read_bytes() == w.build_mdb(s.files, s.xorbs)
    assert os.listdir(tmp_path) == ["out.mdb"]
    buf = io.BytesIO()
    assert w.write_mdb(buf, s.files, s.xorbs) == n and buf.getvalue() == target.read_bytes()


def test_a_failed_write_keeps_the_old_file_and_no_temporary(tmp_path: Path,
                                                           monkeypatch) -> None:
    s = _sample()
    target = tmp_path / "out.mdb"
    target.write_bytes(b"old")

    def full_disk(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(OSError, match="No space"):
        w.write_mdb(target, s.files, s.xorbs)
    assert target.read_bytes() == b"old" and os.listdir(tmp_path) == ["out.mdb"]
    # a build error happens before any file is made
    with pytest.raises(AttributeError):
        w.write_mdb(tmp_path / "new.mdb", [object()], s.xorbs)
    assert os.listdir(tmp_path) == ["out.mdb"]


_WRITER = """
import resource, signal, sys
from shardkit.formats.xet_mdb import MdbShard
from shardkit.sources import FileSource
from shardkit.writers.xet_mdb import write_mdb
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
limit = int(sys.argv[3])
if limit:
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
s = MdbShard(FileSource(sys.argv[1]))
files, xorbs = list(s.files) * int(sys.argv[4]), list(s.xorbs)
write_mdb(sys.argv[2], files, xorbs, sort=False, tables=())
"""


def _run_writer(target: Path, limit: int, repeat: int, **kw):
    return subprocess.Popen([sys.executable, "-c", _WRITER, str(SESSION), str(target),
                             str(limit), str(repeat)], stderr=subprocess.PIPE, **kw)


def test_a_file_size_limit_leaves_no_partial_file(tmp_path: Path) -> None:
    target = tmp_path / "out.mdb"
    proc = _run_writer(target, 1000, 1)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode != 0 and b"File too large" in err
    assert os.listdir(tmp_path) == []  # neither the final name nor a temporary file


def test_a_killed_writer_leaves_no_file_or_a_whole_one(tmp_path: Path) -> None:
    # SIGKILL at several points of a writer producing a ~40 MB shard: the final name is
    # either absent or a complete shard that parses (a killed process may leave its hidden
    # temporary file, never a partial file under the final name)
    killed = 0
    for delay in (0.05, 0.3, 0.8, 1.5):
        target = tmp_path / f"k{delay}.mdb"
        proc = _run_writer(target, 0, 30000)
        try:
            proc.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
            killed += proc.returncode == -signal.SIGKILL
        if target.exists():
            s = MdbShard(FileSource(target))
            n = len(_sample().files)
            assert len(s.files) == 30000 * n
            # the files repeat (no lookup tables): the first record of a hash wins, as in xet-core
            last = s.files[-1]
            assert s.file(last.hash) == next(f for f in s.files[:n] if f.hash == last.hash)
    assert killed >= 1
    finished = tmp_path / "done.mdb"
    proc = _run_writer(finished, 0, 2)
    assert proc.wait(timeout=60) == 0
    assert len(MdbShard(FileSource(finished)).files) == 2 * len(_sample().files)


def _work(s: MdbShard) -> tuple:
    """Lookups, iteration, verify and the whole tree, as one thread sees them."""
    files = [s.file(f.hash) for f in s.files]
    terms = [f.terms for f in files]  # lazily decoded records
    xorbs = [s.xorb(x.hash) for x in s.xorbs]
    chunks = [s.find_chunk(c.hash) for x in s.xorbs for c in x.chunks]
    report = s.verify()
    return (files, terms, xorbs, [x.chunks for x in xorbs], chunks, list(s.keys()), report,
            report.notes, s.to_dict(), s.summary())


class _Remote:  # a source without a view: the reader fetches ranges, then the whole file
    def __init__(self, data: bytes) -> None:
        self.data, self.name = data, "remote://x.mdb"

    @property
    def size(self) -> int:
        return len(self.data)

    def read_range(self, start: int, end: int) -> bytes:
        return self.data[start:end]

    def close(self) -> None:
        pass


@pytest.mark.parametrize("kind", ["file", "bytes", "remote"])
def test_one_reader_shared_by_8_threads(kind: str) -> None:
    data = SESSION.read_bytes()

    def fresh() -> MdbShard:
        if kind == "file":
            return MdbShard(FileSource(SESSION))
        return MdbShard(BytesSource(data) if kind == "bytes" else _Remote(data))

    want = _work(fresh())
    for _ in range(3):
        shared = fresh()  # every lazy cache is built by the racing threads
        results: list[tuple] = [()] * 8
        errors: list[BaseException] = []
        barrier = threading.Barrier(8)
        threads = [threading.Thread(target=_run, args=(shared, barrier, results, errors, i))
                   for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        assert all(r == want for r in results)


def _run(shared: MdbShard, barrier: threading.Barrier, results: list[tuple],
         errors: list[BaseException], i: int) -> None:
    try:
        barrier.wait()
        results[i] = _work(shared)
    except BaseException as exc:  # noqa: BLE001 - the test reports it
        errors.append(exc)
