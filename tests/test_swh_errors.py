"""Bad SWH read shards fail as ShardkitError, never as a stray builtin exception.

The rule under test: truncated, corrupted or hostile bytes never escape as IndexError,
struct.error, a kaitaistruct error, ValueError, ZeroDivisionError, MemoryError, OverflowError, a
hang or a CLI traceback. They become a :class:`shardkit.ShardkitError` naming the byte offset and
the field path, and ``verify()`` reports :class:`shardkit.Problem` objects instead of raising once
the file could be opened.

Layout reminder (schemas/swh_read_shard.ksy): magic 0..9, zero padding 9..32, seven big-endian
u64 at 32..88 (version, objects_count, objects_position, objects_size, index_position,
index_size, hash_position), objects from 512, index of 40-byte slots, cmph CHD_PH dump to EOF.

"""

from __future__ import annotations

import json
import struct
import tracemalloc
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from swh_impl import swh_impl  # noqa: F401 - the fixture, used by pytestmark

import shardkit
from shardkit import (
    BadMagicError,
    CorruptShardError,
    DeletedEntryError,
    EntryNotFoundError,
    FormatError,
    LayoutError,
    Problem,
    ShardkitError,
    SwhShard,
    TruncatedError,
    UnknownFormatError,
    UnsupportedVersionError,
)
from shardkit.cli import main

pytestmark = pytest.mark.usefixtures("swh_impl")

DATA = Path(__file__).parent / "data" / "swh"
MANIFEST = json.loads((DATA / "manifest.json").read_text(encoding="utf-8"))
NAMES = ("tiny", "deleted")
HEADER = struct.Struct(">7Q")
U64 = struct.Struct(">Q")
U32 = struct.Struct("<I")
SLOT = 40
TOMBSTONE = 2**64 - 1
MiB = 1 << 20

# header field -> (absolute offset, schema path)
FIELDS = {
    "version": (32, "/header/version"),
    "objects_count": (40, "/header/num_objects"),
    "objects_position": (48, "/header/ofs_objects"),
    "objects_size": (56, "/header/len_objects"),
    "index_position": (64, "/header/ofs_index"),
    "index_size": (72, "/header/len_index"),
    "hash_position": (80, "/header/ofs_hash"),
}
FIELD_NAMES = list(FIELDS)



# -- helpers ---------------------------------------------------------------------------------


@cache
def shard_bytes(name: str) -> bytes:
    return (DATA / f"{name}.shard").read_bytes()


def header(data: bytes) -> dict[str, int]:
    return dict(zip(FIELD_NAMES, HEADER.unpack_from(data, 32), strict=True))


@cache
def manifest_keys(name: str) -> tuple[list[bytes], list[bytes]]:
    """(live keys, deleted keys) of a sample shard, from manifest.json."""
    info = MANIFEST["files"][f"{name}.shard"]
    live = [bytes.fromhex(k) for k in info["objects"]]
    deleted = [bytes.fromhex(k) for k in info.get("deleted_keys", [])]
    return live, deleted


def all_keys(name: str) -> list[bytes]:
    live, deleted = manifest_keys(name)
    return live + deleted


def with_header(data: bytes, **fields: int) -> bytes:
    h = header(data)
    h.update(fields)
    out = bytearray(data)
    HEADER.pack_into(out, 32, *(h[f] for f in FIELD_NAMES))
    return bytes(out)


def flip(data: bytes, pos: int, mask: int = 0x01) -> bytes:
    out = bytearray(data)
    out[pos] ^= mask
    return bytes(out)


def put_u32(data: bytes, pos: int, value: int) -> bytes:
    out = bytearray(data)
    U32.pack_into(out, pos, value)
    return bytes(out)


def put_u64(data: bytes, pos: int, value: int) -> bytes:
    out = bytearray(data)
    U64.pack_into(out, pos, value)
    return bytes(out)


