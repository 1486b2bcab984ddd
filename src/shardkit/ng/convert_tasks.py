"""One conversion task of :mod:`.convert`, in whatever process runs it: the chunk files of one
output shard read, encoded and written as a shard file (``ng shard``), or one input shard's
chunks written out as files (``ng unshard``); and the chunk grid geometry both directions
name files with. :mod:`.convert` plans the tasks and runs them."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import LayoutError, ShardkitError
from ..formats.neuroglancer import ShardingSpec, SpecError, open_dataset
from ..formats.neuroglancer.decode import morton_decode_many, morton_schedule
from ..writers.neuroglancer import _gzip, shard_pieces
from .payloads import decode_mesh_manifest

if TYPE_CHECKING:
    from .convert import ShardTask, _Part

_ENCODE_BATCH = 64  # chunks read, then encoded, at a time


# -- chunk geometry -----------------------------------------------------------------------------


def chunk_name(position: Sequence[int], size: Sequence[int], chunk_size: Sequence[int],
               voxel_offset: Sequence[int]) -> str:
    """The unsharded file name ``x0-x1_y0-y1_z0-z1`` of a chunk grid position (edge-clipped)."""
    parts = []
    for p, s, c, o in zip(position, size, chunk_size, voxel_offset, strict=True):
        start = o + p * c
        parts.append(f"{start}-{min(start + c, o + s)}")
    return "_".join(parts)


def _bit_schedule(grid_shape: Sequence[int]) -> list[tuple[int, int]]:
    """For each code bit, lowest first, the (dimension, bit) of the position it holds."""
    return morton_schedule(grid_shape)


def _image_shard_codes(spec: ShardingSpec, grid: Sequence[int], shard: int) -> np.ndarray:
    """Chunk ids of an identity-hashed scale that fall in ``shard`` and inside the grid."""
    total = len(_bit_schedule(grid))
    region = spec.preshift_bits + spec.minishard_bits
    high = max(0, total - region - spec.shard_bits)
    if region >= total:
        bases = np.array([0], dtype=np.uint64) if shard == 0 else np.zeros(0, np.uint64)
        span = 1 << total
    else:
        bases = ((np.arange(1 << high, dtype=np.uint64) << np.uint64(region + spec.shard_bits))
                 | np.uint64(shard << region))
        span = 1 << region
    if not len(bases):
        return np.zeros(0, dtype=np.uint64)
    codes = (bases[:, None] + np.arange(span, dtype=np.uint64)[None, :]).ravel()
    pos = morton_decode_many(codes, grid)
    inside = np.all(pos < np.asarray(grid, dtype=np.int64), axis=1)
    return codes[inside]


# -- tasks ----------------------------------------------------------------------------------------


def _join(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name


def run_task(task: ShardTask) -> dict[str, int]:
    """Run one task (in any process); returns its counts for :class:`ConversionReport`."""
    if task.direction == "shard":
        return _shard_task(task)
    return _unshard_task(task)


def _shard_task(task: ShardTask) -> dict[str, int]:
    part = task.part
    spec = ShardingSpec.from_dict(part.spec)
    if part.scale is not None:
        scale = part.scale
        grid = part.grid
        if task.keys is not None:
            codes = np.asarray(task.keys, dtype=np.uint64)
        else:
            codes = _image_shard_codes(spec, grid, task.shard)
        positions = morton_decode_many(codes, grid)
        size, chunk = scale["size"], scale["chunk_sizes"][0]
        offset = scale.get("voxel_offset", [0, 0, 0])
        names = {chunk_name(p, size, chunk, offset): int(c)
                 for c, p in zip(codes.tolist(), positions.tolist(), strict=True)}
    elif part.meshes:
        return _shard_meshes(task, spec)
    else:
        names = {str(k): int(k) for k in (task.keys or ())}
    items: dict[int, bytes] = {}
    bytes_in = 0
    level = task.gzip_level

    def encode(value: bytes) -> bytes:
        return _gzip(value, level) if spec.data_encoding == "gzip" else value

    paths = [_join(part.folder, n) for n in names]
    with ThreadPoolExecutor(max(1, task.threads)) as pool:
        # a batch at a time: raw values are dropped once encoded, so a task holds about one
        # shard of stored bytes, and gzip (which releases the GIL) runs on every thread
        for i in range(0, len(paths), _ENCODE_BATCH):
            batch = paths[i : i + _ENCODE_BATCH]
            if task.src.remote:  # one batched request, then encode on the threads
                found = task.src.read_many(batch)
                pairs = list(zip(found, pool.map(lambda v: (len(v), encode(v)),
                                                 found.values()), strict=True))
                del found
            else:  # local files: each thread reads and encodes its own
                def load(path: str) -> tuple[int, bytes] | None:
                    value = task.src.read_many([path]).get(path)
                    return None if value is None else (len(value), encode(value))

                pairs = [(p, r) for p, r in zip(batch, pool.map(load, batch), strict=True)
                         if r is not None]
            for path, (size, value) in pairs:
                bytes_in += size
                items[names[path.rsplit("/", 1)[-1]]] = value
    if not items:
        return {"files_in": 0}
    count = len(items)
    # values are encoded already (at level 6, byte for byte what the writer makes): the
    # shard is built with raw data
    built = ShardingSpec(spec.hash, spec.preshift_bits, spec.minishard_bits, spec.shard_bits,
                         spec.minishard_index_encoding, "raw")
    pieces = shard_pieces(items, built)
    task.write_shard(spec, pieces)
    return {"shards_written": 1, "files_in": count, "files_out": 1, "chunks": count,
            "bytes_in": bytes_in, "bytes_out": sum(len(p) for p in pieces)}


def _shard_meshes(task: ShardTask, spec: ShardingSpec) -> dict[str, int]:
    """Multi-resolution meshes: each manifest is the value, its fragments lie just before it."""
    items: dict[int, bytes] = {}
    prefixes: dict[int, bytes] = {}
    bytes_in = files_in = 0
    for i in range(0, len(task.keys or ()), _ENCODE_BATCH):
        ids = (task.keys or ())[i : i + _ENCODE_BATCH]
        names = [f"{k}.index" for k in ids] + [str(k) for k in ids]
        found = task.src.read_many(names)
        for k in ids:
            manifest = found.get(f"{k}.index")
            if manifest is None:
                continue
            fragments = found.get(str(k), b"")
            need = decode_mesh_manifest(manifest).data_size
            if need != len(fragments):
                raise LayoutError(f"{task.src.target}/{k}: the manifest {k}.index lists "
                                  f"{need} bytes of fragments, the file has {len(fragments)}",
                                  field="/lods")
            items[k], prefixes[k] = manifest, fragments
            bytes_in += len(manifest) + len(fragments)
            files_in += 1 + (str(k) in found)
    if not items:
        return {"files_in": 0}
    pieces = shard_pieces(items, spec, prefixes)
    task.write_shard(spec, pieces)
    return {"shards_written": 1, "files_in": files_in, "files_out": 1, "chunks": len(items),
            "bytes_in": bytes_in, "bytes_out": sum(len(p) for p in pieces)}


def _unshard_task(task: ShardTask) -> dict[str, int]:
    part = task.part
    ds = open_dataset(task.src.target, task.src.storage_options or None)
    try:
        kv = (ds.scales[part.folder]  # type: ignore[attr-defined]  # an image dataset's
              if part.scale is not None else ds.kv)
        reader = kv.shard(task.shard)
        if reader is None:
            return {}
        counts = {"shards_written": 0, "files_in": 1, "files_out": 0, "chunks": 0,
                  "bytes_in": int(reader.source.size), "bytes_out": 0}
        if part.meshes:
            return _unshard_meshes(task, reader, counts)
        names: dict[int, str] | None = None
        if part.scale is not None:
            # every id of the shard is checked before any file is written: an id with bits
            # beyond the grid's would decode to another chunk's position, and its file name
            names = _chunk_names(part, task.shard,
                                 np.fromiter(reader.keys(), dtype=np.uint64))
        for key, value in reader.items():
            name = str(key) if names is None else names[key]
            path = _join(part.folder, name)
            counts["chunks"] += 1
            _put(task, counts, path, value)
        return counts
    finally:
        ds.close()


def _put(task: ShardTask, counts: dict[str, int], path: str, data: bytes) -> None:
    """Writes one file of the unsharded form, counted (skipped when ``check_existing`` finds it
    there already)."""
    if task.check_existing and task.dst.exists(path):
        return
    task.dst.write(path, data)
    counts["files_out"] += 1
    counts["bytes_out"] += len(data)


def _chunk_names(part: _Part, shard: int, keys: np.ndarray) -> dict[int, str]:
    """Chunk id -> file name of an image scale's ids, refusing ids that are not positions of
    the grid."""
    assert part.scale is not None
    grid = part.grid
    where = f"shard {shard} of scale {part.folder}"
    try:
        positions = morton_decode_many(keys, grid)
    except ShardkitError as exc:
        raise LayoutError(f"{where}: {exc.message}", field=exc.field) from exc
    outside = np.flatnonzero(np.any(positions >= np.asarray(grid, dtype=np.int64), axis=1))
    if len(outside):
        key = int(keys[outside[0]])
        raise LayoutError(f"{where}: chunk id {key} is outside the grid {grid}",
                          field=f"/chunks/{key}")
    size, chunk = part.scale["size"], part.scale["chunk_sizes"][0]
    offset = part.scale.get("voxel_offset", [0, 0, 0])
    names = {int(k): chunk_name(p, size, chunk, offset)
             for k, p in zip(keys.tolist(), positions.tolist(), strict=True)}
    if len(names) != len(keys):
        raise LayoutError(f"{where}: a chunk id is stored twice")
    return names


def _unshard_meshes(task: ShardTask, reader: Any, counts: dict[str, int]) -> dict[str, int]:
    spec = reader.spec
    if spec.data_encoding != "raw":
        raise SpecError("multi-resolution meshes need data_encoding raw",
                        field="/sharding/data_encoding")
    for ref in reader.iter_chunks():
        manifest = reader.source.read_range(ref.start, ref.end)
        ranges = decode_mesh_manifest(manifest, offset=ref.start).fragment_ranges(ref.start)
        first = next((int(r[0, 0]) for r in ranges if len(r)), ref.start)
        if first < spec.shard_index_size:
            raise LayoutError(f"mesh {ref.chunk_id}: its fragments would start inside the "
                              "shard index", offset=first, field=f"/chunks/{ref.chunk_id}")
        fragments = reader.source.read_range(first, ref.start)
        counts["chunks"] += 1
        _put(task, counts, f"{ref.chunk_id}.index", manifest)
        _put(task, counts, str(ref.chunk_id), fragments)
    return counts
