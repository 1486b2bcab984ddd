"""Xet MDB robustness: each corruption FORMAT_NOTES lists gives a precise shardkit error."""

from __future__ import annotations

import random
import struct
import tracemalloc
from pathlib import Path

import pytest

from shardkit.errors import (
    BadMagicError,
    LayoutError,
    ShardkitError,
    TruncatedError,
    UnsupportedVersionError,
)
from shardkit.formats.xet_mdb import MdbShard
from shardkit.sources import BytesSource

DATA = Path(__file__).parent / "data" / "mdb" / "real"
SESSION = (DATA / "session" /
           "b04ac8152506ea5af6b90a7378a3d35c46cbef373a597241937795e323cea8f1.mdb").read_bytes()
UPLOAD = (DATA / "upload_body" /
          "c2a7f4f3dcab2f5c0038b17845ec6b3db4e6478a53b442f1dd8a40354f82e009.mdb").read_bytes()
FOOTER = len(SESSION) - 200  # 3448
XORB_INFO = 912
FILE_LOOKUP = 2784


def patched(data: bytes, offset: int, new: bytes) -> bytes:
    out = bytearray(data)
    out[offset : offset + len(new)] = new
    return bytes(out)


def u64(v: int) -> bytes:
    return struct.pack("<Q", v)


def u32(v: int) -> bytes:
    return struct.pack("<I", v)


def open_(data: bytes, engine: str = "numpy") -> MdbShard:
    return MdbShard(BytesSource(data), engine=engine)


def checks(problems) -> set[tuple[str, str | None]]:
    return {(p.check, p.field) for p in problems}


def test_bad_tag() -> None:
    with pytest.raises(BadMagicError) as e:
        open_(patched(SESSION, 3, b"X"))
    assert (e.value.offset, e.value.field) == (0, "/header/tag")


def test_legacy_tag_is_unsupported_not_corrupt() -> None:
    with pytest.raises(UnsupportedVersionError):
        open_(patched(SESSION, 0, b"HFRepoMetadata\x00"))


def test_bad_header_version() -> None:
    with pytest.raises(UnsupportedVersionError) as e:
        open_(patched(SESSION, 32, u64(3)))
    assert (e.value.offset, e.value.field) == (32, "/header/version")


def test_bad_footer_size_value() -> None:
    with pytest.raises(LayoutError) as e:
        open_(patched(SESSION, 40, u64(160)))
    assert e.value.field == "/header/len_footer"


def test_bad_footer_version() -> None:
    with pytest.raises(UnsupportedVersionError) as e:
        open_(patched(SESSION, FOOTER, u64(2)))
    assert (e.value.offset, e.value.field) == (FOOTER, "/footer/version")


def test_footer_offset_not_at_the_end() -> None:
    with pytest.raises(LayoutError) as e:
        open_(patched(SESSION, FOOTER + 192, u64(FOOTER - 8)))
    assert e.value.field == "/footer/ofs_footer"


def test_upload_body_whose_header_announces_a_footer() -> None:
    """FORMAT_NOTES 11: bodies once carried footer_size 200 and no footer: read, but flagged."""
    s = open_(patched(UPLOAD, 40, u64(200)))
    assert s.footer is None and len(s.files) == 3
    assert ("footer", "/header/len_footer") in checks(s.verify())


def test_missing_xorb_bookend() -> None:
    s = open_(UPLOAD[:-48])
    with pytest.raises(TruncatedError) as e:
        _ = s.files
    assert e.value.field == "/xorb_info/blocks/1"
    assert [p.check for p in s.verify()] == ["layout"]
    with pytest.raises(TruncatedError):
        _ = open_(UPLOAD[:-48], engine="kaitai").files


def test_missing_file_bookend_reads_records_as_blocks() -> None:
    # the file bookend replaced by a zero record: a file block with 0 terms; the xorb header
    # that follows is then read as a file block whose count runs past the end
    s = open_(patched(UPLOAD, 480 - 48, bytes(48)))
    with pytest.raises(TruncatedError):
        _ = s.files


@pytest.mark.parametrize(("offset", "field"), [
    (48 + 36, "/file_info/blocks/0/num_terms"),
    (XORB_INFO + 36, "/xorb_info/blocks/0/num_chunks"),
])
def test_count_larger_than_the_file(offset: int, field: str) -> None:
    data = patched(SESSION, offset, u32(0xFFFF_FFFF))
    tracemalloc.start()
    try:
        s = open_(data)
        with pytest.raises(TruncatedError) as e:
            _ = s.files if "file" in field else s.xorbs
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert e.value.field == field
    assert peak < 2_000_000  # nothing sized by the count was allocated
    with pytest.raises(TruncatedError):
        _ = open_(data, engine="kaitai").files


