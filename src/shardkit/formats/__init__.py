"""Format registry and detection.

Each supported format is a :class:`FormatInfo`: how to recognise its bytes (magic at the start,
and at the end where the format has a footer) and which reader opens it. Formats whose reader is
not in this version are still recognised, so the error says what the file is.
"""

from __future__ import annotations

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
    opener: Callable[[ByteSource], Any] | None = None


def _open_swh(source: ByteSource) -> Any:
    from .swh import SwhShard

    return SwhShard(source)


def _sniff_amudai(head: bytes, source: ByteSource) -> bool:
    if not head.startswith(b"amud") or source.size < 16:
        return False
    return source.read_range(source.size - 8, source.size).startswith(b"amud")


_ZSS_MAGIC = b"ZSS\x1c\x8el\x00\x01"
_ZSS_INCOMPLETE_MAGIC = b"SSZ\x1c\x8el\x00\x01"
_MDB_TAG = bytes.fromhex("48465265706f4d6574614461746100556967456a7b815783a5bdd95ccdd14aa9")

FORMATS: dict[str, FormatInfo] = {
    f.id: f
    for f in [
        FormatInfo("swh", "Software Heritage read shard",
                   lambda head, src: head.startswith(b"SWHShard\x00"),
                   'starts with "SWHShard\\0"', _open_swh),
        FormatInfo("mdb", "Hugging Face Xet MDB shard",
                   lambda head, src: head.startswith(_MDB_TAG),
                   "starts with the 32-byte HFRepoMetaData header tag"),
        FormatInfo("zss", "ZSS compressed sorted set",
                   lambda head, src: head[:8] in (_ZSS_MAGIC, _ZSS_INCOMPLETE_MAGIC),
                   'starts with "ZSS\\x1c\\x8el\\0\\x01" (or "SSZ..." while incomplete)'),
        FormatInfo("amudai", "Microsoft Amudai shard",
                   _sniff_amudai,
                   'starts and ends with the 8-byte "amud" header/footer'),
        FormatInfo("neuroglancer", "Neuroglancer precomputed neuroglancer_uint64_sharded_v1",
                   lambda head, src: False,
                   "a dataset folder or URL holding an `info` file with sharding parameters"),
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
        return not fs.isfile(path) and fs.isfile(path.rstrip("/") + "/info")
    except (OSError, ValueError, ImportError):
        return False


def open_reader(target: Any, format: str | None = None, **storage_options: Any) -> Any:
    """Open ``target`` (path, URL, bytes or ByteSource) with the right reader.

    Args:
        target: What to open.
        format: Force a format id instead of detecting it.
        storage_options: Passed to fsspec for URLs.
    """
    if format is not None and format not in FORMATS:
        raise ShardkitError(f"unknown format {format!r}; known: {', '.join(FORMATS)}")
    if format == "neuroglancer" or (format is None and _is_dataset(target, **storage_options)):
        info = FORMATS["neuroglancer"]
        if _is_dataset(target) and "://" not in os.fspath(target):
            _check_info(os.path.join(os.fspath(target), "info"))
        raise UnsupportedVersionError(f"{target}: recognised as a {info.name} dataset, but "
                                      "this version of shardkit cannot read it yet")
    source = open_source(target, **storage_options)
    try:
        info = FORMATS[format] if format else detect(source)
        if info.opener is None:
            raise UnsupportedVersionError(f"{source.name}: recognised as a {info.name}, but "
                                          "this version of shardkit cannot read it yet")
        return info.opener(source)
    except BaseException:
        source.close()
        raise


def _check_info(path: str) -> None:
    try:
        with open(path, encoding="utf-8") as fh:
            json.load(fh)
    except (OSError, ValueError) as exc:
        raise UnknownFormatError(f"{path}: unreadable dataset info file: {exc}") from exc
