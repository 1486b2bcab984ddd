"""Amudai constants and value types (DataRefs, fields, stripes, descriptors, indexes), helpers."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from dataclasses import field as dc_field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, cast

from ...errors import (
    LimitExceededError,
)
from ...hashing.amudai import name_hash
from ._deps import cpb, np, spb
from .blocks import (
    any_value_to_python,
)

#: ``BASIC_TYPES``: BasicType names by number, as the FlatBuffers schema
#: (schemas/amudai/schema.fbs) has them; made on first use (module ``__getattr__``), since the
#: FlatBuffers runtime imports numpy and opening a shard reads no schema.
if TYPE_CHECKING:
    BASIC_TYPES: list[str]


def __getattr__(name: str) -> Any:
    if name != "BASIC_TYPES":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from ...generated import amudai_schema_fb as fb

    value = globals()[name] = [key for key, _ in sorted(
        ((k, v) for k, v in vars(fb.BasicType).items() if not k.startswith("_")),
        key=lambda item: item[1])]
    return value


class _BufferKinds(Mapping[int, str]):
    """BufferKind names by number, read from the protobuf module on first use (opening a
    shard imports no protobuf)."""

    def _names(self) -> dict[int, str]:
        names = self.__dict__.get("_cache")
        if names is None:
            names = self.__dict__["_cache"] = {v: k for k, v in spb.BufferKind.items()}
        return names

    def __getitem__(self, key: int) -> str:
        return self._names()[key]

    def __iter__(self) -> Iterator[int]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())


BUFFER_KINDS: Mapping[int, str] = _BufferKinds()
_INT_WIDTH = {"Int8": 1, "Int16": 2, "Int32": 4, "Int64": 8}
_FLOATS = {"Float32": "<f4", "Float64": "<f8"}
_BYTES_TYPES = {"String", "Binary", "FixedSizeBinary", "Guid"}
MAX_RECORD = 256 * 1024 * 1024
MAX_BUFFER = 1 << 34
#: Most positions one stripe's column may have when its values are materialised (a count read
#: from protobuf, with no bytes to check it against: absent and constant columns fill lists).
MAX_POSITIONS = 1 << 28
#: Positions one read may fill from nothing (absent and constant columns: no bytes in the file
#: back the count, which comes from protobuf or from a parent's offsets), whatever the file's
#: size: 16 Mi, a 128 MiB list or array, so a 1 KB file cannot make the reader allocate
#: gigabytes. A larger shard may fill :data:`UNBACKED_PER_BYTE` positions per byte of its
#: file: a real shard with millions of rows and all-null columns reads them whole.
MAX_UNBACKED_POSITIONS = 1 << 24
#: Positions filled from nothing allowed per byte of the shard's file, past
#: :data:`MAX_UNBACKED_POSITIONS`.
UNBACKED_PER_BYTE = 64
MAX_HOPS = 16
# DataRef hops from the directory, inside one shard: directory -> X (schema, properties, url
# list, stripe list, shard field list, shard indexes) is 1; stripe list -> stripe field list,
# stripe properties, stripe indexes and shard field list -> descriptor are 2; stripe field
# list -> descriptor is 3; descriptor -> encoded buffer is 4 (its block map is a slice of it).
HOPS_TOP, HOPS_STRIPE, HOPS_STRIPE_FIELD, HOPS_BUFFER = 1, 2, 3, 4
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


@dataclass(frozen=True)
class DataRefInfo:
    """A resolved-looking DataRef: ``url`` ("" = the root file) and byte range."""

    url: str
    start: int
    end: int

    @classmethod
    def of(cls, ref: cpb.DataRef) -> DataRefInfo:
        """From a protobuf DataRef (a missing range is empty)."""
        return cls(ref.url, ref.range.start, ref.range.end)

    @property
    def empty(self) -> bool:
        """True when the range holds nothing ("not stored")."""
        return self.end <= self.start

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return {"url": self.url, "start": self.start, "end": self.end}


@dataclass(frozen=True)
class AmudaiField:
    """A schema node (FlatBuffers ``DataType``).

    Attributes:
        name: Field name.
        type: BasicType name (``"Int64"``, ``"Struct"``...).
        schema_id: Index of the node in the field lists.
        parent_schema_id: The parent's schema id (0xFFFFFFFF for top-level fields).
        signed: Integer signedness.
        fixed_size: FixedSizeBinary byte size / FixedSizeList length.
        children: Child nodes.
        path: Dotted path from the top level.
        extended_type: ExtendedTypeAnnotation label, if any.
        internal_annotation: InternalFieldAnnotation kind (top-level fields), if any.
    """

    name: str
    type: str
    schema_id: int
    parent_schema_id: int
    signed: bool
    fixed_size: int
    children: tuple[AmudaiField, ...]
    path: str
    extended_type: str | None = None
    internal_annotation: str | None = None

    @property
    def type_name(self) -> str:
        """The type as ``ls`` shows it (``Int32 unsigned``, ``FixedSizeBinary(16)``...)."""
        name = self.type
        if self.type in _INT_WIDTH and not self.signed:
            name = f"{self.type} unsigned"
        elif self.type in ("FixedSizeBinary", "FixedSizeList"):
            name = f"{self.type}({self.fixed_size})"
        return name + (f" [{self.extended_type}]" if self.extended_type else "")

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON (children nested)."""
        out: dict[str, Any] = {"name": self.name, "type": self.type, "schema_id": self.schema_id,
                               "signed": self.signed, "fixed_size": self.fixed_size}
        if self.extended_type:
            out["extended_type"] = self.extended_type
        if self.internal_annotation:
            out["internal_annotation"] = self.internal_annotation
        out["children"] = [c.to_dict() for c in self.children]
        return out


