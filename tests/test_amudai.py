"""Amudai: checksum vectors, hand-computed byte layouts, writer -> reader round trips, CLI."""

from __future__ import annotations

import io
import itertools
import json
import math
import struct
import uuid
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest
import xxhash
from amudai_samples import DATA, PROPERTIES, SCHEMA, STRIPES, expected_column, samples
from kaitaistruct import KaitaiStream
from shardkit.generated.amudai_shard import AmudaiShard as Ks

import shardkit
from shardkit.cli import main
from shardkit.formats.amudai import AmudaiShard
from shardkit.hashing.amudai import checksum, lookup_bucket_count
from shardkit.sources import BytesSource, CountingSource
from shardkit.writers.amudai import (
    FRAME,
    block_map,
    build_amudai,
    build_amudai_files,
    field,
    plain_block,
    value_dictionary,
    write_amudai,
)

NAMES = [f.name for f in SCHEMA]


def same(a: object, b: object) -> bool:
    """Equality with NaN == NaN, floats compared as float32 where needed."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b or abs(a - b) <= 1e-6 * abs(b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


def norm(name: str, values: list) -> list:
    """Writer inputs as the reader returns them (UUID -> bytes)."""
    return [v.bytes if isinstance(v, uuid.UUID) else v for v in values]


# --- checksum and hand-computed layouts ----------------------------------------------------


def test_checksum_vectors() -> None:
    assert checksum(b"") == 0x15D514C7
    assert checksum(b"testdata") == 0x59981402
    assert checksum(b"amud") == 0xD647C322
    h = xxhash.xxh3_64_intdigest(b"xyz")
    assert checksum(b"xyz") == (h >> 32) ^ (h & 0xFFFFFFFF)


def test_lookup_bucket_count() -> None:
    assert [lookup_bucket_count(n) for n in (0, 1, 4, 5, 8, 9, 17)] == [2, 2, 2, 2, 4, 4, 8]


def test_frame_bytes() -> None:
    assert bytes.fromhex("616d756400010000") == FRAME


def test_plain_int64_block_by_hand() -> None:
    # FORMAT_NOTES 4.5: [u32 0][u32 8n+2][01 00][raw values] + pad + ck, for n = 2
    block = plain_block(struct.pack("<H", 1) + struct.pack("<2q", 5, -1), presence=b"")
    body = bytes.fromhex("00000000" "12000000" "0000" "0100") + struct.pack("<2q", 5, -1)
    # 8 + 0 (presence) + 18 values = 26; 26 + 4 (ck) -> pad 2 to reach 32
    body = body.replace(bytes.fromhex("00000000120000000000"), bytes.fromhex("0000000012000000"))
    body += bytes(2)
    assert block == body + struct.pack("<I", checksum(body))
    assert len(block) == 32


def test_block_with_presence_by_hand() -> None:
    presence = b"\x02\x01\x00\x01"
    block = plain_block(b"\x01\x00" + bytes(3), presence=presence, checksums=False)
    # header 8, presence 4, pad to 16, values 5 -> 21, pad to 24
    assert block == (struct.pack("<II", 4, 5) + presence + bytes(4) + b"\x01\x00" + bytes(3)
                     + bytes(3))


def test_empty_block_map_is_56_bytes() -> None:
    assert block_map([]) == struct.pack("<QQ", 0, 0) + struct.pack("<5Q", 0, 0, 0, 1024, 0)


def test_block_map_by_hand() -> None:
    bm = block_map([(3, 40), (2, 32)])
    seg = struct.pack("<QQIIBBH", 0, 0, 2, 32, 8, 8, 2) + bytes([1, 0]) + bytes(2) \
        + bytes([8, 0]) + bytes(6)
    assert len(seg) == 40
    assert bm == seg + struct.pack("<2Q", 0, 5) + struct.pack("<2Q", 0, 40) \
        + struct.pack("<5Q", 5, 2, 1, 1024, 72)
    parsed = Ks.BlockMap(KaitaiStream(io.BytesIO(bm)))
    assert parsed.footer.num_blocks == 2
    assert parsed.segments[0].logical_sizes == [1, 0]
    assert parsed.segments[0].block_sizes == [8, 0]


def test_block_map_wide_sizes_match_kaitai() -> None:
    blocks = [(i % 300 + 1, 8 * (i * 97 % 9000 + 1)) for i in range(2500)]
    bm = block_map(blocks)
    parsed = Ks.BlockMap(KaitaiStream(io.BytesIO(bm)))
    assert parsed.footer.num_segments == 3
    got = []
    for seg in parsed.segments:
        got += [(a + seg.min_logical_size, b + seg.min_block_size)
                for a, b in zip(seg.logical_sizes, seg.block_sizes, strict=True)]
    assert got == blocks
    assert parsed.segments[0].block_size_bits == 32  # sizes span 71992 > 65535
    assert parsed.segments[0].logical_size_bits == 16


def test_basic_types_agree_everywhere() -> None:
    """The reader's names come from schema.fbs; the .ksy and the writer must agree with it."""
    from shardkit.generated import amudai_schema_fb as fb

    from shardkit.formats.amudai import BASIC_TYPES
    from shardkit.writers.amudai import BASIC_TYPES as WRITER_TYPES

    assert [getattr(fb.BasicType, name) for name in BASIC_TYPES] == list(range(18))
    assert {e.value: e.name.replace("_", "") for e in Ks.BasicType} == \
        {i: name.lower() for i, name in enumerate(BASIC_TYPES)}
    assert {name: i for i, name in enumerate(BASIC_TYPES)} == WRITER_TYPES


