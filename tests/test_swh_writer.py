"""shardkit's SWH writer, deleter and truncater, checked against both references.

Shards written by :mod:`shardkit.writers.swh` (our own CHD_PH builder) must parse through the
Kaitai classes, verify clean, and be read by swh.perfecthash 1.3.2 and swh-shard 2.2.1 with
every value equal; deletions and truncations must round-trip both ways.
"""

from __future__ import annotations

import errno
import hashlib
import json
import random
from pathlib import Path

import numpy as np
import pytest
from shardkit.generated.swh_read_shard import SwhReadShard
from swh_impl import swh_impl  # noqa: F401 - the fixture, used by pytestmark

import shardkit
from shardkit._kaitai import parse
from shardkit.cli import main as cli_main
from shardkit.hashing.cmph_build import build_chd_ph, next_prime
from shardkit.hashing.cmph_chd import ChdPh
from shardkit.sources import BytesSource, as_stream
from shardkit.writers.swh import (
    KeysNotFoundError,
    SwhShardWriter,
    delete,
    truncate,
    write_swh,
    write_swh_files,
)

pytestmark = pytest.mark.usefixtures("swh_impl")

TOMBSTONE = 2**64 - 1


def values_for(n: int, seed: int) -> dict[bytes, bytes]:
    rng = random.Random(seed)
    out: dict[bytes, bytes] = {}
    while len(out) < n:
        v = rng.randbytes(rng.choice([0, 1, 5, 64, 700]))
        out[hashlib.sha256(v).digest()] = v
    return out


# -- the builder ----------------------------------------------------------------------------


@pytest.mark.parametrize("m", [1, 2, 3, 4, 5, 11, 127, 128, 129, 1000, 5000])
def test_builder_parameters_and_slots(m: int) -> None:
    keys = np.random.default_rng(m).integers(0, 256, (m, 32), dtype=np.uint8)
    built = build_chd_ph(keys)
    assert built.nbuckets == m // 4 + 1
    assert built.n == next_prime(int(m / 0.99) + 1) >= m
    chd = ChdPh.from_dump(built.dump)
    assert (chd.n, chd.nbuckets, chd.seed, chd.dump_size) == (built.n, built.nbuckets,
                                                               built.seed, len(built.dump))
    assert chd.slots(keys).tolist() == built.slots.tolist()
    assert len(set(built.slots.tolist())) == m
    assert [chd.slot(k.tobytes()) for k in keys[:50]] == built.slots[:50].tolist()


def test_builder_is_reproducible() -> None:
    keys = np.random.default_rng(5).integers(0, 256, (300, 32), dtype=np.uint8)
    assert build_chd_ph(keys).dump == build_chd_ph(keys).dump


@pytest.mark.interop
@pytest.mark.parametrize("m", [130, 2000, 20_000])
def test_builder_rebuilds_the_reference_function_from_its_seed(m: int, tmp_path: Path) -> None:
    """Given the keys and the seed a swh.perfecthash (cmph) build ended with, our builder
    writes that very cmph dump, byte for byte, with the accelerator and without: the search
    is cmph's place_buckets2."""
    ref = pytest.importorskip("swh.perfecthash")
    keys = [hashlib.sha256(b"%d-%d" % (m, i)).digest() for i in range(m)]
    path = tmp_path / "ref.shard"
    with ref.ShardCreator(str(path), m) as w:
        for k in keys:
            w.write(k, k[:5])
    with shardkit.open(path) as s:
        want, seed = bytes(s._dump[: s.layout.dump_size]), s.layout.seed
    built = build_chd_ph(np.frombuffer(b"".join(keys), np.uint8).reshape(m, 32), seed=seed)
    assert built.seed == seed
    assert built.dump == want


def test_next_prime() -> None:
    assert [next_prime(x) for x in (2, 3, 4, 9, 24, 202021)] == [3, 3, 5, 11, 29, 202021]


# -- written shards, read by us and by both references ----------------------------------------


@pytest.fixture(scope="module", params=[(1, "tombstones"), (3, "zeros"), (130, "tombstones"),
                                        (2000, "tombstones"), (2000, "zeros")],
                ids=lambda p: f"n{p[0]}-{p[1]}")
