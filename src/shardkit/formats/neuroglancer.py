"""Neuroglancer precomputed ``neuroglancer_uint64_sharded_v1``: shards, datasets, image volumes.

Layout: ``schemas/neuroglancer_uint64_sharded.ksy`` (generated class
:class:`NeuroglancerUint64Sharded`; its parametrised types ``ShardIndex(num_minishards)`` and
``MinishardIndex(num_chunks)`` are the two tables of a shard). This module adds the meaning:

- :class:`ShardingSpec`: the validated ``sharding`` object of an ``info`` file, with the hash
  (identity, or the low 64 bits of MurmurHash3_x86_128 of ``key >> preshift_bits`` as 8
  little-endian bytes), the shard and minishard numbers of a key and the shard file names
  (lowercase hex padded to ``ceil(shard_bits / 4)`` digits, ``0.shard`` when ``shard_bits`` is 0).
- :class:`NgShard`: one shard file. A lookup costs at most three reads (the 16-byte shard index
  entry, the minishard index, the data); decoded minishard indices are kept in a bounded LRU
  cache; :meth:`NgShard.get_many` coalesces the reads of many chunks. Offsets are followed as
  stored: tensorstore and cloud-volume order a shard's parts differently.
- :class:`ShardedKV`: every shard of one sharding spec under a folder or URL, as a mapping
  ``chunk id -> bytes`` (``data_encoding`` undone). :class:`NgKeyValueDataset` (skeletons,
  meshes, annotations by id) is one; :class:`NgImageDataset` has one per scale
  (:class:`NgScale`, keyed by compressed Morton codes) and :meth:`NgImageDataset.read_chunk`.

Remote datasets are read through fsspec with ranged requests only (``cat_file(path, start,
end)``), never a ``HEAD`` per read: the size of a remote shard is asked for only by whole-file
operations (``verify``, ``map``).
"""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import struct
import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from .._kaitai import kaitai_errors
from ..errors import (
    CorruptShardError,
    EntryNotFoundError,
    FormatError,
    InvalidKeyError,
    LayoutError,
    LimitExceededError,
    Problem,
    ShardkitError,
    TruncatedError,
    UnsupportedVersionError,
)
from ..generated.neuroglancer_uint64_sharded import NeuroglancerUint64Sharded
from ..hashing.murmur import hash_uint64, hash_uint64_array
from ..sources import ByteSource, BytesSource, FileSource, as_stream
from .base import Reader, Section

__all__ = [
    "DEFAULT_MAX_DECODED_SIZE",
    "ChunkRef",
    "EncodedChunk",
    "NgDataset",
    "NgImageDataset",
    "NgKeyValueDataset",
    "NgScale",
    "NgShard",
    "ShardLocation",
    "ShardedKV",
    "ShardingSpec",
    "SpecError",
    "compressed_morton_code",
    "decode_minishard_index",
    "gunzip_capped",
    "morton_decode",
    "open_dataset",
]

SHARDED_TYPE = "neuroglancer_uint64_sharded_v1"
HASHES = ("identity", "murmurhash3_x86_128")
ENCODINGS = ("raw", "gzip")
DEFAULT_MAX_DECODED_SIZE = 1 << 30  # cap on any one gunzipped index or chunk
ENTRY_SIZE = 16  # one shard index entry: two u64
_MASK64 = (1 << 64) - 1
_ENTRY = struct.Struct("<QQ")
_MAX_GAP = 1 << 16  # coalesce ranges closer than this
_MAX_REQUEST = 1 << 26  # ... into requests of at most this many bytes
_SHARD_NAME = re.compile(r"^([0-9a-f]+)\.shard(?:\.gz)?$")
_DTYPES = {"uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64", "float32",
           "float64"}


class SpecError(FormatError, ValueError):
    """A sharding spec (or an ``info`` file) with a missing or invalid field."""


# -- the sharding spec ------------------------------------------------------------------------


@dataclass(frozen=True)
class ShardLocation:
    """Where a key lives.

    Attributes:
        shard: Shard number, in ``[0, 2**shard_bits)``.
        minishard: Minishard number, in ``[0, 2**minishard_bits)``.
        remainder: The hash bits above the shard bits (unused by the format).
    """

    shard: int
    minishard: int
    remainder: int


