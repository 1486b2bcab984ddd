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

from typing import TYPE_CHECKING, Any, Literal, TypeAlias, TypeVar, overload

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

if TYPE_CHECKING:
    import os

    from .formats import FORMATS, detect
    from .formats.amudai import AmudaiShard
    from .formats.base import Reader
    from .formats.neuroglancer import NgDataset, NgShard, ShardingSpec, open_dataset
    from .formats.swh import SwhShard
    from .formats.xet_mdb import MdbShard
    from .formats.zs import ZsFile
    from .formats.zss import ZssFile
    from .sources import (
        ByteSource,
        BytesSource,
        CountingSource,
        FileSource,
        FsspecSource,
        open_source,
    )

    #: What :func:`open` accepts: a path, an fsspec URL, bytes or a ByteSource.
    Target: TypeAlias = str | os.PathLike[str] | bytes | bytearray | memoryview | ByteSource
    #: Every reader :func:`open` can return when the format is detected.
    AnyReader: TypeAlias = (SwhShard | MdbShard | ZssFile | ZsFile | AmudaiShard | NgShard
                             | NgDataset)
    FsOptions: TypeAlias = dict[str, Any] | None
    R = TypeVar("R", bound=Reader)

__version__ = "0.1.0"

# Everything else loads on first use: importing shardkit stays cheap (no numpy, no protobuf),
# and a command pays only for the format it reads.
_LAZY = {
    "FORMATS": "shardkit.formats",
    "detect": "shardkit.formats",
    "Reader": "shardkit.formats.base",
    "SwhShard": "shardkit.formats.swh",
    "MdbShard": "shardkit.formats.xet_mdb",
    "ZssFile": "shardkit.formats.zss",
    "ZsFile": "shardkit.formats.zs",
    "NgShard": "shardkit.formats.neuroglancer",
    "NgDataset": "shardkit.formats.neuroglancer",
    "ShardingSpec": "shardkit.formats.neuroglancer",
    "open_dataset": "shardkit.formats.neuroglancer",
    "AmudaiShard": "shardkit.formats.amudai",
    "ByteSource": "shardkit.sources",
    "BytesSource": "shardkit.sources",
    "CountingSource": "shardkit.sources",
    "FileSource": "shardkit.sources",
    "FsspecSource": "shardkit.sources",
    "open_source": "shardkit.sources",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value  # later lookups skip this function
        return value
    raise AttributeError(f"module 'shardkit' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


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
    "NgDataset",
    "NgShard",
    "Problem",
    "Reader",
    "ShardingSpec",
    "ShardkitError",
    "SwhShard",
    "TruncatedError",
    "UnknownFormatError",
    "UnsupportedVersionError",
    "ZsFile",
    "ZssFile",
    "detect",
    "open",
    "open_dataset",
    "open_source",
]


# Overloads: what comes back, for type checkers and editors (by format id or reader class).
@overload
def open(target: Target, format: Literal["swh"], storage_options: FsOptions = ...,  # noqa: A001
         **options: Any) -> SwhShard: ...
@overload
def open(target: Target, format: Literal["mdb"], storage_options: FsOptions = ...,  # noqa: A001
         **options: Any) -> MdbShard: ...
@overload
def open(target: Target, format: Literal["zss"], storage_options: FsOptions = ...,  # noqa: A001
         **options: Any) -> ZssFile: ...
@overload
def open(target: Target, format: Literal["zs"], storage_options: FsOptions = ...,  # noqa: A001
         **options: Any) -> ZsFile: ...
@overload
def open(target: Target, format: Literal["amudai"], storage_options: FsOptions = ...,  # noqa: A001
         **options: Any) -> AmudaiShard: ...
@overload
def open(target: Target, format: Literal["neuroglancer"] | None = ...,  # noqa: A001
         storage_options: FsOptions = ..., *, spec: ShardingSpec | dict[str, Any] | str,
         **options: Any) -> NgShard: ...
@overload
def open(target: Target, format: Literal["neuroglancer"],  # noqa: A001
         storage_options: FsOptions = ..., *, cache: int | None = ...,
         block_size: int | None = ..., concurrency: int | None = ...,
         retries: int | None = ..., max_whole_read: int | None = ...,
         allow_external: bool = ..., cache_bytes: int = ...) -> NgDataset: ...
@overload
def open(target: Target, format: type[R], storage_options: FsOptions = ...,  # noqa: A001
         **options: Any) -> R: ...
@overload
def open(target: Target, format: str | None = ..., storage_options: FsOptions = ...,  # noqa: A001
         **options: Any) -> AnyReader: ...
def open(target: Target, format: str | type[Reader] | None = None,  # noqa: A001
         storage_options: FsOptions = None, *, cache: int | None = None,
         block_size: int | None = None, concurrency: int | None = None,
         retries: int | None = None, max_whole_read: int | None = None,
         **options: Any) -> Any:
    """Open a shard: a local path, an fsspec URL, bytes, or a ByteSource.

    The format is detected from the file's magic bytes unless ``format`` names it (an id such
    as ``"zss"``, or a reader class such as :class:`ZssFile`); a folder or URL holding an
    ``info`` file opens as a Neuroglancer dataset. The reader is a context manager; opening
    reads only what the format needs to start (for SWH shards, the 88-byte header).
    ``storage_options`` go to fsspec; other keyword ``options`` go to the reader. Type
    checkers see the reader class that comes back when ``format`` (or ``spec=``) says it.

    URLs are read by :class:`~shardkit.remote.RemoteSource`; these set how (``None``: the
    default): ``cache`` (bytes of blocks kept, 32 MiB; 0 for none), ``block_size`` (alignment
    and smallest request, 64 KiB), ``concurrency`` (requests in flight, 8) and ``retries``
    (further attempts after a transient network failure, 3). ``max_whole_read`` (16 MiB):
    a server that ignores ``Range`` has its files up to this size read whole (said with a
    :class:`~shardkit.remote.WholeFileReadWarning`), larger ones refused.

    Raises:
        UnknownFormatError: Nothing matched (the message lists what was tried).
        ShardkitError: The file is unreadable, truncated or corrupt.
        RemoteError: A URL could not be read (a ShardkitError naming the URL).
    """
    from .formats import open_reader

    fmt = format.format_id if isinstance(format, type) else format
    io_options = {k: v for k, v in (("cache", cache), ("block_size", block_size),
                                    ("concurrency", concurrency), ("retries", retries),
                                    ("max_whole_read", max_whole_read))
                  if v is not None}
    return open_reader(target, fmt, storage_options, io_options=io_options or None, **options)
