"""Amudai robustness: corrupt, truncated and hostile shards give one clear ShardkitError."""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path

import pytest
from amudai_samples import DATA
from shardkit.generated import amudai_shard_pb2 as spb

import shardkit
from shardkit.errors import (
    BadMagicError,
    ChecksumError,
    InvalidKeyError,
    LayoutError,
    LimitExceededError,
    ShardkitError,
    TruncatedError,
    UnsupportedVersionError,
)
from shardkit.formats.amudai import AmudaiShard, DataRefInfo
from shardkit.hashing.amudai import checksum
from shardkit.writers.amudai import FRAME, AnyValueBytes, build_amudai, field, write_amudai

SCHEMA = [field("a", "Int64"), field("s", "String", dictionary=True), field("b", "Boolean"),
          field("l", "List", field("item", "Int32"))]
ROWS = {"a": [1, None, 3], "s": ["x", None, "y"], "b": [True, None, False],
        "l": [[1], None, [2, 3]]}


def shard() -> bytes:
    return build_amudai(SCHEMA, [ROWS], properties={"p": 1})


def read_all(data: bytes) -> None:
    s = shardkit.open(data, format="amudai")
    s.properties  # noqa: B018 - reading is the point
    s.urls  # noqa: B018
    for f in s.schema:
        s.read_column(f.name)
    for sid in range(s.schema_id_count):
        s.field_descriptor(sid)


def flip(data: bytes, offset: int) -> bytes:
    out = bytearray(data)
    out[offset] ^= 0x40
    return bytes(out)


