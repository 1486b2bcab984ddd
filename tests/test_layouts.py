"""Fixed-size layouts: generated once from schemas/*.ksy, and every other declaration checked.

``make generate`` writes ``shardkit.generated.layouts`` (tools/gen_layouts.py); readers and
writers take their numpy dtypes and ``struct`` formats from it. Here:

* each generated layout agrees with itself (struct format, numpy dtype, size, field offsets)
  and with the Kaitai parser compiled from the same schema, on bytes of distinct values;
* each construct declaration of a writer (construct builds the bytes there) matches its
  ``.ksy`` type field by field: names (the ``.ksy`` id or ``-orig-id``), order, sizes, kinds,
  byte orders and fixed contents; a module-level construct no pair covers fails the test, and
  deliberately altered declarations are shown to fail the check.
"""

from __future__ import annotations

import importlib
import importlib.util
import io
import random
import struct
import sys
from pathlib import Path
from typing import Any

import construct as cs
import numpy as np
import pytest
import yaml
from kaitaistruct import KaitaiStream
from shardkit.generated import layouts as L

from shardkit import _layouts
from shardkit.formats.neuroglancer import spec as ng_spec
from shardkit.formats.swh import model as swh_model
from shardkit.formats.xet_mdb import model as mdb_model
from shardkit.writers import mosaic as w_mosaic
from shardkit.writers import swh as w_swh
from shardkit.writers import xet_mdb as w_mdb

SCHEMAS = Path(__file__).resolve().parents[1] / "schemas"

# -- the construct declarations against their .ksy types ---------------------------------------



def _construct_fields(con: cs.Construct) -> list[tuple[str | None, str, int, str, bytes | None]]:
    """(name, kind, size, byte order, fixed contents) of each field of a construct, in order."""
    subcons = con.subcons if isinstance(con, cs.Struct) else [con]
    out: list[tuple[str | None, str, int, str, bytes | None]] = []
    for sc in subcons:
        name = None
        if isinstance(sc, cs.Renamed):
            name, sc = sc.name, sc.subcon
        if isinstance(sc, cs.Const):
            out.append((name, "contents", sc.sizeof(), "", sc.value))
        elif isinstance(sc, cs.FormatField):
            code, size = sc.fmtstr[1:], struct.calcsize(sc.fmtstr)  # "<L" is 4 bytes, as "<I"
            kind = "f" if code in "efd" else "u" if code.isupper() else "s"
            out.append((name, kind, size, sc.fmtstr[0] if size > 1 else "", None))
        elif isinstance(sc, (cs.Bytes, cs.Padded)):  # Padding(n) is a Padded(n, Pass)
            out.append((name, "bytes", sc.sizeof(), "", None))
        else:
            raise TypeError(f"no layout check for {type(sc).__name__} field {name!r}")
    return out


def layout_mismatch(con: cs.Construct, layout: L.Layout, skip: int = 0) -> str | None:
    """The first difference between construct ``con`` (its fields from ``skip`` on) and
    ``layout``, or None when they declare the same record."""
    have = _construct_fields(con)[skip:]
    want = layout.fields
    where = f"{layout.schema}::{layout.type}"
    for i in range(max(len(have), len(want))):
        if i >= len(have):
            return f"{where}/{want[i].path}: missing from the construct declaration"
        name, kind, size, endian, contents = have[i]
        if i >= len(want):
            return f"{where}: construct field {name!r} is not in the schema"
        f = want[i]
        at = f"{where}/{f.path} (field {i})"
        leaf = f.path.rsplit("/", 1)[-1]
        if name is None:
            # unnamed: padding over a reserved run of bytes, a lone value, or a fixed tag
            if not (kind == f.kind == "bytes" or len(have) == 1 or kind == "contents"):
                return f"{at}: unnamed in the construct declaration"
        elif name not in (leaf, f.orig_id):
            return f"{at}: construct names it {name!r}, the schema {leaf!r} ({f.orig_id!r})"
        if (kind, size, endian) != (f.kind, f.size, f.endian):
            return (f"{at}: construct {kind}{size}{endian or ''}, "
                    f"schema {f.kind}{f.size}{f.endian or ''}")
        if contents != f.contents:
            return f"{at}: construct contents {contents!r}, schema {f.contents!r}"
    if con.sizeof() - sum(s for _, _, s, _, _ in _construct_fields(con)[:skip]) != layout.size:
        return f"{where}: construct size {con.sizeof()}, schema {layout.size}"
    return None


