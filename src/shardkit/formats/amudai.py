"""Microsoft Amudai shards: directory, schema, stripes, descriptors, indexes and column values.

Layout: ``schemas/amudai_shard.ksy`` (generated class ``AmudaiShard``: the frame, the directory
record, block maps and value dictionaries); metadata payloads are decoded with the code generated
from ``schemas/amudai/*.proto`` (protobuf) and ``schemas/amudai/schema.fbs`` (FlatBuffers).
Semantics: FORMAT_NOTES.md. Opening reads the footer and the directory record only; the schema,
stripes, descriptors and buffers are read (and their checksums checked) on first use.

Semantic layer: directory -> schema tree (:class:`AmudaiField`) -> properties -> url list ->
stripes (:class:`AmudaiStripe`) -> shard- and stripe-level field descriptors with their
statistics (:class:`AmudaiFieldDescriptor`, from :meth:`AmudaiShard.descriptor`) -> data
encodings and encoded buffers (:class:`AmudaiEncoding`, :class:`AmudaiBuffer`) -> index
descriptors at shard, stripe and field level (:class:`AmudaiIndex`, ``.indexes`` on each).

References (DataRefs) resolve within the root file (empty url, or a url naming the root file
itself, the reference writer's quirk) or relative to the root file's folder (stripe files of the
two-level layout). ``..`` components, absolute paths and URL schemes are refused unless the
reader is opened with ``allow_external=True``. Every range is checked against its target's size
before it is read. Two caps bound where references can lead: ``max_files`` (distinct files
opened, shared by nested shards) and ``max_hops``, a counter of DataRefs followed from the root
directory to the record being read. Inside one shard the chain is at most 4 hops long
(directory -> stripe list -> field list -> descriptor -> buffer); index artifacts that are
themselves Amudai shards (:meth:`AmudaiShard.open_artifact`) add their own hops, so a cycle of
artifacts ends in a :class:`HopLimitError` naming the chain instead of looping.

Example::

    with shardkit.open("data.amudai.shard") as s:
        s.record_count, [f.name for f in s.schema]
        s.read_column("address.city")
        s.indexes, s.stripes[0].indexes, s.descriptor("address.city").range_stats
"""

from __future__ import annotations

import io
import itertools
import os
import posixpath
import re
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from dataclasses import field as dc_field
from datetime import datetime, timedelta
from functools import cached_property
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError
from kaitaistruct import KaitaiStream

from .._kaitai import kaitai_errors, parse
from ..errors import (
    ChecksumError,
    EntryNotFoundError,
    FormatError,
    LayoutError,
    LimitExceededError,
    Problem,
    ShardkitError,
    TruncatedError,
    UnsupportedVersionError,
)
from ..generated import amudai_common_pb2 as cpb
from ..generated import amudai_schema_fb as fb
from ..generated import amudai_shard_pb2 as spb
from ..generated.amudai_shard import AmudaiShard as KsAmudai
from ..hashing.amudai import checksum, name_hash
from ..sources import ByteSource, open_source
from ._amudai_blocks import (
    any_value_to_python,
    decode_binary_values,
    decode_numeric_values,
    decode_presence,
    split_block,
    ticks_to_datetime,
)
from .base import Reader, Section

__all__ = [
    "AmudaiBuffer",
    "AmudaiEncoding",
    "AmudaiField",
    "AmudaiFieldDescriptor",
    "AmudaiIndex",
    "AmudaiIndexArtifact",
    "AmudaiShard",
    "AmudaiStripe",
    "DataRefInfo",
    "HopLimitError",
]

BASIC_TYPES = ["Unit", "Boolean", "Int8", "Int16", "Int32", "Int64", "Float32", "Float64",
               "Binary", "FixedSizeBinary", "String", "Guid", "DateTime", "List",
               "FixedSizeList", "Struct", "Map", "Union"]
BUFFER_KINDS = {v: k for k, v in spb.BufferKind.items()}
_INT_WIDTH = {"Int8": 1, "Int16": 2, "Int32": 4, "Int64": 8}
_FLOATS = {"Float32": "<f4", "Float64": "<f8"}
_BYTES_TYPES = {"String", "Binary", "FixedSizeBinary", "Guid"}
MAX_DIRECTORY = 16 * 1024 * 1024
MAX_RECORD = 256 * 1024 * 1024
MAX_BUFFER = 1 << 34
#: Most positions one stripe's column may have when its values are materialised (a count read
#: from protobuf, with no bytes to check it against: absent and constant columns fill lists).
MAX_POSITIONS = 1 << 28
MAX_HOPS = 16
# DataRef hops from the directory, inside one shard: directory -> X (schema, properties, url
# list, stripe list, shard field list, shard indexes) is 1; stripe list -> stripe field list,
# stripe properties, stripe indexes and shard field list -> descriptor are 2; stripe field
# list -> descriptor is 3; descriptor -> encoded buffer is 4 (its block map is a slice of it).
HOPS_TOP, HOPS_STRIPE, HOPS_STRIPE_FIELD, HOPS_BUFFER = 1, 2, 3, 4
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_U32 = struct.Struct("<I")


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
        if self.type in _INT_WIDTH and not self.signed:
            return f"{self.type} unsigned"
        if self.type in ("FixedSizeBinary", "FixedSizeList"):
            return f"{self.type}({self.fixed_size})"
        return self.type + (f" [{self.extended_type}]" if self.extended_type else "")

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


class _Window:
    """Bytes ``[start, end)`` of another source, seen as a whole file (a nested shard)."""

    def __init__(self, inner: ByteSource, start: int, end: int) -> None:
        self.inner = inner
        self.start = start
        self.end = end
        self.name = inner.name

    @property
    def size(self) -> int:
        return self.end - self.start

    def _check(self, start: int, end: int) -> None:
        if start < 0 or end < start or end > self.size:
            raise TruncatedError(f"bytes [{start}, {end}) of a {self.size}-byte nested shard",
                                 offset=start, needed=end - start,
                                 available=max(0, self.size - start))

    def read_range(self, start: int, end: int) -> bytes:
        self._check(start, end)
        return self.inner.read_range(self.start + start, self.start + end)

    def view(self, start: int, end: int) -> bytes | memoryview:
        self._check(start, end)
        view = getattr(self.inner, "view", None)
        if view is not None:
            return view(self.start + start, self.start + end)
        return self.inner.read_range(self.start + start, self.start + end)

    def close(self) -> None:
        """Nothing to release: the source underneath belongs to the parent shard."""


class _Blobs:
    """Opens the blobs DataRefs name, safely, and reads checked ranges from them.

    ``budget`` (a one-item list) counts the files opened; nested shards share their root's, so
    ``max_files`` bounds the whole tree of shards.
    """

    def __init__(self, root: ByteSource, allow_external: bool, max_files: int,
                 storage_options: dict[str, Any], budget: list[int] | None = None) -> None:
        self.root = root
        self.allow_external = allow_external
        self.max_files = max_files
        self.storage_options = storage_options
        self.budget = budget if budget is not None else [0]
        self.opened: dict[str, ByteSource] = {}
        name = root.name
        self.is_url = "://" in name
        self.root_base = posixpath.basename(name) if self.is_url else os.path.basename(name)

    def _is_self(self, url: str) -> bool:
        tail = url.rstrip("/").replace("\\", "/").rsplit("/", 1)[-1]
        return bool(self.root_base) and tail == self.root_base

    def source(self, url: str, field: str) -> ByteSource:
        """The source ``url`` names (relative to the root file's folder)."""
        if not url or self._is_self(url):
            return self.root
        if url in self.opened:
            return self.opened[url]
        parts = url.replace("\\", "/").split("/")
        external = bool(_SCHEME.match(url)) or url.startswith(("/", "\\")) or ".." in parts
        if external and not self.allow_external:
            raise LayoutError(f"DataRef url {url!r} leaves the shard's folder (absolute path, "
                              "URL scheme or '..'); open with allow_external=True to follow it",
                              field=field)
        if self.budget[0] >= self.max_files:
            raise LimitExceededError(f"more than {self.max_files} files referenced",
                                     field=field)
        absolute = bool(_SCHEME.match(url)) or url.startswith(("/", "\\"))
        if absolute:
            target = url
        elif self.is_url:
            target = posixpath.join(posixpath.dirname(self.root.name), url)
        elif self.root.name.startswith("<"):
            raise LayoutError(f"DataRef url {url!r} is relative, but the shard was opened from "
                              "memory (no folder to resolve it in)", field=field)
        else:
            target = os.path.join(os.path.dirname(self.root.name), *parts)
        try:
            src = open_source(target, **self.storage_options)
        except ShardkitError as exc:
            raise LayoutError(f"cannot open DataRef url {url!r}: {exc.message}",
                              field=field) from exc
        except OSError as exc:
            raise LayoutError(f"cannot open DataRef url {url!r}: {exc}", field=field) from exc
        self.opened[url] = src
        self.budget[0] += 1
        return src

    def locate(self, ref: DataRefInfo, field: str, limit: int = MAX_BUFFER) -> ByteSource:
        """The source of ``ref`` after checking its range against the source's size."""
        src = self.source(ref.url, field)
        if ref.end < ref.start:
            raise LayoutError(f"DataRef range [{ref.start}, {ref.end}) ends before it starts",
                              offset=ref.start, field=field)
        if ref.end > src.size:
            raise LayoutError(f"DataRef [{ref.start}, {ref.end}) lies past the end of "
                              f"{src.name} ({src.size} bytes)", offset=ref.start, field=field)
        if ref.end - ref.start > limit:
            raise LimitExceededError(f"DataRef of {ref.end - ref.start} bytes exceeds the "
                                     f"{limit}-byte cap", offset=ref.start, field=field)
        return src

    def read(self, ref: DataRefInfo, field: str, limit: int = MAX_BUFFER) -> bytes:
        """The bytes of ``ref`` after checking its range against its target's size."""
        src = self.locate(ref, field, limit)
        view = getattr(src, "view", None)
        if view is not None:
            return view(ref.start, ref.end)
        return src.read_range(ref.start, ref.end)

    def close(self) -> None:
        for src in self.opened.values():
            src.close()
        self.opened.clear()


