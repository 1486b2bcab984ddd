"""Amudai columns as Apache Arrow arrays and tables (the optional ``shardkit[arrow]`` extra).

Types follow the reference implementation's Amudai-to-Arrow mapping
(``amudai-arrow-compat``, commit 63c7da3): Int8..Int64 signed or unsigned as stored, Float32/64,
Boolean, String → ``large_string``, Binary → ``large_binary``, FixedSizeBinary(n) →
``fixed_size_binary(n)``, Guid → ``fixed_size_binary(16)`` (field metadata
``ARROW:extension:name = arrow.uuid``), DateTime → ``timestamp("ns")`` (ticks × 100 from the
Unix epoch, exact), a ``KustoTimeSpan`` Int64 → ``duration("ns")``, a ``KustoDecimal``
FixedSizeBinary(16) → ``decimal128(38, 16)``, List → ``large_list``, FixedSizeList → a fixed
size list, Struct → struct, Map → ``map`` (non-nullable keys). Every child is nullable.
"""

from __future__ import annotations

from decimal import Context, Decimal
from typing import TYPE_CHECKING, Any

from ...errors import ShardkitError, UnsupportedVersionError

if TYPE_CHECKING:
    import pyarrow as pa

    from .model import AmudaiField

__all__ = ["arrow_field", "arrow_type", "pyarrow", "to_arrow_values"]

#: DateTime ticks (100 ns since 0001-01-01) of the Unix epoch.
UNIX_EPOCH_TICKS = 621_355_968_000_000_000
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


def arrow_type(node: AmudaiField) -> pa.DataType:
    """The Arrow type of schema node ``node`` (see the module docstring)."""
    pa = pyarrow()
    t, ext = node.type, node.extended_type
    if t in ("Int8", "Int16", "Int32", "Int64"):
        if t == "Int64" and ext == "KustoTimeSpan":
            return pa.duration("ns")
        bits = t[3:]
        return getattr(pa, ("int" if node.signed else "uint") + bits)()
    simple = {"Boolean": pa.bool_, "Float32": pa.float32, "Float64": pa.float64,
              "String": pa.large_string, "Binary": pa.large_binary}
    if t in simple:
        return simple[t]()
    if t == "DateTime":
        return pa.timestamp("ns")
    if t == "Guid":
        return pa.binary(16)
    if t == "FixedSizeBinary":
        if ext == "KustoDecimal":
            return pa.decimal128(38, 16)
        return pa.binary(node.fixed_size)
    if t == "List":
        return pa.large_list(arrow_field(node.children[0], "item"))
    if t == "FixedSizeList":
        return pa.list_(arrow_field(node.children[0], "item"), node.fixed_size)
    if t == "Struct":
        return pa.struct([arrow_field(c) for c in node.children])
    if t == "Map":
        key, value = node.children
        return pa.map_(pa.field("key", arrow_type(key), nullable=False),
                       arrow_field(value, "value"))
    raise UnsupportedVersionError(f"no Arrow type for {t} columns", field=node.path)


def arrow_field(node: AmudaiField, name: str | None = None) -> pa.Field:
    """An Arrow field for ``node`` (nullable; a Guid carries the arrow.uuid extension name)."""
    pa = pyarrow()
    meta = {"ARROW:extension:name": "arrow.uuid"} if node.type == "Guid" else None
    return pa.field(node.name if name is None else name, arrow_type(node), nullable=True,
                    metadata=meta)


def _decimal(value: Decimal, node: AmudaiField) -> Decimal:
    if not value.is_finite():
        raise UnsupportedVersionError(f"KustoDecimal {value} has no decimal128(38, 16) form",
                                      field=node.path)
    out = value.quantize(_DECIMAL_PLACES, context=_CONTEXT)
    if abs(out) >= _DECIMAL_LIMIT:
        raise UnsupportedVersionError(f"KustoDecimal {value} has more than 22 integer digits: "
                                      "no decimal128(38, 16) form", field=node.path)
    return out


def to_arrow_values(node: AmudaiField, values: list[Any]) -> list[Any]:
    """Python values of ``node`` (DateTime as raw ticks) in the form pyarrow builds from."""
    t, ext = node.type, node.extended_type
    if t == "DateTime":
        return [None if v is None else (v - UNIX_EPOCH_TICKS) * 100 for v in values]
    if t == "Int64" and ext == "KustoTimeSpan":
        return [None if v is None else v * 100 for v in values]
    if t == "FixedSizeBinary" and ext == "KustoDecimal":
        return [None if v is None else _decimal(v, node) for v in values]
    if t in ("List", "FixedSizeList"):
        child = node.children[0]
        flat = to_arrow_values(child, [x for v in values if v is not None for x in v])
        out: list[Any] = []
        pos = 0
        for v in values:
            if v is None:
                out.append(None)
            else:
                out.append(flat[pos:pos + len(v)])
                pos += len(v)
        return out
    if t == "Struct":
        cols = {c.name: to_arrow_values(c, [None if v is None else v[c.name] for v in values])
                for c in node.children}
        return [None if v is None else {name: col[i] for name, col in cols.items()}
                for i, v in enumerate(values)]
    if t == "Map":
        key, val = node.children
        pairs = [None if v is None else (list(v.items()) if isinstance(v, dict)
                                         else [tuple(p) for p in v]) for v in values]
        keys = to_arrow_values(key, [k for p in pairs if p is not None for k, _ in p])
        vals = to_arrow_values(val, [x for p in pairs if p is not None for _, x in p])
        out = []
        pos = 0
        for p in pairs:
            if p is None:
                out.append(None)
            else:
                out.append(list(zip(keys[pos:pos + len(p)], vals[pos:pos + len(p)],
                                    strict=True)))
                pos += len(p)
        return out
    return values
