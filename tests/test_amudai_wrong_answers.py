"""The wrong answers of issue 31, each on shardkit's own constructs: stripe-constant DateTime,
the constant kind our writer stores, DateTimes outside the nanosecond range in Arrow, JSON of
every value type, timestamps before 0001-01-01 at ingest, and KustoDynamic columns. (The same
on shards made by ``amudai-cmd`` is in test_amudai_rust_corpus.py.)"""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import shardkit
from shardkit.cli import main
from shardkit.formats.amudai.arrow import UNIX_EPOCH_TICKS
from shardkit.formats.amudai.blocks import ticks_to_datetime
from shardkit.writers import amudai_stats
from shardkit.writers.amudai import FieldSpec, field, ingest, write_amudai

DAY = 864_000_000_000  # ticks
T2079 = (datetime(2079, 4, 7) - datetime(1, 1, 1)).days * DAY
YEAR1, YEAR9999 = 0, (datetime(9999, 12, 31, 23, 59, 59) - datetime(1, 1, 1)).days * DAY + \
    (23 * 3600 + 59 * 60 + 59) * 10_000_000 + 9_999_999


def _constant_kinds(s: Any, path: str) -> list[str | None]:
    node = s.field(path)
    out = []
    for k in range(len(s.stripes)):
        sfd = s.stripe_field(k, node.schema_id)
        out.append(sfd.field.constant_value.WhichOneof("kind")
                   if sfd.field.HasField("constant_value") else None)
    return out


def _day_shard(path: Path) -> Path:
    # stripe 0 varies, stripe 1 is one constant day (ticks), stripe 2 all null
    write_amudai(path, [field("id", "Int64"), field("day", "DateTime")], [
        {"id": [0, 1, 2], "day": [T2079 - DAY, None, T2079 + 7]},
        {"id": [3, 4, 5, 6], "day": [T2079] * 4},
        {"id": [7, 8], "day": [None, None]}])
    return path


