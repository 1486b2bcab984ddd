"""Where a dataset's files live: a local folder or an fsspec URL, read with ranged requests."""

from __future__ import annotations

import builtins
import os
import posixpath
import re
import threading
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import LimitExceededError, ShardkitError, TruncatedError
from ...remote import DEFAULT_MAX_WHOLE_READ, ignored_range_error, whole_read_notice
from ...sources import ByteSource, BytesSource, FileSource
from .decode import gunzip_capped
from .spec import DEFAULT_MAX_DECODED_SIZE

# -- byte sources for datasets ------------------------------------------------------------------


class RangeSource:
    """A file behind any fsspec URL, read only with ranged ``cat_file`` requests.

    Unlike :class:`~shardkit.sources.FsspecSource` it asks nothing on construction: the size is
    fetched on first use of :attr:`size` only, so a lookup costs exactly its range requests.
    A missing file raises ``FileNotFoundError`` from the first read.
    :meth:`read_ranges` fetches many ranges at once (concurrently on async filesystems such as
    HTTP, S3 and GCS, through fsspec's ``cat_ranges``).

    A server that ignores ``Range`` (``python -m http.server``) answers with the whole file:
    up to ``max_whole_read`` bytes it is kept and every later read is served from it
    (:attr:`read_whole`); above that the read is refused with a message saying what to do.
    """

    def __init__(self, fs: Any, path: str, name: str,
                 max_whole_read: int = DEFAULT_MAX_WHOLE_READ) -> None:
        self.fs = fs
        self.path = path
        self.name = name
        self.max_whole_read = max_whole_read
        self._size: int | None = None
        self._whole: bytes | None = None

    @property
    def read_whole(self) -> bool:
        """True when the server ignored ``Range`` and the file was read whole."""
        return self._whole is not None

    @property
    def size(self) -> int:
        if self._whole is not None:
            return len(self._whole)
        if self._size is None:
            try:
                self._size = int(self.fs.size(self.path))
            except FileNotFoundError:
                raise
            except Exception as exc:
                raise ShardkitError(f"cannot stat {self.name}: {exc}") from exc
        return self._size

    def _check(self, start: int, end: int) -> None:
        if start < 0 or end < start:
            raise ShardkitError(f"invalid byte range [{start}, {end}) of {self.name}")
        if self._size is not None and end > self._size:
            raise TruncatedError(f"truncated: needs bytes up to {end}, the file has "
                                 f"{self._size}", needed=end - start,
                                 available=max(0, self._size - start), offset=start)

    def _got(self, start: int, end: int, data: Any) -> bytes:
        if isinstance(data, FileNotFoundError):
            raise data
        if isinstance(data, BaseException):
            raise TruncatedError(f"cannot read bytes [{start}, {end}) of {self.name}: {data}",
                                 needed=end - start, offset=start) from data
        if len(data) > end - start:  # the whole file: the server ignores Range
            if len(data) > self.max_whole_read:
                raise ignored_range_error(self.name, start, end, len(data),
                                          self.max_whole_read, status=None)
            self._whole = bytes(data)
            self._size = len(data)
            warnings.warn(whole_read_notice(self.name, len(data), self.max_whole_read),
                          stacklevel=3)
            self._check(start, end)
            return self._whole[start:end]
        if len(data) != end - start:
            raise TruncatedError(f"truncated: needs bytes up to {end}, got "
                                 f"{start + len(data)}", needed=end - start,
                                 available=len(data), offset=start)
        return bytes(data)

    def read_range(self, start: int, end: int) -> bytes:
        self._check(start, end)
        if start == end:
            return b""
        if self._whole is not None:
            return self._whole[start:end]
        try:
            data = self.fs.cat_file(self.path, start=start, end=end)
        except FileNotFoundError:
            raise
        except Exception as exc:  # noqa: BLE001 - turned into a shardkit error by _got
            data = exc
        return self._got(start, end, data)

    def read_ranges(self, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
        """Many ranges, each fetched as asked (coalesce first), concurrently where possible."""
        for s, e in ranges:
            self._check(s, e)
        wanted = [(s, e) for s, e in ranges if e > s]
        if len(wanted) <= 1 or self._whole is not None:
            return [self.read_range(s, e) for s, e in ranges]
        try:
            datas = self.fs.cat_ranges([self.path] * len(wanted), [s for s, _ in wanted],
                                       [e for _, e in wanted], on_error="return")
        except FileNotFoundError:
            raise
        except Exception as exc:  # noqa: BLE001 - turned into a shardkit error by _got
            datas = [exc] * len(wanted)
        got = iter(self._got(s, e, d) for (s, e), d in zip(wanted, datas, strict=True))
        return [next(got) if e > s else b"" for s, e in ranges]

    def read_prefix(self, n: int) -> bytes:
        """Up to ``n`` bytes from the start, in one request; learns the size when it is
        shorter (so a small file costs one request and no ``HEAD``)."""
        if self._size is not None:
            return self.read_range(0, min(n, self._size))
        try:
            data = bytes(self.fs.cat_file(self.path, start=0, end=n))
            if len(data) > n:  # the whole file: the server ignores Range
                return self._got(0, n, data)
        except FileNotFoundError:
            raise
        except io_errors() as exc:  # e.g. 416 for an empty file: ask for the size
            try:
                return self.read_range(0, min(n, self.size))
            except ShardkitError as again:
                raise again from exc  # the first failure stays in the chain
        if len(data) < n:
            self._size = len(data)
        return data[:n]

    def close(self) -> None:
        pass


def io_errors() -> tuple[type[BaseException], ...]:
    """What a byte store raises when a read fails: ``OSError`` (local files, timeouts,
    fsspec's not-found), ``ValueError`` (bad paths and arguments) and, when fsspec's HTTP
    filesystem is there, aiohttp's ``ClientError`` (an HTTP status, a broken connection).
    Anything else (a bug) propagates as itself."""
    errors: list[type[BaseException]] = [OSError, ValueError]
    try:
        import aiohttp

        errors.append(aiohttp.ClientError)
    except ImportError:  # pragma: no cover - without aiohttp there is no HTTP filesystem
        pass
    return tuple(errors)


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
        return RangeSource(self.fs, path, f"{self.name}/{name}", self.max_whole_read)

    def list(self) -> list[str] | None:
        """Names of the files in the folder, or ``None`` when it cannot be listed (made once)."""
        with self._lock:
            if self._listing is False:
                self._listing = self._list()
            return None if self._listing is None else list(self._listing)  # type: ignore[arg-type]

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
