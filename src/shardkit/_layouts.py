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

__all__ = ["Layout", "dtype_spec", "layouts", "struct_of"]


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
