"""The second corpus of Rust-written shards (tests/data/amudai/rust/, made by
``amudai-cmd ingest`` 0.2.56 at commit 63c7da3; MANIFEST.json has each command line and
``tests/amudai_rust_corpus.py`` regenerates it): every value equals the input record as the
reference normalises it, ``verify`` passes, the block walk finds the manifest's encodings, and
the wrong answers of issue 31 stay fixed on the reference's own shards. Live tests, where
``AMUDAI_CMD`` names a built amudai-cmd, check that it reads our ingest of the same inputs.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from test_amudai_reference import _paths, _same
from test_amudai_reference import _python as _ref_python

import shardkit
from shardkit.cli import main
from shardkit.formats.amudai.arrow import UNIX_EPOCH_TICKS
from shardkit.formats.amudai.encodings import block_encodings
from shardkit.formats.amudai.wire import FORMAT_COMMIT
from shardkit.render import to_json
from shardkit.writers.amudai import ingest
from shardkit.writers.amudai_ingest import _arrow_cols, _Col, _col_of, _columns, infer_schema

RUST = Path(__file__).parent / "data" / "amudai" / "rust"
MANIFEST = json.loads((RUST / "MANIFEST.json").read_text(encoding="utf-8"))
SHARDS = {e["name"]: e for e in MANIFEST["shards"]}
NAMES = list(SHARDS)


def _cols(entry: dict[str, Any]) -> list[_Col]:
    if entry.get("schema_file"):
        return _arrow_cols((RUST / entry["schema_file"]).read_text(encoding="utf-8"))
    return [_col_of(s) for s in infer_schema([RUST / p for p in entry["inputs"]])]


def _python(col: _Col, v: Any) -> Any:
    """An input value as read_column gives it (KustoDynamic: its JSON text)."""
    if col.json and v is not None:
        return v.decode("utf-8")
    if v is not None and col.spec.type == "Struct":
        return {c.spec.name: _python(c, v[c.spec.name]) for c in col.children}
    return _ref_python(col, v)


def _expected(entry: dict[str, Any]) -> tuple[list[_Col], list[dict[str, list[Any]]]]:
    cols = _cols(entry)
    return cols, [_columns(cols, RUST / p) for p in entry["inputs"]]


def test_manifest_names_the_commit_every_file_and_the_regeneration() -> None:
    assert MANIFEST["reference"]["commit"].startswith(FORMAT_COMMIT)
    assert "tests/amudai_rust_corpus.py --shards" in MANIFEST["regenerate"]
    for entry in SHARDS.values():
        assert entry["command"].startswith("amudai-cmd ingest ")
        assert entry["command"].endswith(" " + entry["name"])
        for name in [*entry["files"], *entry["inputs"]]:
            assert (RUST / name).is_file(), name
    assert SHARDS["stripes40.amudai.shard"]["stripes"] == 40
    two = SHARDS["twolevel20.amudai.shard"]
    assert two["layout"] == "twolevel" and len(two["files"]) == 21
    wide = SHARDS["wide.amudai.shard"]
    with shardkit.open(RUST / wide["name"]) as s:
        assert len(s.schema) == 256


def test_the_corpus_regenerates_its_inputs(tmp_path: Path) -> None:
    """The committed inputs are what the generator writes (so the command lines rebuild the
    shards from them)."""
    from amudai_rust_corpus import write_inputs

    write_inputs(tmp_path)
    for entry in SHARDS.values():
        for name in [*entry["inputs"], *([entry["schema_file"]] if entry["schema_file"]
                                         else [])]:
            assert (tmp_path / name).read_bytes() == (RUST / name).read_bytes(), name


@pytest.mark.parametrize("name", NAMES)
def test_values_equal_the_input_records(name: str) -> None:
    entry = SHARDS[name]
    cols, stripes = _expected(entry)
    with shardkit.open(RUST / name) as s:
        assert [st.record_count for st in s.stripes] == [len(next(iter(st.values())))
                                                         for st in stripes]
        assert sorted(f.name for f in s.schema) == sorted(c.spec.name for c in cols)
        for c in cols:
            node = s.field(c.spec.name)
            assert (node.type, node.extended_type) == (c.spec.type, c.spec.extended_type)
            want = [_python(c, v) for st in stripes for v in st[c.spec.name]]
            got = s.read_column(c.spec.name)
            assert _same(got, want), c.spec.name


@pytest.mark.parametrize("name", NAMES)
def test_verify_passes(name: str) -> None:
    with shardkit.open(RUST / name) as s:
        assert s.verify() == []


@pytest.mark.parametrize("name", NAMES)
def test_block_walk_matches_the_manifest(name: str) -> None:
    with shardkit.open(RUST / name) as s:
        paths = _paths(s)
        walk = {f"{k}/{paths[sid]}/{kind}": dict(c)
                for (k, sid, kind), c in block_encodings(s).items()}
    assert walk == SHARDS[name]["blocks"]


def test_the_corpus_has_the_cascades_of_the_issue() -> None:
    cascades = {c for e in SHARDS.values() for per in e["blocks"].values() for c in per}
    codes = set(MANIFEST["encodings"])
    assert {"FSST", "ALP", "BlockDictionary", "FLBitPack", "Delta", "RunLength",
            "LZ4"} <= codes
    assert any(c.startswith("Delta[") for c in cascades)


# --- the wrong answers of issue 31, on the reference's shards --------------------------------

def test_stripe_constant_datetimes_are_dates() -> None:
    """The Rust writer stores a stripe's constant DateTime as U64Value ticks."""
    pa = pytest.importorskip("pyarrow")
    with shardkit.open(RUST / "scalars.amudai.shard") as s:
        for col in ("day", "at"):
            sfd = s.stripe_field(1, s.field(col).schema_id)
            assert sfd.field.constant_value.WhichOneof("kind") == "u64_value", col
        row = s[450]
        assert row["day"] == "2079-04-07T00:00:00"
        assert row["at"] == "2079-04-07T12:30:00.123456"
        assert s.read_column("day")[300] == datetime(2079, 4, 7)
        table = s.to_arrow()
        ns = table.column("at").combine_chunks().cast(pa.int64())[450].as_py()
        seconds = (datetime(2079, 4, 7, 12, 30) - datetime(1970, 1, 1)) // timedelta(seconds=1)
        assert ns == seconds * 10**9 + 123_456_700
    with shardkit.open(RUST / "stripes40.amudai.shard") as s:
        sfd = s.stripe_field(0, s.field("at").schema_id)
        assert sfd.field.constant_value.WhichOneof("kind") == "u64_value"
        assert s[0]["at"] == "2020-09-14T12:00:00.508214"
        ticks = (datetime(2020, 9, 14, 12) - datetime(1, 1, 1)) // timedelta(microseconds=1) \
            * 10 + 5_082_149
        assert s.read_array("at")[0] == ticks


