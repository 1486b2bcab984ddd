"""Converting Neuroglancer precomputed layers between the unsharded and the sharded layout.

``shard_layer(src, dst)`` reads an unsharded layer (image scales: one file per chunk named
``x0-x1_y0-y1_z0-z1`` in the scale's folder, whatever its encoding; or a layer keyed by
segment id, one file per id, such as skeletons) and writes the sharded layer: the same chunk
bytes, grouped into ``neuroglancer_uint64_sharded_v1`` shard files, and an ``info`` with the
``sharding`` objects added. ``unshard_layer(src, dst)`` does the reverse. Files named
``NAME.gz`` (cloud-volume's local copies of compressed files) are read as ``NAME``.

The work is one task per output shard (shard direction) or per input shard (unshard
direction), so a task holds at most one shard's worth of data. Tasks run in this process
(``jobs=1``), in local processes (``jobs > 1``) or on a Dask cluster (``dask=ADDRESS``).
Every file is written under a temporary name and renamed (object stores, whose uploads appear
whole, are written directly), and the ``info`` file last, so an interrupted conversion is
resumed by running it again: shard files already present are kept, chunk files already
present are not written again. A resumed ``shard_layer`` keeps shard files only when they were
written with the same sharding spec: each output folder holds a hidden record of the spec
(``.shardkit-sharding.json``, written before its first shard file, removed once the ``info`` is
written), and a finished output's ``info`` says it; another spec is refused.

This module plans the tasks and runs them; what one task does (and the chunk grid geometry
that names the files) is in :mod:`.convert_tasks`.
"""

from __future__ import annotations

import copy
import json
import os
import posixpath
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from typing import Any, cast

import numpy as np

from ..errors import LimitExceededError, ShardkitError
from ..formats.neuroglancer import (
    ShardingSpec,
    SpecError,
    open_dataset,
)
from ..formats.neuroglancer.decode import morton_decode_many, morton_schedule
from ..formats.neuroglancer.image import scale_geometry
from ..formats.neuroglancer.spec import parse_json
from ..writers.neuroglancer import (  # noqa: F401 - shard_pieces: kept importable
    check_writable,
    shard_pieces,
)
from .chooser import (
    DEFAULT_MINISHARD_INDEX_BYTES,
    DEFAULT_SHARD_BYTES,
    DEFAULT_SHARD_INDEX_BYTES,
    SpecChoice,
    choose_hashed_spec,
    choose_image_spec,
    morton_bits,
)
from .convert_tasks import _bit_schedule, _join, chunk_name, run_task
from .layer_store import LayerStore, _check_name

__all__ = [
    "ConversionReport",
    "LayerStore",
    "chunk_name",
    "morton_decode_many",
    "plan_spec",
    "shard_layer",
    "unshard_layer",
]

_KV_TYPES = ("neuroglancer_skeletons", "neuroglancer_multilod_draco",
             "neuroglancer_legacy_mesh")
_ID_NAME = re.compile(r"^(\d+)(\.gz)?$")
_MANIFEST_NAME = re.compile(r"^(\d+)\.index(\.gz)?$")
# In each output folder while `ng shard` runs: the sharding spec its shard files are written
# with, so that a rerun with another spec refuses to keep them. Removed once the info is
# written (the info says the spec from then on).
_SPEC_RECORD = ".shardkit-sharding.json"
_MAX_RECORD_BYTES = 1 << 20
MAX_CODES_PER_TASK = 1 << 24  # chunk ids one task lists in numpy arrays (~50 bytes each)


def _scale_key(scale: Mapping[str, Any], index: int) -> str:
    """The folder of scale ``index``: its key, checked and normalised as the reader does."""
    return _check_name(scale.get("key"), f"/scales/{index}/key")


