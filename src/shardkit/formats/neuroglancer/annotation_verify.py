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

Memory is bounded whatever the layer's size: values are read a minishard or a batch at a
time, and the comparisons across indexes keep no per-annotation state in memory beyond
``bucket_bytes`` (64 MiB by default):

- a point layer is first compared by order-independent 64-bit digests (:class:`MultisetHash`,
  keyed at random per run): the ``(id, record hash)`` of ``by_id`` against those of the spatial
  index, and the ``(segment, id, record hash)`` of each relationship both ways. When every
  digest agrees, and every annotation lies in the cell that lists it, the layer is sound on
  those checks (but with a chance of about 2**-64) and nothing is kept per annotation;
- otherwise (and for other annotation types, whose coverage needs the geometry by id) the rows
  to compare are hash-partitioned by annotation id into buckets (:class:`Buckets`), spilled to
  a temporary folder past ``bucket_bytes`` and removed afterwards, and compared a group of
  buckets at a time (the same problems as comparing everything at once).
  Polyline geometry for the coverage check is still kept in memory.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ...errors import Problem, ShardkitError
from . import annotation_spill
from . import annotation_verify_compare as _compare
from .annotation_index import (
    _MAX_RUN_SPAN,
    ShardedIndex,
    UnshardedIndex,
    _ReleaseBehind,
    _runs,
)
from .annotation_spill import (
    DEFAULT_BUCKET_BYTES,
    Buckets,
    MultisetHash,
    hash_rows,
    random_odd,
)
from .annotation_verify_compare import _MAX_PROBLEMS_PER_CHECK
from .annotation_verify_coverage import _cells_meeting as _cells_meeting
from .annotation_verify_coverage import _coverage as _coverage
from .annotation_verify_rows import _BATCH as _BATCH
from .annotation_verify_rows import _BATCH_BYTES as _BATCH_BYTES
from .annotation_verify_rows import _distinct_ints as _distinct_ints
from .annotation_verify_rows import _gather as _gather
from .annotation_verify_rows import _merged_blocks as _merged_blocks
from .annotation_verify_rows import _Merger as _Merger
from .annotation_verify_rows import _pair_differences as _pair_differences
from .annotation_verify_rows import _pairs as _pairs
from .annotations import SpatialLevel, meets
from .decode import compressed_morton_code, morton_decode

if TYPE_CHECKING:
    from .annotations import NgAnnotationLayer



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