@dataclass(frozen=True)
class ShardingSpec:
    """A validated ``neuroglancer_uint64_sharded_v1`` sharding spec.

    Every field is checked on construction; a bad one raises :class:`SpecError` naming it
    (``field`` is ``/sharding/<name>``).

    Example::

        spec = ShardingSpec.from_dict({"@type": "neuroglancer_uint64_sharded_v1",
            "hash": "murmurhash3_x86_128", "preshift_bits": 6, "minishard_bits": 11,
            "shard_bits": 7, "minishard_index_encoding": "gzip", "data_encoding": "gzip"})
        spec.shard_name(spec.locate(1822975381).shard)   # '42.shard'
    """

    hash: str
    preshift_bits: int
    minishard_bits: int
    shard_bits: int
    minishard_index_encoding: str = "raw"
    data_encoding: str = "raw"

    def __post_init__(self) -> None:
        if self.hash not in HASHES:
            raise SpecError(f"sharding spec: hash must be one of {', '.join(HASHES)}, got "
                            f"{self.hash!r}", field="/sharding/hash")
        for name in ("preshift_bits", "minishard_bits", "shard_bits"):
            value = getattr(self, name)
            if type(value) is not int or not 0 <= value <= 64:
                raise SpecError(f"sharding spec: {name} must be an integer in [0, 64], got "
                                f"{value!r}", field=f"/sharding/{name}")
        if self.minishard_bits + self.shard_bits > 64:
            raise SpecError(f"sharding spec: minishard_bits + shard_bits must be <= 64, got "
                            f"{self.minishard_bits} + {self.shard_bits}",
                            field="/sharding/shard_bits")
        for name in ("minishard_index_encoding", "data_encoding"):
            value = getattr(self, name)
            if value not in ENCODINGS:
                raise SpecError(f"sharding spec: {name} must be one of {', '.join(ENCODINGS)}, "
                                f"got {value!r}", field=f"/sharding/{name}")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ShardingSpec:
        """Validate the JSON ``sharding`` object of an ``info`` file.

        Raises:
            SpecError: A field is missing, of the wrong type, or out of range.
        """
        if not isinstance(data, Mapping):
            raise SpecError(f"sharding spec must be a JSON object, got {type(data).__name__}",
                            field="/sharding")
        kind = data.get("@type")
        if kind != SHARDED_TYPE:
            raise SpecError(f"sharding spec: @type must be {SHARDED_TYPE!r}, got {kind!r}",
                            field="/sharding/@type")
        known = {"@type", "hash", "preshift_bits", "minishard_bits", "shard_bits",
                 "minishard_index_encoding", "data_encoding"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise SpecError(f"sharding spec: unknown field(s) {', '.join(unknown)}",
                            field=f"/sharding/{unknown[0]}")
        for name in ("hash", "preshift_bits", "minishard_bits", "shard_bits"):
            if name not in data:
                raise SpecError(f"sharding spec: {name} is missing", field=f"/sharding/{name}")
        return cls(
            hash=data["hash"],
            preshift_bits=data["preshift_bits"],
            minishard_bits=data["minishard_bits"],
            shard_bits=data["shard_bits"],
            minishard_index_encoding=data.get("minishard_index_encoding", "raw"),
            data_encoding=data.get("data_encoding", "raw"),
        )

    @classmethod
    def coerce(cls, spec: ShardingSpec | Mapping[str, Any] | str) -> ShardingSpec:
        """A spec from a :class:`ShardingSpec`, a dict, or JSON text.

        A whole ``info`` file also works: its ``sharding`` object (key-value datasets), or the
        ``sharding`` of its only sharded scale (image datasets).
        """
        if isinstance(spec, ShardingSpec):
            return spec
        if isinstance(spec, str):
            try:
                spec = json.loads(spec)
            except ValueError as exc:
                raise SpecError(f"sharding spec is not JSON: {exc}", field="/sharding") from exc
        if isinstance(spec, Mapping) and spec.get("@type") != SHARDED_TYPE:
            if isinstance(spec.get("sharding"), Mapping):
                spec = spec["sharding"]
            elif isinstance(spec.get("scales"), list):
                sharded = [sc["sharding"] for sc in spec["scales"]
                           if isinstance(sc, Mapping) and isinstance(sc.get("sharding"), Mapping)]
                if len(sharded) != 1:
                    raise SpecError(f"the info file has {len(sharded)} sharded scales; give the "
                                    "sharding object of the one you mean", field="/scales")
                spec = sharded[0]
        return cls.from_dict(spec)  # type: ignore[arg-type]

    def to_dict(self) -> dict[str, Any]:
        """The JSON ``sharding`` object."""
        return {"@type": SHARDED_TYPE, "hash": self.hash, "preshift_bits": self.preshift_bits,
                "minishard_bits": self.minishard_bits, "shard_bits": self.shard_bits,
                "minishard_index_encoding": self.minishard_index_encoding,
                "data_encoding": self.data_encoding}

    @property
    def num_shards(self) -> int:
        """``2**shard_bits``."""
        return 1 << self.shard_bits

    @property
    def num_minishards(self) -> int:
        """``2**minishard_bits``: entries of every shard index."""
        return 1 << self.minishard_bits

    @property
    def shard_index_size(self) -> int:
        """Bytes of a shard index (every offset in a shard is relative to its end)."""
        return ENTRY_SIZE << self.minishard_bits

    def hash_key(self, key: int) -> int:
        """The hashed chunk id: ``hash(key >> preshift_bits)``."""
        shifted = key >> self.preshift_bits
        return shifted if self.hash == "identity" else hash_uint64(shifted)

    def locate(self, key: int) -> ShardLocation:
        """Shard and minishard numbers of ``key``."""
        h = self.hash_key(key)
        return ShardLocation(
            shard=(h >> self.minishard_bits) & ((1 << self.shard_bits) - 1),
            minishard=h & ((1 << self.minishard_bits) - 1),
            remainder=h >> (self.minishard_bits + self.shard_bits),
        )

    def locate_many(self, keys: Iterable[int] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(shard numbers, minishard numbers) of many keys, as uint64 arrays."""
        arr = np.asarray(keys, dtype=np.uint64)
        shifted = arr >> np.uint64(self.preshift_bits) if self.preshift_bits < 64 \
            else np.zeros_like(arr)
        h = shifted if self.hash == "identity" else hash_uint64_array(shifted)
        mini = h & np.uint64((1 << self.minishard_bits) - 1)
        if self.minishard_bits < 64:
            shard = (h >> np.uint64(self.minishard_bits)) & np.uint64((1 << self.shard_bits) - 1)
        else:
            shard = np.zeros_like(h)
        return shard, mini

    @property
    def shard_name_digits(self) -> int:
        """Hex digits of a shard file name (``ceil(shard_bits / 4)``)."""
        return (self.shard_bits + 3) // 4

    def shard_name(self, shard: int) -> str:
        """File name of shard number ``shard`` (``"0a.shard"``; ``"0.shard"`` for 0 bits)."""
        return f"{shard:0{self.shard_name_digits}x}.shard"

    def parse_shard_name(self, name: str) -> int | None:
        """The shard number a file name stands for, or ``None`` if it is not one of ours.

        ``N.shard.gz`` (a whole shard gzipped: cloud-volume's ``compress=True`` on local
        folders) stands for shard ``N`` too.
        """
        m = _SHARD_NAME.match(os.path.basename(name))
        if m is None:
            return None
        number = int(m.group(1), 16)
        if number >= self.num_shards or self.shard_name(number) != f"{m.group(1)}.shard":
            return None
        return number


# -- decoding helpers -------------------------------------------------------------------------


def gunzip_capped(data: bytes, limit: int = DEFAULT_MAX_DECODED_SIZE, *, what: str = "data",
                  offset: int | None = None, field: str | None = None) -> bytes:
    """Decompress a gzip stream (all its members), refusing output beyond ``limit`` bytes.

    Raises:
        CorruptShardError: Not a gzip stream, or a broken one.
        LimitExceededError: It decompresses to more than ``limit`` bytes.
    """
    out = bytearray()
    rest = bytes(data)
    try:
        while True:
            d = zlib.decompressobj(wbits=31)
            out += d.decompress(rest, limit + 1 - len(out))
            if len(out) > limit:
                raise LimitExceededError(f"{what}: gzip output exceeds the {limit}-byte cap",
                                         offset=offset, field=field)
            if not d.eof:
                if d.unconsumed_tail:
                    raise LimitExceededError(f"{what}: gzip output exceeds the {limit}-byte cap",
                                             offset=offset, field=field)
                raise CorruptShardError(f"{what}: truncated gzip stream", offset=offset,
                                        field=field)
            rest = d.unused_data
            if not rest:
                return bytes(out)
    except zlib.error as exc:
        raise CorruptShardError(f"{what}: bad gzip stream: {exc}", offset=offset,
                                field=field) from exc


@dataclass(frozen=True)
class MinishardIndex:
    """A decoded minishard index: chunk ids and data ranges, offsets relative to the end of
    the shard index (add ``base`` for absolute offsets).

    Attributes:
        ids: Chunk ids (uint64), in stored order.
        starts: Relative data start of each chunk (uint64).
        ends: Relative data end of each chunk (uint64).
        base: Absolute offset the relative offsets count from (the shard index size).
    """

    ids: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    base: int

    def __len__(self) -> int:
        return int(self.ids.size)

    @cached_property
    def lookup(self) -> dict[int, tuple[int, int]]:
        """Chunk id -> absolute ``(start, end)`` (the first entry wins for duplicate ids)."""
        base = self.base
        ids = self.ids.tolist()
        starts = self.starts.tolist()
        ends = self.ends.tolist()
        out: dict[int, tuple[int, int]] = {}
        for i in range(len(ids) - 1, -1, -1):
            out[ids[i]] = (base + starts[i], base + ends[i])
        return out


EMPTY_INDEX = MinishardIndex(np.zeros(0, np.uint64), np.zeros(0, np.uint64),
                             np.zeros(0, np.uint64), 0)


def decode_minishard_index(raw: bytes, base: int, *, offset: int | None = None,
                           field: str | None = None) -> MinishardIndex:
    """Decode a raw (already gunzipped) minishard index: ``3 x n`` little-endian u64 arrays.

    Chunk ids and data offsets are delta-coded; this undoes both with cumulative sums
    (uint64 arithmetic) and refuses sums that wrap around.

    Raises:
        LayoutError: The size is not a multiple of 24, or a running sum overflows 64 bits.
    """
    if len(raw) % 24:
        raise LayoutError(f"minishard index of {len(raw)} bytes is not a multiple of 24 "
                          "(3 x u64 per chunk)", offset=offset, field=field)
    n = len(raw) // 24
    if n == 0:
        return MinishardIndex(EMPTY_INDEX.ids, EMPTY_INDEX.starts, EMPTY_INDEX.ends, base)
    arr = np.frombuffer(raw, dtype="<u8").reshape(3, n).astype(np.uint64, copy=False)
    id_deltas, ofs_deltas, sizes = arr[0], arr[1], arr[2]
    with np.errstate(over="ignore"):
        ids = np.cumsum(id_deltas, dtype=np.uint64)
        inc = ofs_deltas + sizes
        ends = np.cumsum(inc, dtype=np.uint64)
    if n > 1 and (bool(np.any(ids[1:] < ids[:-1])) or bool(np.any(ends[1:] < ends[:-1]))):
        raise LayoutError("minishard index: a running sum of chunk ids or offsets overflows "
                          "64 bits", offset=offset, field=field)
    if bool(np.any(inc < sizes)) or int(ends[-1]) + base > _MASK64:
        raise LayoutError("minishard index: a data offset overflows 64 bits", offset=offset,
                          field=field)
    return MinishardIndex(ids, ends - sizes, ends, base)


def compressed_morton_code(position: Sequence[int], grid_shape: Sequence[int]) -> int:
    """Neuroglancer's compressed Morton code of a chunk grid position.

    Bits of x, y and z are interleaved (x lowest), each coordinate contributing only the
    ``ceil(log2(grid_shape[d]))`` bits it needs.

    Raises:
        ValueError: The position is outside the grid.
    """
    for p, g in zip(position, grid_shape, strict=True):
        if not 0 <= p < g:
            raise ValueError(f"grid position {tuple(position)} outside the grid "
                             f"{tuple(grid_shape)}")
    bits = [max(0, int(g) - 1).bit_length() for g in grid_shape]
    code = j = 0
    for i in range(max(bits, default=0)):
        for d in range(len(bits)):
            if i < bits[d]:
                code |= ((int(position[d]) >> i) & 1) << j
                j += 1
    return code


def morton_decode(code: int, grid_shape: Sequence[int]) -> tuple[int, ...]:
    """The grid position of a compressed Morton code (inverse of :func:`compressed_morton_code`).

    Raises:
        ValueError: ``code`` has bits beyond the grid's, or decodes outside the grid.
    """
    bits = [max(0, int(g) - 1).bit_length() for g in grid_shape]
    pos = [0] * len(bits)
    j = 0
    for i in range(max(bits, default=0)):
        for d in range(len(bits)):
            if i < bits[d]:
                pos[d] |= ((code >> j) & 1) << i
                j += 1
    if code >> j or any(p >= g for p, g in zip(pos, grid_shape, strict=True)):
        raise ValueError(f"chunk id {code} is not a position of the grid {tuple(grid_shape)}")
    return tuple(pos)


def _coalesce(ranges: Sequence[tuple[int, int]], max_gap: int = _MAX_GAP,
              max_size: int = _MAX_REQUEST) -> list[tuple[int, int, list[int]]]:
    """Merge byte ranges into requests: ``(start, end, [indices of the ranges it covers])``."""
    order = sorted(range(len(ranges)), key=lambda i: ranges[i])
    out: list[tuple[int, int, list[int]]] = []
    for i in order:
        start, end = ranges[i]
        if out:
            s, e, members = out[-1]
            if start <= e + max_gap and max(e, end) - s <= max_size:
                out[-1] = (s, max(e, end), [*members, i])
                continue
        out.append((start, end, [i]))
    return out


def _read_ranges(source: ByteSource, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
    """Read many ranges; through ranged requests, neighbours are fetched together."""
    if getattr(source, "view", None) is not None:
        return [source.read_range(s, e) for s, e in ranges]
    out: list[bytes] = [b""] * len(ranges)
    for start, end, members in _coalesce(ranges):
        block = source.read_range(start, end)
        for i in members:
            s, e = ranges[i]
            out[i] = block[s - start : e - start]
    return out


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


# -- one shard ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChunkRef:
    """One chunk of a shard's minishard index.

    Attributes:
        chunk_id: The uint64 key.
        minishard: The minishard whose index lists it.
        start: Absolute offset of its stored bytes.
        end: One past their end.
    """

    chunk_id: int
    minishard: int
    start: int
    end: int

    @property
    def size(self) -> int:
        """Stored size (before ``data_encoding`` is undone)."""
        return self.end - self.start

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON output."""
        return {"id": self.chunk_id, "minishard": self.minishard, "start": self.start,
                "end": self.end, "size": self.size}


_MISSING: Any = object()


class NgShard(Reader):
    """One ``neuroglancer_uint64_sharded_v1`` shard file.

    Opening reads nothing. ``shard[key]`` reads the key's 16-byte shard index entry, its
    minishard index (cached, LRU-bounded) and its data: three reads at most.

    Args:
        source: The shard's bytes.
        spec: Its sharding spec (``ShardingSpec``, dict or JSON text).
        shard_number: The shard's number, for the hash checks of :meth:`verify` and for
            refusing keys of other shards; taken from the file name when it is a shard name.
        minishard_cache_size: Decoded minishard indices kept in memory.
        max_decoded_size: Cap on a gunzipped minishard index or chunk.
    """

    format_id = "neuroglancer"
    format_name = "Neuroglancer precomputed neuroglancer_uint64_sharded_v1 shard"

    def __init__(self, source: ByteSource, spec: ShardingSpec | Mapping[str, Any] | str,
                 *, shard_number: int | None = None, minishard_cache_size: int = 1024,
                 max_decoded_size: int = DEFAULT_MAX_DECODED_SIZE) -> None:
        super().__init__(source)
        self.spec = ShardingSpec.coerce(spec)
        if shard_number is None:
            shard_number = self.spec.parse_shard_name(source.name)
        self.shard_number = shard_number
        self.index_size = self.spec.shard_index_size
        self.minishard_cache_size = minishard_cache_size
        self.max_decoded_size = max_decoded_size
        self._cache: OrderedDict[int, MinishardIndex] = OrderedDict()
        self._entries: np.ndarray | None = None
        self._gzip_data = self.spec.data_encoding == "gzip"

    # -- the shard index ----------------------------------------------------------------------

    def _check_entry(self, m: int, start: int, end: int) -> None:
        if end < start:
            raise LayoutError(f"minishard {m}: index range [{start}, {end}) ends before it "
                              "starts", offset=m * ENTRY_SIZE, field=f"/shard_index/entries/{m}")

    def shard_index(self) -> np.ndarray:
        """The whole shard index as an ``(n, 2)`` uint64 array of relative ``[start, end)``
        (one read; kept)."""
        if self._entries is None:
            n = self.spec.num_minishards
            if self.index_size > self.source.size:
                raise TruncatedError(
                    f"truncated: the shard index needs {self.index_size} bytes, the file has "
                    f"{self.source.size}", needed=self.index_size, available=self.source.size,
                    offset=0, field="/shard_index")
            raw = self.source.read_range(0, self.index_size)
            self._entries = np.frombuffer(raw, dtype="<u8").reshape(n, 2).astype(np.uint64)
        return self._entries

    def index_entry(self, m: int) -> tuple[int, int]:
        """Relative ``(start, end)`` of minishard ``m``'s index (one 16-byte read)."""
        if self._entries is not None:
            start, end = self._entries[m].tolist()
        else:
            start, end = _ENTRY.unpack(self.source.read_range(m * ENTRY_SIZE,
                                                              (m + 1) * ENTRY_SIZE))
        self._check_entry(m, start, end)
        return start, end

    def kaitai_shard_index(self) -> Any:
        """The shard index parsed by the generated class (``ShardIndex(num_minishards)``)."""
        raw = self.source.read_range(0, min(self.index_size, self.source.size))
        with kaitai_errors(prefix="/shard_index"):
            return NeuroglancerUint64Sharded.ShardIndex(self.spec.num_minishards,
                                                       as_stream(BytesSource(raw)))

    def kaitai_minishard_index(self, m: int) -> Any:
        """Minishard ``m``'s index parsed by the generated class (after gunzip if needed)."""
        start, end = self.index_entry(m)
        raw = self._decoded_index_bytes(m, start, end)
        with kaitai_errors(prefix=f"/minishards/{m}/index",
                           base=self.index_size + start):
            return NeuroglancerUint64Sharded.MinishardIndex(len(raw) // 24,
                                                           as_stream(BytesSource(raw)))

    # -- minishard indices --------------------------------------------------------------------

    def _decoded_index_bytes(self, m: int, start: int, end: int,
                             raw: bytes | None = None) -> bytes:
        lo, hi = self.index_size + start, self.index_size + end
        field_ = f"/minishards/{m}/index"
        if raw is None:
            try:
                raw = self.source.read_range(lo, hi)
            except TruncatedError as exc:
                raise TruncatedError(f"minishard {m}: index [{lo}, {hi}) is past the end of "
                                     "the file", needed=hi - lo, available=exc.available,
                                     offset=lo, field=field_) from exc
        if self.spec.minishard_index_encoding == "gzip":
            raw = gunzip_capped(raw, self.max_decoded_size, what=f"minishard {m} index",
                                offset=lo, field=field_)
        return raw

    def _decode_minishard(self, m: int, start: int, end: int,
                          raw: bytes | None = None) -> MinishardIndex:
        if start == end:
            return MinishardIndex(EMPTY_INDEX.ids, EMPTY_INDEX.starts, EMPTY_INDEX.ends,
                                  self.index_size)
        raw = self._decoded_index_bytes(m, start, end, raw)
        return decode_minishard_index(raw, self.index_size, offset=self.index_size + start,
                                      field=f"/minishards/{m}/index")

    def _remember(self, m: int, index: MinishardIndex) -> MinishardIndex:
        self._cache[m] = index
        if len(self._cache) > self.minishard_cache_size:
            self._cache.popitem(last=False)
        return index

    def minishard(self, m: int) -> MinishardIndex:
        """Decoded index of minishard ``m`` (from the cache when there)."""
        index = self._cache.get(m)
        if index is not None:
            self._cache.move_to_end(m)
            return index
        if not 0 <= m < self.spec.num_minishards:
            raise IndexError(f"minishard {m} out of range")
        start, end = self.index_entry(m)
        return self._remember(m, self._decode_minishard(m, start, end))

    def _load_minishards(self, wanted: Iterable[int]) -> None:
        """Load many minishard indices with coalesced reads (entries, then indices)."""
        todo = sorted({m for m in wanted if m not in self._cache})
        if not todo:
            return
        if self._entries is None:
            blocks = _read_ranges(self.source, [(m * ENTRY_SIZE, (m + 1) * ENTRY_SIZE)
                                                for m in todo])
            entries = [_ENTRY.unpack(b) for b in blocks]
        else:
            entries = [tuple(self._entries[m].tolist()) for m in todo]
        for m, (s, e) in zip(todo, entries, strict=True):
            self._check_entry(m, s, e)
        ranges = [(self.index_size + s, self.index_size + e) for s, e in entries]
        raws = _read_ranges(self.source, ranges)
        for m, (s, e), raw in zip(todo, entries, raws, strict=True):
            self._remember(m, self._decode_minishard(m, s, e, raw))

    # -- lookups ------------------------------------------------------------------------------

    def locate(self, key: int) -> ChunkRef | None:
        """Where ``key``'s bytes are, or ``None`` if this shard does not hold it."""
        loc = self.spec.locate(key)
        if self.shard_number is not None and loc.shard != self.shard_number:
            return None
        index = self._cache.get(loc.minishard)
        if index is None:
            index = self.minishard(loc.minishard)
        r = index.lookup.get(key)
        return None if r is None else ChunkRef(key, loc.minishard, r[0], r[1])

    def _decode(self, key: int, start: int, data: bytes) -> bytes:
        if self._gzip_data:
            return gunzip_capped(data, self.max_decoded_size, what=f"chunk {key}",
                                 offset=start, field=f"/chunks/{key}")
        return data

    def _read_data(self, key: int, start: int, end: int) -> bytes:
        try:
            data = self.source.read_range(start, end)
        except TruncatedError as exc:
            raise TruncatedError(f"chunk {key}: data [{start}, {end}) is past the end of the "
                                 "file", needed=end - start, available=exc.available,
                                 offset=start, field=f"/chunks/{key}") from exc
        return self._decode(key, start, data)

    def __getitem__(self, key: int) -> bytes:
        key = _as_key(key)
        loc = self.spec.locate(key)
        if self.shard_number is not None and loc.shard != self.shard_number:
            raise EntryNotFoundError(key, f"chunk {key} belongs to shard "
                                     f"{self.spec.shard_name(loc.shard)}, not this one")
        index = self._cache.get(loc.minishard)
        if index is None:
            index = self.minishard(loc.minishard)
        r = index.lookup.get(key)
        if r is None:
            raise EntryNotFoundError(key, f"chunk {key} not found")
        return self._read_data(key, r[0], r[1])

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, (int, np.integer)) or isinstance(key, bool):
            return False
        if not 0 <= int(key) <= _MASK64:
            return False
        return self.locate(int(key)) is not None

    def get_many(self, keys: Iterable[int], default: Any = _MISSING) -> list[Any]:
        """Values of many keys, with coalesced reads (index entries, indices, then data)."""
        keys = [_as_key(k) for k in keys]
        locs = [self.spec.locate(k) for k in keys]
        self._load_minishards(loc.minishard for loc in locs
                              if self.shard_number is None or loc.shard == self.shard_number)
        out: list[Any] = [default] * len(keys)
        want: list[tuple[int, int, int]] = []  # (slot, start, end)
        for i, (key, loc) in enumerate(zip(keys, locs, strict=True)):
            r = None
            if self.shard_number is None or loc.shard == self.shard_number:
                r = self.minishard(loc.minishard).lookup.get(key)
            if r is None:
                if default is _MISSING:
                    raise EntryNotFoundError(key, f"chunk {key} not found")
                continue
            want.append((i, r[0], r[1]))
        datas = _read_ranges(self.source, [(s, e) for _, s, e in want])
        for (i, s, _), data in zip(want, datas, strict=True):
            out[i] = self._decode(keys[i], s, data)
        return out

    def iter_chunks(self) -> Iterator[ChunkRef]:
        """Every chunk of the shard, minishard by minishard, in index order."""
        entries = self.shard_index()
        nonempty = [m for m in range(len(entries)) if entries[m, 0] != entries[m, 1]]
        for lo in range(0, len(nonempty), 256):
            batch = nonempty[lo : lo + 256]
            self._load_minishards(batch)
            for m in batch:
                index = self.minishard(m)
                base = index.base
                for cid, s, e in zip(index.ids.tolist(), index.starts.tolist(),
                                     index.ends.tolist(), strict=True):
                    yield ChunkRef(cid, m, base + s, base + e)

    def keys(self) -> Iterator[int]:
        """Chunk ids, in index order."""
        for ref in self.iter_chunks():
            yield ref.chunk_id

    __iter__ = keys

    def __len__(self) -> int:
        return sum(1 for _ in self.iter_chunks())

    def items(self, batch_bytes: int = 1 << 24) -> Iterator[tuple[int, bytes]]:
        """``(chunk id, value)`` for every chunk; reads are coalesced ``batch_bytes`` at a time."""
        view = getattr(self.source, "view", None)
        if view is not None:
            mem = view(0, self.source.size)
            try:
                for ref in self.iter_chunks():
                    if ref.end > len(mem):
                        raise TruncatedError(f"chunk {ref.chunk_id}: data [{ref.start}, "
                                             f"{ref.end}) is past the end of the file",
                                             offset=ref.start, field=f"/chunks/{ref.chunk_id}")
                    yield ref.chunk_id, self._decode(ref.chunk_id, ref.start,
                                                     mem[ref.start : ref.end].tobytes())
            finally:
                mem.release()
            return
        batch: list[ChunkRef] = []
        size = 0
        for ref in self.iter_chunks():
            batch.append(ref)
            size += ref.size
            if size >= batch_bytes:
                yield from self._read_batch(batch)
                batch, size = [], 0
        yield from self._read_batch(batch)

    def _read_batch(self, refs: list[ChunkRef]) -> Iterator[tuple[int, bytes]]:
        datas = _read_ranges(self.source, [(r.start, r.end) for r in refs])
        for ref, data in zip(refs, datas, strict=True):
            yield ref.chunk_id, self._decode(ref.chunk_id, ref.start, data)

    # -- CLI hooks ------------------------------------------------------------------------------

    @staticmethod
    def format_key(key: int) -> str:
        """Keys print in decimal."""
        return str(key)

    @staticmethod
    def parse_key(text: str) -> int:
        """A key from the command line: decimal, or ``0x`` hex."""
        return _parse_key(text)

    def summary(self) -> dict[str, Any]:
        """Format, spec, shard number and counts (reads the whole index)."""
        entries = self.shard_index()
        nonempty = int(np.count_nonzero(entries[:, 0] != entries[:, 1]))
        return {
            "format": self.format_name,
            "file": self.source.name,
            "size": self.source.size,
            "sharding": self.spec.to_dict(),
            "shard_number": self.shard_number,
            "num_minishards": self.spec.num_minishards,
            "nonempty_minishards": nonempty,
            "chunk_count": len(self),
        }

    def sections(self) -> list[Section]:
        """The byte layout: shard index, minishard indices and chunk data, in file order."""
        entries = self.shard_index()
        out = [Section("/shard_index", 0, self.index_size,
                       f"{self.spec.num_minishards} entries x 16 bytes")]
        for m in range(len(entries)):
            s, e = entries[m].tolist()
            if s != e:
                enc = self.spec.minishard_index_encoding
                out.append(Section(f"/minishards/{m}/index", self.index_size + s,
                                   self.index_size + e,
                                   f"{len(self.minishard(m))} chunks, {enc}"))
        for ref in self.iter_chunks():
            out.append(Section(f"/minishards/{ref.minishard}/chunks/{ref.chunk_id}",
                               ref.start, ref.end, self.spec.data_encoding))
        out.sort(key=lambda s: (s.start, s.end))
        return out

    def to_dict(self) -> dict[str, Any]:
        """The shard's tree: spec, shard index entries and every chunk's range."""
        entries = self.shard_index()
        minishards = []
        for m in range(len(entries)):
            s, e = entries[m].tolist()
            if s == e:
                continue
            minishards.append({
                "minishard": m,
                "index": {"start": self.index_size + s, "end": self.index_size + e},
                "chunks": [{"id": int(cid), "start": self.index_size + int(a),
                            "end": self.index_size + int(b)}
                           for cid, a, b in zip(self.minishard(m).ids.tolist(),
                                                self.minishard(m).starts.tolist(),
                                                self.minishard(m).ends.tolist(), strict=True)],
            })
        return {"format": self.format_id, "file": self.source.name,
                "sharding": self.spec.to_dict(), "shard_number": self.shard_number,
                "num_minishards": self.spec.num_minishards, "minishards": minishards}

    # -- verify -------------------------------------------------------------------------------

    def verify(self, progress: Callable[[int, int], None] | None = None,
               check_data: bool = True) -> list[Problem]:
        """Every check; returns the problems found (``[]`` when sound).

        Checks: the shard index fits; every entry is ordered, inside the file and does not
        overlap another minishard index; every minishard index decodes (gzip included); every
        chunk id hashes to this shard (when its number is known) and to the minishard whose
        index lists it; no id appears twice; every data range lies inside the file and off the
        indices; with ``check_data``, every gzip chunk decompresses.
        """
        problems: list[Problem] = []
        size = self.source.size
        spec = self.spec
        if self.index_size > size:
            return [Problem("shard_index_bounds", f"the shard index needs {self.index_size} "
                            f"bytes, the file has {size}", 0, "/shard_index")]
        entries = self.shard_index()
        n = len(entries)
        index_ranges: list[tuple[int, int, int]] = []
        for m in range(n):
            s, e = entries[m].tolist()
            where = m * ENTRY_SIZE
            if s == e:
                continue
            if e < s:
                problems.append(Problem("shard_index_bounds", f"minishard {m}: index range "
                                        f"[{s}, {e}) ends before it starts", where,
                                        f"/shard_index/entries/{m}"))
                continue
            if self.index_size + e > size:
                problems.append(Problem("shard_index_bounds", f"minishard {m}: index range "
                                        f"[{self.index_size + s}, {self.index_size + e}) is "
                                        f"past the end of the file ({size} bytes)", where,
                                        f"/shard_index/entries/{m}"))
                continue
            index_ranges.append((self.index_size + s, self.index_size + e, m))
        index_ranges.sort()
        for (s1, e1, m1), (s2, _e2, m2) in itertools.pairwise(index_ranges):
            if s2 < e1:
                problems.append(Problem("overlap", f"minishard indices {m1} [{s1}, {e1}) and "
                                        f"{m2} [{s2}, ...) overlap", s2,
                                        f"/shard_index/entries/{m2}"))
        seen: dict[int, int] = {}
        data_ranges: list[tuple[int, int, int]] = []
        total = len(index_ranges)
        for done, (lo, hi, m) in enumerate(sorted(index_ranges, key=lambda r: r[2]), 1):
            try:
                index = self._decode_minishard(m, lo - self.index_size, hi - self.index_size)
            except ShardkitError as exc:
                problems.append(Problem("minishard_index", str(exc.message), exc.offset,
                                        exc.field))
                continue
            ids = index.ids
            if len(ids):
                shard, mini = spec.locate_many(ids)
                bad = np.nonzero(mini != np.uint64(m))[0]
                for i in bad[:20].tolist():
                    problems.append(Problem("chunk_hash", f"chunk {int(ids[i])} hashes to "
                                            f"minishard {int(mini[i])}, is listed in {m}", lo,
                                            f"/minishards/{m}/index"))
                if len(bad) > 20:
                    problems.append(Problem("chunk_hash", f"... and {len(bad) - 20} more in "
                                            f"minishard {m}", lo, f"/minishards/{m}/index"))
                if self.shard_number is not None:
                    bad = np.nonzero(shard != np.uint64(self.shard_number))[0]
                    for i in bad[:20].tolist():
                        problems.append(Problem(
                            "chunk_hash", f"chunk {int(ids[i])} hashes to shard "
                            f"{spec.shard_name(int(shard[i]))}, is stored in "
                            f"{spec.shard_name(self.shard_number)}", lo,
                            f"/minishards/{m}/index"))
            for cid, s, e in zip(ids.tolist(), index.starts.tolist(), index.ends.tolist(),
                                 strict=True):
                if cid in seen:
                    problems.append(Problem("duplicate_id", f"chunk id {cid} appears in "
                                            f"minishard {seen[cid]} and again in {m}", lo,
                                            f"/minishards/{m}/index"))
                else:
                    seen[cid] = m
                a, b = self.index_size + s, self.index_size + e
                if b > size:
                    problems.append(Problem("data_bounds", f"chunk {cid}: data [{a}, {b}) is "
                                            f"past the end of the file ({size} bytes)", a,
                                            f"/chunks/{cid}"))
                    continue
                data_ranges.append((a, b, cid))
            if progress is not None:
                progress(done, total)
        # data must not overlap the minishard indices
        marks = sorted([(s, e, f"minishard {m} index") for s, e, m in index_ranges]
                       + [(s, e, f"chunk {c}") for s, e, c in data_ranges if e > s])
        reach, owner = -1, ""
        for s, e, what in marks:
            if s < reach and ("index" in what or "index" in owner):
                problems.append(Problem("overlap", f"{what} [{s}, {e}) overlaps {owner}", s))
            if e > reach:
                reach, owner = e, what
        if check_data and self._gzip_data:
            for a, b, cid in data_ranges:
                try:
                    self._read_data(cid, a, b)
                except ShardkitError as exc:
                    problems.append(Problem("gzip", str(exc.message), a, f"/chunks/{cid}"))
        return problems


def _as_key(key: Any) -> int:
    if isinstance(key, bool) or not isinstance(key, (int, np.integer)):
        raise EntryNotFoundError(key, f"chunk ids are integers, got {type(key).__name__}")
    key = int(key)
    if not 0 <= key <= _MASK64:
        raise EntryNotFoundError(key, f"chunk id {key} is not a uint64")
    return key


def _parse_key(text: str) -> int:
    try:
        value = int(text, 16) if text.lower().startswith("0x") else int(text, 10)
    except ValueError as exc:
        raise InvalidKeyError(f"not a chunk id (decimal or 0x hex): {text!r}") from exc
    if not 0 <= value <= _MASK64:
        raise InvalidKeyError(f"chunk id {text} is not a uint64")
    return value


# -- every shard of one spec ------------------------------------------------------------------


class ShardedKV(Mapping[int, bytes]):
    """The shards of one sharding spec in one folder: a mapping ``chunk id -> bytes``.

    Shards are opened on first use and kept open; a missing shard file holds no keys.

    Attributes:
        spec: The sharding spec.
        name: The folder's path or URL.
    """

    def __init__(self, store: _Store, spec: ShardingSpec, **shard_options: Any) -> None:
        self.store = store
        self.spec = spec
        self.name = store.name
        self._options = shard_options
        self._shards: dict[int, NgShard | None] = {}

    def shard(self, number: int) -> NgShard | None:
        """The reader of shard ``number``, or ``None`` if its file does not exist."""
        if number in self._shards:
            return self._shards[number]
        source = self.store.open(self.spec.shard_name(number),
                                 self._options.get("max_decoded_size", DEFAULT_MAX_DECODED_SIZE))
        reader = None if source is None else NgShard(source, self.spec, shard_number=number,
                                                     **self._options)
        self._shards[number] = reader
        return reader

    def shard_numbers(self) -> list[int]:
        """Numbers of the shard files present (from a listing; all numbers if unlistable)."""
        names = self.store.list()
        if names is None:
            if self.spec.shard_bits > 16:
                raise ShardkitError(f"{self.name}: cannot list the folder, and there are "
                                    f"2**{self.spec.shard_bits} possible shard files")
            return list(range(self.spec.num_shards))
        numbers = (self.spec.parse_shard_name(n) for n in names)
        return sorted({n for n in numbers if n is not None})

    def unexpected_files(self) -> list[str]:
        """``*.shard`` files whose names are not shard names of this spec."""
        names = self.store.list() or []
        return [n for n in names if n.endswith((".shard", ".shard.gz"))
                and self.spec.parse_shard_name(n) is None]

    def _existing_shards(self) -> Iterator[NgShard]:
        for number in self.shard_numbers():
            try:
                reader = self.shard(number)
            except FileNotFoundError:
                self._shards[number] = None
                continue
            if reader is not None:
                yield reader

    def __getitem__(self, key: int) -> bytes:
        key = _as_key(key)
        number = self.spec.locate(key).shard
        try:
            reader = self.shard(number)
            if reader is None:
                raise EntryNotFoundError(key, f"chunk {key} not found (no shard file "
                                         f"{self.spec.shard_name(number)})")
            return reader[key]
        except FileNotFoundError as exc:
            self._shards[number] = None
            raise EntryNotFoundError(key, f"chunk {key} not found (no shard file "
                                     f"{self.spec.shard_name(number)})") from exc

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, (int, np.integer)) or isinstance(key, bool):
            return False
        if not 0 <= int(key) <= _MASK64:
            return False
        number = self.spec.locate(int(key)).shard
        try:
            reader = self.shard(number)
            return reader is not None and int(key) in reader
        except FileNotFoundError:
            self._shards[number] = None
            return False

    def get_many(self, keys: Iterable[int], default: Any = _MISSING) -> list[Any]:
        """Values of many keys: grouped by shard, each shard's reads coalesced."""
        keys = [_as_key(k) for k in keys]
        out: list[Any] = [default] * len(keys)
        groups: dict[int, list[int]] = {}
        for i, k in enumerate(keys):
            groups.setdefault(self.spec.locate(k).shard, []).append(i)
        for number, slots in groups.items():
            try:
                reader = self.shard(number)
            except FileNotFoundError:
                reader = self._shards[number] = None
            if reader is None:
                if default is _MISSING:
                    raise EntryNotFoundError(keys[slots[0]], f"chunk {keys[slots[0]]} not found")
                continue
            try:
                values = reader.get_many([keys[i] for i in slots], default)
            except FileNotFoundError as exc:
                self._shards[number] = None
                if default is _MISSING:
                    raise EntryNotFoundError(keys[slots[0]], f"chunk {keys[slots[0]]} not "
                                             "found") from exc
                continue
            for i, v in zip(slots, values, strict=True):
                out[i] = v
        return out

    def keys(self) -> Iterator[int]:  # type: ignore[override]
        """Every chunk id of every shard (shard by shard, in index order)."""
        for reader in self._existing_shards():
            yield from reader.keys()

    __iter__ = keys

    def items(self) -> Iterator[tuple[int, bytes]]:  # type: ignore[override]
        """``(chunk id, value)`` of every chunk, shard by shard."""
        for reader in self._existing_shards():
            yield from reader.items()

    def __len__(self) -> int:
        return sum(len(r) for r in self._existing_shards())

    def verify(self, progress: Callable[[int, int], None] | None = None) -> list[Problem]:
        """:meth:`NgShard.verify` on every shard file, problems prefixed with the file name."""
        problems = [Problem("file_name", f"{name}: not a shard file name of this spec "
                            f"({self.spec.shard_name_digits} hex digits below "
                            f"{self.spec.num_shards:#x})") for name in self.unexpected_files()]
        numbers = list(self.shard_numbers())
        for done, number in enumerate(numbers, 1):
            name = self.spec.shard_name(number)
            try:  # opening can fail too (a bad N.shard.gz is decompressed when opened)
                reader = self.shard(number)
                found = [] if reader is None else reader.verify()
            except FileNotFoundError:
                self._shards[number] = None
                found = []
            except ShardkitError as exc:
                found = [Problem("read", exc.message, exc.offset, exc.field)]
            problems += [Problem(p.check, f"{name}: {p.message}", p.offset, p.field)
                         for p in found]
            if progress is not None:
                progress(done, len(numbers))
        return problems

    def sections(self) -> list[Section]:
        """Every shard file's layout, names prefixed with the file name."""
        out = []
        for reader in self._existing_shards():
            name = self.spec.shard_name(reader.shard_number or 0)
            out += [Section(f"{name}{s.name}", s.start, s.end, s.note)
                    for s in reader.sections()]
        return out

    def close(self) -> None:
        """Close every open shard."""
        for reader in self._shards.values():
            if reader is not None:
                reader.close()
        self._shards.clear()


