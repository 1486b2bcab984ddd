"""The streaming Amudai writer: write_amudai takes any iterable of stripes, holds one at a time,
and writes the bytes of the in-memory build_amudai_files (per-stripe summaries merged)."""

from __future__ import annotations

import gc
import itertools
import json
import math
import os
import random
import shutil
import subprocess
import weakref
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from amudai_samples import CREATED, PROPERTIES, SCHEMA, stripe

import shardkit
from shardkit.writers._atomic import atomic_files
from shardkit.writers.amudai import build_amudai, build_amudai_files, field, write_amudai
from shardkit.writers.amudai_stats import Summary

# every field type with nulls, spread over stripes of uneven sizes (one empty)
STRIPES = [stripe(0, 40), stripe(40, 0), stripe(40, 9000), stripe(9040, 3)]


def _read_back(folder: Path, names: list[str]) -> dict[str, bytes]:
    return {name: (folder / name).read_bytes() for name in names}


@pytest.mark.parametrize("options", [
    {"two_level": False},
    {"two_level": True},
    {"two_level": False, "compression": "zstd", "presence": "auto"},
    {"two_level": True, "compression": "lz4", "presence": "roaring", "block_checksums": False},
])
def test_streamed_file_is_the_in_memory_build(tmp_path: Path, options: dict[str, Any]) -> None:
    want = build_amudai_files(SCHEMA, STRIPES, root_name="s.amudai.shard",
                              properties=PROPERTIES, created=CREATED,
                              stripe_properties=[{"k": k} for k in range(len(STRIPES))],
                              **options)
    paths = write_amudai(tmp_path / "s.amudai.shard", SCHEMA, (s for s in STRIPES),
                         properties=PROPERTIES, created=CREATED,
                         stripe_properties=[{"k": k} for k in range(len(STRIPES))], **options)
    assert [p.name for p in paths] == list(want)
    assert len(want) == (1 + len(STRIPES) if options["two_level"] else 1)
    assert _read_back(tmp_path, list(want)) == want
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(want)  # no temporary left
    with shardkit.open(paths[0]) as s:
        assert s.verify() == []
        assert s.record_count == 9043
        assert s.read_column("name") == [v for st in STRIPES for v in st["name"]]
        d = s.descriptor("id")  # merged over the stripes: nulls every 7th row from row 3
        assert d.position_count == 9043
        assert d.null_count == sum(1 for i in range(9043) if i % 7 == 3)
        assert d.range_stats["min_value"] == -5
        assert d.range_stats["max_value"] == 9042 * 1000 - 5


def _shard_descriptors(data: bytes) -> list[bytes]:
    with shardkit.open(data) as s:
        return [s.field_descriptor(n.schema_id).SerializeToString(deterministic=True)
                for n in s.iter_fields() if s.field_descriptor(n.schema_id) is not None]


def test_shard_descriptors_merge_exactly() -> None:
    """One stripe, or the same rows cut into stripes: the same shard-level descriptors (min
    and max keep the first of equal values: 0.0 before -0.0, or -0.0 before 0.0)."""
    schema = [field("f", "Float64"), field("g", "Float32"), field("b", "Boolean"),
              field("s", "String"), field("c", "Int32"), field("l", "List", field("x", "Int8")),
              field("bin", "Binary"), field("fx", "FixedSizeBinary", fixed_size=2),
              field("m", "Map", field("k", "String"), field("v", "Boolean"))]
    rng = random.Random(7)
    for _ in range(30):
        n = rng.randrange(1, 40)

        def some(choices: list[Any], nulls: float = 0.2, n: int = n) -> list[Any]:
            return [None if rng.random() < nulls else rng.choice(choices) for _ in range(n)]

        cols = {"f": some([0.0, -0.0, math.nan, math.inf, -1.5, 2.0]),
                "g": some([-0.0, 0.0, 1.0]), "b": some([True, False]),
                "s": some(["", "a", "zé"]), "c": some([5], rng.choice([0, 0.3])),
                "l": some([[], [1], [2, 3]]), "bin": some([b"", b"\x00\x01"]),
                "fx": some([b"ab"]), "m": some([{}, {"k": True}], 0.5)}
        cuts = sorted(rng.sample(range(n + 1), rng.randrange(0, min(n, 4) + 1)))
        bounds = [0, *cuts, n]
        parts = [{k: v[a:b] for k, v in cols.items()} for a, b in itertools.pairwise(bounds)]
        assert _shard_descriptors(build_amudai(schema, parts)) == \
            _shard_descriptors(build_amudai(schema, [cols]))
        summaries = [Summary.of(field("f", "Float64"), p["f"]) for p in parts]
        merged = summaries[0]
        for s in summaries[1:]:
            merged = merged.merge(s)
        assert merged.descriptor(merged.constant()) == \
            Summary.of(field("f", "Float64"), cols["f"]).descriptor(merged.constant())