class HopLimitError(LimitExceededError):
    """A chain of DataRefs longer than ``max_hops`` (the message names the chain)."""


@dataclass(frozen=True)
class AmudaiIndexArtifact:
    """One stored part of an index (``IndexArtifact``).

    Attributes:
        name: Artifact name (``terms``, ``positions``, ``part0``...).
        properties: Artifact properties (Python values).
        data_ref: Where the artifact's bytes are (url relative to the shard that lists it).
        path: Where the artifact sits in the metadata (``/indexes/0/artifacts/1``,
            ``/stripes/2/field_list/5/indexes/0/artifacts/0``...).
        hops: DataRef hops from the listing shard's directory to the artifact's bytes.
    """

    name: str
    properties: dict[str, Any]
    data_ref: DataRefInfo
    path: str
    hops: int

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return {"name": self.name, "properties": self.properties,
                "data_ref": self.data_ref.to_dict()}


@dataclass(frozen=True)
class AmudaiIndex:
    """An index descriptor (``IndexDescriptor``) at shard, stripe or field level.

    Attributes:
        index_type: ``inverted-term-index-v1``, ``hashmap-index``... (FORMAT_NOTES.md 7).
        indexed_fields: The indexed fields, each a tuple of schema ids (a path through the
            schema for nested fields).
        properties: Index properties (Python values).
        artifacts: The stored parts of the index.
        index_size: Total size of the artifacts, when recorded.
        path: Where the descriptor sits in the metadata (``/indexes/0``...).
    """

    index_type: str
    indexed_fields: tuple[tuple[int, ...], ...]
    properties: dict[str, Any]
    artifacts: tuple[AmudaiIndexArtifact, ...]
    index_size: int | None
    path: str

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return {"index_type": self.index_type,
                "indexed_fields": [list(f) for f in self.indexed_fields],
                "properties": self.properties, "index_size": self.index_size,
                "artifacts": [a.to_dict() for a in self.artifacts]}


@dataclass(frozen=True)
class AmudaiStripe:
    """A stripe (``StripeDirectory``).

    Attributes:
        index: Position in the stripe list.
        record_count: Records in the stripe.
        deleted_record_count: Deleted records.
        shard_position: Shard position of the stripe's first record.
        field_list: Where the stripe's field list (DataRefArray) is.
        properties_ref: Where the StripeProperties are (empty: none).
        raw_data_size: Optional raw size.
        indexes_ref: Where the stripe's IndexCollection is (empty: none).
    """

    index: int
    record_count: int
    deleted_record_count: int
    shard_position: int
    field_list: DataRefInfo
    properties_ref: DataRefInfo
    raw_data_size: int | None = None
    indexes_ref: DataRefInfo = DataRefInfo("", 0, 0)
    _load_indexes: Callable[[int], tuple[AmudaiIndex, ...]] | None = dc_field(
        default=None, compare=False, repr=False)

    @property
    def indexes(self) -> tuple[AmudaiIndex, ...]:
        """The stripe's index descriptors (read, checksum checked, on first use)."""
        return self._load_indexes(self.index) if self._load_indexes else ()

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return {"index": self.index, "record_count": self.record_count,
                "deleted_record_count": self.deleted_record_count,
                "shard_position": self.shard_position, "raw_data_size": self.raw_data_size,
                "field_list": self.field_list.to_dict(),
                "properties": self.properties_ref.to_dict(),
                "indexes_ref": self.indexes_ref.to_dict()}


