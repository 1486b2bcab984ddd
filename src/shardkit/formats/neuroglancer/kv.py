"""Every shard of one sharding spec in one folder, as a mapping: :class:`ShardedKV`."""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from mmh3 import hash64 as _hash64  # hash_uint64, inlined on the hot path

from ..._lazy import lazy_module
from ..._lru import ByteLRU
from ...errors import EntryNotFoundError, Problem, ShardkitError
from ...sources import BytesSource
from ..base import Section
from .shard import _MISSING, NgShard, _as_key
from .spec import _MASK64, DEFAULT_CACHE_BYTES, DEFAULT_MAX_DECODED_SIZE, ShardingSpec
from .store import _Store
from .verify import IdCheck

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_module("numpy")

# -- every shard of one spec ------------------------------------------------------------------


class ShardedKV(Mapping[int, bytes]):
    """The shards of one sharding spec in one folder: a mapping ``chunk id -> bytes``.

    Shards are opened on first use; at most ``max_open_shards`` (default 256) stay open, the
    oldest opened being let go first (and whole shards held in memory, decompressed
    ``N.shard.gz`` files, count against ``cache_bytes`` too). Decoded minishard indices and
    shard indices live in one byte-bounded LRU cache (``cache``, or a new one of
    ``cache_bytes``, default 64 MiB) that outlives the shard readers. A missing shard file
    holds no keys. Safe to share between threads.

    Attributes:
        spec: The sharding spec.
        name: The folder's path or URL.
        cache: The :class:`~shardkit._lru.ByteLRU` of its shards.
    """

    _id_check: IdCheck | None = None  # an image scale's: ids that are not grid positions

    def __init__(self, store: _Store, spec: ShardingSpec, *, cache: ByteLRU[Any, Any] | None = None,
                 cache_bytes: int = DEFAULT_CACHE_BYTES, max_open_shards: int = 256,
                 **shard_options: Any) -> None:
        self.store = store
        self.spec = spec
        self.name = store.name
        self.cache = cache if cache is not None else ByteLRU(cache_bytes)
        self.max_open_shards = max(1, max_open_shards)
        self._options = shard_options
        self._shards: dict[int, NgShard | None] = {}
        self._held = 0  # bytes of shards held whole in memory (decompressed N.shard.gz)
        self._lock = threading.Lock()
        self._identity = spec.hash == "identity"
        self._preshift_bits = spec.preshift_bits
        self._minishard_bits = spec.minishard_bits
        self._shard_mask = (1 << spec.shard_bits) - 1
        self._minishard_mask = (1 << spec.minishard_bits) - 1
        self._cache_get = self.cache.get

    def shard(self, number: int) -> NgShard | None:
        """The reader of shard ``number``, or ``None`` if its file does not exist."""
        try:
            return self._shards[number]
        except KeyError:
            pass
        source = self.store.open(self.spec.shard_name(number),
                                 self._options.get("max_decoded_size", DEFAULT_MAX_DECODED_SIZE))
        reader = None if source is None else NgShard(
            source, self.spec, shard_number=number, cache=self.cache,
            cache_key=(id(self), number), **self._options)
        return self._keep(number, reader)

    @staticmethod
    def _in_memory(reader: NgShard | None) -> int:
        """Bytes a reader holds in memory: a whole decompressed ``N.shard.gz``, else 0."""
        if reader is None or not isinstance(reader.source, BytesSource):
            return 0
        return reader.source.size

    def _keep(self, number: int, reader: NgShard | None) -> NgShard | None:
        with self._lock:
            if number in self._shards:  # another thread opened it first
                return self._shards[number]
            held = self._in_memory(reader)
            budget = self.cache.max_bytes  # None: the open shards are bounded in number only
            while self._shards and (len(self._shards) >= self.max_open_shards or (
                    budget is not None and self._held + held > budget)):
                # let the oldest go (not closed: another thread may still be reading it; the
                # garbage collector unmaps it); its cached indices stay in the shared cache
                oldest = next(iter(self._shards))
                self._held -= self._in_memory(self._shards.pop(oldest))
            self._shards[number] = reader
            self._held += held
            return reader

    def _forget(self, number: int) -> None:
        with self._lock:
            self._held -= self._in_memory(self._shards.get(number))
            self._shards[number] = None

    def shard_numbers(self) -> list[int]:
        """Numbers of the shard files present (from a listing; all numbers if unlistable)."""
        names = self.store.list()
        if names is None:
            if self.spec.shard_bits > 16:
                raise ShardkitError(f"{self.name}: cannot list the folder, and there are "
                                    f"2**{self.spec.shard_bits} possible shard files")
            return list(range(self.spec.num_shards))
        numbers = (self.spec.parse_shard_name(n) for n in names)
        return sorted({n for n in numbers if n is not None})

    def unexpected_files(self) -> list[str]:
        """``*.shard`` files whose names are not shard names of this spec."""
        names = self.store.list() or []
        return [n for n in names if n.endswith((".shard", ".shard.gz"))
                and self.spec.parse_shard_name(n) is None]

    def _existing_shards(self) -> Iterator[NgShard]:
        for number in self.shard_numbers():
            try:
                reader = self.shard(number)
                if reader is not None:  # unlisted (URL): a missing file fails at its first read
                    reader.shard_index()
            except FileNotFoundError:
                self._forget(number)
                continue
            if reader is not None:
                yield reader

    @contextlib.contextmanager
    def naming(self, reader: NgShard) -> Iterator[None]:
        """Errors raised inside name the shard file they come from (once)."""
        try:
            yield
        except EntryNotFoundError:
            raise
        except ShardkitError as exc:
            self._name_error(exc, reader.shard_number or 0)
            raise

    def __getitem__(self, key: int) -> bytes:
        if type(key) is not int or not 0 <= key <= _MASK64:
            key = _as_key(key)
        # the hot path of random reads, inlined: hash, shard reader, cached index, bytes
        shifted = key >> self._preshift_bits
        h = shifted if self._identity else _hash64(shifted.to_bytes(8, "little"), 0, False,
                                                   False)[0]
        number = (h >> self._minishard_bits) & self._shard_mask
        minishard = h & self._minishard_mask
        try:
            reader: NgShard | None = self._shards.get(number, _MISSING)
            if reader is _MISSING:
                reader = self.shard(number)
            if reader is None:
                raise EntryNotFoundError(key, f"chunk {key} not found (no shard file "
                                         f"{self.spec.shard_name(number)})")
            index = self._cache_get((reader._key, minishard))
            if index is None:
                index = reader.minishard(minishard)
            r = index.lookup.get(key)
            if r is None:
                raise EntryNotFoundError(key, f"chunk {key} not found")
            mm = reader._mm
            if mm is not None and r[1] <= reader._mm_size and not reader._gzip_data:
                return mm[r[0] : r[1]]  # type: ignore[no-any-return]  # a slice of the mmap is bytes
            return reader._read_data(key, r[0], r[1])
        except FileNotFoundError as exc:
            self._forget(number)
            raise EntryNotFoundError(key, f"chunk {key} not found (no shard file "
                                     f"{self.spec.shard_name(number)})") from exc
        except EntryNotFoundError:
            raise
        except ShardkitError as exc:  # a damaged shard file: named
            self._name_error(exc, number)
            raise

    def _name_error(self, exc: ShardkitError, number: int) -> None:
        name = f"{self.name}/{self.spec.shard_name(number)}"
        if name not in exc.message:
            exc.message = f"{name}: {exc.message}"

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, (int, np.integer)) or isinstance(key, bool):
            return False
        if not 0 <= int(key) <= _MASK64:
            return False
        number = self.spec.locate(int(key)).shard
        try:
            reader = self.shard(number)
            return reader is not None and int(key) in reader
        except FileNotFoundError:
            self._forget(number)
            return False
        except ShardkitError as exc:  # a damaged shard file: named
            self._name_error(exc, number)
            raise

    def get_many(self, keys: Iterable[int], default: Any = _MISSING) -> list[Any]:
        """Values of many keys: grouped by shard, each shard's reads coalesced."""
        keys = [_as_key(k) for k in keys]
        out: list[Any] = [default] * len(keys)
        groups: dict[int, list[int]] = {}
        for i, k in enumerate(keys):
            groups.setdefault(self.spec.locate(k).shard, []).append(i)
        for number, slots in groups.items():
            try:
                reader = self.shard(number)
            except FileNotFoundError:
                reader = None
                self._forget(number)
            if reader is None:
                if default is _MISSING:
                    raise EntryNotFoundError(keys[slots[0]], f"chunk {keys[slots[0]]} not found")
                continue
            try:
                with self.naming(reader):
                    values = reader.get_many([keys[i] for i in slots], default)
            except FileNotFoundError as exc:
                self._forget(number)
                if default is _MISSING:
                    raise EntryNotFoundError(keys[slots[0]], f"chunk {keys[slots[0]]} not "
                                             "found") from exc
                continue
            for i, v in zip(slots, values, strict=True):
                out[i] = v
        return out

    def keys(self) -> Iterator[int]:  # type: ignore[override]  # an iterator, not a view (large stores)
        """Every chunk id of every shard (shard by shard, in index order)."""
        for reader in self._existing_shards():
            with self.naming(reader):
                yield from reader.keys()

    __iter__ = keys

    def items(self) -> Iterator[tuple[int, bytes]]:  # type: ignore[override]  # ditto
        """``(chunk id, value)`` of every chunk, shard by shard."""
        for reader in self._existing_shards():
            with self.naming(reader):
                yield from reader.items()

    def __len__(self) -> int:
        total = 0
        for reader in self._existing_shards():
            with self.naming(reader):
                total += len(reader)
        return total

    def verify(self, progress: Callable[[int, int], None] | None = None,
               check_data: bool = True,
               visit: Callable[[NgShard, int, Any], None] | None = None) -> list[Problem]:
        """:meth:`NgShard.verify` on every shard file, problems prefixed with the file name
        (``check_data=False``: gzip chunks are not decompressed, for a caller that reads
        every value anyway; ``visit(shard, m, index)`` is handed each decoded minishard
        index, to read the values without decoding the indices again)."""
        problems = [Problem("file_name", f"{name}: not a shard file name of this spec "
                            f"({self.spec.shard_name_digits} hex digits below "
                            f"{self.spec.num_shards:#x})") for name in self.unexpected_files()]
        numbers = list(self.shard_numbers())
        for done, number in enumerate(numbers, 1):
            name = self.spec.shard_name(number)
            try:  # opening can fail too (a bad N.shard.gz is decompressed when opened)
                reader = self.shard(number)
                found = [] if reader is None else reader.verify(
                    check_data=check_data, id_check=self._id_check,
                    visit=None if visit is None else functools.partial(visit, reader))
            except FileNotFoundError:
                self._forget(number)
                found = []
            except ShardkitError as exc:
                found = [Problem("read", exc.message, exc.offset, exc.field)]
            problems += [Problem(p.check, f"{name}: {p.message}", p.offset, p.field)
                         for p in found]
            if progress is not None:
                progress(done, len(numbers))
        return problems

    def sections(self) -> list[Section]:
        """Every shard file's layout, names prefixed with the file name."""
        out = []
        for reader in self._existing_shards():
            name = self.spec.shard_name(reader.shard_number or 0)
            with self.naming(reader):
                out += [Section(f"{name}{s.name}", s.start, s.end, s.note)
                        for s in reader.sections()]
        return out

    def close(self) -> None:
        """Close every open shard and empty the cache."""
        with self._lock:
            readers = list(self._shards.values())
            self._shards.clear()
            self._held = 0
        for reader in readers:
            if reader is not None:
                reader.close()
        self.cache.clear()
