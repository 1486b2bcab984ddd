"""Neuroglancer precomputed annotation layers: schemas, reader, query, verify and writer.

Layers are made here with shardkit's writer (every annotation type, property type, sharded and
unsharded indexes) and checked value by value against the input; the interop tests with
neuroglancer's and ngsidekick's writers and readers are in test_ng_annotations_interop.py.
"""

from __future__ import annotations

import json
import shutil
import struct
from io import BytesIO
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from kaitaistruct import KaitaiStream
from shardkit.generated.ng_annotation import NgAnnotation
from shardkit.generated.ng_annotation_by_id import NgAnnotationById
from shardkit.generated.ng_annotation_cell import NgAnnotationCell

import shardkit
from shardkit.errors import ShardkitError, TruncatedError
from shardkit.formats.neuroglancer.annotation_layout import AnnotationLayout, property_offsets
from shardkit.formats.neuroglancer.annotations import NgAnnotationLayer, meets
from shardkit.writers.neuroglancer import write_annotations

DIMS = {"x": [4e-9, "m"], "y": [4e-9, "m"], "z": [4e-8, "m"]}
PROPS = [
    {"id": "color", "type": "rgb"},
    {"id": "kind", "type": "uint8", "enum_values": [0, 1, 2], "enum_labels": ["a", "b", "c"]},
    {"id": "score", "type": "float32", "description": "confidence"},
    {"id": "big", "type": "uint32"},
    {"id": "small", "type": "int16"},
    {"id": "tone", "type": "rgba"},
    {"id": "delta", "type": "int8"},
]
TYPES = ["point", "line", "axis_aligned_bounding_box", "ellipsoid", "polyline"]


def make_annotations(kind: str, n: int, seed: int = 0, rank: int = 3) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        p = rng.uniform(0, 100, rank).astype(np.float32)
        q = (p + rng.uniform(-20, 20, rank)).clip(0, 99.5).astype(np.float32)
        ann: dict[str, Any] = {"id": int(i * 7919 + 3)}
        if kind == "point":
            ann["point"] = p.tolist()
        elif kind in ("line", "axis_aligned_bounding_box"):
            ann["point_a"], ann["point_b"] = p.tolist(), q.tolist()
        elif kind == "ellipsoid":
            ann["center"] = p.clip(10, 90).tolist()
            ann["radii"] = rng.uniform(0, 5, rank).astype(np.float32).tolist()
        else:
            k = int(rng.integers(1, 5))
            ann["points"] = rng.uniform(0, 100, (k, rank)).astype(np.float32).tolist()
        ann["properties"] = {
            "color": [int(v) for v in rng.integers(0, 256, 3)], "kind": i % 3,
            "score": float(np.float32(rng.normal())), "big": int(rng.integers(0, 2**32)),
            "small": int(rng.integers(-2**15, 2**15)),
            "tone": [int(v) for v in rng.integers(0, 256, 4)], "delta": int(i % 256) - 128}
        ann["relationships"] = {"pre": [int(i % 11)],
                                "post": [int(v) for v in rng.integers(100, 140, i % 3)]}
        out.append(ann)
    return out


def write(path: Path, anns: list[dict[str, Any]], kind: str, **kw: Any) -> dict[str, Any]:
    kw.setdefault("dimensions", DIMS)
    kw.setdefault("properties", PROPS)
    kw.setdefault("relationships", ["pre", "post"])
    return write_annotations(path, anns, annotation_type=kind, **kw)


def same(ann: Any, want: dict[str, Any]) -> None:
    assert ann.id == want["id"]
    got = ann.to_dict()
    for name in ("point", "point_a", "point_b", "center", "radii", "points"):
        if name in want:
            assert np.array_equal(np.float32(got[name]), np.float32(want[name])), name
    for name, value in want["properties"].items():
        if isinstance(value, float):
            assert got["properties"][name] == np.float32(value)
        else:
            assert got["properties"][name] == value, name
    if ann.relationships is not None:
        assert ann.relationships == want["relationships"]  # as given, repeats kept


