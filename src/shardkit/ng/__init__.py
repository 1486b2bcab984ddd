"""Neuroglancer precomputed tools: choosing sharding parameters (:mod:`.chooser`), converting
layers between the unsharded and the sharded layout (:mod:`.convert`), and decoding the payloads
stored in them (:mod:`.payloads`). The command line is ``shardkit ng`` (:mod:`shardkit.cli.ng`)."""

DEFAULT_SHARD_BYTES = 1 << 30  # a shard's worth is what a converter holds in memory
DEFAULT_SHARD_INDEX_BYTES = 1 << 13  # cloud-volume/igneous: 512 minishards
DEFAULT_MINISHARD_INDEX_BYTES = 1 << 15  # cloud-volume/igneous: ~1365 entries
