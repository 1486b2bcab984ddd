"""One shard file: :class:`NgShard`."""

from __future__ import annotations

import mmap
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..._kaitai import kaitai_errors
from ..._lazy import lazy_module
from ..._lru import ByteLRU
from ...errors import EntryNotFoundError, InvalidKeyError, LayoutError, Problem, TruncatedError
from ...generated.neuroglancer_uint64_sharded import NeuroglancerUint64Sharded
from ...sources import ByteSource, BytesSource, as_stream
from ..base import Reader, Section
from .decode import MinishardIndex, _read_ranges, decode_minishard_index, empty_index, gunzip_capped
from .spec import (
    _ENTRY,
    _MASK64,
    _MAX_GAP,
    DEFAULT_BLOCK_SIZE,
    DEFAULT_CACHE_BYTES,
    DEFAULT_MAX_DECODED_SIZE,
    DEFAULT_MAX_INDEX_SIZE,
    ENTRY_SIZE,
    ENTRY_WORD,
    ShardingSpec,
)
from .verify import _BATCH_INDEX_BYTES, IdCheck, verify_shard

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_module("numpy")

# -- one shard ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChunkRef:
    """One chunk of a shard's minishard index.

    Attributes:
        chunk_id: The uint64 key.
        minishard: The minishard whose index lists it.
        start: Absolute offset of its stored bytes.
        end: One past their end.
    """

    chunk_id: int
    minishard: int
    start: int
    end: int

    @property
    def size(self) -> int:
        """Stored size (before ``data_encoding`` is undone)."""
        return self.end - self.start

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON output."""
        return {"id": self.chunk_id, "minishard": self.minishard, "start": self.start,
                "end": self.end, "size": self.size}


_MISSING: Any = object()


class NgShard(Reader):
    """One ``neuroglancer_uint64_sharded_v1`` shard file.

    Opening reads nothing. ``shard[key]`` reads the key's 16-byte shard index entry, its
    minishard index (cached, LRU-bounded) and its data: three reads at most.

    Args:
        source: The shard's bytes.
        spec: Its sharding spec (``ShardingSpec``, dict or JSON text).
        shard_number: The shard's number, for the hash checks of :meth:`verify` and for
            refusing keys of other shards; taken from the file name when it is a shard name.
        cache: The cache of decoded minishard indices and of the shard index (a
            :class:`~shardkit._lru.ByteLRU`, shared by every shard of
            a dataset); by default one of ``cache_bytes``.
        cache_bytes: Budget of this shard's own cache (default 64 MiB).
        minishard_cache_size: Also bound the number of decoded minishard indices kept
            (an older option; the byte budget always applies).
        max_decoded_size: Cap on a gunzipped chunk (default 1 GiB).
        max_index_size: Cap on a gunzipped minishard index (default 64 MiB).
        block_size: Request size of :meth:`verify` on a remote shard (default 8 MiB).
        coalesce_gap: Remote reads of many ranges (:meth:`get_many`, :meth:`items`) merge
            ranges less than this many bytes apart into one request (default 64 KiB: fewer
            requests for more bytes; 0 reads only the bytes asked for).

    Thread-safety: one shard may be shared by many threads (the cache is locked; decoded
    indices are immutable).
    """

    format_id = "neuroglancer"
    format_name = "Neuroglancer precomputed neuroglancer_uint64_sharded_v1 shard"

    def __init__(self, source: ByteSource, spec: ShardingSpec | Mapping[str, Any] | str,
                 *, shard_number: int | None = None, cache: ByteLRU[Any, Any] | None = None,
                 cache_bytes: int = DEFAULT_CACHE_BYTES, minishard_cache_size: int | None = None,
                 max_decoded_size: int = DEFAULT_MAX_DECODED_SIZE,
                 max_index_size: int = DEFAULT_MAX_INDEX_SIZE,
                 block_size: int = DEFAULT_BLOCK_SIZE, spec_from: str | None = None,
                 cache_key: Hashable = None, coalesce_gap: int = _MAX_GAP) -> None:
        super().__init__(source)
        self.spec = ShardingSpec.coerce(spec)
        if shard_number is None:
            shard_number = self.spec.parse_shard_name(source.name)
        self.shard_number = shard_number
        self.spec_from = spec_from
        self.index_size = self.spec.shard_index_size
        if minishard_cache_size is not None and cache is None:
            # the older entry-count option: a budget of that many average-sized indices
            cache_bytes = min(cache_bytes, max(0, minishard_cache_size) * 64 * 1024)
        self.cache = cache if cache is not None else ByteLRU(cache_bytes)
        self.max_decoded_size = max_decoded_size
        self.max_index_size = max_index_size
        self.block_size = block_size
        self.coalesce_gap = coalesce_gap
        self._key: Hashable = cache_key if cache_key is not None else shard_number
        self._gzip_data = self.spec.data_encoding == "gzip"
        # a memory-mapped file is sliced directly on the hot path of ShardedKV.__getitem__
        raw = getattr(source, "raw", None)
        self._mm: Any = raw if isinstance(raw, mmap.mmap) else None
        self._mm_size = len(self._mm) if self._mm is not None else 0

    # -- the shard index ----------------------------------------------------------------------

    def _check_entry(self, m: int, start: int, end: int) -> None:
        if end < start:
            raise LayoutError(f"minishard {m}: index range [{start}, {end}) ends before it "
                              "starts", offset=m * ENTRY_SIZE, field=f"/shard_index/entries/{m}")

    def shard_index(self) -> np.ndarray:
        """The whole shard index as an ``(n, 2)`` uint64 array of relative ``[start, end)``
        (one read; kept in the cache)."""
        entries = self._entries
        if entries is None:
            read_prefix = getattr(self.source, "read_prefix", None)
            if read_prefix is not None:  # remote: no request for the size
                raw = read_prefix(self.index_size)
                available = len(raw)
            else:
                available = self.source.size
                raw = b"" if available < self.index_size else \
                    self.source.read_range(0, self.index_size)
            if available < self.index_size:
                raise TruncatedError(
                    f"truncated: the shard index needs {self.index_size} bytes, the file has "
                    f"{available}", needed=self.index_size, available=available,
                    offset=0, field="/shard_index")
            entries = self._set_shard_index(raw)
        return entries

    @property
    def _entries(self) -> np.ndarray | None:
        entries: np.ndarray | None = self.cache.get((self._key, -1))
        return entries

    def _set_shard_index(self, raw: bytes) -> np.ndarray:
        entries = np.frombuffer(raw, dtype=ENTRY_WORD).reshape(-1, 2).astype(np.uint64)
        return self.cache.put((self._key, -1), entries, entries.nbytes + 128)  # type: ignore[no-any-return]  # put returns the value given

    def index_entry(self, m: int) -> tuple[int, int]:
        """Relative ``(start, end)`` of minishard ``m``'s index (one 16-byte read)."""
        entries = self._entries
        if entries is not None:
            start, end = entries[m].tolist()
        else:
            start, end = _ENTRY.unpack(self.source.read_range(m * ENTRY_SIZE,
                                                              (m + 1) * ENTRY_SIZE))
        self._check_entry(m, start, end)
        return start, end

    def kaitai_shard_index(self) -> Any:
        """The shard index parsed by the generated class (``ShardIndex(num_minishards)``)."""
        raw = self.source.read_range(0, min(self.index_size, self.source.size))
        with kaitai_errors(prefix="/shard_index"):
            return NeuroglancerUint64Sharded.ShardIndex(self.spec.num_minishards,
                                                       as_stream(BytesSource(raw)))

    def kaitai_minishard_index(self, m: int) -> Any:
        """Minishard ``m``'s index parsed by the generated class (after gunzip if needed)."""
        start, end = self.index_entry(m)
        raw = self._decoded_index_bytes(m, start, end)
        with kaitai_errors(prefix=f"/minishards/{m}/index",
                           base=self.index_size + start):
            return NeuroglancerUint64Sharded.MinishardIndex(len(raw) // 24,
                                                           as_stream(BytesSource(raw)))

    # -- minishard indices --------------------------------------------------------------------

    def _decoded_index_bytes(self, m: int, start: int, end: int,
                             raw: bytes | None = None) -> bytes:
        lo, hi = self.index_size + start, self.index_size + end
        field_ = f"/minishards/{m}/index"
        if raw is None:
            try:
                raw = self.source.read_range(lo, hi)
            except TruncatedError as exc:
                raise TruncatedError(f"minishard {m}: index [{lo}, {hi}) is past the end of "
                                     "the file", needed=hi - lo, available=exc.available,
                                     offset=lo, field=field_) from exc
        if self.spec.minishard_index_encoding == "gzip":
            raw = gunzip_capped(raw, self.max_index_size, what=f"minishard {m} index",
                                offset=lo, field=field_)
        return raw

    def _decode_minishard(self, m: int, start: int, end: int,
                          raw: bytes | None = None) -> MinishardIndex:
        if start == end:
            empty = empty_index()
            return MinishardIndex(empty.ids, empty.starts, empty.ends, self.index_size)
        raw = self._decoded_index_bytes(m, start, end, raw)
        return decode_minishard_index(raw, self.index_size, offset=self.index_size + start,
                                      field=f"/minishards/{m}/index")

    def _remember(self, m: int, index: MinishardIndex) -> MinishardIndex:
        return self.cache.put((self._key, m), index, index.nbytes)  # type: ignore[no-any-return]  # ditto

    def minishard(self, m: int) -> MinishardIndex:
        """Decoded index of minishard ``m`` (from the cache when there)."""
        index: MinishardIndex | None = self.cache.get((self._key, m))
        if index is not None:
            return index
        if not 0 <= m < self.spec.num_minishards:
            raise IndexError(f"minishard {m} out of range")
        start, end = self.index_entry(m)
        return self._remember(m, self._decode_minishard(m, start, end))

    def _load_minishards(self, wanted: Iterable[int]) -> dict[int, MinishardIndex]:
        """Many minishard indices, the missing ones read with coalesced reads (entries, then
        indices); returned whether or not the cache has room to keep them."""
        out: dict[int, MinishardIndex] = {}
        todo = []
        for m in sorted(set(wanted)):
            index = self.cache.get((self._key, m))
            if index is None:
                todo.append(m)
            else:
                out[m] = index
        if not todo:
            return out
        table = self._entries
        if table is None:
            blocks = _read_ranges(self.source, [(m * ENTRY_SIZE, (m + 1) * ENTRY_SIZE)
                                                for m in todo])
            entries = [_ENTRY.unpack(b) for b in blocks]
        else:
            entries = [tuple(table[m].tolist()) for m in todo]
        for m, (s, e) in zip(todo, entries, strict=True):
            self._check_entry(m, s, e)
        ranges = [(self.index_size + s, self.index_size + e) for s, e in entries]
        raws = _read_ranges(self.source, ranges, max_gap=self.coalesce_gap)
        for m, (s, e), raw in zip(todo, entries, raws, strict=True):
            out[m] = self._remember(m, self._decode_minishard(m, s, e, raw))
        return out

    # -- lookups ------------------------------------------------------------------------------

    def locate(self, key: int) -> ChunkRef | None:
        """Where ``key``'s bytes are, or ``None`` if this shard does not hold it."""
        loc = self.spec.locate(key)
        if self.shard_number is not None and loc.shard != self.shard_number:
            return None
        r = self.minishard(loc.minishard).lookup.get(key)
        return None if r is None else ChunkRef(key, loc.minishard, r[0], r[1])

    def _decode(self, key: int, start: int, data: bytes) -> bytes:
        if self._gzip_data:
            return gunzip_capped(data, self.max_decoded_size, what=f"chunk {key}",
                                 offset=start, field=f"/chunks/{key}")
        return data

    def _read_data(self, key: int, start: int, end: int) -> bytes:
        try:
            data = self.source.read_range(start, end)
        except TruncatedError as exc:
            raise TruncatedError(f"chunk {key}: data [{start}, {end}) is past the end of the "
                                 "file", needed=end - start, available=exc.available,
                                 offset=start, field=f"/chunks/{key}") from exc
        return self._decode(key, start, data)

    def __getitem__(self, key: int) -> bytes:
        key = _as_key(key)
        loc = self.spec.locate(key)
        if self.shard_number is not None and loc.shard != self.shard_number:
            raise EntryNotFoundError(key, f"chunk {key} belongs to shard "
                                     f"{self.spec.shard_name(loc.shard)}, not this one")
        return self._get_located(key, loc.minishard)

    def _get_located(self, key: int, minishard: int) -> bytes:
        """The value of ``key``, already known to hash to this shard and ``minishard``."""
        index: MinishardIndex | None = self.cache.get((self._key, minishard))
        if index is None:
            index = self.minishard(minishard)
        r = index.lookup.get(key)
        if r is None:
            raise EntryNotFoundError(key, f"chunk {key} not found")
        return self._read_data(key, r[0], r[1])

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, (int, np.integer)) or isinstance(key, bool):
            return False
        if not 0 <= int(key) <= _MASK64:
            return False
        return self.locate(int(key)) is not None

    def get_many(self, keys: Iterable[int], default: Any = _MISSING) -> list[Any]:
        """Values of many keys, with coalesced reads (index entries, indices, then data)."""
        keys = [_as_key(k) for k in keys]
        locs = [self.spec.locate(k) for k in keys]
        indices = self._load_minishards(
            loc.minishard for loc in locs
            if self.shard_number is None or loc.shard == self.shard_number)
        out: list[Any] = [default] * len(keys)
        want: list[tuple[int, int, int]] = []  # (slot, start, end)
        for i, (key, loc) in enumerate(zip(keys, locs, strict=True)):
            r = None
            if self.shard_number is None or loc.shard == self.shard_number:
                r = indices[loc.minishard].lookup.get(key)
            if r is None:
                if default is _MISSING:
                    raise EntryNotFoundError(key, f"chunk {key} not found")
                continue
            want.append((i, r[0], r[1]))
        datas = _read_ranges(self.source, [(s, e) for _, s, e in want], max_gap=self.coalesce_gap)
        for (i, s, _), data in zip(want, datas, strict=True):
            out[i] = self._decode(keys[i], s, data)
        return out

    def iter_minishards(self) -> Iterator[tuple[int, MinishardIndex]]:
        """``(minishard, decoded index)`` of every non-empty minishard, in minishard order.

        The stored indices are read a batch at a time (up to 256 minishards and 4 MiB of
        stored bytes, coalesced reads) and decoded one at a time as they are yielded, so
        memory holds one batch of stored bytes and one decoded index whatever the shard's
        size (decoded indices already in the cache are used; new ones are not kept, so a
        walk over a large shard does not evict what lookups cached).
        """
        entries = self.shard_index()
        nonempty = np.flatnonzero(entries[:, 0] != entries[:, 1]).tolist()
        if not nonempty:
            return
        stored = (entries[:, 1] - entries[:, 0]).tolist()
        batch: list[int] = []
        size = 0
        for m in [*nonempty, None]:
            if batch and (m is None or len(batch) >= 256
                          or size + stored[m] > _BATCH_INDEX_BYTES):
                yield from self._decode_batch(batch, entries)
                batch, size = [], 0
            if m is not None:
                batch.append(m)
                size += stored[m]

    def _decode_batch(self, batch: list[int],
                      entries: np.ndarray) -> Iterator[tuple[int, MinishardIndex]]:
        # one look at the cache per minishard: another thread may evict an index between two
        cached = {m: self.cache.get((self._key, m)) for m in batch}
        todo = [m for m in batch if cached[m] is None]
        spans = {m: tuple(entries[m].tolist()) for m in todo}
        for m, (s, e) in spans.items():
            self._check_entry(m, s, e)
        raws = dict(zip(todo, _read_ranges(
            self.source, [(self.index_size + s, self.index_size + e) for s, e in spans.values()],
            max_gap=self.coalesce_gap), strict=True))
        for m in batch:
            index: MinishardIndex | None = cached[m]
            if index is None:
                s, e = spans[m]
                index = self._decode_minishard(m, s, e, raws.pop(m))
            yield m, index

    def iter_chunks(self) -> Iterator[ChunkRef]:
        """Every chunk of the shard, minishard by minishard, in index order."""
        for m, index in self.iter_minishards():
            base = index.base
            for cid, s, e in zip(index.ids.tolist(), index.starts.tolist(),
                                 index.ends.tolist(), strict=True):
                yield ChunkRef(cid, m, base + s, base + e)

    def keys(self) -> Iterator[int]:
        """Chunk ids, in index order."""
        for ref in self.iter_chunks():
            yield ref.chunk_id

    __iter__ = keys

    def __len__(self) -> int:
        return sum(len(index) for _, index in self.iter_minishards())

    def items(self, batch_bytes: int = 1 << 24) -> Iterator[tuple[int, bytes]]:
        """``(chunk id, value)`` for every chunk; reads are coalesced ``batch_bytes`` at a time."""
        if getattr(self.source, "view", None) is not None:  # mapped or in memory: no batching
            read = self.source.read_range
            for ref in self.iter_chunks():
                try:
                    data = read(ref.start, ref.end)
                except TruncatedError as exc:
                    raise TruncatedError(f"chunk {ref.chunk_id}: data [{ref.start}, "
                                         f"{ref.end}) is past the end of the file",
                                         offset=ref.start,
                                         field=f"/chunks/{ref.chunk_id}") from exc
                yield ref.chunk_id, self._decode(ref.chunk_id, ref.start, data)
            return
        batch: list[ChunkRef] = []
        size = 0
        for ref in self.iter_chunks():
            batch.append(ref)
            size += ref.size
            if size >= batch_bytes:
                yield from self._read_batch(batch)
                batch, size = [], 0
        yield from self._read_batch(batch)

    def _read_batch(self, refs: list[ChunkRef]) -> Iterator[tuple[int, bytes]]:
        datas = _read_ranges(self.source, [(r.start, r.end) for r in refs],
                             max_gap=self.coalesce_gap)
        for ref, data in zip(refs, datas, strict=True):
            yield ref.chunk_id, self._decode(ref.chunk_id, ref.start, data)

    # -- CLI hooks ------------------------------------------------------------------------------

    @staticmethod
    def format_key(key: int) -> str:
        """Keys print in decimal."""
        return str(key)

    @staticmethod
    def parse_key(text: str) -> int:
        """A key from the command line: decimal, or ``0x`` hex."""
        return _parse_key(text)

    def summary(self) -> dict[str, Any]:
        """Format, spec, shard number and counts (reads the whole index)."""
        entries = self.shard_index()
        nonempty = int(np.count_nonzero(entries[:, 0] != entries[:, 1]))
        return {
            "format": self.format_name,
            "file": self.source.name,
            "size": self.source.size,
            "sharding": self.spec.to_dict(),
            **({"spec_from": self.spec_from} if self.spec_from else {}),
            "shard_number": self.shard_number,
            "num_minishards": self.spec.num_minishards,
            "nonempty_minishards": nonempty,
            "chunk_count": len(self),
        }

    def sections(self) -> list[Section]:
        """The byte layout: shard index, minishard indices and chunk data, in file order."""
        entries = self.shard_index()
        out = [Section("/shard_index", 0, self.index_size,
                       f"{self.spec.num_minishards} entries x 16 bytes")]
        for m in range(len(entries)):
            s, e = entries[m].tolist()
            if s != e:
                enc = self.spec.minishard_index_encoding
                out.append(Section(f"/minishards/{m}/index", self.index_size + s,
                                   self.index_size + e,
                                   f"{len(self.minishard(m))} chunks, {enc}"))
        for ref in self.iter_chunks():
            out.append(Section(f"/minishards/{ref.minishard}/chunks/{ref.chunk_id}",
                               ref.start, ref.end, self.spec.data_encoding))
        out.sort(key=lambda s: (s.start, s.end))
        return out

    def to_dict(self) -> dict[str, Any]:
        """The shard's tree: spec, shard index entries and every chunk's range."""
        entries = self.shard_index()
        minishards = []
        for m in range(len(entries)):
            s, e = entries[m].tolist()
            if s == e:
                continue
            minishards.append({
                "minishard": m,
                "index": {"start": self.index_size + s, "end": self.index_size + e},
                "chunks": [{"id": int(cid), "start": self.index_size + int(a),
                            "end": self.index_size + int(b)}
                           for cid, a, b in zip(self.minishard(m).ids.tolist(),
                                                self.minishard(m).starts.tolist(),
                                                self.minishard(m).ends.tolist(), strict=True)],
            })
        return {"format": self.format_id, "file": self.source.name,
                "sharding": self.spec.to_dict(), "shard_number": self.shard_number,
                "num_minishards": self.spec.num_minishards, "minishards": minishards}

    # -- verify -------------------------------------------------------------------------------

    def verify(self, progress: Callable[[int, int], None] | None = None,
               check_data: bool = True, id_check: IdCheck | None = None,
               visit: Callable[[int, MinishardIndex], None] | None = None) -> list[Problem]:
        """Every check; returns the problems found (``[]`` when sound).

        Checks: the shard index fits; every entry is ordered, inside the file and does not
        overlap another minishard index; every minishard index decodes (gzip included); every
        chunk id hashes to this shard (when its number is known) and to the minishard whose
        index lists it; no id appears twice; every data range lies inside the file and off the
        indices; with ``check_data``, every gzip chunk decompresses; with ``id_check``
        (``ids -> (mask, why)``), every chunk id is one the dataset can hold; ``visit(m,
        index)`` is handed each decoded minishard index.
        """
        return verify_shard(self, progress, check_data, self.block_size, id_check, visit)


def _as_key(key: Any) -> int:
    if isinstance(key, bool) or not isinstance(key, (int, np.integer)):
        raise EntryNotFoundError(key, f"chunk ids are integers, got {type(key).__name__}")
    value = int(key)
    if not 0 <= value <= _MASK64:
        raise EntryNotFoundError(value, f"chunk id {value} is not a uint64")
    return value


def _parse_key(text: str) -> int:
    try:
        value = int(text, 16) if text.lower().startswith("0x") else int(text, 10)
    except ValueError as exc:
        raise InvalidKeyError(f"not a chunk id (decimal or 0x hex): {text!r}") from exc
    if not 0 <= value <= _MASK64:
        raise InvalidKeyError(f"chunk id {text} is not a uint64")
    return value
