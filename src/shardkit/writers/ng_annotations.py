"""Writing Neuroglancer precomputed annotation layers (``neuroglancer_annotations_v1``).

:func:`write_annotations` streams any iterable of annotations: each is encoded once (by
:mod:`.ng_annotation_encode`) and appended to a temporary spill file beside a fixed-size row
(id, bounding box, where its bytes are) of a row table. Then every pass that groups
annotations by key (the check that ids are unique, by_id and relationship indexes, each
spatial level's cells) goes through ``(key, row)`` pairs partitioned into temporary files past
``bucket_bytes`` (64 MiB by default, parts sized for the arrays they are processed with) and
read back a part (or a chunk) at a time. Sharded indexes are partitioned by ranges of
minishards and each shard is written as a stream (:mod:`.ng_annotation_shards`); the values
of a part are read from the spill files with a few large reads (:mod:`.ng_annotation_values`).
Memory holds a part and its values, a chunk, and a bit per annotation (which are still to
place in the spatial index), whatever the size of the layer or of its shards. It writes:

- ``by_id``: id -> record and relationships;
- one index per relationship: segment id -> the related annotations;
- the spatial index, level by level from one cell over the whole bounds, each level halving
  the widest cell sizes (the spec's recommendation): at each level every remaining annotation
  is emitted with probability ``min(1, limit / maxCount)`` (``maxCount`` the fullest cell's
  remaining annotations), chosen by a hash of its id and the level, so the same input gives the
  same layer; an emitted annotation goes in every cell of that level it meets; the rest go on
  to the next level. Levels stop when nothing remains; a cell never holds more than ``limit``
  annotations except at the last level allowed (``max_levels``).

Each index is sharded or not: ``sharded=True`` chooses the sharding as ``shardkit ng spec``
does (``murmurhash3_x86_128`` for ids, the identity hash on Morton codes for spatial levels),
``False`` writes one file per key, and a mapping gives a spec (or ``True``/``False``) per index
(``"by_id"``, a relationship id, ``"spatial"``). The ``info`` lists the properties in their
stored order (size order), so that readers which lay them out in ``info`` order (neuroglancer
2.41.2's Python reader) read them right. ``info`` is written last; every file is atomic.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, cast

import numpy as np

from ..formats.neuroglancer import ShardingSpec
from ..formats.neuroglancer.annotation_layout import (
    ANNOTATION_TYPES,
    PROPERTY_TYPES,
    AnnotationLayout,
    stored_order,
)
from ..formats.neuroglancer.annotation_spill import (
    DEFAULT_BUCKET_BYTES,
    Buckets,
    mix64,
)
from ..formats.neuroglancer.store import check_relative
from .ng_annotation_encode import _Encoder
from .ng_annotation_shards import (
    ShardParts,
    merge_counts,
    sized_buckets,
    stream_opener,
    write_sharded,
)
from .ng_annotation_shards import runs as _runs
from .ng_annotation_values import Piece, Values

__all__ = ["write_annotations"]

_MASK64 = (1 << 64) - 1
_BATCH = 8192  # annotations encoded at once
_CHUNK = 1 << 18  # rows of the row table read at once by the passes over it
_DROP_BYTES = 32 << 20  # read through the maps between two drops of their pages
_WORK = 6  # the arrays a part is sorted, hashed and sampled with, over its pairs' bytes
DEFAULT_LIMIT = 10_000
MAX_LEVELS = 20


def _uniform(ids: np.ndarray, salt: int) -> np.ndarray:
    mixed = mix64(np.asarray(ids, np.uint64) ^ np.uint64((salt * 0x2545F4914F6CDD1D) & _MASK64),
                  inplace=True)
    return (mixed >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def _distinct(values: np.ndarray) -> np.ndarray:
    return _runs(np.sort(values))[0]


def _relationship_meta(relationships: Sequence[Any]) -> list[dict[str, Any]]:
    out = []
    for r in relationships:
        meta = {"id": r} if isinstance(r, str) else dict(r)
        if not isinstance(meta.get("id"), str) or not meta["id"]:
            raise ValueError(f"a relationship needs a string id, got {r!r}")
        meta.setdefault("key", f"rel_{meta['id']}")
        check_relative(meta["key"], f"relationships/{meta['id']}/key")
        out.append(meta)
    if len({m["id"] for m in out}) != len(out):
        raise ValueError("relationship ids must be unique")
    return out


class _Spill:
    """Bytes appended to a temporary file, read back memory-mapped (slices are bytes)."""

    def __init__(self, folder: str, name: str) -> None:
        self.file = tempfile.NamedTemporaryFile(dir=folder, prefix=f".annotations-{name}-",  # noqa: SIM115
                                                suffix=".spill", delete=False)
        self.pos = 0
        self.mm: Any = b""

    def add(self, data: bytes) -> int:
        start = self.pos
        self.file.write(data)
        self.pos += len(data)
        return start

    def close_writing(self) -> None:
        import mmap

        self.file.flush()
        self.file.close()
        if self.pos:
            with open(self.file.name, "rb") as fh:
                self.mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)

    def get(self, start: int, end: int) -> bytes:
        return self.mm[start:end]  # type: ignore[no-any-return]

    def remove(self) -> None:
        if not isinstance(self.mm, bytes):
            with contextlib.suppress(BufferError):
                self.mm.close()
        self.mm = b""
        with contextlib.suppress(OSError):
            os.unlink(self.file.name)


def _level_grids(lower: np.ndarray, upper: np.ndarray, scales: np.ndarray, levels: int
                 ) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(grid_shape, chunk_size)`` per level: each level halves the widest cell sizes
    (those within 1.5x of half the widest, in physical units)."""
    size = np.maximum(upper - lower, 1e-30) * scales
    grid = np.ones(len(size), dtype=np.int64)
    out = [(grid.copy(), size / scales)]
    for _ in range(1, levels):
        target = size.max() / 2
        split = (size == size.max()) | (size / target > 1.5)
        size = np.where(split, size / 2, size)
        grid = np.where(split, grid * 2, grid)
        out.append((grid.copy(), size / scales))
    return out