# -- datasets -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class EncodedChunk:
    """An image chunk in an encoding shardkit does not decode (``jpeg``, ``png``...).

    Attributes:
        encoding: The scale's ``encoding``.
        data: The stored bytes (``data_encoding`` undone).
        shape: The chunk's ``(channels, z, y, x)`` shape, clipped at the volume's edge.
    """

    encoding: str
    data: bytes
    shape: tuple[int, int, int, int]


class NgDataset:
    """Base of the dataset readers: the ``info`` file, a store and the CLI hooks."""

    format_id = "neuroglancer"
    format_name = "Neuroglancer precomputed sharded dataset"

    def __init__(self, store: _Store, info: dict[str, Any]) -> None:
        self.store = store
        self.info = info
        self.source = _SourceName(store.name)

    @property
    def kv(self) -> ShardedKV:
        """The mapping ``ds[key]``, ``keys()`` and friends act on."""
        raise NotImplementedError

    @property
    def spec(self) -> ShardingSpec:
        """The sharding spec (for an image dataset, the first scale's)."""
        return self.kv.spec

    def __getitem__(self, key: int) -> bytes:
        return self.kv[key]

    def __contains__(self, key: object) -> bool:
        return key in self.kv

    def get(self, key: int, default: Any = None) -> Any:
        """The value of ``key`` or ``default``."""
        return self.kv.get(key, default)

    def get_many(self, keys: Iterable[int], default: Any = _MISSING) -> list[Any]:
        """Values of many keys with coalesced reads."""
        return self.kv.get_many(keys, default)

    def keys(self) -> Iterator[int]:
        """Every chunk id."""
        return self.kv.keys()

    def __iter__(self) -> Iterator[int]:
        return self.kv.keys()

    def items(self) -> Iterator[tuple[int, bytes]]:
        """Every ``(chunk id, value)``."""
        return self.kv.items()

    def __len__(self) -> int:
        return len(self.kv)

    format_key = staticmethod(NgShard.format_key)
    parse_key = staticmethod(NgShard.parse_key)

    def _all_kvs(self) -> list[tuple[str, ShardedKV]]:
        return [("", self.kv)]

    def verify(self, progress: Callable[[int, int], None] | None = None) -> list[Problem]:
        """Every shard of every sharded part (see :meth:`NgShard.verify`)."""
        problems = []
        for prefix, kv in self._all_kvs():
            problems += [Problem(p.check, f"{prefix}{p.message}", p.offset, p.field)
                         for p in kv.verify(progress)]
        return problems

    def sections(self) -> list[Section]:
        """The layout of every shard file."""
        out = []
        for prefix, kv in self._all_kvs():
            out += [Section(f"{prefix}{s.name}", s.start, s.end, s.note)
                    for s in kv.sections()]
        return out

    def _kv_summary(self, kv: ShardedKV) -> dict[str, Any]:
        numbers = kv.shard_numbers()
        return {"sharding": kv.spec.to_dict(), "num_shards": kv.spec.num_shards,
                "shard_files": len([n for n in numbers if kv.shard(n) is not None]),
                "chunk_count": len(kv)}

    def summary(self) -> dict[str, Any]:
        """Type, spec, shard and chunk counts."""
        return {"format": self.format_name, "dataset": self.store.name,
                "type": self.info.get("@type"), **self._kv_summary(self.kv)}

    def to_dict(self) -> dict[str, Any]:
        """The ``info`` file and every shard's tree."""
        return {"format": self.format_id, "dataset": self.store.name, "info": self.info,
                "shards": [r.to_dict() for _, kv in self._all_kvs()
                           for r in kv._existing_shards()]}

    def close(self) -> None:
        """Close every open shard."""
        for _, kv in self._all_kvs():
            kv.close()

    def __enter__(self) -> NgDataset:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.store.name!r}>"


