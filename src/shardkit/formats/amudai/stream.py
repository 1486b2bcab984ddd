"""Amudai records streamed: every column decoded block by block, in bounded memory.

:meth:`AmudaiStream.iter_rows` yields the records in order, each stripe's columns pulled as
lazy value streams: a buffer's blocks are decoded one at a time as the rows reach them, a
list's items are taken from its child's stream as its offsets say, a struct's fields zip
their children's streams. Memory is that of one block per stream (and one value dictionary
per dictionary column), whatever the number of rows.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, cast

from ...errors import LayoutError, UnsupportedVersionError
from ._deps import np, spb
from ._host import ShardHost
from .blocks import decode_binary_values, decode_numeric_values, ticks_to_datetime
from .columns import _kusto_decimal
from .model import _BYTES_TYPES, AmudaiField, _dtype_of, _is_text, _map_value, _plain

if TYPE_CHECKING:
    from .reader import AmudaiShard

__all__ = ["AmudaiStream"]


class AmudaiStream(ShardHost):
    """Streaming record iteration for :class:`~shardkit.formats.amudai.AmudaiShard`."""

    def iter_rows(self, columns: list[str] | None = None
                  ) -> Iterator[dict[str, Any]]:
        """Every record, in order, as :meth:`rows` gives them, in bounded memory.

        Args:
            columns: Top-level column names to read (None: all).
        """
        self._stripe_records()
        nodes = [self.field(c) for c in columns] if columns is not None else list(self.schema)
        for k, stripe in enumerate(self.stripes):
            n = stripe.record_count
            streams = [_Streams(cast("AmudaiShard", self), k).column(node, n) for node in nodes]
            names = [node.name for node in nodes]
            for values in _zip(f"/stripes/{k}", *streams) if streams else ((),) * n:
                yield _plain(dict(zip(names, values, strict=True)))


class _Streams:
    """Lazy value streams of one stripe's columns."""

    def __init__(self, shard: AmudaiShard, k: int) -> None:
        self.s = shard
        self.k = k

    def column(self, node: AmudaiField, count: int) -> Iterator[Any]:
        s, k = self.s, self.k
        field = f"/stripes/{k}/fields/{node.path}"
        sfd = s.stripe_field(k, node.schema_id)
        if sfd is None:
            return itertools.repeat(None, count)
        s._check_count(sfd, count, field)
        if sfd.field.HasField("constant_value"):
            return itertools.repeat(s._constant(sfd, node, field), count)
        bufs = s._buffers(sfd, field)
        values = self._values(node, count, bufs, field)
        if spb.PRESENCE in bufs:
            valid = self._bits(bufs[spb.PRESENCE], count, field + "/presence")
            return (v if ok else None for v, ok in _zip(field, values, valid))
        return values

    def _values(self, node: AmudaiField, count: int, bufs: dict[int, Any], field: str
                ) -> Iterator[Any]:
        t = node.type
        if t == "Struct":
            names = [c.name for c in node.children]
            kids = [self.column(c, count) for c in node.children]
            return (dict(zip(names, vs, strict=True))
                    for vs in (_zip(field, *kids) if kids else ((),) * count))
        if t in ("List", "Map"):
            if spb.OFFSETS not in bufs:
                raise LayoutError(f"{t} field without an OFFSETS buffer", field=field)
            return self._lists(node, count, bufs[spb.OFFSETS], field)
        if t == "FixedSizeList":
            size = node.fixed_size
            if len(node.children) != 1 or size <= 0:
                raise LayoutError("FixedSizeList needs one child and a positive size",
                                  field=field)
            child = self.column(node.children[0], count * size)
            return (list(itertools.islice(child, size)) for _ in range(count))
        if spb.DATA not in bufs:
            raise LayoutError(f"{t} field without a DATA buffer", field=field)
        if t == "Boolean":
            return self._bits(bufs[spb.DATA], count, field + "/data")
        dtype = _dtype_of(node)
        if dtype is not None:
            return self._numeric(bufs[spb.DATA], dtype, count, field + "/data",
                                 t == "DateTime")
        if t in _BYTES_TYPES:
            return self._bytes(node, count, bufs, field)
        raise UnsupportedVersionError(f"reading {t} columns is not supported", field=field)

    def _blocks(self, buf: spb.EncodedBuffer, dtype: np.dtype, field: str
                ) -> Iterator[tuple[list[Any], np.ndarray | None]]:
        for n, parts, valid, base, where in self.s._block_parts(buf, field):
            yield (decode_numeric_values(parts.values, n, dtype, base=base + parts.values_offset,
                                         field=where + "/values").tolist(), valid)

    def _numeric(self, buf: spb.EncodedBuffer, dtype: np.dtype, count: int, field: str,
                 ticks: bool) -> Iterator[Any]:
        seen = 0
        for values, valid in self._blocks(buf, dtype, field):
            seen += len(values)
            for i, v in enumerate(values):
                if valid is not None and not valid[i]:
                    yield None
                else:
                    yield ticks_to_datetime(v, field=field) if ticks else v
        _count(seen, count, buf, field)

    def _bits(self, buf: spb.EncodedBuffer, count: int, field: str) -> Iterator[bool]:
        left = count
        for values, _ in self._blocks(buf, np.dtype(np.uint8), field):
            bits = np.unpackbits(np.asarray(values, np.uint8), bitorder="little")[:left]
            left -= len(bits)
            yield from bits.astype(bool).tolist()
        if left > 0:
            raise LayoutError(f"bit buffer holds {count - left} bits for {count} positions",
                              offset=buf.buffer.range.start, field=field)

    def _lists(self, node: AmudaiField, count: int, buf: spb.EncodedBuffer, field: str
               ) -> Iterator[Any]:
        where = field + "/offsets"
        want = 1 if node.type == "List" else 2
        if len(node.children) != want:
            raise LayoutError(f"{node.type} field with {len(node.children)} children "
                              f"(expected {want})", field=field)
        offsets = (v for values, _ in self._blocks(buf, np.dtype("<u8"), where)
                   for v in values)
        prev = next(offsets, None)
        if prev != 0:
            raise LayoutError("list offsets do not increase from 0",
                              offset=buf.buffer.range.start, field=where)
        # each child streams its own positions (its stripe descriptor's count, which the
        # last offset must reach)
        kids = [self.column(c, self._positions(c)) for c in node.children]
        n = 0
        for end in offsets:
            if end < prev:
                raise LayoutError("list offsets do not increase from 0",
                                  offset=buf.buffer.range.start, field=where)
            items = [list(itertools.islice(kid, end - prev)) for kid in kids]
            if any(len(x) != end - prev for x in items):
                raise LayoutError(f"list offsets point past the {node.children[0].path} "
                                  "positions", field=where)
            yield items[0] if node.type == "List" else _map_value(items[0], items[1])
            prev = end
            n += 1
        _count(n, count, buf, where)
        if any(next(kid, _END) is not _END for kid in kids):
            raise LayoutError(f"the last list offset {prev} leaves child positions unread",
                              field=where)

    def _positions(self, node: AmudaiField) -> int:
        sfd = self.s.stripe_field(self.k, node.schema_id)
        return 0 if sfd is None else int(sfd.field.position_count)

    def _bytes(self, node: AmudaiField, count: int, bufs: dict[int, Any], field: str
               ) -> Iterator[Any]:
        s = self.s
        text = _is_text(node)
        decimal = node.extended_type == "KustoDecimal"

        def out(v: Any) -> Any:
            if text:
                try:
                    return bytes(v).decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise LayoutError(f"String value is not UTF-8: {exc}", field=field) from exc
            return _kusto_decimal(bytes(v), field) if decimal else bytes(v)

        seen = 0
        if spb.VALUE_DICTIONARY in bufs:
            entries, null_id = s.value_dictionary(bufs[spb.VALUE_DICTIONARY],
                                                  field + "/dictionary")
            for ids, valid in self._blocks(bufs[spb.DATA], np.dtype("<u4"), field + "/data"):
                seen += len(ids)
                for j, i in enumerate(ids):
                    if i >= len(entries):
                        raise LayoutError(f"dictionary id {i} of {len(entries)} entries",
                                          field=field + "/data")
                    null = i == null_id or (valid is not None and not valid[j])
                    yield None if null else out(entries[i])
        else:
            fixed = node.fixed_size if node.type in ("FixedSizeBinary", "Guid") else 0
            if node.type == "Guid":
                fixed = fixed or 16
            for n, parts, valid, base, where in s._block_parts(bufs[spb.DATA],
                                                               field + "/data"):
                items = decode_binary_values(parts.values, n, fixed,
                                             base=base + parts.values_offset,
                                             field=where + "/values")
                seen += len(items)
                for j, v in enumerate(items):
                    yield None if valid is not None and not valid[j] else out(v)
        _count(seen, count, bufs[spb.DATA], field + "/data")


_END = object()


def _zip(field: str, *streams: Iterator[Any]) -> Iterator[tuple[Any, ...]]:
    """The streams side by side; LayoutError when one ends before the others."""
    try:
        yield from zip(*streams, strict=True)
    except ValueError as exc:
        if "zip()" not in str(exc):
            raise
        raise LayoutError(f"columns of different lengths: {exc}", field=field) from exc


def _count(seen: int, count: int, buf: spb.EncodedBuffer, field: str) -> None:
    if seen != count:
        raise LayoutError(f"buffer holds {seen} values, the stripe {count}",
                          offset=buf.buffer.range.start, field=field)
