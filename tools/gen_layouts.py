#!/usr/bin/env python3
"""Generate ``layouts.py`` and ``layouts.h``: the fixed-size record layouts of ``schemas/*.ksy``.

For every Kaitai type (the schema's root type included) whose ``seq`` fields all have a fixed
size (integers ``u1``..``u8``/``s1``..``s8``, floats ``f4``/``f8``, ``contents``, raw bytes or
strings of a literal ``size``, and other fixed-size types of the same schema, nested), the
module holds a :class:`Layout`: its numpy dtype spec (with endianness), its ``struct`` format,
its size and its fields (``.ksy`` id, ``-orig-id``, offset, size, kind, endianness, contents).
A type whose ``seq`` starts with fixed fields and goes on with variable ones (a block header
then its entries) gets a layout of that fixed head, ``whole=False``.

Constants are named ``<SCHEMA>`` (root type), ``<SCHEMA>__<TYPE>`` and
``<SCHEMA>__<TYPE>__HEAD`` (upper case); ``LAYOUTS`` lists them all. The output depends on
the schemas only (sorted, no time stamps), so ``make check-generated`` can diff it.

``layouts.h`` gives the C accelerators the same sizes and offsets as macros:
``SHARDKIT_<CONST>_SIZE`` and, per leaf field, ``SHARDKIT_<CONST>_F_<FIELD>_OFFSET`` and
``..._SIZE`` (the field path's ``/`` as ``__``, upper case).

usage: python tools/gen_layouts.py [--outdir DIR]
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = ROOT / "schemas"
MODULE = "layouts.py"
HEADER = "layouts.h"
_PRIM = re.compile(r"^([usf])([1248])(le|be)?$")
_STRUCT = {("u", 1): "B", ("u", 2): "H", ("u", 4): "I", ("u", 8): "Q",
           ("s", 1): "b", ("s", 2): "h", ("s", 4): "i", ("s", 8): "q",
           ("f", 4): "f", ("f", 8): "d"}
# keys that make a field's size or presence depend on data
_VARIABLE = ("if", "repeat", "size-eos", "terminator", "process", "pos", "io")


@dataclass(frozen=True)
class Field:
    path: str
    orig_id: str | None
    offset: int
    size: int
    kind: str  # u, s, f (numbers), bytes, contents
    endian: str  # "<", ">" or "" (one byte, raw bytes)
    contents: bytes | None


@dataclass(frozen=True)
class Record:
    """A fixed run of fields: its flat leaf fields and its numpy spec (nested for subtypes)."""

    fields: tuple[Field, ...]
    dtype: tuple[tuple[str, Any], ...]
    size: int


class _Schema:
    def __init__(self, path: Path) -> None:
        self.doc = yaml.safe_load(path.read_text())
        self.id: str = self.doc["meta"]["id"]
        self.types: dict[str, tuple[dict[str, Any], str | None]] = {}
        self._collect(self.doc.get("types") or {}, self._endian(self.doc, None))
        self._cache: dict[str, Record | None] = {}

    @staticmethod
    def _endian(spec: dict[str, Any], outer: str | None) -> str | None:
        endian = (spec.get("meta") or {}).get("endian", outer)
        return endian if endian in ("le", "be", None) else "?"  # "?": switch-on, unsupported

    def _collect(self, types: dict[str, Any], outer: str | None) -> None:
        for name, spec in types.items():
            endian = self._endian(spec, outer)
            self.types.setdefault(name, (spec, endian))  # the innermost name wins in Kaitai;
            self._collect(spec.get("types") or {}, endian)  # the schemas use unique names

    def record(self, name: str) -> Record | None:
        """The whole ``seq`` of local type ``name`` as a fixed record, or None."""
        if name not in self._cache:
            self._cache[name] = None  # a recursive type is not fixed
            spec, endian = self.types[name]
            head, whole = self.head(spec, endian)
            self._cache[name] = head if whole and head.fields else None
        return self._cache[name]

    def head(self, spec: dict[str, Any], endian: str | None) -> tuple[Record, bool]:
        """The leading fixed fields of ``spec``'s seq, and whether they are all of it."""
        fields: list[Field] = []
        dtype: list[tuple[str, Any]] = []
        offset = 0
        seq = spec.get("seq") or []
        for i, attr in enumerate(seq):
            name = attr.get("id", f"_unnamed{i}")
            one = self._field(attr, name, endian)
            if one is None:
                return Record(tuple(fields), tuple(dtype), offset), False
            for f in one.fields:
                fields.append(Field(f.path, f.orig_id, f.offset + offset, f.size, f.kind,
                                    f.endian, f.contents))
            dtype.append((name, one.dtype[0][1]))
            offset += one.size
        return Record(tuple(fields), tuple(dtype), offset), True

    def _field(self, attr: dict[str, Any], name: str, endian: str | None) -> Record | None:
        if any(k in attr for k in _VARIABLE):
            return None
        orig = attr.get("-orig-id")
        if "contents" in attr:
            raw = _contents(attr["contents"])
            return Record((Field(name, orig, 0, len(raw), "contents", "", raw),),
                          ((name, f"V{len(raw)}"),), len(raw))
        ty, size = attr.get("type"), attr.get("size")
        if isinstance(ty, str) and (m := _PRIM.match(ty)):
            kind, width, suffix = m.group(1), int(m.group(2)), m.group(3)
            order = ""
            if width > 1:
                order = {"le": "<", "be": ">"}.get(suffix or endian or "", "")
                if not order:
                    return None
            np_kind = "i" if kind == "s" else kind
            spec = f"{order}{np_kind}{width}" if width > 1 else f"{np_kind}{width}"
            return Record((Field(name, orig, 0, width, kind, order, None),),
                          ((name, spec),), width)
        if isinstance(ty, str) and "::" not in ty and "(" not in ty and ty in self.types:
            sub = self.record(ty)
            if sub is not None and (size is None or size == sub.size):
                return Record(tuple(Field(f"{name}/{f.path}", f.orig_id, f.offset, f.size,
                                          f.kind, f.endian, f.contents) for f in sub.fields),
                              ((name, list(sub.dtype)),), sub.size)
        if (ty is None or ty in ("str", "strz") or (isinstance(ty, str) and ty in self.types)) and \
                isinstance(size, int) and not isinstance(size, bool) and size > 0:
            return Record((Field(name, orig, 0, size, "bytes", "", None),),
                          ((name, f"V{size}"),), size)
        return None


