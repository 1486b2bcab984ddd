"""Amudai shard writer: single-file and two-level shards, Plain blocks (LZ4/Zstd optional).

Follows the writer recipe of FORMAT_NOTES.md (sections 1.6 and 6, with the corrections of
section 8): header; every stripe's encoded buffers (64-aligned, fields post-order, children
before their parent); per stripe the StripeFieldDescriptor records, the stripe field list
(DataRefArray) and StripeProperties; the StripeList, UrlList, shard-level FieldDescriptors and
their DataRefArray, ShardProperties, the schema record, the ShardDirectory record, u32 L and the
footer. Every reference into the same file has url ``""``. Output is deterministic.

Beyond the recipe, on request: index descriptors at shard, stripe and field level
(:class:`IndexSpec`; their artifacts inside the root file or in files beside it; the shard's
IndexCollection record goes after ShardProperties, a stripe's after its StripeProperties), and
Roaring presence sections (``presence="roaring"`` or ``"auto"``, FORMAT_NOTES.md 4.2).

Layout is plain Python over ``struct``; the protobuf messages use the classes generated from
``schemas/amudai/*.proto`` (property values: :mod:`.amudai_values`); the FlatBuffers schema
is built with the raw ``flatbuffers.Builder`` (slot numbers from the notes, independent of the
generated reader code) in :mod:`.amudai_nodes`, which also numbers the fields into nodes and
shreds the values into one column per node.

Example::

    schema = [field("id", "Int64"), field("name", "String")]
    data = build_amudai(schema, [{"id": [1, 2], "name": ["a", None]}])
"""

from __future__ import annotations

import io
import struct
from collections.abc import Iterable, Iterator, Mapping, Sequence, Sized
from dataclasses import dataclass, replace
from dataclasses import fields as dc_fields
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import xxhash

from ..generated import amudai_common_pb2 as cpb
from ..generated import amudai_shard_pb2 as spb
from ..hashing.amudai import checksum
from ._atomic import AtomicFiles, atomic_files
from .amudai_blocks import (  # noqa: F401 - ROARING_COOKIE, SEGMENT_SIZE: kept importable
    LZ4,
    PLAIN,
    PRESENCE_MODES,
    ROARING_COOKIE,
    SEGMENT_SIZE,
    ZSTD,
    _binary_values,
    _numeric_values,
    _pad,
    _presence_section,
    block_map,
    plain_block,
    roaring_bitmap,
    value_dictionary,
)
from .amudai_nodes import _dtype, _fb_schema, _Node, _number, _post_order, _shred, _walk
from .amudai_schema import BASIC_TYPES, FieldSpec, field
from .amudai_stats import _BYTES_TYPES, _NUMERIC, Summary
from .amudai_values import (  # noqa: F401 - TICKS_EPOCH: kept importable
    TICKS_EPOCH,
    AnyValueBytes,
    _name_values,
    _pair_messages,
    _ser,
    _ticks,
    encode_any_value,
)

if TYPE_CHECKING:
    from .amudai_ingest import ingest

__all__ = [
    "BASIC_TYPES",
    "FRAME",
    "AmudaiWriteOptions",
    "AnyValueBytes",
    "ArtifactSpec",
    "FieldSpec",
    "IndexSpec",
    "block_map",
    "build_amudai",
    "build_amudai_files",
    "encode_any_value",
    "field",
    "ingest",
    "plain_block",
    "roaring_bitmap",
    "value_dictionary",
    "write_amudai",
]

FRAME = b"amud\x00\x01\x00\x00"
NO_PARENT = 0xFFFF_FFFF
BLOCK_VALUES = 8192  # Plain profile: values (or bytes) per block


