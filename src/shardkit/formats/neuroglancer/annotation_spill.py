"""Bounded-memory tables of fixed-size rows for annotation verify and the writer.

:class:`Buckets` holds rows of one numpy dtype, hash-partitioned by a uint64 column into
``P`` buckets: in memory while their total stays under ``bucket_bytes``, then spilled to
temporary files (one per bucket, appended to) in a folder that :meth:`Buckets.close` removes.
Reading back, consecutive buckets are grouped so that a group's rows stay under
``bucket_bytes``: a check runs group by group, each group holding every row of its keys.

:class:`MultisetHash` sums a keyed 64-bit mix of each row (modulo 2**64): two multisets of
rows with equal sums and counts are equal but with a chance of about 2**-64 (the key is
random per run, so no file can be made to collide on purpose).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..._accel import accelerator

DEFAULT_BUCKET_BYTES = 64 << 20

#: The optional C accelerator of the loops below (``_native.c``: the same answers as the
#: numpy twins, see the tests); ``SHARDKIT_NO_NATIVE`` set: numpy, for comparisons.
_native: Any = accelerator("shardkit.formats.neuroglancer._native")
_MIX_A = np.uint64(0xBF58476D1CE4E5B9)
_MIX_B = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def mix64(x: np.ndarray, inplace: bool = False) -> np.ndarray:
    """splitmix64's finaliser over a uint64 array (a bijection); ``inplace``: in ``x``."""
    with np.errstate(over="ignore"):
        x = np.add(x, _GOLDEN, out=x if inplace else None)
        t = np.empty_like(x)
        for shift, mul in ((30, _MIX_A), (27, _MIX_B)):
            np.right_shift(x, np.uint64(shift), out=t)
            x ^= t
            x *= mul
        np.right_shift(x, np.uint64(31), out=t)
        x ^= t
        return x


def random_odd(count: int) -> list[np.uint64]:
    """``count`` random odd 64-bit multipliers."""
    raw = np.frombuffer(os.urandom(8 * count), "<u8") | np.uint64(1)
    return [np.uint64(v) for v in raw.tolist()]


