"""Annotation layers against the reference implementations (PyPI, dev extras).

- neuroglancer 2.41.2: ``write_annotations.AnnotationWriter`` (unsharded, one spatial cell) and
  ``read_precomputed_annotations.AnnotationReader`` (tensorstore underneath);
- ngsidekick 0.0.20: ``write_precomputed_annotations`` (sharded or not, multi-level spatial
  index; it has no reader, so its records are compared byte for byte with ours).

Layers are made fresh in each test. The writers' known bugs are asserted here as what they are:
the reader survives them and verify names them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_ng_annotations import make_annotations

import shardkit
from shardkit.formats.neuroglancer.annotations import meets
from shardkit.writers.neuroglancer import write_annotations

pytestmark = pytest.mark.interop

ng = pytest.importorskip("neuroglancer")
pytest.importorskip("tensorstore")

NM = {"x": [1, "nm"], "y": [1, "nm"], "z": [1, "nm"]}
NG_SAFE_PROPS = [  # a layout neuroglancer 2.41.2's reader gets right (see the bug test below)
    {"id": "big", "type": "uint32"}, {"id": "score", "type": "float32"},
    {"id": "small", "type": "int16"},
    {"id": "kind", "type": "uint8", "enum_values": [0, 1, 2], "enum_labels": ["a", "b", "c"]},
    {"id": "color", "type": "rgb"}]


def _with_props(anns: list[dict[str, Any]], names: list[str]) -> list[dict[str, Any]]:
    for a in anns:
        a["properties"] = {k: a["properties"][k] for k in names}
    return anns


def _reader(path: Path) -> Any:
    from neuroglancer.read_precomputed_annotations import AnnotationReader

    return AnnotationReader(f"file://{path}/")


# -- neuroglancer's reader reads what we write ----------------------------------------------------


@pytest.mark.parametrize("sharded", [True, False])
def test_neuroglancer_reads_our_layers(tmp_path, sharded):
    anns = _with_props(make_annotations("point", 300, seed=4),
                       ["big", "score", "small", "kind", "color"])
    write_annotations(tmp_path / "l", anns, annotation_type="point", dimensions=NM,
                      properties=NG_SAFE_PROPS, relationships=["pre", "post"], limit=40,
                      sharded=sharded)
    reader = _reader(tmp_path / "l")
    for a in anns:
        got = reader.by_id[a["id"]]
        assert np.array_equal(got.point, np.float32(a["point"]))
        p = a["properties"]
        assert [int(got.props[0]), float(got.props[1]), int(got.props[2]), int(got.props[3]),
                list(map(int, got.props[4]))] == [p["big"], np.float32(p["score"]), p["small"],
                                                  p["kind"], p["color"]]
        assert [list(map(int, s)) for s in got.segments] == [a["relationships"]["pre"],
                                                             a["relationships"]["post"]]
    for seg in (0, 4, 10):
        theirs = sorted(int(x.id) for x in reader.relationships["pre"][seg])
        assert theirs == sorted(a["id"] for a in anns if seg in a["relationships"]["pre"])
    layer = shardkit.open(tmp_path / "l")
    lo, hi = np.array([5.0, 10, 0]), np.array([60.0, 70, 55])
    ours = sorted(a.id for a in layer.query(lo, hi))
    brute = sorted(a["id"] for a in anns if meets("point", np.float32([a["point"]]), lo, hi))
    theirs = sorted(int(x.id) for x in reader.get_within_spatial_bounds(lower_bound=lo,
                                                                        upper_bound=hi))
    assert ours == brute == theirs and len(ours) > 20


def test_neuroglancer_reader_bug_uint32_after_float32(tmp_path):
    """neuroglancer 2.41.2's reader pads a uint32 as if 3-aligned: after a float32 it wants a
    24-byte record where the spec's is 20 (12 of geometry, 4 + 4 of properties), and fails.
    shardkit reads the spec's layout."""
    anns = [{"id": i, "point": [i, i, i], "properties": {"score": 0.5, "big": 70000 + i}}
            for i in range(1, 5)]
    write_annotations(tmp_path / "l", anns, annotation_type="point", dimensions=NM,
                      properties=[{"id": "score", "type": "float32"},
                                  {"id": "big", "type": "uint32"}])
    with pytest.raises(ValueError, match="buffer is smaller"):
        _reader(tmp_path / "l").by_id[1]
    assert shardkit.open(tmp_path / "l")[1].properties == {"score": 0.5, "big": 70001}


# -- we read what neuroglancer's writer writes ----------------------------------------------------


