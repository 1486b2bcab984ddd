"""Amudai columns as Apache Arrow arrays and tables (the optional ``shardkit[arrow]`` extra).

Types follow the reference implementation's Amudai-to-Arrow mapping
(``amudai-arrow-compat``, commit 63c7da3): Int8..Int64 signed or unsigned as stored, Float32/64,
Boolean, String → ``large_string``, Binary → ``large_binary``, FixedSizeBinary(n) →
``fixed_size_binary(n)``, Guid → ``fixed_size_binary(16)`` (field metadata
``ARROW:extension:name = arrow.uuid``), a ``KustoDynamic`` Binary → ``large_string`` (field
metadata ``ARROW:extension:name = arrow.json``), DateTime → ``timestamp("ns")`` (ticks × 100
from the Unix epoch, exact) when every value of the column lies in the nanosecond range
(1677-09-21 to 2262-04-11), else ``timestamp("us")`` for the whole column (ticks ÷ 10, the
100 ns digit dropped toward the past; the reference reader turns such values into nulls),
a ``KustoTimeSpan`` Int64 → ``duration("ns")`` (``"us"`` likewise past ±2^63 ns), a
``KustoDecimal`` FixedSizeBinary(16) → ``decimal128(38, 16)``, List → ``large_list``,
FixedSizeList → a fixed size list, Struct → struct, Map → ``map`` (non-nullable keys). Every
child is nullable.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Context, Decimal
from typing import TYPE_CHECKING, Any

from ...errors import LayoutError, ShardkitError, UnsupportedVersionError
from ._deps import np

if TYPE_CHECKING:
    import pyarrow as pa

    from .model import AmudaiField

__all__ = ["arrow_field", "arrow_type", "datetime_unit", "pyarrow", "to_arrow_values"]

#: DateTime ticks (100 ns since 0001-01-01) of the Unix epoch.
UNIX_EPOCH_TICKS = 621_355_968_000_000_000
#: The DateTime ticks a ``timestamp("ns")`` holds (an int64 of nanoseconds since the epoch).
NS_TICKS = (UNIX_EPOCH_TICKS + -(2**63 // 100), UNIX_EPOCH_TICKS + (2**63 - 1) // 100)
_DECIMAL_PLACES = Decimal(1).scaleb(-16)
_DECIMAL_LIMIT = Decimal(10) ** 22
_CONTEXT = Context(prec=60)


def pyarrow() -> Any:
    """The pyarrow module; a ShardkitError saying how to get it when it is missing."""
    try:
        import pyarrow as pa
    except ImportError as exc:  # pragma: no cover - the dev extra installs pyarrow
        raise ShardkitError("Arrow output needs pyarrow: pip install 'shardkit[arrow]'") from exc
    return pa


def _is_json(node: AmudaiField) -> bool:
    return node.type == "Binary" and node.extended_type == "KustoDynamic"


def arrow_type(node: AmudaiField, units: dict[int, str] | None = None) -> pa.DataType:
    """The Arrow type of schema node ``node`` (see the module docstring); ``units``: the
    timestamp unit of DateTime nodes by schema id (``"ns"`` when not there), as
    :func:`to_arrow_values` chose them for the values."""
    pa = pyarrow()
    units = units or {}
    want = {"List": 1, "FixedSizeList": 1, "Map": 2}.get(node.type)
    if want is not None and len(node.children) != want:
        raise LayoutError(f"{node.type} field with {len(node.children)} children (expected "
                          f"{want})", field=node.path)
    t, ext = node.type, node.extended_type
    if t in ("Int8", "Int16", "Int32", "Int64"):
        if t == "Int64" and ext == "KustoTimeSpan":
            return pa.duration(units.get(node.schema_id, "ns"))
        bits = t[3:]
        return getattr(pa, ("int" if node.signed else "uint") + bits)()
    simple = {"Boolean": pa.bool_, "Float32": pa.float32, "Float64": pa.float64,
              "String": pa.large_string, "Binary": pa.large_binary}
    if _is_json(node):
        return pa.large_string()
    if t in simple:
        return simple[t]()
    if t == "DateTime":
        return pa.timestamp(units.get(node.schema_id, "ns"))
    if t == "Guid":
        return pa.binary(16)
    if t == "FixedSizeBinary":
        if ext == "KustoDecimal":
            return pa.decimal128(38, 16)
        return pa.binary(node.fixed_size)
    if t == "List":
        return pa.large_list(arrow_field(node.children[0], "item", units))
    if t == "FixedSizeList":
        return pa.list_(arrow_field(node.children[0], "item", units), node.fixed_size)
    if t == "Struct":
        return pa.struct([arrow_field(c, units=units) for c in node.children])
    if t == "Map":
        key, value = node.children
        return pa.map_(pa.field("key", arrow_type(key, units), nullable=False,
                                metadata=_extension(key)),
                       arrow_field(value, "value", units))
    raise UnsupportedVersionError(f"no Arrow type for {t} columns", field=node.path)


def _extension(node: AmudaiField) -> dict[str, str] | None:
    if node.type == "Guid":
        return {"ARROW:extension:name": "arrow.uuid"}
    if _is_json(node):
        return {"ARROW:extension:name": "arrow.json"}
    return None


def arrow_field(node: AmudaiField, name: str | None = None,
                units: dict[int, str] | None = None) -> pa.Field:
    """An Arrow field for ``node`` (nullable; a Guid carries the arrow.uuid extension name, a
    KustoDynamic arrow.json); ``units`` as :func:`arrow_type` takes them."""
    pa = pyarrow()
    return pa.field(node.name if name is None else name, arrow_type(node, units), nullable=True,
                    metadata=_extension(node))


def _decimal(value: Decimal, node: AmudaiField) -> Decimal:
    if not value.is_finite():
        raise UnsupportedVersionError(f"KustoDecimal {value} has no decimal128(38, 16) form",
                                      field=node.path)
    out = value.quantize(_DECIMAL_PLACES, context=_CONTEXT)
    if abs(out) >= _DECIMAL_LIMIT:
        raise UnsupportedVersionError(f"KustoDecimal {value} has more than 22 integer digits: "
                                      "no decimal128(38, 16) form", field=node.path)
    return out


def _ticks(value: datetime) -> int:
    """A naive UTC datetime as DateTime ticks."""
    delta = value - datetime(1, 1, 1)
    return (delta.days * 86_400 + delta.seconds) * 10_000_000 + delta.microseconds * 10


def datetime_unit(ticks: Any) -> str:
    """The timestamp unit for DateTime ticks ``ticks`` (an iterable of ints or a numpy
    array, no nulls): ``"ns"`` when every one fits an int64 of nanoseconds, else ``"us"``."""
    lo, hi = NS_TICKS
    if isinstance(ticks, np.ndarray):
        if not ticks.size:
            return "ns"
        return "ns" if lo <= int(ticks.min()) and int(ticks.max()) <= hi else "us"
    return "ns" if all(lo <= v <= hi for v in ticks) else "us"


def to_arrow_values(node: AmudaiField, values: list[Any],
                    units: dict[int, str] | None = None) -> list[Any]:
    """Python values of ``node`` (DateTime as raw ticks) in the form pyarrow builds from.

    ``units``, when given, receives the timestamp unit chosen for each DateTime node with
    values out of the nanosecond range (by schema id; see the module docstring), for
    :func:`arrow_type`."""
    t, ext = node.type, node.extended_type
    if t == "DateTime":
        return _datetime_values(node, values, units)
    if t == "Int64" and ext == "KustoTimeSpan":
        return _timespan_values(node, values, units)
    if t == "FixedSizeBinary" and ext == "KustoDecimal":
        return [None if v is None else _decimal(v, node) for v in values]
    if t in ("List", "FixedSizeList"):
        return _list_values(node, values, units)
    if t == "Struct":
        cols = {c.name: to_arrow_values(c, [None if v is None else v[c.name] for v in values],
                                        units)
                for c in node.children}
        return [None if v is None else {name: col[i] for name, col in cols.items()}
                for i, v in enumerate(values)]
    if t == "Map":
        return _map_values(node, values, units)
    return values


def _datetime_values(node: AmudaiField, values: list[Any],
                     units: dict[int, str] | None) -> list[Any]:
    """DateTime ticks (or datetimes) as ns or us since the epoch (:func:`to_arrow_values`)."""
    unit: str | None
    values = [_ticks(v) if isinstance(v, datetime) else v for v in values]
    if units is not None and node.schema_id in units:  # chosen before: kept
        unit = units[node.schema_id]
        if unit == "ns" and datetime_unit(v for v in values if v is not None) != "ns":
            raise LayoutError("a DateTime value outside the range statistics",
                              field=node.path)
    else:
        unit = datetime_unit(v for v in values if v is not None)
        if unit == "us" and units is not None:
            units[node.schema_id] = unit
    if unit == "us":
        return [None if v is None else (v - UNIX_EPOCH_TICKS) // 10 for v in values]
    return [None if v is None else (v - UNIX_EPOCH_TICKS) * 100 for v in values]


def _timespan_values(node: AmudaiField, values: list[Any],
                     units: dict[int, str] | None) -> list[Any]:
    """KustoTimeSpan ticks as an ns or us duration (see :func:`to_arrow_values`)."""
    limit = (2**63 - 1) // 100
    fits = all(-limit <= v <= limit for v in values if v is not None)
    unit = (units or {}).get(node.schema_id)
    if unit is None:
        unit = "ns" if fits else "us"
        if unit == "us" and units is not None:
            units[node.schema_id] = unit
    elif unit == "ns" and not fits:
        raise LayoutError("a KustoTimeSpan value outside the range statistics",
                          field=node.path)
    if unit == "us":
        return [None if v is None else v // 10 for v in values]
    return [None if v is None else v * 100 for v in values]


def _list_values(node: AmudaiField, values: list[Any],
                 units: dict[int, str] | None) -> list[Any]:
    """List and FixedSizeList values: the child converted flat, then cut per list."""
    child = node.children[0]
    flat = to_arrow_values(child, [x for v in values if v is not None for x in v], units)
    out: list[Any] = []
    pos = 0
    for v in values:
        if v is None:
            out.append(None)
        else:
            out.append(flat[pos:pos + len(v)])
            pos += len(v)
    return out


def _map_values(node: AmudaiField, values: list[Any],
                units: dict[int, str] | None) -> list[Any]:
    """Map values (dicts or pair lists): keys and values converted flat, then cut per map."""
    key, val = node.children
    pairs = [None if v is None else (list(v.items()) if isinstance(v, dict)
                                     else [tuple(p) for p in v]) for v in values]
    keys = to_arrow_values(key, [k for p in pairs if p is not None for k, _ in p], units)
    vals = to_arrow_values(val, [x for p in pairs if p is not None for _, x in p], units)
    out: list[Any] = []
    pos = 0
    for p in pairs:
        if p is None:
            out.append(None)
        else:
            out.append(list(zip(keys[pos:pos + len(p)], vals[pos:pos + len(p)],
                                strict=True)))
            pos += len(p)
    return out