def write_annotations(path: str | os.PathLike[str], annotations: Iterable[Mapping[str, Any]], *,
                      annotation_type: str, dimensions: Mapping[str, Sequence[Any]],
                      properties: Sequence[Mapping[str, Any]] = (),
                      relationships: Sequence[str | Mapping[str, Any]] = (),
                      lower_bound: Sequence[float] | None = None,
                      upper_bound: Sequence[float] | None = None,
                      sharded: bool | Mapping[str, Any] = True,
                      limit: int = DEFAULT_LIMIT, max_levels: int = MAX_LEVELS,
                      storage_options: Mapping[str, Any] | None = None,
                      bucket_bytes: int = DEFAULT_BUCKET_BYTES) -> dict[str, Any]:
    """Write a Neuroglancer precomputed annotation layer.

    Args:
        path: Output folder or fsspec URL.
        annotations: Dicts: ``id`` (uint64), the geometry (``point``; ``point_a`` and
            ``point_b``; ``center`` and ``radii``; ``points``), ``properties`` (property id ->
            value; an enum label is taken for its value, ``rgb``/``rgba`` as a list or
            ``#rrggbb[aa]``) and ``relationships`` (relationship id -> segment ids).
        annotation_type: ``point``, ``line``, ``axis_aligned_bounding_box``, ``ellipsoid`` or
            ``polyline`` (any case).
        dimensions: ``{name: [scale, unit]}`` as in ``info``.
        properties: ``info`` property objects (``id``, ``type``, optional ``description``,
            ``enum_values``/``enum_labels``, and ``default`` for annotations without a value).
        relationships: Relationship ids (or ``info`` objects with ``id`` and ``key``).
        lower_bound: The layer's lower bound; by default the annotations' lowest point.
        upper_bound: The layer's upper bound; by default the annotations' highest point,
            nudged up so that it is exclusive.
        sharded: ``True``, ``False``, or ``{"by_id" | relationship id | "spatial": spec, True
            or False}``.
        limit: Most annotations per spatial cell.
        max_levels: Most spatial index levels.
        storage_options: For fsspec URLs.
        bucket_bytes: Memory bound of the passes that group annotations by key (the id
            check, the by_id and relationship shards): past it they are partitioned into
            temporary files beside the output (or in the system's temporary folder).

    Returns:
        The ``info`` written.

    Raises:
        ValueError: An annotation or an argument is invalid (nothing is left under ``path``
            but complete files; ``info`` is written last).
    """
    from ..ng.chooser import choose_hashed_spec, choose_spatial_spec
    from .neuroglancer import _writer

    kind = _checked_kind(annotation_type, limit)
    dims = {str(k): list(v) for k, v in dict(dimensions).items()}
    rank = len(dims)
    rel_meta = _relationship_meta(relationships)
    props = _stored_properties(properties)
    base_info = _base_info(kind, dims, props, rel_meta)
    layout = AnnotationLayout(base_info)
    encoder = _Encoder(layout, props)
    scales = _scales_of(dims)
    want = _wanted(sharded)

    dest = os.fspath(path)
    spill_dir = _made_folder(dest)
    put = _writer(dest, storage_options)
    row_dtype = _row_dtype(rank)
    spills: list[_Spill] = []  # made inside the try: removed however a later one fails
    files: list[Any] = []
    opened: list[Values] = []
    try:
        spill = _Spill(spill_dir, "records")
        spills.append(spill)
        tails = _Spill(spill_dir, "relationships")
        spills.append(tails)
        rows = tempfile.TemporaryFile()  # noqa: SIM115 - fixed-size rows, memory-mapped later
        files.append(rows)
        pairs: list[Any] = []
        for _ in rel_meta:
            pairs.append(tempfile.TemporaryFile())  # noqa: SIM115 - (segment, row)
            files.append(pairs[-1])
        staged = _Staged(encoder, rel_meta, spill, tails, rows, pairs, row_dtype, rank)
        staged.add_all(annotations)
        table = staged.finish()
        ids = np.asarray(table["id"])
        maps = [getattr(table, "_mmap", None), spill.mm, tails.mm]
        put = _DroppingPut(put, maps, stream_opener(dest, storage_options))
        _check_unique(ids, bucket_bytes, spill_dir, put.tick)
        put.drop()
        lower, upper = _layer_bounds(lower_bound, upper_bound, staged, rank)
        values = Values(rows.fileno(), row_dtype, len(table), layout.record_bytes,
                        spill.file.name, spill.pos, tails.file.name, tails.pos,
                        fixed_record=layout.type != "polyline",
                        fixed_tail=staged.tail_min if staged.tail_min == staged.tail_max
                        else None)
        opened.append(values)
        info: dict[str, Any] = {**base_info, "lower_bound": lower.tolist(),
                                "upper_bound": upper.tolist()}
        choose = _hashed_chooser(want, choose_hashed_spec)
        info["by_id"] = _write_by_id(put, values, ids, choose, row_dtype, bucket_bytes,
                                     spill_dir)
        info["relationships"] = [
            _write_relationship(put, m, f, values, ids, choose, bucket_bytes, spill_dir)
            for m, f in zip(rel_meta, pairs, strict=True)]
        put.drop()
        info["spatial"] = _write_spatial(put, table, kind, lower, upper, scales, limit,
                                         max_levels, values, want, choose_spatial_spec,
                                         layout, spill, bucket_bytes, spill_dir)
        put("info", json.dumps(info).encode())  # last: a layer without it is not complete
        return info
    finally:
        for v in opened:
            v.close()
        for s_ in spills:
            s_.remove()
        for f in files:
            f.close()