def written(request, tmp_path_factory):
    n, init = request.param
    values = values_for(n, n)
    path = tmp_path_factory.mktemp("w") / "ours.shard"
    write_swh(path, values.items(), index_init=init)
    return path, values, init


def test_our_reader_and_kaitai(written) -> None:
    path, values, init = written
    with shardkit.open(path) as s:
        assert s.verify(content_hash="sha256") == []
        c = s.counts()
        assert (c.live, c.deleted, c.unused) == (len(values), 0, s.num_slots - len(values))
        assert c.index_init == (init if c.unused else "unknown")
        assert all(s[k] == v for k, v in values.items())
        assert s.get_many(list(values)) == list(values.values())
    ks = parse(SwhReadShard, as_stream(BytesSource(path.read_bytes())))
    live = [e for e in ks.index.entries if not e.is_empty and not e.is_tombstone]
    assert {e.key: e.object.data for e in live} == values
    unused = [e for e in ks.index.entries if e.is_empty or e.is_tombstone]
    assert all((e.is_tombstone if init == "tombstones" else e.is_empty) for e in unused)
    assert ks.hash_function.num_keys == len(ks.index.entries)


@pytest.mark.interop
@pytest.mark.parametrize("module", ["swh.perfecthash", "swh.shard"])
def test_references_read_every_value(written, module: str) -> None:
    ref_mod = pytest.importorskip(module)
    path, values, _ = written
    ref = ref_mod.Shard(str(path))
    try:
        for k, v in values.items():
            assert ref.lookup(k) == v
    finally:
        ref.close()


def test_errors_leave_no_file(tmp_path: Path) -> None:
    target = tmp_path / "x.shard"
    k = hashlib.sha256(b"a").digest()
    with pytest.raises(shardkit.ShardkitError, match="duplicate key " + k.hex()):
        write_swh(target, [(k, b"a"), (hashlib.sha256(b"b").digest(), b"b"), (k, b"a")])
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(shardkit.InvalidKeyError, match="32 bytes"):
        write_swh(target, [(b"short", b"v")])
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(shardkit.ShardkitError, match="at least one key"):
        write_swh(target, [])
    assert list(tmp_path.iterdir()) == []
    target.write_bytes(b"keep")
    with pytest.raises(shardkit.ShardkitError, match="already exists"):
        write_swh(target, [(k, b"a")])
    assert target.read_bytes() == b"keep"


def test_value_is_checked_before_anything_is_written(tmp_path: Path) -> None:
    path = tmp_path / "v.shard"
    good = {hashlib.sha256(b"a").digest(): b"a", hashlib.sha256(b"b").digest(): b"b"}
    with SwhShardWriter(path) as w:
        w.write(hashlib.sha256(b"a").digest(), b"a")
        for bad in ("text", 7, None, [1, 2]):
            with pytest.raises(shardkit.ShardkitError, match="bytes-like") as info:
                w.write(hashlib.sha256(b"c").digest(), bad)  # type: ignore[arg-type]
            assert not isinstance(info.value, TypeError)
        assert len(w) == 1
        w.write(hashlib.sha256(b"b").digest(), b"b")
    with shardkit.open(path) as s:
        assert s.verify(content_hash="sha256") == []
        assert dict(s.items()) == good
        assert s.header.objects_size == sum(8 + len(v) for v in good.values())


def test_values_of_wide_items_store_every_byte(tmp_path: Path) -> None:
    path = tmp_path / "w.shard"
    arr = np.arange(10, dtype=np.uint32)
    values = {
        b"\x01" * 32: memoryview(arr),  # itemsize 4: 40 bytes, len() 10
        b"\x02" * 32: arr.reshape(2, 5),  # two dimensions
        b"\x03" * 32: memoryview(b"abcdef")[::2],  # not contiguous
        b"\x04" * 32: bytearray(b"xyz"),
        b"\x05" * 32: memoryview(b""),
    }
    write_swh(path, values.items())
    with shardkit.open(path) as s:
        assert s.verify() == []
        for k, v in values.items():
            assert s[k] == (v.tobytes() if hasattr(v, "tobytes") else bytes(v))
        assert s[b"\x01" * 32] == arr.tobytes() and len(arr.tobytes()) == 40


