"""Amudai rows: records by position, reading only the blocks that hold them.

A shard is a table: :meth:`AmudaiRows.rows` gives records ``[start, stop)`` as dicts of
column values, :meth:`AmudaiRows.row` one record. For each top-level column of each stripe
involved, the block map (a few bytes at the end of the buffer) says which blocks hold the
positions asked for, and only those blocks are read and decoded. On a remote file the block
maps of all the columns are fetched as one batch, then all the blocks as another (one request
per run of neighbouring blocks). Constant and absent columns cost nothing; struct
columns recurse into their children, which share their positions. Lists and maps read the
offsets of their rows, then only the items those offsets bound; Boolean values and separate
presence buffers read the blocks holding their bits. Memory is that of the rows asked for,
whatever the stripe's size.
"""

from __future__ import annotations

import itertools
from typing import Any, cast

from ...errors import LayoutError, LimitExceededError, ShardkitError
from ...sources import read_ranges
from ._deps import np, spb
from ._host import ShardHost
from .blocks import decode_binary_values, decode_numeric_values, decode_presence, split_block
from .columns import _kusto_decimal, _Unbacked
from .model import (
    _BYTES_TYPES,
    HOPS_BUFFER,
    MAX_POSITIONS,
    AmudaiField,
    DataRefInfo,
    _apply,
    _dtype_of,
    _is_text,
    _map_value,
    _plain,
)

__all__ = ["MAX_ROWS", "AmudaiRows"]

_NESTED = ("Struct", "List", "Map", "FixedSizeList")

#: Most rows one :meth:`AmudaiRows.rows` call materialises.
MAX_ROWS = 1 << 24


