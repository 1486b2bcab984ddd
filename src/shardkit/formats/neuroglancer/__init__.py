"""Neuroglancer precomputed ``neuroglancer_uint64_sharded_v1``: shards, datasets, image volumes.

Layout: ``schemas/neuroglancer_uint64_sharded.ksy`` (generated class
:class:`NeuroglancerUint64Sharded`; its parametrised types ``ShardIndex(num_minishards)`` and
``MinishardIndex(num_chunks)`` are the two tables of a shard). This package adds the meaning:

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

Remote datasets are read through fsspec URLs with ranged requests only (each shard an
``exact`` :class:`~shardkit.remote.RemoteSource`), never a ``HEAD`` per read: the size of a
remote shard is asked for only by whole-file operations (``verify``, ``map``).

Modules: ``spec`` (the sharding spec), ``decode`` (gunzip, minishard indices, Morton codes),
``store`` (local folders and fsspec URLs), ``shard`` (one shard file), ``verify`` (its checks),
``kv`` (every shard of one spec), ``dataset`` and ``image`` (datasets and image volumes),
``cseg`` (``compressed_segmentation`` chunks, layout ``schemas/ng_compressed_segmentation.ksy``),
``loader`` (:func:`open_dataset`). Everything public is importable from this package.
"""

from __future__ import annotations

from ..._lru import ByteLRU
from .cseg import decode_compressed_segmentation
from .dataset import EncodedChunk, NgDataset, NgKeyValueDataset
from .decode import (
    MinishardIndex,
    compressed_morton_code,
    decode_minishard_index,
    gunzip_capped,
    morton_decode,
)
from .image import NgImageDataset, NgScale, NgVolume
from .kv import ShardedKV
from .loader import open_dataset
from .shard import ChunkRef, NgShard
from .spec import (
    DEFAULT_CACHE_BYTES,
    DEFAULT_MAX_DECODED_SIZE,
    DEFAULT_MAX_INDEX_SIZE,
    ShardingSpec,
    ShardLocation,
    SpecError,
)

__all__ = [
    "DEFAULT_CACHE_BYTES",
    "DEFAULT_MAX_DECODED_SIZE",
    "DEFAULT_MAX_INDEX_SIZE",
    "ByteLRU",
    "ChunkRef",
    "EncodedChunk",
    "MinishardIndex",
    "NgDataset",
    "NgImageDataset",
    "NgKeyValueDataset",
    "NgScale",
    "NgShard",
    "NgVolume",
    "ShardLocation",
    "ShardedKV",
    "ShardingSpec",
    "SpecError",
    "compressed_morton_code",
    "decode_compressed_segmentation",
    "decode_minishard_index",
    "gunzip_capped",
    "morton_decode",
    "open_dataset",
]