def test_stripe_constant_datetime_is_a_datetime_everywhere(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    with shardkit.open(_day_shard(tmp_path / "d.amudai.shard")) as s:
        assert _constant_kinds(s, "day") == [None, "u64_value", "null_value"]
        when = datetime(2079, 4, 7)
        assert s.rows(3, 5, columns=["day"]) == [{"day": when.isoformat()}] * 2
        assert s[4]["day"] == "2079-04-07T00:00:00"
        assert s.read_column("day")[3:] == [when] * 4 + [None, None]
        assert [r["day"] for r in s.iter_rows(["day"])][3:7] == [when.isoformat()] * 4
        ticks = s.read_array("day")
        assert ticks[3:7].tolist() == [T2079] * 4 and ticks.mask[7:].all()
        batches = [b["day"] for b in s.iter_batches(["day"])]
        assert batches[1].tolist() == [T2079] * 4
        arrow = s.read_column("day", arrow=True)
        assert arrow.type == pa.timestamp("ns")
        assert arrow.cast(pa.int64()).to_pylist()[3] == (T2079 - UNIX_EPOCH_TICKS) * 100
        assert s.descriptor("day", 1).constant_value == when
        assert s.verify() == []


def test_a_datetime_value_constant_still_reads(tmp_path: Path, monkeypatch: Any) -> None:
    """Shards written before the writer stored U64Value ticks have DatetimeValue constants."""
    real = amudai_stats._primitive_any

    def old_kind(spec: FieldSpec, v: Any) -> Any:
        out = real(spec, v)
        if spec.type == "DateTime" and v is not None:
            out.datetime_value.ticks = v
        return out

    monkeypatch.setattr(amudai_stats, "_primitive_any", old_kind)
    with shardkit.open(_day_shard(tmp_path / "old.amudai.shard")) as s:
        assert _constant_kinds(s, "day") == [None, "datetime_value", "null_value"]
        assert s.rows(3, 4) == [{"id": 3, "day": "2079-04-07T00:00:00"}]
        assert s.read_array("day")[3] == T2079
        assert s.read_column("day", arrow=True).cast("int64").to_pylist()[3] == \
            (T2079 - UNIX_EPOCH_TICKS) * 100


def test_writer_stores_datetime_constants_and_ranges_as_u64_ticks(tmp_path: Path) -> None:
    with shardkit.open(_day_shard(tmp_path / "d.amudai.shard")) as s:
        node = s.field("day")
        sfd = s.stripe_field(1, node.schema_id)
        assert sfd.field.constant_value.u64_value == T2079
        full = s.field_descriptor(node.schema_id)
        rs = full.range_stats
        assert rs.min_value.WhichOneof("kind") == rs.max_value.WhichOneof("kind") == "u64_value"
        assert (rs.min_value.u64_value, rs.max_value.u64_value) == (T2079 - DAY, T2079 + 7)


@pytest.mark.parametrize("two_stripes", [False, True])
def test_datetimes_outside_the_nanosecond_range_in_arrow(tmp_path: Path,
                                                         two_stripes: bool) -> None:
    pa = pytest.importorskip("pyarrow")
    inner = T2079 + 1234567  # 100 ns digit set: exact in ns
    values = [YEAR1, None, inner, YEAR9999, YEAR1 + 15]
    stripes = [{"t": values[:2], "l": [[YEAR1], None]},
               {"t": values[2:], "l": [[], [inner, YEAR9999], None]}] if two_stripes else \
        [{"t": values, "l": [[YEAR1], None, [], [inner, YEAR9999], None]}]
    path = tmp_path / "wide.amudai.shard"
    write_amudai(path, [field("t", "DateTime"), field("l", "List", field("item", "DateTime")),
                        ], stripes)
    with shardkit.open(path) as s:
        table = s.to_arrow()
        assert table.schema.field("t").type == pa.timestamp("us")
        assert table.schema.field("l").type == pa.large_list(pa.timestamp("us"))
        micros = table.column("t").combine_chunks().cast(pa.int64()).to_pylist()
        want = [None if v is None else (v - UNIX_EPOCH_TICKS) // 10 for v in values]
        assert micros == want
        assert micros[0] == (datetime(1, 1, 1) - datetime(1970, 1, 1)).days * 86_400_000_000
        got = table.column("t").combine_chunks().to_pylist()
        assert got[0] == datetime(1, 1, 1) and got[3] == datetime(9999, 12, 31, 23, 59, 59,
                                                                   999999)
        assert got[4] == datetime(1, 1, 1, 0, 0, 0, 1)  # 1.5 µs: the 100 ns digit dropped
        assert [r["t"] for r in s.rows()] == [None if v is None else
                                             ticks_to_datetime(v).isoformat() for v in values]
    path2 = tmp_path / "narrow.amudai.shard"
    write_amudai(path2, [field("t", "DateTime")], [{"t": [inner, None]}])
    with shardkit.open(path2) as s:
        arr = s.read_column("t", arrow=True)
        assert arr.type == pa.timestamp("ns")  # exact to 100 ns where it fits
        assert arr.cast(pa.int64()).to_pylist() == [(inner - UNIX_EPOCH_TICKS) * 100, None]


def _all_types(path: Path) -> Path:
    """A shard with a column of every type the format has, nulls in each."""
    schema = [
        field("i8", "Int8"), field("u64", "Int64", signed=False), field("f32", "Float32"),
        field("f64", "Float64"), field("b", "Boolean"), field("s", "String"),
        field("bin", "Binary"), field("fsb", "FixedSizeBinary", fixed_size=2),
        field("g", "Guid"), field("t", "DateTime"),
        field("dec", "FixedSizeBinary", fixed_size=16, extended_type="KustoDecimal"),
        field("span", "Int64", extended_type="KustoTimeSpan"),
        field("dyn", "Binary", extended_type="KustoDynamic"),
        field("st", "Struct", field("d", "FixedSizeBinary", fixed_size=16,
                                    extended_type="KustoDecimal"), field("x", "Int32")),
        field("l", "List", field("item", "FixedSizeBinary", fixed_size=16,
                                 extended_type="KustoDecimal")),
        field("fl", "FixedSizeList", field("item", "Float64"), fixed_size=2),
        field("m", "Map", field("key", "String"), field("value", "DateTime")),
    ]
    g = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
    rows = {
        "i8": [-128, None, 127], "u64": [2**64 - 1, 0, None], "f32": [0.5, None, -1.25],
        "f64": [float("nan"), float("-inf"), None], "b": [True, None, False],
        "s": ["naïve", None, ""], "bin": [b"\x00\xff", None, b""],
        "fsb": [b"ab", None, b"\x01\x02"],
        "g": [g, None, g], "t": [datetime(2024, 5, 6, 7, 8, 9, 10), None, datetime(1, 1, 1)],
        "dec": [Decimal("-12.3400"), None, Decimal("1E+20")], "span": [10_000_000, None, -1],
        "dyn": [b'{"a": [1, 2]}', None, b"null"],
        "st": [{"d": Decimal("0.5"), "x": 1}, None, {"d": None, "x": None}],
        "l": [[Decimal("1.5"), None], None, []], "fl": [[1.0, None], None, [0.0, -0.0]],
        "m": [{"k": datetime(2000, 1, 1)}, None, {}],
    }
    write_amudai(path, schema, [rows])
    return path


#: Row 0 of _all_types as every --json must give it (the project's conventions: bytes as hex,
#: decimals as exact text, datetimes as ISO text, NaN and infinities as text, big ints as
#: numbers, KustoDynamic as its JSON text, a KustoTimeSpan as its ticks).
ROW0 = {"i8": -128, "u64": 2**64 - 1, "f32": 0.5, "f64": "nan", "b": True, "s": "naïve",
        "bin": "00ff", "fsb": "6162", "g": "00112233445566778899aabbccddeeff",
        "t": "2024-05-06T07:08:09.000010", "dec": "-12.3400", "span": 10_000_000,
        "dyn": '{"a": [1, 2]}', "st": {"d": "0.5", "x": 1}, "l": ["1.5", None],
        "fl": [1.0, None], "m": {"k": "2000-01-01T00:00:00"}}


def _run(argv: list[str], capsys: Any) -> tuple[int, str]:
    code = main(argv)
    out, _ = capsys.readouterr()
    return code, out


def test_every_type_through_every_json(tmp_path: Path, capsys: Any) -> None:
    path = str(_all_types(tmp_path / "all.amudai.shard"))
    code, out = _run(["head", "--json", path], capsys)
    assert code == 0
    lines = [json.loads(ln) for ln in out.splitlines()]
    assert len(lines) == 3 and lines[0] == ROW0
    assert lines[1] == {**dict.fromkeys(ROW0), "u64": 0, "f64": "-inf"}
    assert lines[2]["dec"] == "100000000000000000000" and lines[2]["f64"] is None
    assert lines[2]["t"] == "0001-01-01T00:00:00" and lines[2]["fl"] == [0.0, -0.0]
    assert lines[2]["u64"] is None and lines[2]["st"] == {"d": None, "x": None}
    code, table = _run(["head", path, "-n", "1", "--columns", "dec,dyn,u64"], capsys)
    assert code == 0 and table.splitlines()[1].split()[:2] == ['"-12.3400"', '{"a":']
    for name, want in ROW0.items():
        for extra in ([], ["--json"]):
            code, out = _run(["get", path, name, *extra], capsys)
            assert code == 0
            assert json.loads(out)[0] == want, name
    code, out = _run(["get", path, "st.d", "--json"], capsys)
    assert json.loads(out) == ["0.5", None, None]
    code, out = _run(["dump", path, "--json"], capsys)
    assert code == 0
    dump = json.loads(out)
    stats = dump["field_descriptors"]["dec"]
    assert stats is not None and json.dumps(stats)
    code, out = _run(["ls", path, "--json"], capsys)
    assert code == 0
    listed = json.loads(out)
    assert "st.d\tFixedSizeBinary(16) [KustoDecimal]" in listed
    assert "dyn\tBinary [KustoDynamic]" in listed and "u64\tInt64 unsigned" in listed
    code, out = _run(["info", path, "--json"], capsys)
    assert code == 0 and json.loads(out)["record_count"] == 3
    code, out = _run(["verify", path, "--json"], capsys)
    assert code == 0


def test_every_type_rows_and_arrow(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    with shardkit.open(_all_types(tmp_path / "all.amudai.shard")) as s:
        table = s.to_arrow()
        dyn = table.schema.field("dyn")
        assert dyn.type == pa.large_string()
        assert dyn.metadata == {b"ARROW:extension:name": b"arrow.json"}
        assert table.column("dyn").to_pylist() == ['{"a": [1, 2]}', None, "null"]
        assert s.read_column("dyn") == ['{"a": [1, 2]}', None, "null"]
        assert s[0]["dyn"] == '{"a": [1, 2]}'
        assert table.schema.field("g").metadata == {b"ARROW:extension:name": b"arrow.uuid"}
        assert table.column("dec").to_pylist()[0] == Decimal("-12.3400")
        assert s.verify() == []


def test_kusto_dynamic_from_an_arrow_json_schema(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    schema = json.dumps({"fields": [
        {"name": "id", "data_type": "Int64", "nullable": True, "dict_id": 0,
         "dict_is_ordered": False, "metadata": {}},
        {"name": "d", "data_type": "Utf8", "nullable": True, "dict_id": 0,
         "dict_is_ordered": False, "metadata": {"ARROW:extension:name": "arrow.json"}}],
        "metadata": {}})
    src = tmp_path / "in.ndjson"
    src.write_text('{"id": 1, "d": "{\\"k\\": 1}"}\n{"id": 2}\n{"id": 3, "d": "[]"}\n',
                   encoding="utf-8")
    out = tmp_path / "dyn.amudai.shard"
    ingest(out, [src], schema=schema)
    with shardkit.open(out) as s:
        node = s.field("d")
        assert (node.type, node.extended_type) == ("Binary", "KustoDynamic")
        assert s.read_column("d") == ['{"k": 1}', None, "[]"]
        arr = s.to_arrow()
        assert arr.schema.field("d").type == pa.large_string()
        assert arr.schema.field("d").metadata == {b"ARROW:extension:name": b"arrow.json"}


@pytest.mark.parametrize("unit,before,first", [
    ("Second", -62_135_596_801, -62_135_596_800),
    ("Millisecond", -62_135_596_800_001, -62_135_596_800_000),
    ("Microsecond", -62_135_596_800_000_001, -62_135_596_800_000_000),
])
def test_ingest_stores_a_timestamp_before_year_1_as_null(tmp_path: Path, capsys: Any,
                                                          unit: str, before: int,
                                                          first: int) -> None:
    schema = json.dumps({"fields": [
        {"name": "t", "data_type": {"Timestamp": [unit, None]}, "nullable": True,
         "dict_id": 0, "dict_is_ordered": False, "metadata": {}}], "metadata": {}})
    (tmp_path / "s.json").write_text(schema, encoding="utf-8")
    src = tmp_path / "in.ndjson"
    src.write_text(f'{{"t": {before}}}\n{{"t": {first}}}\n{{"t": 0}}\n{{"t": {2**63 - 1}}}\n',
                   encoding="utf-8")
    out = tmp_path / "t.amudai.shard"
    code, _ = _run(["create", "--format", "amudai", "--yes", "--schema-file",
                    str(tmp_path / "s.json"), str(out), str(src)], capsys)
    assert code == 0
    with shardkit.open(out) as s:
        # before 0001-01-01, and past int64 ticks: null, as the reference stores them
        assert s.read_column("t") == [None, datetime(1, 1, 1), datetime(1970, 1, 1), None]


def test_ingest_nanoseconds_round_toward_zero_as_the_reference(tmp_path: Path) -> None:
    schema = json.dumps({"fields": [
        {"name": "t", "data_type": {"Timestamp": ["Nanosecond", None]}, "nullable": True,
         "dict_id": 0, "dict_is_ordered": False, "metadata": {}}], "metadata": {}})
    src = tmp_path / "in.ndjson"
    src.write_text('{"t": -150}\n{"t": 150}\n{"t": -100}\n', encoding="utf-8")
    out = tmp_path / "ns.amudai.shard"
    ingest(out, [src], schema=schema)
    with shardkit.open(out) as s:
        assert (s.read_array("t").astype(np.int64) - UNIX_EPOCH_TICKS).tolist() == [-1, 1, -1]


def test_timespans_past_the_nanosecond_range_in_arrow(tmp_path: Path) -> None:
    """A KustoTimeSpan is 100 ns ticks in an int64: one past ±2^63 ns is duration("us")
    (never an overflow), in to_arrow and in Arrow batches alike."""
    pa = pytest.importorskip("pyarrow")
    path = tmp_path / "span.amudai.shard"
    big = 2**62
    write_amudai(path, [field("d", "Int64", extended_type="KustoTimeSpan")],
                 [{"d": [1, None, -big]}, {"d": [big, 5]}])
    with shardkit.open(path) as s:
        table = s.to_arrow()
        assert table.schema.field("d").type == pa.duration("us")
        want = [0, None, -big // 10, big // 10, 0]
        assert table.column("d").combine_chunks().cast(pa.int64()).to_pylist() == want
        joined = pa.Table.from_batches(list(s.iter_batches(arrow=True)))
        assert joined.column("d").combine_chunks().cast(pa.int64()).to_pylist() == want
        assert s.read_column("d") == [1, None, -big, big, 5]
    small = tmp_path / "small.amudai.shard"
    write_amudai(small, [field("d", "Int64", extended_type="KustoTimeSpan")], [{"d": [7, None]}])
    with shardkit.open(small) as s:
        arr = s.read_column("d", arrow=True)
        assert arr.type == pa.duration("ns") and arr.cast(pa.int64()).to_pylist() == [700, None]