# -- layout -------------------------------------------------------------------------------------


def test_property_offsets_follow_neuroglancer_order():
    # info order color(rgb) kind(u1) score(f4) big(u4) small(i2) tone(rgba) delta(i1):
    # stored: score, big (4-aligned), small (2), color, kind, tone, delta (1)
    offsets, size = property_offsets([p["type"] for p in PROPS], 12)
    assert offsets == [12 + 10, 12 + 13, 12 + 0, 12 + 4, 12 + 8, 12 + 14, 12 + 18]
    assert size == 12 + 20  # 19 bytes of properties, padded to 20
    # neuroglancer 2.41.2 pads a uint32 as if 3-aligned, in info order
    quirk, qsize = property_offsets(["float32", "uint32", "uint8"], 12, quirk="ng-uint32")
    assert quirk == [12, 18, 22] and qsize == 24
    spec, ssize = property_offsets(["float32", "uint32", "uint8"], 12)
    assert spec == [12, 16, 20] and ssize == 24


def test_property_groups_past_255_bytes():
    # 70 float32 = 280 bytes: the group closes at the property that would pass 255
    offsets, size = property_offsets(["float32"] * 70, 12)
    assert offsets[60] == 12 + 240 and offsets[61] == 256 and size == 12 + 280


def test_layout_rejects_bad_info():
    with pytest.raises(ShardkitError, match="annotation_type"):
        AnnotationLayout({"dimensions": DIMS, "annotation_type": "circle"})
    with pytest.raises(ShardkitError, match="enum_values"):
        AnnotationLayout({"dimensions": DIMS, "annotation_type": "point", "properties": [
            {"id": "a", "type": "uint8", "enum_values": [1]}]})
    with pytest.raises(ShardkitError, match="id must match"):
        AnnotationLayout({"dimensions": DIMS, "annotation_type": "point", "properties": [
            {"id": "Bad", "type": "uint8"}]})


# -- schemas ------------------------------------------------------------------------------------


def test_kaitai_schemas_read_what_the_reader_reads(tmp_path):
    anns = make_annotations("line", 40)
    write(tmp_path / "l", anns, "line", sharded=False, limit=10)
    layer = shardkit.open(tmp_path / "l")
    codes = layer.layout.property_codes
    kind = NgAnnotation.AnnotationType.line
    for ann in anns[:10]:
        raw = layer.raw(ann["id"])
        entry = NgAnnotationById.Entry(3, kind, codes, 2, KaitaiStream(BytesIO(raw)))
        got = layer.get(ann["id"])
        assert [p.coords for p in entry.annotation.positions] == got.geometry.tolist()
        assert [r.ids for r in entry.relationships] == [got.relationships["pre"],
                                                        got.relationships["post"]]
        values = [p.value for p in entry.annotation.properties]
        stored = [got.properties[p.id] for p in layer.layout.stored]
        assert [tuple(vars(v)[c] for c in "rgba" if c in vars(v)) if hasattr(v, "r") else v
                for v in values] == stored
        assert entry.annotation.padding == b"\0" * len(entry.annotation.padding)
    cell = (tmp_path / "l" / "spatial0" / "0_0_0").read_bytes()
    parsed = NgAnnotationCell.Cell(3, kind, codes, KaitaiStream(BytesIO(cell)))
    decoded = layer.read_cell(0, (0, 0, 0))
    assert parsed.ids == [a.id for a in decoded]
    assert [[p.coords for p in r.positions] for r in parsed.annotations] == \
        [a.geometry.tolist() for a in decoded]


