"""The Amudai reader: directory, schema, stripes, descriptors, indexes, column values."""

from __future__ import annotations

import operator
import struct
from collections.abc import Iterator
from functools import cached_property
from typing import Any, cast, overload

import kaitaistruct

from ..._kaitai import kaitai_errors, parse
from ...errors import (
    ChecksumError,
    EntryNotFoundError,
    FormatError,
    InvalidKeyError,
    LayoutError,
    LimitExceededError,
    ShardkitError,
    TruncatedError,
    UnsupportedVersionError,
)
from ...generated.amudai_shard import AmudaiShard as KsAmudai
from ...hashing.amudai import checksum
from ...render import to_jsonable
from ...sources import ByteSource, as_stream
from ..base import Reader, Section
from . import model as _model
from ._deps import cpb, spb
from .arrays import AmudaiArrays
from .batches import AmudaiBatches
from .blocks import (
    any_value_to_python,
    ticks_to_datetime,
)
from .columns import AmudaiColumns
from .model import (
    BUFFER_KINDS,
    HOPS_STRIPE,
    HOPS_STRIPE_FIELD,
    HOPS_TOP,
    MAX_HOPS,
    MAX_RECORD,
    AmudaiBuffer,
    AmudaiEncoding,
    AmudaiField,
    AmudaiFieldDescriptor,
    AmudaiIndex,
    AmudaiIndexArtifact,
    AmudaiStripe,
    DataRefInfo,
    HopLimitError,
    _msg_dict,
    _plain,
)
from .refs import _Blobs, _Known, _ks_stream, _Window
from .rows import AmudaiRows
from .stream import AmudaiStream
from .verify import AmudaiVerify
from .wire import WALK_FROM, check_items, check_known, directory_refs

#: The largest FixedSizeBinary / FixedSizeList size read (Arrow keeps the size in an int32).
MAX_FIXED_SIZE = 2**31 - 1


