"""Checks of an annotation layer (:meth:`NgAnnotationLayer.verify`).

Each problem names the index (its folder), the key (annotation id, segment id or cell) and the
field (``/relationships/0/ids``, ``/properties/kind``...). Checks:

- ``shard`` (every check of :meth:`NgShard.verify`) on each sharded index; ``file_name`` for
  files of an unsharded index that are not keys of it;
- ``record``: a value whose counts and sizes disagree with its bytes;
- ``padding``: non-zero padding bytes;
- ``enum``: a value that is not among a property's ``enum_values``;
- ``bounds``: geometry outside ``[lower_bound, upper_bound)``;
- ``by_id``: an id listed in a relationship or spatial index that ``by_id`` lacks, or with other
  record bytes there;
- ``relationship``: ``by_id`` and a relationship index disagree on which annotations relate to
  a segment;
- ``spatial_extra``: an annotation in a cell it does not meet; ``spatial_missing``: an
  annotation absent from a cell it meets at every level from the first it could be in down to
  the finest (or from the whole spatial index); ``spatial_duplicate``: an annotation listed
  again in a cell below one that already lists it; ``limit``: a cell holding more than
  ``limit`` annotations above the finest level;
- ``writer_quirk``: what the reader had to work around (neuroglancer 2.41.2's uint32 padding,
  ngsidekick 0.0.20's cell file names).

Memory: one value at a time, plus about 40 bytes per annotation and per cell entry for the
cross-index comparisons (sorted numpy arrays).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import Problem, ShardkitError
from .annotations import ShardedIndex, SpatialLevel, UnshardedIndex, meets
from .decode import compressed_morton_code, morton_decode

if TYPE_CHECKING:
    from .annotations import NgAnnotationLayer

_MAX_PROBLEMS_PER_CHECK = 1000


class _Report:
    def __init__(self) -> None:
        self.problems: list[Problem] = []
        self.counts: dict[str, int] = {}

    def add(self, check: str, index: str, key: Any, message: str, field: str = "",
            offset: int | None = None) -> None:
        n = self.counts.get(check, 0)
        self.counts[check] = n + 1
        if n < _MAX_PROBLEMS_PER_CHECK:
            self.problems.append(Problem(check, f"{index} {key}: {message}", offset,
                                         f"/{index}/{key}{field}"))

    def finish(self) -> list[Problem]:
        for check, n in self.counts.items():
            if n > _MAX_PROBLEMS_PER_CHECK:
                self.problems.append(Problem(check, f"{n - _MAX_PROBLEMS_PER_CHECK} more "
                                             f"{check} problems not listed"))
        return self.problems


def _cell_name_to_cell(name: str, rank: int) -> tuple[int, ...] | None:
    parts = name.split("_")
    if len(parts) != rank or not all(p.isdigit() and p.isascii() for p in parts):
        return None
    return tuple(int(p) for p in parts)


def _true_cell(lvl: SpatialLevel, named: tuple[int, ...]) -> tuple[int, ...]:
    """The cell a file named ``named`` holds under ngsidekick 0.0.20's naming."""
    code = compressed_morton_code(named, lvl.grid_shape)
    rev = morton_decode(code, tuple(reversed(lvl.grid_shape)))
    return tuple(reversed(rev))


