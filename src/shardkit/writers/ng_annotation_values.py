"""The values of an annotation layer's indexes, read from the writer's temporary files a
piece at a time.

The writer keeps every annotation's encoded record in one spill file, its relationships (the
tail of its by_id value) in another, and a fixed-size row per annotation (id, where its record
and tail are, its box) in the row table. The passes that write an index visit the annotations
in key order, which is a random order of rows: read through a memory map, each such read
would keep a page (with large page-cache folios, up to megabytes) of the file resident, and
the process would hold whole files. So :meth:`Values.piece` reads what one piece of an index
needs (the rows of a part, a bounded number) with a few large ``pread`` calls: the sorted
byte ranges of the rows, coalesced where they lie within ``_GAP`` of each other, at most
``_WINDOW`` bytes a call. Memory holds the piece's records and tails, and one window.
"""

from __future__ import annotations

import os
import struct
from typing import Any

import numpy as np

__all__ = ["Piece", "Values", "read_ranges"]

_WINDOW = 8 << 20  # bytes read at most by one call
_GAP = 64 << 10  # ranges closer than this are read in one call (with the bytes between)
_SUB = 8192  # ranges copied at once when their sizes differ
_TABLE_ROWS = 1 << 16  # row-table rows read at once


def read_ranges(fd: int, starts: np.ndarray, ends: np.ndarray, window: int = _WINDOW,
                gap: int = _GAP) -> tuple[np.ndarray, np.ndarray]:
    """The bytes ``[starts[i], ends[i])`` of a file, back to back, and where each begins
    (``len + 1`` offsets). The ranges are sorted and do not overlap."""
    starts = np.asarray(starts, np.int64)
    ends = np.asarray(ends, np.int64)
    n = len(starts)
    sizes = ends - starts
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(sizes, out=offsets[1:])
    out = np.empty(int(offsets[-1]), np.uint8)
    breaks = np.flatnonzero(starts[1:] - ends[:-1] > gap) + 1  # a new call after a far gap
    i = 0
    while i < n:
        j = max(i + 1, int(np.searchsorted(ends, starts[i] + window, side="right")))
        b = int(np.searchsorted(breaks, i, side="right"))
        if b < len(breaks):
            j = min(j, int(breaks[b]))
        base = int(starts[i])
        length = int(ends[j - 1]) - base
        data = os.pread(fd, length, base)
        if len(data) != length:
            raise OSError(f"a temporary file is shorter than written ({base}+{length})")
        _copy_ranges(out[offsets[i] : offsets[j]], np.frombuffer(data, np.uint8),
                     starts[i:j] - base, sizes[i:j])
        i = j
    return out, offsets


def _copy_ranges(out: np.ndarray, buf: np.ndarray, local: np.ndarray, sizes: np.ndarray
                 ) -> None:
    """``buf[local[k] : local[k] + sizes[k]]`` for every k, back to back into ``out``."""
    if not len(sizes):
        return
    size = int(sizes[0])
    if bool(np.all(sizes == size)):
        if size:
            windows = np.lib.stride_tricks.as_strided(buf, (len(buf) - size + 1, size), (1, 1))
            out.reshape(len(sizes), size)[:] = windows[local]
        return
    pos = 0
    for k in range(0, len(sizes), _SUB):
        sz, lo = sizes[k : k + _SUB], local[k : k + _SUB]
        total = int(sz.sum())
        within = np.arange(total) - np.repeat(np.cumsum(sz) - sz, sz)
        out[pos : pos + total] = buf[np.repeat(lo, sz) + within]
        pos += total


