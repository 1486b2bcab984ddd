"""Format registry and detection.

Each supported format is a :class:`FormatInfo`: how to recognise its bytes (magic at the start,
and at the end where the format has a footer) and which reader opens it. Formats whose reader is
not in this version are still recognised, so the error says what the file is.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import ShardkitError, UnknownFormatError, UnsupportedVersionError
from ..sources import ByteSource, open_source

__all__ = ["FORMATS", "FormatInfo", "detect", "open_reader"]

_SNIFF = 64


@dataclass(frozen=True)
class FormatInfo:
    """A format shardkit knows.

    Attributes:
        id: Short name used by ``--format`` (``swh``, ``mdb``...).
        name: Human name.
        sniff: ``sniff(head, source)`` is True when the bytes look like this format; ``head``
            holds the first bytes, the source is there for formats that also check the end.
        describe: What ``sniff`` looks for, for error messages.
        opener: Builds the reader from a source; ``None`` while not implemented.
    """

    id: str
    name: str
    sniff: Callable[[bytes, ByteSource], bool]
    describe: str
    reader: str = ""

    @property
    def readable(self) -> bool:
        """Whether this version of shardkit has a reader for the format."""
        module = self.reader.partition(":")[0]
        return bool(module) and importlib.util.find_spec(module) is not None

    def opener(self, source: ByteSource, **options: Any) -> Any:
        """Open ``source`` with the format's reader (``module:Class``), passing ``options``."""
        module, _, attr = self.reader.partition(":")
        return getattr(importlib.import_module(module), attr)(source, **options)


def _sniff_amudai(head: bytes, source: ByteSource) -> bool:
    # The header magic decides; a missing or damaged footer is then the reader's to report
    # (a truncated shard should say "truncated", not "unknown format").
    return head.startswith(b"amud")


_ZSS_MAGIC = b"ZSS\x1c\x8el\x00\x01"
_ZSS_INCOMPLETE_MAGIC = b"SSZ\x1c\x8el\x00\x01"
_MDB_TAG = bytes.fromhex("48465265706f4d6574614461746100556967456a7b815783a5bdd95ccdd14aa9")

FORMATS: dict[str, FormatInfo] = {
    f.id: f
    for f in [
        FormatInfo("swh", "Software Heritage read shard",
                   lambda head, src: head.startswith(b"SWHShard\x00"),
                   'starts with "SWHShard\\0"', "shardkit.formats.swh:SwhShard"),
        FormatInfo("mdb", "Hugging Face Xet MDB shard",
                   lambda head, src: head.startswith(_MDB_TAG),
                   "starts with the 32-byte HFRepoMetaData header tag",
                   "shardkit.formats.xet_mdb:MdbShard"),
        FormatInfo("zss", "ZSS compressed sorted set",
                   lambda head, src: head[:8] in (_ZSS_MAGIC, _ZSS_INCOMPLETE_MAGIC),
                   'starts with "ZSS\\x1c\\x8el\\0\\x01" (or "SSZ..." while incomplete)',
                   "shardkit.formats.zss:ZssFile"),
        FormatInfo("amudai", "Microsoft Amudai shard",
                   _sniff_amudai,
                   'starts with the 8-byte "amud" header (and ends with the same footer)',
                   "shardkit.formats.amudai:AmudaiShard"),
        FormatInfo("neuroglancer", "Neuroglancer precomputed neuroglancer_uint64_sharded_v1",
                   lambda head, src: False,
                   "a dataset folder or URL holding an `info` file with sharding parameters "
                   "(or a .shard file given with an explicit sharding spec)",
                   "shardkit.formats.neuroglancer:NgShard"),
    ]
}


def detect(source: ByteSource) -> FormatInfo:
    """The format of ``source``, from its first and last bytes.

    Raises:
        UnknownFormatError: Nothing matched; the message lists what was tried.
    """
    head = source.read_range(0, min(_SNIFF, source.size))
    for info in FORMATS.values():
        if info.sniff(head, source):
            return info
    tried = [f"{info.id}: {info.describe}" for info in FORMATS.values()]
    shown = head[:16].hex(" ") if head else "(empty file)"
    raise UnknownFormatError(
        f"{source.name}: not a shard shardkit knows (first bytes: {shown}); tried "
        + "; ".join(tried),
        tried,
        offset=0,
    )


def _is_dataset(target: Any, **storage_options: Any) -> bool:
    """True for a folder (local or fsspec URL) that holds an ``info`` file."""
    if not isinstance(target, (str, os.PathLike)):
        return False
    text = os.fspath(target)
    if "://" not in text:
        return os.path.isdir(text) and os.path.isfile(os.path.join(text, "info"))
    try:
        import fsspec

        fs, path = fsspec.core.url_to_fs(text, **storage_options)
        if path.rstrip("/").endswith(".shard"):
            return False
        # HTTP filesystems call every URL a file, so ask for the info file itself
        return bool(fs.isfile(path.rstrip("/") + "/info"))
    except (OSError, ValueError, ImportError):
        return False


def open_reader(target: Any, format: str | None = None,
                storage_options: dict[str, Any] | None = None, **options: Any) -> Any:
    """Open ``target`` (path, URL, bytes or ByteSource) with the right reader.

    Args:
        target: What to open: a shard file, or a Neuroglancer dataset folder or URL.
        format: Force a format id instead of detecting it.
        storage_options: Passed to fsspec for URLs.
        options: Passed to the format's reader (e.g. ``spec=`` for a bare Neuroglancer shard).
    """
    storage_options = storage_options or {}
    if format is not None and format not in FORMATS:
        raise ShardkitError(f"unknown format {format!r}; known: {', '.join(FORMATS)}")
    ng = FORMATS["neuroglancer"]
    if format in (None, "neuroglancer") and _is_dataset(target, **storage_options):
        if not ng.readable:
            if "://" not in os.fspath(target):
                _check_info(os.path.join(os.fspath(target), "info"))
            raise UnsupportedVersionError(f"{target}: recognised as a {ng.name} dataset, but "
                                          "this version of shardkit cannot read it yet")
        module = importlib.import_module(ng.reader.partition(":")[0])
        return module.open_dataset(target, storage_options=storage_options, **options)
    source = open_source(target, **storage_options)
    try:
        fmt = format
        if fmt is None and "spec" in options:
            fmt = "neuroglancer"  # a bare shard file only makes sense with its spec
        if fmt == "neuroglancer" and "spec" not in options:
            raise ShardkitError(f"{source.name}: a bare Neuroglancer .shard file needs its "
                                "sharding spec (spec=... / --spec INFO_OR_JSON), or open the "
                                "dataset folder that holds the info file")
        try:
            info = FORMATS[fmt] if fmt else detect(source)
        except UnknownFormatError:
            # a bare Neuroglancer .shard beside its dataset's info file: read it with that spec
            from .neuroglancer.loader import sibling_spec

            found = sibling_spec(target, storage_options)
            if found is None:
                raise
            info, options = FORMATS["neuroglancer"], {**options, **found}
        if not info.readable:
            raise UnsupportedVersionError(f"{source.name}: recognised as a {info.name}, but "
                                          "this version of shardkit cannot read it yet")
        return info.opener(source, **options)
    except BaseException:
        source.close()
        raise


def _check_info(path: str) -> None:
    try:
        with open(path, encoding="utf-8") as fh:
            json.load(fh)
    except (OSError, ValueError) as exc:
        raise UnknownFormatError(f"{path}: unreadable dataset info file: {exc}") from exc
