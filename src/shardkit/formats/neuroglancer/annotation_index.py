"""The indexes of a Neuroglancer annotation layer (``by_id``, the relationships, the spatial
levels): each is sharded (:class:`ShardedIndex`, over :class:`ShardedKV`) or unsharded
(:class:`UnshardedIndex`, one file per key); :func:`_open_index` opens one from its ``info``
object. Walks over a sharded index read a minishard's values in runs of bounded size."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from ..._lazy import lazy_module
from ...errors import LimitExceededError, ShardkitError, TruncatedError
from .decode import gunzip_one
from .kv import ShardedKV
from .spec import ShardingSpec, SpecError
from .store import _Store, check_relative

if TYPE_CHECKING:
    import numpy as np

    from .shard import NgShard
else:
    np = lazy_module("numpy")

_MASK64 = (1 << 64) - 1
MAX_VALUE_BYTES = 1 << 30  # cap on one unsharded file read whole

_T = TypeVar("_T")


def _read_capped(fh: Any, name: str) -> bytes:
    """A file's bytes, its size checked against :data:`MAX_VALUE_BYTES` before they are
    read (a read of ``MAX_VALUE_BYTES + 1`` bytes would allocate that much for any file)."""
    size = os.fstat(fh.fileno()).st_size
    if size > MAX_VALUE_BYTES:
        raise LimitExceededError(f"{name}: {size} bytes, more than {MAX_VALUE_BYTES}")
    data: bytes = fh.read(size + 1)
    while len(data) > size and len(data) <= MAX_VALUE_BYTES:  # it grew since: 1 MiB steps
        more = fh.read(min(1 << 20, MAX_VALUE_BYTES + 1 - len(data)))
        if not more:
            break
        data += more
    return data


class UnshardedIndex:
    """An unsharded index: one file per key in a folder (``str(key)`` names)."""

    sharded = False

    def __init__(self, store: _Store, name: Callable[[Any], str] = str) -> None:
        self.store = store
        self.name = store.name
        self._name = name

    def file_name(self, key: Any) -> str:
        return self._name(key)

    def read(self, fname: str) -> bytes | None:
        """The file ``fname``, or ``None`` if it is not there."""
        store = self.store
        if store.fs is None:
            path = os.path.join(store.root, fname)
            try:
                with open(path, "rb") as fh:
                    data = _read_capped(fh, f"{store.name}/{fname}")
            except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
                return None
            except OSError as exc:
                raise ShardkitError(f"cannot read {store.name}/{fname}: {exc}") from exc
        else:
            try:  # at most one byte past the cap is fetched
                data = bytes(store.fs.cat_file(f"{store.root}/{fname}", start=0,
                                               end=MAX_VALUE_BYTES + 1))
            except FileNotFoundError:
                return None
            except Exception as exc:
                raise ShardkitError(f"cannot read {store.name}/{fname}: {exc}") from exc
        if len(data) > MAX_VALUE_BYTES:
            raise LimitExceededError(f"{store.name}/{fname}: more than {MAX_VALUE_BYTES} bytes")
        return data

    def get(self, key: Any) -> bytes | None:
        return self.read(self._name(key))

    def get_many(self, keys: Sequence[Any]) -> list[bytes | None]:
        return [self.get(k) for k in keys]

    def names(self) -> list[str]:
        return [n for n in (self.store.list() or []) if not n.startswith(".")]

    def uint64_keys(self) -> tuple[list[int], list[str]]:
        """``(ids, names that are not decimal uint64s)`` of the folder."""
        ids, odd = [], []
        for n in self.names():
            if n.isdigit() and n.isascii() and str(int(n)) == n and int(n) <= _MASK64:
                ids.append(int(n))
            else:
                odd.append(n)
        ids.sort()
        return ids, odd

    def items(self) -> Iterator[tuple[int, bytes]]:
        for k in self.uint64_keys()[0]:
            data = self.get(k)
            if data is not None:
                yield k, data

    def count(self) -> int:
        return len(self.uint64_keys()[0])


class ShardedIndex:
    """A sharded index over :class:`ShardedKV`."""

    sharded = True

    def __init__(self, kv: ShardedKV) -> None:
        self.kv = kv
        self.name = kv.name

    def get(self, key: int) -> bytes | None:
        """The value of ``key`` or ``None``: the minishard index is searched (its ids are
        ascending: they are stored as unsigned deltas) rather than turned into a dict, so a
        first lookup in a minishard costs its read and decode only, and the cache holds 24
        bytes per id (annotation ids are random: lookups spread over every minishard)."""
        kv = self.kv
        number, mini = kv.spec.shard_and_minishard(key)
        try:
            reader = kv.shard(number)
            if reader is None:
                return None
            with kv.naming(reader):
                # in the dataset's cache under a key of its own, charged for its arrays only
                # (no lookup dict is built: a minishard of a million-id layer is a few KB)
                ckey = ("sorted", reader._key, mini)
                index = kv.cache.get(ckey)
                if index is None:
                    start, end = reader.index_entry(mini)
                    index = reader._decode_minishard(mini, start, end)
                    kv.cache.put(ckey, index, 24 * len(index) + 256)
                ids = index.ids
                i = int(np.searchsorted(ids, np.uint64(key)))
                if i >= len(ids) or int(ids[i]) != key:
                    return None
                start, end = index.base + int(index.starts[i]), index.base + int(index.ends[i])
                mm = reader._mm
                if mm is not None and end <= reader._mm_size and not reader._gzip_data:
                    return bytes(mm[start:end])
                return bytes(reader._read_data(key, start, end))
        except FileNotFoundError:
            kv._forget(number)
            return None

    def get_many(self, keys: Sequence[int]) -> list[bytes | None]:
        return [None if v is None else bytes(v) for v in self.kv.get_many(keys, None)]

    def _walk_runs(self, per_run: Callable[[NgShard, _ReleaseBehind, int, np.ndarray,
                                             np.ndarray, np.ndarray], Iterator[_T]]
                   ) -> Iterator[_T]:
        """What ``per_run(reader, release, size, ids, starts, ends)`` yields for each run of
        values (:func:`_runs`: values close together, absolute offsets), shard by shard and
        minishard by minishard, inside the shard's naming context (its errors name the file);
        each shard's pages are released behind the walk."""
        kv = self.kv
        for reader in kv._existing_shards():
            release = _ReleaseBehind(reader)
            with kv.naming(reader):
                size = reader.source.size
                for _, index in reader.iter_minishards():
                    if not len(index):
                        continue
                    starts = index.starts + np.uint64(index.base)
                    ends = index.ends + np.uint64(index.base)
                    for r in _runs(starts, ends):
                        yield from per_run(reader, release, size, index.ids[r], starts[r],
                                           ends[r])
            release.done()

    def blocks(self) -> Iterator[tuple[np.ndarray, bytes, np.ndarray, np.ndarray]]:
        """``(ids, block, starts, ends)`` per minishard: its values lie at
        ``block[starts[i]:ends[i]]`` (stored bytes: for a raw data encoding, the values)."""
        return self._walk_runs(self._run_stored)

    @classmethod
    def _run_stored(cls, reader: NgShard, release: _ReleaseBehind, size: int, ids: np.ndarray,
                    starts: np.ndarray, ends: np.ndarray
                    ) -> Iterator[tuple[np.ndarray, bytes, np.ndarray, np.ndarray]]:
        lo, hi = int(starts.min()), int(ends.max())
        if hi > size:
            raise TruncatedError(f"minishard values [{lo}, {hi}) are past the end of the file "
                                 f"({size} bytes)", offset=lo, needed=hi - lo,
                                 available=max(0, size - lo))
        if hi - lo > _MAX_RUN_SPAN:  # values out of order, far apart
            yield from cls._one_by_one(reader, release, ids, starts, ends)
            return
        block = bytes(reader.source.read_range(lo, hi))
        release(lo, hi)
        yield ids, block, starts - np.uint64(lo), ends - np.uint64(lo)

    @staticmethod
    def _one_by_one(reader: NgShard, release: _ReleaseBehind, ids: np.ndarray,
                    starts: np.ndarray, ends: np.ndarray
                    ) -> Iterator[tuple[np.ndarray, bytes, np.ndarray, np.ndarray]]:
        """:meth:`blocks` of a run too wide to read at once: a block per value."""
        for i, (a, b) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True)):
            block = bytes(reader.source.read_range(a, b))
            release(a, b)
            yield (ids[i : i + 1], block, np.zeros(1, np.uint64),
                   np.array([b - a], np.uint64))

    def items(self, bad_value: Callable[[NgShard, int, ShardkitError], None] | None = None
              ) -> Iterator[tuple[int, bytes]]:
        """Every ``(key, value)``, shard by shard, minishard by minishard: the values of a
        minishard are read with one request (when they lie in one span of at most 64 MiB;
        else one by one) and cut apart. ``bad_value(shard, key, error)``, when given, is told
        of a value that does not decompress, and the walk goes on."""
        return self._walk_runs(
            lambda reader, release, size, ids, starts, ends: self._run_items(
                reader, release, ids.tolist(), starts.tolist(), ends.tolist(), size, bad_value))

    def value_blocks(self, bad_value: Callable[[NgShard, int, ShardkitError], None] | None = None
                     ) -> Iterator[tuple[np.ndarray, bytes, np.ndarray, np.ndarray]]:
        """The values of :meth:`items` (gzip ones decompressed) as ``(ids, block, starts,
        ends)``: value ``i`` is ``block[starts[i]:ends[i]]``; a block holds a run's values, or
        :data:`_BLOCK_BYTES` of them (inflated values are counted as they come, so a run of
        small streams that inflate far does not pile up). The same values, errors and
        ``bad_value`` calls, in the same order; what was read before an error is handed over
        before the error is raised."""
        return self._walk_runs(
            lambda reader, release, size, ids, starts, ends: self._run_blocks(
                reader, release, ids.tolist(), starts.tolist(), ends.tolist(), size, bad_value))

    @classmethod
    def _run_blocks(cls, reader: NgShard, release: _ReleaseBehind, ids: list[int],
                    starts: list[int], ends: list[int], size: int,
                    bad_value: Callable[[NgShard, int, ShardkitError], None] | None
                    ) -> Iterator[tuple[np.ndarray, bytes, np.ndarray, np.ndarray]]:
        """:meth:`_run_values` packed into blocks of about :data:`_BLOCK_BYTES`."""
        keys: list[int] = []
        values: list[bytes] = []
        held = 0
        try:
            for k, v in cls._run_values(reader, release, ids, starts, ends, size, bad_value):
                keys.append(k)
                values.append(v)
                held += len(v)
                if held >= _BLOCK_BYTES:
                    yield _packed(keys, values)
                    keys, values, held = [], [], 0
        except ShardkitError:
            if keys:
                yield _packed(keys, values)
            raise
        if keys:
            yield _packed(keys, values)

    @classmethod
    def _run_values(cls, reader: NgShard, release: _ReleaseBehind, ids: list[int],
                    starts: list[int], ends: list[int], size: int,
                    bad_value: Callable[[NgShard, int, ShardkitError], None] | None
                    ) -> Iterator[tuple[int, bytes]]:
        """:meth:`_run_items`, gzip values that inflate in one step without an error object
        (:func:`gunzip_one`), the others as it does."""
        lo, hi = min(starts), max(ends)
        if not reader._gzip_data or hi > size or hi - lo > _MAX_RUN_SPAN:
            for k, v in cls._run_items(reader, release, ids, starts, ends, size, bad_value):
                yield k, bytes(v)
            return
        block = bytes(reader.source.read_range(lo, hi))
        release(lo, hi)
        view = memoryview(block)
        limit = reader.max_decoded_size
        for k, a, b in zip(ids, starts, ends, strict=True):
            value = gunzip_one(view[a - lo : b - lo], limit)
            if value is None:
                value = _decoded(reader, k, a, block[a - lo : b - lo], bad_value)
                if value is None:
                    continue
            yield k, value

    @staticmethod
    def _run_items(reader: NgShard, release: _ReleaseBehind, ids: list[int],
                   starts: list[int], ends: list[int], size: int,
                   bad_value: Callable[[NgShard, int, ShardkitError], None] | None
                   ) -> Iterator[tuple[int, bytes]]:
        lo, hi = min(starts), max(ends)
        if hi > size or hi - lo > _MAX_RUN_SPAN:
            for k, a, b in zip(ids, starts, ends, strict=True):
                try:
                    value = bytes(reader._read_data(k, a, b))
                except ShardkitError as exc:
                    if bad_value is None or b > size:
                        raise
                    bad_value(reader, k, exc)
                    continue
                yield k, value
            return
        block = bytes(reader.source.read_range(lo, hi))
        release(lo, hi)
        if reader._gzip_data:
            for k, a, b in zip(ids, starts, ends, strict=True):
                got = _decoded(reader, k, a, block[a - lo : b - lo], bad_value)
                if got is not None:
                    yield k, got
        else:
            for k, a, b in zip(ids, starts, ends, strict=True):
                yield k, block[a - lo : b - lo]

    def count(self) -> int:
        return len(self.kv)