def verify_layer(layer: NgAnnotationLayer, progress: Callable[[int, int], None] | None = None
                 ) -> list[Problem]:
    rep = _Report()
    lay_rank = layer.layout.rank
    indexes = layer.indexes()
    steps = len(indexes) + 1
    done = 0

    def tick() -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, steps)

    # sharded indexes: the checks every sharded dataset gets
    for key, index in indexes:
        if isinstance(index, ShardedIndex):
            for p in index.kv.verify():
                rep.problems.append(Problem("shard" if p.check == "read" else p.check,
                                            f"{key}/{p.message}", p.offset,
                                            f"/{key}{p.field or ''}"))

    lower, upper = layer.lower_bound, layer.upper_bound
    enums = [(p.id, set(p.enum)) for p in layer.layout.properties if p.enum]

    def check_annotation(index: str, key: Any, ann: Any) -> None:
        lo = ann.geometry.min(axis=0) if layer.layout.type != "ellipsoid" else \
            ann.geometry[0] - np.abs(ann.geometry[1])
        hi = ann.geometry.max(axis=0) if layer.layout.type != "ellipsoid" else \
            ann.geometry[0] + np.abs(ann.geometry[1])
        if not np.all(np.isfinite(ann.geometry)):
            rep.add("bounds", index, key, f"annotation {ann.id}: geometry is not finite",
                    "/geometry")
        elif np.any(lo < lower) or np.any(hi >= upper):
            rep.add("bounds", index, key, f"annotation {ann.id}: geometry spans "
                    f"{lo.tolist()}..{hi.tolist()}, outside [lower_bound, upper_bound) = "
                    f"[{lower.tolist()}, {upper.tolist()})", "/geometry")
        for name, values in enums:
            if ann.properties[name] not in values:
                rep.add("enum", index, key, f"annotation {ann.id}: property {name} is "
                        f"{ann.properties[name]}, not one of its enum_values",
                        f"/properties/{name}")

    pads = layer.layout.padding_ranges

    def check_padding(index: str, key: Any, data: bytes, rec_end: int, ident: int) -> None:
        base = rec_end - layer.layout.property_bytes
        for s, e in pads():
            if any(data[base + s : base + e]):
                rep.add("padding", index, key, f"annotation {ident}: padding bytes "
                        f"{s}..{e} after the geometry are not zero", "/padding",
                        offset=base + s)

    # by_id
    by_ids: list[int] = []
    by_hash: list[int] = []
    by_geom: dict[int, np.ndarray] = {}
    rel_pairs: dict[str, list[tuple[int, int]]] = {r: [] for r in layer.layout.relationships}
    if layer.by_id is not None:
        bkey = layer.by_id_key or "by_id"
        if isinstance(layer.by_id, UnshardedIndex):
            for odd in layer.by_id.uint64_keys()[1]:
                rep.add("file_name", bkey, odd, "not a decimal uint64 id")
        try:
            items = layer.by_id.items()
            for ident, data in items:
                try:
                    ann = layer.decode_by_id(ident, data)
                except ShardkitError as exc:
                    rep.add("record", bkey, ident, exc.message, exc.field or "", exc.offset)
                    continue
                end = layer.decoder.record_end(data, 0, bkey)
                check_padding(bkey, ident, data, end, ident)
                check_annotation(bkey, ident, ann)
                by_ids.append(ident)
                by_hash.append(hash(data[:end]))
                by_geom[ident] = ann.geometry
                for r, segs in (ann.relationships or {}).items():
                    rel_pairs[r] += [(s, ident) for s in segs]
        except ShardkitError as exc:
            rep.add("shard", bkey, "-", exc.message, exc.field or "", exc.offset)
    tick()
    order = np.argsort(np.array(by_ids, dtype=np.uint64), kind="stable")
    ids_sorted = np.array(by_ids, dtype=np.uint64)[order]
    hash_sorted = np.array(by_hash, dtype=np.int64)[order]
    have_by_id = layer.by_id is not None

    def check_listed(index: str, key: Any, ids: np.ndarray, hashes: list[int]) -> None:
        if not have_by_id or not len(ids):
            return
        pos = np.searchsorted(ids_sorted, ids)
        pos_c = np.minimum(pos, max(0, len(ids_sorted) - 1))
        found = (pos < len(ids_sorted)) & (ids_sorted[pos_c] == ids) if len(ids_sorted) \
            else np.zeros(len(ids), dtype=bool)
        for i in np.flatnonzero(~found).tolist():
            rep.add("by_id", index, key, f"annotation {int(ids[i])} is not in by_id",
                    f"/ids/{i}")
        hs = np.array(hashes, dtype=np.int64)
        for i in np.flatnonzero(found & (hash_sorted[pos_c] != hs)).tolist():
            rep.add("by_id", index, key, f"annotation {int(ids[i])}: its record differs from "
                    "the one in by_id", f"/annotations/{i}")

    def cell_records(index: str, key: Any, data: bytes) -> tuple[list[Any], np.ndarray,
                                                                  list[int]] | None:
        try:
            anns = layer.decode_cell(data, f"{index}/{key}")
            _, starts = layer.decoder.cell_bounds(data, f"{index}/{key}")
        except ShardkitError as exc:
            rep.add("record", index, key, exc.message, exc.field or "", exc.offset)
            return None
        hashes = [hash(data[starts[i] : starts[i + 1]]) for i in range(len(anns))]
        for i, a in enumerate(anns):
            check_padding(index, key, data, starts[i + 1], a.id)
            if not have_by_id:  # else by_id's copy is checked, and this one compared to it
                check_annotation(index, key, a)
        return anns, np.array([a.id for a in anns], dtype=np.uint64), hashes

    # relationship indexes
    for rel, index in layer.relationships_index.items():
        rkey = layer.relationship_keys[rel]
        listed: list[tuple[int, int]] = []
        if isinstance(index, UnshardedIndex):
            for odd in index.uint64_keys()[1]:
                rep.add("file_name", rkey, odd, "not a decimal uint64 segment id")
        try:
            for seg, data in index.items():
                got = cell_records(rkey, seg, data)
                if got is None:
                    continue
                _, ids, hashes = got
                check_listed(rkey, seg, ids, hashes)
                listed += [(seg, int(i)) for i in ids.tolist()]
        except ShardkitError as exc:
            rep.add("shard", rkey, "-", exc.message, exc.field or "", exc.offset)
        if have_by_id:
            a, b = set(listed), set(rel_pairs.get(rel, []))
            for seg, ident in sorted(a - b)[:_MAX_PROBLEMS_PER_CHECK]:
                rep.add("relationship", rkey, seg, f"lists annotation {ident}, whose by_id "
                        f"entry does not relate it to segment {seg}", "/ids")
            for seg, ident in sorted(b - a)[:_MAX_PROBLEMS_PER_CHECK]:
                rep.add("relationship", rkey, seg, f"lacks annotation {ident}, which by_id "
                        f"relates to segment {seg}", "/ids")
        tick()

    # spatial index
    appear: dict[int, list[tuple[int, tuple[int, ...]]]] = {}
    for lvl in layer.spatial:
        naming = layer._naming(lvl) if not lvl.index.sharded else "spec"
        entries: list[tuple[Any, tuple[int, ...], bytes]] = []
        try:
            if isinstance(lvl.index, UnshardedIndex):
                for name in lvl.index.names():
                    named = _cell_name_to_cell(name, lay_rank)
                    if named is None or any(c >= g for c, g in zip(named, lvl.grid_shape,
                                                                    strict=True)):
                        rep.add("file_name", lvl.key, name, "not a cell of the grid "
                                f"{list(lvl.grid_shape)} (x_y_z)")
                        continue
                    cell = _true_cell(lvl, named) if naming == "ngsidekick" else named
                    data = lvl.index.read(name)
                    if data is not None:
                        entries.append((name, cell, data))
            else:
                for code, data in lvl.index.items():
                    try:
                        cell = morton_decode(code, lvl.grid_shape)
                    except ShardkitError as exc:
                        rep.add("file_name", lvl.key, code, exc.message)
                        continue
                    entries.append((code, cell, data))
        except ShardkitError as exc:
            rep.add("shard", lvl.key, "-", exc.message, exc.field or "", exc.offset)
        finest = lvl.level == len(layer.spatial) - 1
        for key, cell, data in entries:
            got = cell_records(lvl.key, key, data)
            if got is None:
                continue
            anns, ids, hashes = got
            check_listed(lvl.key, key, ids, hashes)
            if len(anns) > lvl.limit and not finest and lvl.limit > 0:
                rep.add("limit", lvl.key, key, f"{len(anns)} annotations, over the level's "
                        f"limit {lvl.limit}", "/count")
            # edge cells reach beyond the bounds (what lies there, bounds reports)
            clo, chi = lvl.open_cell_box(lower, cell)
            with np.errstate(invalid="ignore"):
                slack = 1e-5 * np.maximum(1.0, np.abs(np.asarray(lvl.chunk_size)))
            for i, a in enumerate(anns):
                if not meets(a.type, a.geometry, clo - slack, chi + slack):
                    rep.add("spatial_extra", lvl.key, key, f"annotation {a.id} does not meet "
                            f"cell {list(cell)} [{clo.tolist()}, {chi.tolist()}]",
                            f"/annotations/{i}")
                appear.setdefault(a.id, []).append((lvl.level, cell))
        tick()
    if layer.spatial and have_by_id:
        _coverage(layer, rep, by_geom, appear)
    for q in layer.quirks:
        rep.problems.append(Problem("writer_quirk", q))
    return rep.finish()


