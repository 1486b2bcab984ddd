"""Bulk targets: paths, globs, URLs (and URL globs) and Neuroglancer datasets expanded into
the shard files a bulk run reads."""

from __future__ import annotations

import glob as _glob
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

#: The ``format`` of a target that is a whole Neuroglancer annotation layer (a folder or URL,
#: verified as one: its checks compare its indexes with each other).
LAYER_FORMAT = "neuroglancer-annotations"
_GLOB_CHARS = frozenset("*?[")


@dataclass(frozen=True)
class Target:
    """One shard to process.

    Attributes:
        name: The target as reported (a path or URL, as given or as a glob expanded it).
        spec: The Neuroglancer sharding spec of a bare ``.shard`` file, if any.
        format: A format id to use instead of detection.
        location: Where workers open it, when that differs from ``name`` (absolute path).
        error: Set when the target could not even be expanded (an ``error`` dict).
    """

    name: str
    spec: Mapping[str, Any] | None = None
    format: str | None = None
    location: str | None = None
    error: Mapping[str, Any] | None = None


def _is_url(text: str) -> bool:
    return "://" in text


def _has_glob(text: str) -> bool:
    return any(c in _GLOB_CHARS for c in text)


def read_target_list(path: str | os.PathLike[str]) -> list[str]:
    """The targets listed in a text file: one per line; blank lines and ``#`` comments skipped."""
    with open(path, encoding="utf-8") as fh:
        lines = [line.strip() for line in fh]
    return [line for line in lines if line and not line.startswith("#")]


def _error(kind: str, message: str, offset: int | None = None,
           field: str | None = None) -> dict[str, Any]:
    return {"type": kind, "message": message, "offset": offset, "field": field}


def _safe_key(key: Any) -> bool:
    """A scale ``key`` from an info file must name a folder below the dataset root."""
    if not isinstance(key, str) or not key or _is_url(key) or key.startswith(("/", "\\")):
        return False
    parts = key.replace("\\", "/").split("/")
    return ".." not in parts and ":" not in parts[0]


class _Where:
    """A folder, local or behind fsspec, with just what expansion needs."""

    def __init__(self, root: str, storage_options: Mapping[str, Any]) -> None:
        self.root = root.rstrip("/") or root
        self.fs: Any = None
        if _is_url(root):
            import fsspec

            self.fs, self.path = fsspec.core.url_to_fs(root, **dict(storage_options))
            self.path = self.path.rstrip("/")

    def join(self, name: str) -> str:
        return f"{self.root}/{name}"

    def read_info(self) -> Any:
        if self.fs is None:
            with open(os.path.join(self.root, "info"), encoding="utf-8") as fh:
                return json.load(fh)
        return json.loads(self.fs.cat_file(f"{self.path}/info"))

    def has_info(self) -> bool:
        if self.fs is None:
            return os.path.isdir(self.root) and os.path.isfile(os.path.join(self.root, "info"))
        try:
            return bool(self.fs.isfile(f"{self.path}/info"))
        except (OSError, ValueError):
            return False

    def shards(self, sub: str | None) -> list[str]:
        """``*.shard`` files directly in the root (or in its folder ``sub``), sorted.

        A scale's folder that does not exist holds no shards: a sharded scale with no chunks
        (an empty scale of ``shardkit ng shard``) has no folder at all.
        """
        if self.fs is None:
            folder = os.path.join(self.root, sub) if sub else self.root
            if sub and not os.path.lexists(folder):
                return []
            return sorted(os.path.join(folder, n) for n in os.listdir(folder)
                          if n.endswith(".shard") and os.path.isfile(os.path.join(folder, n)))
        folder = f"{self.path}/{sub}" if sub else self.path
        found = self.fs.glob(f"{folder}/*.shard")
        base = self.join(sub) if sub else self.root
        return sorted(f"{base}/{p.rsplit('/', 1)[-1]}" for p in found)


def _is_annotation_layer(where: _Where) -> bool:
    info = where.read_info()
    return isinstance(info, dict) and info.get("@type") == "neuroglancer_annotations_v1"