@pytest.mark.parametrize("span", [1, 200, 60_000, 100_000])
def test_segment_len_record_matches_the_record_offsets(span: int) -> None:
    """block_map_segment.len_record (a .ksy value instance) is where the next record starts."""
    blocks = [(i % span + 1, 8 * (i * 97 % span + 1)) for i in range(2100)]
    parsed = Ks.BlockMap(KaitaiStream(io.BytesIO(block_map(blocks))))
    assert parsed.footer.num_segments == 3
    ends = list(itertools.accumulate(seg.len_record for seg in parsed.segments))
    assert parsed.ofs_segment_records == [0, *ends]


def test_value_dictionary_by_hand() -> None:
    buf = value_dictionary([b"b", b"", b"a"], 1, 10, 0)
    assert len(buf) % 64 == 0
    head = struct.unpack_from("<BIBIIQQQQQQ", buf)
    assert head[:5] == (10, 3, 1, 1, 0)
    v0, v1, o0, o1, s0, s1 = head[5:]
    assert s1 > s0 and len(buf) >= s1
    assert v0 == 128 and (v1 - v0) % 16 == 0 and v1 == o0 and o1 == s0
    assert struct.unpack_from("<I", buf, 124)[0] == checksum(buf[:124])
    # values section: u64 len | payload | 64 zeros | pad to 12 mod 16 | ck
    assert buf[v0 : v0 + 8 + 2] == struct.pack("<Q", 2) + b"ba"
    assert v1 - v0 == 80 and buf[v1 - 4 : v1] == struct.pack("<I", checksum(b"ba"))
    assert buf[s0 + 8 : s0 + 16] == struct.pack("<2I", 2, 0)  # "a" < "b"; null id left out


def test_record_layout_in_file() -> None:
    data = build_amudai([field("a", "Int64")], [{"a": [1, 2]}])
    assert data[:8] == FRAME and data[-8:] == FRAME
    (length,) = struct.unpack_from("<I", data, len(data) - 12)
    start = len(data) - 12 - (length + 8)
    assert struct.unpack_from("<I", data, start)[0] == length
    payload = data[start + 4 : start + 4 + length]
    assert struct.unpack_from("<I", data, start + 4 + length)[0] == checksum(payload)
    ks = Ks.from_bytes(data)
    assert ks.len_directory == length and ks.directory.payload == payload
    assert ks.footer.version_minor == 1 and ks.header.magic == b"amud"


def test_buffers_are_64_aligned_and_blocks_8() -> None:
    s = shardkit.open(samples()["single.amudai.shard"])
    for sec in s.sections():
        if sec.name.endswith(("/data", "/offsets", "/presence", "/dictionary")):
            assert sec.start % 64 == 0, sec
            assert sec.size % 8 == 0, sec


# --- round trips -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def single() -> AmudaiShard:
    return shardkit.open(DATA / "single.amudai.shard")


@pytest.fixture(scope="module")
def twolevel() -> AmudaiShard:
    return shardkit.open(DATA / "twolevel.amudai.shard")


def test_samples_are_what_the_writer_makes() -> None:
    for name, data in samples().items():
        assert (DATA / name).read_bytes() == data, f"{name}: run python tests/amudai_samples.py"


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("layout", ["single", "twolevel"])
def test_round_trip_every_type(request: pytest.FixtureRequest, layout: str, name: str) -> None:
    s = request.getfixturevalue(layout)
    got = s.read_column(name)
    assert same(got, norm(name, expected_column(name))), name