def _ks_stream(data: bytes | memoryview) -> KaitaiStream:
    return KaitaiStream(io.BytesIO(bytes(data)))


class AmudaiShard(Reader):
    """An Amudai shard (root ``.amudai.shard`` file, and stripe files beside it).

    Args:
        source: The root file.
        allow_external: Follow DataRef urls with ``..``, absolute paths or URL schemes.
        max_depth: Nesting limit for AnyValues and the schema tree.
        max_files: Limit on distinct files referenced (nested shards included).
        max_hops: Limit on the DataRefs followed from the root directory to any record
            (HopLimitError past it); see the module docstring.
        storage_options: fsspec options for stripe files behind URLs.
    """

    format_id = "amudai"
    format_name = "Microsoft Amudai shard"

    def __init__(self, source: ByteSource, *, allow_external: bool = False, max_depth: int = 64,
                 max_files: int = 4096, max_hops: int = MAX_HOPS,
                 storage_options: dict[str, Any] | None = None, _hops: int = 0,
                 _chain: tuple[str, ...] = (), _budget: list[int] | None = None) -> None:
        super().__init__(source)
        self.max_depth = max_depth
        self.max_hops = max_hops
        self._hops = _hops
        self._chain = _chain
        self._children: list[AmudaiShard] = []
        self._hop(0, "/directory")
        self._blobs = _Blobs(source, allow_external, max_files, dict(storage_options or {}),
                             _budget)
        size = source.size
        if size < 28:
            raise TruncatedError(f"{size} bytes: an Amudai root file has at least 28", offset=0,
                                 needed=28, available=size)
        # One read of the tail: footer, L, and (usually) the whole directory record.
        tail_len = min(size, 4096)
        tail = source.read_range(size - tail_len, size)
        self._ks = parse(KsAmudai, _ks_stream(source.read_range(0, 8) if tail_len < size
                                              else tail[:8]),
                         magic_fields=("/header/magic",),
                         version_fields=("/header/version_major",))
        if not tail.endswith(b"amud", 0, tail_len - 4):
            # Writers put the footer last: a header without one is a file cut short (or one
            # still being written), which "bad magic" would misdescribe.
            raise TruncatedError("no Amudai footer at the end of the file: truncated, or still "
                                 "being written", offset=size - 8, field="/footer/magic")
        with kaitai_errors(prefix="/footer", base=size - 8, magic_fields=("/footer/magic",),
                           version_fields=("/footer/version_major",)):
            self.footer = KsAmudai.Frame(_ks_stream(tail[-8:]))
        try:
            self._read_directory(source, size, tail, tail_len)
        except (ChecksumError, LayoutError, LimitExceededError) as exc:
            if source.name.endswith(".amudai.stripe"):
                raise FormatError(f"{source.name} is an Amudai stripe data file, which has no "
                                  "directory of its own: open the root .amudai.shard beside it",
                                  offset=exc.offset, field=exc.field) from exc
            raise

    def _read_directory(self, source: ByteSource, size: int, tail: bytes, tail_len: int) -> None:
        """Read and check the directory record that ends the root file."""
        (length,) = _U32.unpack_from(tail, tail_len - 12)
        if length >= MAX_DIRECTORY:
            raise LimitExceededError(f"directory length {length} is 16 MiB or more",
                                     offset=size - 12, field="/len_directory")
        start = size - 12 - (length + 8)
        if start < 8:
            raise LayoutError(f"directory of {length} bytes does not fit in the file",
                              offset=size - 12, field="/len_directory")
        self.directory_ref = DataRefInfo("", start, size - 12)
        raw = tail[start - (size - tail_len):tail_len - 12] if start >= size - tail_len \
            else source.read_range(start, size - 12)
        self.directory: spb.ShardDirectory = self._decode(raw, start, "/directory",
                                                          spb.ShardDirectory, "directory")
        for name in ("schema_ref", "field_list_ref", "stripe_list_ref", "url_list_ref"):
            if not self.directory.HasField(name):
                raise LayoutError(f"the shard directory has no {name}", offset=start,
                                  field=f"/directory/{name}")

    def close(self) -> None:
        """Close the root file, any stripe files and any nested shards opened from it."""
        for child in self._children:
            child.close()
        self._children.clear()
        self._blobs.close()
        super().close()

    # -- reference chain -----------------------------------------------------------------------

    @property
    def reference_chain(self) -> tuple[str, ...]:
        """How this shard was reached: ``()`` for a root, else the artifact paths followed."""
        return self._chain

    def _hop(self, depth: int, field: str) -> None:
        """Check that a DataRef ``depth`` hops below this shard's directory is within bounds."""
        total = self._hops + depth
        if total > self.max_hops:
            parts = ["/directory"]
            for step in self._chain:
                parts += [step, "/directory"]
            parts.append(field)
            raise HopLimitError(f"reference chain of {total} DataRef hops exceeds max_hops="
                                f"{self.max_hops}: {' -> '.join(parts)}", field=field)

    # -- records ------------------------------------------------------------------------------

    def _decode(self, raw: bytes | memoryview, base: int, field: str, cls: Any,
                region: str) -> Any:
        """A length-message-checksum record: framing, checksum, then the message."""
        if len(raw) < 8:
            raise TruncatedError(f"{region} record of {len(raw)} bytes (at least 8)",
                                 offset=base, field=field, needed=8, available=len(raw))
        with kaitai_errors(prefix=field, base=base):
            rec = KsAmudai.Record(_ks_stream(raw))
        if rec.len_payload + 8 != len(raw):
            raise LayoutError(f"{region} record says {rec.len_payload} payload bytes, its "
                              f"DataRef covers {len(raw)} (expected len + 8)", offset=base,
                              field=field + "/len_payload")
        computed = checksum(rec.payload)
        if computed != rec.checksum:
            raise ChecksumError(region, rec.checksum, computed,
                                offset=base + 4 + rec.len_payload, field=field + "/checksum")
        if cls is bytes:
            return rec.payload
        msg = cls()
        try:
            msg.ParseFromString(rec.payload)
        except (DecodeError, RecursionError, ValueError) as exc:
            if "MaxDepth" in str(exc) or isinstance(exc, RecursionError):
                raise LimitExceededError(f"{region}: protobuf messages nested deeper than the "
                                         f"decoder's limit: {exc}", offset=base + 4,
                                         field=field + "/payload") from exc
            raise LayoutError(f"{region}: not a valid {cls.DESCRIPTOR.name} protobuf "
                              f"(corrupt, or nested too deeply): {exc}", offset=base + 4,
                              field=field + "/payload") from exc
        return msg

    def _record(self, ref: DataRefInfo, field: str, cls: Any, region: str, hops: int,
                limit: int = MAX_RECORD) -> Any:
        self._hop(hops, field)
        if ref.empty:
            return None
        raw = self._blobs.read(ref, field, limit)
        return self._decode(raw, ref.start, field, cls, region)

    # -- shard-level metadata -----------------------------------------------------------------

    @property
    def record_count(self) -> int:
        """Records in the shard (``total_record_count``)."""
        return int(self.directory.total_record_count)

    @property
    def deleted_record_count(self) -> int:
        """Deleted records."""
        return int(self.directory.deleted_record_count)

    @cached_property
    def _schema_fb(self) -> Any:
        ref = DataRefInfo.of(self.directory.schema_ref)
        buf = bytearray(self._record(ref, "/schema", bytes, "schema", HOPS_TOP) or b"")
        if len(buf) < 8:
            raise LayoutError("the schema record holds no FlatBuffers table", offset=ref.start,
                              field="/schema")
        return buf

    @cached_property
    def schema(self) -> tuple[AmudaiField, ...]:
        """Top-level fields (the schema tree, read from the FlatBuffers schema)."""
        buf = self._schema_fb
        ref = DataRefInfo.of(self.directory.schema_ref)
        try:
            root = fb.Schema.GetRootAs(buf, 0)
            out = []
            seen: set[int] = set()
            for i in range(root.FieldsLength()):
                f = root.Fields(i)
                dt = f.DataType() if f is not None else None
                if dt is None:
                    raise LayoutError(f"schema field {i} has no data_type", offset=ref.start,
                                      field=f"/schema/fields/{i}")
                ann = f.InternalFieldAnnotation()
                kind = ann.Kind() if ann is not None else None
                out.append(self._node(dt, "", 0, seen, kind.decode() if kind else None))
            self.schema_id_count = root.SchemaIdCount()
        except ShardkitError:
            raise
        except (IndexError, struct.error, ValueError, TypeError, AttributeError,
                UnicodeDecodeError, RecursionError) as exc:
            raise LayoutError(f"corrupt FlatBuffers schema: {exc}", offset=ref.start + 4,
                              field="/schema") from exc
        return tuple(out)

    def _node(self, dt: Any, prefix: str, depth: int, seen: set[int],
              annotation: str | None = None) -> AmudaiField:
        if depth > self.max_depth:
            raise LimitExceededError(f"schema nested deeper than {self.max_depth} levels",
                                     field="/schema")
        name = (dt.FieldName() or b"").decode("utf-8")
        sid = dt.SchemaId()
        if sid in seen:
            raise LayoutError(f"schema id {sid} used twice", field="/schema")
        seen.add(sid)
        bt = dt.BasicType()
        if bt >= len(BASIC_TYPES):
            raise UnsupportedVersionError(f"unknown BasicType {bt} for field {name!r}",
                                          field="/schema")
        path = f"{prefix}.{name}" if prefix else name
        kids = tuple(self._node(dt.Children(i), path, depth + 1, seen)
                     for i in range(dt.ChildrenLength()))
        ext = dt.ExtendedType()
        label = ext.Label() if ext is not None else None
        return AmudaiField(name, BASIC_TYPES[bt], sid, dt.ParentSchemaId(), bool(dt.Signed()),
                           int(dt.FixedSize()), kids, path, label.decode() if label else None,
                           annotation)

    def iter_fields(self) -> Iterator[AmudaiField]:
        """Every schema node, depth-first pre-order (schema id order)."""
        def walk(nodes: tuple[AmudaiField, ...]) -> Iterator[AmudaiField]:
            for node in nodes:
                yield node
                yield from walk(node.children)
        return walk(self.schema)

    def field(self, path: str) -> AmudaiField:
        """The schema node at a dotted ``path`` (``a.b``); EntryNotFoundError if none."""
        nodes = self.schema
        node = None
        for part in path.split("."):
            node = next((n for n in nodes if n.name == part), None)
            if node is None:
                raise EntryNotFoundError(path, f"no column {path!r} in the schema")
            nodes = node.children
        assert node is not None
        return node

    @cached_property
    def urls(self) -> list[str]:
        """The UrlList: every distinct non-empty url the shard uses."""
        msg = self._record(DataRefInfo.of(self.directory.url_list_ref), "/url_list",
                           spb.UrlList, "url list", HOPS_TOP)
        return list(msg.urls) if msg is not None else []

    @cached_property
    def properties(self) -> dict[str, Any]:
        """ShardProperties: creation_min/max, standard and custom properties (Python values)."""
        ref = DataRefInfo.of(self.directory.properties_ref)
        msg = self._record(ref, "/properties", spb.ShardProperties, "shard properties",
                           HOPS_TOP)
        if msg is None:
            return {}
        out: dict[str, Any] = {}
        field = "/properties"
        for name in ("creation_min", "creation_max"):
            if msg.HasField(name):
                out[name] = ticks_to_datetime(getattr(msg, name).ticks, base=ref.start,
                                              field=f"{field}/{name}")
        out["standard"] = self._pairs(msg.standard_properties, ref.start, field)
        out["custom"] = self._pairs(msg.custom_properties, ref.start, field)
        return out

    def _pairs(self, pairs: Any, offset: int | None, field: str) -> dict[str, Any]:
        return {p.name: any_value_to_python(p.value, self.max_depth, field=field, offset=offset)
                for p in pairs}

    @cached_property
    def stripes(self) -> tuple[AmudaiStripe, ...]:
        """The stripes, in order."""
        msg = self._record(DataRefInfo.of(self.directory.stripe_list_ref), "/stripe_list",
                           spb.StripeList, "stripe list", HOPS_TOP)
        out = []
        for i, sd in enumerate(msg.stripes if msg is not None else []):
            out.append(AmudaiStripe(
                i, int(sd.total_record_count), int(sd.deleted_record_count),
                int(sd.shard_position), DataRefInfo.of(sd.field_list_ref),
                DataRefInfo.of(sd.properties_ref),
                int(sd.raw_data_size) if sd.HasField("raw_data_size") else None,
                DataRefInfo.of(sd.indexes_ref), self.stripe_indexes))
        return tuple(out)

    def stripe_properties(self, stripe: int) -> dict[str, Any]:
        """StripeProperties of stripe ``stripe`` ({} when there are none)."""
        ref = self.stripes[stripe].properties_ref
        field = f"/stripes/{stripe}/properties"
        msg = self._record(ref, field, spb.StripeProperties, f"stripe {stripe} properties",
                           HOPS_STRIPE)
        if msg is None:
            return {}
        return {"standard": self._pairs(msg.standard_properties, ref.start, field),
                "custom": self._pairs(msg.custom_properties, ref.start, field)}

    def _field_list(self, ref: DataRefInfo, field: str, region: str, hops: int
                    ) -> list[DataRefInfo]:
        msg = self._record(ref, field, cpb.DataRefArray, region, hops)
        if msg is None:
            return []
        n = len(msg.start)
        if len(msg.end) != n or len(msg.url) not in (0, n):
            raise LayoutError(f"{region}: {len(msg.url)} urls, {n} starts, {len(msg.end)} ends",
                              offset=ref.start, field=field)
        urls = list(msg.url) or [""] * n
        return [DataRefInfo(u, s, e) for u, s, e in zip(urls, msg.start, msg.end, strict=True)]

    @cached_property
    def _shard_field_list(self) -> list[DataRefInfo]:
        return self._field_list(DataRefInfo.of(self.directory.field_list_ref), "/field_list",
                                "shard field list", HOPS_TOP)

    def _stripe_field_list(self, stripe: int) -> list[DataRefInfo]:
        cache = self.__dict__.setdefault("_sfl_cache", {})
        if stripe not in cache:
            cache[stripe] = self._field_list(self.stripes[stripe].field_list,
                                             f"/stripes/{stripe}/field_list",
                                             f"stripe {stripe} field list", HOPS_STRIPE)
        return cache[stripe]

    def field_descriptor(self, schema_id: int) -> spb.FieldDescriptor | None:
        """Shard-level FieldDescriptor of a schema node (None: no data)."""
        refs = self._shard_field_list
        if schema_id >= len(refs):
            return None
        return self._record(refs[schema_id], f"/field_list/{schema_id}", spb.FieldDescriptor,
                            f"shard field descriptor {schema_id}", HOPS_STRIPE)

    def stripe_field(self, stripe: int, schema_id: int) -> spb.StripeFieldDescriptor | None:
        """StripeFieldDescriptor of a node in a stripe (None: absent, all null)."""
        refs = self._stripe_field_list(stripe)
        if schema_id >= len(refs):
            return None
        return self._record(refs[schema_id], f"/stripes/{stripe}/field_list/{schema_id}",
                            spb.StripeFieldDescriptor,
                            f"stripe {stripe} field descriptor {schema_id}", HOPS_STRIPE_FIELD)

    def descriptor(self, path: str, stripe: int | None = None) -> AmudaiFieldDescriptor | None:
        """The decoded field descriptor of column ``path``: shard level, or in ``stripe``.

        None when nothing is stored (an absent or all-null field). The protobuf messages
        themselves are :meth:`field_descriptor` and :meth:`stripe_field`.
        """
        node = self.field(path)
        sid = node.schema_id
        if stripe is None:
            msg = self.field_descriptor(sid)
            return None if msg is None else self._describe(node, None, msg, ())
        sfd = self.stripe_field(stripe, sid)
        if sfd is None:
            return None
        encodings = tuple(
            AmudaiEncoding(enc.WhichOneof("kind"),
                           tuple(AmudaiBuffer.of(b) for b in enc.native.buffers),
                           enc.native.packed_group)
            for enc in sfd.encodings)
        return self._describe(node, stripe, sfd.field, encodings)

    def _describe(self, node: AmudaiField, stripe: int | None, msg: spb.FieldDescriptor,
                  encodings: tuple[AmudaiEncoding, ...]) -> AmudaiFieldDescriptor:
        base = (f"/field_list/{node.schema_id}" if stripe is None
                else f"/stripes/{stripe}/field_list/{node.schema_id}")
        hops = HOPS_STRIPE if stripe is None else HOPS_STRIPE_FIELD

        def sub(name: str) -> dict[str, Any] | None:
            return _msg_dict(getattr(msg, name), self.max_depth) if msg.HasField(name) \
                else None

        def opt(name: str) -> int | None:
            return int(getattr(msg, name)) if msg.HasField(name) else None

        kind = msg.WhichOneof("type_specific")
        constant = msg.HasField("constant_value")
        return AmudaiFieldDescriptor(
            node.path, node.schema_id, stripe, int(msg.position_count), opt("null_count"),
            self._constant_of(msg, node, base) if constant else None, constant,
            opt("dictionary_size"), opt("raw_data_size"), sub("range_stats"), sub("cardinality"),
            sub("membership_filters"), kind, (sub(kind) or {}) if kind else {},
            self._pairs(msg.standard_properties, None, base),
            self._pairs(msg.custom_properties, None, base),
            self._index_list(msg.indexes, base, hops) if msg.HasField("indexes") else (),
            encodings, msg)

    # -- index descriptors ---------------------------------------------------------------------

    @cached_property
    def indexes(self) -> tuple[AmudaiIndex, ...]:
        """Shard-level index descriptors (the directory's ``indexes_ref``; () when absent)."""
        coll = self._record(DataRefInfo.of(self.directory.indexes_ref), "/indexes",
                            spb.IndexCollection, "shard index collection", HOPS_TOP)
        return () if coll is None else self._index_list(coll, "", HOPS_TOP)

    def stripe_indexes(self, stripe: int) -> tuple[AmudaiIndex, ...]:
        """Index descriptors of stripe ``stripe`` (its ``indexes_ref``; () when absent)."""
        cache = self.__dict__.setdefault("_sidx_cache", {})
        if stripe not in cache:
            coll = self._record(self.stripes[stripe].indexes_ref, f"/stripes/{stripe}/indexes",
                                spb.IndexCollection, f"stripe {stripe} index collection",
                                HOPS_STRIPE)
            cache[stripe] = () if coll is None else self._index_list(
                coll, f"/stripes/{stripe}", HOPS_STRIPE)
        return cache[stripe]

    def _index_list(self, coll: spb.IndexCollection, base: str, hops: int
                    ) -> tuple[AmudaiIndex, ...]:
        """Index objects of an IndexCollection found ``hops`` hops below the directory."""
        out = []
        for i, d in enumerate(coll.index_descriptors):
            path = f"{base}/indexes/{i}"
            artifacts = tuple(
                AmudaiIndexArtifact(a.name, self._pairs(a.properties, None, f"{path}/artifacts"),
                                    DataRefInfo.of(a.data_ref), f"{path}/artifacts/{j}",
                                    hops + 1)
                for j, a in enumerate(d.artifacts))
            out.append(AmudaiIndex(
                d.index_type, tuple(tuple(int(x) for x in f.schema_ids)
                                    for f in d.indexed_fields),
                self._pairs(d.properties, None, path), artifacts,
                int(d.index_size) if d.HasField("index_size") else None, path))
        return tuple(out)

    def open_artifact(self, artifact: AmudaiIndexArtifact) -> AmudaiShard:
        """Open an index artifact that is itself an Amudai shard (FORMAT_NOTES.md 1.1, 7).

        Call it on the shard that listed ``artifact``: its url resolves as this shard's other
        references do (same folder, same ``allow_external`` rule). The artifact's range is the
        nested shard's whole file; its own empty-url references count from the artifact's
        first byte. The nested reader shares this one's ``max_files`` budget, and its hops
        continue this one's count, so following artifacts round a cycle ends in HopLimitError.
        It is closed with this shard.
        """
        ref = artifact.data_ref
        field = artifact.path
        self._hop(artifact.hops, field)
        if ref.empty:
            raise LayoutError(f"index artifact {artifact.name!r} stores nothing (empty range)",
                              offset=ref.start, field=field)
        src = self._blobs.locate(ref, field)
        child = AmudaiShard(
            _Window(src, ref.start, ref.end), allow_external=self._blobs.allow_external,
            max_depth=self.max_depth, max_files=self._blobs.max_files, max_hops=self.max_hops,
            storage_options=self._blobs.storage_options, _hops=self._hops + artifact.hops,
            _chain=(*self._chain, f"{field} ({artifact.name}{': ' + ref.url if ref.url else ''})"),
            _budget=self._blobs.budget)
        self._children.append(child)
        return child

    # -- encoded buffers ----------------------------------------------------------------------

    def _buffers(self, sfd: spb.StripeFieldDescriptor, field: str) -> dict[int, Any]:
        if not sfd.encodings:
            return {}
        enc = sfd.encodings[0]
        kind = enc.WhichOneof("kind")
        if kind != "native":
            raise UnsupportedVersionError(f"data encoding {kind!r} (only native is supported)",
                                          field=field + "/encodings/0")
        return {b.kind: b for b in enc.native.buffers}

    def _blocks(self, buf: spb.EncodedBuffer, field: str) -> Iterator[tuple[int, memoryview,
                                                                            int]]:
        """``(logical_size, block bytes, absolute offset)`` of each block of a block stream."""
        ref = DataRefInfo.of(buf.buffer)
        if not buf.HasField("block_map"):
            raise UnsupportedVersionError("block stream without a block_map DataRef",
                                          offset=ref.start, field=field + "/block_map")
        mref = DataRefInfo.of(buf.block_map)
        if mref.url != ref.url or not ref.start <= mref.start <= mref.end <= ref.end:
            raise LayoutError(f"block map [{mref.start}, {mref.end}) is not inside its buffer "
                              f"[{ref.start}, {ref.end})", offset=mref.start,
                              field=field + "/block_map")
        self._hop(HOPS_BUFFER, field + "/buffer")
        data = self._blobs.read(ref, field + "/buffer")
        table = self.block_table(data[mref.start - ref.start : mref.end - ref.start],
                                 mref.start, field + "/block_map")
        if buf.HasField("block_count") and buf.block_count != len(table):
            raise LayoutError(f"EncodedBuffer says {buf.block_count} blocks, the block map "
                              f"{len(table)}", offset=mref.start, field=field + "/block_count")
        limit = mref.start - ref.start
        for logical, ofs, size in table:
            if ofs + size > limit:
                raise LayoutError(f"block [{ofs}, {ofs + size}) overruns the data area of "
                                  f"{limit} bytes", offset=ref.start + ofs, field=field)
            yield logical, data[ofs : ofs + size], ref.start + ofs

    def block_table(self, raw: bytes | memoryview, base: int, field: str
                    ) -> list[tuple[int, int, int]]:
        """Parse a block map: ``(logical_size, offset in buffer, byte size)`` per block."""
        if len(raw) < 56 or len(raw) % 8:
            raise LayoutError(f"block map of {len(raw)} bytes (at least 56, a multiple of 8)",
                              offset=base, field=field)
        with kaitai_errors(prefix=field, base=base):
            bm = KsAmudai.BlockMap(_ks_stream(raw))
            foot = bm.footer
            if foot.num_segments > (len(raw) - 40) // 16 or foot.num_blocks > len(raw) * 8:
                raise LayoutError(f"block map claims {foot.num_segments} segments and "
                                  f"{foot.num_blocks} blocks in {len(raw)} bytes",
                                  offset=base + len(raw) - 40, field=field + "/footer")
            starts = bm.ofs_segment_records
            segments = bm.segments
            logical_offsets = bm.segment_logical_offsets
        out: list[tuple[int, int, int]] = []
        pos = 0
        for i, seg in enumerate(segments):
            if starts[i] != _seg_offset(segments, i):
                raise LayoutError(f"segment {i} record offset {starts[i]} does not follow the "
                                  "previous segment", offset=base, field=field)
            if seg.first_logical_pos != pos or logical_offsets[i] != pos:
                raise LayoutError(f"segment {i} starts at position {seg.first_logical_pos}, "
                                  f"expected {pos}", offset=base + starts[i], field=field)
            ofs = seg.ofs_first_block
            for ls, bs in zip(seg.logical_sizes, seg.block_sizes, strict=True):
                logical, size = ls + seg.min_logical_size, bs + seg.min_block_size
                out.append((logical, ofs, size))
                ofs += size
                pos += logical
        if len(out) != foot.num_blocks or pos != foot.num_values or \
                logical_offsets[-1] != pos:
            raise LayoutError(f"block map footer says {foot.num_blocks} blocks and "
                              f"{foot.num_values} values, its segments hold {len(out)} and "
                              f"{pos}", offset=base + len(raw) - 40, field=field + "/footer")
        return out

    def _block_parts(self, buf: spb.EncodedBuffer, field: str
                     ) -> Iterator[tuple[int, Any, np.ndarray | None, int, str]]:
        """Each block of a block stream, checksummed and split: ``(values in the block,
        parts, valid mask or None, block offset, field path)``."""
        for i, (n, raw, base) in enumerate(self._blocks(buf, field)):
            where = f"{field}/blocks/{i}"
            parts = split_block(raw, embedded_presence=buf.embedded_presence,
                                has_checksum=buf.block_checksums, base=base, field=where,
                                region=f"block {i} of {field}")
            valid = decode_presence(parts.presence, n, base=base + 8, field=where + "/presence")
            yield n, parts, valid, base, where

    def _numeric_stream(self, buf: spb.EncodedBuffer, dtype: np.dtype, field: str
                        ) -> tuple[np.ndarray, np.ndarray | None]:
        """All values of a fixed-width block stream and its valid-mask (None: no nulls)."""
        arrays, masks = [], []
        any_null = False
        for n, parts, valid, base, where in self._block_parts(buf, field):
            arrays.append(decode_numeric_values(parts.values, n, dtype,
                                                base=base + parts.values_offset,
                                                field=where + "/values"))
            if valid is not None:
                any_null = True
            masks.append(valid)
        values = np.concatenate(arrays) if arrays else np.zeros(0, dtype)
        if not any_null:
            return values, None
        mask = np.concatenate([np.ones(len(a), bool) if m is None else m
                               for a, m in zip(arrays, masks, strict=True)])
        return values, mask

    def _binary_stream(self, buf: spb.EncodedBuffer, fixed: int, field: str
                       ) -> tuple[list[bytes], np.ndarray | None]:
        out: list[bytes] = []
        masks = []
        any_null = False
        for n, parts, valid, base, where in self._block_parts(buf, field):
            out.extend(decode_binary_values(parts.values, n, fixed,
                                            base=base + parts.values_offset,
                                            field=where + "/values"))
            any_null |= valid is not None
            masks.append(np.ones(n, bool) if valid is None else valid)
        return out, (np.concatenate(masks) if any_null else None)

    def _bits(self, buf: spb.EncodedBuffer, n: int, field: str) -> np.ndarray:
        raw, _ = self._numeric_stream(buf, np.dtype(np.uint8), field)
        bits = np.unpackbits(raw, bitorder="little")
        if bits.size < n:
            raise LayoutError(f"bit buffer holds {bits.size} bits for {n} positions",
                              offset=buf.buffer.range.start, field=field)
        return bits[:n].astype(bool)

    def value_dictionary(self, buf: spb.EncodedBuffer, field: str
                         ) -> tuple[list[bytes], int | None]:
        """Entries of a VALUE_DICTIONARY buffer (checksums checked) and its null id."""
        ref = DataRefInfo.of(buf.buffer)
        self._hop(HOPS_BUFFER, field + "/buffer")
        raw = self._blobs.read(ref, field + "/buffer")
        if len(raw) < 128:
            raise TruncatedError(f"value dictionary of {len(raw)} bytes (header needs 128)",
                                 offset=ref.start, field=field)
        with kaitai_errors(prefix=field, base=ref.start):
            vd = KsAmudai.ValueDictionary(_ks_stream(raw))
            h = vd.header
        computed = checksum(raw[:124])
        if computed != h.checksum:
            raise ChecksumError(f"value dictionary header of {field}", h.checksum, computed,
                                offset=ref.start + 124, field=field + "/header/checksum")
        size = len(raw)
        for name, lo, hi in (("values", h.ofs_values, h.ofs_values_end),
                             ("offsets", h.ofs_offsets, h.ofs_offsets_end),
                             ("sorted_ids", h.ofs_sorted_ids, h.ofs_sorted_ids_end)):
            if not 128 <= lo <= hi <= size:
                raise LayoutError(f"dictionary {name} section [{lo}, {hi}) is outside the "
                                  f"{size}-byte buffer", offset=ref.start, field=field)
        sections = {}
        with kaitai_errors(prefix=field, base=ref.start):
            pairs = [("values", vd.values, h.ofs_values), ("sorted_ids", vd.sorted_ids,
                                                           h.ofs_sorted_ids)]
            if vd.offsets is not None:
                pairs.append(("offsets", vd.offsets, h.ofs_offsets))
            for name, sec, lo in pairs:
                computed = checksum(sec.payload)
                if computed != sec.checksum:
                    raise ChecksumError(f"value dictionary {name} section of {field}",
                                        sec.checksum, computed,
                                        offset=ref.start + lo + _section_len(h, name) - 4,
                                        field=f"{field}/{name}/checksum")
                sections[name] = sec.payload
        count = h.num_values
        data = sections["values"]
        if h.fixed_value_size:
            if count * h.fixed_value_size != len(data):
                raise LayoutError(f"{count} fixed values of {h.fixed_value_size} bytes, "
                                  f"{len(data)} bytes stored", offset=ref.start + h.ofs_values,
                                  field=field + "/values")
            s = h.fixed_value_size
            entries = [data[i * s : (i + 1) * s] for i in range(count)]
        else:
            offs_raw = sections.get("offsets", b"")
            if len(offs_raw) != 8 * (count + 1):
                raise LayoutError(f"{count} entries need {8 * (count + 1)} offset bytes, "
                                  f"{len(offs_raw)} stored", offset=ref.start + h.ofs_offsets,
                                  field=field + "/offsets")
            offs = np.frombuffer(offs_raw, "<u8")
            from ._amudai_blocks import _slice

            entries = _slice(data, offs, ref.start + h.ofs_offsets, field + "/offsets")
        null_id = h.null_id if h.null_entry_present else None
        if null_id is not None and null_id >= count:
            raise LayoutError(f"null id {null_id} of {count} entries", offset=ref.start + 6,
                              field=field + "/header/null_id")
        return entries, null_id

    # -- column values ------------------------------------------------------------------------

    def read_column(self, path: str) -> list[Any]:
        """Every value of column ``path`` (``a.b``), all stripes in order; None for nulls.

        Ints, floats, bools, str (String), bytes (Binary, FixedSizeBinary, Guid), datetime
        (DateTime), dict (Struct, Map), list (List, FixedSizeList).
        """
        node = self.field(path)
        out: list[Any] = []
        for k, stripe in enumerate(self.stripes):
            out.extend(self._column_in_stripe(k, node, self._positions(k, node, stripe)))
        return out

    def _positions(self, k: int, node: AmudaiField, stripe: AmudaiStripe) -> int:
        """Positions of ``node`` in stripe ``k``: the stripe's records for a top-level field;
        for a nested one (a list's items, a map's keys...), its stripe descriptor's count,
        which the parent's offsets bound when the parent is read as a whole."""
        if any(node is top for top in self.schema):
            return stripe.record_count
        sfd = self.stripe_field(k, node.schema_id)
        return 0 if sfd is None else int(sfd.field.position_count)

    def read_array(self, path: str) -> np.ndarray:
        """A fixed-width numeric column as a numpy array (masked where there are nulls)."""
        node = self.field(path)
        if _dtype_of(node) is None:
            raise ShardkitError(f"column {path!r} ({node.type}) is not fixed-width numeric")
        parts, masks, any_null = [], [], False
        for k, stripe in enumerate(self.stripes):
            arr, mask = self._primitive_array(k, node, self._positions(k, node, stripe))
            parts.append(arr)
            masks.append(mask)
            any_null |= mask is not None
        dtype = _dtype_of(node)
        values = np.concatenate(parts) if parts else np.zeros(0, dtype)
        if not any_null:
            return values
        mask = np.concatenate([np.ones(len(a), bool) if m is None else m
                               for a, m in zip(parts, masks, strict=True)])
        return np.ma.MaskedArray(values, ~mask)

    def _primitive_array(self, k: int, node: AmudaiField, count: int
                         ) -> tuple[np.ndarray, np.ndarray | None]:
        dtype = _dtype_of(node)
        assert dtype is not None
        field = f"/stripes/{k}/fields/{node.path}"
        if count > MAX_POSITIONS:
            raise LimitExceededError(f"{count} positions (the cap is {MAX_POSITIONS})",
                                     field=field)
        sfd = self.stripe_field(k, node.schema_id)
        if sfd is None:
            return np.zeros(count, dtype), np.zeros(count, bool)
        self._check_count(sfd, count, field)
        if sfd.field.HasField("constant_value"):
            value = self._constant(sfd, node, field)
            if value is None:
                return np.zeros(count, dtype), np.zeros(count, bool)
            if isinstance(value, datetime):
                value = sfd.field.constant_value.datetime_value.ticks
            return np.full(count, value, dtype), None
        bufs = self._buffers(sfd, field)
        if spb.DATA not in bufs:
            raise LayoutError(f"{node.type} field without a DATA buffer", field=field)
        values, mask = self._numeric_stream(bufs[spb.DATA], dtype, field + "/data")
        if len(values) != count:
            raise LayoutError(f"DATA buffer holds {len(values)} values, the stripe "
                              f"{count}", offset=bufs[spb.DATA].buffer.range.start,
                              field=field + "/data")
        return values, mask

    def _check_count(self, sfd: spb.StripeFieldDescriptor, count: int, field: str) -> None:
        if sfd.field.position_count != count:
            raise LayoutError(f"field descriptor says {sfd.field.position_count} positions, "
                              f"expected {count}", field=field + "/position_count")

    def _constant(self, sfd: spb.StripeFieldDescriptor, node: AmudaiField, field: str) -> Any:
        return self._constant_of(sfd.field, node, field)

    def _constant_of(self, msg: spb.FieldDescriptor, node: AmudaiField, field: str) -> Any:
        value = any_value_to_python(msg.constant_value, self.max_depth, field=field)
        if node.type == "String" and isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        return value

    def _column_in_stripe(self, k: int, node: AmudaiField, count: int) -> list[Any]:
        field = f"/stripes/{k}/fields/{node.path}"
        if count > MAX_POSITIONS:
            raise LimitExceededError(f"{count} positions (the cap is {MAX_POSITIONS})",
                                     field=field)
        sfd = self.stripe_field(k, node.schema_id)
        if sfd is None:
            return [None] * count
        self._check_count(sfd, count, field)
        t = node.type
        if sfd.field.HasField("constant_value"):
            return [self._constant(sfd, node, field)] * count
        bufs = self._buffers(sfd, field)
        valid: np.ndarray | None = None
        if spb.PRESENCE in bufs:
            valid = self._bits(bufs[spb.PRESENCE], count, field + "/presence")
        if t == "Struct":
            kids = {c.name: self._column_in_stripe(k, c, count) for c in node.children}
            rows = [{name: col[i] for name, col in kids.items()} for i in range(count)]
            return _apply(rows, valid)
        if t in ("List", "Map"):
            if spb.OFFSETS not in bufs:
                raise LayoutError(f"{t} field without an OFFSETS buffer", field=field)
            offs, _ = self._numeric_stream(bufs[spb.OFFSETS], np.dtype("<u8"),
                                           field + "/offsets")
            self._check_offsets(offs, count, bufs[spb.OFFSETS], field)
            total = int(offs[-1])
            bounds = offs.tolist()
            kids = [self._column_in_stripe(k, c, total) for c in node.children]
            if t == "List":
                rows = [kids[0][a:b] for a, b in itertools.pairwise(bounds)]
            else:
                if len(kids) != 2:
                    raise LayoutError(f"Map field with {len(kids)} children (expected 2)",
                                      field=field)
                rows = [_map_value(kids[0][a:b], kids[1][a:b])
                        for a, b in itertools.pairwise(bounds)]
            return _apply(rows, valid)
        if t == "FixedSizeList":
            size = node.fixed_size
            if len(node.children) != 1 or size <= 0:
                raise LayoutError("FixedSizeList needs one child and a positive size",
                                  field=field)
            child = self._column_in_stripe(k, node.children[0], count * size)
            rows = [child[i * size : (i + 1) * size] for i in range(count)]
            return _apply(rows, valid)
        if t == "Boolean":
            if spb.DATA not in bufs:
                raise LayoutError("Boolean field without a DATA buffer", field=field)
            bits = self._bits(bufs[spb.DATA], count, field + "/data")
            return _apply(bits.tolist(), valid)
        if _dtype_of(node) is not None:
            values, mask = self._primitive_array(k, node, count)
            items = values.tolist()
            if t == "DateTime":
                items = [ticks_to_datetime(x, field=field) for x in items]
            return _apply(items, mask)
        if t in _BYTES_TYPES:
            return self._bytes_column(bufs, node, count, field)
        raise UnsupportedVersionError(f"reading {t} columns is not supported", field=field)

    def _check_offsets(self, offs: np.ndarray, count: int, buf: spb.EncodedBuffer,
                       field: str) -> None:
        start = buf.buffer.range.start
        if len(offs) != count + 1:
            raise LayoutError(f"OFFSETS buffer holds {len(offs)} values for {count} positions "
                              f"(expected {count + 1})", offset=start, field=field + "/offsets")
        if len(offs) and (int(offs[0]) != 0 or bool(np.any(np.diff(offs.astype(np.int64)) < 0))
                          or int(offs[-1]) > MAX_BUFFER):
            raise LayoutError("list offsets do not increase from 0", offset=start,
                              field=field + "/offsets")

    def _bytes_column(self, bufs: dict[int, Any], node: AmudaiField, count: int,
                      field: str) -> list[Any]:
        fixed = node.fixed_size if node.type in ("FixedSizeBinary", "Guid") else 0
        if node.type == "Guid":
            fixed = fixed or 16
        if spb.DATA not in bufs:
            raise LayoutError(f"{node.type} field without a DATA buffer", field=field)
        if spb.VALUE_DICTIONARY in bufs:
            entries, null_id = self.value_dictionary(bufs[spb.VALUE_DICTIONARY],
                                                     field + "/dictionary")
            ids, mask = self._numeric_stream(bufs[spb.DATA], np.dtype("<u4"), field + "/data")
            if len(ids) != count:
                raise LayoutError(f"{len(ids)} dictionary ids for {count} positions",
                                  field=field + "/data")
            if len(ids) and int(ids.max()) >= len(entries):
                raise LayoutError(f"dictionary id {int(ids.max())} of {len(entries)} entries",
                                  field=field + "/data")
            items: list[Any] = [None if i == null_id else entries[i] for i in ids.tolist()]
            valid = mask
        else:
            items, valid = self._binary_stream(bufs[spb.DATA], fixed, field + "/data")
            if len(items) != count:
                raise LayoutError(f"DATA buffer holds {len(items)} values, expected {count}",
                                  field=field + "/data")
        if node.type == "String":
            try:
                items = [None if v is None else v.decode("utf-8") for v in items]
            except UnicodeDecodeError as exc:
                raise LayoutError(f"String value is not UTF-8: {exc}", field=field) from exc
        return _apply(items, valid)

    # -- CLI hooks ------------------------------------------------------------------------------

    def keys(self) -> Iterator[str]:
        """Column paths (every schema node), in schema id order."""
        for node in self.iter_fields():
            yield node.path

    def format_key(self, key: str) -> str:
        """``path<TAB>type`` for ``shardkit ls``."""
        return f"{key}\t{self.field(key).type_name}"

    def parse_key(self, text: str) -> str:
        """A column path as given on the command line."""
        self.field(text)
        return text

    def __getitem__(self, key: str) -> list[Any]:
        """Column values, JSON-ready (datetimes as ISO text; bytes stay bytes)."""
        return _plain(self.read_column(key))

    def __contains__(self, key: object) -> bool:
        try:
            return isinstance(key, str) and self.field(key) is not None
        except EntryNotFoundError:
            return False

    # -- verification ---------------------------------------------------------------------------

    def verify(self, progress: Callable[[int, int], None] | None = None) -> list[Problem]:
        """Check every record, block, dictionary, count and index; return the problems found.

        Index descriptors (shard, stripe and field level) are checked too: their records'
        checksums, their schema ids, and every artifact's DataRef against its file's size.
        Artifacts that are Amudai shards are verified in turn (their problems' fields start
        with the artifact's path, offsets count in the artifact's file), as far as
        ``max_hops`` allows; a chain cut short by it is a ``hops`` problem.
        """
        problems: list[Problem] = []

        def attempt(check: str, fn: Callable[[], Any]) -> Any:
            try:
                return fn()
            except ShardkitError as exc:
                name = ("checksum" if isinstance(exc, ChecksumError) else
                        "unsupported" if isinstance(exc, UnsupportedVersionError) else
                        "hops" if isinstance(exc, HopLimitError) else check)
                problems.append(Problem(name, exc.message, exc.offset, exc.field))
                return None

        if attempt("schema", lambda: self.schema) is None:
            return problems
        self._verify_lookups(problems)
        attempt("url_list", lambda: self.urls)
        attempt("properties", lambda: self.properties)
        indexes: list[AmudaiIndex] = list(attempt("indexes", lambda: self.indexes) or ())
        stripes = attempt("stripe_list", lambda: self.stripes)
        if stripes is None:
            self._verify_indexes(indexes, problems)
            return problems
        self._verify_counts(stripes, problems)
        nodes = list(self.iter_fields())
        shard_counts: dict[int, int] = {}
        total = len(stripes) * (len(self.schema) + 1)
        done = 0
        for k, stripe in enumerate(stripes):
            attempt("stripe_properties", lambda k=k: self.stripe_properties(k))
            indexes += attempt("indexes", lambda k=k: self.stripe_indexes(k)) or ()
            refs = attempt("field_list", lambda k=k: self._stripe_field_list(k)) or []
            for sid, ref in enumerate(refs):
                if sid >= len(nodes) and not ref.empty:
                    problems.append(Problem("field_list", f"stripe {k} field list entry {sid} "
                                            "is past the schema's ids", ref.start,
                                            f"/stripes/{k}/field_list/{sid}"))
            for node in nodes:
                sfd = attempt("descriptor", lambda k=k, n=node: self.stripe_field(k,
                                                                                  n.schema_id))
                if sfd is not None:
                    shard_counts[node.schema_id] = shard_counts.get(node.schema_id, 0) + \
                        sfd.field.position_count
                    if sfd.field.HasField("indexes"):
                        indexes += attempt("indexes", lambda k=k, n=node, f=sfd.field:
                                           self._index_list(
                                               f.indexes,
                                               f"/stripes/{k}/field_list/{n.schema_id}",
                                               HOPS_STRIPE_FIELD)) or ()
                    for buf in self._buffers_safe(sfd):
                        self._verify_buffer(buf, k, node, problems)
            done += 1
            for top in self.schema:
                attempt("values", lambda k=k, t=top, c=stripe.record_count:
                        self._column_in_stripe(k, t, c))
                done += 1
                if progress:
                    progress(done, total)
        for node in nodes:
            d = attempt("descriptor", lambda n=node: self.field_descriptor(n.schema_id))
            want = shard_counts.get(node.schema_id, 0)
            if d is not None and d.position_count != want:
                problems.append(Problem("count", f"shard descriptor of {node.path} says "
                                        f"{d.position_count} positions, its stripes {want}",
                                        None, f"/field_list/{node.schema_id}"))
            if d is not None and d.HasField("indexes"):
                indexes += attempt("indexes", lambda n=node, f=d: self._index_list(
                    f.indexes, f"/field_list/{n.schema_id}", HOPS_STRIPE)) or ()
        self._verify_indexes(indexes, problems)
        if progress:
            progress(total, total)
        return problems

    def _verify_lookups(self, problems: list[Problem]) -> None:
        """The schema's HashLookups (name -> child index) agree with the names (section 3)."""
        root = fb.Schema.GetRootAs(self._schema_fb, 0)
        todo: list[tuple[str, Any, list[Any]]] = []
        try:
            tops = [root.Fields(i).DataType() for i in range(root.FieldsLength())]
            todo.append(("/schema/field_lookup", root.FieldLookup(), tops))
            stack = [(dt, (dt.FieldName() or b"").decode("utf-8", "replace")) for dt in tops]
            while stack:  # the tree was checked (depth, ids) when self.schema was built
                dt, path = stack.pop()
                kids = [dt.Children(i) for i in range(dt.ChildrenLength())]
                todo.append((f"/schema/{path}/lookup", dt.Lookup(), kids))
                stack += [(k, f"{path}.{(k.FieldName() or b'').decode('utf-8', 'replace')}")
                          for k in kids]
        except (IndexError, struct.error, ValueError, TypeError, AttributeError) as exc:
            problems.append(Problem("lookup", f"schema name lookups unreadable: {exc}", None,
                                    "/schema"))
        for field, lookup, nodes in todo:
            if lookup is None:
                continue  # optional: readers may scan the names
            try:
                names = [n.FieldName() or b"" for n in nodes]
                issue = _lookup_issue([lookup.Buckets(i) for i in range(lookup.BucketsLength())],
                                      [lookup.Entries(i) for i in range(lookup.EntriesLength())],
                                      names)
            except (IndexError, struct.error, ValueError, TypeError, AttributeError) as exc:
                issue = f"unreadable: {exc}"
            if issue:
                problems.append(Problem("lookup", f"schema name lookup {issue}", None, field))

    def _verify_indexes(self, indexes: list[AmudaiIndex], problems: list[Problem]) -> None:
        """Schema ids in range; artifacts in bounds; nested shard artifacts verified."""
        count = getattr(self, "schema_id_count", 0)
        for index in indexes:
            for ids in index.indexed_fields:
                bad = [i for i in ids if i >= count]
                if bad or not ids:
                    problems.append(Problem("index", f"index {index.index_type!r} names schema "
                                            f"ids {list(ids)} (the schema has {count})", None,
                                            index.path + "/indexed_fields"))
            for art in index.artifacts:
                self._verify_artifact(art, problems)

    def _verify_artifact(self, art: AmudaiIndexArtifact, problems: list[Problem]) -> None:
        ref = art.data_ref
        try:
            self._hop(art.hops, art.path)
            src = self._blobs.locate(ref, art.path)
            if ref.end - ref.start < 28 or src.read_range(ref.start, ref.start + 4) != b"amud":
                return  # an opaque artifact: in bounds is all there is to check
            # a nested shard: verify it only when its deepest records are within max_hops
            self._hop(art.hops + HOPS_BUFFER, art.path)
            child = self.open_artifact(art)
        except ShardkitError as exc:
            check = "hops" if isinstance(exc, HopLimitError) else \
                "checksum" if isinstance(exc, ChecksumError) else "index"
            problems.append(Problem(check, exc.message, exc.offset, exc.field))
            return
        try:
            found = child.verify()
        except ShardkitError as exc:
            found = [Problem("index", exc.message, exc.offset, exc.field)]
        try:
            for p in found:
                msg = p.message if p.message.startswith("in index artifact ") else \
                    f"in index artifact {art.path} ({art.name}): {p.message}"
                problems.append(Problem(
                    p.check, msg,
                    None if p.offset is None else ref.start + p.offset,
                    art.path + (p.field or "")))
        finally:
            self._children.remove(child)
            child.close()

    def _buffers_safe(self, sfd: spb.StripeFieldDescriptor) -> list[Any]:
        return [b for enc in sfd.encodings if enc.WhichOneof("kind") == "native"
                for b in enc.native.buffers]

    def _verify_counts(self, stripes: tuple[AmudaiStripe, ...], problems: list[Problem]
                       ) -> None:
        d = self.directory
        if d.stripe_count != len(stripes):
            problems.append(Problem("count", f"directory says {d.stripe_count} stripes, the "
                                    f"stripe list has {len(stripes)}", self.directory_ref.start,
                                    "/directory/stripe_count"))
        pos = 0
        for s in stripes:
            if s.shard_position != pos:
                problems.append(Problem("count", f"stripe {s.index} starts at record "
                                        f"{s.shard_position}, expected {pos}", None,
                                        f"/stripes/{s.index}/shard_position"))
            pos += s.record_count
        if pos != d.total_record_count:
            problems.append(Problem("count", f"directory says {d.total_record_count} records, "
                                    f"the stripes hold {pos}", self.directory_ref.start,
                                    "/directory/total_record_count"))
        for sid in range(len(self._shard_field_list_safe(problems))):
            if sid >= self.schema_id_count:
                problems.append(Problem("field_list", f"shard field list entry {sid} is past "
                                        f"schema_id_count {self.schema_id_count}", None,
                                        f"/field_list/{sid}"))

    def _shard_field_list_safe(self, problems: list[Problem]) -> list[DataRefInfo]:
        try:
            return self._shard_field_list
        except ShardkitError as exc:
            problems.append(Problem("field_list", exc.message, exc.offset, exc.field))
            return []

    def _verify_buffer(self, buf: spb.EncodedBuffer, k: int, node: AmudaiField,
                       problems: list[Problem]) -> None:
        kind = BUFFER_KINDS.get(buf.kind, str(buf.kind))
        field = f"/stripes/{k}/fields/{node.path}/{kind.lower()}"
        ref = DataRefInfo.of(buf.buffer)
        try:
            if buf.kind == spb.VALUE_DICTIONARY:
                self.value_dictionary(buf, field)
                if (ref.end - ref.start) % 64:
                    problems.append(Problem("alignment", f"value dictionary of "
                                            f"{ref.end - ref.start} bytes is not padded to 64",
                                            ref.start, field))
                return
            if not buf.HasField("block_map"):
                return
            mref = DataRefInfo.of(buf.block_map)
            if (mref.start - ref.start) % 16:
                problems.append(Problem("alignment", "block map does not start 16-aligned in "
                                        "its buffer", mref.start, field + "/block_map"))
            for i, (_, raw, base) in enumerate(self._blocks(buf, field)):
                if len(raw) % 8:
                    problems.append(Problem("alignment", f"block {i} is {len(raw)} bytes, not "
                                            "a multiple of 8", base, f"{field}/blocks/{i}"))
                split_block(raw, embedded_presence=buf.embedded_presence,
                            has_checksum=buf.block_checksums, base=base,
                            field=f"{field}/blocks/{i}", region=f"block {i} of {field}")
        except ShardkitError as exc:
            check = "checksum" if isinstance(exc, ChecksumError) else \
                "hops" if isinstance(exc, HopLimitError) else "buffer"
            problems.append(Problem(check, exc.message, exc.offset, exc.field))

    # -- object tree -------------------------------------------------------------------------

    def summary(self) -> dict[str, Any]:
        """What ``shardkit info`` shows: schema, counts, stripes, properties."""
        d = self.directory
        h = self._ks.header
        return _plain({
            "format": self.format_id,
            "format_name": self.format_name,
            "file": self.source.name,
            "file_size": self.source.size,
            "version": f"{h.version_major}.{h.version_minor}.{h.version_patch}",
            "record_count": self.record_count,
            "deleted_record_count": self.deleted_record_count,
            "stripe_count": int(d.stripe_count),
            "raw_data_size": int(d.raw_data_size) if d.HasField("raw_data_size") else None,
            "schema_id_count": (self.schema, self.schema_id_count)[1],
            "schema": [f"{n.path}: {n.type_name}" for n in self.iter_fields()],
            "stripes": [{"index": s.index, "record_count": s.record_count,
                         "shard_position": s.shard_position} for s in self.stripes],
            "urls": self.urls,
            "properties": self.properties,
            "indexes": [i.index_type for i in self.indexes],
        })

    def to_dict(self) -> dict[str, Any]:
        """The whole metadata tree: directory, schema, properties, indexes, descriptors, buffers.

        Descriptors are shown as their protobuf messages are (field names of the .proto),
        except that field-level ``indexes`` take the same shape as the shard's and stripes'
        ``indexes`` lists (:meth:`AmudaiIndex.to_dict`).
        """
        out = self.summary()
        out["directory"] = _msg_dict(self.directory, self.max_depth)
        out["schema"] = [f.to_dict() for f in self.schema]
        out["indexes"] = [i.to_dict() for i in self.indexes]
        out["field_descriptors"] = {
            n.path: self._descriptor_dict(d, f"/field_list/{n.schema_id}", HOPS_STRIPE)
            if (d := self.field_descriptor(n.schema_id)) else None for n in self.iter_fields()}
        stripes = []
        for s in self.stripes:
            entry = s.to_dict()
            entry["properties"] = self.stripe_properties(s.index)
            entry["indexes"] = [i.to_dict() for i in s.indexes]
            fields = {}
            for n in self.iter_fields():
                sfd = self.stripe_field(s.index, n.schema_id)
                if sfd is None:
                    fields[n.path] = None
                    continue
                fields[n.path] = _msg_dict(sfd, self.max_depth)
                fields[n.path]["field"] = self._descriptor_dict(
                    sfd.field, f"/stripes/{s.index}/field_list/{n.schema_id}",
                    HOPS_STRIPE_FIELD)
            entry["fields"] = fields
            stripes.append(entry)
        out["stripes"] = stripes
        out["sections"] = [s.to_dict() for s in self.sections()]
        return _plain(out)

    def _descriptor_dict(self, msg: spb.FieldDescriptor, base: str, hops: int
                         ) -> dict[str, Any]:
        out = _msg_dict(msg, self.max_depth)
        if msg.HasField("indexes"):
            out["indexes"] = [i.to_dict() for i in self._index_list(msg.indexes, base, hops)]
        return out

    def sections(self) -> list[Section]:
        """Byte ranges of the root file, in file order."""
        size = self.source.size
        out = [Section("/header", 0, 8, "amud 0.1.0"),
               Section("/directory", self.directory_ref.start, self.directory_ref.end,
                       "ShardDirectory record"),
               Section("/len_directory", size - 12, size - 8, "u32 L"),
               Section("/footer", size - 8, size, "amud 0.1.0")]
        d = self.directory
        for name in ("schema_ref", "properties_ref", "field_list_ref", "stripe_list_ref",
                     "url_list_ref", "indexes_ref"):
            if d.HasField(name):
                ref = DataRefInfo.of(getattr(d, name))
                if not ref.empty and not ref.url:
                    out.append(Section("/" + name.removesuffix("_ref"), ref.start, ref.end,
                                       "record"))
        for ref in self._shard_field_list:
            if not ref.empty and not ref.url:
                out.append(Section("/field_list/descriptor", ref.start, ref.end,
                                   "FieldDescriptor record"))
        artifacts = [a for i in self.indexes for a in i.artifacts]
        for s in self.stripes:
            artifacts += [a for i in s.indexes for a in i.artifacts]
            for name, ref in (("field_list", s.field_list), ("properties", s.properties_ref),
                              ("indexes", s.indexes_ref)):
                if not ref.empty and not ref.url:
                    out.append(Section(f"/stripes/{s.index}/{name}", ref.start, ref.end,
                                       "record"))
            for node in self.iter_fields():
                ref = self._stripe_field_list(s.index)[node.schema_id] \
                    if node.schema_id < len(self._stripe_field_list(s.index)) else None
                if ref is None or ref.empty:
                    continue
                base = f"/stripes/{s.index}/fields/{node.path}"
                if not ref.url:
                    out.append(Section(base + "/descriptor", ref.start, ref.end,
                                       "StripeFieldDescriptor record"))
                sfd = self.stripe_field(s.index, node.schema_id)
                if sfd.field.HasField("indexes"):
                    artifacts += [a for i in self._index_list(
                        sfd.field.indexes, f"/stripes/{s.index}/field_list/{node.schema_id}",
                        HOPS_STRIPE_FIELD) for a in i.artifacts]
                for buf in self._buffers_safe(sfd):
                    b = DataRefInfo.of(buf.buffer)
                    if b.url or b.empty:
                        continue
                    kind = BUFFER_KINDS.get(buf.kind, str(buf.kind))
                    out.append(Section(f"{base}/{kind.lower()}", b.start, b.end,
                                       f"{kind} buffer, {buf.block_count} blocks"
                                       if buf.HasField("block_count") else f"{kind} buffer"))
        for node in self.iter_fields():
            d = self.field_descriptor(node.schema_id)
            if d is not None and d.HasField("indexes"):
                artifacts += [a for i in self._index_list(
                    d.indexes, f"/field_list/{node.schema_id}", HOPS_STRIPE) for a in i.artifacts]
        for art in artifacts:
            ref = art.data_ref
            if not ref.empty and (not ref.url or self._blobs._is_self(ref.url)):
                out.append(Section(art.path, ref.start, ref.end, f"index artifact {art.name!r}"))
        out.sort(key=lambda s: (s.start, s.end))
        return out


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


def _seg_offset(segments: list[Any], i: int) -> int:
    """Byte offset of segment ``i``'s record (sum of the previous records' sizes)."""
    total = 0
    for seg in segments[:i]:
        total += _seg_size(seg)
    return total


def _seg_size(seg: Any) -> int:
    n = seg.num_blocks
    size = 28 + n * seg.logical_size_bits // 8
    size += (-size) % 4
    size += n * seg.block_size_bits // 8
    return size + (-size) % 8


def _section_len(h: Any, name: str) -> int:
    lo, hi = {"values": (h.ofs_values, h.ofs_values_end),
              "offsets": (h.ofs_offsets, h.ofs_offsets_end),
              "sorted_ids": (h.ofs_sorted_ids, h.ofs_sorted_ids_end)}[name]
    return hi - lo


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