@pytest.mark.node
def test_web_ide_parsers_read_real_records(tmp_path):
    """The JavaScript parsers (what the Web IDE runs) read real values as Python does, with the
    roots' default layout (rank 3 points, no properties, no relationships)."""
    parity = pytest.importorskip("test_webide_parity")
    if shutil.which("node") is None or not parity.JS_RUNTIME.exists():
        pytest.skip("node or the kaitai-struct runtime is missing")
    anns = [{"id": a["id"], "point": a["point"]} for a in make_annotations("point", 30)]
    write(tmp_path / "p", anns, "point", properties=(), relationships=(), sharded=False,
          limit=8)
    (tmp_path / "ide").mkdir()
    by_id = []
    for a in anns[:3]:
        f = tmp_path / "ide" / f"{a['id']}.annotation"
        f.write_bytes((tmp_path / "p" / "by_id" / str(a["id"])).read_bytes())
        by_id.append(f)
    cells = sorted((tmp_path / "p").glob("spatial*/*"))[:4]
    cases = [
        (parity.Format("NgAnnotation", "shardkit.generated.ng_annotation", "NgAnnotation", ""),
         by_id, "annotation"),
        (parity.Format("NgAnnotationById", "shardkit.generated.ng_annotation_by_id",
                       "NgAnnotationById", ""), by_id, "body"),
        (parity.Format("NgAnnotationCell", "shardkit.generated.ng_annotation_cell",
                       "NgAnnotationCell", ""), cells, "body"),
    ]
    for fmt, files, root in cases:
        js = parity.run_js_dump(fmt.js_class, files)
        for file in files:
            py = parity.py_dump(fmt, file)
            assert parity.parse_error(py) is None, py
            assert parity.diff(py, js[str(file)]) == []
            assert root in js[str(file)]
    tree = parity.py_dump(cases[2][0], cells[0])
    layer = shardkit.open(tmp_path / "p")
    assert tree["body"]["ids"] == [a.id for a in layer.decode_cell(cells[0].read_bytes(), "")]


# -- round trips --------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", TYPES)
@pytest.mark.parametrize("sharded", [True, False])
def test_round_trip_every_type(tmp_path, kind, sharded):
    anns = make_annotations(kind, 120)
    info = write(tmp_path / "l", anns, kind, sharded=sharded, limit=16)
    assert [p["id"] for p in info["properties"]] == ["score", "big", "small", "color", "kind",
                                                     "tone", "delta"]
    assert len(info["spatial"]) > 1 and info["spatial"][0]["grid_shape"] == [1, 1, 1]
    assert ("sharding" in info["by_id"]) == sharded
    layer = shardkit.open(tmp_path / "l")
    assert isinstance(layer, NgAnnotationLayer)
    assert len(layer) == 120
    for ann in anns:
        same(layer[ann["id"]], ann)
    assert layer.get(1) is None and 1 not in layer and anns[0]["id"] in layer
    got = {a.id: a for a in layer}
    assert sorted(got) == sorted(a["id"] for a in anns)
    assert layer.get(anns[1]["id"]).labels == {"kind": "b"}
    # relationships, from their own index
    for seg in (0, 5):
        want = sorted(a["id"] for a in anns if seg in a["relationships"]["pre"])
        assert sorted(a.id for a in layer.related("pre", seg)) == want
    assert layer.related("pre", 12345) == []
    with pytest.raises(KeyError):
        layer.related("nope", 1)
    # spatial queries equal a brute-force scan, each annotation once
    for lo, hi in (([10, 10, 10], [40, 50, 60]), ([0, 0, 0], [100, 100, 100]),
                   ([70, 5, 20], [71, 95, 80])):
        want = sorted(a.id for a in got.values() if meets(kind, a.geometry, lo, hi))
        result = [a.id for a in layer.query(lo, hi)]
        assert sorted(result) == want and len(result) == len(set(result))
    assert layer.verify() == []
    layer.close()