def entries(data: bytes) -> list[tuple[int, bytes, int]]:
    """(slot, key, offset) of every index slot."""
    h = header(data)
    pos = h["index_position"]
    return [(i, *struct.unpack_from(">32sQ", data, pos + i * SLOT))
            for i in range(h["index_size"] // SLOT)]


def live_entries(data: bytes) -> list[tuple[int, bytes, int]]:
    """Live (slot, key, offset) sorted by object offset."""
    return sorted((e for e in entries(data) if e[2] not in (0, TOMBSTONE)), key=lambda e: e[2])


def entry_pos(data: bytes, slot: int) -> int:
    return header(data)["index_position"] + slot * SLOT


def object_size(data: bytes, offset: int) -> int:
    (size,) = U64.unpack_from(data, offset)
    return size


def cmph_layout(data: bytes) -> dict[str, int]:
    """Absolute offsets of the fields of the cmph CHD_PH dump at hash_position."""
    base = header(data)["hash_position"]
    out = {"algo_name": base, "num_keys_total": base + 7, "len_hash_state": base + 11,
           "hash_state": base + 15}
    (hl,) = U32.unpack_from(data, base + 11)
    out["len_compressed_seq"] = base + 15 + hl
    cs = out["compressed_seq"] = base + 19 + hl
    (cs_len,) = U32.unpack_from(data, out["len_compressed_seq"])
    out.update(cs_num_values=cs, cs_rem_r=cs + 4, cs_total_length=cs + 8, cs_len_select=cs + 12)
    sel = out["select"] = cs + 16
    ones, zeros = struct.unpack_from("<2I", data, sel)
    out.update(select_num_ones=sel, select_num_zeros=sel + 4, bits_vec=sel + 8)
    out["select_table"] = sel + 8 + (ones + zeros + 31) // 32 * 4
    out["num_keys"] = cs + cs_len
    out["num_buckets"] = cs + cs_len + 4
    assert out["num_buckets"] + 4 == len(data)
    return out


def checks(problems: list[Problem]) -> set[str]:
    return {p.check for p in problems}


def open_bytes(data: bytes, **kwargs: Any) -> SwhShard:
    shard = shardkit.open(data, **kwargs)
    assert isinstance(shard, SwhShard)
    return shard


def exercise(shard: SwhShard, keys: list[bytes]) -> list[ShardkitError]:
    """Run every whole-shard operation and every lookup.

    ShardkitErrors are collected and returned; any other exception propagates and fails the test
    with its own traceback. ``verify()`` must return a list of Problems, never raise.
    """
    ops: list[Callable[[], Any]] = [
        shard.summary,
        lambda: len(shard),
        lambda: list(shard.keys()),
        lambda: list(shard.items()),
        shard.to_dict,
        shard.sections,
        shard.tombstones,
        lambda: shard.get_many(keys, default=None),
        lambda: shard.get_many(keys),
        lambda: [k in shard for k in keys],
        lambda: shard.deleted_keys(keys),
        lambda: [shard.get(k, None) for k in keys],
    ]
    ops += [lambda k=k: shard[k] for k in keys]
    errors: list[ShardkitError] = []
    for op in ops:
        try:
            op()
        except ShardkitError as exc:
            errors.append(exc)
    for kwargs in ({}, {"content_hash": "sha256"}):
        problems = shard.verify(**kwargs)
        assert isinstance(problems, list)
        assert all(isinstance(p, Problem) for p in problems)
    return errors


def open_and_exercise(data: bytes, keys: list[bytes], **kwargs: Any) -> ShardkitError | None:
    """Open ``data`` and run everything; only ShardkitError may come out of open()."""
    try:
        shard = shardkit.open(data, **kwargs)
    except ShardkitError as exc:
        return exc
    with shard:
        exercise(shard, keys)
    return None


# -- truncation ------------------------------------------------------------------------------

# cut -> (offset, field, bytes the failing read needs)
HEADER_CUTS = {
    9: (9, "/reserved", 23),
    10: (9, "/reserved", 23),
    31: (9, "/reserved", 23),
    32: (32, "/header/version", 8),
    33: (32, "/header/version", 8),
    40: (40, "/header/num_objects", 8),
    60: (56, "/header/len_objects", 8),
    87: (80, "/header/ofs_hash", 8),
}


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("cut", sorted(HEADER_CUTS))
def test_cut_inside_header_is_truncated_error(name: str, cut: int) -> None:
    offset, field, needed = HEADER_CUTS[cut]
    with pytest.raises(TruncatedError) as info:
        shardkit.open(shard_bytes(name)[:cut])
    exc = info.value
    assert isinstance(exc, EOFError)
    assert isinstance(exc, CorruptShardError)
    assert (exc.offset, exc.field) == (offset, field)
    assert (exc.needed, exc.available) == (needed, cut - offset)
    assert f"at byte {offset}" in str(exc)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("cut", [0, 1, 8])
def test_cut_inside_magic(name: str, cut: int) -> None:
    data = shard_bytes(name)[:cut]
    # detection cannot recognise an incomplete magic...
    with pytest.raises(UnknownFormatError):
        shardkit.open(data)
    # ...but with the format forced the reader reports the truncation precisely
    with pytest.raises(TruncatedError) as info:
        shardkit.open(data, format="swh")
    assert (info.value.offset, info.value.field) == (0, "/magic")
    assert (info.value.needed, info.value.available) == (9, cut)


def layout_cut(data: bytes, where: str) -> int:
    h = header(data)
    ipos, isize, hpos = h["index_position"], h["index_size"], h["hash_position"]
    return {
        "header_end": 88,
        "header_end+1": 89,
        "511": 511,
        "512": 512,
        "513": 513,
        "inside_objects": (512 + ipos) // 2,
        "index_start-1": ipos - 1,
        "index_start": ipos,
        "index_start+1": ipos + 1,
        "mid_index": ipos + isize // 2,
        "hash_start-1": hpos - 1,
    }[where]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("where", ["header_end", "header_end+1", "511", "512", "513",
                                   "inside_objects", "index_start-1", "index_start",
                                   "index_start+1", "mid_index", "hash_start-1"])
def test_cut_before_hash_position_is_layout_error(name: str, where: str) -> None:
    data = shard_bytes(name)
    cut = layout_cut(data, where)
    with pytest.raises(LayoutError) as info:
        shardkit.open(data[:cut])
    assert (info.value.offset, info.value.field) == (80, "/header/ofs_hash")
    assert "past the end of the file" in info.value.message


HASH_CUTS = ["hash_start", "hash_start+1", "mid_hash", "size-1"]


def hash_cut(data: bytes, where: str) -> int:
    hpos = header(data)["hash_position"]
    return {"hash_start": hpos, "hash_start+1": hpos + 1, "mid_hash": (hpos + len(data)) // 2,
            "size-1": len(data) - 1}[where]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("where", HASH_CUTS)
def test_cut_inside_hash_function(name: str, where: str) -> None:
    data = shard_bytes(name)
    cut = hash_cut(data, where)
    with open_bytes(data[:cut]) as shard:
        # the index is intact: listing needs no hash function
        live, _ = manifest_keys(name)
        assert set(shard.keys()) == set(live)
        last = shard.sections()[-1]
        hpos = header(data)["hash_position"]
        assert (last.name, last.start, last.end) == ("/hash_function", hpos, cut)
        # anything that needs the function reports the truncation
        with pytest.raises(TruncatedError):
            shard.summary()
        with pytest.raises(TruncatedError):
            shard[live[0]]
        problems = shard.verify()
        assert checks(problems) == {"hash_function"}
        assert all(isinstance(e, CorruptShardError) for e in exercise(shard, all_keys(name)))


def expected_hash_cut_error(data: bytes, where: str) -> tuple[int, str]:
    layout = cmph_layout(data)
    return {
        "hash_start": (layout["algo_name"], "/hash_function/algo_name"),
        "hash_start+1": (layout["algo_name"], "/hash_function/algo_name"),
        "mid_hash": (layout["compressed_seq"], "/hash_function/compressed_seq"),
        "size-1": (layout["num_buckets"], "/hash_function/num_buckets"),
    }[where]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("where", [
    "hash_start",
    "hash_start+1",
    "mid_hash",
    "size-1",
])
def test_cut_inside_hash_function_names_offset_and_field(name: str, where: str) -> None:
    data = shard_bytes(name)
    cut = hash_cut(data, where)
    offset, field = expected_hash_cut_error(data, where)
    with open_bytes(data[:cut]) as shard, pytest.raises(TruncatedError) as info:
        shard.summary()
    assert (info.value.offset, info.value.field) == (offset, field)
    with open_bytes(data[:cut]) as shard:
        (problem,) = shard.verify()
    assert (problem.offset, problem.field) == (offset, field)


@pytest.mark.parametrize("name", NAMES)
def test_garbage_after_hash_function_is_reported_not_fatal(name: str) -> None:
    data = shard_bytes(name)
    hpos = header(data)["hash_position"]
    live, _ = manifest_keys(name)
    with open_bytes(data + b"\xde\xad\xbe\xef" * 3) as shard:
        assert shard[live[0]] is not None
        problems = shard.verify()
    # bytes after the dump are allowed only as zeros (a pre-allocated file)
    assert [(p.check, p.offset, p.field) for p in problems] == [
        ("hash_function", len(data), "/preallocated")]
    assert f"{len(data) - hpos + 12} bytes follow" in problems[0].message


@pytest.mark.parametrize("name", NAMES)
def test_zeros_after_hash_function_are_a_preallocated_file(name: str) -> None:
    data = shard_bytes(name)
    live, _ = manifest_keys(name)
    with open_bytes(data + bytes(5000)) as shard:
        assert shard[live[0]] is not None
        assert shard.verify() == []
        assert shard.content_end == len(data)
        assert shard.summary()["preallocated_bytes"] == 5000
        assert shard.sections()[-1].to_dict()["name"] == "/preallocated"
    with open_bytes(data + bytes(4999) + b"\x01") as shard:
        (problem,) = shard.verify()
    assert (problem.check, problem.offset) == ("hash_function", len(data) + 4999)


# -- magic and version -----------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("pos", [0, 4, 8])
def test_bad_magic(name: str, pos: int) -> None:
    data = flip(shard_bytes(name), pos)
    with pytest.raises(UnknownFormatError) as info:
        shardkit.open(data)
    assert isinstance(info.value, FormatError)
    with pytest.raises(BadMagicError) as info:
        shardkit.open(data, format="swh")
    assert (info.value.offset, info.value.field) == (0, "/magic")


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("version", [0, 2, 2**64 - 1])
def test_other_version_is_unsupported_version_error(name: str, version: int) -> None:
    with pytest.raises(UnsupportedVersionError) as info:
        shardkit.open(with_header(shard_bytes(name), version=version))
    assert isinstance(info.value, NotImplementedError)
    assert (info.value.offset, info.value.field) == (32, "/header/version")


# -- inconsistent and huge header fields -----------------------------------------------------


def inconsistent(data: bytes, case: str) -> bytes:
    h = header(data)
    opos, ipos, isize, hpos = (h["objects_position"], h["index_position"], h["index_size"],
                               h["hash_position"])
    fields: dict[str, int] = {
        "objects_inside_header": {"objects_position": 16},
        "objects_position_87": {"objects_position": 87},
        "index_after_objects": {"index_position": ipos + 40, "hash_position": hpos + 40},
        "index_before_objects_end": {"objects_size": h["objects_size"] + 1},
        "index_size_not_multiple": {"index_size": isize + 1, "hash_position": hpos + 1},
        "hash_not_after_index": {"hash_position": hpos - 40},
        "hash_max": {"hash_position": 2**64 - 1},
        "objects_size_max": {"objects_size": 2**64 - 1},
        "objects_size_huge_consistent": {"objects_size": 2**63, "index_position": opos + 2**63,
                                         "hash_position": opos + 2**63 + isize},
        "index_size_2_63": {"index_size": 2**63},
        "index_size_huge_consistent": {"index_size": 40 * 2**58,
                                       "hash_position": ipos + 40 * 2**58},
        "index_position_zero": {"index_position": 0},
    }[case]
    return with_header(data, **fields)


INCONSISTENT = {
    "objects_inside_header": "objects_position",
    "objects_position_87": "objects_position",
    "index_after_objects": "index_position",
    "index_before_objects_end": "index_position",
    "index_size_not_multiple": "index_size",
    "hash_not_after_index": "hash_position",
    "hash_max": "hash_position",
    "objects_size_max": "index_position",
    "objects_size_huge_consistent": "hash_position",
    "index_size_2_63": "index_size",
    "index_size_huge_consistent": "hash_position",
    "index_position_zero": "index_position",
}


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("case", sorted(INCONSISTENT))
def test_inconsistent_header_is_layout_error(name: str, case: str) -> None:
    offset, field = FIELDS[INCONSISTENT[case]]
    tracemalloc.start()
    try:
        with pytest.raises(LayoutError) as info:
            shardkit.open(inconsistent(shard_bytes(name), case))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (info.value.offset, info.value.field) == (offset, field)
    assert peak < 4 * MiB


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("count", [0, 2**32, 2**63, 2**64 - 1])
def test_huge_objects_count_is_a_verify_problem(name: str, count: int) -> None:
    live, deleted = manifest_keys(name)
    tracemalloc.start()
    try:
        with open_bytes(with_header(shard_bytes(name), objects_count=count)) as shard:
            assert len(shard) == len(live)
            assert len(shard.tombstones()) == len(deleted)
            problems = shard.verify()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert checks(problems) == {"count"}
    assert {(p.offset, p.field) for p in problems} == {(40, "/header/num_objects")}
    assert peak < 8 * MiB


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("extra", [1, 2**32, 2**63, None])
def test_deleted_keys_refuses_objects_count_above_the_slots(name: str, extra: int | None
                                                             ) -> None:
    data = shard_bytes(name)
    slots = header(data)["index_size"] // SLOT
    count = 2**64 - 1 if extra is None else slots + extra
    live, deleted = manifest_keys(name)
    with open_bytes(with_header(data, objects_count=count)) as shard:
        with pytest.raises(LayoutError) as info:
            shard.deleted_keys()
        assert (info.value.offset, info.value.field) == (40, "/header/num_objects")
        assert sorted(shard.deleted_keys(live + deleted)) == sorted(deleted)
        assert checks(shard.verify()) == {"count"}
    with open_bytes(with_header(data, objects_count=slots)) as shard:
        assert len(shard.deleted_keys()) == slots - len(live)


# counts and lengths inside the cmph dump, set to huge values
HUGE_CMPH = ["len_hash_state", "len_compressed_seq", "cs_num_values", "cs_rem_r",
             "cs_total_length", "cs_len_select", "select_num_ones", "select_num_zeros",
             "num_keys", "num_keys_total", "num_buckets"]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("field", HUGE_CMPH)
@pytest.mark.parametrize("value", [2**31, 2**32 - 1])
def test_huge_cmph_counts_never_allocate(name: str, field: str, value: int) -> None:
    data = shard_bytes(name)
    bad = put_u32(data, cmph_layout(data)[field], value)
    tracemalloc.start()
    try:
        with open_bytes(bad) as shard:
            with pytest.raises(CorruptShardError):
                _ = shard.hash_function  # the whole function: info reads only its layout
            problems = shard.verify()
            errors = exercise(shard, all_keys(name)[:20])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert checks(problems) == {"hash_function"}
    assert errors and all(isinstance(e, CorruptShardError) for e in errors)
    assert peak < 8 * MiB


# -- one flipped byte per region -------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(("field", "blamed"), [
    ("objects_position", "index_position"),
    ("objects_size", "index_position"),
    ("index_position", "index_position"),
    ("index_size", "index_size"),
    ("hash_position", "hash_position"),
])
def test_flip_header_position_field(name: str, field: str, blamed: str) -> None:
    offset, _ = FIELDS[field]
    with pytest.raises(LayoutError) as info:
        shardkit.open(flip(shard_bytes(name), offset + 7))
    assert (info.value.offset, info.value.field) == FIELDS[blamed]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("pos", [47, 46, 40])