def _expand_dataset(where: _Where, fmt: str | None) -> list[Target]:
    """The shard files of a Neuroglancer dataset, each with its scale's sharding spec."""
    info = where.read_info()
    if not isinstance(info, dict):
        raise ValueError("the info file is not a JSON object")
    out: list[Target] = []
    if isinstance(info.get("sharding"), dict):  # key-value datasets: meshes, skeletons, ...
        out += [Target(name, spec=info["sharding"], format="neuroglancer")
                for name in where.shards(None)]
    for i, scale in enumerate(info.get("scales") or []):
        if not isinstance(scale, dict) or not isinstance(scale.get("sharding"), dict):
            continue  # unsharded scales hold plain chunk files, not shards
        key = scale.get("key")
        if not _safe_key(key):
            raise ValueError(f"scale {i}: key {key!r} does not name a folder inside the dataset")
        out += [Target(name, spec=scale["sharding"], format="neuroglancer")
                for name in where.shards(key)]
    return out


def _expand_one(item: str, fmt: str | None, spec: Mapping[str, Any] | None,
                storage_options: Mapping[str, Any]) -> list[Target]:
    if _has_glob(item) and not (not _is_url(item) and os.path.exists(item)):
        return _expand_glob(item, fmt, spec, storage_options)
    if fmt in (None, "neuroglancer") and spec is None:
        found = _expand_folder(item, fmt, storage_options)
        if found is not None:
            return found
    return [Target(item, spec=spec, format=fmt)]


def _expand_glob(item: str, fmt: str | None, spec: Mapping[str, Any] | None,
                 storage_options: Mapping[str, Any]) -> list[Target]:
    """The files (and dataset folders) a path or URL glob matches."""
    if _is_url(item):
        import fsspec

        fs, path = fsspec.core.url_to_fs(item, **dict(storage_options))
        hits = fs.glob(path, detail=True)
        files = [p for p, d in hits.items() if d.get("type") != "directory"]
        # filesystems that keep the scheme in their paths (http) need no unstripping
        names = sorted(p if "://" in p else fs.unstrip_protocol(p) for p in files)
    else:
        names = sorted(_glob.glob(item, recursive=True))
    found: list[Target] = []
    for name in names:
        if _is_url(name) or not os.path.isdir(name):
            found.append(Target(name, spec=spec, format=fmt))
        elif fmt in (None, "neuroglancer") and spec is None:  # dataset folders expand
            where = _Where(name, storage_options)
            if where.has_info():
                found += _expand_one(name, fmt, spec, storage_options)
    if not found:
        return [Target(item, error=_error("NoMatch", f"{item}: no file matches"))]
    return found


def _expand_folder(item: str, fmt: str | None,
                   storage_options: Mapping[str, Any]) -> list[Target] | None:
    """The targets of a Neuroglancer dataset or annotation layer (a folder or URL with an
    info file), an error target for a local folder without one; None for anything else."""
    looks_like_file = not _is_url(item) and os.path.isfile(item)
    if _is_url(item):  # ask for an info file only where a folder is plausible
        last = item.rstrip("/").rsplit("/", 1)[-1]
        looks_like_file = "." in last and not item.endswith("/")
    if looks_like_file:
        return None
    where = _Where(item, storage_options)
    if where.has_info():
        try:
            if _is_annotation_layer(where):  # one target: its checks span indexes
                return [Target(item, format=LAYER_FORMAT)]
            found = _expand_dataset(where, fmt)
        except (OSError, ValueError) as exc:
            return [Target(item, error=_error(
                type(exc).__name__, f"{item}: cannot expand the dataset: {exc}"))]
        if not found:
            return [Target(item, error=_error(
                "NoMatch", f"{item}: the dataset has no sharded scale with .shard files"))]
        return found
    if not _is_url(item) and os.path.isdir(item):
        return [Target(item, error=_error(
            "IsADirectoryError", f"{item}: a folder without an info file (give a glob "
            f"such as {item.rstrip('/')}/*)"))]
    return None


def expand_targets(items: Iterable[str | Target], *, format: str | None = None,
                   spec: Mapping[str, Any] | None = None,
                   storage_options: Mapping[str, Any] | None = None) -> list[Target]:
    """Expand paths, globs, URLs (and URL globs) and Neuroglancer datasets into shard targets.

    Each target appears once (first occurrence kept). A glob that matches nothing, or a
    dataset whose info cannot be read, becomes a target carrying an ``error``, so it is
    reported rather than silently dropped.
    """
    so = dict(storage_options or {})
    seen: set[str] = set()
    out: list[Target] = []
    for item in items:
        if isinstance(item, Target):
            found = [item]
        else:
            text = os.fspath(item)
            try:
                found = _expand_one(text, format, spec, so)
            except (OSError, ValueError, ImportError) as exc:
                found = [Target(text, error=_error(type(exc).__name__, f"{text}: {exc}"))]
        for t in found:
            if t.name not in seen:
                seen.add(t.name)
                out.append(t)
    return out
