"""Where Amudai DataRefs lead: windows of a file (nested shards), the files a shard references."""

from __future__ import annotations

import io
import os
import posixpath
import threading
from typing import Any, cast

from kaitaistruct import KaitaiStream

from ...errors import (
    LayoutError,
    LimitExceededError,
    ShardkitError,
    TruncatedError,
)
from ...sources import ByteSource, open_source
from .model import _SCHEME, MAX_BUFFER, DataRefInfo


class _Window:
    """Bytes ``[start, end)`` of another source, seen as a whole file (a nested shard)."""

    def __init__(self, inner: ByteSource, start: int, end: int) -> None:
        self.inner = inner
        self.start = start
        self.end = end
        self.name = inner.name

    @property
    def size(self) -> int:
        return self.end - self.start

    def _check(self, start: int, end: int) -> None:
        if start < 0 or end < start or end > self.size:
            raise TruncatedError(f"bytes [{start}, {end}) of a {self.size}-byte nested shard",
                                 offset=start, needed=end - start,
                                 available=max(0, self.size - start))

    def read_range(self, start: int, end: int) -> bytes:
        self._check(start, end)
        return self.inner.read_range(self.start + start, self.start + end)

    def view(self, start: int, end: int) -> bytes | memoryview:
        self._check(start, end)
        view = getattr(self.inner, "view", None)
        if view is not None:
            return cast("bytes | memoryview", view(self.start + start, self.start + end))
        return self.inner.read_range(self.start + start, self.start + end)

    def close(self) -> None:
        """Nothing to release: the source underneath belongs to the parent shard."""


class _Known:
    """A source some of whose ranges were already read (``known``: ``(start, bytes)``
    pairs): reads inside one are served from memory, any other from ``inner``. The generated
    parser reads the frame and ``len_directory`` of a root file through it at no extra I/O."""

    def __init__(self, inner: ByteSource, known: list[tuple[int, bytes]]) -> None:
        self.inner = inner
        self.name = inner.name
        self.known = known

    @property
    def size(self) -> int:
        return self.inner.size

    def read_range(self, start: int, end: int) -> bytes:
        for lo, data in self.known:
            if lo <= start <= end <= lo + len(data):
                return data[start - lo : end - lo]
        return self.inner.read_range(start, end)

    def close(self) -> None:
        """Nothing to release: the source underneath belongs to the shard."""


class _Blobs:
    """Opens the blobs DataRefs name, safely, and reads checked ranges from them.

    ``budget`` (a one-item list) counts the files opened; nested shards share their root's, so
    ``max_files`` bounds the whole tree of shards.
    """

    def __init__(self, root: ByteSource, allow_external: bool, max_files: int,
                 storage_options: dict[str, Any], budget: list[int] | None = None) -> None:
        self.root = root
        self.allow_external = allow_external
        self.max_files = max_files
        self.storage_options = storage_options
        self.budget = budget if budget is not None else [0]
        self.opened: dict[str, ByteSource] = {}
        self._lock = threading.RLock()
        name = root.name
        self.is_url = "://" in name
        self.root_base = posixpath.basename(name) if self.is_url else os.path.basename(name)

    def _is_self(self, url: str) -> bool:
        tail = url.rstrip("/").replace("\\", "/").rsplit("/", 1)[-1]
        return bool(self.root_base) and tail == self.root_base

    def source(self, url: str, field: str) -> ByteSource:
        """The source ``url`` names (relative to the root file's folder)."""
        if not url or self._is_self(url):
            return self.root
        with self._lock:  # threads sharing a shard open each file once
            if url in self.opened:
                return self.opened[url]
            return self._open(url, field)

    def _open(self, url: str, field: str) -> ByteSource:
        if any(c < " " or c == "\x7f" for c in url):
            raise LayoutError(f"DataRef url {url!r} holds control characters", field=field)
        parts = url.replace("\\", "/").split("/")
        external = bool(_SCHEME.match(url)) or url.startswith(("/", "\\")) or ".." in parts
        if external and not self.allow_external:
            raise LayoutError(f"DataRef url {url!r} leaves the shard's folder (absolute path, "
                              "URL scheme or '..'); open with allow_external=True to follow it",
                              field=field)
        if self.budget[0] >= self.max_files:
            raise LimitExceededError(f"more than {self.max_files} files referenced",
                                     field=field)
        absolute = bool(_SCHEME.match(url)) or url.startswith(("/", "\\"))
        if absolute:
            target = url
        elif self.is_url:
            target = posixpath.join(posixpath.dirname(self.root.name), url)
        elif self.root.name.startswith("<"):
            raise LayoutError(f"DataRef url {url!r} is relative, but the shard was opened from "
                              "memory (no folder to resolve it in)", field=field)
        else:
            target = os.path.join(os.path.dirname(self.root.name), *parts)
        root = self.root
        while not hasattr(root, "cache_bytes") and hasattr(root, "inner"):
            root = root.inner  # through wrappers (a CountingSource, a _Window) to the remote
        io_options = {k: getattr(root, attr) for k, attr in (
            ("block_size", "block_size"), ("cache", "cache_bytes"),
            ("concurrency", "concurrency"), ("retries", "retries"),
            ("max_whole_read", "max_whole_read"))
            if isinstance(getattr(root, attr, None), int)} if "://" in target else None
        try:  # a remote stripe file is read as its root is (same block size, cache, ...)
            src = open_source(target, io_options=io_options or None, **self.storage_options)
        except ShardkitError as exc:
            if getattr(exc, "transient", False):
                raise  # a network failure (RemoteError, retried): unreadable, not corrupt
            raise LayoutError(f"cannot open DataRef url {url!r}: {exc.message}",
                              field=field) from exc
        except OSError as exc:
            raise LayoutError(f"cannot open DataRef url {url!r}: {exc}", field=field) from exc
        self.opened[url] = src
        self.budget[0] += 1
        return src

    def locate(self, ref: DataRefInfo, field: str, limit: int = MAX_BUFFER) -> ByteSource:
        """The source of ``ref`` after checking its range against the source's size."""
        src = self.source(ref.url, field)
        if ref.end < ref.start:
            raise LayoutError(f"DataRef range [{ref.start}, {ref.end}) ends before it starts",
                              offset=ref.start, field=field)
        if ref.end > src.size:
            raise LayoutError(f"DataRef [{ref.start}, {ref.end}) lies past the end of "
                              f"{src.name} ({src.size} bytes)", offset=ref.start, field=field)
        if ref.end - ref.start > limit:
            raise LimitExceededError(f"DataRef of {ref.end - ref.start} bytes exceeds the "
                                     f"{limit}-byte cap", offset=ref.start, field=field)
        return src

    def read(self, ref: DataRefInfo, field: str, limit: int = MAX_BUFFER) -> bytes:
        """The bytes of ``ref`` after checking its range against its target's size."""
        src = self.locate(ref, field, limit)
        view = getattr(src, "view", None)
        if view is not None:
            return cast(bytes, view(ref.start, ref.end))
        return src.read_range(ref.start, ref.end)

    def close(self) -> None:
        for src in self.opened.values():
            src.close()
        self.opened.clear()


def _ks_stream(data: bytes | memoryview) -> KaitaiStream:
    return KaitaiStream(io.BytesIO(bytes(data)))


