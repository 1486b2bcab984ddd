"""Amudai column values: encoded buffers, block maps, value dictionaries, whole columns."""

from __future__ import annotations

import itertools
import struct
from collections.abc import Iterator
from decimal import Decimal
from typing import Any, Literal, overload

from ..._kaitai import kaitai_errors
from ...errors import (
    ChecksumError,
    LayoutError,
    LimitExceededError,
    ShardkitError,
    TruncatedError,
    UnsupportedVersionError,
)
from ...generated.amudai_shard import AmudaiShard as KsAmudai
from ...hashing.amudai import checksum
from . import blocks as _blocks_mod
from ._deps import np, spb
from ._host import ShardHost
from .blocks import (
    TRACE,
    any_value_to_python,
    decode_binary_values,
    decode_numeric_values,
    decode_presence,
    split_block,
    ticks_to_datetime,
)
from .decimal128 import decode_d128
from .model import (
    _BYTES_TYPES,
    HOPS_BUFFER,
    MAX_BUFFER,
    MAX_POSITIONS,
    MAX_UNBACKED_POSITIONS,
    UNBACKED_PER_BYTE,
    AmudaiField,
    AmudaiStripe,
    DataRefInfo,
    _apply,
    _dtype_of,
    _is_text,
    _map_value,
    _section_len,
)
from .refs import _ks_stream


class _Unbacked:
    """Positions one read (a :meth:`~AmudaiColumns.read_column`, ``read_array`` or ``rows``
    call) fills from nothing: absent and constant columns, which no bytes of the file back.
    The running total over every stripe and child column of the call is capped at ``limit``
    (see :meth:`AmudaiColumns._unbacked`), so many stripes sharing one constant descriptor
    cannot multiply the cap."""

    __slots__ = ("limit", "used")

    def __init__(self, limit: int | None = None) -> None:
        self.used = 0
        self.limit = MAX_UNBACKED_POSITIONS if limit is None else limit

    def add(self, count: int, field: str) -> None:
        """Count ``count`` more positions; LimitExceededError past the cap."""
        self.used += count
        if self.used > self.limit:
            raise LimitExceededError(
                f"{self.used} positions of absent or constant columns in one read, which no "
                f"bytes of the file back (the cap is {self.limit}: {MAX_UNBACKED_POSITIONS}, "
                f"or {UNBACKED_PER_BYTE} per byte of the file); the descriptors give the "
                "constants", field=field)