@dataclass(frozen=True)
class ArtifactSpec:
    """One artifact of an index to write (``IndexArtifact``).

    Attributes:
        name: Artifact name.
        data: Bytes to store (e.g. a whole Amudai shard from :func:`build_amudai`). With
            ``url`` "" they go inside the root file (64-aligned); otherwise into a file of
            that name next to the root, and the reference covers the whole file.
        url: The artifact's file, relative to the root's folder ("" = the root file).
        range: Without ``data``: the byte range to reference in ``url`` as it is (an
            existing file, or bytes already in the root file).
        properties: Artifact properties (name -> Python value or AnyValueBytes).
    """

    name: str
    data: bytes | None = None
    url: str = ""
    range: tuple[int, int] | None = None
    properties: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class IndexSpec:
    """An index descriptor to write (``IndexDescriptor``; FORMAT_NOTES.md 7).

    Attributes:
        index_type: ``inverted-term-index-v1``, ``hashmap-index``, or any name.
        indexed_fields: One entry per indexed field: a tuple of schema ids written as given,
            or a dotted path standing for that node's schema id alone.
        artifacts: The stored parts.
        properties: Index properties (name -> Python value or AnyValueBytes).
        index_size: Total artifact size to record (None: not recorded).
    """

    index_type: str
    indexed_fields: tuple[tuple[int, ...] | str, ...] = ()
    artifacts: tuple[ArtifactSpec, ...] = ()
    properties: Mapping[str, Any] | None = None
    index_size: int | None = None


@dataclass(frozen=True)
class AmudaiWriteOptions:
    """How :func:`build_amudai_files`, :func:`build_amudai` and :func:`write_amudai` write a
    shard; each field may also be given to them as a keyword of the same name.

    Attributes:
        compression: ``plain`` (default), ``lz4`` or ``zstd`` for numeric and variable-size
            binary blocks (small blocks stay Plain, as the reference writer does).
        block_checksums: Write the per-block checksums (the reference default).
        presence: Presence sections of numeric and binary blocks with some nulls: ``bytes``
            (default; the Plain profile: ``02`` + one byte per value), ``roaring`` (always
            Roaring, listing the null or the present positions, whichever is fewer), or
            ``auto`` (the reference's Balanced rule: Roaring of the null positions below 1 %
            nulls, of the present positions above 99 %, bytes otherwise).
        properties: ShardProperties.custom_properties (name -> Python value or AnyValueBytes).
        standard_properties: ShardProperties.standard_properties.
        stripe_properties: Per stripe, StripeProperties.custom_properties (None: none).
        created: ``(creation_min, creation_max)`` for ShardProperties.
        indexes: Shard-level index descriptors (the directory's ``indexes_ref``).
        stripe_indexes: Per stripe, its index descriptors (``StripeDirectory.indexes_ref``).
        field_indexes: Field path -> index descriptors of its shard-level FieldDescriptor.
        stripe_field_indexes: Per stripe, field path -> index descriptors of its
            StripeFieldDescriptor.
    """

    compression: str = "plain"
    block_checksums: bool = True
    presence: str = "bytes"
    properties: Mapping[str, Any] | None = None
    standard_properties: Mapping[str, Any] | None = None
    stripe_properties: Sequence[Mapping[str, Any] | None] | None = None
    created: tuple[datetime, datetime] | None = None
    indexes: Sequence[IndexSpec] | None = None
    stripe_indexes: Sequence[Sequence[IndexSpec] | None] | None = None
    field_indexes: Mapping[str, Sequence[IndexSpec]] | None = None
    stripe_field_indexes: Sequence[Mapping[str, Sequence[IndexSpec]] | None] | None = None

    @classmethod
    def of(cls, options: AmudaiWriteOptions | None, given: Mapping[str, Any]
           ) -> AmudaiWriteOptions:
        """``options`` (None: the defaults) with the keywords ``given`` in place of its
        fields.

        Raises:
            TypeError: A keyword that is not a field, named.
        """
        unknown = sorted(set(given) - {f.name for f in dc_fields(cls)})
        if unknown:
            raise TypeError(f"unexpected keyword argument(s) {', '.join(unknown)} (the "
                            f"writer's options: {', '.join(f.name for f in dc_fields(cls))})")
        return replace(options or cls(), **given)


# --- the file ---------------------------------------------------------------------------


class _Blob:
    """A framed artifact being written to ``out`` (header written on creation)."""

    def __init__(self, url: str, out: Any = None) -> None:
        self.url = url
        self.out = io.BytesIO() if out is None else out
        self.pos = 0
        self.put(FRAME)

    def align(self, to: int) -> None:
        self.put(bytes(_pad(self.pos, to)))

    def put(self, payload: bytes | memoryview) -> tuple[int, int]:
        start = self.pos
        self.out.write(payload)
        self.pos += len(payload)
        return start, self.pos

    def record(self, payload: bytes) -> tuple[int, int]:
        """A length-message-checksum record; returns its whole range."""
        return self.put(struct.pack("<I", len(payload)) + payload
                        + struct.pack("<I", checksum(payload)))


