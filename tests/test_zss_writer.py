"""ZSS writer: byte-for-byte against the reference files, round trips, CRC-32C vectors."""

from __future__ import annotations

import io
import json
import re
from bisect import bisect_left
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shardkit.generated.uleb128 import Uleb128

import shardkit
from shardkit.formats.zss import ZssFile
from shardkit.hashing.crc32c import KNOWN_ANSWERS, crc32c, crc32c_le
from shardkit.sources import BytesSource
from shardkit.writers.zss import ZssWriter, build_zss, encode_uleb128, write_zss

DATA = Path(__file__).parent / "data" / "zss"
MANIFEST = json.loads((DATA / "manifest.json").read_text())["files"]
VALID = [name for name, e in MANIFEST.items() if e["expected"] == "valid"]


def writer_options(entry: dict) -> dict:
    """Our writer's options from the manifest's reference ZSSWriter(...) call."""
    call = entry["generator"]["call"]
    level = re.search(r"'compress_level': (\d+)", call)
    return {
        "codec": entry["codec"],
        "metadata": entry["metadata"],
        "uuid": bytes.fromhex(entry["uuid_hex"]),
        "branching_factor": int(re.search(r"branching_factor=(\d+)", call).group(1)),
        "approx_block_size": int(re.search(r"approx_block_size=(\d+)", call).group(1)),
        "compress_level": int(level.group(1)) if level else None,
        "record_overhead": len(bytes.fromhex(re.search(r"sep=bytes.fromhex\('(\w+)'\)",
                                                       call).group(1))),
    }


@pytest.mark.parametrize("name", VALID)
def test_reproduces_reference_files_byte_for_byte(name):
    original = (DATA / name).read_bytes()
    with shardkit.open(DATA / name) as z:
        records = list(z)
    assert build_zss(records, **writer_options(MANIFEST[name])) == original


def test_crc32c_known_answers():
    for data, expected in KNOWN_ANSWERS.items():
        assert crc32c(data) == expected, data
    assert crc32c(b" world", crc32c(b"hello")) == crc32c(b"hello world")
    assert crc32c_le(b"123456789") == bytes.fromhex("839206e3")
    tiny = (DATA / "tiny_none.zss").read_bytes()
    assert crc32c(tiny[12:58]) == 0xD38501C2 == int.from_bytes(tiny[58:62], "little")


@pytest.mark.parametrize(("value", "hexed"), [(0, "00"), (127, "7f"), (128, "8001"),
                                              (0x107F, "ff20"), (12345, "b960"),
                                              (2**63 - 1, "ffffffffffffffff7f")])
def test_uleb128_examples(value, hexed):
    assert encode_uleb128(value).hex() == hexed
    assert Uleb128.from_bytes(bytes.fromhex(hexed)).value == value


def test_uleb128_out_of_range():
    with pytest.raises(ValueError):
        encode_uleb128(2**63)
    with pytest.raises(ValueError):
        encode_uleb128(-1)


def test_writer_rejects_unsorted_and_bad_options():
    with pytest.raises(ValueError, match="not sorted"):
        build_zss([b"b", b"a"])
    with pytest.raises(ValueError):
        build_zss([b"a"], branching_factor=1)
    with pytest.raises(ValueError):
        build_zss([b"a"], codec="lzma")
    with pytest.raises(TypeError):
        build_zss([b"a"], metadata=[1, 2])


def test_failed_write_leaves_incomplete_file(tmp_path):
    path = tmp_path / "broken.zss"

    def records():
        yield b"a"
        raise RuntimeError("input died")

    with pytest.raises(RuntimeError):
        write_zss(path, records())
    assert list(tmp_path.iterdir()) == []  # no file under the name, no temporary left
    write_zss(path, [b"old"])
    with pytest.raises(RuntimeError):
        write_zss(path, records())
    assert [p.name for p in tmp_path.iterdir()] == ["broken.zss"]
    with shardkit.open(path) as z:  # the previous file, untouched
        assert list(z) == [b"old"]
    # written through an open file, an unfinished file keeps the "SSZ" magic, as the
    # reference writer leaves it
    with open(tmp_path / "raw.zss", "wb") as fh, pytest.raises(RuntimeError):
        write_zss(fh, records())
    with pytest.raises(shardkit.FormatError, match="incomplete"):
        shardkit.open(tmp_path / "raw.zss")


