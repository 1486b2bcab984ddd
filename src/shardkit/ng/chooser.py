"""Choosing ``neuroglancer_uint64_sharded_v1`` parameters for a layer.

The sharded format leaves three numbers to the writer: how many low bits of a key are shifted
away before hashing (``preshift_bits``), how many hashed bits pick a minishard inside a shard
(``minishard_bits``) and how many pick the shard file (``shard_bits``). This module proposes
them from what the writer knows, following the reasoning published with the format:

Image chunks (keys are compressed Morton codes of the chunk grid position):
    The identity hash keeps neighbouring chunks together. A compressed Morton code interleaves
    the bits of x, y and z (x lowest), each coordinate contributing the
    ``ceil(log2(grid[d]))`` bits it needs, so its ``r`` lowest bits always enumerate a
    chunk-aligned box of ``2**bx x 2**by x 2**bz`` chunks (``bx + by + bz == r``). With
    ``preshift_bits + minishard_bits == r`` and ``shard_bits == total_bits - r`` every shard
    is such a box and every chunk of the volume has its own place (the recipe jbms gave in
    google/tensorstore issue 13; with ``r`` a multiple of 3 the box is a cube). ``r`` is the
    largest value whose box still fits the shard size target; the minishards split the box
    into runs of ``2**preshift_bits`` consecutive codes, as few as keep each minishard index
    within its target.

Segment ids (meshes, skeletons, annotations by id):
    Ids are spread by ``murmurhash3_x86_128``, so shards and minishards fill evenly whatever
    the ids are. The number of minishards is the number of keys over the entries a minishard
    index may hold, rounded up to a power of two; the shard bits take as many of those bits as
    the shard index size, the shard size and ``min_shards`` ask for; the rest stay minishard
    bits. With cloud-volume's targets (8 KiB shard index, 32 KiB minishard index) this gives
    igneous's and cloud-volume's choices; with the targets of the pipeline Google uses for
    annotations (1000 keys per minishard, 50 MB shards, google/neuroglancer pull request 522)
    it gives that pipeline's bits. ``preshift_bits`` stays 0 (random ids gain nothing from
    it) unless the caller knows runs of consecutive ids belong together.

Encodings: ``gzip`` minishard indices (they are delta-coded, so they shrink well); ``gzip``
data unless the payload is already compressed (``jpeg``, ``png``, Draco meshes).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..formats.neuroglancer import ShardingSpec
from . import DEFAULT_MINISHARD_INDEX_BYTES, DEFAULT_SHARD_BYTES, DEFAULT_SHARD_INDEX_BYTES

__all__ = [
    "DEFAULT_MINISHARD_INDEX_BYTES",
    "DEFAULT_SHARD_BYTES",
    "DEFAULT_SHARD_INDEX_BYTES",
    "SpecChoice",
    "choose_hashed_spec",
    "choose_image_spec",
    "choose_spatial_spec",
    "image_shard_shape",
    "morton_bits",
]

ENTRY_BYTES = 24  # a minishard index entry: three u64 (id delta, offset delta, size)
SHARD_ENTRY_BYTES = 16  # a shard index entry: two u64
_PRECOMPRESSED = ("jpeg", "png", "fpzip", "kempressed", "zfpc", "jxl", "draco")


def _ceil_log2(n: float) -> int:
    """Smallest ``b >= 0`` with ``2**b >= n``."""
    return 0 if n <= 1 else int(math.ceil(n) - 1).bit_length()


def _floor_log2(n: float) -> int:
    """Largest ``b >= 0`` with ``2**b <= n`` (0 for ``n < 2``)."""
    return 0 if n < 2 else int(n).bit_length() - 1


def morton_bits(grid_shape: Sequence[int]) -> list[int]:
    """Bits each grid dimension contributes to a compressed Morton code."""
    return [_ceil_log2(int(g)) for g in grid_shape]


def _box_bits(grid_shape: Sequence[int], low_bits: int) -> list[int]:
    """Per dimension, how many of the ``low_bits`` lowest code bits are its own."""
    bits = morton_bits(grid_shape)
    own = [0] * len(bits)
    taken = 0
    level = 0
    while taken < low_bits and level < max(bits, default=0):
        for d, b in enumerate(bits):
            if level < b and taken < low_bits:
                own[d] += 1
                taken += 1
        level += 1
    return own


def image_shard_shape(spec: ShardingSpec, size: Sequence[int],
                      chunk_size: Sequence[int]) -> tuple[int, ...]:
    """The chunk-aligned box (in chunks, ``x, y, z``) one shard of an identity-hashed scale covers.

    The box is not clipped to the volume; shards at the upper edge hold fewer chunks.
    """
    grid = [-(-int(s) // int(c)) for s, c in zip(size, chunk_size, strict=True)]
    own = _box_bits(grid, spec.preshift_bits + spec.minishard_bits)
    return tuple(1 << b for b in own)


@dataclass
class SpecChoice:
    """A proposed sharding spec with the numbers that justify it.

    Attributes:
        spec: The proposal.
        kind: ``"image"`` (identity hash, Morton-coded chunks) or ``"hashed"`` (segment ids).
        num_keys: Chunks (image) or ids (hashed) the layer holds (at most).
        key_bytes: Bytes per key assumed (a chunk, or the mean object).
        targets: The targets the choice was made for.
        estimates: What the proposal gives: shards, keys per shard and per minishard, index
            and shard sizes (uncompressed).
        reasons: One line per decision, for ``explain``.
        warnings: Targets the proposal cannot meet, and why.
    """

    spec: ShardingSpec
    kind: str
    num_keys: int
    key_bytes: float
    targets: dict[str, int]
    estimates: dict[str, Any]
    reasons: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def explain(self) -> str:
        """The reasoning, as text for a terminal."""
        lines = [f"proposed sharding ({self.kind}): " + ", ".join(
            f"{k}={v}" for k, v in self.spec.to_dict().items() if k != "@type")]
        lines += [f"  - {r}" for r in self.reasons]
        lines.append("  estimates: " + ", ".join(f"{k}={_fmt(v)}"
                                                 for k, v in self.estimates.items()))
        lines += [f"  warning: {w}" for w in self.warnings]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the spec, the inputs, the estimates and the reasons."""
        return {"sharding": self.spec.to_dict(), "kind": self.kind, "num_keys": self.num_keys,
                "key_bytes": self.key_bytes, "targets": dict(self.targets),
                "estimates": dict(self.estimates), "reasons": list(self.reasons),
                "warnings": list(self.warnings)}


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return "x".join(str(v) for v in value)
    return str(value)