def _ref(url: str, rng: tuple[int, int] | None) -> cpb.DataRef:
    ref = cpb.DataRef(url=url)
    if rng is not None:
        ref.range.start, ref.range.end = rng
    return ref


class _StripeWriter:
    """Encodes one stripe's nodes into buffers of ``blob``."""

    def __init__(self, blob: _Blob, codec: int, checksums: bool, presence: str = "bytes"
                 ) -> None:
        self.blob = blob
        self.codec = codec
        self.checksums = checksums
        self.presence = presence

    def _buffer(self, kind: int, blocks: Iterable[tuple[int, bytes]], *,
                presence: bool = False, offsets: bool = False) -> spb.EncodedBuffer:
        """Write the blocks (as they come), their padding and the block map."""
        self.blob.align(64)
        start = self.blob.pos
        sizes = []
        for n, block in blocks:
            self.blob.put(block)
            sizes.append((n, len(block)))
        self.blob.align(16)
        bmap = block_map(sizes)
        _, end = self.blob.put(bmap)
        buf = spb.EncodedBuffer(kind=kind, block_count=len(sizes),
                                block_checksums=self.checksums,
                                embedded_presence=presence, embedded_offsets=offsets)
        buf.buffer.CopyFrom(_ref(self.blob.url, (start, end)))
        buf.block_map.CopyFrom(_ref(self.blob.url, (end - len(bmap), end)))
        return buf

    def _fixed_stream(self, arr: np.ndarray, valid: np.ndarray | None, per_block: int,
                      codec: int) -> Iterator[tuple[int, bytes]]:
        for lo in range(0, len(arr), per_block):
            chunk = arr[lo : lo + per_block]
            pres = None if valid is None else _presence_section(valid[lo : lo + per_block],
                                                                  len(chunk), self.presence)
            yield len(chunk), plain_block(_numeric_values(chunk.tobytes(), codec), pres,
                                          self.checksums)

    def bits(self, kind: int, flags: list[bool]) -> spb.EncodedBuffer:
        packed = np.packbits(np.asarray(flags, bool), bitorder="little")
        return self._buffer(kind, self._fixed_stream(packed, None, BLOCK_VALUES, PLAIN))

    def numeric(self, spec: FieldSpec, values: list[Any] | np.ndarray) -> spb.EncodedBuffer:
        if isinstance(values, np.ndarray):  # no nulls (see _numeric_array)
            valid, arr = np.ones(len(values), bool), values
        else:
            valid = np.array([v is not None for v in values], bool)
            arr = np.array([0 if v is None else v for v in values], _dtype(spec))
        return self._buffer(spb.DATA, self._fixed_stream(arr, valid, BLOCK_VALUES, self.codec),
                            presence=True)

    def binary(self, spec: FieldSpec, values: list[Any] | np.ndarray) -> spb.EncodedBuffer:
        fixed = spec.fixed_size if spec.type in ("FixedSizeBinary", "Guid") else 0
        blocks = []
        for lo in range(0, len(values), BLOCK_VALUES):
            chunk = values[lo : lo + BLOCK_VALUES]
            valid = np.array([v is not None for v in chunk], bool)
            items = [(bytes(fixed) if fixed else b"") if v is None else v for v in chunk]
            blocks.append((len(chunk), plain_block(_binary_values(items, fixed, self.codec),
                                                   _presence_section(valid, len(chunk),
                                                                     self.presence),
                                                   self.checksums)))
        return self._buffer(spb.DATA, blocks, presence=True, offsets=not fixed)

    def dictionary(self, spec: FieldSpec, values: list[Any] | np.ndarray
                   ) -> tuple[list[spb.EncodedBuffer], int]:
        fixed = spec.fixed_size if spec.type in ("FixedSizeBinary", "Guid") else 0
        index: dict[Any, int] = {}
        entries: list[bytes] = []
        null_id = None
        ids = []
        for v in values:
            if v not in index:
                index[v] = len(entries)
                if v is None:
                    null_id = len(entries)
                entries.append((bytes(fixed) if fixed else b"") if v is None else v)
            ids.append(index[v])
        arr = np.asarray(ids, "<u4")
        data = self._buffer(spb.DATA, self._fixed_stream(arr, None, BLOCK_VALUES, PLAIN))
        dict_bytes = value_dictionary(entries, null_id, BASIC_TYPES[spec.type], fixed)
        self.blob.align(64)
        start, end = self.blob.put(dict_bytes)
        vd = spb.EncodedBuffer(kind=spb.VALUE_DICTIONARY, block_checksums=False)
        vd.buffer.CopyFrom(_ref(self.blob.url, (start, end)))
        return [data, vd], len(entries)

    def offsets(self, lengths: list[int | None] | np.ndarray) -> spb.EncodedBuffer:
        offs = np.zeros(len(lengths) + 1, "<u8")
        np.cumsum([n or 0 for n in lengths], out=offs[1:])
        return self._buffer(spb.OFFSETS, self._fixed_stream(offs, None, BLOCK_VALUES, PLAIN))