def _ng_write(path: Path, kind: str, anns: list[dict[str, Any]], props: list[Any]) -> None:
    from neuroglancer.write_annotations import AnnotationWriter

    cs = ng.CoordinateSpace(names=["x", "y", "z"], units="nm", scales=[4, 4, 40])
    w = AnnotationWriter(cs, kind, relationships=["pre", "post"], properties=[
        ng.AnnotationPropertySpec(**p) for p in props])
    for a in anns:
        kw = {**a["properties"], **a["relationships"]}
        if kind == "point":
            w.add_point(a["point"], id=a["id"], **kw)
        elif kind == "line":
            w.add_line(a["point_a"], a["point_b"], id=a["id"], **kw)
        elif kind == "axis_aligned_bounding_box":
            w.add_axis_aligned_bounding_box(a["point_a"], a["point_b"], id=a["id"], **kw)
        elif kind == "ellipsoid":
            w.add_ellipsoid(a["center"], a["radii"], id=a["id"], **kw)
        else:
            if len(a["points"]) < 2:
                a["points"] = [*a["points"], a["points"][0]]
            w.add_polyline(a["points"], id=a["id"], **kw)
    w.write(path)


@pytest.mark.parametrize("kind", ["point", "line", "axis_aligned_bounding_box", "ellipsoid",
                                  "polyline"])
def test_we_read_neuroglancer_writer_layers(tmp_path, kind):
    # score (float32), then big (uint32): that writer pads big to offset 6, as if 3-aligned
    props = [{"id": "score", "type": "float32"}, {"id": "big", "type": "uint32"},
             {"id": "kind", "type": "uint8", "enum_values": [0, 1, 2],
              "enum_labels": ["a", "b", "c"]}]
    anns = _with_props(make_annotations(kind, 60, seed=8), ["score", "big", "kind"])
    for a in anns:
        a["properties"]["big"] |= 1 << 31  # never ambiguous: the spec's padding is not zero
    _ng_write(tmp_path / "l", kind, anns, props)
    layer = shardkit.open(tmp_path / "l")
    assert len(layer) == 60
    for a in anns:
        got = layer[a["id"]].to_dict()
        for name in ("point", "point_a", "point_b", "center", "radii", "points"):
            if name in a:
                assert np.array_equal(np.float32(got[name]), np.float32(a[name]))
        assert got["properties"] == {k: (float(np.float32(v)) if k == "score" else v)
                                     for k, v in a["properties"].items()}
        assert got["relationships"] == a["relationships"]
    assert any("neuroglancer 2.41.2" in q for q in layer.quirks)
    # one cell holds everything: a query is a filter of it
    lo, hi = np.array([20.0, 20, 20]), np.array([70.0, 80, 60])
    want = sorted(a.id for a in layer if meets(kind, a.geometry, lo, hi))
    assert sorted(a.id for a in layer.query(lo, hi)) == want
    problems = layer.verify()
    assert {p.check for p in problems} <= {"writer_quirk", "bounds"}
    assert any(p.check == "writer_quirk" for p in problems)


# -- ngsidekick ---------------------------------------------------------------------------------


def _sk_points(n: int, seed: int = 0) -> Any:
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "x": rng.uniform(0, 100, n).astype(np.float32),
        "y": rng.uniform(0, 100, n).astype(np.float32),
        "z": rng.uniform(0, 100, n).astype(np.float32),
        "score": rng.normal(size=n).astype(np.float32),
        "big": rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)},
        index=pd.Index(np.arange(n, dtype=np.uint64) * 3 + 1, name="id"))
    df["seg"] = (np.arange(n) % 7).astype(np.uint64)
    return df


def _sk_write(df: Any, path: Path, kind: str = "point", **kw: Any) -> dict[str, Any]:
    sk = pytest.importorskip("ngsidekick.annotations.precomputed")
    sk.write_precomputed_annotations(df, ["x", "y", "z"], kind, output_dir=str(path), **kw)
    return json.loads((path / "info").read_text())


@pytest.mark.parametrize("sharded", [True, False])
def test_we_read_ngsidekick_layers(tmp_path, sharded):
    df = _sk_points(400)
    info = _sk_write(df, tmp_path / "sk", properties=["score", "big"], relationships=["seg"],
                     write_sharded=sharded, target_chunk_limit=50)
    assert len(info["spatial"]) >= 2
    layer = shardkit.open(tmp_path / "sk")
    assert len(layer) == 400
    for ident, row in df.iloc[::7].iterrows():
        a = layer[int(ident)]
        assert a.point.tolist() == [row.x, row.y, row.z]
        assert a.properties == {"score": row.score, "big": int(row.big)}
        assert a.relationships == {"seg": [int(row.seg)]}
    assert sorted(a.id for a in layer.related("seg", 3)) == sorted(
        int(i) for i in df.index[df.seg == 3])
    lo, hi = np.array([10.0, 5, 20]), np.array([60.0, 70, 80])
    inside = (df[["x", "y", "z"]].to_numpy() >= lo).all(1) & (df[["x", "y", "z"]].to_numpy()
                                                               <= hi).all(1)
    assert sorted(a.id for a in layer.query(lo, hi)) == sorted(int(i) for i in df.index[inside])
    problems = layer.verify()
    quirks = [p for p in problems if p.check == "writer_quirk"]
    if sharded:
        assert quirks == []
    else:  # the unsharded cell files are named by a transposed Morton decode
        assert quirks and "ngsidekick 0.0.20" in quirks[0].message
    # its upper_bound is the largest coordinate: inclusive, where the spec has it exclusive
    assert {p.check for p in problems} <= {"writer_quirk", "bounds"}