_RUN_BYTES = 8 << 20
_MAX_RUN_SPAN = 1 << 26  # a run wider than this (values out of order) is read value by value
_BLOCK_BYTES = 8 << 20  # value_blocks: the inflated bytes of one block (then one more value)


def _decoded(reader: NgShard, key: int, at: int, raw: bytes,
             bad_value: Callable[[NgShard, int, ShardkitError], None] | None) -> bytes | None:
    """The decoded value ``raw`` of ``key`` (stored at ``at``); None after telling
    ``bad_value`` of a value that does not decode (without it, the error is raised)."""
    try:
        return bytes(reader._decode(key, at, raw))
    except ShardkitError as exc:
        if bad_value is None:
            raise
        bad_value(reader, key, exc)
        return None


def _packed(keys: list[int], values: list[bytes]
            ) -> tuple[np.ndarray, bytes, np.ndarray, np.ndarray]:
    """``(ids, block, starts, ends)`` of values laid back to back."""
    ends = np.cumsum(np.fromiter(map(len, values), np.uint64, len(values)), dtype=np.uint64)
    starts = np.empty_like(ends)
    starts[:1] = 0
    starts[1:] = ends[:-1]
    return np.array(keys, np.uint64), b"".join(values), starts, ends


def _runs(starts: np.ndarray, ends: np.ndarray) -> list[Any]:
    """The values of one minishard cut into runs (slices, in index order) whose bytes span
    about :data:`_RUN_BYTES` at most, read one request each: a walk holds one run, however
    large the minishard (values not in ascending order of offset: one run)."""
    lo, hi = int(starts.min()), int(ends.max())
    if hi - lo <= 2 * _RUN_BYTES or len(starts) < 2 or bool(np.any(starts[1:] < starts[:-1])):
        return [slice(None)]
    group = (starts - np.uint64(lo)) // np.uint64(_RUN_BYTES)
    cuts = np.flatnonzero(group[1:] != group[:-1]) + 1
    edges = [0, *cuts.tolist(), len(starts)]
    return [slice(a, b) for a, b in itertools.pairwise(edges)]


