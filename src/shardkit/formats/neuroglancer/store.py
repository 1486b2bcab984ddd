"""Where a dataset's files live: a local folder or an fsspec URL, read with ranged requests.

A remote shard is a :class:`~shardkit.remote.RemoteSource` with ``exact=True`` (and a
``read_prefix``): nothing is asked when it is opened, every read is exactly its range requests
(a lookup costs three), a missing file raises ``FileNotFoundError``
(:class:`~shardkit.remote.RemoteNotFoundError`) from the first read, and a server that ignores
``Range`` is handled as for every URL (read whole up to ``max_whole_read``, with a
:class:`~shardkit.errors.WholeFileReadWarning`; refused above).
"""

from __future__ import annotations

import builtins
import os
import posixpath
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import LimitExceededError, ShardkitError
from ...remote import DEFAULT_MAX_WHOLE_READ, RemoteSource, io_errors
from ...sources import ByteSource, BytesSource, FileSource
from .decode import gunzip_capped
from .spec import DEFAULT_MAX_DECODED_SIZE


class _ShardSource(RemoteSource):
    """A dataset's remote shard: an exact :class:`~shardkit.remote.RemoteSource` that also
    offers ``read_prefix`` (:meth:`~shardkit.remote.RemoteSource.read_head`), with which the
    shard reader and verify read the shard index, and verify its first block, with no
    ``HEAD``."""

    def read_prefix(self, n: int) -> bytes:
        """Up to ``n`` bytes from the start, in one request (see ``read_head``)."""
        return self.read_head(n)


_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def check_relative(name: str, field: str, *, allow_external: bool = False) -> str:
    """A path from an ``info`` file, checked to stay inside the dataset folder.

    Refused: empty names, absolute paths, URLs or ``scheme:`` prefixes (another host or
    filesystem), NUL and backslashes, and, unless ``allow_external``, ``..`` components that
    climb out of the folder (``a/../b`` stays inside and is allowed).

    Returns:
        The normalised relative path.

    Raises:
        SpecError: Naming ``field``.
    """
    from .spec import SpecError

    if not isinstance(name, str) or not name.strip("/"):
        raise SpecError(f"info: {field} must be a non-empty relative path, got {name!r}",
                        field=field)
    if "\x00" in name or "\\" in name:
        raise SpecError(f"info: {field} {name!r} holds a NUL or a backslash", field=field)
    if name.startswith("/") or _SCHEME.match(name) or "://" in name:
        raise SpecError(f"info: {field} {name!r} points outside the dataset (an absolute path "
                        "or a URL); only paths relative to the dataset folder are followed",
                        field=field)
    norm = posixpath.normpath(name)
    if (norm == ".." or norm.startswith("../")) and not allow_external:
        raise SpecError(f"info: {field} {name!r} climbs out of the dataset folder; pass "
                        "allow_external=True to follow it", field=field)
    return norm


class _Store:
    """A dataset folder: a local directory or an fsspec URL.

    The folder listing is made once and kept (``shardkit`` never lists a folder twice).
    """

    def __init__(self, target: str | os.PathLike[str],
                 storage_options: Mapping[str, Any] | None = None, *,
                 max_whole_read: int = DEFAULT_MAX_WHOLE_READ) -> None:
        text = os.fspath(target)
        self.max_whole_read = max_whole_read
        self.name = text.rstrip("/") or text
        self.fs: Any = None
        self.root = self.name
        self._listing: list[str] | bool | None = False
        self._lock = threading.Lock()
        if "://" in text:
            import fsspec

            try:
                self.fs, root = fsspec.core.url_to_fs(text, **dict(storage_options or {}))
            except (ImportError, ValueError) as exc:
                raise ShardkitError(f"cannot open {text}: {exc}") from exc
            self.root = root.rstrip("/")

    @property
    def remote(self) -> bool:
        """True for an fsspec URL (anything but a local folder)."""
        return self.fs is not None

    def sub(self, name: str) -> _Store:
        """The store of a subfolder (``name`` must have passed :func:`check_relative`)."""
        child = object.__new__(_Store)
        child.fs = self.fs
        child.name = f"{self.name}/{name}"
        name = posixpath.normpath(name)
        child.root = f"{self.root}/{name}" if self.root else name
        if self.fs is None:
            child.root = os.path.normpath(os.path.join(self.root, name))
        child._listing = False
        child._lock = threading.Lock()
        child.max_whole_read = self.max_whole_read
        return child

    def _path(self, name: str) -> str:
        return f"{self.root}/{name}" if self.fs is not None else os.path.join(self.root, name)

    def read_bytes(self, name: str, limit: int | None = None) -> bytes:
        """The whole file ``name``; a local file longer than ``limit`` is refused unread (a
        remote one once fetched)."""
        path = self._path(name)
        try:
            if self.fs is None:
                with open(path, "rb") as fh:
                    data = fh.read() if limit is None else fh.read(limit + 1)
            else:
                data = bytes(self.fs.cat_file(path))
        except FileNotFoundError as exc:
            raise ShardkitError(f"{self.name}/{name}: not found") from exc
        except Exception as exc:
            raise ShardkitError(f"cannot read {self.name}/{name}: {exc}") from exc
        if limit is not None and len(data) > limit:
            raise LimitExceededError(f"{self.name}/{name}: more than {limit} bytes")
        return data

    def open(self, name: str, max_decoded_size: int = DEFAULT_MAX_DECODED_SIZE
             ) -> ByteSource | None:
        """A source for file ``name``; ``None`` when a local file does not exist (remote files
        are not checked: the first read of a missing one raises ``FileNotFoundError``).

        A local ``name`` that is missing while ``name.gz`` exists (cloud-volume writes a whole
        file gzipped under that name when asked to compress) is read from ``name.gz``,
        decompressed in memory (at most ``max_decoded_size`` bytes).
        """
        path = self._path(name)
        if self.fs is None:
            if os.path.isfile(path):
                return FileSource(path)
            if os.path.isfile(path + ".gz"):
                data = gunzip_capped(Path(path + ".gz").read_bytes(), max_decoded_size,
                                     what=f"{self.name}/{name}.gz")
                return BytesSource(data, f"{self.name}/{name}.gz")
            return None
        return _ShardSource(f"{self.name}/{name}", fs=self.fs, path=path, exact=True,
                            max_whole_read=self.max_whole_read, warn_whole=True)

    def list(self) -> list[str] | None:
        """Names of the files in the folder, or ``None`` when it cannot be listed (made once)."""
        with self._lock:
            if self._listing is False:
                self._listing = self._list()
            return None if self._listing is None else list(self._listing)  # type: ignore[arg-type]  # not False once listed

    def _list(self) -> builtins.list[str] | None:
        try:
            if self.fs is None:
                return sorted(os.listdir(self.root))
            return sorted(os.path.basename(p.rstrip("/"))
                          for p in self.fs.ls(self.root, detail=False))
        except io_errors():  # unlistable (not a folder, no access, an HTTP server without
            return None      # indexes): the caller goes without a listing


@dataclass(frozen=True)
class _SourceName:
    """What ``reader.source`` is for a dataset: a name, and nothing to close."""

    name: str

    def close(self) -> None:
        pass