def _cells_meeting(layer: NgAnnotationLayer, lvl: SpatialLevel, kind: str, geometry: np.ndarray,
                   within: tuple[np.ndarray, np.ndarray] | None = None
                   ) -> list[tuple[int, ...]]:
    """Cells of ``lvl`` an annotation must be in: points, their half-open cell; others, the
    cells between the floors of their bounding box that they meet (optionally only inside
    ``within``)."""
    lower = layer.lower_bound
    size = np.asarray(lvl.chunk_size)
    grid = np.asarray(lvl.grid_shape)
    g = geometry.astype(np.float64)
    if kind == "ellipsoid":
        lo, hi = g[0] - np.abs(g[1]), g[0] + np.abs(g[1])
    else:
        lo, hi = g.min(axis=0), g.max(axis=0)
    if within is not None:
        lo, hi = np.maximum(lo, within[0]), np.minimum(hi, within[1])
        if np.any(lo > hi):
            return []
    a = np.clip(np.floor((lo - lower) / size), 0, grid - 1).astype(np.int64)
    b = np.clip(np.floor((hi - lower) / size), 0, grid - 1).astype(np.int64)
    if kind == "point":
        return [tuple(a.tolist())]
    import itertools

    out = []
    for cell in itertools.product(*(range(int(x), int(y) + 1) for x, y in zip(a, b,
                                                                             strict=True))):
        clo = lower + np.asarray(cell) * size
        if meets(kind, geometry, clo, clo + size):
            out.append(cell)
        if len(out) > 4096:
            break
    return out