def test_times_from_year_1_to_9999_in_arrow() -> None:
    pa = pytest.importorskip("pyarrow")
    with shardkit.open(RUST / "times.amudai.shard") as s:
        table = s.to_arrow()
        types = {f.name: f.type for f in table.schema}
        for name in ("ts_s", "ts_ms", "ts_us", "ts_tz", "d32", "d64"):
            assert types[name] == pa.timestamp("us"), name  # the years 1 to 9999
        assert types["ts_ns"] == pa.timestamp("ns")  # every value in the ns range
        ticks = s.read_array("ts_s")
        micros = table.column("ts_s").combine_chunks().cast(pa.int64()).to_pylist()
        for t, m, ok in zip(ticks.data.tolist(), micros, (~ticks.mask).tolist(), strict=True):
            assert (m is not None) == ok
            if ok:
                assert m == (t - UNIX_EPOCH_TICKS) // 10
        # stripe 1: ts_s is the constant 0001-01-01
        assert micros[-1] == (datetime(1, 1, 1) - datetime(1970, 1, 1)).days * 86_400 * 10**6
        years = {v.year for v in s.read_column("ts_s") if v is not None}
        assert 1 in years and 9999 in years


def test_times_before_year_1_are_null_as_our_ingest_stores_them(tmp_path: Path) -> None:
    entry = SHARDS["times.amudai.shard"]
    out = tmp_path / "times.amudai.shard"
    ingest(out, [RUST / p for p in entry["inputs"]],
           schema=(RUST / entry["schema_file"]).read_text(encoding="utf-8"))
    records = [json.loads(ln) for p in entry["inputs"]
               for ln in (RUST / p).read_text(encoding="utf-8").splitlines()]
    before = [i for i, r in enumerate(records) if isinstance(r["ts_s"], int)
              and r["ts_s"] < -62_135_596_800]
    assert before
    with shardkit.open(RUST / entry["name"]) as ref, shardkit.open(out) as ours:
        for col in ("ts_s", "ts_ms", "ts_us", "ts_ns", "ts_tz", "d32", "d64"):
            assert ours.read_column(col) == ref.read_column(col), col
        assert all(ref.read_column("ts_s")[i] is None for i in before)


def test_kusto_dynamic_is_a_large_string_with_arrow_json() -> None:
    pa = pytest.importorskip("pyarrow")
    with shardkit.open(RUST / "scalars.amudai.shard") as s:
        node = s.field("dyn")
        assert (node.type, node.extended_type) == ("Binary", "KustoDynamic")
        table = s.to_arrow()
        f = table.schema.field("dyn")
        assert f.type == pa.large_string()
        assert f.metadata == {b"ARROW:extension:name": b"arrow.json"}
        values = table.column("dyn").to_pylist()
        assert values == s.read_column("dyn")
        assert all(v is None or json.loads(v) is not None or v == "null" for v in values)


def _run(argv: list[str], capsys: Any) -> tuple[int, str]:
    code = main(argv)
    out, _ = capsys.readouterr()
    return code, out


@pytest.mark.parametrize("name", NAMES)
def test_head_json_writes_every_type(name: str, capsys: Any) -> None:
    """``head --json`` of every row of every shard: the rows, as JSON (decimals as text)."""
    with shardkit.open(RUST / name) as s:
        n = s.record_count
        want = [json.loads(to_json(r, indent=None)) for r in s.rows()]
    code, out = _run(["head", "--json", "-n", str(n), str(RUST / name)], capsys)
    assert code == 0
    lines = [json.loads(ln) for ln in out.splitlines()]
    assert lines == want
    if name == "decimals.amudai.shard":
        assert all(isinstance(r["d18"], str) for r in lines if r["d18"] is not None)


