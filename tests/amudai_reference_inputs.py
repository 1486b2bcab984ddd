"""The input records of the Amudai reference corpus (tests/data/amudai/reference/).

``python tests/amudai_reference_inputs.py`` rewrites the input files (deterministic). The shards
beside them were written from these files by the reference implementation's ``amudai-cmd
ingest``; MANIFEST.json names its commit and the command line of each shard.

Value shapes are chosen so that the reference's "balanced" encoding profile picks each of its
encodings somewhere: sorted, constant, low- and high-cardinality, sparse, small and negative
integers, floats with few decimals and random floats, short, repeated, unicode and long text.
"""

from __future__ import annotations

import csv
import json
import random
import uuid
from pathlib import Path
from typing import Any

OUT = Path(__file__).parent / "data" / "amudai" / "reference"

#: Arrow schema (the serde JSON that ``amudai-cmd ingest --schema-file`` reads) of types.*.
TYPES_SCHEMA: list[tuple[str, Any, dict[str, str]]] = [
    ("i8", "Int8", {}), ("i16", "Int16", {}), ("i32", "Int32", {}), ("i64", "Int64", {}),
    ("u8", "UInt8", {}), ("u16", "UInt16", {}), ("u32", "UInt32", {}), ("u64", "UInt64", {}),
    ("f32", "Float32", {}), ("f64", "Float64", {}), ("flag", "Boolean", {}),
    ("s", "Utf8", {}), ("bin", "Binary", {}), ("fsb", {"FixedSizeBinary": 4}, {}),
    ("ts", {"Timestamp": ["Nanosecond", None]}, {}), ("day", "Date32", {}),
    ("dec", {"Decimal128": [18, 4]}, {}),
    ("guid", {"FixedSizeBinary": 16}, {"ARROW:extension:name": "arrow.uuid"}),
    ("st", {"Struct": [("a", "Int64", {}), ("b", "Utf8", {}),
                       ("inner", {"Struct": [("c", "Float64", {})]}, {})]}, {}),
    ("li", {"List": ("item", "Int32", {})}, {}),
    ("ls", {"List": ("item", "Utf8", {})}, {}),
    ("m", {"Map": [("entries", {"Struct": [("key", "Utf8", {}, False),
                                           ("value", "Int64", {})]}, {}, False), False]}, {}),
    ("nul", "Int64", {}),
]


def _field(spec: tuple) -> dict[str, Any]:
    name, dt, meta = spec[:3]
    nullable = spec[3] if len(spec) > 3 else True
    return {"name": name, "data_type": _dtype(dt), "nullable": nullable, "dict_id": 0,
            "dict_is_ordered": False, "metadata": meta}


def _dtype(dt: Any) -> Any:
    if isinstance(dt, str):
        return dt
    (kind, arg), = dt.items()
    if kind == "Struct":
        return {kind: [_field(f) for f in arg]}
    if kind == "List":
        return {kind: _field(arg)}
    if kind == "Map":
        return {kind: [_field(arg[0]), arg[1]]}
    return dt


def arrow_schema_json() -> str:
    """The types schema as arrow-schema's serde JSON."""
    return json.dumps({"fields": [_field(f) for f in TYPES_SCHEMA], "metadata": {}}, indent=1)


WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
UNICODE = ["naïve café", "日本語のテキスト", "emoji 🎉🚀", "Ελληνικά", "русский текст", "",
           "tab\tand\nnewline", "quote \" and \\ backslash"]


def _maybe(rng: random.Random, value: Any, null_rate: float = 0.1) -> Any:
    return None if rng.random() < null_rate else value