class NgKeyValueDataset(NgDataset):
    """Skeletons, meshes or annotations by id: ``ds[segment_id] -> bytes``."""

    def __init__(self, store: _Store, info: dict[str, Any], spec: ShardingSpec,
                 subdir: str = "", **shard_options: Any) -> None:
        super().__init__(store, info)
        self.subdir = subdir
        self._kv = ShardedKV(store.sub(subdir) if subdir else store, spec, **shard_options)

    @property
    def kv(self) -> ShardedKV:
        return self._kv


class NgScale(ShardedKV):
    """One sharded scale of an image volume: a mapping compressed Morton code -> chunk bytes.

    Attributes:
        key: The scale's key (its folder).
        size: Volume size in voxels ``(x, y, z)``.
        chunk_size: Chunk size ``(x, y, z)``.
        voxel_offset: Voxel coordinates of the volume's origin.
        encoding: ``raw``, ``jpeg``, ``compressed_segmentation``...
        grid_shape: Chunks along ``(x, y, z)``.
    """

    def __init__(self, store: _Store, scale: Mapping[str, Any], index: int,
                 **shard_options: Any) -> None:
        where = f"/scales/{index}"
        try:
            self.key = str(scale["key"])
            self.size = _triple(scale["size"], f"{where}/size", 1)
            sizes = scale["chunk_sizes"]
            self.chunk_size = _triple(sizes[0], f"{where}/chunk_sizes/0", 1)
            self.voxel_offset = _triple(scale.get("voxel_offset", [0, 0, 0]),
                                        f"{where}/voxel_offset", None)
            self.encoding = str(scale.get("encoding", "raw"))
            self.resolution = list(scale.get("resolution", [1, 1, 1]))
        except (KeyError, IndexError, TypeError) as exc:
            raise SpecError(f"info: scale {index} lacks {exc}", field=where) from exc
        try:
            spec = ShardingSpec.from_dict(scale["sharding"])
        except SpecError as exc:
            raise SpecError(exc.message, field=f"{where}{exc.field}") from exc
        super().__init__(store.sub(self.key), spec, **shard_options)
        self.grid_shape = tuple(-(-s // c) for s, c in zip(self.size, self.chunk_size,
                                                           strict=True))

    def morton_code(self, position: Sequence[int]) -> int:
        """Compressed Morton code (the chunk id) of a chunk grid position ``(x, y, z)``."""
        return compressed_morton_code(position, self.grid_shape)

    def position(self, chunk_id: int) -> tuple[int, ...]:
        """Grid position ``(x, y, z)`` of a chunk id."""
        return morton_decode(chunk_id, self.grid_shape)

    def chunk_box(self, position: Sequence[int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Voxel box ``(start, stop)`` (x, y, z; relative to ``voxel_offset``), edge-clipped."""
        start = tuple(p * c for p, c in zip(position, self.chunk_size, strict=True))
        stop = tuple(min(s + c, v) for s, c, v in zip(start, self.chunk_size, self.size,
                                                      strict=True))
        return start, stop

    def to_dict(self) -> dict[str, Any]:
        """The scale's geometry and spec."""
        return {"key": self.key, "size": list(self.size), "chunk_size": list(self.chunk_size),
                "voxel_offset": list(self.voxel_offset), "resolution": self.resolution,
                "encoding": self.encoding, "grid_shape": list(self.grid_shape),
                "sharding": self.spec.to_dict()}


def _triple(value: Any, field_: str, minimum: int | None) -> tuple[int, int, int]:
    if (not isinstance(value, (list, tuple)) or len(value) != 3
            or not all(type(v) is int for v in value)
            or (minimum is not None and any(v < minimum for v in value))):
        raise SpecError(f"info: {field_} must be 3 integers"
                        + (f" >= {minimum}" if minimum is not None else "") + f", got {value!r}",
                        field=field_)
    return (value[0], value[1], value[2])


class NgImageDataset(NgDataset):
    """A sharded ``neuroglancer_multiscale_volume``: one :class:`NgScale` per scale.

    ``ds[key]`` and ``ds.keys()`` act on the first (finest) scale; ``ds.scales[key]`` on any.
    """

    format_name = "Neuroglancer precomputed sharded image volume"

    def __init__(self, store: _Store, info: dict[str, Any], **shard_options: Any) -> None:
        super().__init__(store, info)
        self.data_type = str(info.get("data_type", ""))
        if self.data_type not in _DTYPES:
            raise SpecError(f"info: data_type {self.data_type!r} is not one of "
                            f"{', '.join(sorted(_DTYPES))}", field="/data_type")
        channels = info.get("num_channels", 1)
        if type(channels) is not int or channels < 1:
            raise SpecError(f"info: num_channels must be a positive integer, got {channels!r}",
                            field="/num_channels")
        self.num_channels = channels
        self.dtype = np.dtype(self.data_type).newbyteorder("<")
        scales = info.get("scales")
        if not isinstance(scales, list) or not scales:
            raise SpecError("info: scales must be a non-empty list", field="/scales")
        self.scales: dict[str, NgScale] = {}
        self.unsharded_scales: list[str] = []
        for i, scale in enumerate(scales):
            if not isinstance(scale, Mapping):
                raise SpecError(f"info: scale {i} is not an object", field=f"/scales/{i}")
            if scale.get("sharding") is None:  # absent, or null (cloud-volume: unsharded)
                self.unsharded_scales.append(str(scale.get("key", i)))
                continue
            s = NgScale(store, scale, i, **shard_options)
            self.scales[s.key] = s
        if not self.scales:
            raise UnsupportedVersionError(f"{store.name}: no scale is sharded; unsharded "
                                          "chunk files are not read by shardkit")

    @property
    def kv(self) -> ShardedKV:
        return next(iter(self.scales.values()))

    def _scale(self, scale: str | int) -> NgScale:
        if isinstance(scale, int) and not isinstance(scale, bool):
            keys = list(self.scales)
            if not 0 <= scale < len(keys):
                raise EntryNotFoundError(scale, f"no scale number {scale}")
            return self.scales[keys[scale]]
        try:
            return self.scales[scale]
        except KeyError:
            raise EntryNotFoundError(scale, f"no sharded scale {scale!r}; scales: "
                                     f"{', '.join(self.scales)}") from None

    def _all_kvs(self) -> list[tuple[str, ShardedKV]]:
        return [(f"{k}/" if len(self.scales) > 1 else "", s) for k, s in self.scales.items()]

    def chunk_shape(self, scale: str | int, position: Sequence[int]) -> tuple[int, int, int, int]:
        """``(channels, z, y, x)`` shape of a chunk, clipped at the volume's edge."""
        s = self._scale(scale)
        start, stop = s.chunk_box(position)
        dx, dy, dz = (b - a for a, b in zip(start, stop, strict=True))
        return (self.num_channels, dz, dy, dx)

    def read_chunk(self, scale: str | int, position: Sequence[int], *, order: str = "czyx",
                   fill_missing: bool = False) -> np.ndarray | EncodedChunk:
        """The chunk at grid position ``(x, y, z)`` of a scale.

        Args:
            scale: The scale's key (``"8_8_40"``) or index.
            position: Chunk grid position ``(x, y, z)``.
            order: ``"czyx"`` (the stored order; ``arr.tobytes()`` gives the raw chunk) or
                ``"xyzc"`` (cloud-volume's and tensorstore's axis order, a view).
            fill_missing: Return zeros for a chunk that is not stored (writers skip chunks
                equal to the fill value) instead of raising.

        Returns:
            For the ``raw`` encoding, an array of the chunk, edge chunks clipped (not padded);
            for other encodings an :class:`EncodedChunk` naming the encoding.

        Raises:
            EntryNotFoundError: The position is outside the grid, or (without
                ``fill_missing``) the chunk is not stored.
            LayoutError: A raw chunk's size does not match its shape.
        """
        if order not in ("czyx", "xyzc"):
            raise ValueError(f"order must be 'czyx' or 'xyzc', got {order!r}")
        s = self._scale(scale)
        position = tuple(int(p) for p in position)
        if len(position) != 3:
            raise EntryNotFoundError(position, f"a chunk position is (x, y, z), got {position}")
        try:
            code = s.morton_code(position)
        except ValueError as exc:
            raise EntryNotFoundError(position, str(exc)) from exc
        shape = self.chunk_shape(scale, position)
        try:
            data = s[code]
        except EntryNotFoundError:
            if not fill_missing:
                raise
            if s.encoding != "raw":
                return EncodedChunk(s.encoding, b"", shape)
            arr = np.zeros(shape, dtype=self.dtype)
            return arr if order == "czyx" else arr.transpose(3, 2, 1, 0)
        if s.encoding != "raw":
            return EncodedChunk(s.encoding, data, shape)
        expected = math.prod(shape) * self.dtype.itemsize
        if len(data) != expected:
            raise LayoutError(f"chunk {code} at {position} of scale {s.key}: {len(data)} bytes, "
                              f"a raw {shape} {self.data_type} chunk has {expected}",
                              field=f"/chunks/{code}")
        arr = np.frombuffer(data, dtype=self.dtype).reshape(shape)
        return arr if order == "czyx" else arr.transpose(3, 2, 1, 0)

    def summary(self) -> dict[str, Any]:
        """Type, data type, and per scale its geometry, spec, shard and chunk counts."""
        scales = []
        for s in self.scales.values():
            scales.append({**s.to_dict(), **self._kv_summary(s)})
        first = scales[0]
        return {"format": self.format_name, "dataset": self.store.name,
                "type": self.info.get("type"), "data_type": self.data_type,
                "num_channels": self.num_channels, "sharding": first["sharding"],
                "num_shards": first["num_shards"],
                "chunk_count": sum(s["chunk_count"] for s in scales),
                "scales": scales, "unsharded_scales": self.unsharded_scales}


_KV_TYPES = {"neuroglancer_skeletons", "neuroglancer_multilod_draco", "neuroglancer_legacy_mesh"}


def open_dataset(target: str | os.PathLike[str], storage_options: Mapping[str, Any] | None = None,
                 **options: Any) -> NgDataset:
    """Open a Neuroglancer precomputed dataset folder or URL holding an ``info`` file.

    Args:
        target: Local folder or fsspec URL (``http``, ``https``, ``gs``, ``s3``, ``memory``,
            ``file``).
        storage_options: Passed to fsspec.
        options: Passed to every :class:`NgShard` (``minishard_cache_size``,
            ``max_decoded_size``).

    Raises:
        SpecError: The ``info`` file or its sharding spec is invalid.
        UnsupportedVersionError: A valid dataset shardkit does not read (unsharded).
    """
    store = _Store(target, storage_options)
    raw = store.read_bytes("info")
    try:
        info = json.loads(raw)
    except ValueError as exc:
        raise SpecError(f"{store.name}/info: not JSON: {exc}", field="/") from exc
    if not isinstance(info, dict):
        raise SpecError(f"{store.name}/info: not a JSON object", field="/")
    kind = info.get("@type")
    if kind == "neuroglancer_multiscale_volume" or (kind is None and "scales" in info):
        return NgImageDataset(store, info, **options)
    if kind == "neuroglancer_annotations_v1":
        by_id = info.get("by_id") or {}
        if not isinstance(by_id, Mapping):
            raise SpecError(f"{store.name}/info: by_id must be an object", field="/by_id")
        if by_id.get("sharding") is None:
            raise UnsupportedVersionError(f"{store.name}: annotations by id are not sharded")
        spec = _spec_at(by_id["sharding"], "/by_id/sharding")
        return NgKeyValueDataset(store, info, spec, str(by_id.get("key", "by_id")), **options)
    if info.get("sharding") is not None:  # null means unsharded (cloud-volume)
        spec = _spec_at(info["sharding"], "/sharding")
        return NgKeyValueDataset(store, info, spec, **options)
    if kind in _KV_TYPES:
        raise UnsupportedVersionError(f"{store.name}: an unsharded {kind} dataset; shardkit "
                                      "reads sharded ones only")
    raise SpecError(f"{store.name}/info: neither an image volume nor a sharded key-value "
                    f"dataset (@type {kind!r})", field="/@type")


def _spec_at(data: Any, where: str) -> ShardingSpec:
    try:
        return ShardingSpec.from_dict(data)
    except SpecError as exc:
        field_ = where + (exc.field or "").removeprefix("/sharding")
        raise SpecError(exc.message, field=field_) from exc