def test_flip_objects_count(name: str, pos: int) -> None:
    with open_bytes(flip(shard_bytes(name), pos)) as shard:
        problems = shard.verify()
        exercise(shard, all_keys(name))
    assert checks(problems) == {"count"}
    assert problems[0].field == "/header/num_objects"


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("pos", [9, 20, 31, 88, 300, 511])
def test_flip_padding(name: str, pos: int) -> None:
    with open_bytes(flip(shard_bytes(name), pos)) as shard:
        problems = shard.verify()
        live, _ = manifest_keys(name)
        assert shard[live[0]] is not None
    assert checks(problems) == {"padding"}


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(("pos", "field"), [(20, "/reserved"), (300, "/header_padding")])
def test_flip_padding_names_offset_and_field(name: str, pos: int, field: str) -> None:
    with open_bytes(flip(shard_bytes(name), pos)) as shard:
        (problem,) = shard.verify()
    assert (problem.offset, problem.field) == (pos, field)


def write_padded(path: Path, data: bytes, objects_position: int, dirty: list[int]) -> None:
    """``data`` rewritten with its objects at ``objects_position`` (a sparse file of zeros
    before them), with byte ``p`` of the file set to 1 for each ``p`` in ``dirty``."""
    h = header(data)
    opos, ipos, hpos = h["objects_position"], h["index_position"], h["hash_position"]
    shift = objects_position - opos
    index = bytearray(data[ipos:hpos])
    for slot, _, ofs in entries(data):
        if ofs not in (0, TOMBSTONE):
            U64.pack_into(index, slot * SLOT + 32, ofs + shift)
    head = with_header(data[:opos], objects_position=objects_position,
                       index_position=ipos + shift, hash_position=hpos + shift)
    with open(path, "wb") as fh:
        fh.write(head)
        fh.seek(objects_position)
        fh.write(data[opos:ipos] + index + data[hpos:])
        for p in dirty:
            fh.seek(p)
            fh.write(b"\x01")


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dirty", [None, 88, (3 << 20) + 7, (48 << 20) - 1])
def test_huge_header_padding_is_read_in_bounded_chunks(tmp_path: Path, name: str,
                                                       dirty: int | None) -> None:
    path = tmp_path / "padded.shard"
    write_padded(path, shard_bytes(name), 48 << 20, [] if dirty is None else [dirty])
    live, _ = manifest_keys(name)
    with shardkit.open(path) as shard:
        assert shard[live[0]] is not None
        tracemalloc.start()
        try:
            problems = shard.verify()
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert peak < 8 * MiB
    want = [] if dirty is None else [("padding", dirty, "/header_padding")]
    assert [(p.check, p.offset, p.field) for p in problems] == want


