"""NDJSON and CSV files into an Amudai shard, as the reference's ``amudai-cmd ingest`` does.

One stripe per input file, in the order given. The schema is the text ``amudai-cmd`` takes
(``"(a: long, b: string)"``: types ``string``, ``int``/``int32``/``i32``,
``long``/``int64``/``i64``, ``double``/``float64``/``f64``, ``datetime``, ``guid``/``uuid``; every
field nullable), or it is inferred the way the reference's Arrow readers infer it:

* NDJSON (``.json``, ``.ndjson``, ``.jsonl``, ``.mdjson``), from the first 100 records of each
  file: integers Int64, other numbers Float64 (Int64 with Float64 → Float64), booleans, strings,
  objects → Struct, arrays → List; a column with values of other mixed types becomes String.
* CSV (``.csv``, with a header row), from the first 100 rows: ``true``/``false`` Boolean,
  integers Int64, decimals Float64, ``YYYY-MM-DD`` and ``YYYY-MM-DD[T ]hh:mm:ss[.f]`` DateTime,
  anything else String. An empty cell is null.

The reference orders inferred fields as a Rust hash map iterates (a different order each run);
here they keep the order in which they first appear. Values are normalised as the reference
stores them: DateTime to 100 ns ticks (a naive time is UTC), a GUID string to its 16 bytes, a
JSON scalar in a String column to its JSON text.

Example::

    ingest("out.amudai.shard", ["a.ndjson", "b.ndjson"], schema="(id: long, name: string)")
"""

from __future__ import annotations

import csv
import json
import re
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Context, Decimal
from pathlib import Path
from typing import Any

from ..errors import ShardkitError
from ..formats.amudai.decimal128 import encode_d128
from .amudai import write_amudai
from .amudai_schema import FieldSpec, field

__all__ = ["INFER_RECORDS", "SCHEMA_TYPES", "IngestError", "datetime_ticks", "infer_schema",
           "ingest", "parse_arrow_schema", "parse_schema", "read_records", "unix_to_ticks"]

#: Records of each file the schema is inferred from (the reference's sample size).
INFER_RECORDS = 100
#: The type names of the schema text, as ``amudai-cmd`` accepts them.
SCHEMA_TYPES = {
    "string": "String", "int": "Int32", "int32": "Int32", "i32": "Int32", "long": "Int64",
    "int64": "Int64", "i64": "Int64", "double": "Float64", "float64": "Float64",
    "f64": "Float64", "datetime": "DateTime", "guid": "Guid", "uuid": "Guid"}
_JSON_SUFFIXES = (".json", ".ndjson", ".jsonl", ".mdjson")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_EPOCH_TICKS = 621_355_968_000_000_000
_INT_BITS = {"Int8": 8, "Int16": 16, "Int32": 32, "Int64": 64}
_DATE = re.compile(r"^\d{4}-\d\d-\d\d$")
_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d{1,9})?(?:[^\d.].*)?$")
_CSV_INT = re.compile(r"^-?\d+$")
_CSV_FLOAT = re.compile(r"^-?((\d*\.\d+|\d+\.\d*)([eE][-+]?\d+)?|\d+([eE][-+]?\d+))$")
_DT = re.compile(r"^(\d{4})-(\d\d)-(\d\d)(?:[T ](\d\d):(\d\d)(?::(\d\d)(?:\.(\d{1,9}))?)?)?"
                 r"\s*(Z|[+-]\d\d(?::?\d\d)?)?$", re.IGNORECASE)


class IngestError(ShardkitError):
    """An input that cannot be ingested: a bad schema text, record or value."""