def regions(data: bytes) -> dict[str, int]:
    """A byte inside each checksummed region, from the file's own map."""
    s = shardkit.open(data)
    out = {}
    for sec in s.sections():
        if sec.name in ("/header", "/footer", "/len_directory"):
            continue
        buffer = sec.name.startswith("/stripes/") and not sec.name.endswith(
            ("/descriptor", "/field_list", "/properties"))
        # a buffer's first block (or a dictionary's header) is checksummed; its block map is not
        out.setdefault(sec.name, sec.start + 1 if buffer else sec.start + sec.size // 2)
    return out


def test_every_checksummed_region_detects_a_flipped_byte() -> None:
    data = shard()
    found = regions(data)
    assert {"/directory", "/schema", "/stripe_list", "/url_list", "/properties",
            "/stripes/0/fields/a/data", "/stripes/0/fields/s/value_dictionary",
            "/stripes/0/fields/l/offsets", "/stripes/0/fields/b/presence"} <= set(found)
    for name, offset in found.items():
        bad = flip(data, offset)
        if name == "/directory":
            with pytest.raises(ChecksumError) as info:
                shardkit.open(bad)
        else:
            with pytest.raises(ChecksumError) as info:
                read_all(bad)
        assert info.value.region, name
        assert info.value.stored != info.value.computed
        problems = [] if name == "/directory" else shardkit.open(bad).verify()
        if name != "/directory":
            assert any(p.check == "checksum" for p in problems), (name, problems)


def test_checksum_error_names_the_region() -> None:
    data = shard()
    offset = regions(data)["/schema"]
    with pytest.raises(ChecksumError, match="schema") as info:
        shardkit.open(flip(data, offset)).schema  # noqa: B018
    assert info.value.field == "/schema/checksum"


def test_dictionary_section_checksums() -> None:
    data = shard()
    s = shardkit.open(data)
    sfd = s.stripe_field(0, s.field("s").schema_id)
    ref = next(b for b in sfd.encodings[0].native.buffers if b.kind == spb.VALUE_DICTIONARY)
    start = ref.buffer.range.start
    head = struct.unpack_from("<BIBIIQQQQQQ", data, start)
    for lo, name in ((head[5], "values"), (head[9], "sorted_ids"), (start - start, "header")):
        with pytest.raises(ChecksumError, match=name):
            shardkit.open(flip(data, start + lo + 8 if name != "header" else start + 1)
                          ).read_column("s")


@pytest.mark.parametrize("cut", [1, 4, 8, 12, 20, 100])
def test_truncation(cut: int) -> None:
    data = shard()
    with pytest.raises(ShardkitError) as info:
        read_all(data[:-cut])
    assert isinstance(info.value, (TruncatedError, BadMagicError, LayoutError, ChecksumError))
    with pytest.raises(TruncatedError) as info:  # detected by the header, cut at the end
        shardkit.open(data[:-cut])
    assert info.value.field == "/footer/magic"


def test_tiny_file() -> None:
    with pytest.raises(TruncatedError):
        AmudaiShard(shardkit.BytesSource(FRAME + FRAME))


def test_bad_footer() -> None:
    data = bytearray(shard())
    data[-8:-4] = b"xmud"
    with pytest.raises(TruncatedError) as info:
        shardkit.open(bytes(data), format="amudai")
    assert info.value.field == "/footer/magic"


def test_newer_major_version() -> None:
    data = bytearray(shard())
    data[7] = 1
    with pytest.raises(UnsupportedVersionError):
        shardkit.open(bytes(data))


def rewrite_directory(data: bytes, change: Callable[[spb.ShardDirectory], None]) -> bytes:
    """The shard with its directory re-encoded after ``change`` (old record left in place)."""
    (length,) = struct.unpack_from("<I", data, len(data) - 12)
    start = len(data) - 12 - length - 8
    d = spb.ShardDirectory()
    d.ParseFromString(data[start + 4 : start + 4 + length])
    change(d)
    payload = d.SerializeToString()
    body = data[:-12]
    return (body + struct.pack("<I", len(payload)) + payload
            + struct.pack("<I", checksum(payload)) + struct.pack("<I", len(payload)) + FRAME)


def test_dataref_past_end_of_file() -> None:
    def past(d: spb.ShardDirectory) -> None:
        d.schema_ref.range.end = 10**9

    with pytest.raises(LayoutError, match="past the end") as info:
        shardkit.open(rewrite_directory(shard(), past)).schema  # noqa: B018
    assert info.value.field == "/schema"


@pytest.mark.parametrize("url", ["../other.amudai.shard", "/etc/passwd", "s3://bucket/x",
                                 "sub/../../x.amudai.stripe"])
def test_escaping_urls_are_refused(url: str) -> None:
    def escape(d: spb.ShardDirectory) -> None:
        d.stripe_list_ref.url = url

    s = shardkit.open(rewrite_directory(shard(), escape))
    with pytest.raises(LayoutError, match="allow_external"):
        s.stripes  # noqa: B018


def test_allow_external_opt_in(tmp_path: Path) -> None:
    inner = tmp_path / "inner"
    inner.mkdir()
    root = inner / "r.amudai.shard"
    write_amudai(root, SCHEMA, [ROWS], two_level=True)
    other = tmp_path / "o.amudai.shard"
    write_amudai(other, SCHEMA, [ROWS])
    # point the stripe list at the other shard's identical bytes, outside the folder
    data = root.read_bytes()
    s = shardkit.open(data)
    ref = s.directory.stripe_list_ref.range
    blob = other.read_bytes()
    bad = rewrite_directory(data, lambda d: setattr(d.stripe_list_ref, "url", "../o.x"))
    (inner / "bad.amudai.shard").write_bytes(bad)
    (tmp_path / "o.x").write_bytes(data[: ref.end] + blob[: 0])
    with pytest.raises(LayoutError):
        shardkit.open(inner / "bad.amudai.shard").stripes  # noqa: B018
    opened = shardkit.open(inner / "bad.amudai.shard", allow_external=True)
    assert len(opened.stripes) == 1


def test_missing_stripe_file(tmp_path: Path) -> None:
    paths = write_amudai(tmp_path / "m.amudai.shard", SCHEMA, [ROWS], two_level=True)
    paths[1].unlink()
    with pytest.raises(LayoutError, match="cannot open"):
        shardkit.open(paths[0]).read_column("a")


def test_deeply_nested_any_value() -> None:
    def wrap(inner: bytes) -> bytes:  # AnyValue{list_value{elements: [inner]}}
        el = b"\x0a" + _varint(len(inner)) + inner
        return b"\xa2\x01" + _varint(len(el)) + el

    value = b"\x0a\x00"
    for _ in range(10_000):
        value = wrap(value)
    data = build_amudai(SCHEMA, [ROWS], properties={"deep": AnyValueBytes(value)})
    s = shardkit.open(data)
    with pytest.raises(LimitExceededError, match="nested"):
        s.properties  # noqa: B018
    assert [p.check for p in s.verify()] == ["properties"]
    shallow = b"\x0a\x00"
    for _ in range(70):
        shallow = wrap(shallow)
    s = shardkit.open(build_amudai(SCHEMA, [ROWS], properties={"d": AnyValueBytes(shallow)}))
    with pytest.raises(LimitExceededError):
        s.properties  # noqa: B018


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes(out + bytes([n]))


def test_unsupported_block_encoding_names_the_code() -> None:
    data = bytearray(build_amudai([field("a", "Int64")], [{"a": [5, 6, 7]}]))
    s = shardkit.open(bytes(data))
    start = s.stripe_field(0, 0).encodings[0].native.buffers[0].buffer.range.start
    assert struct.unpack_from("<H", data, start + 8)[0] == 1
    struct.pack_into("<H", data, start + 8, 12)  # ALP
    block_len = 8 + 2 + 24
    block_len += (-(block_len + 4)) % 8
    covered = bytes(data[start : start + block_len])
    struct.pack_into("<I", data, start + block_len, checksum(covered))
    with pytest.raises(UnsupportedVersionError, match=r"encoding 12 \(ALP\)"):
        shardkit.open(bytes(data)).read_column("a")


def test_bundled_samples_verify_clean() -> None:
    for path in sorted(DATA.glob("*.amudai.shard")):
        assert shardkit.open(path).verify() == [], path


def test_record_length_mismatch() -> None:
    data = bytearray(shard())
    s = shardkit.open(bytes(data))
    ref = s.directory.url_list_ref.range
    struct.pack_into("<I", data, ref.start, struct.unpack_from("<I", data, ref.start)[0] + 1)
    with pytest.raises((LayoutError, TruncatedError)):
        shardkit.open(bytes(data)).urls  # noqa: B018


def values_of(data: bytes) -> dict[str, object]:
    """Everything ``read_all`` reads, as values."""
    s = shardkit.open(data, format="amudai")
    return {"properties": s.properties, "urls": s.urls,
            **{f"column {f.name}": s.read_column(f.name) for f in s.schema}}


def test_fuzzed_bytes_never_escape() -> None:
    """Each flipped byte gives an error, or a problem from verify, or the same values."""
    data = shard()
    want = values_of(data)
    outcomes = {"error": 0, "problem": 0, "unchanged": 0}
    for offset in range(8, len(data) - 8, 7):
        bad = flip(data, offset)
        try:
            read_all(bad)
            got = values_of(bad)
            problems = shardkit.open(bad).verify()
        except ShardkitError:
            outcomes["error"] += 1
            continue
        if problems:
            outcomes["problem"] += 1
            continue
        assert got == want, f"byte {offset} flipped: other values and verify() is clean"
        outcomes["unchanged"] += 1
    assert outcomes["error"] + outcomes["problem"] > 0


def test_opening_a_stripe_file_says_to_open_the_root() -> None:
    stripe = next((Path(__file__).parent / "data" / "amudai").glob("*.amudai.stripe"))
    with pytest.raises(shardkit.FormatError, match="stripe data file"):
        shardkit.open(stripe)


def _record(msg: object) -> bytes:
    payload = msg.SerializeToString()  # type: ignore[attr-defined]
    return struct.pack("<I", len(payload)) + payload + struct.pack("<I", checksum(payload))


def restripe(data: bytes, stripes: int, positions: int, total: int | None = None) -> bytes:
    """``data`` (one stripe, column 0 constant) as ``stripes`` copies of its stripe, each of
    ``positions`` records sharing one descriptor, and a directory claiming ``total`` records
    (default: what the stripes hold). Every record is framed and checksummed."""
    from shardkit.generated import amudai_common_pb2 as cpb

    s = shardkit.open(data)
    d = spb.ShardDirectory()
    d.CopyFrom(s.directory)
    body = bytearray(data[: s.directory_ref.start])

    def append(msg: object) -> tuple[int, int]:
        start = len(body)
        body.extend(_record(msg))
        return start, len(body)

    def read(ref: object, cls: type) -> object:
        msg = cls()
        msg.ParseFromString(bytes(body[ref.range.start + 4 : ref.range.end - 4]))
        return msg

    sl = read(d.stripe_list_ref, spb.StripeList)
    st0 = sl.stripes[0]
    fl = read(st0.field_list_ref, cpb.DataRefArray)
    sfd = spb.StripeFieldDescriptor()
    sfd.ParseFromString(bytes(body[fl.start[0] + 4 : fl.end[0] - 4]))
    assert sfd.field.HasField("constant_value")
    sfd.field.position_count = positions
    fl.start[0], fl.end[0] = append(sfd)
    fl_range = append(fl)
    new = spb.StripeList()
    for k in range(stripes):
        x = new.stripes.add()
        x.CopyFrom(st0)
        x.field_list_ref.range.start, x.field_list_ref.range.end = fl_range
        x.total_record_count = positions
        x.shard_position = k * positions
    d.stripe_list_ref.range.start, d.stripe_list_ref.range.end = append(new)
    d.total_record_count = stripes * positions if total is None else total
    d.stripe_count = stripes
    payload = d.SerializeToString()
    return (bytes(body) + _record(d) + struct.pack("<I", len(payload)) + FRAME)


def rewrite_stripe_field(data: bytes, sid: int,
                         change: Callable[[spb.StripeFieldDescriptor], None]) -> bytes:
    """``data`` (one stripe) with stripe 0's descriptor of schema id ``sid`` re-encoded after
    ``change``: new descriptor, field list, stripe list and directory records appended."""
    from shardkit.generated import amudai_common_pb2 as cpb

    s = shardkit.open(data)
    d = spb.ShardDirectory()
    d.CopyFrom(s.directory)
    body = bytearray(data[: s.directory_ref.start])

    def append(msg: object) -> tuple[int, int]:
        start = len(body)
        body.extend(_record(msg))
        return start, len(body)

    sl = s._record(DataRefInfo.of(d.stripe_list_ref), "", spb.StripeList, "", 0)
    fl = s._record(s.stripes[0].field_list, "", cpb.DataRefArray, "", 0)
    sfd = s.stripe_field(0, sid)
    change(sfd)
    fl.start[sid], fl.end[sid] = append(sfd)
    ref = sl.stripes[0].field_list_ref.range
    ref.start, ref.end = append(fl)
    d.stripe_list_ref.range.start, d.stripe_list_ref.range.end = append(sl)
    payload = d.SerializeToString()
    return bytes(body) + _record(d) + struct.pack("<I", len(payload)) + FRAME


def test_block_stream_checks_agree_for_columns_and_rows() -> None:
    """A missing block_map was UnsupportedVersionError for read_column but LayoutError for a
    row; a wrong block_count was refused by read_column, while s[0] read the value."""
    data = build_amudai([field("a", "Int64")], [{"a": [5, 6, 7]}])
    nomap = shardkit.open(rewrite_stripe_field(data, 0, lambda f: f.encodings[0].native
                                               .buffers[0].ClearField("block_map")))
    count = shardkit.open(rewrite_stripe_field(data, 0, lambda f: setattr(
        f.encodings[0].native.buffers[0], "block_count", 7)))
    for s, cls, field_path in ((nomap, UnsupportedVersionError, "/data/block_map"),
                               (count, LayoutError, "/data/block_count")):
        for read in (lambda s=s: s.read_column("a"), lambda s=s: s[0],
                     lambda s=s: s.rows(1, 2), lambda s=s: s.read_array("a")):
            with pytest.raises(cls) as info:
                read()
            assert info.value.field == "/stripes/0/fields/a" + field_path
        assert s.verify()


def test_unbacked_positions_are_counted_across_stripes() -> None:
    """40 stripes sharing one constant descriptor of 16 Mi positions: a ~1 KB file once made
    read_column fill 671M values (each stripe was within the cap on its own)."""
    import time

    data = restripe(build_amudai([field("c", "Int64")], [{"c": [7, 7]}]), 40, 1 << 24)
    assert len(data) < 4096
    s = shardkit.open(data)
    for read in (lambda: s.read_column("c"), lambda: s.read_array("c")):
        t = time.monotonic()
        with pytest.raises(LimitExceededError, match="one read") as info:
            read()
        assert info.value.field == "/stripes/1/fields/c"
        assert time.monotonic() - t < 10
    small = shardkit.open(restripe(build_amudai([field("c", "Int64")], [{"c": [7, 7]}]), 3, 5))
    assert small.read_column("c") == [7] * 15 and small.rows(4, 6) == [{"c": 7}, {"c": 7}]


def test_rows_count_unbacked_positions_across_stripes(monkeypatch: pytest.MonkeyPatch) -> None:
    import shardkit.formats.amudai.columns as columns

    monkeypatch.setattr(columns, "MAX_UNBACKED_POSITIONS", 100)
    monkeypatch.setattr(columns, "UNBACKED_PER_BYTE", 0)
    s = shardkit.open(restripe(build_amudai([field("c", "Int64")], [{"c": [7, 7]}]), 5, 30))
    assert s.rows(0, 100) == [{"c": 7}] * 100
    with pytest.raises(LimitExceededError, match="one read") as info:
        s.rows(0, 150)
    assert info.value.field == "/stripes/3/fields/c"


def test_unbacked_positions_allowed_per_byte_of_the_file(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the fixed cap, a shard may fill UNBACKED_PER_BYTE positions per byte of its file:
    a large real shard with all-null or constant columns still reads them whole."""
    import shardkit.formats.amudai.columns as columns

    data = restripe(build_amudai([field("c", "Int64")], [{"c": [7, 7]}]), 5, 30)
    monkeypatch.setattr(columns, "MAX_UNBACKED_POSITIONS", 100)
    monkeypatch.setattr(columns, "UNBACKED_PER_BYTE", 1)
    s = shardkit.open(data)
    assert len(data) >= 150
    assert s.rows(0, 150) == [{"c": 7}] * 150 and s.read_column("c") == [7] * 150
    monkeypatch.setattr(columns, "UNBACKED_PER_BYTE", 0)
    with pytest.raises(LimitExceededError, match="one read"):
        s.read_column("c")


@pytest.mark.parametrize("total", [16_000_000, 1, 0])
def test_rows_refuse_a_directory_count_the_stripes_do_not_hold(total: int) -> None:
    """A directory claiming 16M records over a 3-record stripe once gave 16M rows of {}."""
    s = shardkit.open(rewrite_directory(shard(), lambda d: setattr(d, "total_record_count",
                                                                    total)))
    for read in (lambda: s.rows(), lambda: s[100], lambda: s[0], lambda: s[0:2],
                 lambda: s.read_column("a"), lambda: s.read_array("a")):
        with pytest.raises(LayoutError, match="the stripes hold 3") as info:
            read()
        assert info.value.field == "/directory/total_record_count"
    assert [p.field for p in s.verify() if p.check == "count"] == \
        ["/directory/total_record_count"]


@pytest.mark.parametrize("url", ["x\x00y.amudai.stripe", "x\ny", "\x7f"])
def test_control_characters_in_a_dataref_url(tmp_path: Path, url: str) -> None:
    """A NUL byte in a url once escaped as a raw ValueError ("embedded null byte")."""
    path = tmp_path / "c.amudai.shard"
    path.write_bytes(rewrite_directory(shard(), lambda d: setattr(d.stripe_list_ref, "url",
                                                                  url)))
    s = shardkit.open(path)
    with pytest.raises(LayoutError, match="control characters") as info:
        s.stripes  # noqa: B018
    assert info.value.field == "/stripe_list"
    problems = s.verify()
    assert [(p.check, p.field) for p in problems] == [("stripe_list", "/stripe_list")]


@pytest.mark.parametrize("stripe", [5, -1, 1, "0", 0.0, True, None])
def test_stripe_numbers_out_of_range_are_invalid_keys(stripe: object) -> None:
    """descriptor("a", 5) and stripe_properties(5) once raised a raw IndexError, and
    descriptor("a", -1) quietly answered for the last stripe."""
    s = shardkit.open(shard())  # one stripe
    assert len(s.stripes) == 1 and s.descriptor("a", 0) is not None
    calls = [lambda: s.stripe_properties(stripe), lambda: s.stripe_indexes(stripe),
             lambda: s.stripe_field(stripe, 0)]
    if stripe is not None:  # descriptor(path, None) is the shard-level descriptor
        calls.append(lambda: s.descriptor("a", stripe))
    for call in calls:
        with pytest.raises(InvalidKeyError, match="no stripe"):
            call()
    import numpy as np

    assert s.descriptor("a", np.int64(0)) == s.descriptor("a", 0)


@pytest.mark.parametrize("length", [1 << 24, 0xFFFFFFFF])
def test_directory_length_past_the_format_cap(length: int) -> None:
    """len_directory is read, and capped, by the generated parser (schemas/amudai_shard.ksy)."""
    data = bytearray(shard())
    struct.pack_into("<I", data, len(data) - 12, length)
    with pytest.raises(LimitExceededError, match=f"directory length {length} exceeds") as info:
        shardkit.open(bytes(data))
    assert (info.value.offset, info.value.field) == (len(data) - 12, "/len_directory")
    struct.pack_into("<I", data, len(data) - 12, (1 << 24) - 1)  # within the cap, too long
    with pytest.raises(LayoutError, match="does not fit"):
        shardkit.open(bytes(data))


@pytest.mark.parametrize("codec", ["lz4", "zstd"])
def test_running_out_of_memory_while_decompressing_is_not_corrupt_data(codec: str,
                                                                        monkeypatch) -> None:
    """A codec that refuses the bytes means corrupt data (LayoutError, its error chained);
    a MemoryError (or a bug) is not corrupt data and propagates as itself."""
    import lz4.block
    import zstandard

    from shardkit.formats.amudai import blocks

    raw = bytes(range(256)) * 8
    packed = (struct.pack("<I", len(raw)) + lz4.block.compress(raw, store_size=False)
              if codec == "lz4" else zstandard.ZstdCompressor().compress(raw))
    code = blocks.LZ4 if codec == "lz4" else next(c for c, n in blocks.ENCODING_NAMES.items()
                                                  if n.lower().startswith("zstd"))
    assert blocks._decompress(code, memoryview(packed), len(raw), base=0, field="/b") == raw
    bad = packed[: len(packed) // 2]  # cut in the middle of its sequences
    with pytest.raises(LayoutError, match="does not decompress") as info:
        blocks._decompress(code, memoryview(bad), len(raw), base=0, field="/b")
    assert info.value.__cause__ is not None

    def no_memory(*args, **kwargs):
        raise MemoryError

    if codec == "lz4":
        monkeypatch.setattr(lz4.block, "decompress", no_memory)
    else:
        monkeypatch.setattr(zstandard.ZstdDecompressor, "decompress", no_memory)
    with pytest.raises(MemoryError):
        blocks._decompress(code, memoryview(packed), len(raw), base=0, field="/b")


@pytest.mark.parametrize("kind", ["FixedSizeBinary", "FixedSizeList"])
def test_a_fixed_size_arrow_cannot_hold_is_refused_on_open(kind: str) -> None:
    """A schema's uint64 fixed_size past int32 (Arrow's width) names the field, never
    an OverflowError from pyarrow (found by the fuzz smoke)."""
    kids = (field("item", "Int32"),) if kind == "FixedSizeList" else ()
    spec = field("g", kind, *kids, fixed_size=4)
    with pytest.raises(ValueError, match="fixed_size"):
        field("g", kind, *kids, fixed_size=2**31)
    object.__setattr__(spec, "fixed_size", 2**40)  # past the writer's own check
    data = build_amudai([spec], [{"g": []}])
    with pytest.raises(LayoutError) as err:
        shardkit.open(data, format="amudai").to_arrow()
    assert err.value.field == "/schema/g/fixed_size"
    assert "1099511627776" in str(err.value)