class AmudaiShard(AmudaiArrays, AmudaiColumns, AmudaiRows, AmudaiStream, AmudaiBatches,
                  AmudaiVerify, Reader):
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
        known = [(size - tail_len, tail)]
        if tail_len < size:
            known.append((0, source.read_range(0, 8)))  # the header frame, in one read
        self._ks = parse(KsAmudai, as_stream(_Known(source, known)),
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
        try:  # read from the tail already in memory; the .ksy caps it
            with kaitai_errors():
                length = self._ks.len_directory
        except LayoutError as exc:
            cause = exc.__cause__
            if not isinstance(cause, kaitaistruct.ValidationGreaterThanError):
                raise
            raise LimitExceededError(f"directory length {cause.actual} exceeds the format's "
                                     f"cap of {cause.max} bytes", offset=size - 12,
                                     field="/len_directory") from exc
        start = size - 12 - (length + 8)  # the .ksy's `directory` instance
        if start < 8:
            raise LayoutError(f"directory of {length} bytes does not fit in the file",
                              offset=size - 12, field="/len_directory")
        self.directory_ref = DataRefInfo("", start, size - 12)
        raw = tail[start - (size - tail_len):tail_len - 12] if start >= size - tail_len \
            else source.read_range(start, size - 12)
        self._directory_raw = (raw, start)
        # framing and checksum now; the message's fields with a wire walk, so that open
        # imports no protobuf (the message is parsed on first use). Anything the walk does
        # not take is parsed now by protobuf, which names what is wrong.
        refs = directory_refs(self._decode(raw, start, "/directory", bytes, "directory"))
        if refs is None:
            refs = {name for name in ("schema_ref", "field_list_ref", "stripe_list_ref",
                                      "url_list_ref") if self.directory.HasField(name)}
        for name in ("schema_ref", "field_list_ref", "stripe_list_ref", "url_list_ref"):
            if name not in refs:
                raise LayoutError(f"the shard directory has no {name}", offset=start,
                                  field=f"/directory/{name}")

    @cached_property
    def directory(self) -> spb.ShardDirectory:
        """The shard directory (protobuf ``ShardDirectory``), parsed on first use."""
        raw, start = self._directory_raw
        msg: spb.ShardDirectory = self._decode(raw, start, "/directory", spb.ShardDirectory,
                                               "directory")
        return msg

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
        if len(rec.payload) >= WALK_FROM:
            check_items(rec.payload, cls.DESCRIPTOR, max_depth=self.max_depth, offset=base + 4,
                        field=field + "/payload")
        from google.protobuf.message import DecodeError

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
        check_known(msg, offset=base + 4, field=field, max_depth=self.max_depth)
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
        """Records in the shard, as the directory says (``total_record_count``); reading
        rows or columns first checks it against the stripes' counts (LayoutError if they
        differ), and ``verify`` reports the difference."""
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
            from ...generated import amudai_schema_fb as fb

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
        if bt >= len(_model.BASIC_TYPES):
            raise UnsupportedVersionError(f"unknown BasicType {bt} for field {name!r}",
                                          field="/schema")
        path = f"{prefix}.{name}" if prefix else name
        kids = tuple(self._node(dt.Children(i), path, depth + 1, seen)
                     for i in range(dt.ChildrenLength()))
        ext = dt.ExtendedType()
        label = ext.Label() if ext is not None else None
        fixed = int(dt.FixedSize())
        if fixed > MAX_FIXED_SIZE:
            # Arrow's fixed_size_binary and fixed_size_list hold an int32 size.
            raise LayoutError(f"field {path!r}: fixed size {fixed} exceeds {MAX_FIXED_SIZE}",
                              field=f"/schema/{path}/fixed_size")
        return AmudaiField(name, _model.BASIC_TYPES[bt], sid, dt.ParentSchemaId(),
                           bool(dt.Signed()), fixed, kids, path,
                           label.decode() if label else None, annotation)

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

    def _stripe_number(self, stripe: Any) -> int:
        """``stripe`` as an int; InvalidKeyError unless ``0 <= stripe < len(stripes)``."""
        n = len(self.stripes)
        try:
            i = -1 if isinstance(stripe, bool) else operator.index(stripe)
        except TypeError:
            i = -1
        if not 0 <= i < n:
            raise InvalidKeyError(f"no stripe {stripe!r}: the shard has {n} (0 to {n - 1})"
                                  if n else f"no stripe {stripe!r}: the shard has none")
        return i

    def stripe_properties(self, stripe: int) -> dict[str, Any]:
        """StripeProperties of stripe ``stripe`` ({} when there are none)."""
        stripe = self._stripe_number(stripe)
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
        stripe = self._stripe_number(stripe)
        # a memo of parsed records, one per stripe (not bytes: no ByteLRU), as _sidx_cache
        cache: dict[int, list[DataRefInfo]] = self.__dict__.setdefault("_sfl_cache", {})
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
        stripe = self._stripe_number(stripe)
        cache: dict[int, tuple[AmudaiIndex, ...]] = self.__dict__.setdefault("_sidx_cache", {})
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

    @overload
    def __getitem__(self, key: str) -> list[Any]: ...

    @overload
    def __getitem__(self, key: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, key: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, key: str | int | slice) -> Any:
        """``s["a.b"]``: a column's values; ``s[i]``: row ``i``; ``s[i:j]``: rows, as dicts.

        A shard is a mapping of column paths (what :meth:`keys`, ``in``, ``len`` and
        ``shardkit get`` use) that can also be indexed by row position; values are JSON-ready
        (datetimes as ISO text; bytes stay bytes).
        """
        if isinstance(key, str):
            return _plain(self.read_column(key))
        if isinstance(key, slice):
            if key.step not in (None, 1):
                raise InvalidKeyError("row slices take no step")
            return self.rows(key.start or 0, key.stop)
        if isinstance(key, int) and not isinstance(key, bool):
            return self.row(key)
        raise InvalidKeyError(f"an Amudai shard is indexed by column path (str) or row "
                              f"position (int, slice), not {type(key).__name__}")

    def __iter__(self) -> Iterator[str]:
        """Column paths, as :meth:`keys`."""
        return self.keys()

    def __len__(self) -> int:
        """Number of column paths (every schema node); rows: :attr:`record_count`."""
        return sum(1 for _ in self.iter_fields())

    def __contains__(self, key: object) -> bool:
        try:
            return isinstance(key, str) and self.field(key) is not None
        except EntryNotFoundError:
            return False

    # -- object tree -------------------------------------------------------------------------

    def summary(self) -> dict[str, Any]:
        """What ``shardkit info`` shows: schema, counts, stripes, properties."""
        d = self.directory
        h = self._ks.header
        return cast(dict[str, Any], to_jsonable(_plain({
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
        })))

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
            fields: dict[str, Any] = {}
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
        return cast(dict[str, Any], to_jsonable(_plain(out)))  # bytes as hex, as dump shows

    def _descriptor_dict(self, msg: spb.FieldDescriptor, base: str, hops: int
                         ) -> dict[str, Any]:
        out: dict[str, Any] = _msg_dict(msg, self.max_depth)
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
        ref: DataRefInfo | None
        for name in ("schema_ref", "properties_ref", "field_list_ref", "stripe_list_ref",
                     "url_list_ref", "indexes_ref"):
            if d.HasField(name):
                ref = DataRefInfo.of(getattr(d, name))
                if not ref.empty and not ref.url:
                    out.append(Section("/" + name.removesuffix("_ref"), ref.start, ref.end,
                                       "record"))
        names = {node.schema_id: node.path for node in self.iter_fields()}
        for sid, ref in enumerate(self._shard_field_list):
            if not ref.empty and not ref.url:  # named by its field, as the stripes' are
                where = f"/fields/{names[sid]}" if sid in names else f"/field_list/{sid}"
                out.append(Section(f"{where}/descriptor", ref.start, ref.end,
                                   "FieldDescriptor record"))
        artifacts = [a for i in self.indexes for a in i.artifacts]
        for s in self.stripes:
            artifacts += self._stripe_sections(s, out)
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

    def _stripe_sections(self, s: AmudaiStripe, out: list[Section]
                         ) -> list[AmudaiIndexArtifact]:
        """Stripe ``s``'s records, field descriptors and buffers (added to ``out``); the
        artifacts of its indexes and of its fields' indexes returned."""
        ref: DataRefInfo | None
        artifacts = [a for i in s.indexes for a in i.artifacts]
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
            assert sfd is not None  # its field list entry is not empty
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
        return artifacts