def test_shard_facts(single: AmudaiShard) -> None:
    assert single.record_count == 68
    assert [st.record_count for st in single.stripes] == [40, 25, 3]
    assert [st.shard_position for st in single.stripes] == [0, 40, 65]
    assert [f.name for f in single.schema] == NAMES
    assert single.schema[0].type == "Int64"
    assert [c.name for c in single.schema[NAMES.index("address")].children] == ["street", "zip"]
    assert single.field("u16").signed is False and single.field("id").signed is True
    assert single.urls == []
    assert single.properties["custom"] == PROPERTIES
    assert single.properties["creation_min"] == datetime(2024, 5, 6, 7, 8, 9)
    assert single.verify() == []


def test_two_level_layout(twolevel: AmudaiShard) -> None:
    assert len(twolevel.urls) == 3 and all(u.endswith(".amudai.stripe") for u in twolevel.urls)
    assert twolevel.verify() == []
    sfd = twolevel.stripe_field(1, 0)
    assert sfd.encodings[0].native.buffers[0].buffer.url == twolevel.urls[1]


def test_child_paths_and_constants(single: AmudaiShard) -> None:
    assert single.read_column("address.zip")[:3] == [10000, 10001, 10002]
    sfd = single.stripe_field(0, single.field("const").schema_id)
    assert sfd.field.constant_value.i64_value == 42 and not sfd.encodings[0].native.buffers
    assert single.read_column("const") == [42] * 68


def test_statistics(single: AmudaiShard) -> None:
    d = single.field_descriptor(single.field("flag").schema_id)
    flags = expected_column("flag")
    assert d.position_count == 68 and d.null_count == flags.count(None)
    assert d.boolean_stats.true_count == flags.count(True)
    d = single.field_descriptor(single.field("score").schema_id)
    assert d.floating_stats.positive_infinity_count == 1
    d = single.field_descriptor(single.field("name").schema_id)
    assert d.string_stats.max_size == max(len(v.encode()) for v in expected_column("name") if v)
    d = single.field_descriptor(single.field("id").schema_id)
    assert d.range_stats.max_value.i64_value == max(v for v in expected_column("id") if v)


def test_numpy_array() -> None:
    data = build_amudai([field("a", "Int64"), field("f", "Float32")],
                        [{"a": list(range(10_000)), "f": [0.5] * 9_999 + [None]}])
    s = shardkit.open(data)
    arr = s.read_array("a")
    assert isinstance(arr, np.ndarray) and arr.dtype == np.int64
    assert np.array_equal(arr, np.arange(10_000))
    masked = s.read_array("f")
    assert isinstance(masked, np.ma.MaskedArray) and masked.mask.sum() == 1


@pytest.mark.parametrize("codec", ["lz4", "zstd"])
def test_compressed_blocks(codec: str) -> None:
    pytest.importorskip({"lz4": "lz4", "zstd": "zstandard"}[codec])
    rows = {"a": list(range(5000)), "s": [f"value {i % 10}" for i in range(5000)]}
    data = build_amudai([field("a", "Int64"), field("s", "String")], [rows], compression=codec)
    s = shardkit.open(data)
    assert s.read_column("a") == rows["a"] and s.read_column("s") == rows["s"]
    code = {"lz4": 17, "zstd": 16}[codec]
    sfd = s.stripe_field(0, 0)
    ref = sfd.encodings[0].native.buffers[0].buffer.range
    assert struct.unpack_from("<H", data, ref.start + 8)[0] == code  # first block's code
    assert len(data) < 40_000 + 45_000


def test_deterministic_bytes() -> None:
    assert build_amudai_files(SCHEMA, STRIPES) == build_amudai_files(SCHEMA, STRIPES)


def test_open_reads_little(tmp_path: Path) -> None:
    data = build_amudai([field("a", "Int64")], [{"a": list(range(100_000))}])
    src = CountingSource(BytesSource(data))
    s = AmudaiShard(src)
    assert [f.name for f in s.schema] == ["a"]
    assert src.stats.bytes_read < 64 * 1024
    assert src.stats.reads <= 4


def test_fsspec_two_level() -> None:
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory")
    for name, data in samples().items():
        with fs.open(f"/amudai-test/{name}", "wb") as fh:
            fh.write(data)
    with shardkit.open("memory://amudai-test/twolevel.amudai.shard") as s:
        assert same(s.read_column("name"), expected_column("name"))
        assert s.verify() == []