# -- the plan -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Part:
    """One unit of the layer: an image scale, or the whole key-value layer."""

    folder: str  # relative to the layer root ("" for key-value layers)
    scale: dict[str, Any] | None  # the scale object of the info (image)
    spec: dict[str, Any]  # the sharding (target when sharding, source when unsharding)
    meshes: bool = False  # multi-resolution meshes: <id>.index manifests and <id> fragments

    @property
    def grid(self) -> list[int]:
        assert self.scale is not None
        return [-(-int(s) // int(c)) for s, c in zip(self.scale["size"],
                                                     self.scale["chunk_sizes"][0], strict=True)]


@dataclass(frozen=True)
class ShardTask:
    """One task: write shard ``shard`` of ``part`` (or unshard it)."""

    direction: str  # "shard" or "unshard"
    src: LayerStore
    dst: LayerStore
    part: _Part
    shard: int
    keys: tuple[int, ...] | None = None  # key-value layers and hashed scales: the ids
    check_existing: bool = True
    threads: int = 1  # encoding threads inside the task
    gzip_level: int = 6

    def write_shard(self, spec: ShardingSpec, pieces: Sequence[bytes]) -> None:
        """Write the task's shard file, the folder's record of the spec first (see
        ``_SPEC_RECORD``; every task writes the same bytes)."""
        record = _join(self.part.folder, _SPEC_RECORD)
        if not self.dst.exists(record):
            self.dst.write(record, json.dumps(spec.to_dict()).encode())
        self.dst.write(_join(self.part.folder, spec.shard_name(self.shard)), pieces)


@dataclass
class ConversionReport:
    """What a conversion did.

    Attributes:
        direction: ``shard`` or ``unshard``.
        specs: Folder (scale key, or ``""``) -> the sharding spec used.
        shards_written, shards_skipped: Shard files written, and kept from an earlier run.
        files_in, files_out: Files read, and written (``info`` included).
        chunks: Chunks (or objects) moved.
        bytes_in, bytes_out: Bytes read and written.
        choices: Folder -> the chooser's reasoning, when ``spec="auto"``.
        shards: Folder -> the shard files it holds after the run (written or kept); 0 for an
            empty scale (no chunks: no shard file, and no folder, is written for it).
    """

    direction: str
    specs: dict[str, dict[str, Any]] = field(default_factory=dict)
    shards_written: int = 0
    shards_skipped: int = 0
    files_in: int = 0
    files_out: int = 0
    chunks: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    choices: dict[str, dict[str, Any]] = field(default_factory=dict)
    shards: dict[str, int] = field(default_factory=dict)

    def add(self, result: Mapping[str, int]) -> None:
        for name, value in result.items():
            setattr(self, name, getattr(self, name) + value)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


_ANNOTATIONS = "neuroglancer_annotations_v1"


def _is_image(info: Mapping[str, Any]) -> bool:
    kind = info.get("@type")
    return kind == "neuroglancer_multiscale_volume" or (kind is None and "scales" in info)


def _scales(info: Mapping[str, Any], wanted: Iterable[str] | None
            ) -> list[tuple[int, dict[str, Any]]]:
    """``(index, scale)`` of the wanted scales (default all), every scale checked as the
    reader checks it (:func:`~shardkit.formats.neuroglancer.image.scale_geometry`); each
    returned scale is a copy whose ``key`` is normalised (``./s0/`` is ``s0``)."""
    scales = info.get("scales")
    if not isinstance(scales, list) or not scales:
        raise SpecError("info: scales must be a non-empty list", field="/scales")
    chosen = []
    keys = {posixpath.normpath(str(w)) for w in wanted} if wanted else None
    for i, scale in enumerate(scales):
        if not isinstance(scale, dict) or "key" not in scale:
            raise SpecError(f"info: scale {i} is not an object with a key", field=f"/scales/{i}")
        key = _scale_key(scale, i)
        scale_geometry(scale, i)
        if keys is None or key in keys:
            chosen.append((i, dict(scale, key=key)))
    if keys is not None:
        missing = keys - {s["key"] for _, s in chosen}
        if missing:
            raise ShardkitError(f"no scale {', '.join(sorted(missing))} in the info file")
    return chosen