def test_limit_is_honoured_and_levels_subsample(tmp_path):
    anns = make_annotations("point", 3000, seed=3)
    info = write(tmp_path / "l", anns, "point", limit=100)
    layer = shardkit.open(tmp_path / "l")
    total = 0
    for li, level in enumerate(info["spatial"]):
        grid = level["grid_shape"]
        for cell in np.ndindex(*grid):
            n = len(layer.read_cell(li, cell))
            total += n
            assert n <= 100
    assert total == 3000  # points: one cell each, at one level
    assert len(info["spatial"]) >= 3
    # level 0 is a uniform subsample: its points spread over the whole box
    level0 = np.array([a.point for a in layer.read_cell(0, (0, 0, 0))])
    assert 50 <= len(level0) <= 100 and level0.min() < 20 and level0.max() > 80
    # one level at a time gives that level's part only
    box = ([0, 0, 0], [100, 100, 100])
    assert {a.id for a in layer.query(*box, level=0)} == {
        a.id for a in layer.read_cell(0, (0, 0, 0))}


def test_arrow_and_pandas(tmp_path):
    pytest.importorskip("pyarrow")
    anns = make_annotations("line", 50)
    write(tmp_path / "l", anns, "line")
    layer = shardkit.open(tmp_path / "l")
    table = layer.to_arrow()
    assert table.num_rows == 50
    assert table.column_names == ["id", "a_x", "a_y", "a_z", "b_x", "b_y", "b_z", "score", "big",
                                  "small", "color", "kind", "kind_label", "tone", "delta",
                                  "pre", "post"]
    rows = {r["id"]: r for r in table.to_pylist()}
    for ann in anns:
        r = rows[ann["id"]]
        assert [r["a_x"], r["a_y"], r["a_z"]] == np.float32(ann["point_a"]).tolist()
        assert r["kind_label"] == "abc"[ann["properties"]["kind"]]
        assert r["color"] == ann["properties"]["color"] and r["big"] == ann["properties"]["big"]
        assert r["post"] == ann["relationships"]["post"]
    pd = pytest.importorskip("pandas")
    df = layer.to_pandas()
    assert isinstance(df, pd.DataFrame) and len(df) == 50 and df["id"].dtype == np.uint64


def test_info_order_of_properties_is_the_stored_order(tmp_path):
    anns = make_annotations("point", 5)
    info = write(tmp_path / "l", anns, "point")
    on_disk = json.loads((tmp_path / "l" / "info").read_text())
    assert on_disk == info and on_disk["properties"][1] == {"id": "big", "type": "uint32"}
    assert on_disk["properties"][4]["enum_labels"] == ["a", "b", "c"]


def test_writer_refuses_bad_input_and_leaves_no_info(tmp_path):
    good = make_annotations("point", 3)
    cases = [
        ([{**good[0], "id": -1}], "uint64"),
        ([good[0], {**good[1], "id": good[0]["id"]}], "unique"),
        ([{**good[0], "point": [1, 2]}], "3 finite numbers"),
        ([{**good[0], "properties": {"kind": 300}}], "outside uint8"),
        ([{**good[0], "relationships": {"nope": [1]}}], "unknown relationship"),
    ]
    for i, (anns, match) in enumerate(cases):
        with pytest.raises(ValueError, match=match):
            write(tmp_path / f"bad{i}", anns, "point")
        assert not (tmp_path / f"bad{i}" / "info").exists()
        assert not list((tmp_path / f"bad{i}").glob(".annotations-*"))


def test_enum_labels_and_colour_strings_are_taken(tmp_path):
    anns = [{"id": 1, "point": [1, 2, 3],
             "properties": {"kind": "c", "color": "#0a0b0c", "tone": "#01020304"}}]
    write(tmp_path / "l", anns, "point", relationships=())
    got = shardkit.open(tmp_path / "l")[1]
    assert got.properties["kind"] == 2 and got.labels == {"kind": "c"}
    assert got.properties["color"] == (10, 11, 12) and got.properties["tone"] == (1, 2, 3, 4)