@dataclass(frozen=True)
class AmudaiBuffer:
    """An ``EncodedBuffer`` of a stripe field.

    Attributes:
        kind: ``DATA``, ``PRESENCE``, ``OFFSETS``, ``VALUE_DICTIONARY``, ``OPAQUE_DICTIONARY``,
            ``RANGE_INDEX`` (or the number of an unknown kind, as text).
        buffer: The whole buffer (blocks, padding and block map).
        block_map: The block map at the buffer's tail (None: not a block stream).
        block_count: Blocks, when recorded.
        block_checksums: Each block ends with its checksum.
        embedded_presence: Blocks carry presence sections.
        embedded_offsets: Blocks carry their own value offsets.
        buffer_id: Optional buffer id.
        packed_group_index: Optional index in a packed group.
    """

    kind: str
    buffer: DataRefInfo
    block_map: DataRefInfo | None
    block_count: int | None
    block_checksums: bool
    embedded_presence: bool
    embedded_offsets: bool
    buffer_id: int | None = None
    packed_group_index: int | None = None

    @classmethod
    def of(cls, buf: spb.EncodedBuffer) -> AmudaiBuffer:
        """From a protobuf EncodedBuffer."""
        def opt(name: str) -> int | None:
            return int(getattr(buf, name)) if buf.HasField(name) else None

        return cls(BUFFER_KINDS.get(buf.kind, str(buf.kind)), DataRefInfo.of(buf.buffer),
                   DataRefInfo.of(buf.block_map) if buf.HasField("block_map") else None,
                   opt("block_count"), buf.block_checksums, buf.embedded_presence,
                   buf.embedded_offsets, opt("buffer_id"), opt("packed_group_index"))

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return {"kind": self.kind, "buffer": self.buffer.to_dict(),
                "block_map": self.block_map.to_dict() if self.block_map else None,
                "block_count": self.block_count, "block_checksums": self.block_checksums,
                "embedded_presence": self.embedded_presence,
                "embedded_offsets": self.embedded_offsets, "buffer_id": self.buffer_id,
                "packed_group_index": self.packed_group_index}


@dataclass(frozen=True)
class AmudaiEncoding:
    """A ``DataEncoding`` of a stripe field: ``native`` buffers, or ``parquet`` (not read)."""

    kind: str | None
    buffers: tuple[AmudaiBuffer, ...] = ()
    packed_group: bool = False

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return {"kind": self.kind, "packed_group": self.packed_group,
                "buffers": [b.to_dict() for b in self.buffers]}