def _spec_for(given: Any, folder: str, index: int) -> ShardingSpec | None:
    """The spec the user gave for one part: one object for all, a list, or a dict by key."""
    if given is None or given == "auto":
        return None
    if isinstance(given, ShardingSpec):
        return given
    if isinstance(given, str):
        given = parse_json(given, "sharding spec", field="/sharding")
    if isinstance(given, list):
        if index >= len(given):
            raise SpecError(f"{len(given)} sharding spec(s) given for more scales",
                            field="/scales")
        return ShardingSpec.coerce(given[index])
    if isinstance(given, Mapping) and "@type" not in given:
        if folder not in given:
            raise SpecError(f"no sharding spec given for scale {folder!r}", field="/scales")
        return ShardingSpec.coerce(given[folder])
    return ShardingSpec.coerce(given)


def plan_spec(src: str | os.PathLike[str], *, scales: Iterable[str] | None = None,
              storage_options: Mapping[str, Any] | None = None,
              **targets: Any) -> dict[str, SpecChoice]:
    """The chooser's proposal for each part of an unsharded layer: folder -> choice.

    Image scales are planned from their geometry (uncompressed chunk size, which bounds a
    shard's bytes whatever the compression); key-value layers from a listing (ids and sizes).
    ``targets`` are passed to the chooser (``shard_bytes``, ``minishard_index_bytes``...).
    """
    store = LayerStore(src, storage_options)
    info = store.read_info()
    return _plan(store, info, scales, targets)[1]


def _plan(store: LayerStore, info: dict[str, Any], scales: Iterable[str] | None,
          targets: Mapping[str, Any], given: Any = "auto"
          ) -> tuple[list[tuple[_Part, ShardingSpec, np.ndarray | None]], dict[str, SpecChoice]]:
    parts: list[tuple[_Part, ShardingSpec, np.ndarray | None]] = []
    choices: dict[str, SpecChoice] = {}
    if _is_image(info):
        for n, (i, scale) in enumerate(_scales(info, scales)):
            key = str(scale["key"])
            spec = _spec_for(given, key, n)
            if spec is None:
                try:
                    choice = choose_image_spec(
                        scale["size"], scale["chunk_sizes"][0],
                        data_type=str(info.get("data_type", "uint8")),
                        num_channels=int(info.get("num_channels", 1)),
                        encoding=str(scale.get("encoding", "raw")), **targets)
                except (ValueError, TypeError) as exc:
                    raise SpecError(f"info: scale {key}: {exc}", field=f"/scales/{i}") from exc
                choices[key] = choice
                spec = choice.spec
            check_writable(spec)
            _check_codes_per_task(spec, scale, i)
            parts.append((_Part(key, scale, spec.to_dict()), spec, None))
        return parts, choices
    kind = info.get("@type")
    if kind not in _KV_TYPES:
        raise SpecError(f"{store.target}/info: neither an image volume nor a layer keyed by "
                        f"segment id (@type {kind!r})", field="/@type")
    meshes = kind == "neuroglancer_multilod_draco"
    if kind == "neuroglancer_legacy_mesh":
        raise ShardkitError(f"{store.target}: legacy meshes have no sharded form")
    listing = store.list()
    ids, total = [], 0
    for name, size in listing.items():
        m = (_MANIFEST_NAME if meshes else _ID_NAME).match(name)
        if m:
            if int(m.group(1)) >= 1 << 64:
                raise ShardkitError(f"{store.target}/{name}: {m.group(1)} is not a uint64 "
                                    "segment id")
            ids.append(int(m.group(1)))
            total += size
        elif meshes and _ID_NAME.match(name):
            total += size  # fragment data
    keys = np.unique(np.array(ids, dtype=np.uint64))
    spec = _spec_for(given, "", 0)
    if spec is None:
        # Draco fragments are compressed, and readers fetch them by byte range: raw data
        choice = choose_hashed_spec(len(keys), total_bytes=total or None,
                                    **cast(dict[str, Any], {"data_encoding": "raw"} if meshes
                                           else {}), **targets)
        choices[""] = choice
        spec = choice.spec
    if meshes and spec.data_encoding != "raw":
        raise SpecError("multi-resolution meshes need data_encoding raw: readers fetch the "
                        "fragments before a manifest by byte range", field="/sharding/"
                        "data_encoding")
    check_writable(spec)
    parts.append((_Part("", None, spec.to_dict(), meshes), spec, keys))
    return parts, choices


