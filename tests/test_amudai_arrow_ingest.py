"""Amudai as Arrow (to_arrow, read_column(arrow=True)), Kusto decimals, and ingest."""

from __future__ import annotations

import json
import random
import uuid
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest
from amudai_samples import DATA, SCHEMA, expected_column

import shardkit
from shardkit.formats.amudai.arrow import UNIX_EPOCH_TICKS
from shardkit.formats.amudai.decimal128 import decode_d128, encode_d128
from shardkit.writers.amudai import build_amudai, field, ingest
from shardkit.writers.amudai_ingest import (
    IngestError,
    datetime_ticks,
    infer_schema,
    parse_arrow_schema,
    parse_schema,
)

pa = pytest.importorskip("pyarrow")


# --- decimal128 ----------------------------------------------------------------------------

def test_d128_known_encodings() -> None:
    # IEEE 754-2008 decimal128 (DPD), big-endian hex from the standard's examples
    assert encode_d128(Decimal(1)) == bytes.fromhex("22080000000000000000000000000001")[::-1]
    assert encode_d128(Decimal("0")) == bytes.fromhex("22080000000000000000000000000000")[::-1]
    assert decode_d128(bytes.fromhex("a2080000000000000000000000000005")[::-1]) == Decimal(-5)
    assert str(decode_d128(encode_d128(Decimal("123400E-4")))) == "12.3400"
    assert decode_d128(encode_d128(Decimal("Infinity"))) == Decimal("Infinity")
    assert decode_d128(encode_d128(Decimal("NaN"))).is_nan()


def test_d128_round_trip_random() -> None:
    rng = random.Random(7)
    for _ in range(3000):
        digits = tuple(int(c) for c in str(rng.randrange(10 ** rng.randint(1, 34))))
        value = Decimal((rng.randint(0, 1), digits, rng.randint(-6176, 6111 - 33)))
        assert decode_d128(encode_d128(value)).as_tuple() == value.as_tuple()
    with pytest.raises(ValueError, match="34 digits"):
        encode_d128(Decimal(10**34))


# --- Arrow ---------------------------------------------------------------------------------

def test_to_arrow_equals_columns_types_included() -> None:
    s = shardkit.open(DATA / "single.amudai.shard")
    table = s.to_arrow()
    assert table.num_rows == s.record_count
    types = {f.name: str(f.type) for f in table.schema}
    assert types["id"] == "int64" and types["small"] == "int8" and types["u16"] == "uint16"
    assert types["u64"] == "uint64" and types["ratio"] == "float"
    assert types["name"] == "large_string" and types["blob"] == "large_binary"
    assert types["guid"] == "fixed_size_binary[16]" and types["code"] == "fixed_size_binary[3]"
    assert types["when"] == "timestamp[ns]" and types["tags"] == "large_list<item: large_string>"
    assert types["point"] == "fixed_size_list<item: double>[2]"
    assert types["attrs"] == "map<large_string, int64>"
    assert table.schema.field("guid").metadata == {b"ARROW:extension:name": b"arrow.uuid"}
    for spec in SCHEMA:
        want = expected_column(spec.name)
        got = table.column(spec.name).combine_chunks()
        assert got.equals(s.read_column(spec.name, arrow=True))
        if spec.type == "DateTime":
            epoch = datetime(1970, 1, 1)
            assert got.cast(pa.int64()).to_pylist() == [
                None if v is None else (v - epoch) // timedelta(microseconds=1) * 1000
                for v in want]
        elif spec.type == "Map":
            assert got.to_pylist() == [None if v is None else list(v.items()) for v in want]
        elif spec.type == "Float32":
            assert got.to_pylist() == [None if v is None else float(np.float32(v))
                                       for v in want]
        elif spec.type == "Guid":
            assert got.to_pylist() == [None if v is None else v.bytes for v in want]
        else:
            assert got.to_pylist() == want, spec.name