def _coverage(layer: NgAnnotationLayer, rep: _Report, by_geom: dict[int, np.ndarray],
              appear: dict[int, list[tuple[int, tuple[int, ...]]]]) -> None:
    kind = layer.layout.type
    levels = layer.spatial
    for ident, geometry in by_geom.items():
        where = appear.get(ident)
        if not where:
            rep.add("spatial_missing", levels[0].key, ident, f"annotation {ident} is in no "
                    "cell of the spatial index", "")
            continue
        have = set(where)
        if len(have) != len(where):
            rep.add("spatial_duplicate", levels[where[0][0]].key, ident,
                    f"annotation {ident} is listed twice in one cell", "")
        # walk down from level 0: a required cell without the annotation hands its part of
        # the geometry to its children
        todo: list[tuple[int, tuple[np.ndarray, np.ndarray] | None]] = [(0, None)]
        missing: tuple[int, tuple[int, ...]] | None = None
        covered: list[tuple[int, tuple[np.ndarray, np.ndarray]]] = []
        while todo and missing is None:
            li, within = todo.pop()
            lvl = levels[li]
            for cell in _cells_meeting(layer, lvl, kind, geometry, within):
                box = lvl.cell_box(layer.lower_bound, cell)
                if (li, cell) in have:
                    covered.append((li, box))
                elif li + 1 < len(levels):
                    todo.append((li + 1, box))
                else:
                    missing = (li, cell)
                    break
        if missing is not None:
            li, cell = missing
            rep.add("spatial_missing", levels[li].key, ident, f"annotation {ident} meets "
                    f"cell {list(cell)} of level {li} but is in neither it nor a cell above it",
                    "")
        for li, cell in where:
            if li == 0:
                continue
            box = levels[li].cell_box(layer.lower_bound, cell)
            mid = (box[0] + box[1]) / 2
            for lj, (clo, chi) in covered:
                if lj < li and np.all(mid >= clo) and np.all(mid <= chi):
                    rep.add("spatial_duplicate", levels[li].key, ident,
                            f"annotation {ident} is in cell {list(cell)} of level {li} and "
                            f"already in a cell of level {lj} above it", "")
                    break