def _contents(value: Any) -> bytes:
    parts = value if isinstance(value, list) else [value]
    out = bytearray()
    for p in parts:
        out += p.encode() if isinstance(p, str) else bytes([p])
    return bytes(out)


def _fmt(rec: Record) -> str | None:
    orders = {f.endian for f in rec.fields if f.kind in "usf" and f.size > 1}
    if len(orders) > 1:
        return None
    order = orders.pop() if orders else "<"
    codes = []
    for f in rec.fields:
        codes.append(_STRUCT[(f.kind, f.size)] if f.kind in ("u", "s", "f") else f"{f.size}s")
    return order + "".join(codes)


def layouts(schemas: Path = SCHEMAS) -> list[tuple[str, str, str, bool, Record]]:
    """(constant, schema id, type name, whole, record) of every schema, in a stable order."""
    out = []
    for path in sorted(schemas.glob("*.ksy")):
        schema = _Schema(path)
        root_endian = _Schema._endian(schema.doc, None)
        kinds = [(schema.id, schema.id.upper(), schema.doc, root_endian)]
        kinds += [(name, f"{schema.id.upper()}__{name.upper()}", spec, endian)
                  for name, (spec, endian) in sorted(schema.types.items())]
        for type_name, const, spec, endian in kinds:
            rec, whole = schema.head(spec, endian)
            if rec.fields:
                out.append((const if whole else const + "__HEAD", schema.id, type_name, whole,
                            rec))
    return out