def _check_codes_per_task(spec: ShardingSpec, scale: Mapping[str, Any], index: int) -> None:
    """Refuse, before allocating, a scale whose chunk ids a task would list in arrays too
    large: an identity-hashed shard's whole code range, or a hashed scale's whole grid."""
    grid = scale_geometry(scale, index)[3]
    total = len(morton_schedule(grid))
    if spec.hash == "identity":
        region = spec.preshift_bits + spec.minishard_bits
        count = 1 << (total if region >= total else total - min(spec.shard_bits, total - region))
        what = "chunk ids in each shard's range"
    else:
        count = grid[0] * grid[1] * grid[2]
        what = "chunks in its grid (hashed specs list them all)"
    if count > MAX_CODES_PER_TASK:
        raise LimitExceededError(f"scale {scale['key']}: {count} {what} with sharding "
                                 f"{json.dumps(spec.to_dict())}; the converter lists at most "
                                 f"{MAX_CODES_PER_TASK} at a time (more shard_bits, or larger "
                                 "chunks)", field=f"/scales/{index}/sharding")


# -- running ----------------------------------------------------------------------------------


def _execute(tasks: list[ShardTask], jobs: int, dask: str | None,
             progress: Callable[[int, int], None] | None) -> Iterator[dict[str, int]]:
    total = len(tasks)
    if progress:
        progress(0, total)
    if dask:
        try:
            from dask.distributed import Client
            from dask.distributed import as_completed as dask_completed
        except ImportError as exc:
            raise ShardkitError("--dask needs dask.distributed (pip install "
                                "'dask[distributed]')") from exc
        with Client(dask) as client:
            futures = client.map(run_task, tasks, pure=False)
            for done, future in enumerate(dask_completed(futures), 1):
                yield future.result()
                if progress:
                    progress(done, total)
        return
    if jobs <= 1 or total <= 1:
        for done, task in enumerate(tasks, 1):
            yield run_task(task)
            if progress:
                progress(done, total)
        return
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(run_task, t) for t in tasks]
        for done, future in enumerate(as_completed(futures), 1):
            yield future.result()
            if progress:
                progress(done, total)


def _group_by_shard(spec: ShardingSpec, keys: np.ndarray) -> dict[int, tuple[int, ...]]:
    if not len(keys):
        return {}
    shards, _ = spec.locate_many(keys)
    order = np.argsort(shards, kind="stable")
    shards, keys = shards[order], keys[order]
    cuts = np.flatnonzero(np.diff(shards)) + 1
    return {int(s[0]): tuple(int(k) for k in ks)
            for s, ks in zip(np.split(shards, cuts), np.split(keys, cuts), strict=True)}


def _all_codes(grid: Sequence[int]) -> np.ndarray:
    """Every chunk id of a grid (for hashed image scales; one array of the whole grid)."""
    xs, ys, zs = np.meshgrid(*(np.arange(g, dtype=np.uint64) for g in grid), indexing="ij")
    pos = np.stack([xs.ravel(), ys.ravel(), zs.ravel()], axis=1)
    codes = np.zeros(len(pos), dtype=np.uint64)
    for j, (d, i) in enumerate(_bit_schedule(grid)):
        codes |= ((pos[:, d] >> np.uint64(i)) & np.uint64(1)) << np.uint64(j)
    return codes