class AmudaiColumns(ShardHost):
    """Column reading for :class:`~shardkit.formats.amudai.AmudaiShard`."""

    def _unbacked(self) -> _Unbacked:
        """A read's count of positions filled from nothing: up to
        :data:`MAX_UNBACKED_POSITIONS`, or :data:`UNBACKED_PER_BYTE` per byte of the shard's
        file when that is more."""
        size = self.source.size
        return _Unbacked(max(MAX_UNBACKED_POSITIONS, UNBACKED_PER_BYTE * size))

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

    def _block_map(self, buf: spb.EncodedBuffer, field: str,
                   raw: bytes | memoryview | None = None
                   ) -> tuple[DataRefInfo, DataRefInfo, list[tuple[int, int, int]]]:
        """A block stream's buffer and block map DataRefs and, given the map's bytes ``raw``,
        its table (``[]`` without them), with every check the readers of block streams share:
        UnsupportedVersionError without a block_map; LayoutError when the map is not inside
        its buffer, when the table is corrupt, or when ``block_count`` disagrees with it."""
        ref = DataRefInfo.of(buf.buffer)
        if not buf.HasField("block_map"):
            raise UnsupportedVersionError("block stream without a block_map DataRef",
                                          offset=ref.start, field=field + "/block_map")
        mref = DataRefInfo.of(buf.block_map)
        if mref.url != ref.url or not ref.start <= mref.start <= mref.end <= ref.end:
            raise LayoutError(f"block map [{mref.start}, {mref.end}) is not inside its buffer "
                              f"[{ref.start}, {ref.end})", offset=mref.start,
                              field=field + "/block_map")
        if raw is None:
            return ref, mref, []
        table = self.block_table(raw, mref.start, field + "/block_map")
        if buf.HasField("block_count") and buf.block_count != len(table):
            raise LayoutError(f"EncodedBuffer says {buf.block_count} blocks, the block map "
                              f"{len(table)}", offset=mref.start, field=field + "/block_count")
        return ref, mref, table

    def _blocks(self, buf: spb.EncodedBuffer, field: str) -> Iterator[tuple[int, memoryview,
                                                                            int]]:
        """``(logical_size, block bytes, absolute offset)`` of each block of a block stream.

        A buffer of at most :data:`BLOCK_WINDOW` bytes is read in one piece; a larger one
        reads its block map, then its blocks in windows of whole neighbouring blocks of about
        that size (a larger block alone), so memory stays bounded whatever the buffer's size.
        Mapped pages already read are handed back to the kernel as the walk moves on."""
        ref, mref, _ = self._block_map(buf, field)
        self._hop(HOPS_BUFFER, field + "/buffer")
        if ref.end - ref.start <= BLOCK_WINDOW:
            # a block's bytes, sliced from bytes or from a mapped window: both read alike
            data: Any = self._blobs.read(ref, field + "/buffer")
            _, _, table = self._block_map(buf, field,
                                          data[mref.start - ref.start : mref.end - ref.start])
            windows: list[tuple[int, int, int, Any]] | None = [(0, len(table), 0, data)]
            src = self._blobs.locate(ref, field + "/buffer")
        else:
            src = self._blobs.locate(ref, field + "/buffer")
            _, _, table = self._block_map(buf, field, src.read_range(mref.start, mref.end))
            windows = None
        limit = mref.start - ref.start
        for _, ofs, size in table:
            if ofs + size > limit:
                raise LayoutError(f"block [{ofs}, {ofs + size}) overruns the data area of "
                                  f"{limit} bytes", offset=ref.start + ofs, field=field)
        for first, stop, lo, data in windows if windows is not None else \
                _windows(src, ref.start, table):
            for logical, ofs, size in table[first:stop]:
                yield logical, data[ofs - lo : ofs - lo + size], ref.start + ofs
            release = getattr(src, "release", None)
            if release is not None:
                release(ref.start + lo, ref.start + lo + len(data))

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
        pos = record = 0
        for i, seg in enumerate(segments):
            if starts[i] != record:
                raise LayoutError(f"segment {i} record offset {starts[i]} does not follow the "
                                  "previous segment", offset=base, field=field)
            record += seg.len_record
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

    def _numeric_block(self, buf: spb.EncodedBuffer, dtype: np.dtype, field: str, i: int,
                       n: int, raw: memoryview, base: int
                       ) -> tuple[np.ndarray, np.ndarray | None]:
        """Block ``i`` of a fixed-width block stream, checksummed, split and decoded: its
        values and valid mask (None: no nulls)."""
        where = f"{field}/blocks/{i}"
        parts = split_block(raw, embedded_presence=buf.embedded_presence,
                            has_checksum=buf.block_checksums, base=base, field=where,
                            region=f"block {i} of {field}")
        valid = decode_presence(parts.presence, n, base=base + 8, field=where + "/presence")
        values = decode_numeric_values(parts.values, n, dtype, base=base + parts.values_offset,
                                       field=where + "/values")
        if len(values) != n:
            raise LayoutError(f"block holds {len(values)} values, its map says {n}",
                              offset=base, field=where)
        return values, valid

    def _numeric_pieces(self, buf: spb.EncodedBuffer, dtype: np.dtype, field: str
                        ) -> Iterator[tuple[np.ndarray, np.ndarray | None]]:
        """The values of a fixed-width block stream in pieces (one block, or a run of blocks),
        each with its valid mask (None: no nulls), decoded as reached.

        With the C accelerator, consecutive blocks are decoded together, about
        :data:`RUN_VALUES` values per call, once their checksums are checked, with their
        presence sections (nulls: all-null and byte-per-value kinds); a roaring presence, a bad
        checksum or anything the C decoder declines takes the Python path
        (:meth:`_numeric_block`), which raises the precise error.
        """
        native = _blocks_mod._native
        if native is None or TRACE.get() is not None:
            for i, (n, raw, base) in enumerate(self._blocks(buf, field)):
                yield self._numeric_block(buf, dtype, field, i, n, raw, base)
            return
        run: list[tuple[int, int, memoryview, int]] = []
        have = 0
        for i, (n, raw, base) in enumerate(self._blocks(buf, field)):
            run.append((i, n, raw, base))
            have += n
            if have >= RUN_VALUES:
                yield from self._numeric_run(native, buf, dtype, field, run)
                run, have = [], 0
        yield from self._numeric_run(native, buf, dtype, field, run)

    def _numeric_run(self, native: Any, buf: spb.EncodedBuffer, dtype: np.dtype, field: str,
                     run: list[tuple[int, int, memoryview, int]]
                     ) -> Iterator[tuple[np.ndarray, np.ndarray | None]]:
        """The pieces of a run of blocks: C for stretches it decodes, else Python."""
        if buf.block_checksums:
            sound = [len(raw) >= 4 and checksum(raw[:-4]) == _U32.unpack_from(raw, len(raw)
                                                                              - 4)[0]
                     for _, _, raw, _ in run]
        else:
            sound = [True] * len(run)
        k = 0
        while k < len(run):
            stop = k
            while stop < len(run) and sound[stop]:
                stop += 1
            if stop > k:
                got, done, flags = native.decode_blocks([r[2] for r in run[k:stop]],
                                                        [r[1] for r in run[k:stop]],
                                                        dtype.itemsize, dtype.kind,
                                                        buf.embedded_presence,
                                                        buf.block_checksums)
                count = sum(r[1] for r in run[k : k + done])
                if count:
                    yield (np.frombuffer(got, dtype, count),
                           None if flags is None else np.frombuffer(flags, bool, count))
                k += done
            if k < len(run):  # a bad checksum, roaring presence, or a block C declines
                i, n, raw, base = run[k]
                yield self._numeric_block(buf, dtype, field, i, n, raw, base)
                k += 1

    def _numeric_stream(self, buf: spb.EncodedBuffer, dtype: np.dtype, field: str
                        ) -> tuple[np.ndarray, np.ndarray | None]:
        """All values of a fixed-width block stream and its valid-mask (None: no nulls)."""
        arrays, masks = [], []
        any_null = False
        for values, valid in self._numeric_pieces(buf, dtype, field):
            arrays.append(values)
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
            from .blocks import _slice

            data, bounds = _slice(data, offs, ref.start + h.ofs_offsets, field + "/offsets")
            entries = [data[a:b] for a, b in itertools.pairwise(bounds.tolist())]
        null_id = h.null_id if h.null_entry_present else None
        if null_id is not None and null_id >= count:
            raise LayoutError(f"null id {null_id} of {count} entries", offset=ref.start + 6,
                              field=field + "/header/null_id")
        return entries, null_id

    # -- column values ------------------------------------------------------------------------

    @overload
    def read_column(self, path: str, *, arrow: Literal[False] = False) -> list[Any]: ...
    @overload
    def read_column(self, path: str, *, arrow: Literal[True]) -> Any: ...

    def read_column(self, path: str, *, arrow: bool = False) -> Any:
        """Every value of column ``path`` (``a.b``), all stripes in order; None for nulls.

        Ints, floats, bools, str (String), bytes (Binary, FixedSizeBinary, Guid),
        ``decimal.Decimal`` (a ``KustoDecimal``), datetime (DateTime, to the microsecond), dict
        (Struct, Map), list (List, FixedSizeList). With ``arrow=True``: a ``pyarrow.Array``
        (needs the ``shardkit[arrow]`` extra; types in :mod:`.arrow`, DateTime exact to 100 ns).
        """
        node = self.field(path)
        self._stripe_records()
        if arrow:
            return self._arrow_column(node)
        unbacked = self._unbacked()
        out: list[Any] = []
        for k, stripe in enumerate(self.stripes):
            out.extend(self._column_in_stripe(k, node, self._positions(k, node, stripe),
                                              unbacked))
        return out

    def _stripe_records(self) -> int:
        """Records the stripes hold; LayoutError when the directory's ``total_record_count``
        says otherwise (checked before anything is sized by either count)."""
        total = sum(s.record_count for s in self.stripes)
        if total != self.directory.total_record_count:
            raise LayoutError(f"directory says {self.directory.total_record_count} records, "
                              f"the stripes hold {total}", offset=self.directory_ref.start,
                              field="/directory/total_record_count")
        return total

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
        self._stripe_records()
        unbacked = self._unbacked()
        parts, masks, any_null = [], [], False
        for k, stripe in enumerate(self.stripes):
            arr, mask = self._primitive_array(k, node, self._positions(k, node, stripe),
                                              unbacked)
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

    def _primitive_array(self, k: int, node: AmudaiField, count: int,
                         unbacked: _Unbacked | None = None
                         ) -> tuple[np.ndarray, np.ndarray | None]:
        dtype = _dtype_of(node)
        assert dtype is not None
        field = f"/stripes/{k}/fields/{node.path}"
        sfd = self._sized_field(k, node, count, field, unbacked)
        if sfd is None:
            return np.zeros(count, dtype), np.zeros(count, bool)
        if sfd.field.HasField("constant_value"):
            value = self._constant_raw(sfd.field, node, field)
            if value is None:
                return np.zeros(count, dtype), np.zeros(count, bool)
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

    def _sized_field(self, k: int, node: AmudaiField, count: int, field: str,
                     unbacked: _Unbacked | None) -> spb.StripeFieldDescriptor | None:
        """The descriptor of ``node`` in stripe ``k`` (None: absent), once ``count`` positions
        are known to be allowed: within :data:`MAX_POSITIONS`, counted in ``unbacked`` (the
        call's running total) when nothing backs them, and the descriptor's own count."""
        if count > MAX_POSITIONS:
            raise LimitExceededError(f"{count} positions (the cap is {MAX_POSITIONS})",
                                     field=field)
        sfd = self.stripe_field(k, node.schema_id)
        if sfd is None or sfd.field.HasField("constant_value"):
            (self._unbacked() if unbacked is None else unbacked).add(count, field)
        if sfd is not None:
            self._check_count(sfd, count, field)
        return sfd

    def _check_count(self, sfd: spb.StripeFieldDescriptor, count: int, field: str) -> None:
        if sfd.field.position_count != count:
            raise LayoutError(f"field descriptor says {sfd.field.position_count} positions, "
                              f"expected {count}", field=field + "/position_count")

    def _constant(self, sfd: spb.StripeFieldDescriptor, node: AmudaiField, field: str) -> Any:
        return self._constant_of(sfd.field, node, field)

    def _constant_raw(self, msg: spb.FieldDescriptor, node: AmudaiField, field: str) -> Any:
        """A descriptor's constant as the raw column holds it: a DateTime as its ticks (the
        Rust writer stores them as ``U64Value``, as its statistics; a ``DatetimeValue`` is
        read too), anything else as :meth:`_constant_of` gives it."""
        if node.type != "DateTime":
            return self._constant_of(msg, node, field)
        value = msg.constant_value
        kind = value.WhichOneof("kind")
        if kind is None or kind == "null_value":
            return None
        if kind in ("u64_value", "i64_value"):
            ticks = int(getattr(value, kind))
        elif kind == "datetime_value":
            ticks = int(value.datetime_value.ticks)
        else:
            raise LayoutError(f"DateTime constant of kind {kind} (U64Value ticks expected)",
                              field=field + "/constant_value")
        if not 0 <= ticks < 1 << 64:
            raise LayoutError(f"DateTime constant {ticks} is not a tick count",
                              field=field + "/constant_value")
        return ticks

    def _constant_of(self, msg: spb.FieldDescriptor, node: AmudaiField, field: str) -> Any:
        if node.type == "DateTime":
            ticks = self._constant_raw(msg, node, field)
            return None if ticks is None else ticks_to_datetime(ticks, field=field)
        value = any_value_to_python(msg.constant_value, self.max_depth, field=field)
        if node.extended_type == "KustoDecimal" and isinstance(value, bytes):
            return _kusto_decimal(value, field)
        if _is_text(node) and isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        return value

    def _column_in_stripe(self, k: int, node: AmudaiField, count: int,
                          unbacked: _Unbacked | None = None, raw: bool = False) -> list[Any]:
        """Column ``node`` of stripe ``k`` as Python values; ``raw``: DateTime values stay
        ticks (ints, 100 ns exact) instead of ``datetime`` (microseconds)."""
        field = f"/stripes/{k}/fields/{node.path}"
        if unbacked is None:
            unbacked = self._unbacked()
        sfd = self._sized_field(k, node, count, field, unbacked)
        if sfd is None:
            return [None] * count
        t = node.type
        if sfd.field.HasField("constant_value"):
            if raw and t == "DateTime":
                return [self._constant_raw(sfd.field, node, field)] * count
            return [self._constant(sfd, node, field)] * count
        bufs = self._buffers(sfd, field)
        valid: np.ndarray | None = None
        if spb.PRESENCE in bufs:
            valid = self._bits(bufs[spb.PRESENCE], count, field + "/presence")
        if t == "Struct":
            kids: Any = {c.name: self._column_in_stripe(k, c, count, unbacked, raw)
                         for c in node.children}
            rows: list[Any] = [{name: col[i] for name, col in kids.items()} for i in range(count)]
            return _apply(rows, valid)
        if t in ("List", "Map"):
            rows = self._list_map_rows(k, node, count, bufs, field, unbacked, raw)
            return _apply(rows, valid)
        if t == "FixedSizeList":
            size = node.fixed_size
            if len(node.children) != 1 or size <= 0:
                raise LayoutError("FixedSizeList needs one child and a positive size",
                                  field=field)
            child = self._column_in_stripe(k, node.children[0], count * size, unbacked,
                                           raw)
            rows = [child[i * size : (i + 1) * size] for i in range(count)]
            return _apply(rows, valid)
        if t == "Boolean":
            if spb.DATA not in bufs:
                raise LayoutError("Boolean field without a DATA buffer", field=field)
            bits = self._bits(bufs[spb.DATA], count, field + "/data")
            return _apply(bits.tolist(), valid)
        if _dtype_of(node) is not None:
            values, mask = self._primitive_array(k, node, count, unbacked)
            items = values.tolist()
            if t == "DateTime" and not raw:
                items = [ticks_to_datetime(x, field=field) for x in items]
            return _apply(items, mask)
        if t in _BYTES_TYPES:
            return self._bytes_column(bufs, node, count, field)
        raise UnsupportedVersionError(f"reading {t} columns is not supported", field=field)

    def _list_map_rows(self, k: int, node: AmudaiField, count: int, bufs: dict[int, Any],
                       field: str, unbacked: _Unbacked, raw: bool) -> list[Any]:
        """The ``count`` lists (or maps, as dicts) of a List (Map) field of stripe ``k``: its
        offsets checked, its children read and cut at them."""
        t = node.type
        if spb.OFFSETS not in bufs:
            raise LayoutError(f"{t} field without an OFFSETS buffer", field=field)
        offs, _ = self._numeric_stream(bufs[spb.OFFSETS], np.dtype("<u8"),
                                       field + "/offsets")
        self._check_offsets(offs, count, bufs[spb.OFFSETS], field)
        total = int(offs[-1])
        bounds = offs.tolist()
        kids: list[Any] = [self._column_in_stripe(k, c, total, unbacked, raw)
                           for c in node.children]
        if t == "List":
            if len(kids) != 1:
                raise LayoutError(f"List field with {len(kids)} children (expected 1)",
                                  field=field)
            rows: list[Any] = [kids[0][a:b] for a, b in itertools.pairwise(bounds)]
        else:
            if len(kids) != 2:
                raise LayoutError(f"Map field with {len(kids)} children (expected 2)",
                                  field=field)
            rows = [_map_value(kids[0][a:b], kids[1][a:b])
                    for a, b in itertools.pairwise(bounds)]
        return rows

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
        if _is_text(node):
            try:
                items = [None if v is None else v.decode("utf-8") for v in items]
            except UnicodeDecodeError as exc:
                raise LayoutError(f"String value is not UTF-8: {exc}", field=field) from exc
        elif node.extended_type == "KustoDecimal":
            items = [None if v is None else _kusto_decimal(v, field) for v in items]
        return _apply(items, valid)