def hash_rows(recs: np.ndarray, keys: list[np.uint64]) -> np.ndarray:
    """A 64-bit hash of each row of a ``(n, width)`` uint8 array (``width`` a multiple of 4):
    the row's 64-bit words times random odd ``keys`` (one per word, and one for the width),
    summed, then mixed (a universal family: two rows that differ collide with a chance of
    about 2**-63 over the keys)."""
    n, width = recs.shape
    recs = np.ascontiguousarray(recs)
    if len(keys) < -(-width // 8) + 1:
        raise ValueError("not enough keys")
    if _native is not None and width and n:  # the same values, in C
        out = np.empty(n, "<u8")
        _native.keyed_rows(recs, width, np.array(keys, "<u8"), out)
        return out.astype(np.uint64, copy=False)
    return _hash_rows_numpy(recs, keys)


def _hash_rows_numpy(recs: np.ndarray, keys: list[np.uint64]) -> np.ndarray:
    """:func:`hash_rows` in numpy (the twin of the C path)."""
    n, width = recs.shape
    full = width - width % 8
    cols = [recs[:, :full].view("<u8")[:, j] for j in range(full // 8)]
    if width % 8:
        tail = np.zeros((n, 8), np.uint8)
        tail[:, : width - full] = recs[:, full:]
        cols.append(tail.view("<u8")[:, 0])
    if len(keys) < len(cols) + 1:
        raise ValueError("not enough keys")
    h = np.full(n, (width * int(keys[-1])) & 0xFFFF_FFFF_FFFF_FFFF, np.uint64)
    t = np.empty(n, np.uint64)
    with np.errstate(over="ignore"):
        for col, k in zip(cols, keys, strict=False):
            np.multiply(col, k, out=t)
            h += t
    return mix64(h, inplace=True)


def copy_spans(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The bytes ``buf[starts[i] : starts[i] + lengths[i]]`` of every span, back to back
    (uint8; every span must lie inside ``buf``)."""
    starts = np.ascontiguousarray(starts, "<u8")
    lengths = np.ascontiguousarray(lengths, "<u8")
    if _native is None:
        return _copy_spans_numpy(buf, starts, lengths)
    if len(starts) and (bool(np.any(starts > np.uint64(len(buf))))
                        or bool(np.any(lengths > np.uint64(len(buf)) - starts))):
        raise ValueError("copy_spans: a span outside the source")  # as the numpy path says
    out = np.empty(int(lengths.sum(dtype=np.uint64)), np.uint8)
    _native.copy_spans(np.ascontiguousarray(buf, np.uint8), starts, lengths, out)
    return out


def _copy_spans_numpy(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """:func:`copy_spans` in numpy (the twin of the C path)."""
    lengths = lengths.astype(np.int64)
    starts = starts.astype(np.int64)
    if len(lengths) and (bool(np.any(starts < 0)) or bool(np.any(lengths < 0))
                         or bool(np.any(starts > len(buf)))
                         or bool(np.any(lengths > len(buf) - starts))):
        raise ValueError("copy_spans: a span outside the source")
    first = np.cumsum(lengths) - lengths
    out: np.ndarray = np.asarray(buf)[np.arange(int(lengths.sum()))
                                      + np.repeat(starts - first, lengths)]
    return out


class MultisetHash:
    """An order-independent 64-bit digest of a multiset of tuples of uint64 columns."""

    def __init__(self, key: int | None = None) -> None:
        self.key = np.uint64(int.from_bytes(os.urandom(8), "little") if key is None else key)
        self.muls = random_odd(4) if key is None else [np.uint64(2 * key + 2 * i + 1)
                                                       for i in range(4)]
        self.sums: dict[str, int] = {}
        self.counts: dict[str, int] = {}

    def add(self, name: str, *columns: np.ndarray) -> None:
        """Adds the rows ``(columns[0][i], columns[1][i], ...)`` (at most 4 columns): each
        row counts as mix(key + sum of column times a random odd multiplier)."""
        n = len(columns[0])
        if not n:
            return
        if _native is not None and 1 <= len(columns) <= 4:  # the same sum, in C
            cols = tuple(np.ascontiguousarray(c, "<u8") for c in columns)
            if any(c.shape != (n,) for c in cols):
                raise ValueError("columns of one length")
            s = _native.multiset_sum(int(self.key), np.array(self.muls, "<u8"), cols)
        else:
            s = self._sum(columns)
        self.sums[name] = (self.sums.get(name, 0) + s) & 0xFFFF_FFFF_FFFF_FFFF
        self.counts[name] = self.counts.get(name, 0) + n

    def _sum(self, columns: tuple[np.ndarray, ...]) -> int:
        """The sum of the rows' digests, in numpy (the twin of the C path)."""
        h = np.full(len(columns[0]), self.key, np.uint64)
        t = np.empty(len(h), np.uint64)
        with np.errstate(over="ignore"):
            for col, k in zip(columns, self.muls, strict=False):
                np.multiply(np.asarray(col, np.uint64), k, out=t)
                h += t
            mix64(h, inplace=True)
            return int(h.sum(dtype=np.uint64))

    def same(self, a: str, b: str) -> bool:
        return (self.sums.get(a, 0) == self.sums.get(b, 0)
                and self.counts.get(a, 0) == self.counts.get(b, 0))


def bucket_of(keys: np.ndarray, parts: int) -> np.ndarray:
    """The bucket (``0 <= b < parts``) of each uint64 key (a fixed mix: stable across runs)."""
    return (mix64(np.asarray(keys, np.uint64)) % np.uint64(parts)).astype(np.int64)


class Buckets:
    """Rows of ``dtype`` partitioned by their ``key`` column into ``parts`` buckets.

    Rows stay in memory until their total passes ``memory_bytes`` (``bucket_bytes`` unless
    given); then every bucket is written to its file under ``folder`` (a new temporary folder
    in ``tmp_dir``, or the system's), and later rows are buffered and appended (the buffers
    together stay under ``bucket_bytes / 4``).
    """

    def __init__(self, dtype: np.dtype[Any] | list[Any], key: str, parts: int,
                 bucket_bytes: int = DEFAULT_BUCKET_BYTES, tmp_dir: str | None = None,
                 memory_bytes: int | None = None) -> None:
        self.dtype = np.dtype(dtype)
        self.key = key
        self.parts = max(1, int(parts))
        self.bucket_bytes = max(1, int(bucket_bytes))
        self.memory_bytes = self.bucket_bytes if memory_bytes is None else int(memory_bytes)
        self.tmp_dir = tmp_dir
        self.folder: str | None = None
        self.buffers: list[list[np.ndarray]] = [[] for _ in range(self.parts)]
        self.buffered = 0
        self.sizes = [0] * self.parts  # rows per bucket
        self.rows = 0

    @property
    def spilled(self) -> bool:
        return self.folder is not None

    def add(self, rows: np.ndarray, where: np.ndarray | None = None) -> None:
        """Adds ``rows``, each to the bucket of its key (or to ``where[i] % parts``)."""
        if not len(rows):
            return
        rows = np.asarray(rows, self.dtype)
        if self.parts == 1:
            self.buffers[0].append(rows)
            self.sizes[0] += len(rows)
        else:
            b = (bucket_of(rows[self.key], self.parts) if where is None
                 else (np.asarray(where, np.uint64) % np.uint64(self.parts)).astype(np.int64))
            order = np.argsort(b, kind="stable")
            b, rows = b[order], rows[order]
            cuts = np.searchsorted(b, np.arange(self.parts + 1))
            for p in np.flatnonzero(cuts[1:] > cuts[:-1]).tolist():
                self.buffers[p].append(rows[cuts[p] : cuts[p + 1]])
                self.sizes[p] += int(cuts[p + 1] - cuts[p])
        self.rows += len(rows)
        self.buffered += rows.nbytes
        limit = self.bucket_bytes // 4 if self.spilled else self.memory_bytes
        if self.buffered > limit and self.parts > 1:
            self.flush()

    def flush(self) -> None:
        if self.folder is None:
            self.folder = tempfile.mkdtemp(prefix=".shardkit-spill-", dir=self.tmp_dir)
        for p, parts in enumerate(self.buffers):
            if parts:
                with open(os.path.join(self.folder, str(p)), "ab") as f:
                    for a in parts:
                        f.write(a.tobytes())
                self.buffers[p] = []
        self.buffered = 0

    def bucket(self, p: int) -> np.ndarray:
        parts = list(self.buffers[p])
        if self.folder is not None:
            path = os.path.join(self.folder, str(p))
            if os.path.exists(path):
                parts.insert(0, np.fromfile(path, dtype=self.dtype))
        if not parts:
            return np.zeros(0, self.dtype)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def chunks(self, p: int, rows: int = 1 << 18) -> Iterator[np.ndarray]:
        """The rows of bucket ``p`` in :meth:`bucket`'s order, at most ``rows`` at a time
        (memory holds one chunk of a bucket that was spilled to its file)."""
        if self.folder is not None:
            path = os.path.join(self.folder, str(p))
            if os.path.exists(path):
                total = os.path.getsize(path) // self.dtype.itemsize
                with open(path, "rb") as f:
                    for start in range(0, total, rows):
                        yield np.fromfile(f, dtype=self.dtype, count=min(rows, total - start))
        for a in self.buffers[p]:
            for start in range(0, len(a), rows):
                yield a[start : start + rows]

    def close(self) -> None:
        self.buffers = [[] for _ in range(self.parts)]
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None

    def __enter__(self) -> Buckets:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def parts_for(total_bytes: int, bucket_bytes: int) -> int:
    """Buckets for ``total_bytes`` of rows so that one holds about half of ``bucket_bytes``."""
    return 1 if total_bytes <= bucket_bytes else -(-2 * total_bytes // bucket_bytes)


def groups(tables: list[Buckets], bucket_bytes: int) -> Iterator[list[int]]:
    """Runs of consecutive bucket numbers whose rows, over all ``tables`` (partitioned
    alike), stay under ``bucket_bytes`` (a bucket over it alone makes a group of one)."""
    parts = tables[0].parts
    run: list[int] = []
    size = 0
    for p in range(parts):
        b = sum(t.sizes[p] * t.dtype.itemsize for t in tables)
        if run and size + b > bucket_bytes:
            yield run
            run, size = [], 0
        run.append(p)
        size += b
    if run:
        yield run
