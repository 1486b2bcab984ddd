"""The sharding spec of ``neuroglancer_uint64_sharded_v1``: hash, bits, encodings, shard names."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..._layouts import layouts, struct_of
from ..._lazy import lazy_module
from ...errors import FormatError, LimitExceededError
from ...hashing.murmur import hash_uint64, hash_uint64_array

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_module("numpy")

SHARDED_TYPE = "neuroglancer_uint64_sharded_v1"
HASHES = ("identity", "murmurhash3_x86_128")
ENCODINGS = ("raw", "gzip")
DEFAULT_MAX_DECODED_SIZE = 1 << 30  # cap on any one gunzipped chunk
DEFAULT_MAX_INDEX_SIZE = 1 << 26  # cap on any one gunzipped minishard index (2.8M chunks)
DEFAULT_CACHE_BYTES = 1 << 26  # decoded minishard indices and shard indices kept per dataset
DEFAULT_BLOCK_SIZE = 1 << 23  # verify reads remote shards in requests of this size
_ENTRY_LAYOUT = layouts.NEUROGLANCER_UINT64_SHARDED__SHARD_INDEX_ENTRY
_ENTRY = struct_of(_ENTRY_LAYOUT)  # start, end (u64 LE)
ENTRY_SIZE = _ENTRY.size  # one shard index entry: two u64
#: The shard index read or written whole: an (n, 2) array of this dtype (both fields are u64 LE)
(ENTRY_WORD,) = {spec for _, spec in _ENTRY_LAYOUT.dtype}
_MASK64 = (1 << 64) - 1
_MAX_GAP = 1 << 16  # coalesce ranges closer than this
_MAX_REQUEST = 1 << 26  # ... into requests of at most this many bytes
_SHARD_NAME = re.compile(r"^([0-9a-f]+)\.shard(?:\.gz)?$")
MAX_INFO_BYTES = 1 << 24  # cap on an info file (or any JSON a dataset or the user gives)
MAX_INFO_DEPTH = 64  # ... and on its nesting (an info is a few levels deep)


class SpecError(FormatError, ValueError):
    """A sharding spec (or an ``info`` file) with a missing or invalid field."""


def parse_json(raw: bytes | bytearray | str, what: str, *, field: str = "/",
               limit: int = MAX_INFO_BYTES) -> Any:
    """JSON text of an ``info`` file (or a sharding spec) as Python values.

    Raises:
        LimitExceededError: ``raw`` is longer than ``limit`` bytes.
        SpecError: It is not JSON, or it is nested deeper than :data:`MAX_INFO_DEPTH` levels.
    """
    if len(raw) > limit:
        raise LimitExceededError(f"{what}: {len(raw)} bytes, more than the {limit}-byte cap "
                                 "of an info file", field=field)
    try:
        value = json.loads(raw)
    except RecursionError as exc:
        raise SpecError(f"{what}: JSON nested deeper than {MAX_INFO_DEPTH} levels",
                        field=field) from exc
    except ValueError as exc:  # JSONDecodeError, and UnicodeDecodeError of bad bytes
        raise SpecError(f"{what}: not JSON: {exc}", field=field) from exc
    stack = [(value, 0)]
    while stack:  # iteratively: later steps (copies, rendering) recurse
        node, depth = stack.pop()
        if depth > MAX_INFO_DEPTH:
            raise SpecError(f"{what}: JSON nested deeper than {MAX_INFO_DEPTH} levels",
                            field=field)
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)
    return value


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
            spec = parse_json(spec, "sharding spec", field="/sharding")
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
        return cls.from_dict(spec)  # type: ignore[arg-type]  # narrowed to a Mapping above

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

    def shard_and_minishard(self, key: int) -> tuple[int, int]:
        """``(shard, minishard)`` of ``key`` (:meth:`locate` without the object)."""
        shifted = key >> self.preshift_bits
        h = shifted if self.hash == "identity" else hash_uint64(shifted)
        return ((h >> self.minishard_bits) & ((1 << self.shard_bits) - 1),
                h & ((1 << self.minishard_bits) - 1))

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
