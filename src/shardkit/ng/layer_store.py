"""The folder of a Neuroglancer precomputed layer, local or an fsspec URL, as the layer
converters (:mod:`.convert`, :mod:`.convert_annotations`) read and write it: batched reads
(``NAME.gz`` read as ``NAME``), atomic writes, listings and the ``info`` file.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import LimitExceededError, ShardkitError
from ..formats.neuroglancer import DEFAULT_MAX_DECODED_SIZE, SpecError, gunzip_capped
from ..formats.neuroglancer.spec import MAX_INFO_BYTES, parse_json
from ..formats.neuroglancer.store import check_relative

__all__ = ["LayerStore"]

_ATOMIC_PUT = ("s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "memory", "http", "https")
_READ_BATCH = 256  # names per remote cat() call


# -- storage ------------------------------------------------------------------------------------


class LayerStore:
    """A layer folder, local or an fsspec URL: reads, atomic writes, listings.

    Picklable (the fsspec filesystem is made on first use in each process).
    """

    def __init__(self, target: str | os.PathLike[str],
                 storage_options: Mapping[str, Any] | None = None) -> None:
        self.target = os.fspath(target).rstrip("/") or os.fspath(target)
        self.storage_options = dict(storage_options or {})
        self.remote = "://" in self.target and not self.target.startswith("file://")
        self.local_root = (self.target[len("file://"):] if self.target.startswith("file://")
                           else self.target)
        self._fs: Any = None
        self._root = ""

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_fs"] = None
        return state

    @property
    def fs(self) -> Any:
        if self._fs is None:
            import fsspec

            try:
                self._fs, root = fsspec.core.url_to_fs(self.target, **self.storage_options)
            except (ImportError, ValueError) as exc:
                raise ShardkitError(f"cannot open {self.target}: {exc}") from exc
            self._root = root.rstrip("/")
        return self._fs

    def path(self, name: str) -> str:
        """The full path (local) or fsspec path (remote) of ``name``."""
        name = _check_name(name, "/")
        if not self.remote:
            return os.path.join(self.local_root, *name.split("/"))
        _ = self.fs
        return f"{self._root}/{name}"

    def read(self, name: str) -> bytes | None:
        """The bytes of ``name`` (or of ``name.gz``, decompressed); ``None`` if neither exists."""
        return self.read_many([name]).get(name)

    def read_many(self, names: Sequence[str],
                  max_decoded_size: int = DEFAULT_MAX_DECODED_SIZE) -> dict[str, bytes]:
        """``name -> bytes`` for the names that exist (as ``name`` or ``name.gz``)."""
        found: dict[str, bytes] = {}
        if not self.remote:
            for name in names:
                path = self.path(name)
                try:
                    with open(path, "rb") as fh:
                        found[name] = fh.read()
                    continue
                except FileNotFoundError:
                    pass
                try:
                    with open(path + ".gz", "rb") as fh:
                        found[name] = gunzip_capped(fh.read(), max_decoded_size,
                                                    what=f"{self.target}/{name}.gz")
                except FileNotFoundError:
                    pass
            return found
        for i in range(0, len(names), _READ_BATCH):
            batch = list(names[i : i + _READ_BATCH])
            got = self._cat([self.path(n) for n in batch])
            missing = []
            for name in batch:
                data = got.get(self.path(name))
                if data is None:
                    missing.append(name)
                else:
                    found[name] = data
            if missing:
                got = self._cat([self.path(n) + ".gz" for n in missing])
                for name in missing:
                    data = got.get(self.path(name) + ".gz")
                    if data is not None:
                        found[name] = gunzip_capped(data, max_decoded_size,
                                                    what=f"{self.target}/{name}.gz")
        return found

    def _cat(self, paths: list[str]) -> dict[str, bytes]:
        if not paths:
            return {}
        try:
            out = self.fs.cat(paths, on_error="return")
        except FileNotFoundError:
            return {}
        if not isinstance(out, dict):  # a single path comes back as bytes
            out = {paths[0]: out}
        result = {}
        for path, value in out.items():
            if isinstance(value, FileNotFoundError):
                continue
            if isinstance(value, BaseException):
                raise ShardkitError(f"cannot read {path}: {value}") from value
            result[path] = bytes(value)
        return result

    def exists(self, name: str) -> bool:
        """Whether file (or folder) ``name`` exists."""
        path = self.path(name)
        return os.path.exists(path) if not self.remote else bool(self.fs.exists(path))

    def write(self, name: str, data: bytes | Sequence[bytes]) -> None:
        """Write ``name`` whole: locally through :func:`~shardkit.writers._atomic.atomic_file`
        (a hidden temporary name, flushed to disk, then renamed); on object stores one upload;
        on other fsspec filesystems a temporary name then a move.

        ``data`` is the content, or a list of byte strings to write one after the other.
        """
        path = self.path(name)
        pieces = [data] if isinstance(data, (bytes, bytearray, memoryview)) else data
        if not self.remote:
            from ..writers._atomic import atomic_file

            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
            with atomic_file(path) as fh:
                for piece in pieces:
                    fh.write(piece)
            return
        fs = self.fs
        protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
        parent = path.rsplit("/", 1)[0]
        atomic = protocol in _ATOMIC_PUT
        if not atomic or protocol == "memory":
            fs.makedirs(parent, exist_ok=True)
        target = path if atomic else f"{path}.tmp-{uuid.uuid4().hex}"
        if len(pieces) == 1:
            fs.pipe_file(target, bytes(pieces[0]))
        else:
            with fs.open(target, "wb") as fh:
                for piece in pieces:
                    fh.write(piece)
        if not atomic:
            fs.mv(target, path)

    def remove(self, name: str) -> None:
        """Delete file ``name`` if it exists."""
        path = self.path(name)
        with contextlib.suppress(FileNotFoundError):
            if self.remote:
                self.fs.rm_file(path)
            else:
                os.unlink(path)

    def list(self, folder: str = "") -> dict[str, int]:
        """``file name -> size`` of the files directly in ``folder`` (empty if it is absent)."""
        if folder:
            folder = _check_name(folder, "/")
        if not self.remote:
            path = os.path.join(self.local_root, *folder.split("/")) if folder \
                else self.local_root
            try:
                with os.scandir(path) as it:
                    return {e.name: e.stat().st_size for e in it if e.is_file()}
            except FileNotFoundError:
                return {}
        _ = self.fs
        path = self.path(folder) if folder else self._root
        try:
            entries = self.fs.ls(path, detail=True)
        except FileNotFoundError:
            return {}
        return {posixpath.basename(e["name"].rstrip("/")): int(e.get("size") or 0)
                for e in entries if e.get("type") != "directory"}

    def read_info(self) -> dict[str, Any]:
        """The layer's ``info`` as a dict (at most ``MAX_INFO_BYTES``)."""
        if not self.remote:  # refused unread when too long
            for name in ("info", "info.gz"):
                try:
                    size = os.path.getsize(self.path(name))
                except OSError:
                    continue
                if size > MAX_INFO_BYTES:
                    raise LimitExceededError(f"{self.target}/{name}: {size} bytes, more than "
                                             f"the {MAX_INFO_BYTES}-byte cap of an info file",
                                             field="/")
                break
        raw = self.read_many(["info"], MAX_INFO_BYTES).get("info")
        if raw is None:
            raise ShardkitError(f"{self.target}/info: not found")
        info = parse_json(raw, f"{self.target}/info")
        if not isinstance(info, dict):
            raise SpecError(f"{self.target}/info: not a JSON object", field="/")
        return info


def _check_name(name: Any, field: str = "/scales/key") -> str:
    """The normalised form of a path inside the layer's folder (a scale key comes from a
    file); the reader's rule (:func:`~shardkit.formats.neuroglancer.store.check_relative`),
    without ``..`` paths that climb out (the reader follows them on request only)."""
    try:
        return check_relative(name, field)
    except SpecError as exc:
        raise SpecError(f"refusing the path {name!r}: it would leave the layer's folder "
                        f"({exc.message})", field=field) from exc