def test_mixed_sharding_and_given_specs(tmp_path):
    anns = make_annotations("point", 200)
    spec = {"@type": "neuroglancer_uint64_sharded_v1", "hash": "murmurhash3_x86_128",
            "preshift_bits": 0, "minishard_bits": 2, "shard_bits": 1,
            "minishard_index_encoding": "raw", "data_encoding": "raw"}
    info = write(tmp_path / "l", anns, "point", limit=50,
                 sharded={"by_id": spec, "pre": False, "post": True, "spatial": False})
    assert info["by_id"]["sharding"] == spec
    assert "sharding" not in info["relationships"][0]
    assert "sharding" in info["relationships"][1]
    assert all("sharding" not in s for s in info["spatial"])
    assert sorted(p.name for p in (tmp_path / "l" / "by_id").iterdir()) == ["0.shard",
                                                                             "1.shard"]
    layer = shardkit.open(tmp_path / "l")
    for ann in anns:
        same(layer[ann["id"]], ann)
    assert layer.verify() == []


def test_rank_two_and_no_properties(tmp_path):
    anns = [{"id": i, "point_a": [i, 0], "point_b": [i + 1, 5]} for i in range(20)]
    write_annotations(tmp_path / "l", anns, annotation_type="AXIS_ALIGNED_BOUNDING_BOX",
                      dimensions={"a": [1, "nm"], "b": [1, "nm"]}, limit=4)
    layer = shardkit.open(tmp_path / "l")
    assert layer.layout.record_bytes == 16
    assert layer[7].geometry.tolist() == [[7, 0], [8, 5]]
    assert sorted(a.id for a in layer.query([3.5, 1], [5.5, 2])) == [3, 4, 5]
    assert sorted(a.id for a in layer.query([3, 1], [3, 2])) == [2, 3]  # closed boxes
    assert layer.verify() == []


# -- verify -------------------------------------------------------------------------------------


def _corrupt(path: Path, data: bytes) -> None:
    path.write_bytes(data)


def test_verify_names_index_key_and_field(tmp_path):
    anns = make_annotations("point", 60)
    write(tmp_path / "l", anns, "point", sharded=False, limit=20)
    root = tmp_path / "l"
    a, b = anns[0]["id"], anns[1]["id"]
    # a truncated by_id value; another with an enum value not declared
    raw = (root / "by_id" / str(a)).read_bytes()
    _corrupt(root / "by_id" / str(a), raw[:-3])
    layer = shardkit.open(root)
    kind_at = 12 + next(p.offset for p in layer.layout.properties if p.id == "kind")
    raw_b = bytearray((root / "by_id" / str(b)).read_bytes())
    raw_b[kind_at] = 9
    _corrupt(root / "by_id" / str(b), bytes(raw_b))
    # a stray file; a relationship entry that lies; an annotation out of bounds
    (root / "by_id" / "notes.txt").write_text("x")
    seg = anns[2]["relationships"]["pre"][0]
    cell = bytearray((root / "rel_pre" / str(seg)).read_bytes())
    count = int.from_bytes(cell[:8], "little")
    cell[-8 * count : -8 * count + 8] = (999999).to_bytes(8, "little")
    _corrupt(root / "rel_pre" / str(seg), bytes(cell))
    layer = shardkit.open(root)
    problems = layer.verify()
    by_check: dict[str, list[Any]] = {}
    for p in problems:
        by_check.setdefault(p.check, []).append(p)
    assert by_check["record"][0].field.startswith(f"/by_id/{a}/relationships/1")
    enum = [p for p in by_check["enum"] if p.field == f"/by_id/{b}/properties/kind"]
    assert enum and "not one of its enum_values" in enum[0].message
    assert any(p.field == "/by_id/notes.txt" for p in by_check["file_name"])
    assert any(p.field == f"/rel_pre/{seg}/ids/0" and "999999" in p.message
               for p in by_check["by_id"])
    assert any(f"rel_pre {seg}" in p.message for p in by_check["relationship"])
    # the spatial index no longer agrees with by_id for b (its bytes changed)
    assert any(f"annotation {b}: its record differs" in p.message for p in by_check["by_id"])


