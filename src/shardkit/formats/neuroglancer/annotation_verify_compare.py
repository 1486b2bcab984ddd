"""The comparisons across the indexes of an annotation layer (:mod:`.annotation_verify`'s
exact path): the rows that each index kept, a group of hash buckets at a time, compared by
annotation id: listed annotations against by_id, relationship pairs both ways, and the
coverage of the spatial index."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .annotation_spill import Buckets, groups
from .annotation_verify_coverage import _coverage
from .annotation_verify_rows import _pair_differences

if TYPE_CHECKING:
    from .annotation_verify import _Verifier

_MAX_PROBLEMS_PER_CHECK = 1000  # problems listed per check (the rest counted)


def finish(v: _Verifier) -> None:
    """The comparisons across indexes, a group of buckets at a time."""
    if not v.have_by_id or not v.tables:
        return
    for group in groups(v.tables, v.bucket_bytes):
        def load(t: Buckets, group: list[int] = group) -> np.ndarray:
            parts = [t.bucket(p) for p in group]
            return parts[0] if len(parts) == 1 else np.concatenate(parts)

        by = load(v.by_rows)
        by = by[np.argsort(by["id"], kind="stable")]
        compare_listed(v, by, load(v.listed_rows))
        for rel, table in v.rel_listed.items():
            compare_pairs(v, rel, load(table), load(v.rel_by[rel]))
        if v.layer.spatial:
            coverage(v, by, load(v.app_rows))

def compare_listed(v: _Verifier, by: np.ndarray, listed: np.ndarray) -> None:
    """Every listed annotation is in by_id, with the same record bytes."""
    if not len(listed):
        return
    srt = by["id"]
    ids = listed["id"]
    pos = np.searchsorted(srt, ids)
    pos_c = np.minimum(pos, max(0, len(srt) - 1))
    found = ((pos < len(srt)) & (srt[pos_c] == ids)) if len(srt) \
        else np.zeros(len(ids), dtype=bool)
    differs = found & (by["h"][pos_c] != listed["h"]) if len(srt) else found
    for i in np.flatnonzero(~found | differs).tolist():
        row = listed[i]
        no = int(row["index"])
        index, key = v.index_names[no], v._key(no, int(row["key"]))
        if not found[i]:
            v.rep.add("by_id", index, key, f"annotation {int(row['id'])} is not in "
                         "by_id", f"/ids/{int(row['within'])}")
        else:
            v.rep.add("by_id", index, key, f"annotation {int(row['id'])}: its record "
                         "differs from the one in by_id",
                         f"/annotations/{int(row['within'])}")

def compare_pairs(v: _Verifier, rel: str, listed: np.ndarray, by_pairs: np.ndarray) -> None:
    rep = v.rep
    rkey = v.layer.relationship_keys[rel]
    only_a, only_b = _pair_differences(listed, by_pairs)
    for seg, ident in only_a[:_MAX_PROBLEMS_PER_CHECK]:
        rep.add("relationship", rkey, seg, f"lists annotation {ident}, whose by_id "
                f"entry does not relate it to segment {seg}", "/ids")
    for seg, ident in only_b[:_MAX_PROBLEMS_PER_CHECK]:
        rep.add("relationship", rkey, seg, f"lacks annotation {ident}, which by_id "
                f"relates to segment {seg}", "/ids")

def coverage(v: _Verifier, by: np.ndarray, app: np.ndarray) -> None:
    layer, rep = v.layer, v.rep
    first_key = layer.spatial[0].key
    srt = by["id"]
    ids = app["id"]
    if v.lay.type == "point":
        counts = np.zeros(len(srt), np.int64)
        good = np.zeros(len(srt), np.int64)
        if len(ids) and len(srt):
            pos = np.minimum(np.searchsorted(srt, ids), len(srt) - 1)
            known = srt[pos] == ids
            np.add.at(counts, pos[known], 1)
            np.add.at(good, pos[known], app["ok"][known].astype(np.int64))
        for i in np.flatnonzero(good == 0).tolist():
            ident = int(srt[i])
            where = "is in no cell of the spatial index" if counts[i] == 0 else \
                "is in no cell of the spatial index that it meets"
            rep.add("spatial_missing", first_key, ident, f"annotation {ident} {where}", "")
        for i in np.flatnonzero(counts > 1).tolist():
            ident = int(srt[i])
            rep.add("spatial_duplicate", first_key, ident, f"annotation {ident} is listed "
                    f"{int(counts[i])} times in the spatial index (a point meets one cell "
                    "per level, and is emitted at one level)", "")
        return
    appear: dict[int, list[tuple[int, tuple[int, ...]]]] = {}
    for ident, level, cell in zip(ids.tolist(), app["level"].tolist(),
                                  app["cell"].tolist(), strict=True):
        appear.setdefault(ident, []).append((level, tuple(cell)))
    if v.fixed:
        geoms = {int(i): g for i, g in zip(srt.tolist(), by["geo"], strict=True)}
    else:
        geoms = {i: v.poly_geo[i] for i in srt.tolist() if i in v.poly_geo}
    _coverage(layer, rep, geoms, appear)