def types_records(seed: int, n: int, start: int) -> list[dict[str, Any]]:
    """Rows of every type ingest takes, nulls in every column (one stripe's worth)."""
    rng = random.Random(seed)
    out = []
    for i in range(start, start + n):
        st = None if i % 17 == 0 else {
            "a": _maybe(rng, i * 3), "b": _maybe(rng, rng.choice(WORDS)),
            "inner": None if i % 23 == 0 else {"c": _maybe(rng, round(rng.uniform(-5, 5), 2))}}
        m = None if i % 13 == 0 else {f"k{j}": _maybe(rng, j * i) for j in range(i % 4)}
        ts_ns = 1_700_000_000_000_000_000 + i * 1_000_003_417
        out.append({
            "i8": _maybe(rng, rng.randint(-128, 127)),
            "i16": _maybe(rng, rng.randint(-32768, 32767)),
            "i32": _maybe(rng, rng.randint(-(2**31), 2**31 - 1)),
            "i64": _maybe(rng, rng.randint(-(2**63), 2**63 - 1)),
            "u8": _maybe(rng, rng.randint(0, 255)),
            "u16": _maybe(rng, rng.randint(0, 65535)),
            "u32": _maybe(rng, rng.randint(0, 2**32 - 1)),
            "u64": _maybe(rng, rng.randint(0, 2**63 - 1)),
            "f32": _maybe(rng, rng.choice([0.5, -1.25, 3.0, 1e10, -0.0, 2.75])),
            "f64": _maybe(rng, rng.uniform(-1e6, 1e6)),
            "flag": _maybe(rng, rng.random() < 0.5),
            "s": _maybe(rng, rng.choice(UNICODE) if i % 3 else f"row {i}"),
            "bin": _maybe(rng, bytes(rng.randrange(256) for _ in range(i % 9)).hex()),
            "fsb": _maybe(rng, bytes(rng.randrange(256) for _ in range(4)).hex()),
            "ts": _maybe(rng, ts_ns if i % 2 else _iso(ts_ns)),
            "day": _maybe(rng, f"20{10 + i % 15}-0{1 + i % 9}-1{i % 10}"),
            "dec": _maybe(rng, f"{rng.randint(-10**9, 10**9)}.{rng.randint(0, 9999):04d}"),
            "guid": _maybe(rng, str(uuid.UUID(int=rng.getrandbits(128)))),
            "st": st, "li": _maybe(rng, [_maybe(rng, rng.randint(-50, 50)) for _ in range(i % 5)]),
            "ls": _maybe(rng, [rng.choice(WORDS) for _ in range(i % 3)]),
            "m": m, "nul": None,
        })
    return out