def test_self_reference_quirk(tmp_path: Path) -> None:
    # The reference writer stores the root's own absolute URL in shard-level field lists.
    path = tmp_path / "q.amudai.shard"
    write_amudai(path, [field("a", "Int64")], [{"a": [1, 2]}])
    s = shardkit.open(path)
    assert s._blobs.source("file:///somewhere/else/q.amudai.shard", "/x") is s.source


# --- CLI ---------------------------------------------------------------------------------


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def test_cli(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(DATA / "single.amudai.shard")
    code, out = run(capsys, "info", "--json", path)
    info = json.loads(out)
    assert code == 0 and info["record_count"] == 68 and len(info["stripes"]) == 3
    assert "address.street: String" in info["schema"]
    assert info["properties"]["custom"]["source"] == "shardkit test"
    code, out = run(capsys, "ls", path)
    assert code == 0 and "tags.item\tString" in out.splitlines()
    code, out = run(capsys, "get", path, "when")
    assert code == 0 and json.loads(out)[0] == "2024-01-01T00:00:00"
    code, out = run(capsys, "get", path, "address")
    assert json.loads(out)[1] == {"street": "1 Main St", "zip": 10001}
    code, out = run(capsys, "dump", path)
    tree = json.loads(out)
    assert tree["stripes"][0]["fields"]["id"]["encodings"][0]["native"]["buffers"][0][
        "kind"] == "DATA"
    code, out = run(capsys, "map", path)
    assert code == 0 and "/stripes/0/fields/id/data" in out
    code, out = run(capsys, "verify", path)
    assert code == 0 and "OK" in out


@pytest.mark.parametrize("name", ["single", "twolevel", "indexed"])
def test_every_listed_column_reads_and_children_match_parents(name: str) -> None:
    """`ls` lists nested columns (a list's items, a map's keys); each reads on its own, and a
    list's item column is its rows flattened."""
    path = Path(__file__).parent / "data" / "amudai" / f"{name}.amudai.shard"
    with shardkit.open(path) as s:
        columns = {c: s.read_column(c) for c in s.keys()}
        for parent in s.schema:
            if parent.type == "List":
                child = f"{parent.name}.{parent.children[0].name}"
                flat = [v for row in columns[parent.name] if row is not None for v in row]
                assert columns[child] == flat, child


def test_block_framing_fast_path_equals_kaitai(monkeypatch) -> None:
    """split_block (struct) and the schema's encoded_block agree on every block of the samples."""
    from kaitaistruct import KaitaiStream
    from shardkit.generated.amudai_shard import AmudaiShard as Ks

    import shardkit.formats.amudai.columns as amudai_mod
    from shardkit.formats.amudai.blocks import ENCODING_NAMES

    assert set(ENCODING_NAMES) == {e.value for e in Ks.BlockEncoding}
    seen = []
    real = amudai_mod.split_block

    def spy(raw, **kw):
        parts = real(raw, **kw)
        seen.append((bytes(raw), kw["embedded_presence"], kw["has_checksum"], parts))
        return parts

    monkeypatch.setattr(amudai_mod, "split_block", spy)
    for name in ("single", "lz4", "twolevel", "indexed"):
        path = Path(__file__).parent / "data" / "amudai" / f"{name}.amudai.shard"
        with shardkit.open(path) as s:
            for column in s.keys():
                s.read_column(column)
    assert len(seen) > 50
    for raw, presence, has_ck, parts in seen:
        body = raw[:-4] if has_ck else raw
        ks = Ks.EncodedBlock(presence, has_ck, KaitaiStream(io.BytesIO(body)))
        assert ks._raw_values == bytes(parts.values)
        assert (ks.presence if presence else b"") == bytes(parts.presence)
        code = int.from_bytes(bytes(parts.values[:2]), "little")
        assert code in ENCODING_NAMES


def test_untrusted_counts_are_capped_before_allocating() -> None:
    from shardkit.formats.amudai import MAX_POSITIONS
    from shardkit.formats.amudai.blocks import MAX_BLOCK_VALUES, decode_presence

    with pytest.raises(shardkit.LimitExceededError):
        decode_presence(memoryview(b"\x01"), MAX_BLOCK_VALUES + 1, base=0, field="/p")
    path = Path(__file__).parent / "data" / "amudai" / "single.amudai.shard"
    with shardkit.open(path) as s:
        node = s.field("id")
        with pytest.raises(shardkit.LimitExceededError):
            s._column_in_stripe(0, node, MAX_POSITIONS + 1)
        with pytest.raises(shardkit.LimitExceededError):
            s._primitive_array(0, node, MAX_POSITIONS + 1)