class Values:
    """Where the writer's annotations are: the row table (an open file of ``row_dtype``
    rows), the records' and the tails' spill files (by name)."""

    def __init__(self, table_fd: int, row_dtype: np.dtype[Any], n: int, record_bytes: int,
                 spill_name: str, spill_bytes: int, tails_name: str, tails_bytes: int,
                 fixed_record: bool = False, fixed_tail: int | None = None) -> None:
        self.table_fd, self.row_dtype, self.n = table_fd, row_dtype, n
        # records of one size (every type but polylines) and tails of one size lie at
        # row * size: then the row table is not read for them
        self.fixed_record, self.fixed_tail = fixed_record, fixed_tail
        self.record_bytes = record_bytes  # of a record without a variable part
        self.spill_bytes, self.tails_bytes = spill_bytes, tails_bytes
        self.fds: list[int] = []
        self.spill_fd = self._open(spill_name, spill_bytes)
        self.tails_fd = self._open(tails_name, tails_bytes)

    def _open(self, name: str, size: int) -> int:
        if not size:
            return -1
        fd = os.open(name, os.O_RDONLY)
        self.fds.append(fd)
        return fd

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds = []

    def piece(self, rows: np.ndarray, ids: np.ndarray | None = None, tails: bool = True
              ) -> Piece:
        """The records, tails (unless not ``tails``) and ids of ``rows`` (any order, repeats
        allowed; ``ids`` the id of each, if known: then the row table is not read for them)."""
        rows = np.asarray(rows, np.int64)
        order = np.argsort(rows, kind="stable")
        urows = rows[order]
        first = np.concatenate(([True], urows[1:] != urows[:-1])) if len(urows) \
            else np.zeros(0, bool)
        urows = urows[first]
        known = None if ids is None else np.asarray(ids, np.uint64)[order][first]
        del order
        rb, ts = self.record_bytes, self.fixed_tail
        need_table = known is None or not self.fixed_record or (tails and ts is None)
        fields = self._table_fields(urows) if need_table else None
        empty = (np.zeros(0, np.uint8), np.zeros(len(urows) + 1, np.int64))
        if fields is None:
            rec_starts = urows * rb
            recs = read_ranges(self.spill_fd, rec_starts, rec_starts + rb) \
                if len(urows) and self.spill_fd >= 0 else empty
        else:
            recs = read_ranges(self.spill_fd, fields["start"], fields["rec_end"]) \
                if len(urows) and self.spill_fd >= 0 else empty
        tail = empty
        if tails and len(urows) and self.tails_fd >= 0:
            if ts is not None:
                tail_starts = urows * ts
                tail = read_ranges(self.tails_fd, tail_starts, tail_starts + ts)
            else:
                assert fields is not None
                tail = read_ranges(self.tails_fd, fields["tail_start"], fields["tail_end"])
        if known is None:
            assert fields is not None
            known = np.array(fields["id"])
        return Piece(urows, known, recs, tail)

    def _table_fields(self, urows: np.ndarray) -> np.ndarray:
        """The rows' id and where their record and tail are, from the row table."""
        size = self.row_dtype.itemsize
        fields = np.empty(len(urows), [("id", "<u8"), ("start", "<i8"), ("rec_end", "<i8"),
                                       ("tail_start", "<i8"), ("tail_end", "<i8")])
        for k in range(0, len(urows), _TABLE_ROWS):
            at = urows[k : k + _TABLE_ROWS] * size
            raw, _ = read_ranges(self.table_fd, at, at + size)
            got = raw.view(self.row_dtype)
            for name in fields.dtype.names or ():
                fields[name][k : k + len(got)] = got[name]
        return fields


class Piece:
    """What the values of some rows are made of (see :meth:`Values.piece`)."""

    def __init__(self, rows: np.ndarray, ids: np.ndarray, recs: tuple[np.ndarray, np.ndarray],
                 tails: tuple[np.ndarray, np.ndarray]) -> None:
        self.rows, self.ids = rows, ids
        self.rec_buf, self.rec_off = recs
        self.tail_buf, self.tail_off = tails
        self.rec_size = _fixed(self.rec_off)
        self.tail_size = _fixed(self.tail_off)

    def _at(self, rows: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.rows, np.asarray(rows, np.int64))

    def values_of(self, rows: np.ndarray) -> list[bytes] | tuple[bytes, np.ndarray]:
        """by_id values (record, then relationships) of ``rows``: one block and the sizes when
        records and tails have one size each, else one by one."""
        at = self._at(rows)
        rs, ts = self.rec_size, self.tail_size
        if rs is not None and ts is not None:
            out = np.empty((len(at), rs + ts), np.uint8)
            if rs:
                out[:, :rs] = self.rec_buf.reshape(-1, rs)[at]
            if ts:
                out[:, rs:] = self.tail_buf.reshape(-1, ts)[at]
            return out.tobytes(), np.full(len(at), rs + ts, np.uint64)
        ro, to = self.rec_off.tolist(), self.tail_off.tolist()
        rb, tb = self.rec_buf, self.tail_buf
        return [rb[ro[j] : ro[j + 1]].tobytes() + tb[to[j] : to[j + 1]].tobytes()
                for j in at.tolist()]

    def list_values(self, rows: np.ndarray, starts: np.ndarray, ends: np.ndarray
                    ) -> list[bytes]:
        """:meth:`list_value` of ``rows[starts[j]:ends[j]]`` for every j."""
        if self.rec_size is None:
            return [self.list_value(rows[a:b])
                    for a, b in zip(starts.tolist(), ends.tolist(), strict=True)]
        at = self._at(rows)
        recs = self.rec_buf.reshape(-1, self.rec_size)[at] if self.rec_size \
            else np.zeros((len(at), 0), np.uint8)
        ids = np.asarray(self.ids[at], "<u8")
        return [struct.pack("<Q", b - a) + recs[a:b].tobytes() + ids[a:b].tobytes()
                for a, b in zip(starts.tolist(), ends.tolist(), strict=True)]

    def list_value(self, rows: np.ndarray) -> bytes:
        """A relationship's or a cell's value: the count, the records, the ids."""
        at = self._at(rows)
        if self.rec_size is not None:
            recs = self.rec_buf.reshape(-1, self.rec_size)[at].tobytes() if self.rec_size \
                else b""
        else:
            ro, rb = self.rec_off.tolist(), self.rec_buf
            recs = b"".join(rb[ro[j] : ro[j + 1]].tobytes() for j in at.tolist())
        return struct.pack("<Q", len(at)) + recs + np.asarray(self.ids[at], "<u8").tobytes()


def _fixed(offsets: np.ndarray) -> int | None:
    """The one size of every range, or ``None``."""
    sizes = np.diff(offsets)
    if not len(sizes):
        return 0
    return int(sizes[0]) if bool(np.all(sizes == sizes[0])) else None
