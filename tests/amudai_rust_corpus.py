"""A second corpus of shards written by the reference writer (tests/data/amudai/rust/).

``python tests/amudai_rust_corpus.py`` rewrites the input files (deterministic). With the
environment variable ``AMUDAI_CMD`` naming a built ``amudai-cmd`` (version 0.2.56, commit
63c7da3), ``python tests/amudai_rust_corpus.py --shards`` also runs ``amudai-cmd ingest`` for
every shard (the command lines of :data:`SHARDS`, in the corpus folder; the tool writes each
shard's absolute ``file://`` URL into it, so the committed corpus was made in a copy of the
folder at ``/amudai-rust``, a path that names no machine), then writes
MANIFEST.json: the commit, and per shard its command, files, records, stripes and the
encodings of every block (shardkit's block walk). ``--big DIR`` writes the 1.1M-row input of
the benchmarks and its shard into DIR instead (not committed: 50 MB of CSV); ``--copies K``
makes that shard of K copies of the input (K stripes; 91 copies: 100M rows).

What each shard is for:

- ``scalars`` (3 stripes): every scalar type the NDJSON ingest takes, with nulls, a stripe
  where the date and the timestamp are each one constant value, GUIDs and a KustoDynamic
  (``Utf8`` with the ``arrow.json`` extension) column;
- ``decimals``: Decimal128 and Decimal256 columns (KustoDecimal; amudai-cmd's own ``head`` and
  ``consume`` cannot read them, so they are kept out of the other shards);
- ``times`` (2 stripes): every timestamp unit, Date32 and Date64, from year 0001 to 9999,
  numbers and RFC 3339 text, values before 0001-01-01 (stored as null), and a stripe whose
  year-0001 value is constant;
- ``large``: Arrow LargeUtf8, Utf8View, LargeBinary, BinaryView and LargeList columns;
- ``nested``: inferred NDJSON nested five levels deep, lists of lists, lists of structs;
- ``maps``: maps, lists of maps, maps of structs, a struct holding a map and a list;
- ``stripes40``: 40 stripes (40 input files), a stripe-constant timestamp in stripe 0;
- ``twolevel20``: the first 20 of those inputs as a two-level shard (20 stripe files);
- ``fsst``: documents of 12 KB from a small vocabulary, which the writer stores as FSST;
- ``inferred``: CSV inference (booleans, integers, floats, dates, timestamps, text, quoting);
- ``wide``: 256 columns of every CSV-inferred type.
"""

from __future__ import annotations

import csv
import json
import os
import random
import shutil
import subprocess
import sys
import uuid
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

OUT = Path(__file__).parent / "data" / "amudai" / "rust"
COMMIT = "63c7da35a73724a4455d83f01ce46c323dbc776e"

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
UNICODE = ["naïve café", "日本語", "emoji 🎉", "Ελληνικά", "", "tab\tand\nnewline",
           "quote \" and \\"]


def _field(name: str, dt: Any, meta: dict[str, str] | None = None,
           nullable: bool = True) -> dict[str, Any]:
    return {"name": name, "data_type": dt, "nullable": nullable, "dict_id": 0,
            "dict_is_ordered": False, "metadata": meta or {}}


def _schema(*fields: dict[str, Any]) -> str:
    return json.dumps({"fields": list(fields), "metadata": {}}, indent=1) + "\n"


def _map(key: Any, value: Any) -> dict[str, Any]:
    return {"Map": [_field("entries", {"Struct": [_field("key", key, nullable=False),
                                                  _field("value", value)]}, nullable=False),
                    False]}


def _maybe(rng: random.Random, value: Any, rate: float = 0.1) -> Any:
    return None if rng.random() < rate else value


def _iso(seconds: int, frac: str = "", tz: str = "Z") -> str:
    when = datetime(1, 1, 1) + timedelta(seconds=seconds + 62_135_596_800)
    return when.isoformat(timespec="seconds") + (f".{frac}" if frac else "") + tz


# --- scalars ----------------------------------------------------------------------------------