def _encode_node(w: _StripeWriter, node: _Node, values: list[Any] | np.ndarray
                 ) -> tuple[spb.StripeFieldDescriptor, Summary]:
    """Write the buffers of one node of one stripe; its descriptor and its summary."""
    spec = node.spec
    t = spec.type
    summary = Summary.of(spec, values)
    constant = summary.constant(empty=t == "Boolean")  # an empty bool field: constant null
    buffers: list[spb.EncodedBuffer] = []
    dict_size = None
    if constant:
        pass
    elif t == "Boolean":
        buffers.append(w.bits(spb.DATA, [bool(v) for v in values]))
        if any(v is None for v in values):
            buffers.append(w.bits(spb.PRESENCE, [v is not None for v in values]))
    elif t in _NUMERIC:
        buffers.append(w.numeric(spec, values))
    elif t in _BYTES_TYPES:
        if spec.dictionary:
            buffers, dict_size = w.dictionary(spec, values)
        else:
            buffers.append(w.binary(spec, values))
    else:  # Struct, List, Map, FixedSizeList
        if t in ("List", "Map"):
            buffers.append(w.offsets(values))
        if any(v is None for v in values):
            buffers.append(w.bits(spb.PRESENCE, [v is not None for v in values]))
    sfd = spb.StripeFieldDescriptor()
    sfd.field.CopyFrom(summary.descriptor(constant, dict_size))
    sfd.encodings.add().native.buffers.extend(buffers)
    return sfd, summary


def _data_ref_array(urls: list[str], ranges: list[tuple[int, int] | None]) -> bytes:
    arr = cpb.DataRefArray(url=urls)
    arr.start.extend(r[0] if r else 0 for r in ranges)
    arr.end.extend(r[1] if r else 0 for r in ranges)
    return _ser(arr)


# --- entry points ---------------------------------------------------------------------------


def _codec(compression: str) -> int:
    try:
        return {"plain": PLAIN, "none": PLAIN, "lz4": LZ4, "zstd": ZSTD}[compression.lower()]
    except KeyError:
        raise ValueError(f"unknown compression {compression!r} (plain, lz4, zstd)") from None


def stripe_file_name(root_name: str, index: int) -> str:
    """The stripe file of stripe ``index`` in a two-level shard: ``{id:x}.amudai.stripe``."""
    return f"{xxhash.xxh3_64_intdigest(f'{root_name}/{index}'.encode()):x}.amudai.stripe"