def _iso(ns: int) -> str:
    from datetime import UTC, datetime, timedelta
    base = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(seconds=ns // 10**9)
    return base.strftime("%Y-%m-%dT%H:%M:%S") + f".{ns % 10**9:09d}Z"


LOREM = [
    "Lorem", "ipsum", "dolor", "sit", "amet,", "consectetur", "adipiscing", "elit,", "sed",
    "do", "eiusmod", "tempor", "incididunt", "ut", "labore", "et", "dolore", "magna",
    "aliqua.", "Ut", "enim", "ad", "minim", "veniam,", "quis", "nostrud", "exercitation",
    "ullamco", "laboris", "nisi", "ut", "aliquip", "ex", "ea", "commodo", "consequat.",
]


def encodings_rows(n: int) -> list[dict[str, Any]]:
    """Columns shaped for each numeric and string encoding of the balanced profile."""
    rng = random.Random(21)
    out = []
    for i in range(n):
        out.append({
            "seq": 1_000_000 + i,                                  # sorted: Delta / FOR
            "const": 42,                                           # constant
            "runs": (i // 700) % 5,                                # long runs: RunLength
            "lowcard": rng.choice([7, 1_000_003, 99_999_989, -5]),  # BlockDictionary
            "small": rng.randrange(16),                            # FLBitPack / Truncate
            "wide": rng.getrandbits(62),                           # high cardinality
            "offset": 5_000_000_000 + rng.randrange(1000),         # FOR / FFOR
            "neg": rng.randint(-300, 300),                         # ZigZag
            "sparse": (rng.randrange(1, 10**6) if rng.random() < 0.01 else 0),  # Sparse
            "price": round(rng.uniform(0, 1000), 2),               # ALP
            "noise": rng.random() * 1e-3 + 7.0,                    # ALPRD
            "ftemp": round(20 + (i % 50) / 10, 1),                 # ALP, repeats
            "ts": _iso((1_700_000_000 + i * 60) * 10**9)[:19].replace("T", " "),  # sorted
            "word": rng.choice(WORDS),                             # string dictionary
            "text": " ".join(rng.choice(LOREM) for _ in range(4 + i % 12)),  # FSST / LZ4
            "hexid": f"{rng.getrandbits(64):016x}",                # high-cardinality strings
            "maybe": (None if rng.random() < 0.4 else rng.randrange(1000)),  # nulls
            "rare": (None if rng.random() < 0.995 and i != 3 else rng.randrange(1000)),
            "sparse2": (i * 7919) % 10**6 if i % 1000 == 3 else None,  # Sparse (> 99.5 % null)
        })
    return out


def nested_records(seed: int, n: int) -> list[dict[str, Any]]:
    """Nested NDJSON for schema inference: structs, lists of structs, lists, mixed numbers."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        rec: dict[str, Any] = {
            "id": i + seed * 1000,
            "name": rng.choice(WORDS + UNICODE[:4]),
            "score": rng.choice([1, 2.5, None, 3.25]),
            "ok": rng.choice([True, False, None]),
            "user": None if i % 11 == 0 else {
                "login": f"user{i % 37}", "age": rng.choice([None, 20 + i % 50]),
                "geo": {"lat": round(rng.uniform(-90, 90), 4),
                        "lon": round(rng.uniform(-180, 180), 4)}},
            "tags": None if i % 7 == 0 else [rng.choice(WORDS) for _ in range(i % 4)],
            "events": [{"kind": rng.choice(["click", "view"]), "n": rng.randrange(100)}
                       for _ in range(i % 3)],
        }
        out.append(rec)
    return out


def csv_rows(n: int) -> list[list[str]]:
    rng = random.Random(5)
    rows = [["id", "name", "score", "at", "g", "n"]]
    for i in range(n):
        rows.append([
            str(i), "" if i % 9 == 0 else rng.choice([*WORDS, "comma, inside", "naïve"]),
            "" if i % 10 == 0 else f"{rng.uniform(-100, 100):.3f}",
            "" if i % 8 == 0 else f"2025-0{1 + i % 9}-1{i % 10} 0{i % 10}:1{i % 6}:2{i % 10}",
            "" if i % 6 == 0 else str(uuid.UUID(int=rng.getrandbits(128))),
            "" if i % 5 == 0 else str(rng.randint(-(2**31), 2**31 - 1)),
        ])
    return rows


def rare_rows(n: int) -> list[dict[str, Any]]:
    """Integer columns for the encodings the balanced profile picks only for some shapes."""
    rng = random.Random(5)
    out = []
    for i in range(n):
        k = i + 3
        zz = (k >> 1) ^ -(k & 1)  # 1, -2, 2, -3, 3...: ascending once zigzagged
        lowcard = [7, 1_000_003, 99_999_989, -5]
        out.append({
            "zz": zz,                                              # ZigZag[Delta[...]]
            "zzn": None if i % 13 == 0 else -zz,                   # the same, negated, nulls
            # BlockDictionary whose values the sample plans as TruncateU32; the one block
            # holding 2^40 falls back to TruncateU64 (truncation.rs, TruncateU32 encode)
            "t64": (1 << 40) if i == 5000 else rng.choice(lowcard),
            "t64b": (1 << 40) + i if i % 1024 == 700 else rng.choice(lowcard),
        })
    return out


def longtext_rows(n: int) -> list[dict[str, Any]]:
    """Texts of 16 KB from a vocabulary of 60 short words: FSST (a sample of one value is
    big enough for it, and its symbols beat LZ4's matches)."""
    rng = random.Random(6)
    vocab = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(5, 8)))
             for _ in range(60)]
    out = []
    for i in range(n):
        parts: list[str] = []
        size = 0
        while size < 16000:
            word = rng.choice(vocab)
            parts.append(word)
            size += len(word) + 1
        out.append({"id": i, "doc": " ".join(parts)})
    return out


def _csv(path: Path, rows: list[dict[str, Any]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(list(rows[0]))
        for r in rows:
            w.writerow(["" if v is None else v for v in r.values()])


def _ndjson(path: Path, records: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records),
                    encoding="utf-8")


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "types.schema.json").write_text(arrow_schema_json() + "\n", encoding="utf-8")
    _ndjson(OUT / "types-1.ndjson", types_records(1, 1000, 0))
    _ndjson(OUT / "types-2.ndjson", types_records(2, 500, 1000))
    _ndjson(OUT / "types-3.ndjson", types_records(3, 7, 1500))
    rows = encodings_rows(4500)
    with (OUT / "encodings.csv").open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(list(rows[0]))
        for r in rows:
            w.writerow(["" if v is None else v for v in r.values()])
    _ndjson(OUT / "nested-1.ndjson", nested_records(1, 400))
    _ndjson(OUT / "nested-2.ndjson", nested_records(2, 250))
    with (OUT / "people.csv").open("w", newline="", encoding="utf-8") as f:
        csv.writer(f, lineterminator="\n").writerows(csv_rows(3000))
    _csv(OUT / "rare.csv", rare_rows(6000))
    _csv(OUT / "longtext.csv", longtext_rows(24))


if __name__ == "__main__":
    main()