SCALARS_SCHEMA = _schema(
    _field("id", "Int64"), _field("i8", "Int8"), _field("i16", "Int16"), _field("i32", "Int32"),
    _field("u8", "UInt8"), _field("u16", "UInt16"), _field("u32", "UInt32"),
    _field("u64", "UInt64"), _field("f32", "Float32"), _field("f64", "Float64"),
    _field("flag", "Boolean"), _field("s", "Utf8"), _field("bin", "Binary"),
    _field("fsb", {"FixedSizeBinary": 3}), _field("at", {"Timestamp": ["Nanosecond", None]}),
    _field("day", "Date32"),
    _field("g", {"FixedSizeBinary": 16}, {"ARROW:extension:name": "arrow.uuid"}),
    _field("dyn", "Utf8", {"ARROW:extension:name": "arrow.json"}),
    _field("price", "Float64"),
    _field("nul", "Utf8"),
)


def scalars_records(stripe: int, n: int, start: int) -> list[dict[str, Any]]:
    """One stripe of every scalar type; in stripe 1 ``day`` and ``at`` are constant."""
    rng = random.Random(100 + stripe)
    out = []
    for i in range(start, start + n):
        const = stripe == 1
        at_ns = 1_600_000_000_000_000_000 + i * 3_600_000_001_700
        dyn = rng.choice([{"a": i, "b": [1, None, "x"]}, [i, i + 1], "text", 1.5, None, True,
                          {"nested": {"k": WORDS[i % 8]}}])
        out.append({
            "id": i,
            "i8": _maybe(rng, rng.randint(-128, 127)),
            "i16": _maybe(rng, rng.randint(-32768, 32767)),
            "i32": _maybe(rng, rng.randint(-(2**31), 2**31 - 1)),
            "u8": _maybe(rng, rng.randint(0, 255)),
            "u16": _maybe(rng, rng.choice([0, 65535, rng.randint(0, 65535)])),
            "u32": _maybe(rng, rng.randint(0, 2**32 - 1)),
            "u64": _maybe(rng, rng.choice([2**64 - 1, 2**63, rng.randint(0, 2**64 - 1)])),
            "f32": _maybe(rng, rng.choice([0.5, -1.25, 3.0e38, -0.0, 1e-40, 2.75])),
            "f64": _maybe(rng, rng.choice([rng.uniform(-1e9, 1e9), -0.0, 1e308, 5e-324])),
            "flag": _maybe(rng, rng.random() < 0.5),
            "s": _maybe(rng, rng.choice(UNICODE) if i % 3 else f"row {i}"),
            "bin": _maybe(rng, bytes(rng.randrange(256) for _ in range(i % 7)).hex()),
            "fsb": _maybe(rng, bytes(rng.randrange(256) for _ in range(3)).hex()),
            "at": "2079-04-07T12:30:00.1234567Z" if const else _maybe(
                rng, at_ns if i % 2 else _iso(at_ns // 10**9, f"{at_ns % 10**9:09d}")),
            "day": "2079-04-07" if const else _maybe(rng, f"{1900 + i % 200}-0{1 + i % 9}-"
                                                          f"{10 + i % 19}"),
            "g": _maybe(rng, str(uuid.UUID(int=rng.getrandbits(128)))),
            "dyn": None if dyn is None else json.dumps(dyn),
            # two decimals: ALP; -0.0 among them (the ALP writer drops its sign)
            "price": -0.0 if i % 50 == 7 else round((i % 400 - 200) / 10, 1),
            "nul": None,
        })
    return out


# --- decimals, times, large ---------------------------------------------------------------------

DECIMALS_SCHEMA = _schema(
    _field("id", "Int64"), _field("d18", {"Decimal128": [18, 4]}),
    _field("d38", {"Decimal128": [38, 10]}), _field("d256", {"Decimal256": [40, 6]}),
    _field("d0", {"Decimal128": [9, 0]}),
)


def decimals_records(n: int) -> list[dict[str, Any]]:
    rng = random.Random(7)
    out = []
    for i in range(n):
        sign = "-" if rng.random() < 0.4 else ""
        out.append({
            "id": i,
            "d18": _maybe(rng, f"{sign}{rng.randint(0, 10**14 - 1)}.{rng.randint(0, 9999):04d}"),
            "d38": _maybe(rng, rng.choice([f"{sign}{rng.randint(0, 10**20)}."
                                           f"{rng.randint(0, 10**10 - 1):010d}", "0", "1.5",
                                           "-0.0000000001"])),
            "d256": _maybe(rng, f"{sign}{rng.randint(0, 10**20)}.{rng.randint(0, 999999):06d}"),
            "d0": _maybe(rng, rng.randint(-(10**9) + 1, 10**9 - 1)),
        })
    return out


TIMES_SCHEMA = _schema(
    _field("id", "Int64"),
    _field("ts_s", {"Timestamp": ["Second", None]}),
    _field("ts_ms", {"Timestamp": ["Millisecond", None]}),
    _field("ts_us", {"Timestamp": ["Microsecond", None]}),
    _field("ts_ns", {"Timestamp": ["Nanosecond", None]}),
    _field("ts_tz", {"Timestamp": ["Microsecond", "+02:00"]}),
    _field("d32", "Date32"), _field("d64", "Date64"),
)
_YEAR1 = -62_135_596_800  # 0001-01-01T00:00:00Z in Unix seconds
_YEAR9999 = 253_402_300_799  # 9999-12-31T23:59:59Z
_NS_MIN, _NS_MAX = -9_223_372_036, 9_223_372_035  # Unix seconds a Timestamp(ns) holds


def times_records(stripe: int, n: int, start: int) -> list[dict[str, Any]]:
    """Year 0001 to 9999 in every unit; some values before 0001 (null in the shard); in
    stripe 1, ``ts_s`` is the constant 0001-01-01."""
    rng = random.Random(200 + stripe)
    out = []
    for i in range(start, start + n):
        sec = rng.choice([_YEAR1, _YEAR9999, rng.randint(_YEAR1, _YEAR9999), 0, -1,
                          rng.randint(_YEAR1, _NS_MIN), rng.randint(_NS_MAX, _YEAR9999)])
        before = i % 29 == 5  # before 0001-01-01: the reference stores null
        ns_sec = rng.randint(_NS_MIN + 1, _NS_MAX - 1)
        frac = rng.randrange(10**9)
        days = (sec // 86_400)
        as_text = i % 3 == 0
        out.append({
            "id": i,
            "ts_s": _iso(_YEAR1) if stripe == 1 else _maybe(
                rng, sec - 1_000_000 if before and sec == _YEAR1 else
                (_iso(sec) if as_text else (_YEAR1 - 1 if before else sec))),
            "ts_ms": _maybe(rng, _iso(sec, f"{frac // 10**6:03d}") if as_text else
                            (_YEAR1 * 1000 - 1 if before else sec * 1000 + frac // 10**6)),
            "ts_us": _maybe(rng, _iso(sec, f"{frac // 1000:06d}", "+05:30") if as_text else
                            (_YEAR1 * 10**6 - 7 if before else sec * 10**6 + frac // 1000)),
            "ts_ns": _maybe(rng, _iso(ns_sec, f"{frac:09d}") if as_text else
                            ns_sec * 10**9 + frac),
            "ts_tz": _maybe(rng, sec * 10**6 + frac // 1000),
            "d32": _maybe(rng, (_iso(days * 86_400)[:10] if as_text else days)),
            "d64": _maybe(rng, days * 86_400_000),
        })
    return out


LARGE_SCHEMA = _schema(
    _field("id", "Int64"), _field("ls", "LargeUtf8"), _field("vs", "Utf8View"),
    _field("lb", "LargeBinary"), _field("vb", "BinaryView"),
    _field("ll", {"LargeList": _field("item", "Int64")}),
    _field("lls", {"LargeList": _field("item", "LargeUtf8")}),
)


def large_records(n: int) -> list[dict[str, Any]]:
    rng = random.Random(9)
    out = []
    for i in range(n):
        out.append({
            "id": i,
            "ls": _maybe(rng, rng.choice(UNICODE + WORDS) * (1 + i % 3)),
            "vs": _maybe(rng, f"view {i} " + rng.choice(WORDS) * (i % 5)),
            "lb": _maybe(rng, bytes(rng.randrange(256) for _ in range(i % 11)).hex()),
            "vb": _maybe(rng, bytes([i % 256]) .hex() * (i % 20)),
            "ll": _maybe(rng, [_maybe(rng, rng.randint(-10**12, 10**12)) for _ in range(i % 4)]),
            "lls": _maybe(rng, [rng.choice(WORDS) for _ in range(i % 3)]),
        })
    return out


# --- nested, maps -------------------------------------------------------------------------------

def nested_records(n: int) -> list[dict[str, Any]]:
    """Inferred: structs five levels deep, lists of lists, lists of structs."""
    rng = random.Random(11)
    out = []
    for i in range(n):
        leaf = {"v": _maybe(rng, rng.randint(0, 999)), "w": _maybe(rng, rng.choice(WORDS))}
        out.append({
            "id": i,
            "a": None if i % 17 == 0 else {
                "b": {"c": {"d": None if i % 5 == 0 else {"e": leaf, "f": i * 0.5}},
                      "x": _maybe(rng, f"x{i}")}, "n": i % 7},
            "grid": None if i % 9 == 0 else [[rng.randint(0, 9) for _ in range(j)]
                                              for j in range(i % 4)],
            "items": [{"sku": f"s{rng.randrange(50)}", "qty": rng.randint(1, 5),
                       "tags": [rng.choice(WORDS) for _ in range(k % 3)]}
                      for k in range(i % 4)],
            "flag": rng.choice([True, False, None]),
        })
    return out


MAPS_SCHEMA = _schema(
    _field("id", "Int64"),
    _field("m", _map("Utf8", "Int64")),
    _field("lm", {"List": _field("item", _map("Utf8", "Float64"))}),
    _field("ms", _map("Utf8", {"Struct": [_field("n", "Int32"), _field("t", "Utf8")]})),
    _field("sm", {"Struct": [_field("name", "Utf8"), _field("attrs", _map("Utf8", "Utf8")),
                             _field("nums", {"List": _field("item", "Int16")})]}),
    _field("mi", _map("Int32", "Boolean")),
)


def maps_records(n: int) -> list[dict[str, Any]]:
    rng = random.Random(13)
    out = []
    for i in range(n):
        out.append({
            "id": i,
            "m": None if i % 7 == 0 else {f"k{j}": _maybe(rng, i * j) for j in range(i % 4)},
            "lm": None if i % 11 == 0 else [
                {f"p{j}": _maybe(rng, round(rng.uniform(-10, 10), 3)) for j in range(k % 3)}
                for k in range(i % 4)],
            "ms": None if i % 5 == 0 else {
                rng.choice(WORDS): {"n": _maybe(rng, rng.randint(-99, 99)),
                                    "t": _maybe(rng, rng.choice(UNICODE))} for _ in range(i % 3)},
            "sm": None if i % 13 == 0 else {
                "name": _maybe(rng, f"n{i}"),
                "attrs": _maybe(rng, {f"a{j}": rng.choice(WORDS) for j in range(i % 3)}),
                "nums": _maybe(rng, [rng.randint(-300, 300) for _ in range(i % 5)])},
            "mi": _maybe(rng, {str(j * 7): bool(j % 2) for j in range(i % 4)}),
        })
    return out


# --- stripes, FSST, CSV ---------------------------------------------------------------------------

def stripe_records(stripe: int, n: int) -> list[dict[str, Any]]:
    """One of the 40 stripes: in stripe 0 ``at`` is one constant instant."""
    rng = random.Random(300 + stripe)
    out = []
    for j in range(n):
        i = stripe * n + j
        at = "2020-09-14T12:00:00.5082149Z" if stripe == 0 else _iso(
            1_600_000_000 + i * 61, f"{rng.randrange(10**7):07d}")
        out.append({"id": i, "at": at, "v": _maybe(rng, round(rng.uniform(0, 100), 2)),
                    "s": _maybe(rng, rng.choice(WORDS)), "k": stripe % 3})
    return out


STRIPES_SCHEMA = _schema(
    _field("id", "Int64"), _field("at", {"Timestamp": ["Nanosecond", None]}),
    _field("v", "Float64"), _field("s", "Utf8"), _field("k", "Int32"),
)


def fsst_rows(n: int) -> list[dict[str, Any]]:
    """Texts of 12 KB from 40 short words: the writer picks FSST (values of about 9 KB or
    more; see the reference notes)."""
    rng = random.Random(17)
    vocab = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(4, 7)))
             for _ in range(40)]
    out = []
    for i in range(n):
        parts: list[str] = []
        size = 0
        while size < 12_000:
            word = rng.choice(vocab)
            parts.append(word)
            size += len(word) + 1
        out.append({"id": i, "doc": " ".join(parts)})
    return out


def inferred_rows(n: int) -> list[list[str]]:
    rng = random.Random(19)
    # (no all-empty column: the reference infers it as Null, which its ingest refuses)
    rows = [["id", "ok", "n", "x", "day", "at", "name", "note"]]
    for i in range(n):
        rows.append([
            str(i), "" if i % 7 == 0 else rng.choice(["true", "false"]),
            "" if i % 9 == 0 else str(rng.randint(-10**12, 10**12)),
            "" if i % 10 == 0 else f"{rng.uniform(-1e4, 1e4):.4f}",
            "" if i % 8 == 0 else f"20{10 + i % 15}-{1 + i % 12:02d}-{1 + i % 28:02d}",
            "" if i % 6 == 0 else f"2024-0{1 + i % 9}-1{i % 10}T0{i % 10}:1{i % 6}:2{i % 10}",
            rng.choice([*WORDS, "comma, inside", "naïve", 'a "quote"']),
            "" if i % 4 else "line one\nline two",
        ])
    return rows


def wide_rows(n: int) -> list[list[str]]:
    """256 columns cycling through the types CSV inference gives."""
    rng = random.Random(23)
    kinds = ["int", "float", "bool", "text", "date", "ts", "big", "neg"]
    header = [f"c{j:03d}_{kinds[j % 8]}" for j in range(256)]
    rows = [header]
    for i in range(n):
        row = []
        for j in range(256):
            kind = kinds[j % 8]
            if (i + j) % 11 == 0:
                row.append("")
            elif kind == "int":
                row.append(str(i * j))
            elif kind == "float":
                row.append(f"{(i - j) / 8:.3f}")
            elif kind == "bool":
                row.append("true" if (i + j) % 2 else "false")
            elif kind == "text":
                row.append(rng.choice(WORDS))
            elif kind == "date":
                row.append(f"2025-{1 + j % 12:02d}-{1 + i % 28:02d}")
            elif kind == "ts":
                row.append(f"2025-01-{1 + i % 28:02d}T{j % 24:02d}:00:00")
            elif kind == "big":
                row.append(str(2**62 + i * j))
            else:
                row.append(str(-i * j - 1))
        rows.append(row)
    return rows


def big_rows(n: int) -> Any:
    """The benchmark's rows (``--big``), shaped for the cascades the writer chooses at scale:
    a sorted id (Delta[RunLength[TruncateU16]]), timestamps a second apart
    (FrameOfReference[Delta[RunLength]]), a counter of long runs, a low-cardinality string
    (dictionary ids: BlockDictionary[FLBitPack]), random prices (ALP) and hexadecimal
    request ids (LZ4[FFOR] offsets)."""
    rng = random.Random(29)
    yield ["id", "at", "runs", "level", "price", "req"]
    levels = ["debug", "info", "info", "info", "warn", "error"]
    for i in range(n):
        yield [str(10_000_000 + i), _iso(1_700_000_000 + i)[:19].replace("T", " "),
               str((i // 5000) % 97), rng.choice(levels), f"{rng.uniform(0, 500):.2f}",
               f"{rng.getrandbits(48):012x}"]


# --- writing the inputs and the shards ------------------------------------------------------------

def _ndjson(path: Path, records: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records),
                    encoding="utf-8")


def _csv(path: Path, rows: Any) -> None:
    with path.open("w", newline="", encoding="utf-8") as f:
        csv.writer(f, lineterminator="\n").writerows(rows)


def _csv_dicts(path: Path, rows: list[dict[str, Any]]) -> None:
    _csv(path, [list(rows[0])] + [["" if v is None else v for v in r.values()] for r in rows])


def write_inputs(out: Path = OUT) -> None:
    """Every input file of the corpus (deterministic)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "scalars.schema.json").write_text(SCALARS_SCHEMA, encoding="utf-8")
    for k, (n, start) in enumerate([(300, 0), (300, 300), (40, 600)]):
        _ndjson(out / f"scalars-{k + 1}.ndjson", scalars_records(k, n, start))
    (out / "decimals.schema.json").write_text(DECIMALS_SCHEMA, encoding="utf-8")
    _ndjson(out / "decimals.ndjson", decimals_records(300))
    (out / "times.schema.json").write_text(TIMES_SCHEMA, encoding="utf-8")
    _ndjson(out / "times-1.ndjson", times_records(0, 400, 0))
    _ndjson(out / "times-2.ndjson", times_records(1, 60, 400))
    (out / "large.schema.json").write_text(LARGE_SCHEMA, encoding="utf-8")
    _ndjson(out / "large.ndjson", large_records(300))
    _ndjson(out / "nested.ndjson", nested_records(300))
    (out / "maps.schema.json").write_text(MAPS_SCHEMA, encoding="utf-8")
    _ndjson(out / "maps.ndjson", maps_records(300))
    (out / "stripes.schema.json").write_text(STRIPES_SCHEMA, encoding="utf-8")
    parts = out / "stripes"
    parts.mkdir(exist_ok=True)
    for k in range(40):
        _ndjson(parts / f"part-{k:02d}.ndjson", stripe_records(k, 25))
    _csv_dicts(out / "fsst.csv", fsst_rows(6))
    _csv(out / "inferred.csv", inferred_rows(400))
    _csv(out / "wide.csv", wide_rows(40))


def _files(*names: str) -> str:
    return " ".join(f"--file {n}" for n in names)


_PARTS = [f"stripes/part-{k:02d}.ndjson" for k in range(40)]

#: name -> (inputs, schema file or None, layout). The command line is :func:`command`'s.
SHARDS: dict[str, tuple[list[str], str | None, str]] = {
    "scalars": (["scalars-1.ndjson", "scalars-2.ndjson", "scalars-3.ndjson"],
                "scalars.schema.json", "single"),
    "decimals": (["decimals.ndjson"], "decimals.schema.json", "single"),
    "times": (["times-1.ndjson", "times-2.ndjson"], "times.schema.json", "single"),
    "large": (["large.ndjson"], "large.schema.json", "single"),
    "nested": (["nested.ndjson"], None, "single"),
    "maps": (["maps.ndjson"], "maps.schema.json", "single"),
    "stripes40": (_PARTS, "stripes.schema.json", "single"),
    "twolevel20": (_PARTS[:20], "stripes.schema.json", "twolevel"),
    "fsst": (["fsst.csv"], None, "single"),
    "inferred": (["inferred.csv"], None, "single"),
    "wide": (["wide.csv"], None, "single"),
}


def command(name: str) -> list[str]:
    """The ``amudai-cmd`` arguments that write shard ``name`` (run in the corpus folder)."""
    inputs, schema, layout = SHARDS[name]
    args = ["ingest"]
    if schema:
        args += ["--schema-file", schema]
    for p in inputs:
        args += ["--file", p]
    return [*args, "--shard-file-organization", layout, f"{name}.amudai.shard"]


def run_amudai_cmd(exe: str, args: list[str], cwd: Path) -> str:
    done = subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True, check=False,
                          timeout=3600)
    if done.returncode:
        raise SystemExit(f"amudai-cmd {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return done.stdout


def write_shards(exe: str, out: Path = OUT) -> dict[str, Any]:
    """Run amudai-cmd for every shard; MANIFEST.json describes what it wrote."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    import shardkit
    from shardkit.formats.amudai.encodings import block_encodings

    for old in [*out.glob("*.amudai.shard"), *out.glob("*.amudai.stripe")]:
        old.unlink()
    shards = []
    for name, (inputs, schema, layout) in SHARDS.items():
        before = set(out.glob("*.amudai.stripe"))
        args = command(name)
        run_amudai_cmd(exe, args, out)
        stripes = sorted(p.name for p in set(out.glob("*.amudai.stripe")) - before)
        with shardkit.open(out / f"{name}.amudai.shard") as s:
            paths = _paths(s)
            blocks = {f"{k}/{paths[sid]}/{kind}": dict(sorted(c.items()))
                      for (k, sid, kind), c in sorted(block_encodings(s).items())}
            entry = {"name": f"{name}.amudai.shard", "files": [f"{name}.amudai.shard",
                                                                *stripes],
                     "layout": layout, "inputs": inputs, "schema_file": schema,
                     "command": "amudai-cmd " + " ".join(args),
                     "records": s.record_count, "stripes": len(s.stripes), "blocks": blocks}
        shards.append(entry)
    encodings: dict[str, set[str]] = {}
    for e in shards:
        for cascades in e["blocks"].values():
            for cascade in cascades:
                for code in cascade.replace("[", ",").replace("]", ",").split(","):
                    if code.strip():
                        encodings.setdefault(code.strip(), set()).add(e["name"])
    manifest = {"reference": {"repository": "https://github.com/microsoft/amudai",
                              "commit": COMMIT,
                              "tool": "amudai-cmd 0.2.56, at that commit; each command run "
                                      "in a copy of this folder at /amudai-rust (the tool "
                                      "writes the shard's file:// URL into it)"},
                "regenerate": "AMUDAI_CMD=/path/to/amudai-cmd python "
                              "tests/amudai_rust_corpus.py --shards",
                "shards": shards,
                "encodings": {k: sorted(v) for k, v in sorted(encodings.items())}}
    (out / "MANIFEST.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n",
                                       encoding="utf-8")
    return manifest


def _paths(s: Any) -> dict[int, str]:
    """Schema id -> path as the manifests name it (list items ``a[]``, map ``m.key``)."""
    out: dict[int, str] = {}

    def walk(nodes: Any, prefix: str, parent: str | None) -> None:
        for i, n in enumerate(nodes):
            if n.name:
                p = f"{prefix}.{n.name}" if prefix else n.name
            elif parent == "Map":
                p = f"{prefix}.{'key' if i == 0 else 'value'}"
            else:
                p = f"{prefix}[]"
            out[n.schema_id] = p
            walk(n.children, p, n.type)

    walk(s.schema, "", None)
    return out


BIG_ROWS = 1_100_000


def write_big(exe: str, folder: Path, rows: int = BIG_ROWS, copies: int = 1) -> Path:
    """The benchmark's input (``big.csv``, about 50 MB) and its shard, written by
    ``amudai-cmd ingest --file big.csv --shard-file-organization single big.amudai.shard``.

    With ``copies`` > 1 the shard is ``big-x{copies}.amudai.shard``, made of that many copies
    of the input (``--file big.csv`` repeated; one stripe each): ``rows * copies`` records
    from one small input file (91 copies of 1.1M rows: 100M rows, 1.7 GB, in about 2 minutes
    of amudai-cmd)."""
    folder.mkdir(parents=True, exist_ok=True)
    csv_path = folder / "big.csv"
    stamp = folder / f"big.csv.{rows}"
    if not csv_path.exists() or not stamp.exists():
        _csv(csv_path, big_rows(rows))
        for old in folder.glob("big.csv.*"):
            old.unlink()
        stamp.touch()
    shard = folder / ("big.amudai.shard" if copies == 1 else f"big-x{copies}.amudai.shard")
    if shard.exists():
        shard.unlink()
    run_amudai_cmd(exe, ["ingest", *["--file", "big.csv"] * copies,
                         "--shard-file-organization", "single", shard.name], folder)
    return shard


def main(argv: list[str]) -> None:
    exe = os.environ.get("AMUDAI_CMD")
    if "--big" in argv:
        folder = Path(argv[argv.index("--big") + 1])
        if not exe or not shutil.which(exe):
            raise SystemExit("--big needs AMUDAI_CMD naming a built amudai-cmd")
        copies = int(argv[argv.index("--copies") + 1]) if "--copies" in argv else 1
        print(write_big(exe, folder, copies=copies))
        return
    write_inputs()
    if "--shards" in argv:
        if not exe or not shutil.which(exe):
            raise SystemExit("--shards needs AMUDAI_CMD naming a built amudai-cmd")
        manifest = write_shards(exe)
        for e in manifest["shards"]:
            print(f"{e['name']}: {e['records']} records, {e['stripes']} stripes")


if __name__ == "__main__":
    main(sys.argv[1:])
