"""Shard files of an annotation layer's indexes, each written as a stream.

A shard file is ``[shard index][values, minishard by minishard and by ascending key]
[minishard indices]`` (the layout of :func:`shardkit.writers.neuroglancer.shard_pieces`).
:class:`ShardFile` writes one through its destination's temporary file: the shard index's
``16 * num_minishards`` bytes are reserved, each value is written (gzipped on its own for the
``gzip`` data encoding) as its minishard comes, each minishard's index table goes to a
temporary file, and at the end the tables are copied after the values and the shard index is
written over the reserved bytes. Memory holds one minishard's keys and sizes.

:func:`write_sharded` writes the shards of one index from ``(key, row, ...)`` pairs: they are
partitioned into temporary files by ranges of *global minishard* (``shard << minishard_bits |
minishard``), so that reading the parts in order visits shards in order and each minishard
whole; a part is sorted, and its minishards are handed to :class:`ShardFile` a batch of keys
at a time. Memory holds one part (about ``bucket_bytes / 2``), whatever a shard's size.

:func:`stream_opener` opens a destination's file for writing: for a local folder an atomic
temporary file beside it; for an fsspec URL a local temporary file that is uploaded in one
``put_file`` once complete.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

import numpy as np

from ..formats.neuroglancer import ShardingSpec
from ..formats.neuroglancer.annotation_spill import Buckets, parts_for
from ..formats.neuroglancer.spec import ENTRY_WORD
from ._atomic import atomic_file

__all__ = ["ShardFile", "ShardParts", "merge_counts", "runs", "sized_buckets",
           "stream_opener", "write_sharded"]

_WORK = 6  # the arrays a part is sorted with, over its pairs' bytes
_COPY = 1 << 20  # bytes copied at once
_VALUE_ROWS = 8192  # rows whose values are made at once

Opener = Callable[[str], contextlib.AbstractContextManager[IO[bytes]]]
Values = list[bytes] | tuple[bytes, np.ndarray]


def runs(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(distinct values, start of each run, length of each run)`` of sorted ``values`` (what
    ``np.unique`` gives, without its hashing: much slower on uint64 here)."""
    if not len(values):
        return values[:0], np.zeros(0, np.int64), np.zeros(0, np.int64)
    starts = np.flatnonzero(np.concatenate(([True], values[1:] != values[:-1])))
    lengths = np.diff(np.append(starts, len(values)))
    return values[starts], starts, lengths


