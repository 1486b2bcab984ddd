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
         storage_options: dict[str, Any] | None = None, *, cache: int | None = None,
         block_size: int | None = None, concurrency: int | None = None,
         retries: int | None = None, **options: Any) -> Any:
    """Open a shard: a local path, an fsspec URL, bytes, or a ByteSource.

    The format is detected from the file's magic bytes unless ``format`` names it; a folder or
    URL holding an ``info`` file opens as a Neuroglancer dataset. The reader is a context
    manager; opening reads only what the format needs to start (for SWH shards, the 88-byte
    header). ``storage_options`` go to fsspec; other keyword ``options`` go to the reader.

    URLs are read by :class:`~shardkit.remote.RemoteSource`; these set how (``None``: the
    default): ``cache`` (bytes of blocks kept, 32 MiB; 0 for none), ``block_size`` (alignment
    and smallest request, 64 KiB), ``concurrency`` (requests in flight, 8) and ``retries``
    (further attempts after a transient network failure, 3).

    Raises:
        UnknownFormatError: Nothing matched (the message lists what was tried).
        ShardkitError: The file is unreadable, truncated or corrupt.
        RemoteError: A URL could not be read (a ShardkitError naming the URL).
    """
    from .formats import open_reader

    io_options = {k: v for k, v in (("cache", cache), ("block_size", block_size),
                                    ("concurrency", concurrency), ("retries", retries))
                  if v is not None}
    return open_reader(target, format, storage_options, io_options=io_options or None,
                       **options)