def test_full_disk_is_a_clear_error(tmp_path: Path) -> None:
    target = tmp_path / "full.shard"
    w = SwhShardWriter(target)

    class Full:
        closed = False

        def write(self, data: bytes) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

        def close(self) -> None:
            self.closed = True

    real = w._fh
    w._fh = Full()  # type: ignore[assignment]
    real.close()
    w.write(hashlib.sha256(b"x").digest(), b"x")  # buffered: written at the next flush
    with pytest.raises(shardkit.ShardkitError, match="the disk is full"):
        w.close()
    assert list(tmp_path.iterdir()) == []
    # a large object is flushed at once
    w = SwhShardWriter(target)
    w._fh.close()
    w._fh = Full()  # type: ignore[assignment]
    with pytest.raises(shardkit.ShardkitError, match="the disk is full"):
        w.write(hashlib.sha256(b"y").digest(), bytes(2 << 20))
    assert list(tmp_path.iterdir()) == []


def test_exception_inside_with_removes_the_partial_file(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), SwhShardWriter(tmp_path / "p.shard") as w:
        w.write(hashlib.sha256(b"x").digest(), b"x")
        raise RuntimeError("stop")
    assert list(tmp_path.iterdir()) == []


# -- delete and truncate, both ways with the references --------------------------------------


@pytest.mark.interop
def test_our_delete_read_by_references(tmp_path: Path) -> None:
    s2 = pytest.importorskip("swh.shard")
    s1 = pytest.importorskip("swh.perfecthash")
    values = values_for(500, 3)
    path = tmp_path / "r.shard"
    with s2.ShardCreator(str(path), len(values)) as w:
        for k, v in values.items():
            w.write(k, v)
    gone = list(values)[:7]
    status = delete(path, gone)
    assert set(status.values()) == {"deleted"}
    assert set(delete(path, gone[:2]).values()) == {"deleted or absent"}  # idempotent
    for mod in (s1, s2):
        ref = mod.Shard(str(path))
        for k, v in values.items():
            if k in gone:
                with pytest.raises(KeyError):
                    ref.lookup(k)
            else:
                assert ref.lookup(k) == v
        ref.close()
    with shardkit.open(path) as s:
        assert s.verify() == []
        assert s.deleted_count == 7
    absent = hashlib.sha256(b"never written").digest()
    before = path.read_bytes()
    with shardkit.open(path) as s:
        slot_is_live = s._entry(s.slot_of(absent))[1] not in (0, TOMBSTONE)
    if slot_is_live:  # a key on a live slot of another key: refused, nothing changed
        with pytest.raises(shardkit.EntryNotFoundError):
            delete(path, [list(values)[10], absent])
        assert path.read_bytes() == before


@pytest.mark.interop
def test_reference_delete_read_by_us(tmp_path: Path) -> None:
    s2 = pytest.importorskip("swh.shard")
    values = values_for(300, 4)
    path = tmp_path / "ours.shard"
    write_swh(path, values.items(), index_init="zeros")
    gone = list(values)[5:9]
    for k in gone:
        assert s2.Shard.delete(str(path), k) == 0
    with shardkit.open(path) as s:
        assert s.verify() == []
        assert s.counts().deleted == 4
        for k in gone:
            with pytest.raises(shardkit.DeletedEntryError, match="was deleted"):
                s[k]


def test_truncate(tmp_path: Path) -> None:
    values = values_for(50, 9)
    path = tmp_path / "t.shard"
    write_swh(path, values.items())
    size = path.stat().st_size
    with open(path, "r+b") as fh:
        fh.truncate(size + 12345)
    assert truncate(path) == (size + 12345, size)
    assert truncate(path) == (size, size)
    with shardkit.open(path) as s:
        assert s.verify() == []
    with open(path, "ab") as fh:
        fh.write(b"\0\0\x01")
    with pytest.raises(shardkit.ShardkitError, match="not zeros"):
        truncate(path)


def test_truncate_and_verify_find_a_byte_far_after_the_dump(tmp_path: Path) -> None:
    path = tmp_path / "far.shard"
    write_swh(path, values_for(20, 5).items())
    size = path.stat().st_size
    bad = size + (3 << 20) + 11  # in the fourth 1 MiB chunk of the zeros
    with open(path, "r+b") as fh:
        fh.truncate(size + (4 << 20))
        fh.seek(bad)
        fh.write(b"\x01")
    with shardkit.open(path) as s:
        assert [(p.offset, p.field) for p in s.verify()] == [(bad, "/preallocated")]
    with pytest.raises(shardkit.ShardkitError, match="not zeros"):
        truncate(path)
    assert path.stat().st_size == size + (4 << 20)