def test_constant_across_stripes() -> None:
    schema = [field("c", "Int32"), field("d", "Float64")]
    same = build_amudai(schema, [{"c": [7, 7], "d": [0.0]*2}, {"c": [7], "d": [0.0]}])
    differ = build_amudai(schema, [{"c": [7, 7], "d": [0.0]*2}, {"c": [8], "d": [-0.0]}])
    with shardkit.open(same) as s:
        assert s.descriptor("c").constant_value == 7
        assert s.descriptor("d").is_constant
    with shardkit.open(differ) as s:
        assert s.descriptor("c").constant_value is None
        assert not s.descriptor("c").is_constant and not s.descriptor("d").is_constant
        assert s.read_column("c") == [7, 7, 8]


def test_writer_holds_one_stripe_at_a_time(tmp_path: Path) -> None:
    class Stripe(dict):  # a dict that weak references can watch
        pass

    refs: list[weakref.ref[Stripe]] = []

    def stripes() -> Any:
        for k in range(8):
            gc.collect()
            # the writer may still hold stripe k-1 (its loop variable), never k-2
            assert all(r() is None for r in refs[: max(0, 2 * (k - 1))]), k
            ids = np.arange(k * 100, k * 100 + 100, dtype=np.int64)  # kept as it is
            s = Stripe({"id": ids, "name": [f"n{i}" for i in range(100)]})
            refs.extend([weakref.ref(s), weakref.ref(ids)])
            yield s
            del s, ids

    schema = [field("id", "Int64"), field("name", "String")]
    paths = write_amudai(tmp_path / "g.amudai.shard", schema, stripes(), two_level=True)
    assert len(paths) == 9
    with shardkit.open(paths[0]) as s:
        assert s.read_column("id") == list(range(800))
        assert len(s.stripes) == 8 and s.verify() == []


@pytest.mark.parametrize("two_level", [False, True])
def test_failed_stream_leaves_no_file(tmp_path: Path, two_level: bool) -> None:
    def stripes() -> Any:
        yield {"id": [1, 2]}
        yield {"id": [3]}
        raise RuntimeError("source went away")

    target = tmp_path / "x.amudai.shard"
    with pytest.raises(RuntimeError, match="went away"):
        write_amudai(target, [field("id", "Int64")], stripes(), two_level=two_level)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match="stripe 1: columns of different lengths"):
        write_amudai(target, [field("id", "Int64"), field("v", "Int8")],
                     iter([{"id": [1]}, {"id": [1, 2], "v": [1]}]), two_level=two_level)
    assert list(tmp_path.iterdir()) == []


def test_per_stripe_options_counted_against_a_generator(tmp_path: Path) -> None:
    target = tmp_path / "x.amudai.shard"
    with pytest.raises(ValueError, match="stripe_properties: 1 entries for 2 stripes"):
        write_amudai(target, [field("id", "Int64")], iter([{"id": [1]}, {"id": [2]}]),
                     stripe_properties=[{"a": 1}])
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match="stripe_indexes: 1 entries for 2 stripes"):
        build_amudai_files([field("id", "Int64")], [{"id": [1]}, {"id": [2]}],
                           stripe_indexes=[[]])


def test_numpy_integer_columns_are_taken_as_they_are(monkeypatch: pytest.MonkeyPatch) -> None:
    schema = [field("a", "Int64"), field("b", "Int32"), field("u", "Int16", signed=False),
              field("f", "Float64"), field("s", "Int8")]
    n = 20_000
    a = (np.arange(n, dtype=np.int64) * 7919) % 100_003 - 50_000
    cols = {"a": a, "b": a.astype(np.int32), "u": np.arange(n, dtype=np.uint32) % 65536,
            "f": a / 3, "s": np.full(n, -3, np.int64)}
    as_lists = {k: v.tolist() for k, v in cols.items()}
    want = build_amudai(schema, [as_lists, as_lists])
    with monkeypatch.context() as m:
        _no_values_one_by_one(m)
        assert build_amudai(schema, [cols, cols]) == want
    with shardkit.open(want) as s:
        assert s.read_array("a").tolist() == a.tolist() * 2
        assert s.descriptor("s").constant_value == -3
        assert s.descriptor("a").range_stats["min_value"] == int(a.min())
    with pytest.raises(ValueError, match=r"b: 2147483648 is not a int32"):
        build_amudai(schema[1:2], [{"b": np.array([1, 2**31], np.int64)}])
    with pytest.raises(ValueError, match=r"u: -1 is not a uint16"):
        build_amudai(schema[2:3], [{"u": np.array([-1, 2], np.int64)}])
    # not an integer array: taken value by value, as a list would be
    with pytest.raises(ValueError, match="is not a int64"):
        build_amudai(schema[:1], [{"a": np.array([True, False])}])
    assert build_amudai(schema[:1], [{"a": np.array([1.0, 2.0]).astype(np.int64)}]) == \
        build_amudai(schema[:1], [{"a": [1, 2]}])


