"""The one LRU cache of shardkit: a mapping bounded by bytes (and, where asked, by entries).

Every cache of the library is a :class:`ByteLRU`: the blocks a
:class:`~shardkit.remote.RemoteSource` keeps (``cache=`` bytes), the aligned blocks of a
:class:`~shardkit.sources.CountingSource`, the verify blocks of the SWH reader, the decoded
blocks of the ZS and ZSS readers (``cache_blocks=`` and ``cache_index_blocks=`` entries), the
decoded indices of a Neuroglancer dataset (``cache_bytes=``) and the blocks MOSAIC's verify
reads. The few dicts kept elsewhere are memos of parsed values (not bytes), each saying why at
its place: one entry per stripe or index, a fixed cap, or a hot loop that reads it inline.

Each entry is charged a size in bytes: ``len(value)`` by default, or what :meth:`ByteLRU.put`
is told (a decoded index is charged its estimated memory). When the entries add up to more
than ``max_bytes``, or there are more than ``max_items`` of them, the least recently used are
dropped first; an entry larger than the whole byte budget is not kept at all. A bound of
``None`` is no bound; 0 keeps nothing.

Threads: :meth:`~ByteLRU.put`, :meth:`~ByteLRU.pop` and :meth:`~ByteLRU.clear` take a lock;
:meth:`~ByteLRU.get` does not (each of its steps is one atomic operation on the ordered dict,
so a hot lookup costs no lock): an entry evicted by another thread meanwhile is still
returned, once, and ``hits``/``misses`` are approximate when threads share the cache.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from typing import Generic, TypeVar

__all__ = ["ByteLRU"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def _bound(name: str, value: int | None) -> int | None:
    if value is None:
        return None
    if type(value) is not int or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    return value


class ByteLRU(Generic[K, V]):
    """An LRU mapping whose entries add up to at most ``max_bytes`` (and ``max_items``).

    Args:
        max_bytes: Bytes the entries may add up to (``None``: no byte bound).
        max_items: Entries kept at most (``None``: no count bound).
        on_evict: Called with ``(key, value)`` of each entry dropped to stay within the
            budgets (under the cache's lock; e.g. to reuse the buffer behind a value).

    Attributes:
        max_bytes: The byte budget (``None``: none).
        max_items: The entry budget (``None``: none).
        hits: :meth:`get` calls answered from the cache.
        misses: :meth:`get` calls that were not.
        evictions: Entries dropped to stay within the budgets.
    """

    def __init__(self, max_bytes: int | None, *, max_items: int | None = None,
                 on_evict: Callable[[K, V], None] | None = None) -> None:
        self.max_bytes = _bound("cache_bytes", max_bytes)
        self.max_items = _bound("max_items", max_items)
        self.on_evict = on_evict
        self.hits = 0
        self.misses = 0
        self.evictions = 0
        self._data: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        """The value of ``key`` (now the most recently used), or ``None``; counted."""
        entry = self._data.get(key)
        if entry is None:
            self.misses += 1
            return None
        try:  # noqa: SIM105 - contextlib.suppress costs more on this hot path
            self._data.move_to_end(key)
        except KeyError:  # evicted by another thread since
            pass
        self.hits += 1
        return entry[0]

    def __contains__(self, key: object) -> bool:
        """Whether ``key`` is held (neither counted nor made recent)."""
        return key in self._data

    def put(self, key: K, value: V, nbytes: int | None = None) -> V:
        """Keep ``value`` under ``key``, charged ``nbytes`` (default ``len(value)``), as the
        most recently used; drop the least recently used beyond the budgets. Returns
        ``value``."""
        size = len(value) if nbytes is None else nbytes  # type: ignore[arg-type]  # V is sized when nbytes is not given
        if (self.max_bytes is not None and size > self.max_bytes) or self.max_items == 0:
            return value
        with self._lock:
            old = self._data.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._data[key] = (value, size)
            self._bytes += size
            self._shrink()
        return value

    def _shrink(self) -> None:
        data = self._data
        while data and ((self.max_bytes is not None and self._bytes > self.max_bytes)
                        or (self.max_items is not None and len(data) > self.max_items)):
            key, (value, size) = data.popitem(last=False)
            self._bytes -= size
            self.evictions += 1
            if self.on_evict is not None:
                self.on_evict(key, value)

    def pop(self, key: K) -> V | None:
        """Drop ``key``; its value, or ``None`` when it was not held."""
        with self._lock:
            old = self._data.pop(key, None)
            if old is None:
                return None
            self._bytes -= old[1]
            return old[0]

    @property
    def nbytes(self) -> int:
        """Bytes charged to the entries held now."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._data)

    def values(self) -> list[V]:
        """The values held, least recently used first (a copy)."""
        with self._lock:
            return [v for v, _ in self._data.values()]

    def __iter__(self) -> Iterator[K]:
        """The keys held, least recently used first (a copy)."""
        with self._lock:
            return iter(list(self._data))

    def clear(self) -> None:
        """Drop every entry (the counters stay)."""
        with self._lock:
            self._data.clear()
            self._bytes = 0

    def __repr__(self) -> str:
        cap = "unbounded" if self.max_bytes is None else str(self.max_bytes)
        items = "" if self.max_items is None else f" (at most {self.max_items})"
        return (f"<ByteLRU {len(self)} entries{items}, {self._bytes}/{cap} bytes, "
                f"{self.hits} hits, {self.misses} misses>")