def _kusto_decimal(raw: bytes, field: str) -> Decimal:
    """A ``KustoDecimal`` value's 16 bytes as a Decimal; LayoutError for another size."""
    try:
        return decode_d128(raw)
    except ValueError as exc:
        raise LayoutError(f"KustoDecimal value: {exc}", field=field) from exc


_U32 = struct.Struct("<I")
RUN_VALUES = 1 << 16
"""About how many values of consecutive blocks the C accelerator decodes per call."""
#: Bytes of blocks that reading a block stream brings into memory at once (see
#: :meth:`AmudaiColumns._blocks`); smaller buffers are read in one piece.
BLOCK_WINDOW = 8 << 20


def _windows(src: Any, start: int, table: list[tuple[int, int, int]]
             ) -> Iterator[tuple[int, int, int, bytes | memoryview]]:
    """Windows of neighbouring blocks of ``table`` (offsets from ``start`` in ``src``), about
    :data:`BLOCK_WINDOW` bytes each: ``(first block, one past the last, offset, bytes)``."""
    view = getattr(src, "view", None)
    i = 0
    while i < len(table):
        lo = table[i][1]
        j = i + 1
        while j < len(table) and table[j][1] + table[j][2] - lo <= BLOCK_WINDOW \
                and table[j][1] >= table[j - 1][1]:
            j += 1
        hi = max(o + n for _, o, n in table[i:j])
        data = view(start + lo, start + hi) if view is not None else \
            src.read_range(start + lo, start + hi)
        yield i, j, lo, data
        i = j