class _Indexes:
    """Serializes IndexCollections, storing the artifacts' data as it goes."""

    def __init__(self, root: _Blob, files: dict[str, bytes], paths: Mapping[str, int],
                 reserved: set[str]) -> None:
        self.root = root
        self.files = files
        self.paths = paths
        self.reserved = reserved

    @staticmethod
    def urls(specs: Iterable[IndexSpec]) -> list[str]:
        """Distinct non-empty artifact urls, in order of appearance (for the UrlList)."""
        return list(dict.fromkeys(a.url for spec in specs for a in spec.artifacts if a.url))

    def _artifact(self, a: ArtifactSpec) -> spb.IndexArtifact:
        if a.data is not None and a.range is not None:
            raise ValueError(f"artifact {a.name!r}: give data or range, not both")
        if a.data is not None and a.url:
            if a.url in self.reserved or "/" in a.url or "\\" in a.url or a.url in (".", ".."):
                raise ValueError(f"artifact {a.name!r}: {a.url!r} is not a free file name "
                                 "beside the root")
            if self.files.get(a.url, a.data) != a.data:
                raise ValueError(f"artifact {a.name!r}: {a.url!r} written twice, differently")
            self.files[a.url] = a.data
            rng: tuple[int, int] | None = (0, len(a.data))
        elif a.data is not None:
            self.root.align(64)
            rng = self.root.put(a.data)
        else:
            rng = a.range
        art = spb.IndexArtifact(name=a.name, properties=_pair_messages(a.properties))
        art.data_ref.CopyFrom(_ref(a.url, rng))
        return art

    def _field(self, entry: tuple[int, ...] | str) -> spb.IndexedField:
        if isinstance(entry, str):
            if entry not in self.paths:
                raise ValueError(f"indexed field {entry!r} is not in the schema")
            return spb.IndexedField(schema_ids=[self.paths[entry]])
        return spb.IndexedField(schema_ids=list(entry))

    def collection(self, specs: Sequence[IndexSpec]) -> spb.IndexCollection:
        """The IndexCollection of ``specs`` (artifact data stored now)."""
        coll = spb.IndexCollection()
        for spec in specs:
            d = coll.index_descriptors.add(index_type=spec.index_type,
                                           properties=_pair_messages(spec.properties))
            d.indexed_fields.extend(self._field(f) for f in spec.indexed_fields)
            d.artifacts.extend(self._artifact(a) for a in spec.artifacts)
            if spec.index_size is not None:
                d.index_size = spec.index_size
        return coll


def _paths(nodes: Sequence[_Node], prefix: str = "") -> dict[str, int]:
    out: dict[str, int] = {}
    for node in nodes:
        path = f"{prefix}.{node.spec.name}" if prefix else node.spec.name
        out[path] = node.schema_id
        out.update(_paths(node.children, path))
    return out


def _field_index_ids(paths: Mapping[str, int], given: Mapping[str, Sequence[IndexSpec]] | None
                     ) -> dict[int, Sequence[IndexSpec]]:
    out = {}
    for path, specs in (given or {}).items():
        if path not in paths:
            raise ValueError(f"field indexes for {path!r}: no such field")
        out[paths[path]] = specs
    return out


class _MemorySink:
    """Files kept in memory (what :func:`build_amudai_files` returns)."""

    def __init__(self) -> None:
        self.files: dict[str, io.BytesIO] = {}

    def open(self, name: str) -> Any:
        self.files[name] = io.BytesIO()
        return self.files[name]

    def close(self, fh: Any) -> None:
        pass

    def value(self, name: str) -> bytes:
        return self.files[name].getvalue()


class _FileSink:
    """Files written into ``folder`` through an :class:`AtomicFiles` group."""

    def __init__(self, folder: Path, group: AtomicFiles) -> None:
        self.folder = folder
        self.group = group

    def open(self, name: str) -> Any:
        return self.group.open(self.folder / name)

    def close(self, fh: Any) -> None:
        self.group.close(fh)


def _stripe_columns(k: int, stripe: Mapping[str, Sequence[Any]], nodes: list[_Node],
                    names: list[str]) -> tuple[dict[int, Any], int]:
    """One stripe shredded: per schema id its position values, and the stripe's records."""
    unknown = set(stripe) - set(names)
    if unknown:
        raise ValueError(f"stripe {k}: no such field(s) {sorted(unknown)}")
    counts = {len(v) for v in stripe.values()}
    if len(counts) > 1:
        raise ValueError(f"stripe {k}: columns of different lengths {sorted(counts)}")
    n = counts.pop() if counts else 0
    cols: dict[int, Any] = {}
    for node in nodes:
        values = stripe.get(node.spec.name)
        _shred(node, [None] * n if values is None else
               values if isinstance(values, (list, np.ndarray)) else list(values), cols)
    return cols, n