def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"  # pragma: no cover


def _check_targets(shard_bytes: int, shard_index_bytes: int, minishard_index_bytes: int) -> None:
    for name, value in (("shard_bytes", shard_bytes), ("shard_index_bytes", shard_index_bytes),
                        ("minishard_index_bytes", minishard_index_bytes)):
        if type(value) is not int or value <= 0:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")


def choose_image_spec(size: Sequence[int], chunk_size: Sequence[int], *,
                      data_type: str = "uint8", num_channels: int = 1, encoding: str = "raw",
                      chunk_bytes: float | None = None,
                      shard_bytes: int = DEFAULT_SHARD_BYTES,
                      shard_index_bytes: int = DEFAULT_SHARD_INDEX_BYTES,
                      minishard_index_bytes: int = DEFAULT_MINISHARD_INDEX_BYTES,
                      data_encoding: str | None = None,
                      minishard_index_encoding: str = "gzip") -> SpecChoice:
    """Propose the sharding of one image scale.

    Args:
        size: Volume size in voxels ``(x, y, z)``.
        chunk_size: Chunk size in voxels ``(x, y, z)``.
        data_type: Voxel type (for the uncompressed chunk size).
        num_channels: Channels per voxel.
        encoding: The scale's chunk encoding (``raw``, ``jpeg``, ``compressed_segmentation``...).
        chunk_bytes: Bytes one chunk takes in a shard; default the uncompressed size, which
            bounds a shard (and a converter's memory) by ``shard_bytes`` whatever the data.
        shard_bytes: Target (maximum) bytes of one shard file.
        shard_index_bytes: Target (maximum) size of a shard index (16 bytes per minishard).
        minishard_index_bytes: Target (maximum) uncompressed size of a minishard index
            (24 bytes per chunk).
        data_encoding: ``gzip`` or ``raw``; default ``raw`` for already compressed encodings
            (jpeg, png...) and ``gzip`` otherwise.
        minishard_index_encoding: ``gzip`` (default) or ``raw``.

    Raises:
        ValueError: A size, chunk size or target is not positive, or the grid needs more than
            64 bits.
    """
    size = [int(s) for s in size]
    chunk = [int(c) for c in chunk_size]
    if len(size) != 3 or len(chunk) != 3 or min(size + chunk) < 1:
        raise ValueError(f"size and chunk_size must be 3 positive integers, got {size}, {chunk}")
    _check_targets(shard_bytes, shard_index_bytes, minishard_index_bytes)
    grid = [-(-s // c) for s, c in zip(size, chunk, strict=True)]
    bits = morton_bits(grid)
    total_bits = sum(bits)
    if total_bits > 64:
        raise ValueError(f"a grid of {grid} chunks needs {total_bits} bits, more than 64")
    num_chunks = math.prod(grid)
    uncompressed = math.prod(chunk) * np.dtype(data_type).itemsize * int(num_channels)
    per_chunk = float(chunk_bytes) if chunk_bytes is not None else float(uncompressed)
    if per_chunk <= 0:
        raise ValueError(f"chunk_bytes must be positive, got {chunk_bytes!r}")
    reasons = [
        f"grid {grid[0]}x{grid[1]}x{grid[2]} chunks of {chunk[0]}x{chunk[1]}x{chunk[2]} voxels: "
        f"Morton codes use {bits[0]}+{bits[1]}+{bits[2]} = {total_bits} bits",
        "identity hash: neighbouring chunks share a shard, so a shard is a chunk-aligned box "
        "(google/tensorstore issue 13)",
    ]
    warnings: list[str] = []
    region, preshift_bits, minishard_bits = _image_bits(
        total_bits, per_chunk, shard_bytes, shard_index_bytes, minishard_index_bytes,
        reasons, warnings)
    shard_bits = total_bits - region
    reasons.append(f"shard_bits = {total_bits} - {region} = {shard_bits}: every Morton bit "
                   "is used, so each shard file is one box")
    if data_encoding is None:
        data_encoding = "raw" if encoding in _PRECOMPRESSED else "gzip"
        reasons.append(f"data_encoding {data_encoding}: "
                       + (f"{encoding} chunks are already compressed" if data_encoding == "raw"
                          else f"{encoding} chunks compress"))
    spec = ShardingSpec("identity", preshift_bits, minishard_bits, shard_bits,
                        minishard_index_encoding, data_encoding)
    box = image_shard_shape(spec, size, chunk)
    num_shards = math.prod(-(-g // b) for g, b in zip(grid, box, strict=True))
    per_shard = min(1 << region, num_chunks)
    per_minishard = min(1 << preshift_bits, num_chunks)
    estimates = {
        "chunks": num_chunks,
        "shards": num_shards,
        "shard_shape_chunks": list(box),
        "shard_shape_voxels": [b * c for b, c in zip(box, chunk, strict=True)],
        "chunks_per_shard": per_shard,
        "chunks_per_minishard": per_minishard,
        "shard_bytes": int(per_shard * per_chunk),
        "shard_index_bytes": spec.shard_index_size,
        "minishard_index_bytes": per_minishard * ENTRY_BYTES,
    }
    return SpecChoice(spec, "image", num_chunks, per_chunk,
                      {"shard_bytes": shard_bytes, "shard_index_bytes": shard_index_bytes,
                       "minishard_index_bytes": minishard_index_bytes},
                      estimates, reasons, warnings)


def _image_bits(total_bits: int, per_chunk: float, shard_bytes: int, shard_index_bytes: int,
                minishard_index_bytes: int, reasons: list[str],
                warnings: list[str]) -> tuple[int, int, int]:
    """The Morton bits one shard covers (``preshift_bits + minishard_bits``), and how they
    split: as many chunks per shard as ``shard_bytes`` holds, and minishard indices within
    ``minishard_index_bytes`` unless the shard index would pass ``shard_index_bytes``.
    Returns (region, preshift_bits, minishard_bits); the reasons and warnings are appended."""
    fit = _floor_log2(shard_bytes / per_chunk)
    region = min(fit, total_bits)
    if shard_bytes < per_chunk:
        warnings.append(f"one chunk ({_human(per_chunk)}) is larger than the shard target "
                        f"({_human(shard_bytes)}): one chunk per shard")
    reasons.append(
        f"{_human(shard_bytes)} shard target / {_human(per_chunk)} per chunk: up to 2^{fit} "
        f"chunks per shard; preshift_bits + minishard_bits = {region}"
        + (" (the whole volume)" if region == total_bits else ""))
    max_entries = max(1, minishard_index_bytes // ENTRY_BYTES)
    max_minishard_bits = _floor_log2(max(1, shard_index_bytes // SHARD_ENTRY_BYTES))
    minishard_bits = max(0, region - _floor_log2(max_entries))
    if minishard_bits > max_minishard_bits:
        warnings.append(f"a minishard index of 2^{region - max_minishard_bits} chunks exceeds "
                        f"{minishard_index_bytes} bytes, but more minishards would exceed the "
                        f"shard index target of {shard_index_bytes} bytes")
        minishard_bits = max_minishard_bits
    preshift_bits = region - minishard_bits
    reasons.append(
        f"minishard index target {minishard_index_bytes} bytes = {max_entries} entries: "
        f"minishard_bits = {minishard_bits} (2^{preshift_bits} consecutive chunks per "
        f"minishard), preshift_bits = {preshift_bits}")
    return region, preshift_bits, minishard_bits


def choose_hashed_spec(num_keys: int, *, total_bytes: int | None = None,
                       shard_bytes: int = DEFAULT_SHARD_BYTES,
                       shard_index_bytes: int = DEFAULT_SHARD_INDEX_BYTES,
                       minishard_index_bytes: int = DEFAULT_MINISHARD_INDEX_BYTES,
                       min_shards: int = 1, preshift_bits: int = 0,
                       data_encoding: str = "gzip",
                       minishard_index_encoding: str = "gzip") -> SpecChoice:
    """Propose the sharding of a layer keyed by segment id (meshes, skeletons, annotations).

    Args:
        num_keys: How many ids the layer holds.
        total_bytes: Their total size in bytes, if known (then shards also keep under
            ``shard_bytes``).
        shard_bytes: Target (maximum) bytes of one shard file.
        shard_index_bytes: Target size of a shard index (16 bytes per minishard).
        minishard_index_bytes: Target uncompressed size of a minishard index (24 bytes per id).
        min_shards: At least this many shard files (rounded to a power of two as
            cloud-volume does).
        preshift_bits: Low id bits to ignore when hashing (0 for random ids; runs of
            ``2**preshift_bits`` consecutive ids then share a minishard).
        data_encoding: ``gzip`` (default) or ``raw`` (Draco meshes are compressed already).
        minishard_index_encoding: ``gzip`` (default) or ``raw``.

    Raises:
        ValueError: A negative count or a target that is not positive.
    """
    if type(num_keys) is not int or num_keys < 0:
        raise ValueError(f"num_keys must be a non-negative integer, got {num_keys!r}")
    _check_targets(shard_bytes, shard_index_bytes, minishard_index_bytes)
    if type(min_shards) is not int or min_shards < 1:
        raise ValueError(f"min_shards must be a positive integer, got {min_shards!r}")
    max_entries = minishard_index_bytes / ENTRY_BYTES
    max_minishards = shard_index_bytes // SHARD_ENTRY_BYTES
    reasons = ["murmurhash3_x86_128: ids spread evenly over shards and minishards whatever "
               "their values"]
    total_minishard_bits = _ceil_log2(num_keys / max_entries)
    reasons.append(f"{num_keys} ids / {max_entries:.0f} entries per minishard index "
                   f"({minishard_index_bytes} bytes): 2^{total_minishard_bits} minishards "
                   "in all")
    by_index = max(0, total_minishard_bits - _floor_log2(max(1, max_minishards)))
    by_size = _ceil_log2(total_bytes / shard_bytes) if total_bytes else 0
    by_count = round(math.log2(min_shards))
    shard_bits = max(by_index, by_size, by_count)
    why = [f"shard index of at most {max_minishards} minishards needs {by_index}"]
    if total_bytes:
        why.append(f"{_human(total_bytes)} / {_human(shard_bytes)} per shard needs {by_size}")
    if min_shards > 1:
        why.append(f"min_shards {min_shards} needs {by_count}")
    reasons.append(f"shard_bits = {shard_bits}: " + "; ".join(why))
    minishard_bits = max(0, total_minishard_bits - shard_bits)
    if minishard_bits + shard_bits > 64:
        minishard_bits = 64 - shard_bits
    reasons.append(f"minishard_bits = {total_minishard_bits} - {shard_bits} = {minishard_bits}")
    if preshift_bits:
        reasons.append(f"preshift_bits = {preshift_bits}: runs of 2^{preshift_bits} "
                       "consecutive ids share a minishard")
    else:
        reasons.append("preshift_bits = 0: random ids gain nothing from a preshift")
    spec = ShardingSpec("murmurhash3_x86_128", int(preshift_bits), minishard_bits, shard_bits,
                        minishard_index_encoding, data_encoding)
    total_minishards = 1 << (shard_bits + minishard_bits)
    per_minishard = num_keys / total_minishards
    estimates: dict[str, Any] = {
        "shards": min(1 << shard_bits, max(num_keys, 1)),
        "ids_per_shard": num_keys / (1 << shard_bits),
        "ids_per_minishard": per_minishard,
        "shard_index_bytes": spec.shard_index_size,
        "minishard_index_bytes": int(per_minishard * ENTRY_BYTES),
    }
    warnings: list[str] = []
    if total_bytes:
        estimates["shard_bytes"] = int(total_bytes / (1 << shard_bits))
    if per_minishard > max_entries:
        warnings.append(f"minishard indices average {per_minishard:.0f} entries, over the "
                        f"{max_entries:.0f} target (bits ran out)")
    key_bytes = (total_bytes / num_keys) if total_bytes and num_keys else 0.0
    return SpecChoice(spec, "hashed", num_keys, key_bytes,
                      {"shard_bytes": shard_bytes, "shard_index_bytes": shard_index_bytes,
                       "minishard_index_bytes": minishard_index_bytes},
                      estimates, reasons, warnings)


def choose_spatial_spec(grid_shape: Sequence[int], *, cell_bytes: float,
                        num_cells: int | None = None,
                        shard_bytes: int = DEFAULT_SHARD_BYTES,
                        shard_index_bytes: int = DEFAULT_SHARD_INDEX_BYTES,
                        minishard_index_bytes: int = DEFAULT_MINISHARD_INDEX_BYTES,
                        data_encoding: str = "gzip",
                        minishard_index_encoding: str = "gzip") -> SpecChoice:
    """Propose the sharding of one spatial index level of an annotation layer.

    Cells are keyed by the compressed Morton code of their grid position (any rank), so the
    reasoning of :func:`choose_image_spec` applies: the identity hash keeps neighbouring cells
    in one shard, ``preshift_bits + minishard_bits`` lowest code bits make a shard's box of
    cells, sized so that a shard holds about ``shard_bytes``, and minishards of at most
    ``minishard_index_bytes / 24`` cells (google/neuroglancer pull request 522 does the same
    for annotations).

    Args:
        grid_shape: Cells per dimension.
        cell_bytes: Mean bytes of a stored cell.
        num_cells: Cells that hold annotations (default every cell of the grid).
    """
    grid = [int(g) for g in grid_shape]
    if not grid or min(grid) < 1:
        raise ValueError(f"grid_shape must be positive integers, got {grid}")
    _check_targets(shard_bytes, shard_index_bytes, minishard_index_bytes)
    bits = morton_bits(grid)
    total_bits = sum(bits)
    cells = math.prod(grid)
    filled = cells if num_cells is None else max(1, int(num_cells))
    per_cell = max(1.0, float(cell_bytes)) * filled / cells  # bytes per grid position
    fit = _floor_log2(shard_bytes / per_cell)
    region = min(fit, total_bits)
    max_entries = max(1, minishard_index_bytes // ENTRY_BYTES)
    max_minishard_bits = _floor_log2(max(1, shard_index_bytes // SHARD_ENTRY_BYTES))
    minishard_bits = min(max(0, region - _floor_log2(max_entries)), max_minishard_bits)
    preshift_bits = region - minishard_bits
    shard_bits = total_bits - region
    reasons = [f"grid {'x'.join(map(str, grid))} cells: Morton codes use {total_bits} bits",
               "identity hash: neighbouring cells share a shard",
               f"{_human(shard_bytes)} shard target / {_human(per_cell)} per cell position: "
               f"preshift_bits + minishard_bits = {region}",
               f"minishard_bits = {minishard_bits}, preshift_bits = {preshift_bits}, "
               f"shard_bits = {shard_bits}"]
    spec = ShardingSpec("identity", preshift_bits, minishard_bits, shard_bits,
                        minishard_index_encoding, data_encoding)
    estimates = {"cells": cells, "filled_cells": filled, "shards": 1 << shard_bits,
                 "shard_index_bytes": spec.shard_index_size}
    return SpecChoice(spec, "spatial", filled, float(cell_bytes),
                      {"shard_bytes": shard_bytes, "shard_index_bytes": shard_index_bytes,
                       "minishard_index_bytes": minishard_index_bytes}, estimates, reasons, [])