def biggest_object(data: bytes) -> tuple[int, bytes, int]:
    return max(live_entries(data), key=lambda e: (object_size(data, e[2]), -e[2]))


@pytest.mark.parametrize("name", NAMES)
def test_flip_object_size_high_byte(name: str) -> None:
    data = shard_bytes(name)
    slot, key, offset = live_entries(data)[0]
    with open_bytes(flip(data, offset, 0x80)) as shard:
        problems = shard.verify()
        with pytest.raises(LayoutError) as info:
            shard[key]
        errors = exercise(shard, all_keys(name))
    where = (offset, f"/index/entries/{slot}/object/len_data")
    assert (info.value.offset, info.value.field) == where
    assert any((p.check, p.offset, p.field) == ("object_bounds", *where) for p in problems)
    assert all(isinstance(e, (LayoutError, EntryNotFoundError)) for e in errors)


@pytest.mark.parametrize("name", NAMES)
def test_flip_object_size_smaller_leaves_unreferenced_data(name: str) -> None:
    data = shard_bytes(name)
    _, key, offset = biggest_object(data)
    size = object_size(data, offset)
    low_bit = size & -size
    bad = put_u64(data, offset, size - low_bit)
    with open_bytes(bad) as shard:
        assert len(shard[key]) == size - low_bit
        problems = shard.verify()
        assert "content_hash" in checks(shard.verify(content_hash="sha256"))
    assert any(p.check == "unreferenced_data" and p.offset == offset + 8 + size - low_bit
               for p in problems)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("where", ["first", "middle", "last"])