#: (construct declaration, its .ksy type, leading construct fields not in that type)
PAIRS: dict[str, tuple[cs.Construct, L.Layout, int]] = {
    "swh.HEADER": (w_swh.HEADER, L.SWH_READ_SHARD, 0),
    "swh.INDEX_ENTRY": (w_swh.INDEX_ENTRY, L.SWH_READ_SHARD__INDEX_ENTRY, 0),
    "swh.OBJECT_SIZE": (w_swh.OBJECT_SIZE, L.SWH_READ_SHARD__SHARD_OBJECT__HEAD, 0),
    "xet_mdb.Header": (w_mdb.Header, L.XET_MDB_SHARD__HEADER, 0),
    "xet_mdb.FileDataSequenceHeader": (w_mdb.FileDataSequenceHeader,
                                       L.XET_MDB_SHARD__FILE_BLOCK__HEAD, 0),
    "xet_mdb.FileDataSequenceEntry": (w_mdb.FileDataSequenceEntry, L.XET_MDB_SHARD__FILE_TERM, 0),
    "xet_mdb.FileVerificationEntry": (w_mdb.FileVerificationEntry,
                                      L.XET_MDB_SHARD__VERIFICATION_ENTRY, 0),
    "xet_mdb.FileMetadataExt": (w_mdb.FileMetadataExt, L.XET_MDB_SHARD__METADATA_EXT, 0),
    "xet_mdb.XorbChunkSequenceHeader": (w_mdb.XorbChunkSequenceHeader,
                                        L.XET_MDB_SHARD__XORB_BLOCK__HEAD, 0),
    "xet_mdb.XorbChunkSequenceEntry": (w_mdb.XorbChunkSequenceEntry,
                                       L.XET_MDB_SHARD__CHUNK_ENTRY, 0),
    "xet_mdb.LookupEntry": (w_mdb.LookupEntry, L.XET_MDB_SHARD__LOOKUP_ENTRY, 0),
    "xet_mdb.ChunkLookupEntry": (w_mdb.ChunkLookupEntry, L.XET_MDB_SHARD__CHUNK_LOOKUP_ENTRY, 0),
    "xet_mdb.MdbFooterStruct": (w_mdb.MdbFooterStruct, L.XET_MDB_SHARD__FOOTER, 0),
    # the element's ID and size VINTs are mosaic.ksy's generic `element`; its data is `crc32`
    "mosaic.CRC32_ELEMENT": (w_mosaic.CRC32_ELEMENT, L.MOSAIC__CRC32, 2),
}
#: module-level constructs with no fixed-size .ksy type to check against, and why
UNPAIRED = {
    "xet_mdb.Hash": "a 32-byte field, not a record",
    "xet_mdb.Bookend": "a file_block / xorb_block whose hash is all 0xff: no type of its own",
    "mosaic.UINT8_ELEMENT": "an EBML element whose data is mosaic.ksy's variable-size `uint`",
}


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_construct_declaration_matches_its_ksy_type(name: str) -> None:
    con, layout, skip = PAIRS[name]
    assert layout_mismatch(con, layout, skip) is None


def test_every_construct_of_the_writers_is_checked() -> None:
    found = {f"{mod.__name__.rsplit('.', 1)[1]}.{attr}"
             for mod in (w_swh, w_mdb, w_mosaic) for attr, value in vars(mod).items()
             if isinstance(value, cs.Construct) and value is not getattr(cs, attr, None)}
    assert found == set(PAIRS) | set(UNPAIRED)


def _swapped(con: cs.Struct, i: int, new: cs.Construct) -> cs.Struct:
    subcons = list(con.subcons)
    subcons[i] = new
    return cs.Struct(*subcons)


