"""The spatial-coverage check of an annotation layer (:mod:`.annotation_verify`): which cells
of each level an annotation must be in, and whether the spatial index lists it there once."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .annotations import SpatialLevel, meets

if TYPE_CHECKING:
    from .annotation_verify import _Report
    from .annotations import NgAnnotationLayer


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