def test_cli_create_delete_truncate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = []
    for i in range(5):
        f = tmp_path / f"f{i}"
        f.write_bytes(b"content %d" % (i % 4))  # f4 duplicates f0
        files.append(str(f))
    shard = str(tmp_path / "c.shard")
    assert cli_main(["create", "--json", shard, *files]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["files"], out["objects"]) == (5, 4)
    key0 = hashlib.sha256(b"content 0").hexdigest()
    with shardkit.open(shard) as s:
        assert s[key0] == b"content 0"
    # without a terminal and without --yes nothing happens
    assert cli_main(["create", shard, *files]) == 2
    assert cli_main(["delete", "--yes", "--json", shard, key0]) == 0
    assert json.loads(capsys.readouterr().out)["deleted"] == {key0: "deleted"}
    with shardkit.open(shard) as s:
        assert s.verify() == [] and s.deleted_count == 1
    assert cli_main(["delete", "--yes", shard, "zz"]) == 2
    with open(shard, "ab") as fh:
        fh.write(bytes(1000))
    assert cli_main(["truncate", "--yes", "--json", shard]) == 0
    (res,) = json.loads(capsys.readouterr().out)
    assert res["truncated"] and res["size_before"] - res["size"] == 1000


def test_write_files_api(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"A")
    (tmp_path / "b").write_bytes(b"A")
    added = write_swh_files(tmp_path / "s.shard", [tmp_path / "a", tmp_path / "b"])
    assert list(added) == [hashlib.sha256(b"A").digest()]


def test_cli_write_commands_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["create", str(tmp_path / "a.shard"), str(tmp_path / "missing")]) == 2
    assert "missing: No such file" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
    assert cli_main(["truncate", "--yes", str(tmp_path / "none.shard")]) == 2
    values = values_for(200, 11)
    path = tmp_path / "s.shard"
    write_swh(path, values.items())
    with shardkit.open(path) as s:
        absent = next(k for k in (hashlib.sha256(b"%d" % i).digest() for i in range(10_000))
                      if k not in values and s._entry(s.slot_of(k))[1] not in (0, TOMBSTONE))
    before = path.read_bytes()
    capsys.readouterr()
    assert cli_main(["delete", "--yes", "--json", str(path), next(iter(values)).hex(),
                     absent.hex()]) == 1
    assert json.loads(capsys.readouterr().out)["missing"] == [absent.hex()]
    assert path.read_bytes() == before
    assert cli_main(["delete", "--yes", str(path), "00" * 31]) == 2


def absent_key(path: Path, values: dict[bytes, bytes], offset: int) -> bytes:
    """A key never written whose slot holds ``offset`` (TOMBSTONE) or a live entry (None)."""
    with shardkit.open(path) as s:
        for i in range(100_000):
            k = hashlib.sha256(b"absent %d" % i).digest()
            ofs = s._entry(s.slot_of(k))[1]
            if k not in values and (ofs == offset if offset is not None
                                    else ofs not in (0, TOMBSTONE)):
                return k
    raise AssertionError("no such key")