@pytest.mark.parametrize(("altered", "layout", "message"), [
    # one byte order changed (the index slot's offset little-endian)
    (cs.Struct("key" / cs.Bytes(32), "object_offset" / cs.Int64ul),
     L.SWH_READ_SHARD__INDEX_ENTRY, "ofs_object (field 1): construct u8<, schema u8>"),
    # one field renamed
    (_swapped(w_mdb.LookupEntry, 1, "idx" / cs.Int32ul), L.XET_MDB_SHARD__LOOKUP_ENTRY,
     "construct names it 'idx'"),
    # two fields swapped
    (cs.Struct(*[w_mdb.ChunkLookupEntry.subcons[i] for i in (0, 2, 1)]),
     L.XET_MDB_SHARD__CHUNK_LOOKUP_ENTRY, "idx_xorb_record (field 1): construct names it"),
    # a width changed
    (_swapped(w_mdb.XorbChunkSequenceEntry, 4, "reserved" / cs.Int64ul),
     L.XET_MDB_SHARD__CHUNK_ENTRY, "reserved (field 4): construct u8<, schema u4<"),
    # a hash one byte short
    (_swapped(w_mdb.FileDataSequenceEntry, 0, "cas_hash" / cs.Bytes(31)),
     L.XET_MDB_SHARD__FILE_TERM, "xorb_hash (field 0): construct bytes31, schema bytes32"),
    # a field dropped, a field added
    (cs.Struct(*w_mdb.Header.subcons[:2]), L.XET_MDB_SHARD__HEADER,
     "len_footer: missing from the construct declaration"),
    (cs.Struct(*w_swh.INDEX_ENTRY.subcons, "extra" / cs.Int8ub), L.SWH_READ_SHARD__INDEX_ENTRY,
     "construct field 'extra' is not in the schema"),
    # another magic
    (_swapped(w_swh.HEADER, 0, "magic" / cs.Const(b"SWHShard\x01")), L.SWH_READ_SHARD,
     "construct contents b'SWHShard\\x01'"),
    # a signed field where the schema has an unsigned one
    (cs.Struct("version" / cs.Int64sl, *w_mdb.MdbFooterStruct.subcons[1:]),
     L.XET_MDB_SHARD__FOOTER, "version (field 0): construct s8<, schema u8<"),
])
def test_an_altered_declaration_fails_the_check(altered: cs.Construct, layout: L.Layout,
                                                message: str) -> None:
    problem = layout_mismatch(altered, layout)
    assert problem is not None and message in problem, problem


def test_the_writers_bytes_read_back_through_the_layouts() -> None:
    """What a construct declaration builds, the generated struct format reads field for field."""
    rng = random.Random(5)
    for name, (con, layout, skip) in PAIRS.items():
        fields = _construct_fields(con)
        values: dict[str | None, Any] = {}
        want = []
        for fname, kind, size, _, contents in fields:
            if contents is not None:
                want.append(contents)
            elif fname is None and kind == "bytes":
                want.append(bytes(size))  # padding
            else:
                values[fname] = (rng.randbytes(size) if kind == "bytes"
                                 else rng.getrandbits(8 * size))
                want.append(values[fname])
        raw = con.build(values if isinstance(con, cs.Struct) else values[None])
        lead = sum(size for _, _, size, _, _ in fields[:skip])
        assert _layouts.struct_of(layout).unpack(raw[lead:]) == tuple(want[skip:]), name


# -- the generated layouts against themselves and the Kaitai parsers ----------------------------


def _camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


def _seq_attr(schema: dict[str, Any], type_name: str, path: str) -> dict[str, Any]:
    """The .ksy seq entry of a field path (through nested types)."""
    spec = schema if type_name == schema["meta"]["id"] else schema["types"][type_name]
    *outer, leaf = path.split("/")
    for part in outer:
        attr = next(a for a in spec["seq"] if a.get("id") == part)
        spec = schema["types"][attr["type"]]
    return next(a for a in spec["seq"] if a.get("id") == leaf)


def _record_bytes(layout: L.Layout, rng: random.Random) -> bytes:
    """A record of distinct values, each integer its schema's `valid` value where it has one."""
    schema = yaml.safe_load((SCHEMAS / f"{layout.schema}.ksy").read_text())
    out = bytearray()
    for f in layout.fields:
        if f.contents is not None:
            out += f.contents
            continue
        valid = _seq_attr(schema, layout.type, f.path).get("valid")
        if isinstance(valid, dict):
            bound = valid.get("eq", valid.get("min", valid.get("max")))
            valid = (valid.get("any-of") or [bound])[-1]
        if f.kind in "us" and isinstance(valid, int):
            out += valid.to_bytes(f.size, "little" if f.endian == "<" else "big",
                                  signed=f.kind == "s")
        elif f.kind == "f":  # finite values (random bytes may be NaN, which equals nothing)
            out += struct.pack(f"{f.endian or '<'}{'f' if f.size == 4 else 'd'}", rng.random())
        else:
            out += rng.randbytes(f.size)
    return bytes(out)


@pytest.mark.parametrize("layout", L.LAYOUTS, ids=lambda lay: f"{lay.schema}::{lay.type}")
def test_layout_agrees_with_itself(layout: L.Layout) -> None:
    assert layout.fmt is not None and struct.calcsize(layout.fmt) == layout.size
    dtype = np.dtype(layout.dtype)
    assert dtype.itemsize == layout.size
    at = 0
    for f in layout.fields:
        assert f.offset == at
        at += f.size
    assert at == layout.size
    raw = _record_bytes(layout, random.Random(layout.size))
    by_struct = struct.unpack(layout.fmt, raw)
    rec = np.frombuffer(raw, dtype)[0]
    for f, value in zip(layout.fields, by_struct, strict=True):
        item: Any = rec
        for part in f.path.split("/"):
            item = item[part]
        assert (item.tobytes() if f.kind in ("bytes", "contents") else item.item()) == value