def test_datetime_arrow_keeps_100ns() -> None:
    ticks = [638_000_000_000_000_001, None, 638_000_000_000_000_009]
    s = shardkit.open(build_amudai([field("t", "DateTime")], [{"t": ticks}]))
    arr = s.read_column("t", arrow=True)
    assert arr.type == pa.timestamp("ns")
    assert arr.cast(pa.int64()).to_pylist() == [(ticks[0] - UNIX_EPOCH_TICKS) * 100, None,
                                                (ticks[2] - UNIX_EPOCH_TICKS) * 100]
    # the Python view is to the microsecond
    assert s.read_column("t")[0] == datetime(2022, 9, 28, 22, 13, 20)


def test_kusto_decimal_column_and_constant() -> None:
    spec = field("d", "FixedSizeBinary", fixed_size=16, extended_type="KustoDecimal")
    values = [Decimal("12.3400"), None, Decimal("-0.0001"), Decimal("99999999999999.9999")]
    s = shardkit.open(build_amudai([spec], [{"d": values}, {"d": [Decimal("5.5")] * 3}]))
    assert s.read_column("d") == [*values, *[Decimal("5.5")] * 3]
    assert s.stripe_field(1, 0).field.constant_value.WhichOneof("kind") == "decimal_value"
    arr = s.read_column("d", arrow=True)
    assert arr.type == pa.decimal128(38, 16)
    assert arr.to_pylist() == [*values, *[Decimal("5.5")] * 3]  # Decimal == ignores scale
    assert str(arr[0].as_py()) == "12.3400000000000000"
    assert [r["d"] for r in s.rows()] == [*values, *[Decimal("5.5")] * 3]


# --- ingest ----------------------------------------------------------------------------------

def test_parse_schema_text() -> None:
    specs = parse_schema("(a: long, b: string, c: int, d: double, e: datetime, g: guid)")
    assert [(s.name, s.type) for s in specs] == [
        ("a", "Int64"), ("b", "String"), ("c", "Int32"), ("d", "Float64"), ("e", "DateTime"),
        ("g", "Guid")]
    for bad, msg in [("a: long", "parentheses"), ("()", "no fields"), ("(a long)", "name: type"),
                     ("(1a: long)", "identifier"), ("(a: float)", "unsupported type")]:
        with pytest.raises(IngestError, match=msg):
            parse_schema(bad)


def test_datetime_ticks() -> None:
    assert datetime_ticks("1970-01-01") == UNIX_EPOCH_TICKS
    assert datetime_ticks("1970-01-01T00:00:00.0000001Z") == UNIX_EPOCH_TICKS + 1
    assert datetime_ticks("1970-01-01 01:00:00+01:00") == UNIX_EPOCH_TICKS
    assert datetime_ticks("1970-01-01T00:00:01.5") == UNIX_EPOCH_TICKS + 15_000_000
    with pytest.raises(ValueError, match="date-time"):
        datetime_ticks("yesterday")


def test_ingest_ndjson_inferred_two_stripes(tmp_path: Path) -> None:
    a = tmp_path / "a.ndjson"
    b = tmp_path / "b.jsonl"
    a.write_text('{"id": 1, "x": 1, "s": "p", "n": {"k": [1, 2]}}\n\n'
                 '{"id": 2, "x": 2.5, "s": 3, "n": null}\n')
    b.write_text('{"id": 3, "x": null, "s": true, "n": {"k": []}}\n')
    specs = infer_schema([a, b])
    assert [(s.name, s.type) for s in specs] == [("id", "Int64"), ("x", "Float64"),
                                                 ("s", "String"), ("n", "Struct")]
    out = tmp_path / "o.amudai.shard"
    assert ingest(out, [a, b], layout="twolevel")[0] == out
    s = shardkit.open(out)
    assert [st.record_count for st in s.stripes] == [2, 1]
    assert len(s.urls) == 2
    assert list(s.rows()) == [
        {"id": 1, "x": 1.0, "s": "p", "n": {"k": [1, 2]}},
        {"id": 2, "x": 2.5, "s": "3", "n": None},
        {"id": 3, "x": None, "s": "true", "n": {"k": []}}]
    assert s.verify() == []


