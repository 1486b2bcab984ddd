"""Amudai column batches: a full scan as arrays, block by block, in bounded memory.

:meth:`AmudaiBatches.iter_batches` yields the records in batches of up to ``batch_size``
rows, one entry per column: fixed-width numeric columns (integers, floats, DateTime as ticks)
as numpy arrays, as :meth:`~.columns.AmudaiColumns.read_array` gives them (masked where there
are nulls), every other column as a list of the values :meth:`~.stream.AmudaiStream.iter_rows`
gives. Each column of each stripe is decoded block by block as the batches reach its blocks
(the block windows of :meth:`~.columns.AmudaiColumns._blocks`, whose mapped pages are handed
back as the walk moves on), so memory is that of a batch and a window per column, whatever
the shard's size; a numeric column never becomes Python objects.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar, cast

from ...errors import LayoutError, LimitExceededError
from ._deps import np, spb
from ._host import ShardHost
from .blocks import decode_binary_raw
from .model import _BYTES_TYPES, AmudaiField, _apply, _dtype_of, _is_text
from .stream import _Streams

if TYPE_CHECKING:
    from .reader import AmudaiShard

__all__ = ["MAX_BATCH", "AmudaiBatches"]

#: Largest ``batch_size`` :meth:`AmudaiBatches.iter_batches` accepts.
MAX_BATCH = 1 << 24


class AmudaiBatches(ShardHost):
    """Column-batch scans for :class:`~shardkit.formats.amudai.AmudaiShard`."""

    def iter_batches(self, columns: list[str] | None = None,
                     *, batch_size: int = 1 << 16, arrow: bool = False) -> Iterator[Any]:
        """The records in order, as batches of columns: ``{name: values}`` per batch.

        A numeric column's values are a numpy array (a ``numpy.ma.MaskedArray`` when the
        batch holds nulls; DateTime as ticks of 100 ns, ``<u8``); any other column's, a list
        (None for nulls) as :meth:`iter_rows` gives them. A batch holds ``batch_size`` rows,
        fewer at the end of a stripe: batches never span two stripes. Memory is bounded by
        the batch, whatever the shard's size.

        With ``arrow=True`` each batch is a ``pyarrow.RecordBatch`` instead (the
        ``shardkit[arrow]`` extra), typed as :meth:`to_arrow` types the columns, built from
        the decoded buffers without Python values (text and bytes too), in the same bounded
        memory. A DateTime column is ``timestamp("ns")`` when the shard's range statistics
        put every value in the nanosecond range, else ``timestamp("us")`` (a value outside
        the range the statistics state is a LayoutError).

        Args:
            columns: Top-level column names to read (None: all).
            batch_size: Rows per batch (1 to :data:`MAX_BATCH`).
            arrow: Yield ``pyarrow.RecordBatch`` objects.

        Raises:
            ValueError: ``batch_size`` out of range, or a nested field (``a.b``) in
                ``columns``.
            LayoutError: A column holds more or fewer values than its stripe's records.

        Example::

            total = 0
            for batch in shard.iter_batches(["a"], batch_size=1 << 20):
                total += int(batch["a"].sum())
        """
        if not 1 <= batch_size <= MAX_BATCH:
            raise ValueError(f"batch_size {batch_size}: 1 to {MAX_BATCH}")
        self._stripe_records()
        if columns is not None:
            nested = [c for c in columns if "." in c]
            if nested:
                raise ValueError(f"iter_batches reads top-level columns; {nested[0]!r} is a "
                                 "nested field (read its top-level column)")
        nodes = [self.field(c) for c in columns] if columns is not None else list(self.schema)
        if arrow:
            yield from self._arrow_batches(nodes, batch_size)
            return
        for k, stripe in enumerate(self.stripes):
            n = stripe.record_count
            sizes = [batch_size] * (n // batch_size) + ([n % batch_size] if n % batch_size
                                                        else [])
            streams = [self._column_batches(k, node, n, sizes) for node in nodes]
            for size in sizes:
                batch = {node.name: next(col) for node, col in zip(nodes, streams,
                                                                    strict=True)}
                for name, values in batch.items():
                    if len(values) != size:
                        raise LayoutError(f"{len(values)} values where the stripe has "
                                          f"{size} more records", field=f"/stripes/{k}/fields/"
                                          f"{name}")
                yield batch
            for col in streams:  # each checks, once drained, that its values were all used
                next(col, None)

    def _arrow_batches(self, nodes: list[AmudaiField],
                       batch_size: int) -> Iterator[Any]:
        from .arrow import arrow_field, pyarrow

        pa = pyarrow()
        units = {n.schema_id: self._batch_unit(n) for top in nodes for n in _walk(top)
                 if n.type == "DateTime" or (n.type == "Int64"
                                             and n.extended_type == "KustoTimeSpan")}
        schema = pa.schema([arrow_field(n, units=units) for n in nodes])
        for k, stripe in enumerate(self.stripes):
            n = stripe.record_count
            sizes = [batch_size] * (n // batch_size) + ([n % batch_size] if n % batch_size
                                                        else [])
            streams = [self._arrow_column_batches(k, node, n, sizes, units, f.type)
                       for node, f in zip(nodes, schema, strict=True)]
            for size in sizes:
                arrays = [next(col) for col in streams]
                for node, a in zip(nodes, arrays, strict=True):
                    if len(a) != size:
                        raise LayoutError(f"{len(a)} values where the stripe has {size} more "
                                          "records", field=f"/stripes/{k}/fields/{node.name}")
                yield pa.RecordBatch.from_arrays(arrays, schema=schema)
            for col in streams:
                next(col, None)

    def _batch_unit(self, node: AmudaiField) -> str:
        """A DateTime (or KustoTimeSpan) column's unit in Arrow batches, from the shard's
        range statistics (``"us"`` without them)."""
        from .arrow import NS_TICKS

        msg = self.field_descriptor(node.schema_id)
        if msg is None or not msg.HasField("range_stats"):
            return "us"
        lo, hi = msg.range_stats.min_value, msg.range_stats.max_value
        ends = []
        for v in (lo, hi):
            kind = v.WhichOneof("kind")
            if kind in ("u64_value", "i64_value"):
                ends.append(int(getattr(v, kind)))
            elif kind == "datetime_value":
                ends.append(int(v.datetime_value.ticks))
            else:
                return "us"
        if node.type != "DateTime":  # a KustoTimeSpan: ticks × 100 in an int64
            limit = (2**63 - 1) // 100
            return "ns" if -limit <= ends[0] and ends[1] <= limit else "us"
        return "ns" if NS_TICKS[0] <= ends[0] and ends[1] <= NS_TICKS[1] else "us"

    def _arrow_column_batches(self, k: int,
                              node: AmudaiField, count: int, sizes: list[int],
                              units: dict[int, str], typ: Any) -> Iterator[Any]:
        """Column ``node`` of stripe ``k`` cut in ``sizes``, as Arrow arrays."""
        from .arrow import pyarrow

        pa = pyarrow()
        field = f"/stripes/{k}/fields/{node.path}"
        dtype = _dtype_of(node)
        sfd = self.stripe_field(k, node.schema_id)
        plain = sfd is not None and not sfd.field.HasField("constant_value")
        if dtype is not None and not (node.type == "Int64"
                                      and node.extended_type == "KustoTimeSpan"):
            yield from self._arrow_fixed_batches(node, count, sizes, units, typ, sfd, dtype,
                                                 field)
            return
        if node.type == "Boolean" and plain and typ == pa.bool_():
            assert sfd is not None
            yield from self._arrow_bool_batches(sfd, count, sizes, field)
            return
        if (dtype is None and plain and node.type in _BYTES_TYPES
                and node.extended_type != "KustoDecimal"):
            assert sfd is not None
            self._check_count(sfd, count, field)
            bufs = self._buffers(sfd, field)
            if spb.DATA not in bufs:
                raise LayoutError(f"{node.type} field without a DATA buffer", field=field)
            if spb.VALUE_DICTIONARY in bufs:
                yield from self._arrow_dictionary_batches(node, bufs, count, sizes, typ, field)
                return
            yield from self._arrow_binary_batches(node, bufs, count, sizes, typ, field)
            return
        yield from self._arrow_value_batches(k, node, count, sizes, units, typ)

    def _arrow_fixed_batches(self, node: AmudaiField, count: int, sizes: list[int],
                             units: dict[int, str], typ: Any,
                             sfd: spb.StripeFieldDescriptor | None, dtype: np.dtype,
                             field: str) -> Iterator[Any]:
        """A fixed-width column (numbers, DateTime ticks) as Arrow arrays: its DATA buffer's
        pieces, a stripe constant, or nulls where the stripe lacks it."""
        data: np.ndarray | bytes  # numbers, or the bytes of binary values
        from .arrays import _fixed_array
        from .arrow import NS_TICKS, UNIX_EPOCH_TICKS, pyarrow

        pa = pyarrow()
        plain = sfd is not None and not sfd.field.HasField("constant_value")
        if sfd is not None:
            self._check_count(sfd, count, field)
        pieces: Iterator[np.ndarray]
        if plain:
            assert sfd is not None
            bufs = self._buffers(sfd, field)
            if spb.DATA not in bufs:
                raise LayoutError(f"{node.type} field without a DATA buffer", field=field)
            pieces = _cut(self._numeric_pieces(bufs[spb.DATA], dtype, field + "/data"),
                          sizes, count, bufs[spb.DATA].buffer.range.start, field + "/data")
        else:  # a stripe constant, or a column the stripe lacks (all null)
            value = None if sfd is None else self._constant_raw(sfd.field, node, field)
            if value is None:
                for size in sizes:
                    yield pa.nulls(size, typ)
                return
            pieces = (np.full(size, value, dtype) for size in sizes)
        ns = units.get(node.schema_id) == "ns"
        for values in pieces:
            # a plain ndarray has no nulls (numpy.ma, slow to import, is left alone)
            plain_values = type(values) is np.ndarray
            mask = None if plain_values else np.ma.getmaskarray(values)
            data = values if plain_values else np.ma.getdata(values)
            if node.type == "DateTime":
                present = data if mask is None else data[~mask]
                if ns and present.size and (int(present.min()) < NS_TICKS[0]
                                            or int(present.max()) > NS_TICKS[1]):
                    raise LayoutError("a DateTime value outside the range statistics",
                                      field=field)
                if present.size and int(present.max()) >= 1 << 63:
                    raise LayoutError(f"DateTime ticks {int(present.max())} past int64",
                                      field=field)
                rel = data.astype(np.int64) - np.int64(UNIX_EPOCH_TICKS)
                data = rel * 100 if ns else rel // 10
            yield _fixed_array(pa, data, typ, mask)

    def _arrow_bool_batches(self, sfd: spb.StripeFieldDescriptor, count: int,
                            sizes: list[int], field: str) -> Iterator[Any]:
        """A Boolean column as Arrow arrays, from its DATA and PRESENCE bits."""
        from .arrays import _bool_array
        from .arrow import pyarrow

        pa = pyarrow()
        self._check_count(sfd, count, field)
        bufs = self._buffers(sfd, field)
        if spb.DATA not in bufs:
            raise LayoutError("Boolean field without a DATA buffer", field=field)
        cuts = [_cut(self._bit_pieces(bufs[kind], count, where), sizes, count,
                     bufs[kind].buffer.range.start, where)
                for kind, where in ((spb.DATA, field + "/data"),
                                    (spb.PRESENCE, field + "/presence")) if kind in bufs]
        for _ in sizes:
            bits = next(cuts[0])
            valid = next(cuts[1]) if len(cuts) > 1 else None
            yield _bool_array(pa, bits, None if valid is None else ~valid)
        for cut in cuts:
            next(cut, None)

    def _arrow_dictionary_batches(self, node: AmudaiField, bufs: dict[int, Any], count: int,
                                  sizes: list[int], typ: Any, field: str) -> Iterator[Any]:
        """A binary or text column with a value dictionary as Arrow arrays: the ids of each
        piece checked and taken from the dictionary."""
        raw: np.ndarray | list[Any]  # dictionary ids, or values for pyarrow
        from .arrays import _as_type, _binary_array, _dictionary_take
        from .arrow import pyarrow

        pa = pyarrow()
        entries, null_id = self.value_dictionary(bufs[spb.VALUE_DICTIONARY],
                                                 field + "/dictionary")
        fixed = typ.byte_width if pa.types.is_fixed_size_binary(typ) else 0
        table = _as_type(_binary_array(entries, fixed), typ, _is_text(node), field)
        for ids in _cut(self._numeric_pieces(bufs[spb.DATA], np.dtype("<u4"),
                                             field + "/data"),
                        sizes, count, bufs[spb.DATA].buffer.range.start,
                        field + "/data"):
            plain_ids = type(ids) is np.ndarray
            raw = ids if plain_ids else np.ma.getdata(ids)
            if raw.size and int(raw.max()) >= len(entries):
                raise LayoutError(f"dictionary id {int(raw.max())} of {len(entries)} "
                                  "entries", field=field + "/data")
            null = np.zeros(len(raw), bool) if plain_ids else np.ma.getmaskarray(ids)
            if null_id is not None:
                null = null | (raw == null_id)
            arr = _dictionary_take(entries, raw, null if null.any() else None, fixed,
                                   table)
            yield arr if arr.type == table.type else arr.view(table.type)

    def _arrow_binary_batches(self, node: AmudaiField, bufs: dict[int, Any], count: int,
                              sizes: list[int], typ: Any, field: str) -> Iterator[Any]:
        """A binary or text column without a dictionary as Arrow arrays, built on the
        decoded bytes and offsets."""
        from .arrays import _as_type
        from .arrow import pyarrow

        pa = pyarrow()
        for data, offs, ok in _cut_raw(self._raw_pieces(node, bufs, field), sizes,
                                       count, bufs[spb.DATA].buffer.range.start,
                                       field + "/data"):
            nulls = None if ok is None else pa.py_buffer(np.packbits(
                ok, bitorder="little"))
            n = len(offs) - 1
            fixed = typ.byte_width if pa.types.is_fixed_size_binary(typ) else 0
            if fixed and not pa.types.is_decimal(typ):
                arr = pa.Array.from_buffers(pa.binary(fixed), n,
                                            [nulls, pa.py_buffer(data)])
            else:
                arr = pa.Array.from_buffers(pa.large_binary(), n,
                                            [nulls, pa.py_buffer(offs),
                                             pa.py_buffer(data)])
            yield _as_type(arr, typ, _is_text(node), field)

    def _arrow_value_batches(self, k: int, node: AmudaiField, count: int, sizes: list[int],
                             units: dict[int, str], typ: Any) -> Iterator[Any]:
        """Any other column (nested, decimal, time span, ...) as Arrow arrays built from its
        Python values."""
        values: np.ndarray | list[Any]  # arrays (fixed-width path) or Python values
        raw: np.ndarray | list[Any]  # dictionary ids, or values for pyarrow
        from .arrow import pyarrow

        pa = pyarrow()
        for values in self._column_batches(k, node, count, sizes):
            if isinstance(values, np.ndarray):
                mask = np.ma.getmaskarray(values) if isinstance(values, np.ma.MaskedArray) \
                    else None
                values = [None if m else v for v, m in zip(
                    np.ma.getdata(values).tolist(),
                    mask.tolist() if mask is not None else [False] * len(values),
                    strict=True)]
            from .arrow import to_arrow_values

            mine: dict[int, str] = dict(units)
            raw = to_arrow_values(node, values, mine)
            yield pa.array(raw, type=typ)

    def _bit_pieces(self, buf: spb.EncodedBuffer,
                    count: int, field: str) -> Iterator[tuple[np.ndarray, None]]:
        """The first ``count`` bits of a bit buffer (Boolean values or a presence buffer) as
        bool arrays, a run of blocks at a time (bits past ``count`` are padding; fewer is a
        LayoutError, as :meth:`~.columns.AmudaiColumns._bits` says)."""
        left, total = count, 0
        for raw, _ in self._numeric_pieces(buf, np.dtype(np.uint8), field):
            bits = np.unpackbits(raw, bitorder="little")
            total += bits.size
            if left > 0:
                take = bits[:left].astype(bool)
                left -= take.size
                yield take, None
        if total < count:
            raise LayoutError(f"bit buffer holds {total} bits for {count} positions",
                              offset=buf.buffer.range.start, field=field)

    def _raw_pieces(self, node: AmudaiField,
                    bufs: dict[int, Any], field: str
                    ) -> Iterator[tuple[bytes, np.ndarray, np.ndarray | None]]:
        """Each block of a binary column: its bytes, offsets and valid mask."""
        fixed = node.fixed_size if node.type in ("FixedSizeBinary", "Guid") else 0
        if node.type == "Guid":
            fixed = fixed or 16
        for n, parts, valid, base, at in self._block_parts(bufs[spb.DATA], field + "/data"):
            data, offs = decode_binary_raw(parts.values, n, fixed,
                                           base=base + parts.values_offset,
                                           field=at + "/values")
            yield data, offs, valid

    def _column_batches(self, k: int, node: AmudaiField,
                        count: int, sizes: list[int]) -> Iterator[Any]:
        """Column ``node`` of stripe ``k`` (``count`` positions) cut in ``sizes``."""
        dtype = _dtype_of(node)
        field = f"/stripes/{k}/fields/{node.path}"
        sfd = self.stripe_field(k, node.schema_id)
        if (dtype is None and node.type in _BYTES_TYPES and node.extended_type != "KustoDecimal"
                and sfd is not None and not sfd.field.HasField("constant_value")):
            self._check_count(sfd, count, field)
            bufs = self._buffers(sfd, field)
            if spb.DATA not in bufs:
                raise LayoutError(f"{node.type} field without a DATA buffer", field=field)
            yield from _cut_lists(self._bytes_pieces(node, bufs, field), sizes, count,
                                  bufs[spb.DATA].buffer.range.start, field + "/data")
            return
        if dtype is None:
            values = _Streams(cast("AmudaiShard", self), k).column(node, count)
            for size in sizes:
                yield list(itertools.islice(values, size))
            if next(values, _END) is not _END:
                raise LayoutError(f"more values than the stripe's {count} records",
                                  field=field)
            return
        if sfd is not None:
            self._check_count(sfd, count, field)
        if sfd is None or sfd.field.HasField("constant_value"):
            value = None if sfd is None else self._constant_raw(sfd.field, node, field)
            for size in sizes:
                if value is None:
                    yield np.ma.MaskedArray(np.zeros(size, dtype), np.ones(size, bool))
                else:
                    yield np.full(size, value, dtype)
            return
        bufs = self._buffers(sfd, field)
        if spb.DATA not in bufs:
            raise LayoutError(f"{node.type} field without a DATA buffer", field=field)
        yield from _cut(self._numeric_pieces(bufs[spb.DATA], dtype, field + "/data"), sizes,
                        count, bufs[spb.DATA].buffer.range.start, field + "/data")

    def _bytes_pieces(self, node: AmudaiField,
                      bufs: dict[int, Any], field: str) -> Iterator[list[Any]]:
        """Each block's values of a String, Binary, FixedSizeBinary or Guid column, as the
        value readers give them (str for text, bytes otherwise, None for nulls), decoded a
        block at a time (one UTF-8 decode per block when its bytes are ASCII)."""
        text = _is_text(node)
        where = field + "/data"
        if spb.VALUE_DICTIONARY in bufs:
            entries, null_id = self.value_dictionary(bufs[spb.VALUE_DICTIONARY],
                                                     field + "/dictionary")
            table: list[Any] = _texts(b"".join(entries), np.cumsum(
                [0, *map(len, entries)]), field) if text else list(entries)
            if null_id is not None:
                table[null_id] = None
            for ids, valid in self._numeric_pieces(bufs[spb.DATA], np.dtype("<u4"), where):
                if ids.size and int(ids.max()) >= len(table):
                    raise LayoutError(f"dictionary id {int(ids.max())} of {len(table)} entries",
                                      field=where)
                items = [table[i] for i in ids.tolist()]
                yield _apply(items, valid)
            return
        fixed = node.fixed_size if node.type in ("FixedSizeBinary", "Guid") else 0
        if node.type == "Guid":
            fixed = fixed or 16
        for n, parts, valid, base, at in self._block_parts(bufs[spb.DATA], where):
            data, offs = decode_binary_raw(parts.values, n, fixed,
                                           base=base + parts.values_offset,
                                           field=at + "/values")
            if text:
                items = _texts(data, offs, field)
            else:
                bounds = offs.tolist()
                items = [data[a:b] for a, b in itertools.pairwise(bounds)]
            yield _apply(items, valid)


_END = object()


def _walk(node: AmudaiField) -> Iterator[AmudaiField]:
    yield node
    for c in node.children:
        yield from _walk(c)


_P = TypeVar("_P")
_T = TypeVar("_T")


def _rebatch(pieces: Iterator[_P], sizes: list[int], count: int, offset: int, field: str,
             length: Callable[[_P], int], join: Callable[[list[_P], int], tuple[_T, _P | None]]
             ) -> Iterator[_T]:
    """The values of blocks of any size (``pieces``, ``length`` values each) in batches of
    ``sizes`` values: ``join(held, size)`` makes a batch of the first ``size`` values the held
    pieces give, and the piece of what is left over (None when nothing is); LayoutError unless
    the blocks hold exactly ``count`` values. Its calls are per block and per batch."""
    held: list[_P] = []
    have = seen = 0
    for size in sizes:
        while have < size:
            piece = next(pieces, None)
            if piece is None:
                raise LayoutError(f"buffer holds {seen} values, the stripe {count}",
                                  offset=offset, field=field)
            n = length(piece)
            held.append(piece)
            have += n
            seen += n
        out, rest = join(held, size)
        held = [] if rest is None else [rest]
        have -= size
        yield out
    more = sum(length(p) for p in pieces)
    if have or more:
        raise LayoutError(f"buffer holds {seen + more} values, the stripe {count}",
                          offset=offset, field=field)


_Raw = tuple[bytes, "np.ndarray", "np.ndarray | None"]


def _cut_raw(pieces: Iterator[_Raw], sizes: list[int], count: int, offset: int, field: str
             ) -> Iterator[_Raw]:
    """Binary values of blocks of any size in runs of ``sizes``: ``(bytes, int64 offsets from
    0, valid mask or None)``; LayoutError unless the blocks hold exactly ``count`` values."""
    return _rebatch(pieces, sizes, count, offset, field, _raw_len, _join_raw)


def _raw_len(piece: _Raw) -> int:
    return len(piece[1]) - 1


def _join_raw(held: list[_Raw], size: int) -> tuple[_Raw, _Raw | None]:
    parts, offs, masks, shift = [], [], [], 0
    for data, o, m in held:
        parts.append(data)
        offs.append(o[:-1] + shift)
        masks.append(m)
        shift += int(o[-1])
    data = b"".join(parts)
    allo = np.concatenate([*offs, np.array([shift], np.int64)])
    ok = None
    if any(m is not None for m in masks):
        ok = np.concatenate([np.ones(len(o), bool) if m is None else m
                             for o, m in zip(offs, masks, strict=True)])
    if len(allo) - 1 == size:
        return (data, allo, ok), None
    cut = int(allo[size])  # the rest of the last block stays for the next batch
    rest = (data[cut:], allo[size:] - cut, None if ok is None else ok[size:])
    return (data[:cut], allo[:size + 1], None if ok is None else ok[:size]), rest


def _texts(data: bytes, offsets: Any, field: str) -> list[str]:
    """The UTF-8 values ``data[offsets[i]:offsets[i + 1]]`` as str (LayoutError otherwise)."""
    bounds = [int(x) for x in offsets] if not hasattr(offsets, "tolist") else offsets.tolist()
    try:
        if data.isascii():  # character offsets are byte offsets
            whole = data.decode("ascii")
            return [whole[a:b] for a, b in itertools.pairwise(bounds)]
        return [data[a:b].decode("utf-8") for a, b in itertools.pairwise(bounds)]
    except UnicodeDecodeError as exc:
        raise LayoutError(f"String value is not UTF-8: {exc}", field=field) from exc


def _cut_lists(pieces: Iterator[list[Any]], sizes: list[int], count: int, offset: int,
               field: str) -> Iterator[list[Any]]:
    """Lists of ``sizes`` values from blocks of any size; LayoutError unless the blocks hold
    exactly ``count`` values."""
    return _rebatch(pieces, sizes, count, offset, field, len, _join_lists)


def _join_lists(held: list[list[Any]], size: int) -> tuple[list[Any], list[Any] | None]:
    flat = held[0] if len(held) == 1 else list(itertools.chain.from_iterable(held))
    rest = flat[size:]
    return (flat[:size], rest) if rest else (flat, None)


_Numbers = tuple["np.ndarray", "np.ndarray | None"]


def _cut(pieces: Iterator[_Numbers], sizes: list[int], count: int, offset: int, field: str
         ) -> Iterator[np.ndarray]:
    """Arrays of ``sizes`` values from blocks of any size (masked where a batch has nulls);
    LayoutError unless the blocks hold exactly ``count`` values."""
    def length(piece: _Numbers) -> int:
        n = len(piece[0])
        if n > MAX_BATCH:
            raise LimitExceededError(f"a block of {n} values (the cap is {MAX_BATCH})",
                                     offset=offset, field=field)
        return n

    return _rebatch(pieces, sizes, count, offset, field, length, _join_numbers)


def _join_numbers(held: list[_Numbers], size: int) -> tuple[np.ndarray, _Numbers | None]:
    values = np.concatenate([v for v, _ in held])  # a copy: no view into the file
    mask = None
    if any(m is not None for _, m in held):
        mask = np.concatenate([np.ones(len(v), bool) if m is None else m for v, m in held])
    rest = None
    if len(values) > size:
        rest = (values[size:], None if mask is None else mask[size:])
    out, out_mask = values[:size], None if mask is None else mask[:size]
    if out_mask is None or out_mask.all():
        return out, rest
    return np.ma.MaskedArray(out, ~out_mask), rest