@dataclass(frozen=True)
class AmudaiFieldDescriptor:
    """A shard-level ``FieldDescriptor`` or a stripe's ``StripeFieldDescriptor``, decoded.

    Attributes:
        path: The field's dotted path.
        schema_id: The field's schema id.
        stripe: The stripe (None: shard level, merged over all stripes).
        position_count: Positions (values, nulls included).
        null_count: Nulls, when recorded.
        constant_value: The value of every position when ``is_constant``.
        is_constant: The field is constant here (``constant_value`` set; None = all null).
        dictionary_size: Distinct values, when recorded.
        raw_data_size: Raw size, when recorded.
        range_stats: ``min_value``/``min_inclusive``/``max_value``/``max_inclusive`` (or None).
        cardinality: ``count``/``is_estimate``/``hll_sketch`` (or None).
        membership_filters: The split-block Bloom filter (``sbbf``), or None.
        stats_kind: Which type-specific statistics are set (``string_stats``,
            ``boolean_stats``, ``floating_stats``, ``binary_stats``, ``list_stats``,
            ``decimal_stats``) or None.
        stats: Those statistics as a dict.
        standard_properties: Standard properties (Python values).
        custom_properties: Custom properties (Python values).
        indexes: Field-level index descriptors.
        encodings: The stripe's data encodings (empty at shard level).
        message: The decoded protobuf message itself.
    """

    path: str
    schema_id: int
    stripe: int | None
    position_count: int
    null_count: int | None
    constant_value: Any
    is_constant: bool
    dictionary_size: int | None
    raw_data_size: int | None
    range_stats: dict[str, Any] | None
    cardinality: dict[str, Any] | None
    membership_filters: dict[str, Any] | None
    stats_kind: str | None
    stats: dict[str, Any]
    standard_properties: dict[str, Any]
    custom_properties: dict[str, Any]
    indexes: tuple[AmudaiIndex, ...]
    encodings: tuple[AmudaiEncoding, ...]
    message: Any = dc_field(compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        out = {name: getattr(self, name) for name in (
            "path", "schema_id", "stripe", "position_count", "null_count", "is_constant",
            "constant_value", "dictionary_size", "raw_data_size", "range_stats",
            "cardinality", "membership_filters", "stats_kind", "stats",
            "standard_properties", "custom_properties")}
        out["indexes"] = [i.to_dict() for i in self.indexes]
        out["encodings"] = [e.to_dict() for e in self.encodings]
        return out


def _plain(value: Any) -> Any:
    """JSON-ready: datetimes as ISO text, timedeltas as seconds, tuples as lists."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, dict):
        return {str(k) if not isinstance(k, (bytes, bytearray)) else bytes(k).hex(): _plain(v)
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value



def _lookup_issue(buckets: list[int], entries: list[int], names: list[bytes]) -> str | None:
    """What is wrong with a HashLookup over ``names`` (None: nothing)."""
    nb = len(buckets) - 1
    if nb < 1:
        return f"has {len(buckets)} bucket offsets (at least 2 needed)"
    if buckets[0] != 0 or buckets[-1] != len(entries) or any(
            b < a for a, b in itertools.pairwise(buckets)):
        return f"bucket offsets do not rise from 0 to the {len(entries)} entries"
    if sorted(entries) != list(range(len(names))):
        return f"entries are not each of the {len(names)} names once"
    for b in range(nb):
        for e in entries[buckets[b] : buckets[b + 1]]:
            want = name_hash(names[e]) % nb
            if want != b:
                return f"puts {names[e]!r} in bucket {b}, its hash in bucket {want}"
    return None


def _section_len(h: Any, name: str) -> int:
    lo, hi = {"values": (h.ofs_values, h.ofs_values_end),
              "offsets": (h.ofs_offsets, h.ofs_offsets_end),
              "sorted_ids": (h.ofs_sorted_ids, h.ofs_sorted_ids_end)}[name]
    return cast(int, hi - lo)


def _is_text(node: AmudaiField) -> bool:
    """Values read as ``str``: String, and a ``KustoDynamic`` Binary (JSON text; the
    reference maps it to Arrow ``large_string`` with the ``arrow.json`` extension)."""
    return node.type == "String" or (node.type == "Binary"
                                     and node.extended_type == "KustoDynamic")


def _dtype_of(node: AmudaiField) -> np.dtype | None:
    if node.type in _INT_WIDTH:
        return np.dtype(f"<{'i' if node.signed else 'u'}{_INT_WIDTH[node.type]}")
    if node.type in _FLOATS:
        return np.dtype(_FLOATS[node.type])
    if node.type == "DateTime":
        return np.dtype("<u8")
    return None


def _apply(items: list[Any], valid: np.ndarray | None) -> list[Any]:
    if valid is None:
        return items
    for i in np.flatnonzero(~valid).tolist():
        items[i] = None
    return items


def _map_value(keys: list[Any], values: list[Any]) -> Any:
    try:
        out = dict(zip(keys, values, strict=True))
    except TypeError:
        return [[k, v] for k, v in zip(keys, values, strict=True)]
    if len(out) != len(keys):
        return [[k, v] for k, v in zip(keys, values, strict=True)]
    return out


def _msg_dict(msg: Any, max_depth: int, depth: int = 0) -> Any:
    """A protobuf message as a plain dict (AnyValues as Python values, DataRefs flattened)."""
    if depth > max_depth:
        raise LimitExceededError(f"metadata nested deeper than {max_depth} levels")
    name = msg.DESCRIPTOR.full_name
    if name == "amudai.common.AnyValue":
        return any_value_to_python(msg, max_depth)
    if name == "amudai.common.DataRef":
        return DataRefInfo.of(msg).to_dict()
    out: dict[str, Any] = {}
    for fd, value in msg.ListFields():
        if fd.message_type is not None and fd.message_type.full_name == \
                "amudai.common.NameValuePair":
            out[fd.name] = {p.name: any_value_to_python(p.value, max_depth) for p in value}
        elif fd.message_type is not None:
            if fd.is_repeated:
                out[fd.name] = [_msg_dict(v, max_depth, depth + 1) for v in value]
            else:
                out[fd.name] = _msg_dict(value, max_depth, depth + 1)
        elif fd.enum_type is not None:
            names = fd.enum_type.values_by_number
            items = list(value) if fd.is_repeated else [value]
            shown = [names[v].name if v in names else v for v in items]
            out[fd.name] = shown if fd.is_repeated else shown[0]
        else:
            out[fd.name] = list(value) if fd.is_repeated else value
    if name == "amudai.shard.EncodedBuffer" and "kind" not in out:
        out = {"kind": "DATA", **out}
    return out

