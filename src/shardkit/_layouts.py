"""The fixed-size record layouts generated from the schemas, and local names for their fields.

``make generate`` writes ``shardkit.generated.layouts`` from ``schemas/*.ksy``
(``tools/gen_layouts.py``): for each fixed-size Kaitai type its numpy dtype spec, ``struct``
format and size. Readers and writers take sizes, byte orders and offsets from there; where a
public array keeps shorter field names than the schema's ids (``INDEX_DTYPE``'s ``ofs``),
:func:`dtype_spec` puts them on the generated layout, field for field.
"""

from __future__ import annotations

import struct
from typing import Any

from .generated import layouts
from .generated.layouts import Layout

__all__ = ["Layout", "dtype_spec", "layouts", "struct_of", "view_of"]


def struct_of(layout: Layout) -> struct.Struct:
    """A ``struct.Struct`` of ``layout`` (its fields in order, raw bytes as ``Ns``).

    Raises:
        ValueError: the layout mixes byte orders, which one struct format cannot hold.
    """
    if layout.fmt is None:
        raise ValueError(f"{layout.schema}::{layout.type} mixes byte orders")
    return struct.Struct(layout.fmt)


def dtype_spec(layout: Layout, *names: str) -> list[tuple[str, Any]]:
    """``layout``'s numpy dtype spec, its top-level fields renamed to ``names`` (in order).

    Raises:
        ValueError: ``names`` does not name every field of the layout.
    """
    if len(names) != len(layout.dtype):
        raise ValueError(f"{layout.schema}::{layout.type} has {len(layout.dtype)} fields, "
                         f"not {len(names)}")
    return [(name, spec) for name, (_, spec) in zip(names, layout.dtype, strict=True)]


_CODES = {("u", 1): "B", ("u", 2): "H", ("u", 4): "I", ("u", 8): "Q",
          ("s", 1): "b", ("s", 2): "h", ("s", 4): "i", ("s", 8): "q",
          ("f", 4): "f", ("f", 8): "d"}


def view_of(layout: Layout, *picks: str | tuple[str, str]) -> struct.Struct:
    """A ``struct.Struct`` that reads only some fields of ``layout``, skipping the bytes
    between them: each pick is a field path, or ``(path, code)`` to read the start of that
    field as the ``struct`` code ``code`` (``("file_hash", "Q")``: a hash's first word).

    Raises:
        ValueError: a path names no field, the picks are out of order or overlap, a code is
            wider than its field, or the layout mixes byte orders.
    """
    order = struct_of(layout).format[0]
    by_path = {f.path: f for f in layout.fields}
    codes, pos = [], 0
    for pick in picks:
        path, code = (pick, None) if isinstance(pick, str) else pick
        field = by_path.get(path)
        if field is None:
            raise ValueError(f"{layout.schema}::{layout.type} has no field {path!r}")
        if field.offset < pos:
            raise ValueError(f"{path!r} is before the end of the field picked before it")
        if code is None:
            code = _CODES.get((field.kind, field.size), f"{field.size}s")
        if struct.calcsize(order + code) > field.size:
            raise ValueError(f"{code!r} is wider than {path!r} ({field.size} bytes)")
        if field.offset > pos:
            codes.append(f"{field.offset - pos}x")
        codes.append(code)
        pos = field.offset + struct.calcsize(order + code)
    return struct.Struct(order + "".join(codes))
