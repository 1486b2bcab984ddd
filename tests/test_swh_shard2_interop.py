"""shardkit against swh-shard 2.2.1, today's reference (swh.perfecthash renamed).

Since the rename the writer initialises every index slot as a tombstone (zero key, offset
2**64-1) before filling the live ones, so unused slots of the hash function look exactly like
deleted objects; and a shard may be pre-allocated (zeros after the cmph dump, which
``swh-shard truncate`` cuts). Every shard here is written in a temporary directory by
``swh.shard.ShardCreator`` (deletions by ``Shard.delete``, the reference CLI for
``truncate``), then read by both; counts, lookups, ``verify`` and damage detection must be
right.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
import struct
from pathlib import Path

import pytest
from swh_impl import swh_impl  # noqa: F401 - the fixture, used by pytestmark

import shardkit
from shardkit.cli import main as cli_main

pytestmark = [pytest.mark.interop, pytest.mark.usefixtures("swh_impl")]

swh_shard = pytest.importorskip("swh.shard")
RefShard = swh_shard.Shard
RefCreator = swh_shard.ShardCreator

KEY_LEN = 32
SLOT_SIZE = 40
TOMBSTONE = 2**64 - 1
HEADER = struct.Struct(">7Q")


def build(path: Path, n: int, seed: int, delete: int = 0, prealloc: int = 0,
          ) -> tuple[dict[bytes, bytes], set[bytes]]:
    """A shard of ``n`` sha256-keyed objects by the reference; ``delete`` of them deleted."""
    rng = random.Random(seed)
    values: dict[bytes, bytes] = {}
    while len(values) < n:
        value = rng.randbytes(rng.choice([0, 1, 7, 100, 3000]))
        values[hashlib.sha256(value).digest()] = value
    with RefCreator(str(path), n) as w:
        for k, v in values.items():
            w.write(k, v)
    deleted = set(rng.sample(sorted(values), delete))
    for k in sorted(deleted):
        assert RefShard.delete(str(path), k) == 0
    if prealloc:
        with open(path, "r+b") as fh:
            fh.truncate(path.stat().st_size + prealloc)
    return values, deleted


CASES = [(1, 0, 0), (3, 1, 0), (100, 0, 0), (100, 17, 0), (1500, 0, 0), (1500, 40, 0),
         (1500, 0, 3_000_000), (1500, 40, 65536), (12, 12, 4096)]


@pytest.fixture(scope="module", params=CASES, ids=lambda c: f"n{c[0]}-del{c[1]}-pre{c[2]}")
def made(request, tmp_path_factory):
    n, delete, prealloc = request.param
    path = tmp_path_factory.mktemp("shard2") / "s.shard"
    values, deleted = build(path, n, seed=n * 31 + delete + prealloc, delete=delete,
                            prealloc=prealloc)
    return path, values, deleted, prealloc


def test_index_is_tombstone_initialised(made) -> None:
    path, _, deleted, _ = made
    raw = path.read_bytes()
    _, count, _, _, ipos, isize, _ = HEADER.unpack_from(raw, 32)
    slots = isize // SLOT_SIZE
    offsets = [struct.unpack_from(">Q", raw, ipos + i * SLOT_SIZE + KEY_LEN)[0]
               for i in range(slots)]
    assert offsets.count(0) == 0
    assert offsets.count(TOMBSTONE) == slots - count + len(deleted)


def test_counts_from_the_header(made) -> None:
    path, values, deleted, prealloc = made
    with shardkit.open(path) as s:
        c = s.counts()
        slots = s.num_slots
        assert (c.live, c.deleted, c.unused) == (len(values) - len(deleted), len(deleted),
                                                 slots - len(values))
        assert c.empty_slots == 0
        assert c.tombstone_slots == len(deleted) + slots - len(values)
        assert c.index_init == ("tombstones" if slots > len(values) else "unknown")
        summary = s.summary()
        assert (summary["live"], summary["deleted"], summary["unused"]) == (
            c.live, c.deleted, c.unused)
        assert summary["preallocated_bytes"] == prealloc
        assert len(s) == c.live
        assert s.to_dict()["unused"] == c.unused
        assert len(s.deleted_keys()) == len(deleted)
        assert set(s.deleted_keys(list(values))) == deleted


def test_verify_clean_and_reference_check_agrees(made) -> None:
    path, _, deleted, _ = made
    with shardkit.open(path) as s:
        assert s.verify() == []
        assert s.verify(content_hash="sha256") == []
    assert cli_main(["verify", str(path)]) == 0
    if deleted:
        # swh-shard check walks the objects section by their size fields, and Shard.delete()
        # zeroes a deleted object's size and bytes: the walk then reads the zeros as empty
        # objects and reports a mismatch on any shard with deletions, however sound. Our
        # verify() above is the only judge of those cases.
        return
    from click.testing import CliRunner
    from swh.shard.cli import shard_cli_group

    result = CliRunner().invoke(shard_cli_group, ["check", "--with-hash", str(path)])
    assert (result.exit_code, result.exception) == (0, None), result.output


def test_lookups_match_reference(made) -> None:
    path, values, deleted, _ = made
    ref = RefShard(str(path))
    try:
        with shardkit.open(path) as s:
            for k, v in values.items():
                if k in deleted:
                    with pytest.raises(KeyError):
                        ref.lookup(k)
                    with pytest.raises(shardkit.DeletedEntryError):
                        s[k]
                else:
                    assert s[k] == ref.lookup(k) == v
                    assert s[k.hex()] == v
            live = [k for k in values if k not in deleted]
            assert s.get_many(live) == [values[k] for k in live]
            assert sorted(s.keys()) == sorted(live)
            absent = [hashlib.sha256(b"absent %d" % i).digest() for i in range(50)]
            for k in absent:
                assert k not in s
                assert s.get(k) is None
                assert ref.getpos(k) == s.slot_of(k)
    finally:
        ref.close()


def test_cli_info_json(made, capsys: pytest.CaptureFixture[str]) -> None:
    path, values, deleted, prealloc = made
    assert cli_main(["info", "--json", str(path)]) == 0
    info = json.loads(capsys.readouterr().out)
    assert (info["live"], info["deleted"]) == (len(values) - len(deleted), len(deleted))
    assert info["unused"] == info["slots"] - len(values)
    assert info["preallocated_bytes"] == prealloc


# -- real damage is still caught --------------------------------------------------------------


def _damaged(path: Path, tmp_path: Path, edit) -> list[shardkit.Problem]:
    raw = bytearray(path.read_bytes())
    edit(raw)
    bad = tmp_path / "bad.shard"
    bad.write_bytes(bytes(raw))
    with shardkit.open(bad) as s:
        return s.verify()


@pytest.fixture(scope="module")
def damaged_base(tmp_path_factory) -> tuple[Path, dict[bytes, bytes], set[bytes]]:
    path = tmp_path_factory.mktemp("dmg") / "d.shard"
    values, deleted = build(path, 400, seed=7, delete=20, prealloc=10000)
    return path, values, deleted


def _header(raw: bytes) -> tuple[int, ...]:
    return HEADER.unpack_from(raw, 32)


def test_damage_live_entry_in_wrong_slot(damaged_base, tmp_path: Path) -> None:
    path, *_ = damaged_base

    def swap(raw: bytearray) -> None:
        ipos = _header(raw)[4]
        live = [i for i in range(_header(raw)[5] // SLOT_SIZE)
                if struct.unpack_from(">Q", raw, ipos + i * SLOT_SIZE + 32)[0] != TOMBSTONE]
        a, b = (ipos + live[0] * SLOT_SIZE, ipos + live[1] * SLOT_SIZE)
        raw[a : a + 40], raw[b : b + 40] = raw[b : b + 40], raw[a : a + 40]

    problems = _damaged(path, tmp_path, swap)
    assert {p.check for p in problems} == {"slot"}
    assert len(problems) == 2


def test_damage_deleted_object_not_zeroed(damaged_base, tmp_path: Path) -> None:
    path, *_ = damaged_base
    with shardkit.open(path) as s:
        live_spans = sorted((e.offset, e.offset + 8 + e.size)
                            for e in s.iter_entries(with_sizes=True))
    # the first gap between live objects is a deleted object: put a byte in it
    gap = next(a_end for (_, a_end), (b, _) in itertools.pairwise(live_spans) if b > a_end)

    def poke(raw: bytearray) -> None:
        raw[gap] = 0x5A

    problems = _damaged(path, tmp_path, poke)
    assert [(p.check, p.offset) for p in problems] == [("unreferenced_data", gap)]


@pytest.mark.parametrize("count", ["one_deletion_less", "fewer_than_live", "more_than_slots"])
def test_damage_counts_that_cannot_add_up(damaged_base, tmp_path: Path, count: str) -> None:
    """A count one higher is consistent (a deleted object is just zeros); these are not."""
    path, values, deleted = damaged_base
    live = len(values) - len(deleted)
    with shardkit.open(path) as s:
        spans = sorted((e.offset, e.offset + 8 + e.size) for e in s.iter_entries(with_sizes=True))
        ends = [512] + [end for _, end in spans]
        starts = [start for start, _ in spans] + [s.header.index_position]
        runs = sum(1 for a, b in zip(ends, starts, strict=True) if b > a)
    assert 0 < runs <= len(deleted)  # adjacent deletions make one run

    def recount(raw: bytearray) -> None:
        value = {"one_deletion_less": live + runs - 1, "fewer_than_live": live - 1,
                 "more_than_slots": _header(raw)[5] // SLOT_SIZE + 1}[count]
        raw[40:48] = struct.pack(">Q", value)

    problems = _damaged(path, tmp_path, recount)
    assert problems and {p.check for p in problems} == {"count"}


def test_damage_nonzero_after_dump(damaged_base, tmp_path: Path) -> None:
    path, *_ = damaged_base

    def poke(raw: bytearray) -> None:
        raw[-3] = 1

    problems = _damaged(path, tmp_path, poke)
    assert [(p.check, p.field) for p in problems] == [("hash_function", "/preallocated")]
    assert problems[0].offset == path.stat().st_size - 3


def test_reference_truncate_then_verify(damaged_base, tmp_path: Path) -> None:
    path, *_ = damaged_base
    copy = tmp_path / "t.shard"
    copy.write_bytes(path.read_bytes())
    with shardkit.open(copy) as s:
        end = s.content_end
    from click.testing import CliRunner
    from swh.shard.cli import shard_cli_group

    result = CliRunner().invoke(shard_cli_group, ["truncate", "--yes", str(copy)])
    assert result.exit_code == 0, result.output
    assert copy.stat().st_size == end
    with shardkit.open(copy) as s:
        assert s.verify() == []
        assert s.summary()["preallocated_bytes"] == 0
