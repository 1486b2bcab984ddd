"""Where a dataset's files live: a local folder or an fsspec URL, read with ranged requests."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import ShardkitError, TruncatedError
from ...sources import ByteSource, BytesSource, FileSource
from .decode import gunzip_capped
from .spec import DEFAULT_MAX_DECODED_SIZE

# -- byte sources for datasets ------------------------------------------------------------------


class RangeSource:
    """A file behind any fsspec URL, read only with ranged ``cat_file`` requests.

    Unlike :class:`~shardkit.sources.FsspecSource` it asks nothing on construction: the size is
    fetched on first use of :attr:`size` only, so a lookup costs exactly its range requests.
    A missing file raises ``FileNotFoundError`` from the first read.
    """

    def __init__(self, fs: Any, path: str, name: str) -> None:
        self.fs = fs
        self.path = path
        self.name = name
        self._size: int | None = None

    @property
    def size(self) -> int:
        if self._size is None:
            try:
                self._size = int(self.fs.size(self.path))
            except FileNotFoundError:
                raise
            except Exception as exc:
                raise ShardkitError(f"cannot stat {self.name}: {exc}") from exc
        return self._size

    def read_range(self, start: int, end: int) -> bytes:
        if start < 0 or end < start:
            raise ShardkitError(f"invalid byte range [{start}, {end}) of {self.name}")
        if start == end:
            return b""
        if self._size is not None and end > self._size:
            raise TruncatedError(f"truncated: needs bytes up to {end}, the file has "
                                 f"{self._size}", needed=end - start,
                                 available=max(0, self._size - start), offset=start)
        try:
            data = self.fs.cat_file(self.path, start=start, end=end)
        except FileNotFoundError:
            raise
        except Exception as exc:
            raise TruncatedError(f"cannot read bytes [{start}, {end}) of {self.name}: {exc}",
                                 needed=end - start, offset=start) from exc
        if len(data) != end - start:
            raise TruncatedError(f"truncated: needs bytes up to {end}, got "
                                 f"{start + len(data)}", needed=end - start,
                                 available=len(data), offset=start)
        return bytes(data)

    def close(self) -> None:
        pass


class _Store:
    """A dataset folder: a local directory or an fsspec URL."""

    def __init__(self, target: str | os.PathLike[str],
                 storage_options: Mapping[str, Any] | None = None) -> None:
        text = os.fspath(target)
        self.name = text.rstrip("/") or text
        self.fs: Any = None
        self.root = self.name
        if "://" in text:
            import fsspec

            try:
                self.fs, root = fsspec.core.url_to_fs(text, **dict(storage_options or {}))
            except (ImportError, ValueError) as exc:
                raise ShardkitError(f"cannot open {text}: {exc}") from exc
            self.root = root.rstrip("/")

    def sub(self, name: str) -> _Store:
        """The store of a subfolder."""
        child = object.__new__(_Store)
        child.fs = self.fs
        child.name = f"{self.name}/{name}"
        child.root = f"{self.root}/{name}" if self.root else name
        return child

    def _path(self, name: str) -> str:
        return f"{self.root}/{name}" if self.fs is not None else os.path.join(self.root, name)

    def read_bytes(self, name: str) -> bytes:
        path = self._path(name)
        try:
            if self.fs is None:
                return Path(path).read_bytes()
            return bytes(self.fs.cat_file(path))
        except FileNotFoundError as exc:
            raise ShardkitError(f"{self.name}/{name}: not found") from exc
        except Exception as exc:
            raise ShardkitError(f"cannot read {self.name}/{name}: {exc}") from exc

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
        return RangeSource(self.fs, path, f"{self.name}/{name}")

    def list(self) -> list[str] | None:
        """Names of the files in the folder, or ``None`` when it cannot be listed."""
        try:
            if self.fs is None:
                return sorted(os.listdir(self.root))
            return sorted(os.path.basename(p.rstrip("/"))
                          for p in self.fs.ls(self.root, detail=False))
        except Exception:  # noqa: BLE001 - unlistable (e.g. an HTTP server without indexes)
            return None


@dataclass(frozen=True)
class _SourceName:
    """What ``reader.source`` is for a dataset: a name, and nothing to close."""

    name: str

    def close(self) -> None:
        pass
