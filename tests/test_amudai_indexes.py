"""Amudai: index descriptors (shard, stripe, field), nested shard artifacts, the hop bound, and
Roaring presence sections built by hand (FORMAT_NOTES.md 2.2, 4.2, 7)."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from amudai_samples import DATA, INDEXED_STRIPES
from shardkit.generated import amudai_shard_pb2 as spb

import shardkit
import shardkit.writers.amudai as amudai_writer
import shardkit.writers.amudai_nodes as amudai_nodes
from shardkit.cli import main
from shardkit.errors import (
    BadMagicError,
    ChecksumError,
    LayoutError,
    LimitExceededError,
    ShardkitError,
    TruncatedError,
)
from shardkit.formats.amudai import AmudaiIndex, AmudaiShard, HopLimitError
from shardkit.formats.amudai.blocks import roaring_positions
from shardkit.hashing.amudai import checksum
from shardkit.writers.amudai import (
    FRAME,
    ArtifactSpec,
    IndexSpec,
    build_amudai,
    build_amudai_files,
    field,
    roaring_bitmap,
    write_amudai,
)

SCHEMA = [field("id", "Int64"), field("doc", "Struct", field("text", "String")),
          field("n", "Int32")]
ROWS = {"id": [1, None, 3], "doc": [{"text": "a b"}, None, {"text": "c"}], "n": [7, 8, 9]}
TERMS = build_amudai([field("term", "String"), field("count", "Int64")],
                     [{"term": ["a", "b", "c"], "count": [1, 1, 1]}])


def indexed_files() -> dict[str, bytes]:
    """Indexes at every level; artifacts inside the root, beside it, and opaque bytes."""
    return build_amudai_files(
        SCHEMA, [ROWS, ROWS], two_level=False, root_name="ix.amudai.shard",
        indexes=[IndexSpec(
            "inverted-term-index-v1", ("doc.text", (1, 2)),
            (ArtifactSpec("terms", TERMS, properties={"pages": 1}),
             ArtifactSpec("positions", TERMS, url="ix-positions.amudai.shard")),
            {"tokenizer": "word"}, 2 * len(TERMS))],
        stripe_indexes=[[], None],
        field_indexes={"id": [IndexSpec("hashmap-index", ("id",),
                                        (ArtifactSpec("part0", b"opaque bytes" * 4),))]},
        stripe_field_indexes=[None, {"doc.text": [IndexSpec("trivial", ((2,),))]}])


@pytest.fixture
def indexed(tmp_path: Path) -> AmudaiShard:
    for name, data in indexed_files().items():
        (tmp_path / name).write_bytes(data)
    return shardkit.open(tmp_path / "ix.amudai.shard")


# --- index descriptors ---------------------------------------------------------------------


def test_no_indexes_by_default() -> None:
    s = shardkit.open(build_amudai(SCHEMA, [ROWS]))
    assert not s.directory.HasField("indexes_ref")
    assert s.indexes == () and s.stripes[0].indexes == ()
    assert s.descriptor("id").indexes == () and s.descriptor("id", 0).indexes == ()
    assert s.to_dict()["indexes"] == []


def test_shard_level_indexes(indexed: AmudaiShard) -> None:
    (ix,) = indexed.indexes
    assert isinstance(ix, AmudaiIndex)
    assert ix.index_type == "inverted-term-index-v1"
    assert ix.indexed_fields == ((2,), (1, 2))  # "doc.text" is schema id 2
    assert ix.properties == {"tokenizer": "word"} and ix.index_size == 2 * len(TERMS)
    terms, positions = ix.artifacts
    assert terms.name == "terms" and terms.properties == {"pages": 1}
    assert terms.data_ref.url == "" and terms.data_ref.end - terms.data_ref.start == len(TERMS)
    assert terms.data_ref.start % 64 == 0
    assert positions.data_ref.url == "ix-positions.amudai.shard"
    assert (positions.data_ref.start, positions.data_ref.end) == (0, len(TERMS))
    assert terms.path == "/indexes/0/artifacts/0" and terms.hops == 2
    assert "ix-positions.amudai.shard" in indexed.urls  # every url the shard uses


def test_stripe_level_indexes_absent_and_empty(indexed: AmudaiShard) -> None:
    s0, s1 = indexed.stripes
    assert not s0.indexes_ref.empty and s0.indexes == ()  # an empty IndexCollection record
    assert s0.indexes_ref.end - s0.indexes_ref.start == 8
    assert s1.indexes_ref.empty and s1.indexes == ()  # no indexes_ref at all
    assert indexed.stripe_indexes(0) == ()


def test_field_level_indexes_on_descriptor_objects(indexed: AmudaiShard) -> None:
    d = indexed.descriptor("id")
    (ix,) = d.indexes
    assert ix.index_type == "hashmap-index" and ix.indexed_fields == ((0,),)
    assert ix.path == "/field_list/0/indexes/0" and ix.artifacts[0].hops == 3
    assert d.message.HasField("indexes")
    assert indexed.descriptor("doc.text", 0).indexes == ()
    (trivial,) = indexed.descriptor("doc.text", 1).indexes
    assert trivial.index_type == "trivial" and trivial.artifacts == ()
    assert trivial.path == "/stripes/1/field_list/2/indexes/0"


def test_descriptor_objects_carry_statistics_and_buffers(indexed: AmudaiShard) -> None:
    d = indexed.descriptor("id")
    assert d.stripe is None and d.position_count == 6 and d.null_count == 2
    assert d.range_stats == {"min_value": 1, "min_inclusive": True, "max_value": 3,
                             "max_inclusive": True}
    assert d.encodings == ()
    t = indexed.descriptor("doc.text", 0)
    assert t.stats_kind == "string_stats" and t.stats["max_size"] == 3
    (enc,) = t.encodings
    assert enc.kind == "native" and [b.kind for b in enc.buffers] == ["DATA"]
    assert enc.buffers[0].embedded_offsets and enc.buffers[0].block_count == 1
    n = indexed.descriptor("n", 1)
    assert not n.is_constant and n.to_dict()["encodings"][0]["buffers"][0]["kind"] == "DATA"


def test_indexes_in_dump_and_map(indexed: AmudaiShard, capsys: pytest.CaptureFixture[str]
                                 ) -> None:
    tree = indexed.to_dict()
    assert tree["indexes"][0]["artifacts"][1]["data_ref"]["url"] == "ix-positions.amudai.shard"
    assert tree["field_descriptors"]["id"]["indexes"][0]["index_type"] == "hashmap-index"
    assert tree["stripes"][0]["indexes"] == [] and tree["stripes"][1]["indexes"] == []
    assert tree["stripes"][1]["fields"]["doc.text"]["field"]["indexes"][0]["indexed_fields"] \
        == [[2]]
    names = {s.name for s in indexed.sections()}
    assert {"/indexes", "/stripes/0/indexes", "/indexes/0/artifacts/0",
            "/field_list/0/indexes/0/artifacts/0"} <= names
    assert main(["dump", str(indexed.source.name)]) == 0
    dumped = json.loads(capsys.readouterr().out)
    assert dumped["indexes"][0]["index_type"] == "inverted-term-index-v1"


def test_verify_covers_indexes(indexed: AmudaiShard) -> None:
    assert indexed.verify() == []


def test_open_artifact_nested_shards(indexed: AmudaiShard) -> None:
    terms, positions = indexed.indexes[0].artifacts
    for art in (terms, positions):
        nested = indexed.open_artifact(art)
        assert nested.read_column("term") == ["a", "b", "c"]
        url = f": {art.data_ref.url}" if art.data_ref.url else ""
        assert nested.reference_chain == (f"{art.path} ({art.name}{url})",)
        assert nested.verify() == []
    with pytest.raises(BadMagicError):  # opaque bytes are no shard
        indexed.open_artifact(indexed.descriptor("id").indexes[0].artifacts[0])


def index_record_offset(data: bytes) -> int:
    return shardkit.open(data).directory.indexes_ref.range.start


def test_index_record_checksum() -> None:
    data = bytearray(indexed_files()["ix.amudai.shard"])
    start = index_record_offset(bytes(data))
    data[start + 6] ^= 0x01
    s = shardkit.open(bytes(data))
    with pytest.raises(ChecksumError, match="index collection") as info:
        s.indexes  # noqa: B018
    assert info.value.field == "/indexes/checksum"
    assert [p.check for p in s.verify()] == ["checksum"]


def test_corrupt_nested_artifact_is_reported_with_its_path(tmp_path: Path) -> None:
    files = indexed_files()
    root = bytearray(files["ix.amudai.shard"])
    ref = shardkit.open(bytes(root)).indexes[0].artifacts[0].data_ref
    nested = shardkit.open(TERMS)
    schema_at = nested.directory.schema_ref.range.start
    root[ref.start + schema_at + 6] ^= 0x01  # inside the nested shard's schema payload
    files["ix.amudai.shard"] = bytes(root)
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    problems = shardkit.open(tmp_path / "ix.amudai.shard").verify()
    assert [(p.check, p.field) for p in problems] == [
        ("checksum", "/indexes/0/artifacts/0/schema/checksum")]
    # the nested schema record's checksum (its last 4 bytes), counted in the root file
    assert problems[0].offset == ref.start + nested.directory.schema_ref.range.end - 4
    assert "in index artifact /indexes/0/artifacts/0 (terms)" in problems[0].message


def test_artifact_out_of_bounds_and_bad_schema_ids() -> None:
    data = build_amudai(SCHEMA, [ROWS], indexes=[
        IndexSpec("x", ((1, 99),), (ArtifactSpec("far", range=(0, 10**9)),)),
        IndexSpec("y", ((),))])
    problems = shardkit.open(data).verify()
    assert sorted((p.check, p.field) for p in problems) == [
        ("index", "/indexes/0/artifacts/0"), ("index", "/indexes/0/indexed_fields"),
        ("index", "/indexes/1/indexed_fields")]


def test_artifact_urls_obey_the_folder_rule(tmp_path: Path) -> None:
    data = build_amudai(SCHEMA, [ROWS], indexes=[IndexSpec("x", (), (
        ArtifactSpec("up", url="../elsewhere.amudai.shard", range=(0, 100)),))])
    (tmp_path / "r.amudai.shard").write_bytes(data)
    s = shardkit.open(tmp_path / "r.amudai.shard")
    with pytest.raises(LayoutError, match="allow_external"):
        s.open_artifact(s.indexes[0].artifacts[0])
    assert [p.check for p in s.verify()] == ["index"]


def test_writer_rejects_bad_index_arguments() -> None:
    with pytest.raises(ValueError, match="no such field"):
        build_amudai(SCHEMA, [ROWS], field_indexes={"nope": []})
    with pytest.raises(ValueError, match="not in the schema"):
        build_amudai(SCHEMA, [ROWS], indexes=[IndexSpec("x", ("nope",))])
    with pytest.raises(ValueError, match="free file name"):
        build_amudai_files(SCHEMA, [ROWS], root_name="r.amudai.shard", indexes=[
            IndexSpec("x", (), (ArtifactSpec("a", b"x", url="r.amudai.shard"),))])
    with pytest.raises(ValueError, match="2 stripes"):
        build_amudai(SCHEMA, [ROWS, ROWS], stripe_indexes=[None])


# --- the hop bound -------------------------------------------------------------------------


def _record(payload: bytes) -> bytes:
    return struct.pack("<I", len(payload)) + payload + struct.pack("<I", checksum(payload))


def self_referencing_shard() -> bytes:
    """A shard whose only index artifact is the whole shard itself: an endless chain.

    Made by editing protobuf bytes: a new IndexCollection record and a new directory (with
    ``indexes_ref``) are appended, checksums computed with the hashing module. DataRef ranges
    are fixed64, so the file size does not depend on the range written into it.
    """
    data = build_amudai([field("a", "Int64")], [{"a": [1, 2, 3]}])
    (length,) = struct.unpack_from("<I", data, len(data) - 12)
    start = len(data) - 12 - length - 8
    directory = spb.ShardDirectory.FromString(data[start + 4 : start + 4 + length])
    body = data[:-12]  # the old directory record stays, unreferenced

    def build(total: int) -> bytes:
        coll = spb.IndexCollection()
        art = coll.index_descriptors.add(index_type="loop").artifacts.add(name="self")
        art.data_ref.range.start, art.data_ref.range.end = 0, total
        rec = _record(coll.SerializeToString())
        directory.indexes_ref.range.start = len(body)
        directory.indexes_ref.range.end = len(body) + len(rec)
        payload = directory.SerializeToString()
        return body + rec + _record(payload) + struct.pack("<I", len(payload)) + FRAME

    size = len(build(1 << 40))
    out = build(size)
    assert len(out) == size
    return out


def test_reference_cycle_ends_in_a_hop_limit() -> None:
    s = shardkit.open(self_referencing_shard())
    assert s.max_hops == 16
    assert s.read_column("a") == [1, 2, 3]
    assert s.open_artifact(s.indexes[0].artifacts[0]).read_column("a") == [1, 2, 3]
    opened = 0
    with pytest.raises(LimitExceededError) as info:
        while True:
            s = s.open_artifact(s.indexes[0].artifacts[0])
            opened += 1
    assert isinstance(info.value, HopLimitError)
    assert opened == 8  # each nesting costs 2 hops (directory -> indexes -> artifact)
    message = info.value.message
    assert "exceeds max_hops=16" in message
    assert message.startswith("reference chain of 17 DataRef hops")
    assert message.count("/indexes/0/artifacts/0 (self)") == 8
    assert message.endswith("/directory -> /indexes")


def test_reference_cycle_verify_terminates() -> None:
    problems = shardkit.open(self_referencing_shard()).verify()
    assert [p.check for p in problems] == ["hops"]
    assert "max_hops=16" in problems[0].message
    assert problems[0].field.count("/indexes/0/artifacts/0") == 7


def test_long_chain_of_files(tmp_path: Path) -> None:
    """A finite chain of distinct files, c0 -> c1 -> ... -> c9, longer than the bound."""
    write_amudai(tmp_path / "c9.amudai.shard", [field("a", "Int64")], [{"a": [9]}])
    for i in range(8, -1, -1):
        nxt = f"c{i + 1}.amudai.shard"
        write_amudai(tmp_path / f"c{i}.amudai.shard", [field("a", "Int64")], [{"a": [i]}],
                     indexes=[IndexSpec("next", (), (
                         ArtifactSpec("next", url=nxt,
                                      range=(0, (tmp_path / nxt).stat().st_size)),))])
    s = shardkit.open(tmp_path / "c0.amudai.shard", max_hops=10)
    seen = []
    with pytest.raises(HopLimitError) as info:
        while True:
            seen.append(s.read_column("a")[0])
            s = s.open_artifact(s.indexes[0].artifacts[0])
    # c_i's directory sits 2 i hops down, its buffers 2 i + 4: c4's descriptors are past 10
    assert seen == [0, 1, 2, 3]
    assert "(next: c4.amudai.shard) -> /directory -> /stripes/0/field_list/0" in \
        info.value.message
    s = shardkit.open(tmp_path / "c0.amudai.shard", max_hops=64)
    for _ in range(9):
        s = s.open_artifact(s.indexes[0].artifacts[0])
    assert s.read_column("a") == [9] and s.indexes == ()
    assert shardkit.open(tmp_path / "c0.amudai.shard", max_hops=64).verify() == []


def test_hop_counter_runs_through_one_shard() -> None:
    """directory -> stripe list -> field list -> descriptor -> buffer: 4 hops."""
    data = build_amudai(SCHEMA, [ROWS])
    assert shardkit.open(data, max_hops=4).read_column("id") == [1, None, 3]
    s = shardkit.open(data, max_hops=3)
    assert s.schema and s.stripes  # 1 hop
    with pytest.raises(HopLimitError) as info:
        s.read_column("id")
    assert info.value.message.endswith("/directory -> /stripes/0/fields/id/data/buffer")
    assert {p.check for p in s.verify()} == {"hops"}


def test_files_cap_is_shared_with_nested_shards(indexed: AmudaiShard) -> None:
    s = shardkit.open(indexed.source.name, max_files=1)
    nested = s.open_artifact(s.indexes[0].artifacts[1])  # opens ix-positions.amudai.shard
    assert nested._blobs.budget is s._blobs.budget and s._blobs.budget == [1]
    s.close()
    s = shardkit.open(indexed.source.name, max_files=0)
    with pytest.raises(LimitExceededError, match="more than 0 files"):
        s.open_artifact(s.indexes[0].artifacts[1])


# --- Roaring presence, by hand ---------------------------------------------------------------
#
# FORMAT_NOTES.md 4.2: presence section = 03, u8 negated, portable RoaringBitmap.
# negated = 1: the bitmap lists the null positions; negated = 0: the present positions.
# Portable format: u32 cookie 12346 (no run containers) then u32 container count; or
# u32 cookie 12347 | (count - 1) << 16 then a bitset of run containers; per container u16 key
# and u16 cardinality - 1; u32 container offsets (always with 12346, with 12347 only from 4
# containers on); then the containers (array: u16 each; bitmap: 8192 bytes; run: u16 count,
# then (u16 start, u16 length - 1) pairs).

NULLS_2_7 = bytes.fromhex(
    "03 01"         # Roaring presence, negated: the bitmap lists the nulls
    "3a300000"      # cookie 12346
    "01000000"      # 1 container
    "0000 0100"     # key 0, cardinality 2 (stored as 1)
    "10000000"      # container 0 starts 16 bytes into the bitmap
    "0200 0700")    # positions 2 and 7
PRESENT_0_5 = bytes.fromhex(
    "03 00"         # not negated: the bitmap lists the present positions
    "3a300000 01000000 0000 0100 10000000"
    "0000 0500")    # positions 0 and 5 present, 1..4 null
RUN_NULLS_3_TO_6 = bytes.fromhex(
    "03 01"
    "3b300000"      # cookie 12347, 1 container ((1 - 1) << 16)
    "01"            # run bitset: container 0 is a run container
    "0000 0300"     # key 0, cardinality 4; no offsets below 4 containers
    "0100"          # 1 run
    "0300 0300")    # start 3, length 4 (stored as 3): positions 3, 4, 5, 6


def bitmap_presence() -> tuple[bytes, int, list[int]]:
    """5000 values, present unless divisible by 10: 4500 present > 4096 -> a bitmap container."""
    bits = bytearray(8192)
    for i in range(5000):
        if i % 10:
            bits[i >> 3] |= 1 << (i & 7)
    head = bytes.fromhex("03 00 3a300000 01000000 0000") + struct.pack("<H", 4500 - 1) \
        + bytes.fromhex("10000000")
    return head + bytes(bits), 5000, list(range(0, 5000, 10))


CASES = {
    "array-negated": (NULLS_2_7, 10, [2, 7]),
    "array-present": (PRESENT_0_5, 6, [1, 2, 3, 4]),
    "run-negated": (RUN_NULLS_3_TO_6, 8, [3, 4, 5, 6]),
    "bitmap-present": bitmap_presence(),
}


def shard_with_presence(monkeypatch: pytest.MonkeyPatch, presence: bytes, n: int,
                        kind: str = "Int64") -> bytes:
    """A shard whose one block carries ``presence`` (the writer's presence step swapped out).

    Every value is written as present, so the only source of nulls is the hand-made section.
    """
    monkeypatch.setattr(amudai_writer, "_presence_section", lambda *args: presence)
    values = list(range(100, 100 + n)) if kind == "Int64" else [f"v{i}" for i in range(n)]
    data = build_amudai([field("c", kind)], [{"c": values}])
    monkeypatch.undo()
    return data


@pytest.mark.parametrize("case", sorted(CASES))
def test_roaring_presence_by_hand(monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    presence, n, nulls = CASES[case]
    data = shard_with_presence(monkeypatch, presence, n)
    s = shardkit.open(data)
    buf = s.stripe_field(0, 0).encodings[0].native.buffers[0]
    start = buf.buffer.range.start
    # the block: u32 presence_size, u32 values_size, the hand-made section, pad 8, values
    assert struct.unpack_from("<II", data, start) == (len(presence), 2 + 8 * n)
    assert data[start + 8 : start + 8 + len(presence)] == presence
    want = [None if i in nulls else 100 + i for i in range(n)]
    assert s.read_column("c") == want
    arr = s.read_array("c")
    assert arr.mask.nonzero()[0].tolist() == nulls
    assert s.verify() == []


def test_roaring_presence_in_a_string_block(monkeypatch: pytest.MonkeyPatch) -> None:
    s = shardkit.open(shard_with_presence(monkeypatch, PRESENT_0_5, 6, "String"))
    assert s.read_column("c") == ["v0", None, None, None, None, "v5"]


def test_writer_roaring_matches_the_hand_bytes() -> None:
    assert b"\x03\x01" + roaring_bitmap([7, 2]) == NULLS_2_7
    assert b"\x03\x00" + roaring_bitmap([0, 5]) == PRESENT_0_5
    bitmap, _, _ = bitmap_presence()
    assert b"\x03\x00" + roaring_bitmap(i for i in range(5000) if i % 10) == bitmap
    assert roaring_bitmap([]) == bytes.fromhex("3a300000 00000000")
    with pytest.raises(ValueError):
        roaring_bitmap([2**32])


def test_roaring_decoder_many_containers() -> None:
    # 12346, keys 0 and 1: positions 1 and 65536 + 2
    two = bytes.fromhex("3a300000 02000000 0000 0000 0100 0000 18000000 1a000000 0100 0200")
    assert roaring_positions(memoryview(two), base=0, field="").tolist() == [1, 65538]
    assert roaring_bitmap([1, 65538]) == two
    # 12347 with 4 containers: the offset header is present; containers 0 and 2 are runs
    four = (bytes.fromhex("3b300300" "05")
            + bytes.fromhex("0000 0100" "0100 0000" "0200 0200" "0300 0000")
            + bytes.fromhex("00000000" * 4)  # offsets (not needed to decode in order)
            + bytes.fromhex("0100 0a00 0100")  # key 0: 1 run, 10..11
            + bytes.fromhex("0700")  # key 1: array [7]
            + bytes.fromhex("0100 0000 0200")  # key 2: 1 run, 0..2
            + bytes.fromhex("ffff"))  # key 3: array [65535]
    got = roaring_positions(memoryview(four), base=0, field="").tolist()
    assert got == [10, 11, 65536 + 7, 2 * 65536, 2 * 65536 + 1, 2 * 65536 + 2, 4 * 65536 - 1]


def test_roaring_presence_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    past = NULLS_2_7[:-2] + struct.pack("<H", 10)  # position 10 of a 10-value block
    with pytest.raises(LayoutError, match="position 10"):
        shardkit.open(shard_with_presence(monkeypatch, past, 10)).read_column("c")
    truncated = NULLS_2_7[:-2]
    with pytest.raises(TruncatedError, match="roaring"):
        shardkit.open(shard_with_presence(monkeypatch, truncated, 10)).read_column("c")
    bad_cookie = NULLS_2_7[:2] + b"\x00\x00\x00\x00" + NULLS_2_7[6:]
    with pytest.raises(LayoutError, match="cookie"):
        shardkit.open(shard_with_presence(monkeypatch, bad_cookie, 10)).read_column("c")


@pytest.mark.parametrize("mode", ["roaring", "auto", "bytes"])
def test_writer_presence_modes_round_trip(mode: str) -> None:
    dense = [None if i in (5, 9000) else i for i in range(10_000)]  # 2 blocks, < 1 % nulls
    sparse = [float(i) if i in (3, 8191) else None for i in range(10_000)]  # > 99 % nulls
    half = [None if i % 2 else str(i) for i in range(300)] + [None] * 9_700
    data = build_amudai([field("d", "Int64"), field("s", "Float64"), field("h", "String")],
                        [{"d": dense, "s": sparse, "h": half}], presence=mode)
    s = shardkit.open(data)
    assert s.read_column("d") == dense and s.read_column("s") == sparse
    assert s.read_column("h") == half
    assert s.verify() == []
    kinds = {}
    for sid, name in enumerate("dsh"):
        start = s.stripe_field(0, sid).encodings[0].native.buffers[0].buffer.range.start
        kinds[name] = data[start + 8]  # first block's presence kind
    want = {"roaring": {"d": 3, "s": 3, "h": 3}, "auto": {"d": 3, "s": 3, "h": 2},
            "bytes": {"d": 2, "s": 2, "h": 2}}[mode]
    assert kinds == want
    if mode == "auto":
        start = s.stripe_field(0, 0).encodings[0].native.buffers[0].buffer.range.start
        assert data[start + 9] == 1  # few nulls: the nulls are listed (negated)
        start = s.stripe_field(0, 1).encodings[0].native.buffers[0].buffer.range.start
        assert data[start + 9] == 0  # few values: the present positions are listed


def test_unknown_presence_mode() -> None:
    with pytest.raises(ValueError, match="presence mode"):
        build_amudai(SCHEMA, [ROWS], presence="bits")


def _indexed_values(data: bytes) -> dict[str, object]:
    """Every value the fuzz test below reads (index artifacts, stripe indexes, columns and
    descriptors, the dict form)."""
    s = shardkit.open(data)
    out: dict[str, object] = {}
    for i, ix in enumerate(s.indexes):
        for j, art in enumerate(ix.artifacts):
            out[f"index {i} artifact {j}"] = s.open_artifact(art).read_column("term")
    for i, st in enumerate(s.stripes):
        out[f"stripe {i} indexes"] = repr(st.indexes)
    for name in ("id", "doc", "doc.text", "n"):
        out[f"descriptor {name}"] = repr(s.descriptor(name))
        out[f"descriptor {name} 0"] = repr(s.descriptor(name, 0))
        out[f"column {name}"] = s.read_column(name)
    out["dict"] = json.dumps(s.to_dict(), default=str, sort_keys=True)
    return out


def test_fuzzed_indexed_shard_never_escapes() -> None:
    """Each damaged byte gives an error, or a problem from verify, or the same values."""
    data = build_amudai(SCHEMA, [ROWS], presence="roaring", indexes=[IndexSpec(
        "inverted-term-index-v1", ("doc.text",), (ArtifactSpec("terms", TERMS),),
        {"k": [1, "two"]})], stripe_indexes=[[IndexSpec("s", ((0,),))]],
        field_indexes={"id": [IndexSpec("f", ("id",))]})
    want = _indexed_values(data)
    caught = 0
    for offset in range(8, len(data) - 8, 5):
        bad = bytearray(data)
        bad[offset] ^= 0x24
        try:
            problems = shardkit.open(bytes(bad)).verify()
            got = _indexed_values(bytes(bad))
        except ShardkitError:
            caught += 1
            continue
        if problems:
            caught += 1
            continue
        assert got == want, f"byte {offset} damaged: other values and verify() is clean"
    assert caught > 0


def test_indexed_sample(capsys: pytest.CaptureFixture[str]) -> None:
    path = DATA / "indexed.amudai.shard"
    s = shardkit.open(path)
    assert s.verify() == []
    for name in ("id", "reading", "text", "tags"):
        assert s.read_column(name) == expected_indexed(name), name
    kinds = []
    for name in ("id", "reading"):
        buf = s.descriptor(name, 0).encodings[0].buffers[0]
        kinds.append(s.source.read_range(buf.buffer.start + 8, buf.buffer.start + 10))
    assert kinds == [b"\x03\x01", b"\x03\x00"]  # Roaring: nulls listed, values listed
    assert [i.index_type for i in s.indexes] == ["inverted-term-index-v1"]
    assert s.open_artifact(s.indexes[0].artifacts[1]).read_column("position") == [0, 2, 4]
    assert s.stripes[0].indexes == () and not s.stripes[0].indexes_ref.empty
    assert s.descriptor("text", 1).indexes[0].index_type == "trivial"
    assert main(["info", "--json", str(path)]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["indexes"] == ["inverted-term-index-v1"]
    assert main(["map", str(path)]) == 0
    assert "/indexes/0/artifacts/0" in capsys.readouterr().out


def expected_indexed(name: str) -> list:
    return [v for stripe in INDEXED_STRIPES for v in stripe[name]]


# --- schema name lookups -------------------------------------------------------------------


def test_verify_checks_schema_lookups(monkeypatch: pytest.MonkeyPatch) -> None:
    wide = [field("wide", "Struct", *(field(f"c{i}", "Int32") for i in range(12))),
            field("x", "Int64")]
    rows = {"wide": [{f"c{i}": i for i in range(12)}], "x": [1]}
    assert shardkit.open(build_amudai(wide, [rows])).verify() == []
    monkeypatch.setattr(amudai_nodes, "name_hash", lambda name: 1)  # every name in bucket 1
    bad = build_amudai(wide, [rows])
    monkeypatch.undo()
    s = shardkit.open(bad)
    assert s.read_column("wide.c3") == [3]  # the reader scans names; only verify minds
    problems = s.verify()
    assert sorted(p.field for p in problems) == ["/schema/field_lookup", "/schema/wide/lookup"]
    assert {p.check for p in problems} == {"lookup"}
    assert "bucket 1, its hash in bucket 0" in problems[0].message