def test_empty_file_and_big_records():
    empty = ZssFile(BytesSource(build_zss([], codec="none+crc32c")))
    assert list(empty) == [] and len(empty) == 0 and b"" not in empty
    assert empty.verify() == []
    big = [b"", b"", b"a" * 5000, b"b" * 70000, b"b" * 70000, b"c"]
    for codec in ("zlib", "bz2", "none+crc32c", "bzip2"):
        data = build_zss(big, codec=codec, approx_block_size=1000, branching_factor=2)
        z = ZssFile(BytesSource(data))
        assert z.codec == codec
        assert list(z) == big
        assert z.verify() == []
        assert list(z.search(prefix=b"b")) == big[3:5]
        assert z.count(prefix=b"") == 6


def test_tree_shape_follows_format_section_7():
    """Index blocks follow their last child; the root is the last block; levels interleave."""
    records = [b"%06d" % i for i in range(3000)]
    data = build_zss(records, codec="none+crc32c", approx_block_size=200, branching_factor=3)
    z = ZssFile(BytesSource(data))
    levels = [i.level for i, _ in z.iter_blocks()]
    assert z.root == [i.voffset for i, _ in z.iter_blocks()][-1]
    assert "".join(map(str, levels)).startswith("0001000100012")
    assert z.verify() == []
    per_level = z.summary(counts=True)["blocks_per_level"]
    n = per_level["0"]
    for level in range(1, len(per_level)):
        n = -(-n // 3)
        assert per_level[str(level)] == n


def test_writer_streams_to_a_file_object(tmp_path):
    buf = io.BytesIO()
    buf.write(b"prefix bytes not part of the file? no: the writer starts where fh is")
    buf = io.BytesIO()
    with ZssWriter(buf, codec="zlib", metadata={"a": "é"}, uuid=bytes(16)) as w:
        w.add_many([b"x", b"y"])
        w.add(b"y")
    z = ZssFile(BytesSource(buf.getvalue()))
    assert list(z) == [b"x", b"y", b"y"]
    assert z.metadata == {"a": "é"}
    assert z.header.metadata_json == '{"a": "\\u00e9"}'
    assert z.uuid == bytes(16)


records_strategy = st.lists(st.binary(max_size=40) | st.sampled_from([b"", b"a", b"ab", b"\xff"]),
                            max_size=300)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=records_strategy,
       codec=st.sampled_from(["zlib", "bz2", "none+crc32c"]),
       block=st.integers(1, 400), bf=st.integers(2, 6),
       probes=st.lists(st.binary(max_size=4), max_size=8))
def test_roundtrip_matches_sorted_list_and_bisect(records, codec, block, bf, probes):
    records.sort()
    data = build_zss(records, codec=codec, approx_block_size=block, branching_factor=bf)
    z = ZssFile(BytesSource(data))
    assert list(z) == records
    assert len(z) == len(records)
    assert z.verify() == []
    for p in probes + records[::37]:
        lo = bisect_left(records, p)
        assert list(z.iter(start=p)) == records[lo:]
        assert list(z.search(prefix=p)) == [r for r in records if r.startswith(p)]
        assert (p in z) == (p in records)
        hi = p + b"\x80"
        assert list(z.iter(start=p, stop=hi)) == records[lo:bisect_left(records, hi)]


def test_crc32c_takes_any_bytes_like():
    for data in (b"123456789", bytearray(b"123456789"), memoryview(b"123456789")):
        assert crc32c(data) == 0xE3069283