def _no_values_one_by_one(monkeypatch: pytest.MonkeyPatch) -> None:
    import shardkit.writers.amudai_nodes as nodes  # where _shred calls _normalize

    def refuse(spec: Any, v: Any) -> Any:
        raise AssertionError(f"{spec.name}: value {v!r} taken one by one")

    monkeypatch.setattr(nodes, "_normalize", refuse)


def test_numpy_float64_columns_are_taken_as_they_are(monkeypatch: pytest.MonkeyPatch) -> None:
    """Float64 arrays: the statistics (NaN, infinities, 0.0 and -0.0 ties, constants bit for
    bit) and the bytes of the same values given as a list."""
    schema = [field("f", "Float64")]
    rng = np.random.default_rng(3)
    specials = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1.5, -2.25, 1e300, -1e-300])
    cases = [rng.choice(specials, size=rng.integers(1, 40)) for _ in range(60)]
    cases += [np.array([np.nan, np.inf]), np.array([-0.0, 0.0]), np.array([0.0, -0.0]),
              np.full(5, np.nan), np.full(3, -0.0), np.array([np.inf, np.nan, np.inf]),
              rng.standard_normal(20_000)]
    for arr in cases:
        parts = [arr[: len(arr) // 2], arr[len(arr) // 2 :]]
        for stripes in ([{"f": arr}], [{"f": p} for p in parts]):
            want = build_amudai(schema, [{"f": st["f"].tolist()} for st in stripes])
            with monkeypatch.context() as m:
                _no_values_one_by_one(m)
                assert build_amudai(schema, stripes) == want, arr
    # a Float32 column, or an integer array for a Float64 column: value by value
    assert build_amudai([field("g", "Float32")], [{"g": np.array([0.1, -0.0])}]) == \
        build_amudai([field("g", "Float32")], [{"g": [0.1, -0.0]}])
    assert build_amudai(schema, [{"f": np.array([1, 2])}]) == \
        build_amudai(schema, [{"f": [1.0, 2.0]}])


def test_empty_boolean_child_is_a_constant_null() -> None:
    """A map of Boolean values whose rows are all null: its value column has no position."""
    schema = [field("m", "Map", field("k", "String"), field("v", "Boolean"))]
    data = build_amudai(schema, [{"m": [None, None]}, {"m": [{"x": True}]}])
    with shardkit.open(data) as s:
        assert s.read_column("m") == [None, None, {"x": True}]
        sfd = s.stripe_field(0, s.field("m.v").schema_id)
        assert sfd.field.position_count == 0 and sfd.field.HasField("constant_value")
        assert s.verify() == []


def test_atomic_files_rename_together(tmp_path: Path) -> None:
    with atomic_files() as group:
        root = group.open(tmp_path / "root")
        part = group.open(tmp_path / "part")
        part.write(b"p")
        group.close(part)
        root.write(b"r")
        assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == []
    assert (tmp_path / "root").read_bytes() == b"r"
    assert (tmp_path / "part").read_bytes() == b"p"
    with pytest.raises(KeyError), atomic_files() as group:
        group.open(tmp_path / "root").write(b"new")
        raise KeyError("stop")
    assert (tmp_path / "root").read_bytes() == b"r"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["part", "root"]
    with pytest.raises(ValueError, match="written twice"), atomic_files() as group:
        group.open(tmp_path / "a")
        group.open(tmp_path / "a")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["part", "root"]


AMUDAI_CMD = os.environ.get("AMUDAI_CMD")


@pytest.mark.skipif(not AMUDAI_CMD or not shutil.which(AMUDAI_CMD),
                    reason="AMUDAI_CMD does not name a built amudai-cmd")
@pytest.mark.interop
@pytest.mark.parametrize("two_level", [False, True])
def test_amudai_cmd_reads_a_streamed_shard(tmp_path: Path, two_level: bool) -> None:
    """Stripes from a generator, integer columns as numpy arrays: the reference reads every
    record and finds the merged shard-level statistics."""
    assert AMUDAI_CMD

    def stripes() -> Any:
        for k in range(3):
            a = np.arange(k * 20_000, (k + 1) * 20_000, dtype=np.int64) - 30_000
            yield {"a": a, "b": (a % 251).astype(np.int32),
                   "s": [None if i % 5 == 0 else f"v{i}" for i in range(len(a))]}

    out = tmp_path / "streamed.amudai.shard"
    write_amudai(out, [field("a", "Int64"), field("b", "Int32"), field("s", "String")],
                 stripes(), two_level=two_level)

    def cmd(*args: str) -> str:
        done = subprocess.run([AMUDAI_CMD, *args], capture_output=True, text=True,
                              timeout=120, check=False)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout

    assert "Total records: 60000" in cmd("consume", str(out))
    text = cmd("inspect", "-vv", str(out))
    summary = json.loads(text[text.index("{"):])
    assert summary["shard_directory"]["stripe_count"] == 3
    fields = {f["name"]: f["descriptor"] for f in summary["schema"]["fields"]}
    assert fields["a"]["position_count"] == 60_000
    assert "I64Value(-30000)" in fields["a"]["range_stats"]["min_value"]
    assert "I64Value(29999)" in fields["a"]["range_stats"]["max_value"]
    assert fields["s"]["null_count"] == 3 * 4_000


def test_ingest_streams_one_file_at_a_time(tmp_path: Path, monkeypatch) -> None:
    """ingest hands the writer a generator (the second input is read once the first stripe is
    written); a bad record in a later file leaves no file behind."""
    from shardkit.writers import amudai_ingest
    from shardkit.writers.amudai_ingest import IngestError, ingest

    inputs = []
    for k in range(3):
        p = tmp_path / f"in{k}.ndjson"
        p.write_text("".join(json.dumps({"id": k * 10 + i, "name": f"r{i}"}) + "\n"
                             for i in range(4)))
        inputs.append(p)
    seen: list[str] = []
    real_columns = amudai_ingest._columns

    def columns(cols: Any, path: Path, *args: Any) -> Any:
        seen.append(path.name)
        return real_columns(cols, path, *args)

    real_write = amudai_ingest.write_amudai

    def write(out: Any, schema: Any, stripes: Any, **options: Any) -> Any:
        assert not isinstance(stripes, list) and seen == []  # nothing read before writing
        return real_write(out, schema, stripes, **options)

    monkeypatch.setattr(amudai_ingest, "_columns", columns)
    monkeypatch.setattr(amudai_ingest, "write_amudai", write)
    out = tmp_path / "out" / "o.amudai.shard"
    out.parent.mkdir()
    ingest(out, inputs, schema="(id: long, name: string)")
    assert seen == ["in0.ndjson", "in1.ndjson", "in2.ndjson"]
    with shardkit.open(out) as s:
        assert len(s.stripes) == 3
        assert s.read_column("id") == [k * 10 + i for k in range(3) for i in range(4)]
    inputs[2].write_text('{"id": "x"}\n')
    seen.clear()
    bad = tmp_path / "bad" / "o.amudai.shard"
    bad.parent.mkdir()
    with pytest.raises(IngestError, match=r"in2\.ndjson:1:id"):
        ingest(bad, inputs, schema="(id: long, name: string)", layout="twolevel")
    assert list(bad.parent.iterdir()) == []


def test_options_object_and_keywords_write_the_same_bytes(tmp_path: Path) -> None:
    """The writer's options live in one dataclass; the keywords are its fields, given one by
    one (they replace those of an options object given too)."""
    import dataclasses
    import inspect

    from shardkit.writers.amudai import AmudaiWriteOptions

    keywords = {"compression": "lz4", "presence": "roaring", "properties": PROPERTIES,
                "created": CREATED, "stripe_properties": [{"k": k} for k in range(4)]}
    options = AmudaiWriteOptions(**keywords)
    want = build_amudai_files(SCHEMA, STRIPES, two_level=True, **keywords)
    assert build_amudai_files(SCHEMA, STRIPES, options, two_level=True) == want
    plain = AmudaiWriteOptions(compression="zstd", presence="roaring", created=CREATED,
                               properties=PROPERTIES)
    assert build_amudai_files(SCHEMA, STRIPES, plain, two_level=True, compression="lz4",
                              stripe_properties=keywords["stripe_properties"]) == want
    paths = write_amudai(tmp_path / "o.amudai.shard", SCHEMA, iter(STRIPES), options)
    assert paths[0].read_bytes() == build_amudai(SCHEMA, STRIPES, options,
                                                 root_name="o.amudai.shard")
    assert build_amudai(SCHEMA, STRIPES, **keywords) == build_amudai(SCHEMA, STRIPES, options)
    with pytest.raises(TypeError, match=r"unexpected keyword argument.*compresion"):
        build_amudai_files(SCHEMA, STRIPES, compresion="lz4")
    with pytest.raises(TypeError, match="compresion"):
        write_amudai(tmp_path / "never.amudai.shard", SCHEMA, STRIPES, compresion="lz4")
    assert not (tmp_path / "never.amudai.shard").exists()
    # one list of the options: the public functions take the dataclass and **kw, no copies
    fields = {f.name for f in dataclasses.fields(AmudaiWriteOptions)}
    assert len(fields) == 11
    for func in (build_amudai_files, build_amudai, write_amudai):
        params = inspect.signature(func).parameters
        assert "options" in params and not fields & set(params), func.__name__