class _ReleaseBehind:
    """A walk over a shard drops the mapped pages of what it has copied, every MiB (a local
    file: they stay in the page cache), so that a scan of a large index does not leave it
    resident in the process."""

    def __init__(self, reader: NgShard) -> None:
        self.release = getattr(reader.source, "release", None)
        self.mark: int | None = None

    def done(self) -> None:
        """The walk has left the shard: every page of it is dropped (its minishard indexes
        too, which the walk read but did not release behind itself)."""
        if self.release is not None:
            self.release()
        self.mark = None

    def __call__(self, lo: int, hi: int) -> None:
        if self.release is None:
            return
        if self.mark is None or lo < self.mark:
            self.mark = lo
        if hi - self.mark >= 1 << 20:
            self.release(self.mark, hi)
            self.mark = hi - hi % 4096


def _open_index(store: _Store, meta: Any, where: str, default_key: str | None,
                options: dict[str, Any], allow_external: bool,
                name: Callable[[Any], str] = str) -> tuple[str, UnshardedIndex | ShardedIndex]:
    if not isinstance(meta, Mapping):
        raise SpecError(f"{store.name}/info: {where} must be an object", field=where)
    key = meta.get("key", default_key)
    key = check_relative(key, f"{where}/key", allow_external=allow_external)
    sub = store.sub(key)
    if meta.get("sharding") is not None:
        try:
            spec = ShardingSpec.from_dict(meta["sharding"])
        except SpecError as exc:
            raise SpecError(exc.message, field=where + (exc.field or "").removeprefix(
                "/sharding").join(("/sharding", ""))) from exc
        return key, ShardedIndex(ShardedKV(sub, spec, **options))
    return key, UnshardedIndex(sub, name)