def test_our_records_equal_ngsidekicks(tmp_path):
    df = _sk_points(200, seed=2)
    _sk_write(df, tmp_path / "sk", properties=["score", "big"], relationships=["seg"],
              target_chunk_limit=50)
    anns = [{"id": int(i), "point": [r.x, r.y, r.z],
             "properties": {"score": float(r.score), "big": int(r.big)},
             "relationships": {"seg": [int(r.seg)]}} for i, r in df.iterrows()]
    write_annotations(tmp_path / "ours", anns, annotation_type="point",
                      dimensions={"x": [1e-9, "m"], "y": [1e-9, "m"], "z": [1e-9, "m"]},
                      properties=[{"id": "score", "type": "float32"},
                                  {"id": "big", "type": "uint32"}], relationships=["seg"])
    theirs, ours = shardkit.open(tmp_path / "sk"), shardkit.open(tmp_path / "ours")
    assert sorted(theirs.keys()) == sorted(ours.keys())
    for ident in df.index[:50]:
        assert theirs.raw(int(ident)) == ours.raw(int(ident))
    for seg in range(7):
        a = {x.id: x.geometry.tobytes() for x in theirs.related("seg", seg)}
        b = {x.id: x.geometry.tobytes() for x in ours.related("seg", seg)}
        assert a == b


def test_ngsidekick_lines_missing_from_cells_they_cross(tmp_path):
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(1)
    n = 300
    a = rng.uniform(0, 100, (n, 3)).astype(np.float32)
    b = (a + rng.uniform(-10, 10, (n, 3))).clip(0, 100).astype(np.float32)
    df = pd.DataFrame({"xa": a[:, 0], "ya": a[:, 1], "za": a[:, 2],
                       "xb": b[:, 0], "yb": b[:, 1], "zb": b[:, 2]},
                      index=pd.Index(np.arange(n, dtype=np.uint64) + 1, name="id"))
    _sk_write(df, tmp_path / "sk", "line", target_chunk_limit=20)
    layer = shardkit.open(tmp_path / "sk")
    problems = layer.verify()
    missing = [p for p in problems if p.check == "spatial_missing"]
    assert missing
    for p in missing:  # each is real: the line meets the named cell, and no cell lists it there
        ident = int(p.field.split("/")[2])
        level = next(lv for lv in layer.spatial if lv.key == p.field.split("/")[1])
        cell = json.loads(p.message.split("cell ")[1].split(" of")[0])
        clo, chi = level.cell_box(layer.lower_bound, cell)
        assert meets("line", layer[ident].geometry, clo, chi)
        assert ident not in {x.id for x in layer.read_cell(level.level, cell)}
    # the same lines written by shardkit verify clean
    anns = [{"id": i + 1, "point_a": a[i].tolist(), "point_b": b[i].tolist()} for i in range(n)]
    write_annotations(tmp_path / "ours", anns, annotation_type="line",
                      dimensions={"x": [1e-9, "m"], "y": [1e-9, "m"], "z": [1e-9, "m"]},
                      limit=20)
    assert shardkit.open(tmp_path / "ours").verify() == []


def test_converting_ngsidekick_unsharded_layer_fixes_its_cell_names(tmp_path):
    from shardkit.ng.convert import shard_layer, unshard_layer

    df = _sk_points(300, seed=9)
    _sk_write(df, tmp_path / "sk", properties=["score", "big"], relationships=["seg"],
              write_sharded=False, target_chunk_limit=40)
    quirks = [p for p in shardkit.open(tmp_path / "sk").verify() if p.check == "writer_quirk"]
    assert quirks and "ngsidekick" in quirks[0].message
    shard_layer(tmp_path / "sk", tmp_path / "s")
    unshard_layer(tmp_path / "s", tmp_path / "u")
    for path in (tmp_path / "s", tmp_path / "u"):
        layer = shardkit.open(path)
        assert {p.check for p in layer.verify()} <= {"bounds"}  # no quirk left
        lo, hi = np.array([0.0, 0, 0]), np.array([50.0, 50, 50])
        xyz = df[["x", "y", "z"]].to_numpy()
        inside = (xyz >= lo).all(1) & (xyz <= hi).all(1)
        assert sorted(a.id for a in layer.query(lo, hi)) == sorted(
            int(i) for i in df.index[inside])