class _Verifier:
    """The checks of :func:`verify_layer`: values in batches, vectorised where the records
    have a fixed size; a batch that does not parse is gone through value by value, which
    names the problem."""

    def __init__(self, layer: NgAnnotationLayer, rep: _Report, *, exact: bool = False,
                 bucket_bytes: int = DEFAULT_BUCKET_BYTES, tmp_dir: str | None = None) -> None:
        self.layer = layer
        self.rep = rep
        self.have_by_id = layer.by_id is not None
        self.lower, self.upper = layer.lower_bound, layer.upper_bound
        self.bucket_bytes = bucket_bytes
        self.tmp_dir = tmp_dir
        # point layers are compared by digests first; exact: by rows, in buckets
        self.exact = exact or layer.layout.type != "point"
        self.digest = MultisetHash()
        self.keys: list[np.uint64] = []
        self.all_in_cell = True  # every point lies in the cell listing it
        self.poly_geo: dict[int, np.ndarray] = {}
        self.index_no: dict[str, int] = {}
        self.index_names: list[str] = []
        self.key_names: dict[int, list[str]] = {}  # str keys (unsharded cells), by position
        self.key_pos: dict[int, dict[str, int]] = {}
        self.tables: list[Buckets] = []
        self.saw_duplicates = False  # the checks of a sharded by_id found an id twice

    # -- layout --------------------------------------------------------------------------

    def setup(self) -> None:
        lay = self.layer.layout
        self.lay = lay
        self.fixed = lay.type != "polyline"
        self.rb = lay.record_bytes
        self.enums = [(p.id, np.array(sorted(p.enum), dtype=p.dtype)) for p in lay.properties
                      if p.enum]
        self.pads = [(lay.geometry_bytes + a, lay.geometry_bytes + b)
                     for a, b in lay.padding_ranges()]
        if self.exact and self.have_by_id and not self.tables:
            self._make_tables()

    def _make_tables(self) -> None:
        lay = self.lay
        u8 = "<u8"
        by: list[tuple[Any, ...]] = [("id", u8), ("h", u8)]
        if self.fixed and lay.type != "point":
            by.append(("geo", "<f4", cast("np.dtype", lay.dtype)["geometry"].shape))
        listed = [("id", u8), ("h", u8), ("index", "<u4"), ("key", u8), ("within", u8)]
        pair = [("seg", u8), ("id", u8)]
        app: list[tuple[Any, ...]] = [("id", u8), ("ok", "?")]
        if lay.type != "point":
            app += [("level", "<u4"), ("cell", "<i8", (lay.rank,))]
        per_annotation = (np.dtype(by).itemsize + np.dtype(listed).itemsize
                          * (1 + len(lay.relationships)) + np.dtype(app).itemsize
                          + 2 * np.dtype(pair).itemsize * len(lay.relationships))
        if lay.type != "point":  # lines, boxes... may be listed in many cells
            per_annotation *= 4
        total = per_annotation * _estimate_annotations(self.layer)
        parts = 1 if total <= self.bucket_bytes else -(-2 * total // self.bucket_bytes)

        def table(dtype: list[Any]) -> Buckets:
            t = Buckets(dtype, "id", parts, self.bucket_bytes, self.tmp_dir)
            self.tables.append(t)
            return t

        self.by_rows = table(by)
        self.listed_rows = table(listed)
        self.app_rows = table(app)
        self.rel_by = {r: table(pair) for r in self.layer.relationships_index}
        self.rel_listed = {r: table(pair) for r in self.layer.relationships_index}

    def hash(self, recs: np.ndarray) -> np.ndarray:
        """The record hash of each row (keyed at random per run, the same for every index)."""
        need = -(-recs.shape[1] // 8) + 1
        if len(self.keys) < need:
            self.keys = random_odd(need)
        return hash_rows(recs, self.keys)

    def close(self) -> None:
        for t in self.tables:
            t.close()

    def _index(self, name: str) -> int:
        if name not in self.index_no:
            self.index_no[name] = len(self.index_names)
            self.index_names.append(name)
        return self.index_no[name]

    def _key_refs(self, index_no: int, keys: list[Any]) -> np.ndarray:
        """Keys as uint64: ints as they are; names (unsharded cells) by their position."""
        if not keys or isinstance(keys[0], (int, np.integer)):
            return np.array(keys, dtype=np.uint64)
        names = self.key_names.setdefault(index_no, [])
        pos = self.key_pos.setdefault(index_no, {})
        out = []
        for k in keys:
            if k not in pos:
                pos[k] = len(names)
                names.append(k)
            out.append(pos[k])
        return np.array(out, dtype=np.uint64)

    def _key(self, index_no: int, ref: int) -> Any:
        names = self.key_names.get(index_no)
        return names[ref] if names is not None else ref

    # -- what the comparisons across indexes keep --------------------------------------------

    def keep_by_id(self, ids: np.ndarray, hashes: np.ndarray, geo: np.ndarray | None) -> None:
        if self.exact:
            rows = np.empty(len(ids), self.by_rows.dtype)
            rows["id"], rows["h"] = ids, hashes
            if "geo" in rows.dtype.names:
                rows["geo"] = geo
            self.by_rows.add(rows)
        else:
            self.digest.add("by_id", ids, hashes)

    def keep_by_id_pairs(self, rel: str, segs: np.ndarray, ids: np.ndarray,
                         hashes: np.ndarray, single: bool = False) -> None:
        """The ``(segment, id)`` pairs of by_id (``single``: one segment per annotation)."""
        if rel not in self.layer.relationships_index:
            return
        if self.exact:
            self.rel_by[rel].add(_pairs(segs, ids))
            return
        if not single and len(segs) > 1:  # a segment given twice counts once, as in the index
            order = np.lexsort((segs, ids))
            segs, ids, hashes = segs[order], ids[order], hashes[order]
            keep = np.concatenate(([True], (segs[1:] != segs[:-1]) | (ids[1:] != ids[:-1])))
            segs, ids, hashes = segs[keep], ids[keep], hashes[keep]
        self.digest.add(f"by_id:{rel}", segs, ids, hashes)

    def keep_listed(self, index: str, keys: list[Any], where: np.ndarray, within: np.ndarray,
                    ids: np.ndarray, hashes: np.ndarray, rel: str | None = None) -> None:
        """Annotations listed by a relationship index (``rel``; its keys are segment ids)
        or by spatial cells, to compare with by_id: annotation ``j`` is number
        ``within[j]`` of the list whose key is ``keys[where[j]]``."""
        if not self.have_by_id or not len(ids):
            return
        no = self._index(index)
        refs = self._key_refs(no, keys)[where]
        if not self.exact:
            if rel is not None:
                self.digest.add(f"index:{rel}", refs, ids, hashes)
            else:
                self.digest.add("spatial", ids, hashes)
            return
        if rel is not None:
            self.rel_listed[rel].add(_pairs(refs, ids))
        rows = np.empty(len(ids), self.listed_rows.dtype)
        rows["id"], rows["h"], rows["index"] = ids, hashes, no
        rows["key"] = refs
        rows["within"] = within
        self.listed_rows.add(rows)

    def keep_appearances(self, ids: np.ndarray, level: int, cells: np.ndarray,
                         where: np.ndarray, ok: np.ndarray) -> None:
        """Annotation ``j`` is listed in cell ``cells[where[j]]`` of ``level``, and meets it
        when ``ok[j]``."""
        if not self.have_by_id or not len(ids):
            return
        if not self.exact:
            self.all_in_cell = self.all_in_cell and bool(ok.all())
            return
        rows = np.empty(len(ids), self.app_rows.dtype)
        rows["id"], rows["ok"] = ids, ok
        if "level" in rows.dtype.names:
            rows["level"] = level
            rows["cell"] = cells[where]
        self.app_rows.add(rows)

    def digests_agree(self) -> bool:
        """Point layers: whether the digests say that the cross-index checks find nothing."""
        d = self.digest
        if not all(d.same(f"by_id:{r}", f"index:{r}") for r in self.layer.relationships_index):
            return False
        return not self.layer.spatial or (d.same("by_id", "spatial") and self.all_in_cell)

    def rec_hash(self, data: bytes | memoryview) -> int:
        if self.fixed:
            return int(self.hash(np.frombuffer(data, np.uint8).reshape(1, -1))[0])
        return hash(bytes(data)) & 0xFFFF_FFFF_FFFF_FFFF

    def run(self, tick: Callable[[], None]) -> None:
        if self.layer.by_id is not None:
            self.by_id()
        else:
            self.setup()
        tick()
        self.relationships(tick)
        self.spatial(tick)

    # -- per record checks (vectorised) -------------------------------------------------------

    def check_records(self, index: str, keys: Any, ids: np.ndarray, recs: np.ndarray,
                      field_prefix: Callable[[int], str], check_values: bool) -> None:
        """Padding, and (``check_values``) finite geometry, bounds and enums of ``recs``
        (``(n, record_bytes)`` uint8) whose ids are ``ids``; ``keys[i]`` names the key."""
        rep = self.rep
        for a, b in self.pads:
            bad = np.flatnonzero(recs[:, a:b].any(axis=1))
            for i in bad.tolist():
                rep.add("padding", index, keys(i), f"annotation {int(ids[i])}: padding bytes "
                        f"{a - self.lay.geometry_bytes}..{b - self.lay.geometry_bytes} after "
                        "the geometry are not zero", field_prefix(i) + "/padding")
        if not check_values or not len(recs):
            return
        structured = recs.view(cast("np.dtype", self.lay.dtype)).reshape(len(recs))
        if self.lay.type == "point":  # a column at a time
            pts = np.ascontiguousarray(recs[:, : self.lay.geometry_bytes]).view("<f4")
            lo = hi = pts.astype(np.float64)
            finite = np.ones(len(recs), bool)
            inside = np.ones(len(recs), bool)
            with np.errstate(invalid="ignore"):
                for d in range(pts.shape[1]):
                    x = lo[:, d]
                    finite &= np.isfinite(x)
                    inside &= (x >= self.lower[d]) & (x < self.upper[d])
            out = ~inside
        else:
            geo = structured["geometry"].astype(np.float64)
            if self.lay.type == "ellipsoid":
                lo, hi = geo[:, 0] - np.abs(geo[:, 1]), geo[:, 0] + np.abs(geo[:, 1])
            else:
                lo, hi = geo.min(axis=1), geo.max(axis=1)
            finite = np.asarray(np.isfinite(geo).all(axis=(1, 2)))
            with np.errstate(invalid="ignore"):
                out = np.asarray(~((lo >= self.lower).all(axis=1) & (hi < self.upper).all(axis=1)))
        for i in np.flatnonzero(~finite).tolist():
            rep.add("bounds", index, keys(i), f"annotation {int(ids[i])}: geometry is not "
                    "finite", field_prefix(i) + "/geometry")
        for i in np.flatnonzero(out & finite).tolist():
            rep.add("bounds", index, keys(i), f"annotation {int(ids[i])}: geometry spans "
                    f"{lo[i].tolist()}..{hi[i].tolist()}, outside [lower_bound, "
                    f"upper_bound) = [{self.lower.tolist()}, {self.upper.tolist()})",
                    field_prefix(i) + "/geometry")
        for name, values in self.enums:
            got = structured[name]
            for i in np.flatnonzero(~np.isin(got, values)).tolist():
                rep.add("enum", index, keys(i), f"annotation {int(ids[i])}: property {name} "
                        f"is {got[i].item()}, not one of its enum_values",
                        field_prefix(i) + f"/properties/{name}")

    # -- by_id --------------------------------------------------------------------------------

    def by_id(self) -> None:
        layer, rep = self.layer, self.rep
        bkey = layer.by_id_key or "by_id"
        index = layer.by_id
        if isinstance(index, UnshardedIndex):
            for odd in index.uint64_keys()[1]:
                rep.add("file_name", bkey, odd, "not a decimal uint64 id")
        batch: list[tuple[int, bytes]] = []
        if isinstance(index, ShardedIndex):
            raw = index.kv.spec.data_encoding != "gzip"
            if self.by_id_sharded(bkey, index, raw):
                return
        try:
            for item in self._items(bkey, index):
                if not batch:  # the layout is decided on the first value
                    with contextlib.suppress(ShardkitError):
                        layer.decode_by_id(item[0], item[1])
                    self.setup()
                batch.append(item)
                if len(batch) >= _BATCH:
                    self.by_id_batch(bkey, batch)
                    batch = []
        except ShardkitError as exc:
            rep.add("shard", bkey, "-", exc.message, exc.field or "", exc.offset)
        if not hasattr(self, "lay"):
            self.setup()
        if batch:
            self.by_id_batch(bkey, batch)

    def by_id_sharded(self, bkey: str, index: ShardedIndex, raw: bool) -> bool:
        """The checks of a sharded dataset on a sharded by_id, and (``raw`` values) the
        values read and checked as each decoded minishard index is handed over, a batch of
        minishards at a time as arrays (no Python object per value). ``True`` when the
        values were checked; ``False`` (the layout has no fixed size, or the values are
        gzip-encoded) leaves them to a walk."""
        merger = _Merger()
        state = {"started": False, "fixed": raw}
        releases: dict[int | None, _ReleaseBehind] = {}  # per shard: pages dropped behind the walk

        def take(item: tuple[np.ndarray, bytes, np.ndarray, np.ndarray] | None) -> None:
            if item is None or not state["fixed"]:
                return
            if not state["started"]:
                state["started"] = True
                ids, block, starts, ends = item
                with contextlib.suppress(ShardkitError):
                    self.layer.decode_by_id(int(ids[0]), bytes(block[int(starts[0]):
                                                                     int(ends[0])]))
                self.setup()
                state["fixed"] = self.fixed
                if not self.fixed:
                    return
            self.by_id_chunk(bkey, *item)

        def visit(reader: Any, m: int, mindex: Any) -> None:
            if not state["fixed"] or not len(mindex):
                return
            starts = mindex.starts + np.uint64(mindex.base)
            ends = mindex.ends + np.uint64(mindex.base)
            inside = ends <= np.uint64(reader.source.size)  # the rest: data_bounds
            ids = mindex.ids
            if not inside.all():
                ids, starts, ends = ids[inside], starts[inside], ends[inside]
                if not len(ids):
                    return
            release = releases.get(reader.shard_number)
            if release is None:
                for before in releases.values():  # shard by shard: the last one is done
                    before.done()
                release = releases[reader.shard_number] = _ReleaseBehind(reader)
            for item in _run_blocks(reader, release, ids, starts, ends):
                take(merger.add(item))

        problems = index.kv.verify(check_data=False, visit=visit if raw else None)
        for release in releases.values():
            release.done()
        take(merger.flush())
        self.shard_problems(bkey, problems)
        if state["fixed"] and not state["started"]:
            self.setup()
        return bool(state["fixed"])

    def shard_problems(self, key: str, problems: list[Problem]) -> None:
        """Problems of the checks of a sharded dataset, named by the index's folder."""
        for p in problems:
            self.saw_duplicates = self.saw_duplicates or p.check == "duplicate_id"
            self.rep.problems.append(Problem("shard" if p.check == "read" else p.check,
                                             f"{key}/{p.message}", p.offset,
                                             f"/{key}{p.field or ''}"))

    def by_id_chunk(self, bkey: str, ids: np.ndarray, block: bytes, starts: np.ndarray,
                    ends: np.ndarray) -> None:
        """by_id values ``block[starts[i] : ends[i]]`` of fixed-size records, as arrays."""
        lengths = (ends - starts).astype(np.int64)
        buf = np.frombuffer(block, np.uint8)
        slow: list[tuple[int, bytes]] = []
        for length in _distinct_ints(lengths):
            rows = np.flatnonzero(lengths == length)
            if length < self.rb + 4 * len(self.lay.relationships):
                bad = rows
            else:
                at = starts[rows].astype(np.int64)
                first = int(at[0])
                if len(at) == len(lengths) and (len(at) < 2 or bool(
                        np.all(at[1:] - at[:-1] == length))):  # back to back: a view
                    arr = buf[first : first + length * len(at)].reshape(len(at), length)
                else:
                    arr = buf[at[:, None] + np.arange(length)]
                bad = rows[self.by_id_matrix(bkey, ids[rows], arr)]
            slow += [(int(ids[i]), bytes(block[int(starts[i]) : int(ends[i])]))
                     for i in bad.tolist()]
        if slow:
            self.by_id_slow(bkey, slow)

    def by_id_batch(self, bkey: str, batch: list[tuple[int, bytes]]) -> None:
        if not self.fixed:
            self.by_id_slow(bkey, batch)
            return
        lengths = np.fromiter((len(v) for _, v in batch), dtype=np.int64, count=len(batch))
        slow: list[tuple[int, bytes]] = []
        for length in np.unique(lengths).tolist():
            rows = np.flatnonzero(lengths == length)
            group = [batch[i] for i in rows.tolist()]
            if length < self.rb + 4 * len(self.lay.relationships):
                slow += group
                continue
            arr = np.frombuffer(b"".join(v for _, v in group), np.uint8).reshape(len(group),
                                                                                 length)
            ids = np.array([k for k, _ in group], dtype=np.uint64)
            bad = self.by_id_matrix(bkey, ids, arr)
            slow += [group[i] for i in bad.tolist()]
        if slow:
            self.by_id_slow(bkey, slow)

    def by_id_matrix(self, bkey: str, ids: np.ndarray, arr: np.ndarray) -> np.ndarray:
        """by_id values of one length, as the rows of ``arr``; returns the rows that do not
        parse (to go one by one)."""
        length = arr.shape[1]
        group_n = len(arr)
        pos = np.full(group_n, self.rb, dtype=np.int64)
        good = np.ones(group_n, dtype=bool)
        pairs = []
        for _ in self.lay.relationships:
            inside = pos + 4 <= length
            good &= inside
            cnt = np.zeros(group_n, np.int64)
            p0 = int(pos[0]) if group_n else 0
            if group_n and bool(np.all(pos == p0)) and p0 + 4 <= length:  # one column
                cnt = np.ascontiguousarray(arr[:, p0 : p0 + 4]).view("<u4").reshape(
                    -1).astype(np.int64)
            elif inside.any():
                cnt[inside] = _gather(arr[inside], pos[inside], 4).copy().view(
                    "<u4").reshape(-1).astype(np.int64)
            end = pos + 4 + 8 * cnt
            good &= end <= length
            pairs.append((pos + 4, cnt))
            pos = np.where(good, end, length)
        good &= pos == length
        bad = np.flatnonzero(~good)
        if len(bad):
            keep = np.flatnonzero(good)
            arr, ids = arr[keep], ids[keep]
            pairs = [(p[keep], c[keep]) for p, c in pairs]
        recs = arr[:, : self.rb]
        hashes = self.hash(recs)
        dtype = cast("np.dtype", self.lay.dtype)
        self.keep_by_id(ids, hashes, recs.view(dtype).reshape(len(recs))["geometry"]
                        if self.lay.type != "point" else None)
        self.check_records(bkey, lambda i, ids=ids: int(ids[i]), ids, recs, lambda i: "", True)
        for rel, (start, cnt) in zip(self.lay.relationships, pairs, strict=True):
            total = int(cnt.sum())
            if not total:
                continue
            c0, s0 = int(cnt[0]), int(start[0])
            if bool(np.all(cnt == c0)) and bool(np.all(start == s0)):  # one block of columns
                segs = np.ascontiguousarray(arr[:, s0 : s0 + 8 * c0]).view("<u8").reshape(-1)
                if c0 == 1:  # one segment each: the columns as they are
                    self.keep_by_id_pairs(rel, segs, ids, hashes, single=True)
                    continue
                self.keep_by_id_pairs(rel, segs, np.repeat(ids, c0), np.repeat(hashes, c0))
                continue
            row = np.repeat(np.arange(len(cnt)), cnt)
            within = np.arange(total) - np.repeat(np.cumsum(cnt) - cnt, cnt)
            offs = start[row] + 8 * within
            segs = _gather(arr[row], offs, 8).copy().view("<u8").reshape(-1)
            self.keep_by_id_pairs(rel, segs, ids[row], hashes[row])
        return bad

    def by_id_slow(self, bkey: str, batch: list[tuple[int, bytes]]) -> None:
        layer, rep = self.layer, self.rep
        ids, hashes, geos = [], [], []
        for ident, data in batch:
            try:
                ann = layer.decode_by_id(ident, data)
            except ShardkitError as exc:
                rep.add("record", bkey, ident, exc.message, exc.field or "", exc.offset)
                continue
            end = layer.decoder.record_end(data, 0, bkey)
            rec = data[:end]
            ids.append(ident)
            hashes.append(self.rec_hash(rec))
            if self.fixed:
                geos.append(ann.geometry)
                arr = np.frombuffer(rec, np.uint8).reshape(1, -1)
                self.check_records(bkey, lambda i, ident=ident: ident,
                                   np.array([ident], np.uint64), arr, lambda i: "", True)
            else:
                self.poly_geo[ident] = ann.geometry
                self._check_poly(bkey, ident, ann, data, end)
            for rel, segs in (ann.relationships or {}).items():
                if segs:
                    self.keep_by_id_pairs(rel, np.array(segs, np.uint64),
                                          np.full(len(segs), ident, np.uint64),
                                          np.full(len(segs), hashes[-1], np.uint64))
        if ids:
            self.keep_by_id(np.array(ids, dtype=np.uint64), np.array(hashes, dtype=np.uint64),
                            np.array(geos, dtype=np.float32) if self.fixed and geos else None)

    def _check_poly(self, index: str, key: Any, ann: Any, data: bytes, end: int) -> None:
        rep = self.rep
        base = end - self.lay.property_bytes
        for a, b in self.lay.padding_ranges():
            if any(data[base + a : base + b]):
                rep.add("padding", index, key, f"annotation {ann.id}: padding bytes {a}..{b} "
                        "after the geometry are not zero", "/padding", offset=base + a)
        g = ann.geometry.astype(np.float64)
        if not np.all(np.isfinite(g)):
            rep.add("bounds", index, key, f"annotation {ann.id}: geometry is not finite",
                    "/geometry")
        elif len(g) and (np.any(g.min(axis=0) < self.lower)
                         or np.any(g.max(axis=0) >= self.upper)):
            rep.add("bounds", index, key, f"annotation {ann.id}: geometry spans "
                    f"{g.min(axis=0).tolist()}..{g.max(axis=0).tolist()}, outside "
                    f"[lower_bound, upper_bound) = [{self.lower.tolist()}, "
                    f"{self.upper.tolist()})", "/geometry")
        for p in self.lay.properties:
            if p.enum and ann.properties[p.id] not in p.enum:
                rep.add("enum", index, key, f"annotation {ann.id}: property {p.id} is "
                        f"{ann.properties[p.id]}, not one of its enum_values",
                        f"/properties/{p.id}")

    # -- lists (relationship entries, spatial cells) -----------------------------------------

    def cells(self, index: str, entries: list[tuple[Any, Any, bytes]], rel: str | None = None
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, list[Any] | None,
                         np.ndarray]:
        """Many lists at once: ``(cell of each annotation, ids, records (n, rb) or None,
        annotations or None, count of each list)``; a list that does not parse is reported
        and counts 0."""
        rb = self.rb
        n = len(entries)
        counts = np.zeros(n, np.int64)
        if self.fixed:
            heads = np.frombuffer(b"".join(d[:8].ljust(8, b"\xff") for _, _, d in entries),
                                  "<u8").astype(np.int64) if n else np.zeros(0, np.int64)
            lengths = np.fromiter((len(d) for _, _, d in entries), np.int64, n)
            with np.errstate(over="ignore"):
                good = (heads >= 0) & (heads < (1 << 32)) & (lengths == 8 + heads * (rb + 8))
            slow = np.flatnonzero(~good).tolist()
            counts[good] = heads[good]
            fast = np.flatnonzero(good).tolist()
            views = [(memoryview(entries[i][2]), 8 + int(counts[i]) * rb) for i in fast]
            recs = np.frombuffer(b"".join(v[8:e] for v, e in views), np.uint8).reshape(-1, rb)
            ids = np.frombuffer(b"".join(v[e:] for v, e in views), "<u8").astype(np.uint64)
            del views
            where = np.repeat(np.arange(n), counts)
            for i in slow:
                self.cell_slow(index, entries[i][0], entries[i][2], rel)
            self.fixed_lists(index, [k for k, _, _ in entries], where, counts, ids, recs, rel)
            return where, ids, recs, None, counts
        anns_all: list[Any] = []
        where_l: list[int] = []
        for i, (key, _, data) in enumerate(entries):
            got = self.cell_slow(index, key, data, rel)
            if got is not None:
                anns_all += got
                where_l += [i] * len(got)
                counts[i] = len(got)
        ids = np.array([a.id for a in anns_all], dtype=np.uint64)
        return np.array(where_l, np.int64), ids, None, anns_all, counts

    def fixed_lists(self, index: str, keys: list[Any], where: np.ndarray, counts: np.ndarray,
                    ids: np.ndarray, recs: np.ndarray, rel: str | None) -> None:
        starts = np.cumsum(counts) - counts
        within = np.arange(len(ids)) - np.repeat(starts, counts)
        self.check_records(index, lambda j: keys[where[j]], ids, recs,
                           lambda j: f"/annotations/{within[j]}", not self.have_by_id)
        self.keep_listed(index, keys, where, within, ids, self.hash(recs), rel)

    def cells_block(self, index: str, keys: np.ndarray, block: bytes, starts: np.ndarray,
                    ends: np.ndarray, rel: str | None) -> None:
        """:meth:`cells` over lists stored back to back in ``block`` (``block[starts[i] :
        ends[i]]`` is the list of ``keys[i]``), without a Python step per list."""
        rb = self.rb
        n = len(keys)
        buf = np.frombuffer(block, np.uint8)
        a, b = starts.astype(np.int64), ends.astype(np.int64)
        lengths = b - a
        heads = np.full(n, -1, np.int64)
        has = lengths >= 8
        if has.any():
            heads[has] = np.ascontiguousarray(buf[a[has][:, None] + np.arange(8)]).view(
                "<u8").reshape(-1).astype(np.int64)
        with np.errstate(over="ignore"):
            good = (heads >= 0) & (heads < (1 << 32)) & (lengths == 8 + heads * (rb + 8))
        counts = np.where(good, heads, 0)
        key_list = keys.tolist()
        for i in np.flatnonzero(~good).tolist():
            self.cell_slow(index, key_list[i], bytes(block[a[i] : b[i]]), rel)
        where = np.repeat(np.arange(n), counts)
        recs, ids = _list_columns(buf, a, counts, rb, where)
        self.fixed_lists(index, key_list, where, counts, ids, recs, rel)

    def cell_slow(self, index: str, key: Any, data: bytes, rel: str | None = None
                  ) -> list[Any] | None:
        layer, rep = self.layer, self.rep
        try:
            anns = layer.decode_cell(data, f"{index}/{key}")
            _, starts = layer.decoder.cell_bounds(data, f"{index}/{key}")
        except ShardkitError as exc:
            rep.add("record", index, key, exc.message, exc.field or "", exc.offset)
            return None
        ids = np.array([a.id for a in anns], dtype=np.uint64)
        hashes = np.array([self.rec_hash(data[starts[i] : starts[i + 1]])
                           for i in range(len(anns))], dtype=np.uint64)
        for i, a in enumerate(anns):
            if self.have_by_id:
                base = starts[i + 1] - self.lay.property_bytes
                for s_, e_ in self.lay.padding_ranges():
                    if any(data[base + s_ : base + e_]):
                        rep.add("padding", index, key, f"annotation {a.id}: padding bytes "
                                f"{s_}..{e_} after the geometry are not zero",
                                f"/annotations/{i}/padding")
            else:
                self._check_poly(index, key, a, data, starts[i + 1])
        self.keep_listed(index, [key], np.zeros(len(ids), np.int64), np.arange(len(ids)), ids,
                         hashes, rel)
        return anns

    def _items(self, key: str, index: Any) -> Any:
        """``index.items()``; sharded, a value that does not decompress is a ``gzip`` problem
        (as the checks of sharded datasets name it: they leave the data to this walk)."""
        if not isinstance(index, ShardedIndex):
            return index.items()
        return index.items(self._bad_value(key, index))

    def _bad_value(self, key: str, index: ShardedIndex) -> Callable[[Any, int, ShardkitError],
                                                                      None]:
        def bad_value(reader: Any, chunk: int, exc: ShardkitError) -> None:
            name = index.kv.spec.shard_name(reader.shard_number or 0)
            self.rep.problems.append(Problem("gzip", f"{key}/{name}: {exc.message}",
                                             exc.offset, f"/{key}{exc.field or ''}"))

        return bad_value

    def _batches(self, items: Any) -> Any:
        """Lists a batch at a time: up to ``_BATCH / 4`` of them, or ``_BATCH_BYTES``."""
        batch: list[tuple[Any, Any, bytes]] = []
        size = 0
        for item in items:
            batch.append(item)
            size += len(item[2])
            if len(batch) >= _BATCH // 4 or size >= _BATCH_BYTES:
                yield batch
                batch, size = [], 0
        if batch:
            yield batch

    def relationships(self, tick: Callable[[], None]) -> None:
        layer, rep = self.layer, self.rep
        for rel, index in layer.relationships_index.items():
            rkey = layer.relationship_keys[rel]
            if isinstance(index, UnshardedIndex):
                for odd in index.uint64_keys()[1]:
                    rep.add("file_name", rkey, odd, "not a decimal uint64 segment id")
            try:
                if isinstance(index, ShardedIndex) and self.fixed:
                    # raw values: read as they lie; gzip ones: inflated into blocks alike
                    blocks = index.blocks() if index.kv.spec.data_encoding != "gzip" \
                        else index.value_blocks(self._bad_value(rkey, index))
                    for segs, block, starts, ends in _merged_blocks(blocks):
                        self.cells_block(rkey, segs, block, starts, ends, rel)
                else:
                    items = ((seg, None, data) for seg, data in self._items(rkey, index))
                    for batch in self._batches(items):
                        self.cells(rkey, batch, rel)
            except ShardkitError as exc:
                rep.add("shard", rkey, "-", exc.message, exc.field or "", exc.offset)
            tick()

    # -- spatial --------------------------------------------------------------------------

    def _level_entries(self, lvl: SpatialLevel) -> Any:
        layer, rep = self.layer, self.rep
        naming = layer._naming(lvl) if not lvl.index.sharded else "spec"
        if isinstance(lvl.index, UnshardedIndex):
            for name in lvl.index.names():
                named = _cell_name_to_cell(name, self.lay.rank)
                if named is None or any(c >= g for c, g in zip(named, lvl.grid_shape,
                                                                strict=True)):
                    rep.add("file_name", lvl.key, name, "not a cell of the grid "
                            f"{list(lvl.grid_shape)} (x_y_z)")
                    continue
                cell = _true_cell(lvl, named) if naming == "ngsidekick" else named
                data = lvl.index.read(name)
                if data is not None:
                    yield name, cell, data
        else:
            for code, data in self._items(lvl.key, lvl.index):
                try:
                    cell = morton_decode(code, lvl.grid_shape)
                except ShardkitError as exc:
                    rep.add("file_name", lvl.key, code, exc.message)
                    continue
                yield code, cell, data

    def spatial(self, tick: Callable[[], None]) -> None:
        layer, rep = self.layer, self.rep
        for lvl in layer.spatial:
            finest = lvl.level == len(layer.spatial) - 1
            slack = 1e-5 * np.maximum(1.0, np.abs(np.asarray(lvl.chunk_size)))
            try:
                for batch in self._batches(self._level_entries(lvl)):
                    where, ids, recs, anns, counts = self.cells(lvl.key, batch)
                    if lvl.limit > 0 and not finest:
                        for i in np.flatnonzero(counts > lvl.limit).tolist():
                            rep.add("limit", lvl.key, batch[i][0], f"{int(counts[i])} "
                                    f"annotations, over the level's limit {lvl.limit}",
                                    "/count")
                    cells = np.array([c for _, c, _ in batch], dtype=np.int64).reshape(
                        len(batch), -1)
                    boxes = [lvl.open_cell_box(self.lower, c) for c in cells]
                    clo = np.array([b[0] for b in boxes]).reshape(len(batch), -1) - slack
                    chi = np.array([b[1] for b in boxes]).reshape(len(batch), -1) + slack
                    ok = self._meets_cells(recs, anns, clo, chi, where, counts)
                    starts = np.cumsum(counts) - counts
                    within = np.arange(len(ids)) - np.repeat(starts, counts)
                    for j in np.flatnonzero(~ok).tolist():
                        w = int(where[j])
                        rep.add("spatial_extra", lvl.key, batch[w][0], f"annotation "
                                f"{int(ids[j])} does not meet cell {cells[w].tolist()} "
                                f"[{clo[w].tolist()}, {chi[w].tolist()}]",
                                f"/annotations/{int(within[j])}")
                    self.keep_appearances(ids, lvl.level, cells, where, ok)
            except ShardkitError as exc:
                rep.add("shard", lvl.key, "-", exc.message, exc.field or "", exc.offset)
            tick()

    def _meets_cells(self, recs: np.ndarray | None, anns: list[Any] | None, clo: np.ndarray,
                     chi: np.ndarray, where: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """Whether annotation ``j`` meets the box ``[clo[where[j]], chi[where[j]]]`` of the
        cell listing it."""
        kind = self.lay.type
        if recs is not None and kind == "point":  # a column at a time, in float64
            n = len(recs)
            pts = np.ascontiguousarray(recs[:, : self.lay.geometry_bytes]).view("<f4")
            ok = np.ones(n, bool)
            with np.errstate(invalid="ignore"):
                for d in range(pts.shape[1]):
                    x = pts[:, d].astype(np.float64)
                    ok &= (x <= np.repeat(chi[:, d], counts)) & (x >= np.repeat(clo[:, d], counts))
            return ok
        clo, chi = clo[where], chi[where]
        if recs is None:
            return np.array([meets(kind, a.geometry, clo[i], chi[i])
                             for i, a in enumerate(anns or [])], dtype=bool)
        geo = recs.view(cast("np.dtype", self.lay.dtype)).reshape(len(recs))["geometry"] \
            .astype(np.float64)
        if kind == "ellipsoid":
            lo, hi = geo[:, 0] - np.abs(geo[:, 1]), geo[:, 0] + np.abs(geo[:, 1])
        else:
            lo, hi = geo.min(axis=1), geo.max(axis=1)
        with np.errstate(invalid="ignore"):
            ok = cast("np.ndarray", (lo <= chi).all(axis=1) & (hi >= clo).all(axis=1))
        if kind in ("line", "ellipsoid"):
            for i in np.flatnonzero(ok).tolist():
                ok[i] = meets(kind, geo[i], clo[i], chi[i])
        return ok

    def finish(self) -> None:
        """The comparisons across indexes, a group of buckets at a time."""
        _compare.finish(self)


def _list_columns(buf: np.ndarray, a: np.ndarray, counts: np.ndarray, rb: int,
                  where: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The records ``(n, rb)`` and ids of the lists (count, records, ids) at ``buf[a[i]:]``
    whose counts are ``counts`` (0 for a list that does not parse): each list's records and
    ids are spans of the block, copied back to back (in C when built; else gathered a row at
    a time from windows over the block)."""
    if not len(where):
        return np.zeros((0, rb), np.uint8), np.zeros(0, np.uint64)
    if annotation_spill._native is not None:
        full = counts > 0
        a, c = a[full], counts[full]
        recs = annotation_spill.copy_spans(buf, a + 8, c * rb).reshape(-1, rb)
        ids = annotation_spill.copy_spans(buf, a + 8 + c * rb, c * 8).view("<u8")
        return recs, ids
    first = np.cumsum(counts) - counts
    j = np.arange(len(where)) - first[where]
    rec_at = (a + 8)[where] + j * rb
    id_at = (a + 8 + counts * rb)[where] + j * 8
    windows = np.lib.stride_tricks.as_strided(buf, (len(buf) - rb + 1, rb), (1, 1))
    words = np.lib.stride_tricks.as_strided(buf, (len(buf) - 7, 8), (1, 1))
    return windows[rec_at], words[id_at].view("<u8").reshape(-1)


def _run_blocks(reader: Any, release: _ReleaseBehind, ids: np.ndarray, starts: np.ndarray,
                ends: np.ndarray) -> Any:
    """``(ids, block, starts, ends)`` per run of a minishard's values (inside the file): a
    read per run, or per value where a run is too wide (values out of order, far apart)."""
    for r in _runs(starts, ends):
        lo, hi = int(starts[r].min()), int(ends[r].max())
        if hi - lo > _MAX_RUN_SPAN:
            yield from ShardedIndex._one_by_one(reader, release, ids[r], starts[r], ends[r])
            continue
        block = bytes(reader.source.read_range(lo, hi))
        release(lo, hi)
        yield ids[r], block, starts[r] - np.uint64(lo), ends[r] - np.uint64(lo)


def _estimate_annotations(layer: NgAnnotationLayer) -> int:
    """At least the number of annotations in by_id: its files unsharded; sharded, the bytes
    of its shard files over the size of one record."""
    index = layer.by_id
    if isinstance(index, UnshardedIndex):
        return len(index.names())
    if isinstance(index, ShardedIndex):
        total = 0
        for number in index.kv.shard_numbers():
            with contextlib.suppress(ShardkitError, OSError):
                reader = index.kv.shard(number)
                total += 0 if reader is None else reader.source.size
        return total // max(1, layer.layout.record_bytes)
    return 0



def _release_shards(index: ShardedIndex) -> None:
    """The mapped pages of the shard files of ``index`` that its checks opened, dropped
    (nothing is opened or read here)."""
    for reader in list(index.kv._shards.values()):
        if reader is not None:
            _ReleaseBehind(reader).done()


def verify_layer(layer: NgAnnotationLayer, progress: Callable[[int, int], None] | None = None,
                 *, bucket_bytes: int = DEFAULT_BUCKET_BYTES, exact: bool = False,
                 tmp_dir: str | None = None) -> list[Problem]:
    """Every check (see the module's docstring).

    ``bucket_bytes`` bounds the memory of the comparisons across indexes (the rows of one
    group of buckets); past it they are spilled to a temporary folder in ``tmp_dir`` (or the
    system's), removed before returning. ``exact`` skips the digests of point layers and
    compares rows (the same problems, slower).
    """
    rep = _Report()
    indexes = layer.indexes()
    steps = len(indexes) + 1
    done = 0

    def tick() -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, steps)

    # sharded indexes: the checks every sharded dataset gets (by_id's as its values are read;
    # gzip values are decompressed by the walk over every value)
    options = {"bucket_bytes": bucket_bytes, "tmp_dir": tmp_dir}
    v = _Verifier(layer, rep, exact=exact, **options)  # type: ignore[arg-type]
    for key, index in indexes:
        if isinstance(index, ShardedIndex) and index is not layer.by_id:
            v.shard_problems(key, index.kv.verify(check_data=False))
            _release_shards(index)
    try:
        v.run(tick)
        if not v.exact and v.have_by_id and (v.saw_duplicates or not v.digests_agree()):
            # something differs: the rows again, compared exactly (values are checked once:
            # what this pass finds on its own is not reported twice)
            v.close()
            v = _Verifier(layer, _Report(), exact=True, **options)  # type: ignore[arg-type]
            v.run(lambda: None)
            v.rep = rep
        v.finish()
    finally:
        v.close()
    for q in layer.quirks:
        rep.problems.append(Problem("writer_quirk", q))
    return rep.finish()