def parse_schema(text: str) -> list[FieldSpec]:
    """The fields of a schema text like ``"(a: long, b: string)"``.

    Raises:
        IngestError: Not in parentheses, an empty schema, a name that is not an identifier,
            or a type ``amudai-cmd`` does not take.
    """
    text = text.strip()
    if not (text.startswith("(") and text.endswith(")")):
        raise IngestError("a schema is enclosed in parentheses: (field1: type1, ...)")
    out: list[FieldSpec] = []
    for part in text[1:-1].split(","):
        part = part.strip()
        if not part:
            continue
        name, sep, type_name = part.rpartition(":")
        name, type_name = name.strip(), type_name.strip()
        if not sep or not name or not type_name:
            raise IngestError(f"field definition {part!r} is not 'name: type'")
        if not _NAME.match(name):
            raise IngestError(f"field name {name!r} is not an identifier (letters, digits, _)")
        if type_name not in SCHEMA_TYPES:
            raise IngestError(f"unsupported type {type_name!r} for {name!r}; supported: "
                              f"{', '.join(SCHEMA_TYPES)}")
        out.append(field(name, SCHEMA_TYPES[type_name]))
    if not out:
        raise IngestError("the schema has no fields")
    return out


def _kind(path: Path) -> str:
    name = path.name.lower()
    if name.endswith(".csv"):
        return "csv"
    if name.endswith(_JSON_SUFFIXES):
        return "json"
    raise IngestError(f"{path}: only .csv, .json, .mdjson, .ndjson and .jsonl files are "
                      "ingested")


def read_records(path: str | Path) -> Iterator[dict[str, Any]]:
    """The records of an NDJSON file (JSON values) or a CSV file (strings; None when empty)."""
    path = Path(path)
    if _kind(path) == "csv":
        with path.open(newline="", encoding="utf-8") as f:
            reader = csv.reader(f)
            header = next(reader, None)
            if header is None:
                raise IngestError(f"{path}: a CSV file needs a header row")
            for n, row in enumerate(reader, 2):
                if len(row) != len(header):
                    raise IngestError(f"{path}:{n}: {len(row)} cells, the header has "
                                      f"{len(header)}")
                yield {k: (v if v != "" else None) for k, v in zip(header, row, strict=True)}
        return
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                raise IngestError(f"{path}:{n}: not JSON: {exc}") from exc
            if not isinstance(value, dict):
                raise IngestError(f"{path}:{n}: a record is a JSON object, not "
                                  f"{type(value).__name__}")
            yield value


# --- inference ----------------------------------------------------------------------------