@pytest.mark.parametrize("layout", [lay for lay in L.LAYOUTS if lay.whole],
                         ids=lambda lay: f"{lay.schema}::{lay.type}")
def test_layout_reads_what_the_kaitai_parser_reads(layout: L.Layout) -> None:
    module = importlib.import_module(f"shardkit.generated.{layout.schema}")
    cls = getattr(module, _camel(layout.schema))
    if layout.type != layout.schema:
        cls = getattr(cls, _camel(layout.type))
    schema = yaml.safe_load((SCHEMAS / f"{layout.schema}.ksy").read_text())
    spec = schema if layout.type == layout.schema else schema["types"][layout.type]
    params = [0] * len(spec.get("params") or ())  # the fixed fields never depend on them
    raw = _record_bytes(layout, random.Random(len(layout.fields)))
    parsed = cls(*params, KaitaiStream(io.BytesIO(raw + bytes(64))))
    values = struct.unpack(layout.fmt or "", raw)
    for f, value in zip(layout.fields, values, strict=True):
        item: Any = parsed
        for part in f.path.split("/"):
            item = getattr(item, part)
        assert getattr(item, "value", item) == value, f.path  # an enum member: its value


def test_readers_and_writers_use_the_generated_layouts() -> None:
    assert swh_model.INDEX_DTYPE.itemsize == swh_model.SLOT_SIZE == w_swh.INDEX_ENTRY.sizeof()
    assert swh_model.INDEX_DTYPE["ofs"] == np.dtype(">u8")
    assert swh_model._ENTRY.format == L.SWH_READ_SHARD__INDEX_ENTRY.fmt == ">32sQ"
    assert swh_model.HEADER_END == w_swh.HEADER.sizeof() == 88
    assert mdb_model.RECORD_SIZE == mdb_model.CHUNK_DTYPE.itemsize == 48
    assert mdb_model._LOOKUP_DTYPE.names == ("key", "index")
    assert w_mdb._LOOKUP_DTYPE is mdb_model._LOOKUP_DTYPE
    assert mdb_model._FOOTER_AT["ofs_footer"] == 192 and mdb_model.FOOTER_SIZE == 200
    assert mdb_model._FILE_HEAD.format == "<32sIIQ"
    assert (ng_spec.ENTRY_WORD, ng_spec.ENTRY_SIZE, ng_spec._ENTRY.format) == ("<u8", 16, "<QQ")


def test_dtype_spec_names_every_field() -> None:
    spec = _layouts.dtype_spec(L.XET_MDB_SHARD__LOOKUP_ENTRY, "key", "index")
    assert spec == [("key", "<u8"), ("index", "<u4")]
    with pytest.raises(ValueError, match="has 2 fields, not 1"):
        _layouts.dtype_spec(L.XET_MDB_SHARD__LOOKUP_ENTRY, "key")
    entry = L.XET_MDB_SHARD__LOOKUP_ENTRY
    mixed = L.Layout(*entry[:4], None, *entry[5:])  # fmt None: byte orders mixed
    with pytest.raises(ValueError, match="mixes byte orders"):
        _layouts.struct_of(mixed)


# -- one edit in the .ksy: the generated layouts follow, the construct check catches the writer --