def _write_shard(sink: _MemorySink | _FileSink, schema: Sequence[FieldSpec],
                 stripes: Iterable[Mapping[str, Sequence[Any]]], o: AmudaiWriteOptions, *,
                 two_level: bool, root_name: str) -> list[str]:
    """Write a shard's files into ``sink``, one stripe at a time; their names, the root
    first (see :func:`build_amudai_files`)."""
    compression, presence = o.compression, o.presence
    stripe_properties, stripe_indexes = o.stripe_properties, o.stripe_indexes
    stripe_field_indexes, indexes = o.stripe_field_indexes, o.indexes
    codec = _codec(compression)
    if presence not in PRESENCE_MODES:
        raise ValueError(f"unknown presence mode {presence!r} ({', '.join(PRESENCE_MODES)})")
    nodes = _number(schema, NO_PARENT, counter := [0])
    id_count = counter[0]
    names = [n.spec.name for n in nodes]
    if len(set(names)) != len(names):
        raise ValueError("top-level field names must be unique")

    def check_counts(count: int) -> None:
        for what, given in (("stripe_properties", stripe_properties),
                            ("stripe_indexes", stripe_indexes),
                            ("stripe_field_indexes", stripe_field_indexes)):
            if given is not None and len(given) != count:
                raise ValueError(f"{what}: {len(given)} entries for {count} stripes")

    if isinstance(stripes, Sized):
        check_counts(len(stripes))
    paths = _paths(nodes)
    shard_field_idx = _field_index_ids(paths, o.field_indexes)
    stripe_field_idx = [_field_index_ids(paths, m) for m in (stripe_field_indexes or [])]
    root = _Blob("", sink.open(root_name))
    written = [root_name]
    artifacts: dict[str, bytes] = {}
    urls: list[str] = []
    # 1. per stripe, its encoded buffers (post-order) into the root or the stripe's own
    # file; its descriptors and summaries kept, its values dropped
    stripe_sfds, stripe_records, totals = _encode_stripes(
        sink, stripes, nodes, names, root, root_name, codec, o, two_level=two_level,
        urls=urls, written=written)
    check_counts(len(stripe_sfds))
    all_specs = [*(indexes or ()), *(x for sp in stripe_indexes or () for x in sp or ()),
                 *(x for sp in shard_field_idx.values() for x in sp),
                 *(x for m in stripe_field_idx for sp in m.values() for x in sp)]
    urls += [u for u in _Indexes.urls(all_specs) if u not in urls]
    idx = _Indexes(root, artifacts, paths, set(written))
    # 2. per stripe: descriptors, field list, properties, indexes
    stripe_list, position = _stripe_list(root, idx, stripe_sfds, stripe_records, id_count,
                                         stripe_field_idx, o)
    directory = spb.ShardDirectory(total_record_count=position, stripe_count=len(stripe_sfds))
    directory.stripe_list_ref.CopyFrom(_ref("", root.record(_ser(stripe_list))))
    directory.url_list_ref.CopyFrom(_ref("", root.record(_ser(spb.UrlList(urls=urls)))))
    # 3. shard-level field descriptors, from the stripes' summaries merged
    ranges = _shard_field_ranges(root, idx, nodes, totals, shard_field_idx, id_count)
    directory.field_list_ref.CopyFrom(_ref("", root.record(_data_ref_array([""] * id_count,
                                                                             ranges))))
    # 4. shard properties, indexes, schema, directory
    if o.properties or o.standard_properties or o.created:
        props = spb.ShardProperties()
        if o.created:
            props.creation_min.ticks = _ticks(o.created[0])
            props.creation_max.ticks = _ticks(o.created[1])
        raw = (_ser(props) + _name_values(o.standard_properties, 3)
               + _name_values(o.properties, 4))
        directory.properties_ref.CopyFrom(_ref("", root.record(raw)))
    if indexes is not None:
        directory.indexes_ref.CopyFrom(_ref("", root.record(_ser(idx.collection(indexes)))))
    directory.schema_ref.CopyFrom(_ref("", root.record(_fb_schema(nodes, id_count))))
    payload = _ser(directory)
    root.record(payload)
    root.put(struct.pack("<I", len(payload)) + FRAME)
    sink.close(root.out)
    # 5. index artifacts stored in files of their own
    _write_artifacts(sink, artifacts, written)
    return written