def test_lookup_table_count_larger_than_the_file() -> None:
    data = patched(SESSION, FOOTER + 64, u64(2**60))  # chunk_lookup_num_entry
    tracemalloc.start()
    try:
        s = open_(data)
        with pytest.raises(LayoutError) as e:
            s.find_chunk("00" * 32)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert e.value.field == "/chunk_lookup" and peak < 2_000_000
    found = checks(s.verify())
    assert ("lookup_table", "/chunk_lookup") in found
    assert ("footer", "/footer/ofs_footer") in found


@pytest.mark.parametrize(("offset", "field"), [
    (FOOTER + 16, "/footer/ofs_xorb_info"),
    (FOOTER + 24, "/footer/ofs_file_lookup"),
    (FOOTER + 40, "/footer/ofs_xorb_lookup"),
    (FOOTER + 56, "/footer/ofs_chunk_lookup"),
])
def test_offsets_out_of_range(offset: int, field: str) -> None:
    s = open_(patched(SESSION, offset, u64(10**12)))
    assert ("footer", field) in checks(s.verify())


def test_file_table_pointing_at_the_wrong_record() -> None:
    s = open_(patched(SESSION, FILE_LOOKUP + 12 + 8, u32(3)))  # entry 1: index 2 -> 3
    assert ("lookup_table", "/file_lookup/entries/1") in checks(s.verify())
    assert s.file("1686ca90c1751860f1a32b3b103bed9f483886112eb26a999a6568a43fd38f1c") is None


def test_wrong_totals() -> None:
    s = open_(patched(SESSION, FOOTER + 176, u64(5)))
    assert checks(s.verify()) == {("totals", "/footer/len_materialized")}


def test_flipped_chunk_hash() -> None:
    s = open_(patched(SESSION, XORB_INFO + 48 + 5, b"\x00"))
    found = checks(s.verify())
    assert ("xorb_hash", "/xorb_info/blocks/0/xorb_hash") in found
    assert ("lookup_table", "/chunk_lookup") in found
    assert any(c == "verification_hash" for c, _ in found)
    assert any(c == "file_hash" for c, _ in found)


def test_flipped_verification_hash() -> None:
    # file block at record 2 (offset 144): header, 1 term, then its verification entry
    s = open_(patched(SESSION, 144 + 96, b"\x00"))
    assert checks(s.verify()) == {("verification_hash",
                                   "/file_info/blocks/2/verification_entries/0/range_hash")}


def test_flipped_file_hash() -> None:
    s = open_(patched(SESSION, 144 + 31, b"\x00"))
    found = checks(s.verify())
    assert ("file_hash", "/file_info/blocks/2/file_hash") in found


def test_term_outside_its_xorb_and_wrong_size() -> None:
    s = open_(patched(SESSION, 144 + 48 + 44, u32(99)))  # chunk_index_end 99 > 37 chunks
    assert ("term", "/file_info/blocks/2/terms/0/chunk_index_end") in checks(s.verify())
    s = open_(patched(SESSION, 144 + 48 + 36, u32(1)))
    assert ("term", "/file_info/blocks/2/terms/0/len_unpacked") in checks(s.verify())


def test_random_corruption_never_crashes() -> None:
    """Each damaged shard gives an error, or a problem from verify, or values that are what
    its bytes say: the same as the original's, or (MDB has no checksum: a changed hash is a
    valid other hash) values that our writer turns back into exactly the damaged bytes. Both
    engines read the same."""
    from shardkit.writers.xet_mdb import build

    rnd = random.Random(1)
    outcomes = {"error": 0, "problem": 0, "unchanged": 0, "round trip": 0}
    for base in (SESSION, UPLOAD):
        want = open_(base).to_dict()
        for _ in range(150):
            data = bytearray(base)
            for _ in range(rnd.randint(1, 4)):
                pos = rnd.randrange(len(data))
                data[pos] = rnd.randrange(256)
            if rnd.random() < 0.2:
                data = data[: rnd.randrange(len(data))]
            seen = []
            for engine in ("numpy", "kaitai"):
                try:
                    s = open_(bytes(data), engine)
                    problems = s.verify()
                    _ = s.files, s.xorbs
                    got = s.to_dict()
                    s.file("00" * 32)
                    s.find_chunk("00" * 32)
                except ShardkitError as exc:
                    seen.append(("error", type(exc)))
                    continue
                if problems:
                    seen.append(("problem", [p.check for p in problems]))
                elif got == want:
                    seen.append(("unchanged", None))
                else:
                    assert build(s) == bytes(data), "other values, verify() clean, no round trip"
                    seen.append(("round trip", got))
            assert seen[0][0] == seen[1][0], f"the engines disagree: {seen}"
            outcomes[seen[0][0]] += 1
    assert outcomes["error"] and outcomes["problem"]