def _generator() -> Any:
    path = Path(__file__).resolve().parents[1] / "tools" / "gen_layouts.py"
    spec = importlib.util.spec_from_file_location("gen_layouts", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_layouts", module)  # its dataclasses look their module up
    spec.loader.exec_module(sys.modules["gen_layouts"])
    return sys.modules["gen_layouts"]


def test_generated_layouts_are_what_the_schemas_give() -> None:
    generated = Path(L.__file__).read_text()
    assert _generator().render() == generated


def test_a_layout_changed_in_the_ksy_alone_fails(tmp_path: Path) -> None:
    """The slot's offset made a u4 in a copy of the schema: the generated layout changes with it
    and the writer's construct declaration (still a u8) no longer passes the check."""
    text = (SCHEMAS / "swh_read_shard.ksy").read_text()
    old = "      - id: ofs_object\n        -orig-id: object_offset\n        type: u8\n"
    assert text.count(old) == 1
    (tmp_path / "swh_read_shard.ksy").write_text(text.replace(old, old.replace("u8", "u4")))
    gen = _generator()
    namespace: dict[str, Any] = {}
    exec(gen.render(tmp_path), namespace)  # the module make generate would write from the copy
    changed = namespace["SWH_READ_SHARD__INDEX_ENTRY"]
    assert (changed.size, changed.fmt) == (36, ">32sI")
    assert layout_mismatch(w_swh.INDEX_ENTRY, L.SWH_READ_SHARD__INDEX_ENTRY) is None
    assert layout_mismatch(w_swh.INDEX_ENTRY, changed) == (
        "swh_read_shard::index_entry/ofs_object (field 1): construct u8>, schema u4>")


# -- the same layouts for C: generated/layouts.h ----------------------------------------------


def _header_macros(text: str) -> dict[str, int]:
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "#define" and parts[2].isdigit():
            out[parts[1]] = int(parts[2])
    return out


def test_c_header_is_what_the_schemas_give() -> None:
    header = Path(L.__file__).with_name("layouts.h").read_text()
    assert _generator().render_header() == header
    macros = _header_macros(header)
    for name in L.__dict__:
        layout = getattr(L, name)
        if not isinstance(layout, L.Layout) or name == "Layout":
            continue
        assert macros.pop(f"SHARDKIT_{name}_SIZE") == layout.size
        for f in layout.fields:
            field = f"SHARDKIT_{name}_F_{f.path.replace('/', '__').upper()}"
            assert (macros.pop(f"{field}_OFFSET"), macros.pop(f"{field}_SIZE")) == (f.offset,
                                                                                     f.size)
    assert macros == {}  # nothing in the header that layouts.py does not have


def test_c_header_follows_a_ksy_edit(tmp_path: Path) -> None:
    """The slot's offset made a u4 in a copy of the schema: the C accelerator's SLOT_SIZE
    (the index entry's size) changes with it, and the header's guard sees the new field size."""
    text = (SCHEMAS / "swh_read_shard.ksy").read_text()
    old = "      - id: ofs_object\n        -orig-id: object_offset\n        type: u8\n"
    (tmp_path / "swh_read_shard.ksy").write_text(text.replace(old, old.replace("u8", "u4")))
    macros = _header_macros(_generator().render_header(tmp_path))
    assert macros["SHARDKIT_SWH_READ_SHARD__INDEX_ENTRY_SIZE"] == 36
    assert macros["SHARDKIT_SWH_READ_SHARD__INDEX_ENTRY_F_OFS_OBJECT_SIZE"] == 4


def test_the_c_accelerators_use_only_generated_macros() -> None:
    """Every SHARDKIT_ layout macro the C sources name is one the header defines."""
    import re

    macros = _header_macros(Path(L.__file__).with_name("layouts.h").read_text())
    src = Path(__file__).resolve().parents[1] / "src"
    used = set()
    for c in src.rglob("*.c"):
        used |= set(re.findall(r"\bSHARDKIT_[A-Z0-9_]+\b", c.read_text()))
    assert "SHARDKIT_SWH_READ_SHARD__INDEX_ENTRY_SIZE" in used
    assert used - {"SHARDKIT_LAYOUTS_H"} <= set(macros)


# -- partial views: some fields of a record, the bytes between them skipped ------------------


def test_partial_views_come_from_the_layouts() -> None:
    from shardkit.formats.xet_mdb import reader as mdb_reader
    from shardkit.view import locate

    head = L.XET_MDB_SHARD__FILE_BLOCK__HEAD
    walk = _layouts.view_of(head, ("file_hash", "Q"), "flags", "num_terms")
    assert walk.format == "<Q24xII" and walk.size == 40
    assert mdb_reader._WALK.format == walk.format
    # the xorb head has its flags and count at the same places: one view reads both sections
    assert _layouts.view_of(L.XET_MDB_SHARD__XORB_BLOCK__HEAD, ("xorb_hash", "Q"), "flags",
                            "num_chunks").format == walk.format
    raw = bytes(range(48))
    word0, flags, count = walk.unpack_from(raw)
    full = _layouts.struct_of(head).unpack(raw)
    assert (word0, flags, count) == (int.from_bytes(raw[:8], "little"), full[1], full[2])
    assert (locate._ENTRY.format, locate.SLOT_SIZE) == (">32sQ", swh_model.SLOT_SIZE)
    assert locate._OBJECT_HEAD.format == ">Q"


@pytest.mark.parametrize(("picks", "message"), [
    (("nope",), "has no field 'nope'"),
    (("flags", "file_hash"), "before the end of the field picked before it"),
    ((("flags", "Q"),), "wider than 'flags'"),
])
def test_a_bad_partial_view_is_refused(picks: tuple[Any, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _layouts.view_of(L.XET_MDB_SHARD__FILE_BLOCK__HEAD, *picks)