def test_decimals_through_get_and_dump(capsys: Any) -> None:
    path = str(RUST / "decimals.amudai.shard")
    with shardkit.open(path) as s:
        want = [None if v is None else format(v, "f") for v in s.read_column("d256")]
    code, out = _run(["get", path, "d256"], capsys)
    assert code == 0 and json.loads(out) == want
    code, out = _run(["dump", path], capsys)
    assert code == 0 and json.loads(out)["schema"]
    code, out = _run(["ls", "--json", path], capsys)
    assert "d256\tFixedSizeBinary(16) [KustoDecimal]" in json.loads(out)


def test_alp_drops_the_sign_of_negative_zero() -> None:
    """A reference bug: the ALP writer stores -0.0 as 0.0. shardkit reads what is stored."""
    with shardkit.open(RUST / "scalars.amudai.shard") as s:
        paths = _paths(s)
        alp = [key for (k, sid, kind), c in block_encodings(s).items()
               for key in c if paths[sid] == "price" and "ALP" in key]
        if not alp:
            pytest.skip("the writer chose another encoding for price in this corpus")
        records = [json.loads(ln) for p in SHARDS["scalars.amudai.shard"]["inputs"]
                   for ln in (RUST / p).read_text(encoding="utf-8").splitlines()]
        neg = [i for i, r in enumerate(records) if r["price"] is not None and r["price"] == 0
               and math.copysign(1, r["price"]) < 0]
        got = s.read_column("price")
        assert neg and all(got[i] == 0 and math.copysign(1, got[i]) > 0 for i in neg)


@pytest.mark.parametrize("name", NAMES)
def test_our_ingest_reads_back_as_the_reference(name: str, tmp_path: Path) -> None:
    entry = SHARDS[name]
    schema = ((RUST / entry["schema_file"]).read_text(encoding="utf-8")
              if entry.get("schema_file") else None)
    out = tmp_path / name
    ingest(out, [RUST / p for p in entry["inputs"]], schema=schema, layout=entry["layout"])
    with shardkit.open(RUST / name) as ref, shardkit.open(out) as ours:
        assert [st.record_count for st in ours.stripes] == [st.record_count
                                                            for st in ref.stripes]
        for node in ref.schema:
            assert ours.field(node.name).type == node.type
            assert _same(ours.read_column(node.name), ref.read_column(node.name)), node.name
        assert ours.verify() == []


# --- live: amudai-cmd reads our ingest of the same inputs ------------------------------------

AMUDAI_CMD = os.environ.get("AMUDAI_CMD")
live = pytest.mark.skipif(not AMUDAI_CMD or not shutil.which(AMUDAI_CMD),
                          reason="AMUDAI_CMD does not name a built amudai-cmd")


def _cmd(*args: str) -> str:
    assert AMUDAI_CMD
    done = subprocess.run([AMUDAI_CMD, *args], capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@live
@pytest.mark.interop
@pytest.mark.parametrize("name", [n for n in NAMES
                                  if n not in ("decimals.amudai.shard", "scalars.amudai.shard")])
def test_amudai_cmd_consumes_our_ingest(name: str, tmp_path: Path) -> None:
    """Our shards of every corpus input, DateTime constants included: amudai-cmd ``consume``
    reads every record and ``head`` shows the same first rows as for its own shard.
    (``decimals`` and ``scalars``: the reference's head and consume fail on KustoDecimal and
    on KustoDynamic, its own shards too.)"""
    entry = SHARDS[name]
    schema = ((RUST / entry["schema_file"]).read_text(encoding="utf-8")
              if entry.get("schema_file") else None)
    out = tmp_path / name
    ingest(out, [RUST / p for p in entry["inputs"]], schema=schema, layout=entry["layout"])
    assert f"Total records: {entry['records']}" in _cmd("consume", str(out))
    ours = _cmd("head", "-c", "50", str(out))
    theirs = _cmd("head", "-c", "50", str(RUST / name))
    if entry.get("schema_file"):  # inferred schemas order fields as a hash map iterates
        assert ours == theirs


@live
@pytest.mark.interop
def test_amudai_cmd_reads_our_datetime_constants(tmp_path: Path) -> None:
    """The constant written as U64Value ticks: amudai-cmd's head shows the instant."""
    from shardkit.writers.amudai import field, write_amudai

    out = tmp_path / "c.amudai.shard"
    write_amudai(out, [field("id", "Int64"), field("t", "DateTime")],
                 [{"id": [1, 2], "t": [datetime(2079, 4, 7)] * 2},
                  {"id": [3], "t": [datetime(1, 1, 1, 0, 0, 1)]}])
    text = _cmd("head", "-c", "3", str(out))
    assert text.count("2079-04-07T00:00:00") == 2
    assert "Total records: 3" in _cmd("consume", str(out))