def test_verify_finds_spatial_problems(tmp_path):
    anns = make_annotations("point", 40)
    write(tmp_path / "l", anns, "point", sharded=False, limit=10)
    root = tmp_path / "l"
    layer = shardkit.open(root)
    # move one annotation's cell list into a cell it does not meet, drop another's
    cells = sorted((root / "spatial1").iterdir())
    first = cells[0]
    data = first.read_bytes()
    other = next(c for c in cells if c.name != first.name)
    other.write_bytes(data)
    problems = layer.verify()
    checks = {p.check for p in problems}
    assert {"spatial_extra", "spatial_missing"} <= checks
    extra = next(p for p in problems if p.check == "spatial_extra")
    assert extra.field.startswith(f"/spatial1/{other.name}/annotations/")


def test_verify_bounds(tmp_path):
    anns = make_annotations("point", 10)
    write(tmp_path / "l", anns, "point", lower_bound=[0, 0, 0], upper_bound=[50, 100, 100])
    problems = shardkit.open(tmp_path / "l").verify()
    outside = [a["id"] for a in anns if a["point"][0] >= 50]
    assert outside
    assert {p.field for p in problems if p.check == "bounds"} >= {
        f"/by_id/{i}/geometry" for i in outside}


def test_corrupt_values_raise_shardkit_errors(tmp_path):
    anns = make_annotations("polyline", 5)
    write(tmp_path / "l", anns, "polyline", sharded=False)
    root = tmp_path / "l"
    ident = anns[0]["id"]
    raw = (root / "by_id" / str(ident)).read_bytes()
    (root / "by_id" / str(ident)).write_bytes(struct.pack("<I", 10**9) + raw[4:])
    layer = shardkit.open(root)
    with pytest.raises(TruncatedError) as exc:
        layer[ident]
    assert exc.value.field == "/annotation"
    cell = root / "spatial0" / "0_0_0"
    cell.write_bytes(struct.pack("<Q", 2**40) + cell.read_bytes()[8:])
    with pytest.raises(ShardkitError, match="count"):
        layer.read_cell(0, (0, 0, 0))


# -- remote -------------------------------------------------------------------------------------


def test_remote_get_is_at_most_three_range_requests(tmp_path, range_server):
    anns = make_annotations("point", 500)
    write(tmp_path / "l", anns, "point", limit=100)
    srv = range_server(tmp_path)
    layer = shardkit.open(srv.url("l"))
    assert isinstance(layer, NgAnnotationLayer)
    for ann in anns[:5]:
        srv.reset()
        same(layer[ann["id"]], ann)
        assert srv.count() <= 3
        assert all(r.range is not None for r in srv.requests)
    srv.reset()
    found = layer.query([0, 0, 0], [30, 30, 30])
    want = {a["id"] for a in anns if all(0 <= c <= 30 for c in np.float32(a["point"]))}
    assert {a.id for a in found} == want
    layer.close()


def test_vectorised_murmur_equals_mmh3():
    """The sharded writers and verify hash many keys with numpy; the values are mmh3's."""
    import mmh3

    from shardkit.hashing.murmur import hash_uint64_array

    rng = np.random.default_rng(11)
    keys = np.concatenate([rng.integers(0, 2**64, 5000, dtype=np.uint64),
                           np.array([0, 1, 2**32, 2**63, 2**64 - 1], dtype=np.uint64)])
    want = [mmh3.hash64(int(k).to_bytes(8, "little"), 0, False, False)[0] for k in keys]
    assert hash_uint64_array(keys).tolist() == want
    assert hash_uint64_array(keys[:10]).tolist() == want[:10]  # the short path


# -- layers written by the reference writers (tests/data/ng_annotations) ------------------------

SAMPLES = Path(__file__).parent / "data" / "ng_annotations"