def merge_counts(keys_a: np.ndarray, counts_a: np.ndarray, keys_b: np.ndarray,
                 counts_b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two tables of (sorted distinct keys, counts) as one."""
    keys, counts = np.concatenate((keys_a, keys_b)), np.concatenate((counts_a, counts_b))
    order = np.argsort(keys, kind="stable")
    keys, counts = keys[order], counts[order]
    distinct, starts, _ = runs(keys)
    return distinct, (np.add.reduceat(counts, starts) if len(starts) else counts)


def stream_opener(dest: str, storage_options: Mapping[str, Any] | None) -> Opener:
    """``open(name)``: a context manager giving a binary file that becomes ``dest/name``
    once the block ends without an error (and nothing under that name otherwise)."""
    if "://" in dest:
        import fsspec

        fs, root = fsspec.core.url_to_fs(dest, **dict(storage_options or {}))
        root = root.rstrip("/")
        protocols = fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,)
        if "file" not in protocols:
            @contextlib.contextmanager
            def open_remote(name: str) -> Iterator[IO[bytes]]:
                path = f"{root}/{name}"
                fd, tmp = tempfile.mkstemp(prefix=".shardkit-upload-", suffix=".tmp")
                try:
                    with os.fdopen(fd, "w+b") as fh:
                        yield fh
                    fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
                    fs.put_file(tmp, path)  # one upload, once the file is complete
                finally:
                    with contextlib.suppress(OSError):
                        os.unlink(tmp)

            return open_remote
        dest = root

    def open_local(name: str) -> contextlib.AbstractContextManager[IO[bytes]]:
        path = Path(dest, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        return atomic_file(path)

    return open_local


class ShardFile:
    """One shard written as a stream into ``fh`` (see the module's text): call
    :meth:`add` with each minishard's keys (ascending) and values, minishards in ascending
    order (a minishard may come in several calls), then :meth:`finish`."""

    def __init__(self, fh: IO[bytes], spec: ShardingSpec, tmp_dir: str | None = None) -> None:
        from .neuroglancer import _gzip

        self.fh, self.spec, self._gzip = fh, spec, _gzip
        self.gzip_data = spec.data_encoding == "gzip"
        self.gzip_index = spec.minishard_index_encoding == "gzip"
        self.entries = np.zeros((spec.num_minishards, 2), dtype=ENTRY_WORD)
        self.used = np.zeros(spec.num_minishards, dtype=bool)
        fh.write(bytes(self.entries.nbytes))  # the shard index, written last
        self.data_pos = 0  # bytes of values written
        self.tables = tempfile.TemporaryFile(dir=tmp_dir)  # noqa: SIM115 - closed by finish
        self.tables_pos = 0
        self.mini = -1
        self.keys: list[np.ndarray] = []
        self.sizes: list[np.ndarray] = []
        self.mini_start = 0  # where the current minishard's values start

    def add(self, mini: int, keys: np.ndarray, values: Values) -> None:
        """Values of ``keys`` of minishard ``mini``: a list of bytes, or the values back to
        back with their sizes."""
        if mini != self.mini:
            self._end_minishard()
            if mini < self.mini:
                raise ValueError("minishards must come in ascending order")
            self.mini, self.mini_start = mini, self.data_pos
        if isinstance(values, tuple):
            block, sizes = values
            if self.gzip_data:
                cuts = np.concatenate(([0], np.cumsum(sizes, dtype=np.int64))).tolist()
                values = [block[a:b] for a, b in itertools.pairwise(cuts)]
            else:
                self.fh.write(block)
                self.data_pos += len(block)
                self.keys.append(np.asarray(keys, np.uint64))
                self.sizes.append(np.asarray(sizes, np.uint64))
                return
        if self.gzip_data:
            values = [self._gzip(v) for v in values]
        sizes_ = np.fromiter(map(len, values), np.uint64, len(values))
        for v in values:
            self.fh.write(v)
        self.data_pos += int(sizes_.sum())
        self.keys.append(np.asarray(keys, np.uint64))
        self.sizes.append(sizes_)

    def _end_minishard(self) -> None:
        if self.mini < 0 or not self.keys:
            return
        keys = np.concatenate(self.keys)
        sizes = np.concatenate(self.sizes)
        self.keys, self.sizes = [], []
        offsets = np.zeros(len(keys), dtype=np.uint64)
        offsets[0] = self.mini_start  # values are back to back: only the first is not 0
        table = np.stack([np.diff(keys, prepend=np.uint64(0)), offsets, sizes]
                         ).astype("<u8").tobytes()
        if self.gzip_index:
            table = self._gzip(table)
        self.tables.write(table)
        self.entries[self.mini] = (self.tables_pos, self.tables_pos + len(table))
        self.used[self.mini] = True
        self.tables_pos += len(table)

    def finish(self) -> None:
        """The minishard indices after the values, then the shard index."""
        self._end_minishard()
        try:
            self.tables.seek(0)
            shutil.copyfileobj(self.tables, self.fh, _COPY)
        finally:
            self.tables.close()
        self.entries[self.used] += np.uint64(self.data_pos)
        self.fh.seek(0)
        self.fh.write(self.entries.tobytes())
        self.fh.seek(0, os.SEEK_END)

    def close(self) -> None:
        """Drop the temporary table file (after a failure; :meth:`finish` closes it)."""
        self.tables.close()


def sized_buckets(dtype: Any, key: str, count: int, bucket_bytes: int, tmp_dir: str | None,
                  parts: int | None = None) -> Buckets:
    """:class:`Buckets` for ``count`` rows of ``dtype``, in parts sized for the arrays they
    are processed with (unless ``parts`` is given). Rows that will not fit in
    ``bucket_bytes`` go to the files from a quarter of it on, so that memory holds as much
    whatever their number."""
    dtype = np.dtype(dtype)
    total = count * dtype.itemsize
    if parts is None:
        parts = parts_for(_WORK * total, bucket_bytes)
    return Buckets(dtype, key, parts, bucket_bytes, tmp_dir,
                   memory_bytes=bucket_bytes // 4 if total > bucket_bytes else None)


def global_minishards(spec: ShardingSpec, keys: np.ndarray) -> np.ndarray:
    """``shard << minishard_bits | minishard`` of each key."""
    shards, minis = spec.locate_many(keys)
    return (shards << np.uint64(spec.minishard_bits)) | minis  # type: ignore[no-any-return]


class ShardParts:
    """``(key, row, ...)`` pairs partitioned by ranges of global minishard (parts in shard
    order, each holding whole minishards) for :func:`write_sharded`."""

    def __init__(self, dtype: Any, spec: ShardingSpec, count: int, bucket_bytes: int,
                 tmp_dir: str | None) -> None:
        from .neuroglancer import check_writable

        check_writable(spec)
        self.spec = spec
        dtype = np.dtype(dtype)
        total = 1 << (spec.shard_bits + spec.minishard_bits)
        # as many parts as the pairs need, even past the minishards (the parts past them stay
        # empty): with more than one, Buckets spills to its files past bucket_bytes
        parts = parts_for(_WORK * dtype.itemsize * count, bucket_bytes)
        self.per = -(-total // parts)  # global minishards per part
        self.buckets = sized_buckets(dtype, "key", count, bucket_bytes, tmp_dir, parts)

    def add(self, pairs: np.ndarray) -> None:
        if len(pairs):
            where = global_minishards(self.spec, pairs["key"]) // np.uint64(self.per)
            self.buckets.add(pairs, where)

    def pieces(self) -> Iterator[np.ndarray]:
        """The pairs, a piece at a time: pieces in the order of (global minishard, key), each
        holding every pair of its keys. A part too large for ``bucket_bytes`` (few
        minishards: a spatial level's can be one) is split by ranges of its keys, as the
        counts of its keys (read a chunk at a time) divide it."""
        b = self.buckets
        for p in range(b.parts):
            if not b.sizes[p]:
                continue
            if b.sizes[p] * b.dtype.itemsize * _WORK <= b.bucket_bytes:
                yield b.bucket(p)
                continue
            keys, counts = np.zeros(0, np.uint64), np.zeros(0, np.int64)
            for c in b.chunks(p):
                k, _, n = runs(np.sort(c["key"]))
                keys, counts = merge_counts(keys, counts, k, n)
            order = np.lexsort((keys, global_minishards(self.spec, keys)))
            target = max(1, b.bucket_bytes // (2 * _WORK * b.dtype.itemsize))
            piece = np.empty(len(keys), np.int64)  # each key's piece, in (gm, key) order
            piece[order] = np.cumsum(counts[order]) // target
            del order
            with sized_buckets(b.dtype, "key", b.sizes[p], b.bucket_bytes, b.tmp_dir,
                               int(piece.max()) + 1) as sub:
                for c in b.chunks(p):
                    sub.add(c, piece[np.searchsorted(keys, c["key"])])
                del keys, counts, piece
                for q in range(sub.parts):
                    if sub.sizes[q]:
                        yield sub.bucket(q)

    def close(self) -> None:
        self.buckets.close()

    def __enter__(self) -> ShardParts:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


ValuesFor = Callable[[np.ndarray, np.ndarray, np.ndarray], Values]


def write_sharded(open_: Opener, key: str, parts: ShardParts,
                  prepare: Callable[[np.ndarray], ValuesFor],
                  order: Callable[[np.ndarray], list[np.ndarray]] = lambda got: [],
                  tmp_dir: str | None = None) -> None:
    """The shard files ``key/NAME.shard`` of the pairs in ``parts``.

    A piece's pairs are sorted by shard, minishard, key and then ``order(pairs)`` (the sort
    keys that order a key's rows, most significant last); ``prepare(pairs)`` reads what the
    piece's values are made of and gives ``values_for(pairs, starts, ends)``: the values of
    the keys whose rows are ``pairs[starts[j]:ends[j]]`` (sorted pairs of several keys)."""
    spec = parts.spec
    bits = np.uint64(spec.minishard_bits)
    mask = np.uint64(spec.num_minishards - 1)
    current: tuple[int, Any, ShardFile] | None = None  # (shard, its sink, its writer)
    try:
        for got in parts.pieces():
            values_for = prepare(got)
            gm = global_minishards(spec, got["key"])
            perm = np.lexsort((*order(got), got["key"], gm))
            got, gm = got[perm], gm[perm]
            del perm
            for g, s, length in zip(*(a.tolist() for a in runs(gm)), strict=True):
                shard, mini = g >> int(bits), g & int(mask)
                if current is None or current[0] != shard:
                    if current is not None:
                        done, current = current, None
                        _end(done)
                    sink = open_(f"{key}/{spec.shard_name(shard)}")
                    fh = sink.__enter__()
                    try:
                        current = (shard, sink, ShardFile(fh, spec, tmp_dir))
                    except BaseException:
                        sink.__exit__(*_aborted())
                        raise
                _add_minishard(current[2], mini, got[s : s + length], values_for)
        if current is not None:
            done, current = current, None
            _end(done)
    finally:
        if current is not None:
            current[2].close()
            current[1].__exit__(*_aborted())


def _aborted() -> tuple[type[BaseException], BaseException, None]:
    exc = RuntimeError("shard not written")
    return type(exc), exc, None


def _end(current: tuple[int, Any, ShardFile]) -> None:
    _, sink, shard_file = current
    try:
        shard_file.finish()
    except BaseException:
        sink.__exit__(*_aborted())
        raise
    sink.__exit__(None, None, None)


def _add_minishard(shard_file: ShardFile, mini: int, pairs: np.ndarray,
                   values_for: Callable[[np.ndarray, np.ndarray, np.ndarray], Values]) -> None:
    """One minishard's keys, their values made a batch of rows at a time."""
    keys, starts, lengths = runs(pairs["key"])
    ends = starts + lengths
    j = 0
    while j < len(keys):
        # keys whose rows reach _VALUE_ROWS past the batch's first (at least one key)
        stop = max(j + 1, int(np.searchsorted(ends, starts[j] + _VALUE_ROWS, side="right")))
        base = int(starts[j])
        sel = pairs[base : int(ends[stop - 1])]
        shard_file.add(mini, keys[j:stop], values_for(sel, starts[j:stop] - base,
                                                       ends[j:stop] - base))
        j = stop
