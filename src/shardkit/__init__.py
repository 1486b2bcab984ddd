"""shardkit: read, verify and write real binary shard formats, declaratively.

Flow: path / URL / bytes -> :mod:`shardkit.sources` (ByteSource) -> generated Kaitai class
(:mod:`shardkit.generated`, from ``schemas/*.ksy``) -> semantic reader
(:mod:`shardkit.formats`) -> plain objects -> JSON / CLI (:mod:`shardkit.render`,
:mod:`shardkit.cli`).

Example::

    import shardkit
    with shardkit.open("objects.shard") as shard:
        print(shard.summary())
        value = shard[key]
"""

from __future__ import annotations

from typing import Any

from .errors import (
    BadMagicError,
    ChecksumError,
    CorruptShardError,
    DeletedEntryError,
    EntryNotFoundError,
    FormatError,
    InvalidKeyError,
    LayoutError,
    LimitExceededError,
    Problem,
    ShardkitError,
    TruncatedError,
    UnknownFormatError,
    UnsupportedVersionError,
)
from .formats import FORMATS, detect
from .formats.swh import SwhShard
from .sources import BytesSource, CountingSource, FileSource, FsspecSource, open_source

__version__ = "0.1.0"

# Readers of the other formats load on first use (they pull in protobuf, bz2, ...).
_LAZY = {
    "MdbShard": "shardkit.formats.xet_mdb",
    "ZssFile": "shardkit.formats.zss",
    "NgShard": "shardkit.formats.neuroglancer",
    "ShardingSpec": "shardkit.formats.neuroglancer",
    "open_dataset": "shardkit.formats.neuroglancer",
    "AmudaiShard": "shardkit.formats.amudai",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'shardkit' has no attribute {name!r}")

__all__ = [
    "FORMATS",
    "AmudaiShard",
    "BadMagicError",
    "BytesSource",
    "ChecksumError",
    "CorruptShardError",
    "CountingSource",
    "DeletedEntryError",
    "EntryNotFoundError",
    "FileSource",
    "FormatError",
    "FsspecSource",
    "InvalidKeyError",
    "LayoutError",
    "LimitExceededError",
    "MdbShard",
    "NgShard",
    "Problem",
    "ShardingSpec",
    "ShardkitError",
    "SwhShard",
    "TruncatedError",
    "UnknownFormatError",
    "UnsupportedVersionError",
    "ZssFile",
    "detect",
    "open",
    "open_dataset",
    "open_source",
]


def open(target: Any, format: str | None = None,  # noqa: A001
         storage_options: dict[str, Any] | None = None, **options: Any) -> Any:
    """Open a shard: a local path, an fsspec URL, bytes, or a ByteSource.

    The format is detected from the file's magic bytes unless ``format`` names it; a folder or
    URL holding an ``info`` file opens as a Neuroglancer dataset. The reader is a context
    manager; opening reads only what the format needs to start (for SWH shards, the 88-byte
    header). ``storage_options`` go to fsspec; other keyword ``options`` go to the reader.

    Raises:
        UnknownFormatError: Nothing matched (the message lists what was tried).
        ShardkitError: The file is unreadable, truncated or corrupt.
    """
    from .formats import open_reader

    return open_reader(target, format, storage_options, **options)