_PRELUDE = '''\
"""Fixed-size record layouts of schemas/*.ksy: numpy dtype specs, struct formats, sizes.

Generated by tools/gen_layouts.py. Do not edit: run `make generate`.

One constant per Kaitai type whose seq is all fixed-size fields (``<SCHEMA>`` for a schema's
root type, ``<SCHEMA>__<TYPE>``), and one per type whose seq starts with fixed-size fields
(``<SCHEMA>__<TYPE>__HEAD``, ``whole=False``: those leading fields only). ``dtype`` is a numpy
spec (``numpy.dtype(layout.dtype)``; raw bytes are ``V<n>``, a nested type a nested list);
``fmt`` a ``struct`` format (None when the integers' byte orders differ); field paths are the
.ksy ids joined by ``/``, flattened through nested types. Importing this module imports
nothing but the standard library.
"""

from __future__ import annotations

from operator import itemgetter
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    class Field(NamedTuple):
        """One leaf field of a layout."""

        path: str  #: .ksy ids from the layout's type, joined by "/"
        orig_id: str | None  #: the field's -orig-id, when the schema gives one
        offset: int  #: from the start of the record
        size: int  #: bytes
        kind: str  #: "u", "s", "f" (integers, floats), "bytes" or "contents" (fixed bytes)
        endian: str  #: "<", ">" or "" (one byte or raw bytes)
        contents: bytes | None  #: the fixed bytes of a "contents" field

    class Layout(NamedTuple):
        """A fixed-size record of one Kaitai type."""

        schema: str  #: meta/id of the .ksy
        type: str  #: the Kaitai type (the schema id for the root type)
        whole: bool  #: False: only the fixed fields the type's seq starts with
        size: int  #: bytes
        fmt: str | None  #: struct format, or None when byte orders are mixed
        dtype: list[Any]  #: numpy dtype spec
        fields: tuple[Field, ...]
else:
    # The same two records at run time as plain tuples with named getters: a typing.NamedTuple
    # class costs a few hundred microseconds to create, and this module is on the start-up path.
    def _record(name: str, names: str, doc: str) -> type:
        ns: dict[str, Any] = {"__slots__": (), "__doc__": doc, "_fields": tuple(names.split()),
                              "__new__": lambda cls, *values: tuple.__new__(cls, values),
                              "__repr__": lambda self: name + repr(tuple(self))}
        ns.update((n, property(itemgetter(i))) for i, n in enumerate(names.split()))
        return type(name, (tuple,), ns)

    Field = _record("Field", "path orig_id offset size kind endian contents",
                    "One leaf field of a layout.")
    Layout = _record("Layout", "schema type whole size fmt dtype fields",
                     "A fixed-size record of one Kaitai type.")

'''


def render(schemas: Path = SCHEMAS) -> str:
    """The text of ``layouts.py`` for the ``.ksy`` files in ``schemas``."""
    parts = [_PRELUDE]
    names = []
    for const, schema, type_name, whole, rec in layouts(schemas):
        names.append(const)
        lines = [f"\n{const} = Layout(",
                 f"    {schema!r}, {type_name!r}, {whole!r}, {rec.size!r},"
                 "  # schema, type, whole, size",
                 f"    {_fmt(rec)!r},  # fmt",
                 f"    {list(rec.dtype)!r},  # dtype",
                 "    (  # fields: path, orig_id, offset, size, kind, endian, contents"]
        for f in rec.fields:
            lines.append(f"        Field({f.path!r}, {f.orig_id!r}, {f.offset!r}, {f.size!r}, "
                         f"{f.kind!r}, {f.endian!r}, {f.contents!r}),")
        lines.append("    ),\n)\n")
        parts.append("\n".join(lines))
    parts.append("\nLAYOUTS: tuple[Layout, ...] = (\n"
                 + "".join(f"    {n},\n" for n in names) + ")\n")
    return "".join(parts)


def render_header(schemas: Path = SCHEMAS) -> str:
    """The text of ``layouts.h``: each layout's size and its fields' offsets and sizes."""
    lines = ["/* Fixed-size record layouts of the .ksy files in schemas/, for the C accelerators.",
             " *",
             " * Generated by tools/gen_layouts.py. Do not edit: run `make generate`.",
             " * The same layouts as layouts.py: SHARDKIT_<CONST>_SIZE is a record's size in",
             " * bytes, SHARDKIT_<CONST>_F_<FIELD>_OFFSET / _SIZE a leaf field's place in it. */",
             "#ifndef SHARDKIT_LAYOUTS_H", "#define SHARDKIT_LAYOUTS_H", ""]
    for const, _schema, _type, _whole, rec in layouts(schemas):
        lines.append(f"#define SHARDKIT_{const}_SIZE {rec.size}")
        for f in rec.fields:
            name = f"SHARDKIT_{const}_F_{f.path.replace('/', '__').upper()}"
            lines.append(f"#define {name}_OFFSET {f.offset}")
            lines.append(f"#define {name}_SIZE {f.size}")
        lines.append("")
    lines.append("#endif /* SHARDKIT_LAYOUTS_H */")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--outdir", type=Path, default=ROOT / "generated")
    args = parser.parse_args(argv)
    args.outdir.mkdir(parents=True, exist_ok=True)
    (args.outdir / MODULE).write_text(render())
    (args.outdir / HEADER).write_text(render_header())
    return 0


if __name__ == "__main__":
    sys.exit(main())
