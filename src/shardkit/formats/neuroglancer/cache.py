"""A thread-safe LRU cache bounded by bytes: decoded minishard indices and shard indices.

One :class:`ByteLRU` is shared by every shard of a dataset (``cache_bytes=``, default
:data:`~shardkit.formats.neuroglancer.spec.DEFAULT_CACHE_BYTES`, 64 MiB); a bare
:class:`~shardkit.formats.neuroglancer.shard.NgShard` has its own. Entries are charged their
estimated memory (:func:`index_nbytes`); the least recently used are dropped first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

from .spec import DEFAULT_CACHE_BYTES

__all__ = ["ByteLRU"]


class ByteLRU:
    """An LRU mapping whose entries' sizes add up to at most ``max_bytes``.

    An entry larger than the whole budget is not kept. Every method is thread-safe.

    Attributes:
        max_bytes: The budget.
        hits: Lookups answered from the cache.
        misses: Lookups that were not.
    """

    def __init__(self, max_bytes: int = DEFAULT_CACHE_BYTES) -> None:
        if type(max_bytes) is not int or max_bytes < 0:
            raise ValueError(f"cache_bytes must be a non-negative integer, got {max_bytes!r}")
        self.max_bytes = max_bytes
        self.hits = 0
        self.misses = 0
        self._data: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Any:
        """The value of ``key`` (now the most recently used), or ``None``.

        Lock-free: each step is one atomic operation on the ordered dict (an entry evicted
        meanwhile is still returned, once); ``hits``/``misses`` are approximate under
        threads.
        """
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

    def put(self, key: Hashable, value: Any, nbytes: int) -> Any:
        """Keep ``value`` under ``key``, charged ``nbytes``; returns ``value``."""
        if nbytes > self.max_bytes:
            return value
        with self._lock:
            old = self._data.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._data[key] = (value, nbytes)
            self._bytes += nbytes
            while self._bytes > self.max_bytes:
                _, (_, size) = self._data.popitem(last=False)
                self._bytes -= size
        return value

    @property
    def nbytes(self) -> int:
        """Bytes charged to the entries held now."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._data)

    def clear(self) -> None:
        """Drop every entry."""
        with self._lock:
            self._data.clear()
            self._bytes = 0

    def __repr__(self) -> str:
        return (f"<ByteLRU {len(self)} entries, {self._bytes}/{self.max_bytes} bytes, "
                f"{self.hits} hits, {self.misses} misses>")