def test_ingest_csv_with_schema_text(tmp_path: Path) -> None:
    src = tmp_path / "p.csv"
    g = uuid.UUID(int=12345)
    src.write_text(f'id,name,at,g\n1,"a, b",2024-01-02 03:04:05.5,{g}\n2,,,\n')
    out = tmp_path / "p.amudai.shard"
    ingest(out, [src], schema="(id: long, name: string, at: datetime, g: guid)")
    s = shardkit.open(out)
    assert s.read_column("name") == ["a, b", None]
    assert s.read_column("g") == [g.bytes, None]
    assert s.read_column("at", arrow=True).cast(pa.int64()).to_pylist() == [
        1704164645_500_000_000, None]
    assert [f.type for f in infer_schema([src])] == ["Int64", "String", "DateTime", "String"]


def test_ingest_arrow_schema_json(tmp_path: Path) -> None:
    schema = {"fields": [
        {"name": "u", "data_type": "UInt16", "nullable": True, "metadata": {}},
        {"name": "d", "data_type": {"Decimal128": [10, 2]}, "nullable": True, "metadata": {}},
        {"name": "b", "data_type": "Binary", "nullable": True, "metadata": {}},
        {"name": "day", "data_type": "Date32", "nullable": True, "metadata": {}},
        {"name": "m", "data_type": {"Map": [{"name": "entries", "data_type": {"Struct": [
            {"name": "key", "data_type": "Utf8", "nullable": False, "metadata": {}},
            {"name": "value", "data_type": "Int64", "nullable": True, "metadata": {}}]},
            "nullable": False, "metadata": {}}, False]}, "nullable": True, "metadata": {}},
    ], "metadata": {}}
    specs = parse_arrow_schema(json.dumps(schema))
    assert [(s.name, s.type) for s in specs] == [
        ("u", "Int16"), ("d", "FixedSizeBinary"), ("b", "Binary"), ("day", "DateTime"),
        ("m", "Map")]
    assert not specs[0].signed and specs[1].extended_type == "KustoDecimal"
    src = tmp_path / "r.ndjson"
    src.write_text('{"u": 65535, "d": "1.5", "b": "00ff", "day": "2024-01-02", "m": {"a": 1}}\n'
                   '{"u": null, "d": 2, "b": null, "day": 1, "m": {}}\n')
    out = tmp_path / "r.amudai.shard"
    ingest(out, [src], schema=json.dumps(schema))
    s = shardkit.open(out)
    assert s.read_column("u") == [65535, None]
    assert [str(v) for v in s.read_column("d")] == ["1.50", "2.00"]
    assert s.read_column("b") == [b"\x00\xff", None]
    assert s.read_column("day", arrow=True).cast(pa.int64()).to_pylist() == [
        1704153600 * 10**9, 86400 * 10**9]
    assert s.read_column("m") == [{"a": 1}, {}]


def test_ingest_errors_name_file_line_field(tmp_path: Path) -> None:
    src = tmp_path / "e.ndjson"
    src.write_text('{"a": 1}\n{"a": "x"}\n')
    with pytest.raises(IngestError, match=r"e\.ndjson:2:a: 'x' is not a Int64"):
        ingest(tmp_path / "o.amudai.shard", [src], schema="(a: long)")
    assert not (tmp_path / "o.amudai.shard").exists()
    bad = tmp_path / "e.txt"
    bad.write_text("x")
    with pytest.raises(IngestError, match=r"only \.csv"):
        ingest(tmp_path / "o.amudai.shard", [bad])
    (tmp_path / "n.ndjson").write_text('{"a": null}\n')
    with pytest.raises(IngestError, match="null in every sampled record"):
        ingest(tmp_path / "o.amudai.shard", [tmp_path / "n.ndjson"])
    (tmp_path / "l.ndjson").write_text('[1]\n')
    with pytest.raises(IngestError, match=r"l\.ndjson:1: a record is a JSON object"):
        ingest(tmp_path / "o.amudai.shard", [tmp_path / "l.ndjson"])
    with pytest.raises(IngestError, match="layout"):
        ingest(tmp_path / "o.amudai.shard", [src], layout="flat")