def _encode_stripes(sink: _MemorySink | _FileSink, stripes: Iterable[Mapping[str, Sequence[Any]]],
                    nodes: list[_Node], names: list[str], root: _Blob, root_name: str,
                    codec: int, o: AmudaiWriteOptions, *, two_level: bool, urls: list[str],
                    written: list[str]
                    ) -> tuple[list[dict[int, spb.StripeFieldDescriptor]], list[int],
                               dict[int, Summary]]:
    """Step 1 of :func:`_write_shard`: per stripe, its encoded buffers (post-order) into the
    root or the stripe's own file (its name added to ``urls`` and ``written``); per stripe its
    field descriptors and record count, and per schema id the summary over all stripes."""
    presence = o.presence
    stripe_sfds: list[dict[int, spb.StripeFieldDescriptor]] = []
    stripe_records: list[int] = []
    totals = {node.schema_id: Summary(node.spec) for node in _walk(nodes)}
    for k, stripe in enumerate(stripes):
        cols, n = _stripe_columns(k, stripe, nodes, names)
        blob = root
        if two_level:
            url = stripe_file_name(root_name, k)
            blob = _Blob(url, sink.open(url))
            urls.append(url)
            written.append(url)
        w = _StripeWriter(blob, codec, o.block_checksums, presence)
        sfds = {}
        for node in _post_order(nodes):
            sfds[node.schema_id], summary = _encode_node(w, node, cols.pop(node.schema_id))
            totals[node.schema_id] = totals[node.schema_id].merge(summary)
        stripe_sfds.append(sfds)
        stripe_records.append(n if nodes else 0)
        if two_level:
            blob.put(FRAME)
            sink.close(blob.out)
    return stripe_sfds, stripe_records, totals


def _stripe_list(root: _Blob, idx: _Indexes,
                 stripe_sfds: list[dict[int, spb.StripeFieldDescriptor]],
                 stripe_records: list[int], id_count: int,
                 stripe_field_idx: list[dict[int, Sequence[IndexSpec]]], o: AmudaiWriteOptions
                 ) -> tuple[spb.StripeList, int]:
    """Step 2 of :func:`_write_shard`: per stripe its descriptors, field list, properties and
    indexes recorded in the root; the stripe list, and the shard's record count."""
    stripe_properties, stripe_indexes = o.stripe_properties, o.stripe_indexes
    stripe_list = spb.StripeList()
    position = 0
    for k, sfds in enumerate(stripe_sfds):
        ranges: list[tuple[int, int] | None] = [None] * id_count
        for sid in range(id_count):
            specs = stripe_field_idx[k].get(sid) if stripe_field_idx else None
            if specs is not None:
                sfds[sid].field.indexes.CopyFrom(idx.collection(specs))
            ranges[sid] = root.record(_ser(sfds[sid]))
        sd = stripe_list.stripes.add()
        sd.field_list_ref.CopyFrom(_ref("", root.record(_data_ref_array([""] * id_count,
                                                                          ranges))))
        props = (stripe_properties or [None] * len(stripe_sfds))[k]
        if props:
            sd.properties_ref.CopyFrom(_ref("", root.record(_name_values(props, 2))))
        specs = (stripe_indexes or [None] * len(stripe_sfds))[k]
        if specs is not None:
            sd.indexes_ref.CopyFrom(_ref("", root.record(_ser(idx.collection(specs)))))
        sd.total_record_count = stripe_records[k]
        sd.shard_position = position
        position += stripe_records[k]
    return stripe_list, position


def _shard_field_ranges(root: _Blob, idx: _Indexes, nodes: list[_Node],
                        totals: dict[int, Summary],
                        shard_field_idx: dict[int, Sequence[IndexSpec]],
                        id_count: int) -> list[tuple[int, int] | None]:
    """Step 3 of :func:`_write_shard`: the shard-level field descriptors, from the stripes'
    summaries merged, recorded in the root; their ranges by schema id."""
    ranges: list[tuple[int, int] | None] = []
    for node in _walk(nodes):
        total = totals[node.schema_id]
        specs = shard_field_idx.get(node.schema_id)
        if not total.count and specs is None:
            ranges.append(None)
            continue
        d = total.descriptor(total.constant())
        if specs is not None:
            d.indexes.CopyFrom(idx.collection(specs))
        ranges.append(root.record(_ser(d)))
    order = {node.schema_id: i for i, node in enumerate(_walk(nodes))}
    ranges = [ranges[order[sid]] for sid in range(id_count)]
    return ranges