def test_cli_delete_refuses_a_key_on_an_unused_tombstone(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    values = values_for(200, 12)
    path = tmp_path / "t.shard"
    write_swh(path, values.items())  # unused slots are tombstones (swh-shard >= 2)
    with shardkit.open(path) as s:
        assert s.counts().unused > 0 and not s._tombstones_are_deletions()
    absent = absent_key(path, values, TOMBSTONE)
    live = next(iter(values))
    before = path.read_bytes()
    capsys.readouterr()
    assert cli_main(["delete", "--yes", "--json", str(path), live.hex(), absent.hex()]) == 1
    assert json.loads(capsys.readouterr().out)["missing"] == [absent.hex()]
    assert path.read_bytes() == before
    # without --yes and without a terminal the missing key is still reported first
    assert cli_main(["delete", str(path), absent.hex()]) == 1
    assert path.read_bytes() == before
    # an object deleted earlier is refused the same way: its tombstone tells nothing more
    assert cli_main(["delete", "--yes", str(path), live.hex()]) == 0
    deleted = path.read_bytes()
    assert cli_main(["delete", "--yes", str(path), live.hex()]) == 1
    assert path.read_bytes() == deleted
    # the library keeps the lenient answer unless asked to be strict
    assert delete(path, [absent]) == {absent.hex(): "deleted or absent"}
    other = absent_key(path, values, None)
    with pytest.raises(KeysNotFoundError) as info:
        delete(path, [other, absent, list(values)[1]], strict=True)
    assert info.value.missing == [other, absent]
    assert isinstance(info.value, shardkit.EntryNotFoundError)
    assert "2 keys not found" in str(info.value)
    assert path.read_bytes() == deleted


def test_cli_delete_of_an_already_deleted_key_where_tombstones_are_deletions(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    values = values_for(200, 13)
    path = tmp_path / "z.shard"
    write_swh(path, values.items(), index_init="zeros")  # unused slots are zeros
    first, second = list(values)[:2]
    assert cli_main(["delete", "--yes", str(path), first.hex()]) == 0
    capsys.readouterr()
    assert cli_main(["delete", "--yes", "--json", str(path), first.hex(), second.hex()]) == 0
    assert json.loads(capsys.readouterr().out)["deleted"] == {first.hex(): "already deleted",
                                                             second.hex(): "deleted"}
    with shardkit.open(path) as s:
        assert s.verify() == [] and s.deleted_count == 2


@pytest.mark.parametrize(("command", "has_1"), [("create", False), ("delete", True),
                                                ("truncate", False)])
def test_write_commands_list_their_own_exit_codes(capsys: pytest.CaptureFixture[str],
                                                  command: str, has_1: bool) -> None:
    with pytest.raises(SystemExit):
        cli_main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "exit codes: 0 done" in text
    assert ("1 a key to delete is not in the shard" in text) is has_1


def test_killed_or_failed_writer_keeps_the_old_shard(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys

    target = tmp_path / "k.shard"
    old = values_for(5, 21)
    write_swh(target, old.items())
    before = target.read_bytes()
    script = f"""
import os, signal
import shardkit.writers.swh as w
real = w.SwhShardWriter._flush
count = [0]
def flush(self):
    count[0] += 1
    if count[0] == 3:
        os.kill(os.getpid(), signal.SIGKILL)
    return real(self)
w.SwhShardWriter._flush = flush
w.write_swh({str(target)!r}, ((bytes([i % 256, i // 256]) * 16, bytes(100_000))
                             for i in range(100)), overwrite=True)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60,
                         check=False)
    assert out.returncode == -signal.SIGKILL, out.stderr
    assert target.read_bytes() == before
    leftovers = [p.name for p in tmp_path.iterdir() if p.name != "k.shard"]
    assert leftovers and all(p.startswith(".k.shard.") and p.endswith(".tmp")
                             for p in leftovers)
    for p in leftovers:
        (tmp_path / p).unlink()
    # a build that fails (a duplicate key) or is aborted leaves the old shard and no temporary
    k = next(iter(old))
    with pytest.raises(shardkit.ShardkitError, match="duplicate key"):
        write_swh(target, [(k, b"a"), (k, b"a")], overwrite=True)
    w = SwhShardWriter(target, overwrite=True)
    w.write(k, b"new")
    w.abort()
    w.abort()
    assert w.close() == target  # closed by abort: nothing more happens
    assert [p.name for p in tmp_path.iterdir()] == ["k.shard"]
    assert target.read_bytes() == before


def test_absent_key_on_a_tombstone_does_not_scan_the_index(tmp_path: Path) -> None:
    """A lookup's error on a tombstone looks at 64k slots at most, never the whole index."""
    values = {hashlib.sha256(b"%d" % i).digest(): b"%d" % i for i in range(70_000)}
    path = tmp_path / "big.shard"
    write_swh(path, values.items())  # tombstone-initialised: unused slots are tombstones
    with shardkit.open(path) as s:
        assert s.num_slots > 1 << 16
        rng = random.Random(1)
        while True:
            absent = rng.randbytes(32)
            if s._entry(s.slot_of(absent))[1] == TOMBSTONE:
                break
        with pytest.raises(shardkit.DeletedEntryError, match="is not in the shard"):
            s[absent]
        assert "_counts" not in s.__dict__  # no scan of the whole index
        assert s.counts().unused > 0 and s.counts().index_init == "tombstones"