@pytest.mark.parametrize("name", ["ng_points", "sk_points", "sk_lines"])
def test_reference_layers_read_equal_to_their_input(name):
    expected = json.loads((SAMPLES / "expected.json").read_text())[name]
    layer = shardkit.open(SAMPLES / name)
    assert len(layer) == len(expected)
    for want in expected:
        same(layer[want["id"]], {"properties": {}, "relationships": {}, **want})
    # a query through the spatial index finds what a scan finds
    lo, hi = [10.0, 10.0, 0.0], [40.0, 50.0, 30.0]
    scan = sorted(a.id for a in layer if meets(layer.layout.type, a.geometry, lo, hi))
    assert sorted(a.id for a in layer.query(lo, hi)) == scan and scan
    problems = layer.verify()
    checks = {p.check for p in problems}
    assert "bounds" in checks  # every one of these writers makes upper_bound inclusive
    quirks = [p.message for p in problems if p.check == "writer_quirk"]
    if name == "ng_points":
        assert checks == {"bounds", "writer_quirk"} and "3-aligned" in quirks[0]
        assert layer[3].properties == {"score": 0.5, "big": 3_000_000_002, "kind": 0}
        assert layer[4].labels == {"kind": "post"}
    elif name == "sk_points":
        assert checks == {"bounds", "writer_quirk"} and "ngsidekick 0.0.20" in quirks[0]
    else:
        assert checks == {"bounds"} and layer.by_id.sharded


def test_writer_removes_spill_files_when_a_later_temporary_file_fails(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shardkit.writers.ng_annotations as nga

    def no_file(*a: Any, **k: Any) -> Any:
        raise OSError(24, "Too many open files")

    monkeypatch.setattr(nga.tempfile, "TemporaryFile", no_file)
    out = tmp_path / "layer"
    with pytest.raises(OSError, match="Too many open files"):
        write_annotations(out, [{"id": 1, "point": [1.0, 2.0, 3.0]}], annotation_type="point",
                          dimensions={"x": [1, "nm"], "y": [1, "nm"], "z": [1, "nm"]},
                          relationships=["segments"])
    assert sorted(p.name for p in out.iterdir()) == []


@pytest.mark.parametrize("kind", ["point", "axis_aligned_bounding_box", "line", "ellipsoid"])
def test_query_prefilter_keeps_every_annotation_that_meets(kind):
    """``box_candidates`` (the vectorised test a query runs over a whole cell) equals
    ``meets`` for points and boxes, and keeps every line and ellipsoid that ``meets`` accepts:
    on random geometry and on the edges (faces touched, flat boxes, zero radii, backwards
    lines, NaN, infinities)."""
    from shardkit.formats.neuroglancer.annotations import box_candidates

    rng = np.random.default_rng(7)
    vectors = 1 if kind == "point" else 2
    geo = rng.uniform(-20, 120, (4000, vectors, 3)).astype(np.float32)
    if kind == "ellipsoid":
        geo[:, 1] = rng.uniform(-15, 15, (4000, 3))
        geo[::7, 1, rng.integers(0, 3)] = 0  # flat in one axis
    edges = np.array([[[10, 10, 10], [10, 10, 10]], [[40, 50, 60], [10, 10, 10]],
                      [[40, 0, 0], [0, 50, 60]], [[np.nan, 20, 20], [30, 30, 30]],
                      [[np.inf, 20, 20], [30, 30, 30]], [[5, 5, 5], [0, 0, 0]],
                      [[-np.inf, 20, 20], [np.inf, 20, 20]]], np.float32)[:, :vectors]
    geo = np.concatenate([geo, edges])
    met = 0
    for lo, hi in (([10, 10, 10], [40, 50, 60]), ([0, 0, 0], [100, 100, 100]),
                   ([70, 5, 20], [71, 95, 80]), ([30, 30, 30], [30, 30, 30])):
        lo_, hi_ = np.array(lo, float), np.array(hi, float)
        keep = box_candidates(kind, geo, lo_, hi_)
        want = np.array([meets(kind, g, lo_, hi_) for g in geo])
        assert not (want & ~keep).any()  # nothing that meets the box is dropped
        if kind in ("point", "axis_aligned_bounding_box"):
            assert (keep == want).all()
        met += int(want.sum())
    assert met > 100