def _write_artifacts(sink: _MemorySink | _FileSink, artifacts: dict[str, bytes],
                     written: list[str]) -> None:
    """Step 5 of :func:`_write_shard`: index artifacts stored in files of their own."""
    for name, data in artifacts.items():
        fh = sink.open(name)
        fh.write(data)
        sink.close(fh)
        written.append(name)


def build_amudai_files(schema: Sequence[FieldSpec],
                       stripes: Iterable[Mapping[str, Sequence[Any]]],
                       options: AmudaiWriteOptions | None = None, *, two_level: bool = True,
                       root_name: str = "shard.amudai.shard", **kw: Any) -> dict[str, bytes]:
    """Build a shard in memory; returns ``{file name: bytes}`` (the root first, then stripe
    files, then index artifact files). :func:`write_amudai` writes the same bytes to disk, one
    stripe at a time.

    Index descriptors are not part of the writer recipe (the reference writer sets no
    ``indexes_ref``); they are written only when asked for. ``None`` writes no reference, an
    empty sequence an empty IndexCollection record, so readers can be tested on both.

    Args:
        schema: Top-level fields.
        stripes: One mapping per stripe (any iterable, a generator too), field name -> that
            stripe's values (Python values; None for null; dicts for Struct, lists for
            List/FixedSizeList, dicts or pairs for Map, datetimes or ticks for DateTime). An
            integer column may be a 1-D integer numpy array, a Float64 column a 1-D float
            array (no nulls either way), taken as it is (any other array: value by value).
        options: How to write it (:class:`AmudaiWriteOptions`; None: the defaults).
        two_level: Put each stripe's buffers in its own ``.amudai.stripe`` file.
        root_name: File name of the root (stripe file names derive from it).
        **kw: Fields of :class:`AmudaiWriteOptions` (``compression="lz4"``...), given one by
            one; they replace those of ``options``.
    """
    sink = _MemorySink()
    written = _write_shard(sink, schema, stripes, AmudaiWriteOptions.of(options, kw),
                           two_level=two_level, root_name=root_name)
    return {name: sink.value(name) for name in written}


def build_amudai(schema: Sequence[FieldSpec], stripes: Iterable[Mapping[str, Sequence[Any]]],
                 options: AmudaiWriteOptions | None = None, *, root_name: str =
                 "shard.amudai.shard", **kw: Any) -> bytes:
    """A single-file shard's bytes (see :func:`build_amudai_files` for the options)."""
    files = build_amudai_files(schema, stripes, options, two_level=False, root_name=root_name,
                               **kw)
    return next(iter(files.values()))


def write_amudai(path: str | Path, schema: Sequence[FieldSpec],
                 stripes: Iterable[Mapping[str, Sequence[Any]]],
                 options: AmudaiWriteOptions | None = None, *, two_level: bool = False,
                 **kw: Any) -> list[Path]:
    """Write a shard at ``path`` (stripe files beside it when ``two_level=True``), streaming.

    ``stripes`` may be any iterable (a generator too): each stripe is shredded, encoded and
    written out, then dropped, so memory holds one stripe's values and the small descriptors
    of the stripes before it, whatever their number. The bytes are those of
    :func:`build_amudai_files` with the same arguments (``root_name`` is ``path``'s name;
    ``two_level`` defaults to False here, a single file). Stripe files of an earlier shard
    written at ``path`` with more stripes are not removed.

    Every file is written under a temporary name and renamed when all are complete, the root
    last: ``path`` never holds a partial shard, and on an error no file is left behind (see
    :mod:`shardkit.writers._atomic`).

    Returns:
        The paths written, the root first.
    """
    path = Path(path)
    o = AmudaiWriteOptions.of(options, kw)
    with atomic_files() as group:
        written = _write_shard(_FileSink(path.parent, group), schema, stripes, o,
                               two_level=two_level, root_name=path.name)
    return [path.parent / name for name in written]


def __getattr__(name: str) -> Any:
    """``ingest`` (:mod:`.amudai_ingest`, which builds on this module) on first use, so that
    neither module imports the other while it loads."""
    if name == "ingest":
        from .amudai_ingest import ingest

        return ingest
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