def _checked_kind(annotation_type: str, limit: int) -> str:
    """The annotation type, lower case; ``limit`` checked."""
    kind = str(annotation_type).lower()
    if kind not in ANNOTATION_TYPES:
        raise ValueError(f"annotation_type must be one of {', '.join(ANNOTATION_TYPES)}")
    if type(limit) is not int or limit < 1:
        raise ValueError(f"limit must be a positive integer, got {limit!r}")
    return kind


def _made_folder(dest: str) -> str:
    """Where the temporary files go: the output folder (made here), or for a URL the system's
    temporary folder."""
    folder = dest if "://" not in dest else None
    if folder is not None:
        os.makedirs(folder, exist_ok=True)
    return folder or tempfile.gettempdir()


def _stored_properties(properties: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The property objects in their stored order (``info`` lists them so)."""
    props = [dict(p) for p in properties]
    order: list[int] | np.ndarray = stored_order([p.get("type", "") for p in props]) if all(
        p.get("type") in PROPERTY_TYPES for p in props) else list(range(len(props)))
    return [props[i] for i in order]  # info lists them in stored order


def _base_info(kind: str, dims: dict[str, list[Any]], props: list[dict[str, Any]],
               rel_meta: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``info`` but for its bounds and indexes."""
    info_props = [{k: v for k, v in p.items() if k != "default"} for p in props]
    base_info: dict[str, Any] = {
        "@type": "neuroglancer_annotations_v1", "dimensions": dims,
        "annotation_type": kind, "properties": info_props,
        "relationships": [{"id": m["id"], "key": m["key"]} for m in rel_meta],
    }
    return base_info


def _scales_of(dims: dict[str, list[Any]]) -> np.ndarray:
    scales = np.array([float(v[0]) for v in dims.values()], dtype=np.float64)
    if not np.all(np.isfinite(scales) & (scales > 0)):
        raise ValueError("every dimension needs a positive scale: {name: [scale, unit]}")
    return scales


def _wanted(sharded: bool | Mapping[str, Any]) -> Callable[[str, str], ShardingSpec | bool]:
    """``want(index name, group)``: the ``sharded`` argument's answer for one index."""

    def want(name: str, group: str) -> ShardingSpec | bool:
        if isinstance(sharded, Mapping):
            value = sharded.get(name, sharded.get(group, True))
        else:
            value = sharded
        if isinstance(value, bool):
            return value
        return ShardingSpec.coerce(value)

    return want


def _hashed_chooser(want: Callable[[str, str], ShardingSpec | bool], choose_hashed_spec: Any
                    ) -> Callable[[str, str, int, int], ShardingSpec | None]:
    """``choose(name, group, num_keys, total_bytes)``: the sharding of an id-keyed index
    (``None``: unsharded)."""

    def choose(name: str, group: str, num_keys: int, total_bytes: int
               ) -> ShardingSpec | None:
        choice = want(name, group)
        if choice is False:
            return None
        if isinstance(choice, ShardingSpec):
            return choice
        # gzip adds some 20 bytes to each value: small values are stored raw
        small = total_bytes < 1024 * max(1, num_keys)
        return cast(ShardingSpec, choose_hashed_spec(
            num_keys, total_bytes=total_bytes, data_encoding="raw" if small else "gzip").spec)

    return choose


def _row_dtype(rank: int) -> np.dtype[Any]:
    """A row of the row table: the id, where its record and relationships are, its box."""
    return np.dtype([("id", "<u8"), ("start", "<u8"), ("rec_end", "<u8"),
                     ("tail_start", "<u8"), ("tail_end", "<u8"),
                     ("lo", "<f4", (rank,)), ("hi", "<f4", (rank,))])


class _Staged:
    """The annotations encoded a batch at a time into the spill files, the row table and the
    (segment, row) files of the relationships; their count and the box they fill."""

    def __init__(self, encoder: _Encoder, rel_meta: list[dict[str, Any]], spill: _Spill,
                 tails: _Spill, rows: Any, pairs: list[Any], row_dtype: np.dtype[Any],
                 rank: int) -> None:
        self.encoder, self.rel_meta = encoder, rel_meta
        self.spill, self.tails, self.rows, self.pairs = spill, tails, rows, pairs
        self.row_dtype = row_dtype
        self.n = 0
        self.seen_max = np.full(rank, -np.inf)
        self.seen_min = np.full(rank, np.inf)
        self.tail_min, self.tail_max = 1 << 62, 0  # the sizes of the tails

    def add_all(self, annotations: Iterable[Mapping[str, Any]]) -> None:
        batch: list[Mapping[str, Any]] = []
        for ann in annotations:
            batch.append(ann)
            if len(batch) >= _BATCH:
                self.flush(batch)
        self.flush(batch)

    def flush(self, batch: list[Mapping[str, Any]]) -> None:
        spill, tails, n = self.spill, self.tails, self.n
        enc = self.encoder.batch(batch, n, self.rel_meta)
        rec_starts = spill.pos + enc.rec_offsets[:-1]
        spill.add(enc.records)
        tail_starts = tails.pos + enc.tail_offsets[:-1]
        tails.add(enc.tails)
        table_part = np.zeros(len(batch), self.row_dtype)
        table_part["id"] = enc.ids
        table_part["start"] = rec_starts
        table_part["rec_end"] = spill.pos - enc.rec_offsets[-1] + enc.rec_offsets[1:]
        table_part["tail_start"] = tail_starts
        table_part["tail_end"] = tails.pos - enc.tail_offsets[-1] + enc.tail_offsets[1:]
        table_part["lo"] = enc.lo
        table_part["hi"] = enc.hi
        self.rows.write(table_part.tobytes())
        if len(batch):
            self.seen_min = np.minimum(self.seen_min, enc.lo.min(axis=0))
            self.seen_max = np.maximum(self.seen_max, enc.hi.max(axis=0))
        for f, pb in zip(self.pairs, enc.pairs, strict=True):
            pb[:, 1] += n
            f.write(pb.astype("<u8").tobytes())
        if len(batch):
            sizes = np.diff(enc.tail_offsets)
            self.tail_min = min(self.tail_min, int(sizes.min()))
            self.tail_max = max(self.tail_max, int(sizes.max()))
        self.n += len(batch)
        batch.clear()

    def finish(self) -> np.ndarray:
        """The row table, memory-mapped (the spill files too)."""
        n, rows, row_dtype = self.n, self.rows, self.row_dtype
        self.spill.close_writing()
        self.tails.close_writing()
        rows.flush()
        table: np.ndarray = (np.memmap(rows, dtype=row_dtype, mode="r", shape=(n,)) if n
                             else np.zeros(0, row_dtype))
        return table


def _layer_bounds(lower_bound: Sequence[float] | None, upper_bound: Sequence[float] | None,
                  staged: _Staged, rank: int) -> tuple[np.ndarray, np.ndarray]:
    """The bounds given, else the box of the annotations (its upper side nudged up, so that it
    is exclusive)."""
    n, seen_min, seen_max = staged.n, staged.seen_min, staged.seen_max
    lower = np.asarray(lower_bound if lower_bound is not None else
                       (seen_min if n else np.zeros(rank)), dtype=np.float64)
    if upper_bound is not None:
        upper = np.asarray(upper_bound, dtype=np.float64)
    elif n:
        upper = np.nextafter(seen_max.astype(np.float32), np.float32(np.inf)
                             ).astype(np.float64)
        upper = np.maximum(upper, lower + 1e-6)
    else:
        upper = lower + 1
    if lower.shape != (rank,) or upper.shape != (rank,) or np.any(upper <= lower):
        raise ValueError(f"lower_bound and upper_bound must be {rank} numbers each, "
                         "upper above lower")
    return lower, upper


_PAIR_DTYPE = [("key", "<u8"), ("row", "<u8")]


def _write_by_id(put: Any, values: Values, ids: np.ndarray,
                 choose: Callable[..., ShardingSpec | None], row_dtype: np.dtype[Any],
                 bucket_bytes: int, spill_dir: str) -> dict[str, Any]:
    """by_id: (id, row) partitioned by ranges of minishards (unsharded: by id)."""
    n = values.n
    total = int(values.spill_bytes + values.tails_bytes)
    spec = choose("by_id", "by_id", n, total)
    meta: dict[str, Any] = {"key": "by_id"}
    pair_dtype = _PAIR_DTYPE
    with (sized_buckets(pair_dtype, "key", n, bucket_bytes, spill_dir) if spec is None else
          ShardParts(pair_dtype, spec, n, bucket_bytes, spill_dir)) as parts:
        for start in range(0, n, _CHUNK):
            put.tick(_CHUNK * row_dtype.itemsize)
            part = np.zeros(min(n, start + _CHUNK) - start, pair_dtype)
            part["key"] = ids[start : start + len(part)]
            part["row"] = np.arange(start, start + len(part))
            parts.add(part)
        if isinstance(parts, ShardParts):
            def prepare(piece_pairs: np.ndarray) -> Any:
                piece = values.piece(piece_pairs["row"], piece_pairs["key"])
                return lambda got, s, e: piece.values_of(got["row"])

            write_sharded(put.open, "by_id", parts, prepare, tmp_dir=spill_dir)
        else:
            for p in range(parts.parts):
                got = parts.bucket(p)
                piece = values.piece(got["row"], got["key"])
                _write_uint64_part(put, "by_id", got["key"], got["row"].astype(np.int64),
                                   piece.values_of)
    if spec is not None:
        meta["sharding"] = spec.to_dict()
    return meta


def _write_relationship(put: Any, m: dict[str, Any], f: Any, values: Values, ids: np.ndarray,
                        choose: Callable[..., ShardingSpec | None], bucket_bytes: int,
                        spill_dir: str) -> dict[str, Any]:
    """One relationship's index (segment id -> the related annotations) from its
    (segment, row) file; its ``info`` object."""
    f.flush()
    npairs = f.tell() // 16
    num_segs = _count_distinct(_pair_chunks(f, npairs), npairs, bucket_bytes, spill_dir)
    spec = choose(m["id"], "relationships", num_segs, npairs * (values.record_bytes + 8))
    meta: dict[str, Any] = {"key": m["key"]}
    pair_dtype = _LEVEL_DTYPE  # (segment, row, its id)
    with (sized_buckets(pair_dtype, "key", npairs, bucket_bytes, spill_dir) if spec is None else
          ShardParts(pair_dtype, spec, npairs, bucket_bytes, spill_dir)) as parts:
        for chunk in _pair_chunks(f, npairs):
            put.tick(64 * len(chunk))  # the ids read from the row table (rows ascending)
            part = np.zeros(len(chunk), pair_dtype)
            part["key"], part["row"] = chunk[:, 0], chunk[:, 1]
            part["id"] = ids[chunk[:, 1].astype(np.int64)]
            parts.add(part)
        if isinstance(parts, ShardParts):
            write_sharded(put.open, m["key"], parts,
                          lambda got: _lists(values.piece(got["row"], got["id"], tails=False)),
                          order=lambda got: [got["row"]], tmp_dir=spill_dir)
        else:
            for p in range(parts.parts):
                _write_relationship_part(put, m["key"], parts.bucket(p), values)
    if spec is not None:
        meta["sharding"] = spec.to_dict()
    return {"id": m["id"], **meta}


def _lists(piece: Piece) -> Callable[[np.ndarray, np.ndarray, np.ndarray], list[bytes]]:
    """``values_for`` of keys that list annotations (relationships, spatial cells)."""

    def list_values(got: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> list[bytes]:
        return piece.list_values(got["row"], starts, ends)

    return list_values


def _write_relationship_part(put: Any, key: str, got: np.ndarray, values: Values) -> None:
    """The segments of one part, a file each: each lists its annotations in row order."""
    got = got[np.lexsort((got["row"], got["key"]))]
    segs, starts, _ = _runs(got["key"])
    ends = np.append(starts[1:], len(got))
    rows_of = got["row"].astype(np.int64)
    list_value = values.piece(rows_of, got["id"], tails=False).list_value

    def rel_values(js: np.ndarray, rows_of: np.ndarray = rows_of,
                   starts: np.ndarray = starts, ends: np.ndarray = ends
                   ) -> list[bytes]:
        return [list_value(rows_of[starts[j] : ends[j]]) for j in js.tolist()]

    _write_uint64_part(put, key, segs, np.arange(len(segs)), rel_values)


class _DroppingPut:
    """``put`` (and ``open``, a file written as a stream), dropping the mapped pages of the
    spill files every 32 MiB read or written (they stay in the page cache): the passes over
    them must not leave them resident."""

    def __init__(self, put: Any, maps: list[Any], open_: Any = None) -> None:
        import mmap

        self.put = put
        self.open = open_
        self.maps = [m for m in maps if isinstance(m, mmap.mmap)]
        self.dontneed = getattr(mmap, "MADV_DONTNEED", None)
        self.written = 0

    def __call__(self, name: str, data: bytes) -> None:
        self.put(name, data)
        self.tick(len(data))

    def tick(self, nbytes: int) -> None:
        """``nbytes`` more were read or written through the maps."""
        self.written += nbytes
        if self.written >= _DROP_BYTES:
            self.drop()

    def drop(self) -> None:
        self.written = 0
        if self.dontneed is None:
            return
        for m in self.maps:
            with contextlib.suppress(OSError, ValueError):
                m.madvise(self.dontneed)


def _check_unique(ids: np.ndarray, bucket_bytes: int, tmp_dir: str,
                  tick: Any = lambda nbytes: None) -> None:
    """Ids are unique: sorted a hash partition at a time (bounded memory)."""
    n = len(ids)
    if n < 2:
        return
    with sized_buckets([("id", "<u8")], "id", n, bucket_bytes, tmp_dir) as parts:
        for start in range(0, n, _CHUNK):
            tick(64 * _CHUNK)  # the pages of the rows read (the row table is 64 bytes a row)
            part = np.zeros(min(n, start + _CHUNK) - start, [("id", "<u8")])
            part["id"] = ids[start : start + len(part)]
            parts.add(part)
        for p in range(parts.parts):
            got = np.sort(parts.bucket(p)["id"])
            if len(got) > 1 and bool(np.any(got[1:] == got[:-1])):
                raise ValueError("annotation ids must be unique")


def _pair_chunks(f: Any, npairs: int) -> Iterator[np.ndarray]:
    """The ``(npairs, 2)`` uint64 pairs of a file, ``_CHUNK`` at a time."""
    f.seek(0)
    for start in range(0, npairs, _CHUNK):
        yield np.fromfile(f, "<u8", 2 * min(_CHUNK, npairs - start)).reshape(-1, 2)


def _count_distinct(chunks: Iterable[np.ndarray], n: int, bucket_bytes: int, tmp_dir: str
                    ) -> int:
    """Distinct first columns of ``n`` uint64 pairs (given in chunks), a hash partition at
    a time."""
    total = 0
    with sized_buckets([("id", "<u8")], "id", n, bucket_bytes, tmp_dir) as parts:
        for chunk in chunks:
            part = np.zeros(len(chunk), [("id", "<u8")])
            part["id"] = chunk[:, 0]
            parts.add(part)
        for p in range(parts.parts):
            total += len(_distinct(parts.bucket(p)["id"]))
    return total


def _write_uint64_part(put: Any, key: str, keys: np.ndarray, rows: np.ndarray,
                       values_for: Any) -> None:
    """The keys of one part, one file per key: ``values_for(rows[positions])`` gives their
    values."""
    for start in range(0, len(keys), _BATCH):
        sel = rows[start : start + _BATCH]
        values = values_for(sel)
        if isinstance(values, tuple):  # (back to back, sizes)
            block, sizes = values
            cuts = np.concatenate(([0], np.cumsum(sizes, dtype=np.int64))).tolist()
            values = [block[a:b] for a, b in itertools.pairwise(cuts)]
        for k, v in zip(keys[start : start + _BATCH].tolist(), values, strict=True):
            put(f"{key}/{k}", v)


def _cells_of(kind: str, lo: np.ndarray, hi: np.ndarray, origin: np.ndarray,
              size: np.ndarray, grid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lowest and highest cell per annotation (bounding boxes; points: half-open cells)."""
    if kind == "point":
        c = np.floor((lo - origin) / size).astype(np.int64)
        c = np.clip(c, 0, grid - 1)
        return c, c
    a = np.clip(np.floor((lo - origin) / size).astype(np.int64), 0, grid - 1)
    b = np.clip(np.floor((hi - origin) / size).astype(np.int64), 0, grid - 1)
    return a, b


def _level_pairs(kind: str, rows: np.ndarray, table: np.ndarray, lower: np.ndarray,
                 size: np.ndarray, grid: np.ndarray, layout: AnnotationLayout, spill: _Spill
                 ) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, cell codes)``: each of ``rows`` with every cell of the level it meets."""
    from ..formats.neuroglancer.annotations import meets

    lo = np.asarray(table["lo"][rows], dtype=np.float64)
    hi = np.asarray(table["hi"][rows], dtype=np.float64)
    a, b = _cells_of(kind, lo, hi, lower, size, grid)
    if kind == "point" or np.all(a == b):
        return rows, _codes(a, grid)
    spans = np.prod(b - a + 1, axis=1)
    pair_rows = np.repeat(rows, spans)
    base = np.repeat(a, spans, axis=0)
    ext = np.repeat(b - a + 1, spans, axis=0)
    offs = np.arange(len(pair_rows)) - np.repeat(np.cumsum(spans) - spans, spans)
    step = np.zeros_like(base)
    for d in range(base.shape[1]):
        step[:, d] = offs % ext[:, d]
        offs = offs // ext[:, d]
    pair_cells = base + step
    if kind in ("line", "ellipsoid", "polyline"):
        keep = np.ones(len(pair_rows), dtype=bool)
        for j in range(len(pair_rows)):
            clo = lower + pair_cells[j] * size
            geo = _geometry_of(int(pair_rows[j]), table, layout, spill)
            keep[j] = meets(kind, geo, clo, clo + size)
        pair_rows, pair_cells = pair_rows[keep], pair_cells[keep]
    return pair_rows, _codes(pair_cells, grid)


_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], np.uint8)


def _bits_rows(bits: np.ndarray, n: int) -> Any:
    """The rows whose bit is set in a packed bitmap, a chunk at a time (ascending)."""
    step = max(8, _CHUNK - _CHUNK % 8)
    for start in range(0, n, step):
        part = np.unpackbits(bits[start // 8 : (start + step) // 8 + 1], bitorder="little")
        rows = start + np.flatnonzero(part[: min(step, n - start)])
        if len(rows):
            yield rows


def _all_bits(n: int) -> np.ndarray:
    """A packed bitmap of ``n`` set bits (without an array of the ``n`` rows)."""
    bits = np.full((n + 7) // 8, 0xFF, np.uint8)
    if n % 8:
        bits[-1] = (1 << (n % 8)) - 1
    return bits


def _set_bits(bits: np.ndarray, rows: np.ndarray) -> None:
    if len(rows):
        np.bitwise_or.at(bits, rows // 8, (1 << (rows % 8)).astype(np.uint8))


def _get_bits(bits: np.ndarray, rows: np.ndarray) -> np.ndarray:
    got: np.ndarray = ((bits[rows // 8] >> (rows % 8).astype(np.uint8)) & 1).astype(bool)
    return got


def _write_spatial(put: Any, table: np.ndarray, kind: str, lower: np.ndarray,
                   upper: np.ndarray, scales: np.ndarray, limit: int, max_levels: int,
                   values: Values, want: Any, choose_spatial_spec: Any,
                   layout: AnnotationLayout, spill: _Spill,
                   bucket_bytes: int = DEFAULT_BUCKET_BYTES, tmp_dir: str | None = None
                   ) -> list[dict[str, Any]]:
    """The spatial index, level by level. What a level keeps per annotation is a bit (still
    to place) in memory; its (cell, row, id) pairs are hash-partitioned by cell into temporary
    files past ``bucket_bytes``, counted and sampled a chunk at a time, and regrouped by
    shard (or by cell, unsharded) to be written."""
    n = len(table)
    grids = _level_grids(lower, upper, scales, max_levels)
    remaining = _all_bits(n)  # a bit per annotation still to place
    left = n
    out: list[dict[str, Any]] = []
    rec = layout.record_bytes + 8
    for level, (grid, size) in enumerate(grids):
        if level and not left:
            break
        last = level == len(grids) - 1
        with sized_buckets(_LEVEL_DTYPE, "key", left, bucket_bytes, tmp_dir) as pairs:
            _add_level_pairs(pairs, put, remaining, n, kind, table, lower, size, grid, layout,
                             spill)
            # the fullest cell decides the sampling
            max_count = max((int(c.max()) for p in range(pairs.parts)
                             if len(c := _cell_counts(pairs, p)[1])), default=0)
            prob = 1.0 if (max_count <= limit or last) else limit / max_count
            bad = _not_emitted(pairs, level, prob, limit, remaining)
            emitted, cells_count = _emitted_counts(pairs, bad)
            key = f"spatial{level}"
            meta: dict[str, Any] = {"key": key, "grid_shape": [int(g) for g in grid],
                                    "chunk_size": [float(s) for s in size], "limit": limit}
            spec = _level_spec(want, choose_spatial_spec, grid, emitted * rec, cells_count,
                               meta)
            placed = _write_level(put, key, pairs, bad, spec, grid, values, emitted,
                                  remaining, bucket_bytes, tmp_dir)
        out.append(meta)
        remaining &= ~placed
        left = int(_POPCOUNT[remaining].sum(dtype=np.int64))
    return out


_LEVEL_DTYPE = [("key", "<u8"), ("row", "<u8"), ("id", "<u8")]  # (cell, row, its id)


def _add_level_pairs(pairs: Buckets, put: Any, remaining: np.ndarray, n: int, kind: str,
                     table: np.ndarray, lower: np.ndarray, size: np.ndarray, grid: np.ndarray,
                     layout: AnnotationLayout, spill: _Spill) -> None:
    """The (cell, row, id) triples of a level: every annotation still to place in every
    cell of the level it meets."""
    for rows in _bits_rows(remaining, n):
        if hasattr(put, "tick"):  # the rows' table pages, and their records' for geometry
            put.tick((64 + (0 if kind == "point" else layout.record_bytes)) * len(rows))
        pr, codes = _level_pairs(kind, rows, table, lower, size, grid, layout, spill)
        part = np.zeros(len(pr), _LEVEL_DTYPE)
        part["key"], part["row"], part["id"] = codes, pr, table["id"][pr]
        pairs.add(part)


def _cell_counts(pairs: Buckets, p: int, bad: np.ndarray | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The cells of bucket ``p`` and their pairs (those not ``bad``), a chunk at a time:
    memory holds a chunk and one entry per cell."""
    acc = (np.zeros(0, np.uint64), np.zeros(0, np.int64))
    for c in pairs.chunks(p, _CHUNK):
        keys = c["key"] if bad is None else c["key"][~_get_bits(bad, c["row"].astype(np.int64))]
        k, _, lengths = _runs(np.sort(keys))
        acc = merge_counts(*acc, k, lengths)
    return acc


def _not_emitted(pairs: Buckets, level: int, prob: float, limit: int,
                 remaining: np.ndarray) -> np.ndarray:
    """A bit per annotation left to the next levels.

    Chosen with probability prob, and never more than limit in a cell: within a cell the
    first limit by the same uniform draw; an annotation is emitted at this level only where
    every cell it meets keeps it (in all of them or none). Only the pairs drawn below prob
    (about ``prob`` of a bucket) are held to be ranked in their cells."""
    bad = np.zeros_like(remaining)
    if prob >= 1:
        return bad
    for p in range(pairs.parts):
        drawn: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        for c in pairs.chunks(p, _CHUNK):
            u = _uniform(c["id"], level)
            low = u < prob
            _set_bits(bad, c["row"][~low].astype(np.int64))
            drawn.append((c["key"][low], c["row"][low].astype(np.int64), u[low]))
        if not drawn:
            continue
        codes, prs, u = (np.concatenate(x) for x in zip(*drawn, strict=True))
        by_cell = np.lexsort((u, codes))
        first = np.searchsorted(codes[by_cell], codes[by_cell], side="left")
        rank_in_cell = np.empty(len(codes), dtype=np.int64)
        rank_in_cell[by_cell] = np.arange(len(codes)) - first
        _set_bits(bad, prs[rank_in_cell >= limit])
    return bad


def _emitted_counts(pairs: Buckets, bad: np.ndarray) -> tuple[int, int]:
    """The emitted pairs and the cells they fill."""
    emitted = 0
    cells_count = 0
    for p in range(pairs.parts):
        cells, counts = _cell_counts(pairs, p, bad)
        emitted += int(counts.sum())
        cells_count += len(cells)
    return emitted, cells_count


def _level_spec(want: Any, choose_spatial_spec: Any, grid: np.ndarray, emitted_bytes: int,
                cells_count: int, meta: dict[str, Any]) -> ShardingSpec | None:
    """A level's sharding (``None``: a file per cell), noted in its ``meta``."""
    choice = want("spatial", "spatial")
    spec: ShardingSpec | None = None
    if choice is not False:
        mean = emitted_bytes / max(1, cells_count) + 8
        spec = choice if isinstance(choice, ShardingSpec) else choose_spatial_spec(
            grid.tolist(), cell_bytes=mean, num_cells=cells_count).spec
        meta["sharding"] = spec.to_dict()
    return spec


def _write_level(put: Any, key: str, pairs: Buckets, bad: np.ndarray,
                 spec: ShardingSpec | None, grid: np.ndarray, values: Values,
                 emitted: int, remaining: np.ndarray, bucket_bytes: int, tmp_dir: str | None
                 ) -> np.ndarray:
    """The emitted pairs, regrouped by what writes them (ranges of minishards, or cells
    unsharded), written; a bit per annotation placed."""
    placed = np.zeros_like(remaining)
    with (sized_buckets(_LEVEL_DTYPE, "key", emitted, bucket_bytes, tmp_dir) if spec is None else
          ShardParts(_LEVEL_DTYPE, spec, emitted, bucket_bytes, tmp_dir)) as groups_:
        for p in range(pairs.parts):
            for c in pairs.chunks(p, _CHUNK):
                c = c[~_get_bits(bad, c["row"].astype(np.int64))]
                _set_bits(placed, c["row"].astype(np.int64))
                groups_.add(c)
        pairs.close()
        if isinstance(groups_, ShardParts):
            # a cell lists its annotations in a pseudo-random order of their ids
            write_sharded(put.open, key, groups_,
                          lambda got: _lists(values.piece(got["row"], got["id"], tails=False)),
                          order=lambda got: [_uniform(got["id"], 1 << 20)], tmp_dir=tmp_dir)
        else:
            for p in range(groups_.parts):
                _write_level_cells(put, key, groups_.bucket(p), grid, values)
    return placed


def _write_level_cells(put: Any, key: str, got: np.ndarray, grid: np.ndarray,
                       values: Values) -> None:
    """The cells of one part, a file each (unsharded)."""
    if not len(got):
        return
    # cells in a pseudo-random order of the ids
    got = got[np.lexsort((_uniform(got["id"], 1 << 20), got["key"]))]
    rows_l = got["row"].astype(np.int64)
    list_value = values.piece(rows_l, got["id"], tails=False).list_value
    cells, starts, lengths = _runs(got["key"])
    for c, s_, e_ in zip(cells.tolist(), starts.tolist(), (starts + lengths).tolist(),
                         strict=True):
        pos = _decode_code(c, grid)
        put(f"{key}/{'_'.join(map(str, pos))}", list_value(rows_l[s_:e_]))


def _geometry_of(row: int, table: np.ndarray, layout: AnnotationLayout, spill: _Spill
                 ) -> np.ndarray:
    rec = spill.get(int(table["start"][row]), int(table["rec_end"][row]))
    if layout.type == "polyline":
        k = int.from_bytes(rec[:4], "little")
        return np.frombuffer(rec, "<f4", k * layout.rank, 4).reshape(k, layout.rank)
    return np.frombuffer(rec, "<f4", layout.geometry_bytes // 4).reshape(-1, layout.rank)


def _codes(cells: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Compressed Morton codes of many cells (vectorised)."""
    bits = [max(0, int(g) - 1).bit_length() for g in grid]
    code = np.zeros(len(cells), dtype=np.uint64)
    j = 0
    c = cells.astype(np.uint64)
    for i in range(max(bits, default=0)):
        for d in range(len(bits)):
            if i < bits[d]:
                code |= ((c[:, d] >> np.uint64(i)) & np.uint64(1)) << np.uint64(j)
                j += 1
    return code


def _decode_code(code: int, grid: np.ndarray) -> tuple[int, ...]:
    from ..formats.neuroglancer.decode import morton_decode

    return morton_decode(int(code), [int(g) for g in grid])

