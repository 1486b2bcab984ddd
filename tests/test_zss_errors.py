"""Bad ZSS files fail as ShardkitError naming the block, never as a stray builtin exception."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import shardkit
from shardkit import ChecksumError, CorruptShardError, ShardkitError, TruncatedError
from shardkit.cli import main
from shardkit.formats.zss import (
    BlockChecksumError,
    CorruptBlockError,
    IncompleteFileError,
    ZssFile,
)
from shardkit.hashing.crc32c import crc32c
from shardkit.sources import BytesSource
from shardkit.writers.zss import build_zss, encode_uleb128

DATA = Path(__file__).parent / "data" / "zss"
MANIFEST = json.loads((DATA / "manifest.json").read_text())["files"]
CORRUPT = [name for name in MANIFEST if name.startswith("corrupt_")]


def open_bytes(data: bytes) -> ZssFile:
    return ZssFile(BytesSource(data))


@pytest.mark.parametrize("name", CORRUPT)
def test_corrupt_block_names_its_voffset(name):
    c = MANIFEST[name]["corruption"]
    with shardkit.open(DATA / name) as z:
        with pytest.raises(CorruptBlockError) as info:
            list(z)
        err = info.value
        assert err.voffset == c["block_voffset"]
        assert f"voffset {c['block_voffset']}" in str(err)
        assert c["payload_file_range"][0] <= err.offset <= c["payload_file_range"][1]
        if z.codec == "none+crc32c":
            assert isinstance(err, BlockChecksumError) and isinstance(err, ChecksumError)
        else:  # not zlib.error / OSError
            assert type(err) is CorruptBlockError
        problems = z.verify()
        assert len(problems) == 1
        assert problems[0].check in ("codec", "checksum")
        assert problems[0].offset is not None
        assert c["payload_file_range"][0] <= problems[0].offset <= c["payload_file_range"][1]
        assert f"voffset {c['block_voffset']}" in problems[0].message
        # blocks off the corrupt one still answer
        assert list(z.search(prefix=b"\xff\xff")) == [b"\xff\xff"]


def test_corrupt_cli_verify_exit_1(capsys):
    assert main(["verify", str(DATA / "corrupt_medium_bz2.zss")]) == 1
    assert "voffset 26064" in capsys.readouterr().out


def test_incomplete_file_refused_clearly(capsys):
    with pytest.raises(IncompleteFileError, match="incomplete") as info:
        shardkit.open(DATA / "incomplete_zlib.zss")
    assert isinstance(info.value, shardkit.FormatError)
    assert info.value.offset == 0
    assert main(["info", str(DATA / "incomplete_zlib.zss")]) == 2
    assert "incomplete file" in capsys.readouterr().err


@pytest.fixture(scope="module")
def tiny() -> bytes:
    return (DATA / "tiny_none.zss").read_bytes()


def test_header_crc_mismatch(tiny):
    for pos in (12, 20, 40, 57):  # root voffset, uuid, codec, metadata
        bad = bytearray(tiny)
        bad[pos] ^= 0x01
        with pytest.raises(ChecksumError) as info:
            open_bytes(bytes(bad))
        assert info.value.region == "header" and info.value.offset == 58
    bad = bytearray(tiny)
    bad[60] ^= 0x80
    with pytest.raises(ChecksumError):
        open_bytes(bytes(bad))


def rehead(data: bytes, header: bytes) -> bytes:
    """``data`` with a new header (and its correct CRC)."""
    n = struct.unpack_from("<I", data, 8)[0]
    return (data[:8] + struct.pack("<I", len(header)) + header
            + struct.pack("<I", crc32c(header)) + data[16 + n:])


def test_bad_header_fields(tiny):
    header = tiny[12:58]
    with pytest.raises(shardkit.UnsupportedVersionError, match="codec"):
        open_bytes(rehead(tiny, header[:24] + b"lzma".ljust(16, b"\0") + header[40:]))
    for meta in (b"[1,2]", b"nope", b'"str"'):
        h = header[:40] + struct.pack("<I", len(meta)) + meta
        with pytest.raises(CorruptShardError, match="metadata"):
            open_bytes(rehead(tiny, h))
    # nested past the interpreter's recursion limit: a LayoutError, not a RecursionError
    deep = b'{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    h = header[:40] + struct.pack("<I", len(deep)) + deep
    with pytest.raises(shardkit.LayoutError, match="metadata is not JSON: nested too deeply"
                       ) as info:
        open_bytes(rehead(tiny, h))
    assert info.value.offset == 12 + 44 and info.value.field == "/header/metadata"
    with pytest.raises(shardkit.LayoutError, match="root voffset"):
        open_bytes(rehead(tiny, struct.pack("<Q", 10**6) + header[8:]))
    with pytest.raises(shardkit.BadMagicError):
        open_bytes(b"ZSX" + tiny[3:])
    with pytest.raises(TruncatedError):
        open_bytes(tiny[:30])


def test_bzip2_codec_name_accepted(tiny):
    z = open_bytes(build_zss([b"a", b"b"], codec="bzip2"))
    assert z.codec == "bzip2" and list(z) == [b"a", b"b"]


@pytest.mark.parametrize("name", ["medium_zlib.zss", "medium_bz2.zss", "medium_none.zss",
                                  "metadata_zlib.zss"])
def test_truncation_at_every_block_boundary(name):
    data = (DATA / name).read_bytes()
    with shardkit.open(DATA / name) as z:
        ends = [i.offset + i.size for i, _ in z.iter_blocks()][:-1]
        root = z.root
    for cut in [*ends[::max(1, len(ends) // 40)], ends[-1], ends[-1] + 1, len(data) - 1]:
        cut_data = data[:cut]
        try:
            z = open_bytes(cut_data)
        except ShardkitError as exc:  # the root is gone
            assert isinstance(exc, (shardkit.LayoutError, TruncatedError))
            assert z_root_gone(cut, root, data)
            continue
        problems = z.verify()  # never raises
        assert problems, cut
        with pytest.raises(ShardkitError):
            list(z)
            list(z.search(prefix=b"zz"))
            z.verify()
            raise CorruptShardError("reading the cut file gave no error")


def z_root_gone(cut: int, root: int, data: bytes) -> bool:
    n = struct.unpack_from("<I", data, 8)[0]
    return cut <= 16 + n + root + 1


def with_index_entries(records: list[bytes], mutate) -> bytes:
    """A none+crc32c file whose root index body is rewritten by ``mutate(keys, children)``."""
    data = bytearray(build_zss(records, codec="none+crc32c", approx_block_size=8,
                               branching_factor=64))
    z = open_bytes(bytes(data))
    ib = z.root_block
    keys, children = mutate(list(ib.keys), list(ib.children))
    body = b"".join(encode_uleb128(len(k)) + k + encode_uleb128(c)
                    for k, c in zip(keys, children, strict=True))
    info = z.frame(z.root)
    block = bytes([info.level]) + encode_uleb128(len(body) + 4) + body + struct.pack(
        "<I", crc32c(body))
    return bytes(data[: info.offset]) + block


RECORDS = [b"apple", b"banana", b"cherry", b"date", b"elder", b"fig"]


def checks(data: bytes) -> set[str]:
    return {p.check for p in open_bytes(data).verify()}


def test_verify_index_key_not_first_record():
    data = with_index_entries(RECORDS, lambda k, c: ([k[0], b"bz", *k[2:]], c))
    assert "index_key" in checks(data)


def test_verify_unreachable_and_double_reference():
    assert "unreachable" in checks(with_index_entries(RECORDS, lambda k, c: (k[:-1], c[:-1])))
    found = checks(with_index_entries(RECORDS, lambda k, c: (k[:2] + k[1:], c[:2] + c[1:])))
    assert {"child", "unreachable"} <= found or "index_order" in found


def test_verify_child_not_a_block_start():
    assert "child" in checks(with_index_entries(RECORDS, lambda k, c: (k, [*c[:-1], c[-1] + 1])))


def test_verify_order_and_levels():
    data = bytearray(build_zss([b"a", b"b", b"c"], codec="none+crc32c"))
    z = open_bytes(bytes(data))
    first = z.frame(0)
    body = bytearray(data[first.payload_offset: first.payload_offset + first.len_payload - 4])
    body[1:2], body[5:6] = b"c", b"a"  # records: c, b, a
    data[first.payload_offset: first.payload_offset + len(body) + 4] = bytes(body) + \
        struct.pack("<I", crc32c(bytes(body)))
    assert {"order", "index_key"} <= checks(bytes(data))
    data2 = bytearray(build_zss([b"a"], codec="none+crc32c"))
    data2[16 + struct.unpack_from("<I", data2, 8)[0]] = 3  # data block claims level 3
    assert {"level"} <= checks(bytes(data2))


def test_non_minimal_uleb128_refused():
    body = b"\x85\x00hello"  # length 5 written in two bytes
    block = b"\x00" + encode_uleb128(len(body) + 4) + body + struct.pack("<I", crc32c(body))
    good = build_zss([b"hello"], codec="none+crc32c")
    z = open_bytes(good)
    info = z.frame(0)
    bad = good[: info.offset] + block + good[info.offset + info.size:]
    # the root's child voffset is unchanged only if sizes match; rebuild the index instead
    z = open_bytes(bad)
    with pytest.raises(CorruptBlockError, match="non-minimal"):
        list(z)
    assert "body" in {p.check for p in z.verify()}


def with_data_body(records: list[bytes], body: bytes) -> bytes:
    """A one-data-block none+crc32c file of ``records`` whose body is replaced (same length)."""
    data = bytearray(build_zss(records, codec="none+crc32c"))
    info = open_bytes(bytes(data)).frame(0)
    assert info.len_payload == len(body) + 4
    data[info.payload_offset:info.payload_offset + len(body) + 4] = body + struct.pack(
        "<I", crc32c(body))
    return bytes(data)


@pytest.mark.parametrize("last", [b"abc", b"ab\xff"])  # text body (fast walk), and not
def test_lookups_in_a_malformed_body_raise(last):
    """A record running past the end of its body is a CorruptBlockError whenever it is reached."""
    good = [b"a%02d" % i for i in range(40)] + [last]
    body = b"".join(bytes([len(r)]) + r for r in good) + b"\x09xyzw"  # 9 bytes claimed, 4 left
    data = with_data_body([*good, b"xyzw"], body)
    for cache in (0, 64):
        z = ZssFile(BytesSource(data), cache_blocks=cache)
        with pytest.raises(CorruptBlockError, match="runs past the end") as info:
            list(z)
        where = info.value.offset
        with pytest.raises(CorruptBlockError, match="runs past the end") as info:
            list(z.search(prefix=b"zw"))  # the walk steps over the end looking for it
        assert info.value.voffset == 0
        for lookup in (lambda z: list(z.search(prefix=b"x")), lambda z: b"xyzw" in z,
                       lambda z: list(z.iter(start=b"a"))):  # the last decodes in bulk
            with pytest.raises(CorruptBlockError, match="runs past the end") as info:
                lookup(z)
            assert info.value.offset == where
        if cache:  # a cached block that is used again is indexed whole, which fails
            with pytest.raises(CorruptBlockError, match="runs past the end"):
                list(z.search(prefix=b"a0"))
        else:  # a lookup that does not reach the bad record is answered
            assert list(z.search(prefix=b"a0")) == good[:10]
        assert [p.check for p in z.verify()] == ["body"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pos=st.integers(0, 10_000), xor=st.integers(1, 255),
       name=st.sampled_from(["metadata_zlib.zss", "tiny_bz2.zss", "tiny_none.zss"]))
def test_random_byte_flips_only_raise_shardkit_errors(pos, xor, name):
    data = bytearray((DATA / name).read_bytes())
    pos %= len(data)
    data[pos] ^= xor
    try:
        z = open_bytes(bytes(data))
    except ShardkitError:
        return
    problems = z.verify()
    try:
        records = list(z)
        list(z.search(prefix=b"a"))
        _ = b"a" in z
    except ShardkitError:
        assert problems
        return
    if not problems:  # a flip the codecs ignore (e.g. a bz2 stream's padding bits): harmless
        assert records == list(open_bytes((DATA / name).read_bytes()))


def test_undetected_flips_change_nothing():
    """Every single-byte flip verify() accepts leaves the records exactly as they were."""
    name = "tiny_bz2.zss"
    original = (DATA / name).read_bytes()
    want = list(open_bytes(original))
    accepted = 0
    for pos in range(len(original)):
        data = bytearray(original)
        data[pos] ^= 0x01
        try:
            z = open_bytes(bytes(data))
            if z.verify():
                continue
        except ShardkitError:
            continue
        accepted += 1
        assert list(z) == want, pos
    assert accepted >= 1  # the bz2 stream's final padding bits are not covered by its CRC


def _root_first(records: list[bytes]) -> bytes:
    """A one-data-block ZSS file written with its root index block *before* the data block."""
    data = build_zss(records, codec="none+crc32c")
    z = open_bytes(data)
    n = struct.unpack_from("<I", data, 8)[0]
    start = 16 + n
    data_block = data[start:start + z.frame(0).size]
    body = encode_uleb128(len(records[0])) + records[0]
    root_len = 1 + 1 + len(body) + 1 + 4  # level, length, key entry, child voffset, CRC
    body += encode_uleb128(root_len)  # the data block comes right after the root
    root = b"\x01" + encode_uleb128(len(body) + 4) + body + struct.pack("<I", crc32c(body))
    assert len(root) == root_len
    header = struct.pack("<Q", 0) + data[20:12 + n]
    return data[:12] + header + struct.pack("<I", crc32c(header)) + root + data_block


def test_verify_accepts_a_child_after_its_parent():
    data = _root_first([b"apple", b"banana"])
    z = open_bytes(data)
    assert z.root == 0 and z.frame(0).level == 1
    assert list(z) == [b"apple", b"banana"]
    assert z.verify() == []


def test_verify_checks_a_child_after_its_parent():
    data = bytearray(_root_first([b"apple", b"banana"]))
    z = open_bytes(bytes(data))
    root = z.frame(0)
    data[root.payload_offset + 1] = ord("x")  # the key "apple" -> "xpple", CRC made right
    body = bytes(data[root.payload_offset:root.payload_offset + root.len_payload - 4])
    data[root.payload_offset + len(body):root.payload_offset + len(body) + 4] = \
        struct.pack("<I", crc32c(body))
    problems = open_bytes(bytes(data)).verify()
    assert [p.check for p in problems] == ["index_key"]
    assert "xpple" in problems[0].message and problems[0].offset == root.offset