class AmudaiRows(ShardHost):
    """Row access for :class:`~shardkit.formats.amudai.AmudaiShard` (see the module doc)."""

    def row(self, index: int) -> dict[str, Any]:
        """Record ``index`` (negative counts from the end) as ``{column: value}``."""
        n = self._stripe_records()
        i = index + n if index < 0 else index
        if not 0 <= i < n:
            raise IndexError(f"row {index} of {n}")
        return self.rows(i, i + 1)[0]

    def rows(self, start: int = 0, stop: int | None = None,
             columns: list[str] | None = None) -> list[dict[str, Any]]:
        """Records ``[start, stop)`` as dicts of top-level column values (JSON-ready).

        Args:
            start: First record (clamped to the shard, as a slice is).
            stop: One past the last record (None: the end).
            columns: Top-level column names to read (None: all).

        The records are the stripes'; LayoutError when the directory's
        ``total_record_count`` says otherwise.
        """
        n = self._stripe_records()
        start, stop, _ = slice(start, stop).indices(n)
        if stop - start > MAX_ROWS:
            raise LimitExceededError(f"{stop - start} rows asked at once (the cap is "
                                     f"{MAX_ROWS})", field="/rows")
        nodes = [self.field(c) for c in columns] if columns is not None else list(self.schema)
        out: list[dict[str, Any]] = [{} for _ in range(max(0, stop - start))]
        unbacked = self._unbacked()
        pos = 0
        for k, stripe in enumerate(self.stripes):
            lo, hi = max(start, pos), min(stop, pos + stripe.record_count)
            if lo < hi:
                self._prefetch(k, nodes, lo - pos, hi - pos)
                for node in nodes:
                    values = self._rows_in_stripe(k, node, stripe.record_count, lo - pos,
                                                  hi - pos, unbacked)
                    for j, v in enumerate(values):
                        out[lo - start + j][node.name] = v
            pos += stripe.record_count
        return cast("list[dict[str, Any]]", _plain(out))

    def _rows_in_stripe(self, k: int, node: AmudaiField,
                        count: int, lo: int, hi: int, unbacked: _Unbacked) -> list[Any]:
        """Values ``[lo, hi)`` of ``node`` (``count`` positions) in stripe ``k``; positions
        filled from nothing are counted in ``unbacked``, the ``rows`` call's running total."""
        field = f"/stripes/{k}/fields/{node.path}"
        sfd = self.stripe_field(k, node.schema_id)
        if sfd is None or sfd.field.HasField("constant_value"):
            unbacked.add(hi - lo, field)
        if sfd is None:
            return [None] * (hi - lo)
        self._check_count(sfd, count, field)
        if sfd.field.HasField("constant_value"):
            return [self._constant(sfd, node, field)] * (hi - lo)
        bufs = self._buffers(sfd, field)
        t = node.type
        valid: np.ndarray | None = None
        if spb.PRESENCE in bufs and t in (*_NESTED, "Boolean"):
            valid = self._bit_window(bufs[spb.PRESENCE], field + "/presence", lo, hi)
        if t == "Struct":
            kids = {c.name: self._rows_in_stripe(k, c, count, lo, hi, unbacked)
                    for c in node.children}
            return _apply([{name: col[i] for name, col in kids.items()}
                           for i in range(hi - lo)], valid)
        if t in ("List", "Map"):
            return _apply(self._lists_in_stripe(k, node, bufs, count, lo, hi, unbacked), valid)
        if t == "FixedSizeList":
            size = node.fixed_size
            if len(node.children) != 1 or size <= 0:
                raise LayoutError("FixedSizeList needs one child and a positive size",
                                  field=field)
            child = self._rows_in_stripe(k, node.children[0], count * size, lo * size,
                                         hi * size, unbacked)
            return _apply([child[i * size : (i + 1) * size] for i in range(hi - lo)], valid)
        if t == "Boolean":
            if spb.DATA not in bufs:
                raise LayoutError("Boolean field without a DATA buffer", field=field)
            return _apply(self._bit_window(bufs[spb.DATA], field + "/data", lo, hi).tolist(),
                          valid)
        if spb.DATA not in bufs:
            return self._column_in_stripe(k, node, count, unbacked)[lo:hi]
        if _dtype_of(node) is not None:
            dtype = _dtype_of(node)
            assert dtype is not None
            items, valid = self._window(bufs[spb.DATA], field + "/data", lo, hi,
                                        lambda vals, n, base, where: decode_numeric_values(
                                            vals, n, dtype, base=base, field=where).tolist())
            if t == "DateTime":
                from .blocks import ticks_to_datetime

                items = [ticks_to_datetime(x, field=field) for x in items]
            return _apply(items, valid)
        if t in _BYTES_TYPES:
            return self._bytes_in_stripe(node, bufs, field, lo, hi)
        return self._column_in_stripe(k, node, count, unbacked)[lo:hi]

    def _bytes_in_stripe(self, node: AmudaiField, bufs: dict[int, Any], field: str,
                         lo: int, hi: int) -> list[Any]:
        """Values ``[lo, hi)`` of a binary, string, Guid or decimal field (its DATA buffer
        there): plain or through its value dictionary, text decoded as UTF-8."""
        t = node.type
        fixed = node.fixed_size if t in ("FixedSizeBinary", "Guid") else 0
        if t == "Guid":
            fixed = fixed or 16
        if spb.VALUE_DICTIONARY in bufs:
            entries, null_id = self.value_dictionary(bufs[spb.VALUE_DICTIONARY],
                                                     field + "/dictionary")
            ids, valid = self._window(
                bufs[spb.DATA], field + "/data", lo, hi,
                lambda vals, n, base, where: decode_numeric_values(
                    vals, n, np.dtype("<u4"), base=base, field=where).tolist())
            if any(i >= len(entries) for i in ids):
                raise LayoutError(f"dictionary id {max(ids)} of {len(entries)} entries",
                                  field=field + "/data")
            items = [None if i == null_id else entries[i] for i in ids]
        else:
            items, valid = self._window(
                bufs[spb.DATA], field + "/data", lo, hi,
                lambda vals, n, base, where: decode_binary_values(
                    vals, n, fixed, base=base, field=where))
        if _is_text(node):
            try:
                items = [None if v is None else bytes(v).decode("utf-8") for v in items]
            except UnicodeDecodeError as exc:
                raise LayoutError(f"String value is not UTF-8: {exc}",
                                  field=field) from exc
        elif node.extended_type == "KustoDecimal":
            items = [None if v is None else _kusto_decimal(bytes(v), field) for v in items]
        return _apply(items, valid)

    def _lists_in_stripe(self, k: int, node: AmudaiField,
                         bufs: dict[int, Any], count: int, lo: int, hi: int,
                         unbacked: _Unbacked) -> list[Any]:
        """Lists or maps ``[lo, hi)`` of stripe ``k``: the offsets ``[lo, hi]`` from the blocks
        holding them, then only the items those offsets bound."""
        field = f"/stripes/{k}/fields/{node.path}"
        if spb.OFFSETS not in bufs:
            raise LayoutError(f"{node.type} field without an OFFSETS buffer", field=field)
        want = 1 if node.type == "List" else 2
        if len(node.children) != want:
            raise LayoutError(f"{node.type} field with {len(node.children)} children "
                              f"(expected {want})", field=field)
        where = field + "/offsets"
        start = bufs[spb.OFFSETS].buffer.range.start
        offs, _ = self._window(bufs[spb.OFFSETS], where, lo, hi + 1,
                               lambda vals, n, base, at: decode_numeric_values(
                                   vals, n, np.dtype("<u8"), base=base, field=at).tolist())
        if (lo == 0 and offs[0] != 0) or any(b < a for a, b in itertools.pairwise(offs)):
            raise LayoutError("list offsets do not increase from 0", offset=start, field=where)
        first, last = offs[0], offs[-1]
        if last - first > MAX_POSITIONS:
            raise LimitExceededError(f"{last - first} list items asked at once (the cap is "
                                     f"{MAX_POSITIONS})", offset=start, field=where)
        kids = []
        for child in node.children:
            sfd = self.stripe_field(k, child.schema_id)
            total = sfd.field.position_count if sfd is not None else last
            if last > total:
                raise LayoutError(f"list offsets reach {last}, the items hold {total}",
                                  offset=start, field=where)
            kids.append(self._rows_in_stripe(k, child, total, first, last, unbacked))
        if node.type == "List":
            return [kids[0][a - first : b - first] for a, b in itertools.pairwise(offs)]
        return [_map_value(kids[0][a - first : b - first], kids[1][a - first : b - first])
                for a, b in itertools.pairwise(offs)]

    def _bit_window(self, buf: spb.EncodedBuffer, field: str,
                    lo: int, hi: int) -> np.ndarray:
        """Bits ``[lo, hi)`` of a bit buffer (Boolean values or presence), from the blocks
        holding their bytes."""
        a, b = lo // 8, -(-hi // 8)
        raw, _ = self._window(buf, field, a, b, lambda vals, n, base, at: decode_numeric_values(
            vals, n, np.dtype(np.uint8), base=base, field=at))
        bits = np.unpackbits(np.asarray(raw, np.uint8), bitorder="little")
        return bits[lo - 8 * a : hi - 8 * a].astype(bool)

    def _prefetch(self, k: int, nodes: list[AmudaiField],
                  lo: int, hi: int) -> None:
        """On a cached remote source, fetch what :meth:`_window` will read for every column
        at once: the block maps in one batch, then the chosen blocks in another (each batch
        one request per run of neighbouring blocks), so a row costs two round trips, not two
        per column. Anything unexpected is left for the reads themselves to report."""
        streams = self._prefetch_streams(k, nodes)
        if not streams:
            return
        by_source: dict[int, tuple[Any, list[tuple[int, int]]]] = {}
        for src, _, _, mref, _ in streams:
            by_source.setdefault(id(src), (src, []))[1].append((mref.start, mref.end))
        maps = {id(src): dict(zip(ranges, read_ranges(src, ranges), strict=True))
                for src, ranges in by_source.values()}
        wanted: dict[int, tuple[Any, list[tuple[int, int]]]] = {}
        for src, buf, ref, mref, path in streams:
            try:
                _, _, table = self._block_map(buf, path, maps[id(src)][(mref.start, mref.end)])
            except ShardkitError:
                continue
            pos = 0
            for logical, ofs, size in table:
                if pos < hi and pos + logical > lo and ofs + size <= mref.start - ref.start:
                    wanted.setdefault(id(src), (src, []))[1].append(
                        (ref.start + ofs, ref.start + ofs + size))
                pos += logical
        for src, ranges in wanted.values():
            read_ranges(src, ranges)

    def _prefetch_streams(self, k: int, nodes: list[AmudaiField]
                          ) -> list[tuple[Any, spb.EncodedBuffer, DataRefInfo, DataRefInfo,
                                          str]] | None:
        """The DATA buffers of ``nodes`` (and their Struct children) in stripe ``k`` that
        :meth:`_prefetch` would fetch: (source, buffer, data ref, block map ref, path); None
        when a source is local or uncached (nothing to gain)."""
        streams: list[tuple[Any, spb.EncodedBuffer, DataRefInfo, DataRefInfo, str]] = []
        todo = list(nodes)
        while todo:
            node = todo.pop()
            if node.type == "Struct":
                todo.extend(node.children)
            if node.type not in _BYTES_TYPES and _dtype_of(node) is None:
                continue  # bits, offsets and items: positions that are not the rows'
            try:
                sfd = self.stripe_field(k, node.schema_id)
                if sfd is None or sfd.field.HasField("constant_value"):
                    continue
                bufs = self._buffers(sfd, "")
            except ShardkitError:
                continue
            buf = bufs.get(spb.DATA)
            if buf is None:
                continue
            try:
                ref, mref, _ = self._block_map(buf, node.path)
                src = self._blobs.locate(ref, "")
            except ShardkitError:
                continue
            if not getattr(src, "block_size", 0):
                return None  # local or uncached sources gain nothing from this
            streams.append((src, buf, ref, mref, node.path))
        return streams

    def _window(self, buf: spb.EncodedBuffer, field: str,
                lo: int, hi: int, decode: Any) -> tuple[list[Any], np.ndarray | None]:
        """Values ``[lo, hi)`` of a block stream, reading only the blocks that hold them."""
        ref, mref, _ = self._block_map(buf, field)
        self._hop(HOPS_BUFFER, field + "/buffer")
        src = self._blobs.locate(ref, field + "/buffer")
        _, _, table = self._block_map(buf, field, src.read_range(mref.start, mref.end))
        limit = mref.start - ref.start
        chosen: list[tuple[int, int, int, int]] = []  # (index, first position, offset, size)
        pos = 0
        for i, (logical, ofs, size) in enumerate(table):
            if pos < hi and pos + logical > lo:
                if ofs + size > limit:
                    raise LayoutError(f"block [{ofs}, {ofs + size}) overruns the data area of "
                                      f"{limit} bytes", offset=ref.start + ofs, field=field)
                chosen.append((i, pos, ofs, size))
            pos += logical
        if pos < hi:
            raise LayoutError(f"the block map holds {pos} values, {hi} are needed",
                              offset=mref.start, field=field + "/block_map")
        raws = read_ranges(src, [(ref.start + ofs, ref.start + ofs + size)
                                 for _, _, ofs, size in chosen])
        values: list[Any] = []
        masks: list[np.ndarray] = []
        any_null = False
        for (i, first, ofs, _), raw in zip(chosen, raws, strict=True):
            n = table[i][0]
            base = ref.start + ofs
            where = f"{field}/blocks/{i}"
            parts = split_block(memoryview(raw), embedded_presence=buf.embedded_presence,
                                has_checksum=buf.block_checksums, base=base, field=where,
                                region=f"block {i} of {field}")
            valid = decode_presence(parts.presence, n, base=base + 8, field=where + "/presence")
            got = decode(parts.values, n, base + parts.values_offset, where + "/values")
            if len(got) != n:
                raise LayoutError(f"block {i} holds {len(got)} values, its map says {n}",
                                  offset=base, field=where)
            a, b = max(lo - first, 0), min(hi - first, n)
            values.extend(got[a:b])
            masks.append(np.ones(b - a, bool) if valid is None else valid[a:b])
            any_null |= valid is not None
        return values, (np.concatenate(masks) if any_null and masks else None)
