"""The schema a writer of Amudai shards is given: :class:`FieldSpec` nodes (:func:`field` to
make them) and the BasicType numbers.

Both :mod:`.amudai` (the writer) and :mod:`.amudai_ingest` (NDJSON and CSV in) take it, and
neither imports the other while it loads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["BASIC_TYPES", "FieldSpec", "field"]

BASIC_TYPES = {name: i for i, name in enumerate([
    "Unit", "Boolean", "Int8", "Int16", "Int32", "Int64", "Float32", "Float64", "Binary",
    "FixedSizeBinary", "String", "Guid", "DateTime", "List", "FixedSizeList", "Struct", "Map",
    "Union"])}


@dataclass(frozen=True)
class FieldSpec:
    """One node of the schema to write.

    Attributes:
        name: Field name ("" allowed for list items).
        type: BasicType name (``"Int64"``, ``"String"``, ``"List"``...).
        children: Child nodes (Struct fields; the item of List/FixedSizeList; key and value of
            Map).
        signed: Integer signedness (ignored for other types).
        fixed_size: Byte size of FixedSizeBinary, element count of FixedSizeList.
        dictionary: String/Binary/Guid: encode with a VALUE_DICTIONARY buffer.
        extended_type: Optional ExtendedTypeAnnotation label (``KustoDecimal``...).
    """

    name: str
    type: str
    children: tuple[FieldSpec, ...] = ()
    signed: bool = True
    fixed_size: int = 0
    dictionary: bool = False
    extended_type: str | None = None

    def __post_init__(self) -> None:
        if self.type not in BASIC_TYPES or self.type in ("Unit", "Union"):
            raise ValueError(f"cannot write fields of type {self.type!r}")
        want = {"List": 1, "FixedSizeList": 1, "Map": 2}.get(self.type)
        if want is not None and len(self.children) != want:
            raise ValueError(f"{self.type} field {self.name!r} needs {want} child(ren)")
        if self.type != "Struct" and want is None and self.children:
            raise ValueError(f"{self.type} field {self.name!r} cannot have children")
        if self.type in ("FixedSizeBinary", "FixedSizeList") and not \
                0 < self.fixed_size <= 2**31 - 1:
            raise ValueError(f"{self.type} field {self.name!r} needs 0 < fixed_size < 2**31")


def field(name: str, type: str, *children: FieldSpec, **options: Any) -> FieldSpec:
    """Shorthand for :class:`FieldSpec` (``Guid`` gets ``fixed_size=16``)."""
    if type == "Guid":
        options.setdefault("fixed_size", 16)
    return FieldSpec(name, type, tuple(children), **options)