def shard_layer(src: str | os.PathLike[str], dst: str | os.PathLike[str], *,
                spec: Any = "auto", scales: Iterable[str] | None = None, jobs: int = 1,
                dask: str | None = None,
                progress: Callable[[int, int], None] | None = None,
                storage_options: Mapping[str, Any] | None = None,
                dst_storage_options: Mapping[str, Any] | None = None,
                shard_bytes: int = DEFAULT_SHARD_BYTES,
                shard_index_bytes: int = DEFAULT_SHARD_INDEX_BYTES,
                minishard_index_bytes: int = DEFAULT_MINISHARD_INDEX_BYTES,
                gzip_level: int = 6) -> ConversionReport:
    """Write the sharded form of an unsharded layer.

    Args:
        src: The unsharded layer (folder or fsspec URL with an ``info`` file).
        dst: Where to write the sharded layer (created; may be a partial earlier run).
        spec: ``"auto"`` (the chooser's proposal per scale), one sharding spec for every
            scale, a list (one per converted scale) or a dict scale key -> spec.
        scales: Image scale keys to convert (default all); the others are left out of the
            output ``info``.
        jobs: Local worker processes (1: this process).
        dask: Address of a Dask scheduler to run the tasks on instead.
        progress: Called with ``(tasks done, tasks)``.
        storage_options, dst_storage_options: fsspec options of ``src`` and ``dst``.
        shard_bytes, shard_index_bytes, minishard_index_bytes: The chooser's targets.
        gzip_level: zlib level of ``gzip`` chunk data, 1 (fastest) to 9 (smallest).

    Raises:
        ShardkitError: The source is not an unsharded layer shardkit converts, or a scale is
            sharded already.
    """
    if type(gzip_level) is not int or not 1 <= gzip_level <= 9:
        raise ShardkitError(f"gzip level must be 1..9, got {gzip_level!r}")
    src_store = LayerStore(src, storage_options)
    dst_store = LayerStore(dst, dst_storage_options)
    info = src_store.read_info()
    if info.get("@type") == _ANNOTATIONS:  # every index on its own: convert_annotations
        from .convert_annotations import shard_annotation_layer

        return shard_annotation_layer(  # type: ignore[no-any-return]  # a ConversionReport
            src, dst, spec=spec, progress=progress, storage_options=storage_options,
            dst_storage_options=dst_storage_options, shard_bytes=shard_bytes,
            shard_index_bytes=shard_index_bytes, minishard_index_bytes=minishard_index_bytes)
    targets = {"shard_bytes": shard_bytes, "shard_index_bytes": shard_index_bytes,
               "minishard_index_bytes": minishard_index_bytes}
    if _is_image(info):
        for _, scale in _scales(info, scales):
            if scale.get("sharding") is not None:
                raise ShardkitError(f"scale {scale['key']} is sharded already")
    elif info.get("sharding") is not None:
        raise ShardkitError(f"{src_store.target} is sharded already")
    parts, choices = _plan(src_store, info, scales, targets, spec)
    report = ConversionReport("shard")
    report.choices = {k: c.to_dict() for k, c in choices.items()}
    listings = {part.folder: dst_store.list(part.folder) for part, _, _ in parts}
    dst_info: dict[str, Any] | None = None
    if any(listings.values()) and dst_store.exists("info"):
        dst_info = dst_store.read_info()
    for part, part_spec, _ in parts:  # refuse before writing anything
        _check_resumed_spec(dst_store, part, part_spec, listings[part.folder], dst_info)
    tasks = _shard_tasks(parts, listings, src_store, dst_store, report, gzip_level)
    if tasks and len(tasks) < jobs and not dask:  # few shards: encode with threads instead
        threads = max(1, jobs // len(tasks))
        tasks = [replace(t, threads=threads) for t in tasks]
    for result in _execute(tasks, jobs, dask, progress):
        report.add(result)
    _write_sharded_info(dst_store, info, parts, report)
    report.files_out += 1
    return report


def _shard_tasks(parts: list[tuple[_Part, ShardingSpec, np.ndarray | None]],
                 listings: dict[str, dict[str, int]], src_store: LayerStore, dst_store: LayerStore,
                 report: ConversionReport, gzip_level: int) -> list[ShardTask]:
    """:func:`shard_layer`'s tasks: one per shard of each part, the shards a partial earlier
    run wrote skipped (counted in ``report``, which gets each part's spec)."""
    tasks: list[ShardTask] = []
    for part, part_spec, keys in parts:
        report.specs[part.folder] = part_spec.to_dict()
        existing = {n for n in listings[part.folder]
                    if part_spec.parse_shard_name(n) is not None and n.endswith(".shard")}
        if part.scale is not None and part_spec.hash == "identity":
            grid = part.grid
            total = sum(morton_bits(grid))
            region = part_spec.preshift_bits + part_spec.minishard_bits
            count = 1 << max(0, min(part_spec.shard_bits, total - region))
            groups: dict[int, tuple[int, ...] | None] = dict.fromkeys(range(count))
        else:
            if part.scale is not None:
                keys = _all_codes(part.grid)
            groups = dict(_group_by_shard(part_spec, keys))  # type: ignore[arg-type]  # not None
        for number, group in groups.items():
            if part_spec.shard_name(number) in existing:
                report.shards_skipped += 1
                continue
            tasks.append(ShardTask("shard", src_store, dst_store, part, number, group,
                                   gzip_level=gzip_level))
    return tasks


def _write_sharded_info(dst_store: LayerStore, info: dict[str, Any],
                        parts: list[tuple[_Part, ShardingSpec, np.ndarray | None]],
                        report: ConversionReport) -> None:
    """The sharded layer's ``info`` written (the converted scales with their specs), each
    part's spec record removed and its shards counted in ``report``."""
    out = copy.deepcopy(info)
    if _is_image(info):
        converted = {p.folder: p.spec for p, _, _ in parts}
        out["scales"] = [dict(s, sharding=converted[_scale_key(s, i)])
                         for i, s in enumerate(out["scales"]) if _scale_key(s, i) in converted]
    else:
        out["sharding"] = parts[0][0].spec
    dst_store.write("info", json.dumps(out, indent=1).encode())
    for part, part_spec, _ in parts:  # the info says the spec now
        dst_store.remove(_join(part.folder, _SPEC_RECORD))
        report.shards[part.folder] = sum(
            1 for n in dst_store.list(part.folder)
            if n.endswith(".shard") and part_spec.parse_shard_name(n) is not None)


def _check_resumed_spec(dst: LayerStore, part: _Part, spec: ShardingSpec,
                        listing: Mapping[str, int], dst_info: Mapping[str, Any] | None) -> None:
    """Refuse to resume a conversion whose kept shard files were written with another spec.

    The spec of an earlier run is the one recorded in the folder (a run that stopped before
    writing the info), else the one of the output's ``info`` (a finished run). Shard files
    with neither are kept as before: nothing says how they were written.
    """
    where = f"{dst.target}/{part.folder}" if part.folder else dst.target
    if not any(n.endswith((".shard", ".shard.gz")) for n in listing):
        return
    recorded: Any = None
    source = ""
    if _SPEC_RECORD in listing:
        source = f"{where}/{_SPEC_RECORD}"
        if listing[_SPEC_RECORD] > _MAX_RECORD_BYTES:
            raise ShardkitError(f"{source}: {listing[_SPEC_RECORD]} bytes, not a record of a "
                                f"sharding spec; remove {where} to start again")
        raw = dst.read(_join(part.folder, _SPEC_RECORD)) or b""
        try:
            recorded = parse_json(raw, source)
        except ShardkitError as exc:
            raise ShardkitError(f"{exc.message}; remove {where} to start again") from exc
    elif dst_info is not None:
        source = f"{dst.target}/info"
        if part.scale is not None:
            for scale in dst_info.get("scales") or []:
                if isinstance(scale, Mapping) and str(scale.get("key")) == part.folder:
                    recorded = scale.get("sharding")
        else:
            recorded = dst_info.get("sharding")
        if recorded is None:
            return
    else:
        return
    try:
        earlier = ShardingSpec.from_dict(recorded).to_dict()
    except (ShardkitError, ValueError, TypeError, RecursionError) as exc:
        raise ShardkitError(f"{source}: not a sharding spec ({exc}); remove {where} to start "
                            "again") from exc
    if earlier != spec.to_dict():
        raise ShardkitError(f"{where} holds shard files written with another sharding spec "
                            f"({json.dumps(earlier)}, from {source}); this run's is "
                            f"{json.dumps(spec.to_dict())}: remove {where} to start again, or "
                            "rerun with the earlier spec", field="/sharding")


def unshard_layer(src: str | os.PathLike[str], dst: str | os.PathLike[str], *,
                  scales: Iterable[str] | None = None, jobs: int = 1, dask: str | None = None,
                  progress: Callable[[int, int], None] | None = None,
                  storage_options: Mapping[str, Any] | None = None,
                  dst_storage_options: Mapping[str, Any] | None = None) -> ConversionReport:
    """Write the unsharded form of a sharded layer: one file per chunk (or per id).

    Args:
        src: The sharded layer (folder or fsspec URL).
        dst: Where to write the unsharded layer.
        scales: Image scale keys to convert (default every sharded scale); the output
            ``info`` lists the converted scales only.
        jobs, dask, progress, storage_options, dst_storage_options: As for
            :func:`shard_layer`.
    """
    src_store = LayerStore(src, storage_options)
    dst_store = LayerStore(dst, dst_storage_options)
    info = src_store.read_info()
    if info.get("@type") == _ANNOTATIONS:
        from .convert_annotations import unshard_annotation_layer

        return unshard_annotation_layer(  # type: ignore[no-any-return]  # a ConversionReport
            src, dst, progress=progress, storage_options=storage_options,
            dst_storage_options=dst_storage_options)
    ds = open_dataset(src_store.target, storage_options)
    report = ConversionReport("unshard")
    tasks: list[ShardTask] = []
    try:
        if _is_image(info):
            chosen = _scales(info, scales)
            parts = []
            for _, scale in chosen:
                if scale.get("sharding") is None:
                    if scales:
                        raise ShardkitError(f"scale {scale['key']} is not sharded")
                    continue
                parts.append(_Part(str(scale["key"]), scale,
                                   ShardingSpec.from_dict(scale["sharding"]).to_dict()))
            kvs = [(p, ds.scales[p.folder]) for p in parts]  # type: ignore[attr-defined]  # image
        else:
            parts = [_Part("", None, ds.spec.to_dict(),
                           info.get("@type") == "neuroglancer_multilod_draco")]
            kvs = [(parts[0], ds.kv)]
        for part, kv in kvs:
            report.specs[part.folder] = part.spec
            fresh = not dst_store.list(part.folder)
            for number in kv.shard_numbers():
                tasks.append(ShardTask("unshard", src_store, dst_store, part, number,
                                       check_existing=not fresh))
    finally:
        ds.close()
    for result in _execute(tasks, jobs, dask, progress):
        report.add(result)
    out = copy.deepcopy(info)
    if _is_image(info):
        done = {p.folder for p in parts}  # as for shard_layer: only the scales written
        out["scales"] = [{k: v for k, v in s.items() if k != "sharding"}
                         for i, s in enumerate(out["scales"]) if _scale_key(s, i) in done]
    else:
        out.pop("sharding", None)
    dst_store.write("info", json.dumps(out, indent=1).encode())
    report.files_out += 1
    return report