def test_flip_object_data_is_a_content_hash_problem(name: str, where: str) -> None:
    data = shard_bytes(name)
    slot, key, offset = biggest_object(data)
    size = object_size(data, offset)
    pos = offset + 8 + {"first": 0, "middle": size // 2, "last": size - 1}[where]
    with open_bytes(flip(data, pos, 0x20)) as shard:
        assert shard.verify() == []  # sizes and layout are intact
        problems = shard.verify(content_hash="sha256")
        value = shard[key]
    assert len(value) == size
    assert [(p.check, p.offset, p.field) for p in problems] == [
        ("content_hash", offset + 8, f"/index/entries/{slot}/object/data")]


def test_flip_inside_deleted_object_is_unreferenced_data() -> None:
    data = shard_bytes("deleted")
    objects = live_entries(data)
    # the first live object is not at 512: the bytes before it are a zeroed, deleted object
    first = objects[0][2]
    assert first > 512 and not any(data[512:first])
    pos = (512 + first) // 2
    with open_bytes(flip(data, pos, 0xFF)) as shard:
        problems = shard.verify()
    assert [(p.check, p.offset, p.field) for p in problems] == [
        ("unreferenced_data", 512, "/objects")]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("byte", [0, 17, 31])
def test_flip_live_key_is_a_slot_problem(name: str, byte: int) -> None:
    data = shard_bytes(name)
    slot, key, _ = sorted(live_entries(data))[0]
    pos = entry_pos(data, slot)
    with open_bytes(flip(data, pos + byte)) as shard:
        problems = shard.verify()
        with pytest.raises(EntryNotFoundError) as info:
            shard[key]
        assert key not in shard
        assert shard.get_many([key], default=None) == [None]
        exercise(shard, all_keys(name))
    assert isinstance(info.value, KeyError)
    assert [(p.check, p.offset, p.field) for p in problems] == [
        ("slot", pos, f"/index/entries/{slot}")]


@pytest.mark.parametrize(("name", "kind"), [("tiny", "empty"), ("deleted", "empty"),
                                             ("deleted", "tombstone")])
def test_flip_key_of_unused_slot_is_an_index_entry_problem(name: str, kind: str) -> None:
    data = shard_bytes(name)
    want = 0 if kind == "empty" else TOMBSTONE
    slots = [s for s, _, ofs in entries(data) if ofs == want]
    assert slots, f"{name} has no {kind} slot"
    pos = entry_pos(data, slots[0])
    with open_bytes(flip(data, pos + 5)) as shard:
        problems = shard.verify()
        exercise(shard, all_keys(name))
    assert [(p.check, p.offset, p.field) for p in problems] == [
        ("index_entry", pos, f"/index/entries/{slots[0]}/key")]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(("byte", "mask"), [(32, 0x80), (35, 0x01), (39, 0x01), (39, 0x04)])
def test_flip_live_offset(name: str, byte: int, mask: int) -> None:
    data = shard_bytes(name)
    slot, key, _ = sorted(live_entries(data))[0]
    pos = entry_pos(data, slot)
    bad = flip(data, pos + byte, mask)
    with open_bytes(bad) as shard:
        problems = shard.verify()
        exercise(shard, all_keys(name))
        try:
            shard[key]
        except LayoutError as exc:
            assert exc.field is not None and exc.field.startswith(f"/index/entries/{slot}")
            assert exc.offset is not None
    assert problems, "a moved object offset must be noticed"
    assert checks(problems) <= {"object_bounds", "object_overlap", "unreferenced_data",
                                "count"}
    if byte == 32:  # now far outside the objects section
        assert ("object_bounds", pos + 32, f"/index/entries/{slot}/ofs_object") in {
            (p.check, p.offset, p.field) for p in problems}


def test_flip_tombstone_offset() -> None:
    data = shard_bytes("deleted")
    slot = next(s for s, _, ofs in entries(data) if ofs == TOMBSTONE)
    pos = entry_pos(data, slot)
    with open_bytes(flip(data, pos + 39)) as shard:
        # the slot is now "live" with a zero key, pointing at 2**64 - 2
        assert bytes(32) in set(shard.keys())
        with pytest.raises(LayoutError) as info:
            list(shard.items())
        problems = shard.verify()
        exercise(shard, all_keys("deleted"))
    assert info.value.field == f"/index/entries/{slot}"
    assert ("object_bounds", pos + 32, f"/index/entries/{slot}/ofs_object") in {
        (p.check, p.offset, p.field) for p in problems}
    assert checks(problems) <= {"object_bounds", "slot"}


def test_deleted_keys_still_raise_deleted_entry_error() -> None:
    _, deleted = manifest_keys("deleted")
    assert deleted
    with open_bytes(shard_bytes("deleted")) as shard:
        for key in deleted:
            with pytest.raises(DeletedEntryError):
                shard[key]
        assert shard.deleted_keys(deleted) == deleted


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("byte", [0, 3])
def test_flip_hash_seed_is_a_slot_problem(name: str, byte: int) -> None:
    data = shard_bytes(name)
    seed = cmph_layout(data)["hash_state"] + len(b"jenkins\0")
    with open_bytes(flip(data, seed + byte)) as shard:
        problems = shard.verify()
        errors = exercise(shard, all_keys(name))
    assert checks(problems) == {"slot"}
    assert all(p.field is not None and p.field.startswith("/index/entries/") for p in problems)
    assert all(isinstance(e, EntryNotFoundError) for e in errors)


# cmph field -> what breaks when its first byte is flipped (bit 0)
CMPH_FLIPS = ["algo_name", "num_keys_total", "len_hash_state", "hash_state",
              "len_compressed_seq", "cs_num_values", "cs_total_length", "cs_len_select",
              "select_num_zeros", "bits_vec", "select_table", "num_keys", "num_buckets"]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("field", CMPH_FLIPS)
def test_flip_hash_function_field(name: str, field: str) -> None:
    data = shard_bytes(name)
    bad = flip(data, cmph_layout(data)[field])
    with open_bytes(bad) as shard:
        assert len(list(shard.keys())) == len(manifest_keys(name)[0])
        with pytest.raises((LayoutError, TruncatedError, FormatError)):
            _ = shard.hash_function  # the whole function: info reads only its layout
        problems = shard.verify()
        errors = exercise(shard, all_keys(name))
    assert checks(problems) == {"hash_function"}
    assert all(p.field is not None and p.field.startswith("/hash_function") for p in problems)
    bad = [e for e in errors if isinstance(e, (CorruptShardError, FormatError))]
    assert bad
    if field in ("bits_vec", "select_table"):
        # single lookups decode one select block: keys of the other blocks are still answered
        # (exactly as cmph answers them), so a deleted key there is a plain deletion
        _, deleted = manifest_keys(name)
        for e in errors:
            if not isinstance(e, (CorruptShardError, FormatError)):
                assert isinstance(e, DeletedEntryError) and e.key in deleted
    else:
        assert len(bad) == len(errors)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(("pos", "value"), [(0, ord("b")), (2, 0)])
def test_bad_cmph_algo_name_is_located(name: str, pos: int, value: int) -> None:
    data = shard_bytes(name)
    hpos = header(data)["hash_position"]
    bad = bytearray(data)
    bad[hpos + pos] = value
    with open_bytes(bytes(bad)) as shard, pytest.raises(ShardkitError) as info:
        shard.summary()
    assert isinstance(info.value, (LayoutError, FormatError))
    assert (info.value.offset, info.value.field) == (hpos, "/hash_function/algo_name")


@pytest.mark.parametrize("name", NAMES)
def test_other_cmph_hash_is_unsupported(name: str) -> None:
    data = shard_bytes(name)
    pos = cmph_layout(data)["hash_state"]
    with open_bytes(flip(data, pos)) as shard, pytest.raises(UnsupportedVersionError) as info:
        shard.summary()
    assert (info.value.offset, info.value.field) == (pos, "/hash_function/hash_state/hash_name")


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(("field", "path", "byte"), [
    ("algo_name", "/hash_function/algo_name", 2),
    ("hash_state", "/hash_function/hash_state/hash_name", 0),
])
def test_non_ascii_cmph_name_names_field_start(name: str, field: str, path: str,
                                               byte: int) -> None:
    data = shard_bytes(name)
    start = cmph_layout(data)[field]
    with open_bytes(flip(data, start + byte, 0x80)) as shard, \
            pytest.raises(ShardkitError) as info:
        shard.summary()
    assert (info.value.offset, info.value.field) == (start, path)


@pytest.mark.parametrize("name", NAMES)
def test_cmph_n_mismatch_names_offset(name: str) -> None:
    data = shard_bytes(name)
    layout = cmph_layout(data)
    with open_bytes(flip(data, layout["num_keys_total"])) as shard, \
            pytest.raises(LayoutError) as info:
        _ = shard.hash_function  # the whole function: info reads only its layout
    assert info.value.field == "/hash_function/num_keys"
    assert info.value.offset in (layout["num_keys"], layout["num_keys_total"])


@pytest.mark.parametrize("name", NAMES)
def test_cmph_decode_error_uses_schema_field_path(name: str) -> None:
    data = shard_bytes(name)
    layout = cmph_layout(data)
    with open_bytes(flip(data, layout["select_table"])) as shard, \
            pytest.raises(LayoutError) as info:
        _ = shard.hash_function  # the whole function: info reads only its layout
    assert info.value.offset == layout["select_table"]
    assert info.value.field == "/hash_function/compressed_seq/select/select_table"


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("length", [
    1 << 20,
    (8 << 20) - 1,
    8 << 20,
    2**32 - 1,
])
def test_huge_cmph_length_names_field_start(name: str, length: int) -> None:
    data = shard_bytes(name)
    layout = cmph_layout(data)
    with open_bytes(put_u32(data, layout["len_compressed_seq"], length)) as shard, \
            pytest.raises(TruncatedError) as info:
        shard.summary()
    assert (info.value.offset, info.value.field) == (layout["compressed_seq"],
                                                     "/hash_function/compressed_seq")


@pytest.mark.parametrize("name", NAMES)
def test_every_hash_function_flip_names_a_location_inside_the_dump(name: str) -> None:
    data = shard_bytes(name)
    hpos = header(data)["hash_position"]
    unlocated = []
    for pos in range(hpos, len(data)):
        for mask in (0x01, 0x80, 0xFF):
            with open_bytes(flip(data, pos, mask)) as shard:
                try:
                    shard.summary()
                except ShardkitError as exc:
                    ok = (exc.offset is not None and hpos <= exc.offset < len(data)
                          and exc.field is not None and exc.field.startswith("/hash_function"))
                    if not ok:
                        unlocated.append((pos - hpos, mask, exc.offset, exc.field))
    assert unlocated == []


def dump_of_ones(data: bytes, nbits: int) -> bytes:
    """``data`` with a hash function of one bucket whose select bit vector is all ones.

    ``nbits`` zeros are declared (``cs.sel.m``, ``cs.total_length``), so the sizes agree and
    the dump parses; only the content of the bit vector is wrong. Decoding a select block
    one set bit at a time used to take time quadratic in ``nbits``.
    """
    h = header(data)
    n = h["index_size"] // SLOT
    bits = b"\xff" * ((1 + nbits + 31) // 32 * 4)
    sel = struct.pack("<2I", 1, nbits) + bits + struct.pack("<I", 0)
    cs = struct.pack("<4I", 1, 0, nbits, len(sel)) + sel + bytes((nbits + 31) // 32 * 4)
    hl = b"jenkins\0" + U32.pack(1)
    dump = (b"chd_ph\0" + struct.pack("<II", n, len(hl)) + hl + U32.pack(len(cs)) + cs
            + struct.pack("<II", n, 1))
    return data[: h["hash_position"]] + dump


_LOOKUP_ONES = """
import sys, shardkit
with shardkit.open(sys.argv[1]) as s:
    try:
        s[bytes(32)]
    except shardkit.LayoutError as exc:
        print(exc.field)
"""


def test_select_block_of_ones_fails_fast(tmp_path: Path) -> None:
    import subprocess
    import sys

    path = tmp_path / "ones.shard"
    path.write_bytes(dump_of_ones(shard_bytes("tiny"), 4_000_000))  # about 1 MB
    field = "/hash_function/compressed_seq/select/bits_vec"
    # in a child with a deadline: a regression fails here instead of hanging the suite
    run = subprocess.run([sys.executable, "-c", _LOOKUP_ONES, str(path)], capture_output=True,
                         text=True, timeout=60, check=False)
    assert (run.returncode, run.stdout.strip(), run.stderr) == (0, field, "")
    with open_bytes(path.read_bytes()) as shard:
        for key in [*all_keys("tiny"), bytes(32)]:
            with pytest.raises(LayoutError) as info:
                shard[key]
            assert info.value.field == field
        with pytest.raises(LayoutError) as info:
            _ = shard.hash_function
        assert info.value.field == field
        assert checks(shard.verify()) == {"hash_function"}


@pytest.mark.parametrize("name", NAMES)
def test_zero_key_is_never_found(name: str) -> None:
    """The zero key is stored in every empty slot and tombstone; looking it up finds nothing."""
    zero = bytes(32)
    with open_bytes(shard_bytes(name)) as shard:
        with pytest.raises(EntryNotFoundError):
            shard[zero]
        assert zero not in shard
        assert shard.get_many([zero], default=None) == [None]
        assert shard.get(zero, "missing") == "missing"


# -- fuzzing ---------------------------------------------------------------------------------

U64_VALUES = st.one_of(
    st.sampled_from([0, 1, 40, 88, 511, 512, 513, 2**32, 2**63, 2**64 - 2, 2**64 - 1]),
    st.integers(0, 1 << 18),
    st.integers(0, 2**64 - 1),
)
U32_VALUES = st.one_of(st.sampled_from([0, 1, 2, 31, 32, 2**31, 2**32 - 1]),
                       st.integers(0, 300), st.integers(0, 2**32 - 1))
MUTATION = st.one_of(
    st.tuples(st.just("set"), st.integers(0, 1 << 20), st.integers(0, 255)),
    st.tuples(st.just("flip"), st.integers(0, 1 << 20), st.integers(0, 7)),
    st.tuples(st.just("cut"), st.integers(0, 1 << 20)),
    st.tuples(st.just("append"), st.binary(min_size=1, max_size=64)),
    st.tuples(st.just("header"), st.integers(0, 6), U64_VALUES, st.booleans()),
    st.tuples(st.just("index"), st.integers(0, 1 << 12), U64_VALUES),
    st.tuples(st.just("object_size"), st.integers(0, 1 << 12), U64_VALUES),
    st.tuples(st.just("cmph"), st.integers(0, 200), U32_VALUES),
)


def mutate(data: bytes, mutations: list[tuple[Any, ...]]) -> bytes:
    buf = bytearray(data)
    for kind, *args in mutations:
        size = len(buf)
        if kind == "set" and size:
            buf[args[0] % size] = args[1]
        elif kind == "flip" and size:
            buf[args[0] % size] ^= 1 << args[1]
        elif kind == "cut":
            del buf[args[0] % (size + 1):]
        elif kind == "append":
            buf += args[0]
        elif kind == "header" and size >= 88:
            h = list(HEADER.unpack_from(buf, 32))
            h[args[0]] = args[1]
            if args[2]:  # keep the sections chained, so the mutation reaches further
                h[4] = (h[2] + h[3]) % 2**64
                h[6] = (h[4] + h[5]) % 2**64
            HEADER.pack_into(buf, 32, *h)
        elif kind in ("index", "object_size") and size >= 88:
            h = header(bytes(buf[:88]))
            if kind == "index":
                slots = max(1, h["index_size"] // SLOT)
                pos = h["index_position"] + (args[0] % slots) * SLOT + 32
            else:
                pos = 512 + args[0] % max(1, h["objects_size"])
            if pos + 8 <= size:
                U64.pack_into(buf, pos, args[1])
        elif kind == "cmph" and size >= 88:
            pos = header(bytes(buf[:88]))["hash_position"] + args[0]
            if pos + 4 <= size:
                U32.pack_into(buf, pos, args[1])
    return bytes(buf)


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(name=st.sampled_from(NAMES), mutations=st.lists(MUTATION, min_size=1, max_size=4),
       forced=st.booleans())
def test_fuzz_only_shardkit_errors_escape(name: str, mutations: list[tuple[Any, ...]],
                                          forced: bool) -> None:
    data = mutate(shard_bytes(name), mutations)
    keys = all_keys(name)[:40]
    open_and_exercise(data, keys, **({"format": "swh"} if forced else {}))


# -- command line ----------------------------------------------------------------------------


def corrupted(case: str) -> bytes:
    data = shard_bytes("tiny")
    return {
        "empty": b"",
        "magic_prefix": data[:8],
        "cut_in_header": data[:50],
        "cut_in_objects": data[:600],
        "bad_magic": flip(data, 3),
        "version_2": with_header(data, version=2),
        "index_size_2_63": with_header(data, index_size=2**63),
        "objects_size_max": with_header(data, objects_size=2**64 - 1),
    }[case]


OPEN_FAILS = ["empty", "magic_prefix", "cut_in_header", "cut_in_objects", "bad_magic",
              "version_2", "index_size_2_63", "objects_size_max"]
TINY_KEY = "a948904f2f0f479b8f8197694b30184b0d2ed1c1cd2a1ec0fb85d299a192a447"


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert "internal error" not in err
    return code, out, err


def assert_cli_error(code: int, out: str, err: str, json_mode: bool) -> dict[str, Any]:
    assert code == 2
    assert err.startswith("shardkit: error: ")
    assert err.count("\n") == 1 and err.endswith("\n")
    if not json_mode:
        return {}
    doc = json.loads(out)
    assert {"error", "offset", "message", "field"} <= set(doc)
    assert doc["error"] in shardkit.__all__
    assert issubclass(getattr(shardkit, doc["error"]), ShardkitError)
    return doc


@pytest.mark.parametrize("case", OPEN_FAILS)
@pytest.mark.parametrize("command", ["info", "ls", "verify", "dump", "map", "get"])
@pytest.mark.parametrize("json_mode", [False, True])
def test_cli_unreadable_file(tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str,
                             command: str, json_mode: bool) -> None:
    path = tmp_path / f"{case}.shard"
    path.write_bytes(corrupted(case))
    argv = [command, str(path)] + ([TINY_KEY] if command == "get" else [])
    argv += ["--json"] if json_mode else []
    doc = assert_cli_error(*run_cli(capsys, *argv), json_mode=json_mode)
    if json_mode and case not in ("empty", "magic_prefix", "bad_magic"):
        assert isinstance(doc["offset"], int) and doc["field"].startswith("/")


@pytest.mark.parametrize("json_mode", [False, True])
def test_cli_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                          json_mode: bool) -> None:
    argv = ["info", str(tmp_path / "nope.shard")] + (["--json"] if json_mode else [])
    assert_cli_error(*run_cli(capsys, *argv), json_mode=json_mode)


@pytest.mark.parametrize("json_mode", [False, True])
def test_cli_broken_hash_function(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                  json_mode: bool) -> None:
    data = shard_bytes("tiny")
    path = tmp_path / "hash.shard"
    path.write_bytes(flip(data, cmph_layout(data)["num_keys_total"]))
    flag = ["--json"] if json_mode else []
    for argv in (["info", str(path)], ["dump", str(path)], ["get", str(path), TINY_KEY]):
        assert_cli_error(*run_cli(capsys, *argv, *flag), json_mode=json_mode)
    code, out, err = run_cli(capsys, "verify", str(path), "--no-progress", *flag)
    assert code == 1 and err == ""
    if json_mode:
        doc = json.loads(out)
        assert doc["ok"] is False
        assert [p["check"] for p in doc["problems"]] == ["hash_function"]
    else:
        assert "PROBLEM hash_function" in out


@pytest.mark.parametrize("json_mode", [False, True])
def test_cli_corrupted_index_and_value(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       json_mode: bool) -> None:
    data = shard_bytes("tiny")
    flag = ["--json"] if json_mode else []
    slot, key, offset = sorted(live_entries(data))[0]
    # a flipped key: verify finds a slot problem, get says "not found" (exit 1)
    path = tmp_path / "key.shard"
    path.write_bytes(flip(data, entry_pos(data, slot)))
    code, out, err = run_cli(capsys, "verify", str(path), "--no-progress", *flag)
    assert code == 1
    assert ("slot" in out) and ("Traceback" not in out)
    code, out, err = run_cli(capsys, "get", str(path), key.hex(), *flag)
    assert code == 1 and err.startswith("shardkit: ") and "not found" in err
    # a flipped value byte: only --content-hash sees it
    size = object_size(data, offset)
    path = tmp_path / "value.shard"
    path.write_bytes(flip(data, offset + 8 + size - 1))
    code, out, err = run_cli(capsys, "verify", str(path), "--no-progress", *flag)
    assert code == 0
    code, out, err = run_cli(capsys, "verify", "--content-hash", "sha256", str(path),
                             "--no-progress", *flag)
    assert code == 1 and "content_hash" in out
    if json_mode:
        problems = json.loads(out)["problems"]
        assert [(p["check"], p["offset"]) for p in problems] == [("content_hash", offset + 8)]
    # an object size pointing past its section: get fails with a located error (exit 2)
    path = tmp_path / "size.shard"
    path.write_bytes(flip(data, offset, 0x80))
    doc = assert_cli_error(*run_cli(capsys, "get", str(path), key.hex(), *flag),
                           json_mode=json_mode)
    if json_mode:
        assert doc["offset"] == offset
        assert doc["field"] == f"/index/entries/{slot}/object/len_data"


@pytest.mark.parametrize("key", ["zz", "ab", TINY_KEY + "00"])
def test_cli_bad_key_text(capsys: pytest.CaptureFixture[str], key: str) -> None:
    code, _, err = run_cli(capsys, "get", str(DATA / "tiny.shard"), key)
    assert code == 2 and err.startswith("shardkit: error: ")


# -- verify(content_hash=...) takes only fixed 32-byte digests ---------------------------------


@pytest.mark.parametrize(("algo", "why"), [
    ("shake_128", "variable-length digest"),
    ("shake_256", "variable-length digest"),
    ("sha1", "gives 20-byte digests"),
    ("md5", "gives 16-byte digests"),
    ("sha512", "gives 64-byte digests"),
    ("blake2b", "gives 64-byte digests"),
    ("no-such-hash", "unknown content hash"),
])
def test_verify_refuses_a_content_hash_that_cannot_give_a_key(algo: str, why: str) -> None:
    with open_bytes(shard_bytes("tiny")) as shard, pytest.raises(ShardkitError) as info:
        shard.verify(content_hash=algo)
    assert type(info.value) is ShardkitError
    assert why in str(info.value)
    assert "use one of " in str(info.value) and "sha256" in str(info.value)


@pytest.mark.parametrize("algo", ["sha256", "SHA256", "blake2s", "sha3_256"])
def test_verify_takes_any_32_byte_content_hash(algo: str) -> None:
    with open_bytes(shard_bytes("tiny")) as shard:
        problems = shard.verify(content_hash=algo)
    # the sample's keys are sha256 digests: another function reports every live entry
    expected = set() if algo.lower() == "sha256" else {"content_hash"}
    assert checks(problems) == expected


@pytest.mark.parametrize("algo", ["sha1", "sha512", "blake2b"])
def test_cli_verify_unusable_content_hash_is_one_error_line(
        capsys: pytest.CaptureFixture[str], algo: str) -> None:
    code, out, err = run_cli(capsys, "verify", "--content-hash", algo,
                             str(DATA / "tiny.shard"))
    assert_cli_error(code, out, err, json_mode=False)
    assert f"content hash {algo!r} gives" in err


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(("byte", "mask"), [(None, 0), (32, 0x80), (39, 0x01), (39, 0x04)])
def test_verify_in_windows_finds_the_same(name: str, byte: int | None, mask: int,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The objects pass in small offset windows reports exactly what one window reports."""
    from shardkit.formats.swh import verify as swh_verify

    data = shard_bytes(name)
    if byte is not None:
        slot = sorted(live_entries(data))[0][0]
        data = flip(data, entry_pos(data, slot) + byte, mask)
    with open_bytes(data) as shard:
        whole = shard.verify(content_hash="sha256")
    monkeypatch.setattr(swh_verify, "WINDOW", 2)
    seen: list[tuple[int, int]] = []
    with open_bytes(data) as shard:
        windowed = shard.verify(content_hash="sha256", progress=lambda d, t: seen.append((d, t)))
    assert windowed == whole
    assert (byte is None) == (whole == [])
    assert seen[-1][0] == seen[-1][1] == len(live_entries(data))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("chunk", [9, 40, 1 << 20])
def test_items_in_windows_and_chunks(name: str, chunk: int,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """items() gives every live entry once, whatever the windows and read chunks (chunks
    smaller than an object read it alone)."""
    from shardkit.formats.swh import reader as swh_reader
    from shardkit.formats.swh import verify as swh_verify

    data = shard_bytes(name)
    with open_bytes(data) as shard:
        want = sorted((k, shard[k]) for k in shard.keys())
    monkeypatch.setattr(swh_verify, "WINDOW", 3)
    monkeypatch.setattr(swh_reader, "ITEMS_CHUNK", chunk)
    with open_bytes(data) as shard:
        got = list(shard.items())
        assert sorted(got) == want and len(got) == len(live_entries(data))
        # in file order: the objects' offsets increase
        where = {k: o for _, k, o in live_entries(data)}
        assert [where[k] for k, _ in got] == sorted(where.values())


@pytest.mark.parametrize(("count", "span"), [(0, 10), (1, 10), (1000, 50), (20000, 1 << 20),
                                             (5000, 1 << 31), (3000, 1 << 40)])
def test_offset_order_is_a_stable_argsort(count: int, span: int) -> None:
    import numpy as np

    from shardkit.formats.swh.verify import offset_order

    offsets = np.random.default_rng(count).integers(512, 512 + span, count).astype(np.uint64)
    assert offset_order(offsets).tolist() == np.argsort(offsets, kind="stable").tolist()


def _greedy_windows(hist: list[int], limit: int) -> list[tuple[int, int, int]]:
    """The windows, one bin at a time: a range closes before the bin that would take a
    non-empty range past ``limit``."""
    out, lo, acc = [], 0, 0
    for i, count in enumerate(hist):
        if acc and acc + count > limit:
            out.append((lo, i, acc))
            lo, acc = i, 0
        acc += count
    out.append((lo, len(hist), acc))
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=1, max_size=60), st.integers(1, 50))
def test_windows_are_the_greedy_cut(hist: list[int], limit: int) -> None:
    import numpy as np

    from shardkit.formats.swh.verify import _windows

    assert _windows(np.array(hist, np.int64), limit) == _greedy_windows(hist, limit)


def test_a_batch_answers_as_single_lookups_do_when_another_block_is_bad() -> None:
    """A fault in a select block no key of the batch lands in (here a one in the bit vector's
    padding) does not stop get_many, as it does not stop s[key]: with the accelerator and
    without (the pure path used to decode the whole function for a batch and raise)."""
    data = bytearray((DATA / "medium.shard").read_bytes())
    with shardkit.open(bytes(data), format="swh") as s:
        base, lay = s.header.hash_position, s.layout
        keys = list(s.keys())[:50]
        want = [s[k] for k in keys]
    nbits = lay.nbuckets + lay.sel_m
    data[base + lay.bits_vec + nbits // 8] |= 0x80  # the last bit of the padding byte
    with shardkit.open(bytes(data), format="swh") as s:
        assert [p.check for p in s.verify()] == ["hash_function"]
        assert [s[k] for k in keys] == want
        assert s.get_many(keys) == want