def _json_type(value: Any) -> Any:
    """An inferred type: a scalar type name, ("List", item), ("Struct", {name: type}), None."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "Boolean"
    if isinstance(value, int):
        return "Int64" if -(1 << 63) <= value < (1 << 63) else "Float64"
    if isinstance(value, float):
        return "Float64"
    if isinstance(value, str):
        return "String"
    if isinstance(value, list):
        item = None
        for v in value:
            item = _merge(item, _json_type(v))
        return ("List", item)
    return ("Struct", _merge_fields({}, value))


def _merge_fields(known: dict[str, Any], record: dict[str, Any]) -> dict[str, Any]:
    for k, v in record.items():
        known[k] = _merge(known.get(k), _json_type(v))
    return known


def _merge(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    la, lb = isinstance(a, tuple) and a[0] == "List", isinstance(b, tuple) and b[0] == "List"
    if la or lb:  # a scalar beside a list becomes a list of both
        return ("List", _merge(a[1] if la else a, b[1] if lb else b))
    sa, sb = isinstance(a, tuple), isinstance(b, tuple)
    if sa and sb:
        return ("Struct", _merge_fields_typed(dict(a[1]), b[1]))
    if sa or sb:
        raise IngestError(f"a field is an object in one record and {b if sa else a} in "
                          "another")
    if a == b:
        return a
    if {a, b} == {"Int64", "Float64"}:
        return "Float64"
    return "String"


def _merge_fields_typed(known: dict[str, Any], more: dict[str, Any]) -> dict[str, Any]:
    for k, t in more.items():
        known[k] = _merge(known.get(k), t)
    return known


def _spec(name: str, t: Any) -> FieldSpec:
    if t is None:
        raise IngestError(f"field {name!r} is null in every sampled record: its type cannot "
                          "be inferred (give a schema)")
    if isinstance(t, tuple) and t[0] == "List":
        return field(name, "List", _spec("item", t[1]))
    if isinstance(t, tuple):
        return field(name, "Struct", *(_spec(k, v) for k, v in t[1].items()))
    return field(name, t)


def _csv_type(value: str) -> int:
    """The reference's CSV inference bit of one cell (1 Boolean, 2 Int64, 4 Float64,
    8..128 temporal, 256 String)."""
    if value.lower() in ("true", "false"):
        return 1
    if _CSV_INT.match(value):
        return 2 if len(value) < 19 or _fits_i64(value) else 256
    if _CSV_FLOAT.match(value) or value in ("NaN", "nan", "inf", "-inf"):
        return 4
    if _DATE.match(value):
        return 8
    if _TIMESTAMP.match(value):
        return 16
    return 256


def _fits_i64(text: str) -> bool:
    return -(1 << 63) <= int(text) < (1 << 63)


def _csv_spec(name: str, bits: int) -> FieldSpec:
    if bits == 0:
        raise IngestError(f"CSV column {name!r} is empty in every sampled row: its type cannot "
                          "be inferred (give a schema)")
    if bits == 1:
        return field(name, "Boolean")
    if bits == 2:
        return field(name, "Int64")
    if bits in (4, 6):
        return field(name, "Float64")
    if bits & ~(8 | 16) == 0:
        return field(name, "DateTime")
    return field(name, "String")


def infer_schema(inputs: Sequence[str | Path]) -> list[FieldSpec]:
    """The schema of ``inputs``, inferred from each file's first :data:`INFER_RECORDS`
    records, the files' types merged as one file's records are (a field null in one file
    takes the others' type; Int64 with Float64 is Float64)."""
    json_types: dict[str, Any] = {}
    csv_bits: dict[str, int] = {}
    for path in map(Path, inputs):
        records = read_records(path)
        sample = [rec for _, rec in zip(range(INFER_RECORDS), records, strict=False)]
        if _kind(path) == "csv":
            for rec in sample:
                for k, v in rec.items():
                    csv_bits[k] = csv_bits.get(k, 0) | (0 if v is None else _csv_type(v))
        else:
            for rec in sample:
                _merge_fields(json_types, rec)
    specs: dict[str, FieldSpec] = {}
    for name, bits in csv_bits.items():
        specs[name] = _csv_spec(name, bits)
    for name, t in json_types.items():
        spec = _spec(name, t)
        if name in specs and specs[name] != spec:
            raise IngestError(f"field {name!r} is {spec.type} in the NDJSON inputs and "
                              f"{specs[name].type} in the CSV inputs")
        specs[name] = spec
    if not specs:
        raise IngestError("no fields found in the inputs")
    return list(specs.values())


# --- values -------------------------------------------------------------------------------

_I64 = 1 << 63
_DECIMALS = Context(prec=80)  # Decimal256 input has up to 76 digits


def unix_to_ticks(value: int, unit: int) -> int | None:
    """DateTime ticks of ``value`` units of ``unit`` nanoseconds since the Unix epoch, as the
    reference converts an Arrow timestamp or date (``datetime_conversions.rs`` of
    ``amudai-arrow-compat``): nanoseconds divide by 100 toward zero, other units multiply, in
    int64 arithmetic; None (the value is stored as null) where that overflows or the instant
    is before 0001-01-01."""
    if not -_I64 <= value < _I64:
        return None
    # nanoseconds: Rust's checked_div, which rounds toward zero; other units multiply
    scaled = value * (unit // 100) if unit != 1 else (abs(value) // 100) * (-1 if value < 0
                                                                           else 1)
    ticks = scaled + _EPOCH_TICKS
    if not -_I64 <= scaled < _I64 or not 0 <= ticks < _I64:
        return None
    return ticks


def datetime_ticks(text: str, unit: int = 1) -> int | None:
    """DateTime ticks (100 ns since 0001-01-01 UTC) of an ISO 8601 date or date-time text, as
    the reference takes it into a column of ``unit`` nanoseconds: the instant floored to the
    unit (Arrow's parsers), then made ticks as :func:`unix_to_ticks` makes them (nanoseconds
    rounded toward zero); None (stored as null) before 0001-01-01 UTC."""
    m = _DT.match(text.strip())
    if m is None:
        raise ValueError(f"{text!r} is not a date or date-time")
    y, mo, d, h, mi, s, frac, tz = m.groups()
    dt = datetime(int(y), int(mo), int(d), int(h or 0), int(mi or 0), int(s or 0))
    whole = (dt - datetime(1970, 1, 1)) // timedelta(seconds=1)
    if tz and tz.upper() != "Z":
        sign = -1 if tz[0] == "-" else 1
        digits = tz[1:].replace(":", "")
        whole -= sign * (int(digits[:2]) * 3600 + int(digits[2:4] or 0) * 60)
    ns = whole * 1_000_000_000 + int((frac or "").ljust(9, "0"))
    return unix_to_ticks(ns // unit, unit)


@dataclass(frozen=True)
class _Col:
    """How input values of one schema node become the values the writer takes."""

    spec: FieldSpec
    unit: int = 1  # DateTime from an integer: nanoseconds per unit (days for a date)
    date: bool = False  # DateTime from Date32/Date64
    scale: int | None = None  # a decimal's scale
    hex: bool = False  # Binary / FixedSizeBinary from hex text
    json: bool = False  # a KustoDynamic Binary from text (its UTF-8 bytes)
    children: tuple[_Col, ...] = ()


def _col_of(spec: FieldSpec) -> _Col:
    return _Col(spec, children=tuple(_col_of(c) for c in spec.children))


_ARROW_INTS = {"Int8": ("Int8", True), "Int16": ("Int16", True), "Int32": ("Int32", True),
               "Int64": ("Int64", True), "UInt8": ("Int8", False), "UInt16": ("Int16", False),
               "UInt32": ("Int32", False), "UInt64": ("Int64", False)}
_UNITS = {"Second": 10**9, "Millisecond": 10**6, "Microsecond": 10**3, "Nanosecond": 1}


def _arrow_col(f: dict[str, Any], where: str) -> _Col:
    """A field of arrow-schema's serde JSON as the Amudai node the reference makes of it."""
    try:
        name, dt, meta = f["name"], f["data_type"], f.get("metadata") or {}
    except (KeyError, TypeError) as exc:
        raise IngestError(f"{where}: not an Arrow field ({exc})") from exc
    ext = meta.get("ARROW:extension:name")
    if isinstance(dt, str):
        if dt in _ARROW_INTS:
            t, signed = _ARROW_INTS[dt]
            return _Col(field(name, t, signed=signed))
        simple = {"Float16": "Float32", "Float32": "Float32", "Float64": "Float64",
                  "Boolean": "Boolean", "Utf8": "String", "LargeUtf8": "String",
                  "Utf8View": "String", "Binary": "Binary", "LargeBinary": "Binary",
                  "BinaryView": "Binary"}
        if ext == "arrow.json" and dt in ("Utf8", "LargeUtf8", "Utf8View"):
            # KustoDynamic: JSON text kept as a Binary (DataTypeBuilder::new_dynamic)
            return _Col(field(name, "Binary", extended_type="KustoDynamic"), json=True)
        if dt in simple:
            return _Col(field(name, simple[dt]), hex=simple[dt] == "Binary")
        if dt in ("Date32", "Date64"):
            return _Col(field(name, "DateTime"), unit=86_400 * 10**9 if dt == "Date32"
                        else 10**6, date=True)
        raise IngestError(f"{where}: Arrow type {dt} is not ingested")
    if not isinstance(dt, dict) or len(dt) != 1:
        raise IngestError(f"{where}: not an Arrow data type: {dt!r}")
    (kind, arg), = dt.items()
    return _arrow_param_col(name, kind, arg, ext, where)


def _arrow_param_col(name: str, kind: str, arg: Any, ext: str | None, where: str) -> _Col:
    """A field of a parameterized Arrow type (``{kind: arg}`` in the serde JSON)."""
    if kind == "Timestamp":
        return _Col(field(name, "DateTime"), unit=_UNITS[arg[0]])
    if kind in ("Decimal128", "Decimal256"):
        return _Col(field(name, "FixedSizeBinary", fixed_size=16,
                          extended_type="KustoDecimal"), scale=int(arg[1]))
    if kind == "FixedSizeBinary":
        if ext == "arrow.uuid" and arg == 16:
            return _Col(field(name, "Guid"))
        return _Col(field(name, "FixedSizeBinary", fixed_size=int(arg)), hex=True)
    if kind in ("List", "LargeList", "FixedSizeList"):
        item = _arrow_col(arg[0] if kind == "FixedSizeList" else arg, f"{where}.item")
        size = {"fixed_size": int(arg[1])} if kind == "FixedSizeList" else {}
        t = "FixedSizeList" if kind == "FixedSizeList" else "List"
        return _Col(field(name, t, item.spec, **size), children=(item,))
    if kind == "Struct":
        kids = tuple(_arrow_col(c, f"{where}.{c.get('name')}") for c in arg)
        return _Col(field(name, "Struct", *(k.spec for k in kids)), children=kids)
    if kind == "Map":
        entry = arg[0]["data_type"].get("Struct") if isinstance(arg[0].get("data_type"),
                                                                 dict) else None
        if not entry or len(entry) != 2:
            raise IngestError(f"{where}: a Map's entries are a struct of key and value")
        kids = tuple(_arrow_col(c, f"{where}.{c.get('name')}") for c in entry)
        return _Col(field(name, "Map", *(k.spec for k in kids)), children=kids)
    raise IngestError(f"{where}: Arrow type {kind} is not ingested")


def parse_arrow_schema(text: str) -> list[FieldSpec]:
    """The fields of an Arrow schema in arrow-schema's serde JSON (``amudai-cmd ingest
    --schema-file``, ``amudai-cmd infer-schema``)."""
    return [c.spec for c in _arrow_cols(text)]


def _arrow_cols(text: str) -> list[_Col]:
    try:
        doc = json.loads(text)
        fields = doc["fields"]
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise IngestError(f"not an Arrow schema in JSON: {exc}") from exc
    if not fields:
        raise IngestError("the schema has no fields")
    return [_arrow_col(f, f"/fields/{i}") for i, f in enumerate(fields)]


def _scalar(col: _Col, v: Any, where: str) -> Any:
    spec = col.spec
    t = spec.type
    try:
        if t == "String" or col.json:
            if isinstance(v, (dict, list)):
                raise ValueError(f"an object or array in a {t} column")
            text = v if isinstance(v, str) else json.dumps(v)
            return text.encode("utf-8") if col.json else text
        if t == "Boolean":
            if isinstance(v, bool):
                return v
            if isinstance(v, str) and v.lower() in ("true", "false"):
                return v.lower() == "true"
            raise ValueError("not a boolean")
        if t in _INT_BITS:
            n = int(v) if isinstance(v, str) else v
            if isinstance(n, bool) or not isinstance(n, int):
                raise ValueError("not an integer")
            bits = _INT_BITS[t]
            lo, hi = (-(1 << (bits - 1)), 1 << (bits - 1)) if spec.signed else (0, 1 << bits)
            if not lo <= n < hi:
                raise ValueError(f"out of the {'' if spec.signed else 'u'}int{bits} range")
            return n
        if t in ("Float32", "Float64"):
            if isinstance(v, bool):
                raise ValueError("not a number")
            return float(v)
    except (ValueError, TypeError, OverflowError, ArithmeticError) as exc:
        raise IngestError(f"{where}: {v!r} is not a {t} value ({exc})") from exc
    return _scalar_encoded(col, v, where)


def _scalar_encoded(col: _Col, v: Any, where: str) -> Any:
    """:func:`_scalar` of the types stored encoded: date-times as ticks, GUIDs, decimals and
    hex text as bytes."""
    spec = col.spec
    t = spec.type
    try:
        if t == "DateTime":
            if isinstance(v, bool):
                raise ValueError("not a date-time")
            if isinstance(v, int):  # in the column's unit since the Unix epoch
                return unix_to_ticks(v, col.unit)
            return datetime_ticks(str(v), col.unit)
        if t == "Guid":
            return uuid.UUID(str(v)).bytes
        if col.scale is not None:
            number = Decimal(str(v))
            return encode_d128(number.quantize(Decimal(1).scaleb(-col.scale),
                                               context=_DECIMALS))
        if col.hex and isinstance(v, str):
            raw = bytes.fromhex(v)
            if t == "FixedSizeBinary" and len(raw) != spec.fixed_size:
                raise ValueError(f"{len(raw)} bytes, not {spec.fixed_size}")
            return raw
    except (ValueError, TypeError, OverflowError, ArithmeticError) as exc:
        raise IngestError(f"{where}: {v!r} is not a {t} value ({exc})") from exc
    raise IngestError(f"{where}: {t} values are not ingested from {type(v).__name__}")


def _value(col: _Col, v: Any, where: str) -> Any:
    if v is None:
        return None
    t = col.spec.type
    if t in ("List", "FixedSizeList"):
        items = v if isinstance(v, list) else [v]
        return [_value(col.children[0], x, where) for x in items]
    if t == "Struct":
        if not isinstance(v, dict):
            raise IngestError(f"{where}: {v!r} is not an object")
        return {c.spec.name: _value(c, v.get(c.spec.name), f"{where}.{c.spec.name}")
                for c in col.children}
    if t == "Map":
        if not isinstance(v, dict):
            raise IngestError(f"{where}: {v!r} is not an object")
        key, val = col.children
        return [(_value(key, k, where), _value(val, x, f"{where}.{k}")) for k, x in v.items()]
    return _scalar(col, v, where)


def _columns(cols: Sequence[_Col], path: Path,
             progress: Callable[[int], None] | None = None, done: int = 0
             ) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {c.spec.name: [] for c in cols}
    for n, rec in enumerate(read_records(path), 1):
        for c in cols:
            out[c.spec.name].append(_value(c, rec.get(c.spec.name),
                                           f"{path}:{n}:{c.spec.name}"))
        if progress is not None and not n % 4096:
            progress(done + n)
    if progress is not None:
        progress(done + len(next(iter(out.values()), [])))
    return out


def ingest(out: str | Path, inputs: Sequence[str | Path], *,
           schema: str | Sequence[FieldSpec] | None = None, layout: str = "single",
           progress: Callable[[int], None] | None = None) -> list[Path]:
    """Write the records of ``inputs`` (NDJSON or CSV files) as an Amudai shard at ``out``.

    Args:
        out: The root ``.amudai.shard`` file (written atomically; stripe files beside it
            for the two-level layout).
        inputs: One stripe per file, in order (one file's records in memory at a time:
            each stripe is written out before the next file is read).
        schema: A schema text (``"(a: long, b: string)"``), an Arrow schema in
            arrow-schema's serde JSON (what ``amudai-cmd ingest --schema-file`` reads), FieldSpecs,
            or None to infer it.
        layout: ``single`` (one file) or ``twolevel`` (a root and one file per stripe).
        progress: Called with the number of records read so far, now and then.

    Returns:
        The paths written, the root first.

    Raises:
        IngestError: A bad schema, input file, record or value (naming file, line, field).
    """
    if layout not in ("single", "twolevel"):
        raise IngestError(f"layout {layout!r}: single or twolevel")
    paths = [Path(p) for p in inputs]
    if not paths:
        raise IngestError("no input files")
    for p in paths:
        _kind(p)
        if not p.is_file():
            raise IngestError(f"{p}: no such file")
    if isinstance(schema, str) and schema.lstrip().startswith("{"):
        cols = _arrow_cols(schema)
    else:
        specs = (parse_schema(schema) if isinstance(schema, str) else
                 infer_schema(paths) if schema is None else list(schema))
        cols = [_col_of(s) for s in specs]

    def stripes() -> Iterator[dict[str, list[Any]]]:
        # one input file's records at a time: the writer drops each stripe once written
        done = 0
        for p in paths:
            stripe = _columns(cols, p, progress, done)
            done += len(next(iter(stripe.values()), []))
            yield stripe

    return write_amudai(out, [c.spec for c in cols], stripes(), two_level=layout == "twolevel")
