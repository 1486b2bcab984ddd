"""``ng shard`` / ``ng unshard`` of annotation layers (``neuroglancer_annotations_v1``).

Every index of the layer (``by_id``, each relationship, each spatial level) is converted on
its own; the stored values are moved as they are (never decoded and encoded again), only their
keys change form: a decimal file name and the uint64 key of a sharded id index are the same id;
an ``x_y_z`` cell file and the compressed Morton code of a sharded spatial level are the same
cell. An index already in the wanted form is copied. A level whose unsharded cell files follow
ngsidekick 0.0.20's transposed naming (found by the reader) is written with the spec's keys.

Sharding (``shard``): ``spec="auto"`` asks the chooser per index, as ``shardkit ng spec`` does:
``murmurhash3_x86_128`` for ids (:func:`~shardkit.ng.chooser.choose_hashed_spec`), the identity
hash over Morton codes for spatial levels (:func:`~shardkit.ng.chooser.choose_spatial_spec`);
a spec (dict or JSON) applies to every index, and a mapping ``{"by_id" | relationship id |
"spatial": spec}`` gives one per index. A shard holds one shard's values in memory at a time;
every file is written under a temporary name, and the ``info`` last.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..errors import ShardkitError
from ..formats.neuroglancer import ShardingSpec, open_dataset
from ..formats.neuroglancer.annotations import NgAnnotationLayer, ShardedIndex, SpatialLevel
from ..formats.neuroglancer.decode import compressed_morton_code, morton_decode
from ..writers.neuroglancer import build_shards

__all__ = ["shard_annotation_layer", "unshard_annotation_layer"]


def _spec_of(spec: Any, name: str, group: str) -> ShardingSpec | None:
    if spec in (None, "auto"):
        return None
    if isinstance(spec, Mapping) and spec.get("@type") is None:
        chosen = spec.get(name, spec.get(group, "auto"))
        return None if chosen in (None, "auto") else ShardingSpec.coerce(chosen)
    return ShardingSpec.coerce(spec)


def _open(src: Any, storage_options: Mapping[str, Any] | None) -> NgAnnotationLayer:
    layer = open_dataset(src, storage_options)
    if not isinstance(layer, NgAnnotationLayer):
        layer.close()
        raise ShardkitError(f"{src}: not an annotation layer")
    return layer


def _uint64_values(layer: NgAnnotationLayer, index: Any
                   ) -> tuple[list[int], Callable[..., Any]]:
    """Keys of an index and a reader of many values."""
    if isinstance(index, ShardedIndex):
        keys = list(index.kv.keys())
        return keys, lambda ks: index.kv.get_many(ks)
    ids, _ = index.uint64_keys()
    return ids, lambda ks: [index.read(str(k)) for k in ks]


def _cell_files(layer: NgAnnotationLayer, lvl: SpatialLevel) -> list[tuple[tuple[int, ...], str]]:
    """``(cell, file name)`` of every cell file of an unsharded level (its naming undone)."""
    from ..formats.neuroglancer.annotation_verify import _cell_name_to_cell, _true_cell

    naming = layer._naming(lvl)
    out = []
    for name in lvl.index.names():  # type: ignore[union-attr]  # unsharded levels only
        named = _cell_name_to_cell(name, layer.layout.rank)
        if named is None or any(c >= g for c, g in zip(named, lvl.grid_shape, strict=True)):
            continue
        out.append((_true_cell(lvl, named) if naming == "ngsidekick" else named, name))
    return out


def shard_annotation_layer(src: Any, dst: Any, *, spec: Any = "auto",
                           progress: Callable[[int, int], None] | None = None,
                           storage_options: Mapping[str, Any] | None = None,
                           dst_storage_options: Mapping[str, Any] | None = None,
                           **targets: Any) -> Any:
    """Write the sharded form of an annotation layer (every unsharded index sharded).

    Args:
        src, dst: The layer and where to write it.
        spec: ``"auto"``, one spec for every index, or ``{index: spec}`` (see the module).
        progress: Called with ``(indexes done, indexes)``.
        targets: The chooser's ``shard_bytes``, ``shard_index_bytes``,
            ``minishard_index_bytes``.
    """
    from .chooser import choose_hashed_spec, choose_spatial_spec
    from .convert import ConversionReport, LayerStore

    layer = _open(src, storage_options)
    src_store = LayerStore(src, storage_options)
    out = LayerStore(dst, dst_storage_options)
    info = copy.deepcopy(layer.info)
    report = ConversionReport("shard")
    targets = {k: v for k, v in targets.items() if v is not None}

    def step(kind: str, name: str, key: str, index: Any, lvl: SpatialLevel | None) -> None:
        if index.sharded:
            _copy_sharded(layer, key, index, out, report)
            return
        group = "spatial" if kind == "spatial" else ("by_id" if kind == "by_id"
                                                     else "relationships")
        chosen = _spec_of(spec, name, group)
        sizes = src_store.list(key)  # file name -> bytes
        if kind != "spatial":
            keys, read = _uint64_values(layer, index)
            if chosen is None:
                choice = choose_hashed_spec(len(keys),
                                            total_bytes=sum(sizes.values()) or None,
                                            **targets)
                chosen = choice.spec
                report.choices[key] = choice.to_dict()
            codes = keys
        else:
            assert lvl is not None
            cells = _cell_files(layer, lvl)
            codes = [compressed_morton_code(c, lvl.grid_shape) for c, _ in cells]
            names = dict(zip(codes, (n for _, n in cells), strict=True))
            if chosen is None:
                mean = sum(sizes.get(n, 0) for _, n in cells) / max(1, len(cells))
                choice = choose_spatial_spec(lvl.grid_shape, cell_bytes=mean,
                                             num_cells=max(1, len(codes)), **targets)
                chosen = choice.spec
                report.choices[key] = choice.to_dict()

            def read(ks: list[int], names: dict[int, str] = names,
                     lvl: SpatialLevel = lvl) -> list[bytes | None]:
                return [lvl.index.read(names[k]) for k in ks]  # type: ignore[union-attr]  # ditto
        _write_sharded(out, key, codes, read, chosen, report)
        _set_sharding(info, kind, name, key, chosen.to_dict())
        report.specs[key] = chosen.to_dict()

    return _each_index(layer, out, info, report, progress, step)


def unshard_annotation_layer(src: Any, dst: Any, *,
                             progress: Callable[[int, int], None] | None = None,
                             storage_options: Mapping[str, Any] | None = None,
                             dst_storage_options: Mapping[str, Any] | None = None) -> Any:
    """Write the unsharded form of an annotation layer: one file per id, segment or cell."""
    from .convert import ConversionReport, LayerStore

    layer = _open(src, storage_options)
    out = LayerStore(dst, dst_storage_options)
    info = copy.deepcopy(layer.info)
    report = ConversionReport("unshard")

    def step(kind: str, name: str, key: str, index: Any, lvl: SpatialLevel | None) -> None:
        if isinstance(index, ShardedIndex):
            report.specs[key] = index.kv.spec.to_dict()
            for k, value in index.kv.items():
                fname = str(k) if lvl is None else "_".join(
                    map(str, morton_decode(k, lvl.grid_shape)))
                out.write(f"{key}/{fname}", bytes(value))
                report.chunks += 1
                report.files_out += 1
                report.bytes_out += len(value)
            _set_sharding(info, kind, name, key, None)
        elif lvl is not None:
            for cell, fname in _cell_files(layer, lvl):
                data = lvl.index.read(fname)  # type: ignore[union-attr]  # ditto
                if data is not None:
                    out.write(f"{key}/{'_'.join(map(str, cell))}", data)
                    report.chunks += 1
                    report.files_out += 1
        else:
            for k in index.uint64_keys()[0]:
                data = index.read(str(k))
                if data is not None:
                    out.write(f"{key}/{k}", data)
                    report.chunks += 1
                    report.files_out += 1

    return _each_index(layer, out, info, report, progress, step)


def _each_index(layer: NgAnnotationLayer, out: Any, info: dict[str, Any], report: Any,
                progress: Callable[[int, int], None] | None,
                step: Callable[[str, str, str, Any, SpatialLevel | None], None]) -> Any:
    """Runs ``step(kind, name, key, index, level)`` on every index of the layer, reporting
    progress after each; then closes the layer and writes the edited ``info`` last."""
    jobs = _jobs(layer)
    try:
        for done, job in enumerate(jobs, 1):
            step(*job)
            if progress is not None:
                progress(done, len(jobs))
    finally:
        layer.close()
    out.write("info", json.dumps(info, indent=1).encode())
    report.files_out += 1
    return report


def _jobs(layer: NgAnnotationLayer) -> list[tuple[str, str, str, Any, SpatialLevel | None]]:
    jobs: list[tuple[str, str, str, Any, SpatialLevel | None]] = []
    if layer.by_id is not None:
        jobs.append(("by_id", "by_id", layer.by_id_key or "by_id", layer.by_id, None))
    for rel, index in layer.relationships_index.items():
        jobs.append(("relationship", rel, layer.relationship_keys[rel], index, None))
    for lvl in layer.spatial:
        jobs.append(("spatial", str(lvl.level), lvl.key, lvl.index, lvl))
    return jobs


def _set_sharding(info: dict[str, Any], kind: str, name: str, key: str,
                  spec: dict[str, Any] | None) -> None:
    if kind == "by_id":
        target = info["by_id"]
    elif kind == "relationship":
        target = next(r for r in info["relationships"] if r["id"] == name)
    else:
        target = info["spatial"][int(name)]
    if spec is None:
        target.pop("sharding", None)
    else:
        target["sharding"] = spec


def _copy_sharded(layer: NgAnnotationLayer, key: str, index: ShardedIndex, out: Any,
                  report: Any) -> None:
    sub = layer.store.sub(key)
    for number in index.kv.shard_numbers():
        fname = index.kv.spec.shard_name(number)
        source = sub.open(fname)
        if source is None:
            continue
        try:
            data = source.read_range(0, source.size)
        except FileNotFoundError:
            continue
        out.write(f"{key}/{fname}", data)
        report.files_in += 1
        report.files_out += 1
        report.bytes_out += len(data)
    report.specs[key] = index.kv.spec.to_dict()


def _write_sharded(out: Any, key: str, keys: list[int], read: Callable[..., Any],
                   spec: ShardingSpec,
                   report: Any) -> None:
    if not keys:
        return
    arr = np.array(keys, dtype=np.uint64)
    shards, _ = spec.locate_many(arr)
    order = np.argsort(shards, kind="stable")
    bounds = np.flatnonzero(np.diff(shards[order])) + 1
    for group in np.split(order, bounds):
        ks = [int(arr[i]) for i in group]
        values = read(ks)
        items = {k: bytes(v) for k, v in zip(ks, values, strict=True) if v is not None}
        report.files_in += len(items)
        report.chunks += len(items)
        report.bytes_in += sum(len(v) for v in items.values())
        for fname, data in build_shards(items, spec).items():
            out.write(f"{key}/{fname}", data)
            report.shards_written += 1
            report.files_out += 1
            report.bytes_out += len(data)
