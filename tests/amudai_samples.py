"""The table the Amudai tests and the bundled samples (tests/data/amudai/) are made of.

Run ``python tests/amudai_samples.py`` to rewrite the samples; the tests check that the bundled
files are byte-identical to what the writer makes now.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

from shardkit.writers.amudai import (
    ArtifactSpec,
    FieldSpec,
    IndexSpec,
    build_amudai,
    build_amudai_files,
    field,
)

DATA = Path(__file__).parent / "data" / "amudai"

SCHEMA: list[FieldSpec] = [
    field("id", "Int64"),
    field("small", "Int8"),
    field("u16", "Int16", signed=False),
    field("i32", "Int32"),
    field("u64", "Int64", signed=False),
    field("ratio", "Float32"),
    field("score", "Float64"),
    field("flag", "Boolean"),
    field("name", "String"),
    field("blob", "Binary"),
    field("guid", "Guid"),
    field("code", "FixedSizeBinary", fixed_size=3),
    field("when", "DateTime"),
    field("city", "String", dictionary=True),
    field("const", "Int32"),
    field("address", "Struct", field("street", "String"), field("zip", "Int32")),
    field("tags", "List", field("item", "String")),
    field("point", "FixedSizeList", field("item", "Float64"), fixed_size=2),
    field("attrs", "Map", field("key", "String"), field("value", "Int64")),
]


def stripe(start: int, n: int) -> dict[str, list[Any]]:
    """``n`` rows starting at row ``start``; nulls and edge values sprinkled in."""
    rows = range(start, start + n)
    return {
        "id": [None if i % 7 == 3 else i * 1000 - 5 for i in rows],
        "small": [-128 if i == 0 else (i % 200) - 100 for i in rows],
        "u16": [65535 if i == 1 else i for i in rows],
        "i32": [-(2**31) if i == 2 else i * 3 for i in rows],
        "u64": [2**64 - 1 if i == 0 else i for i in rows],
        "ratio": [None if i % 5 == 0 else i / 4 for i in rows],
        "score": [float("inf") if i == 4 else -i / 3 for i in rows],
        "flag": [None if i % 6 == 1 else i % 2 == 0 for i in rows],
        "name": [None if i % 4 == 2 else f"name-{i}-ü" * (i % 3) for i in rows],
        "blob": [bytes([i % 256]) * (i % 5) for i in rows],
        "guid": [None if i % 3 == 0 else uuid.UUID(int=i * 0x1234567) for i in rows],
        "code": [f"{i % 1000:03d}".encode() for i in rows],
        "when": [None if i % 9 == 8 else datetime(2024, 1, 1 + i % 28, i % 24, 0, 0, i)
                 for i in rows],
        "city": [None if i % 8 == 5 else ["Oslo", "Lima", "Pune"][i % 3] for i in rows],
        "const": [42] * n,
        "address": [None if i % 10 == 9 else {"street": f"{i} Main St", "zip": 10000 + i}
                    for i in rows],
        "tags": [None if i % 11 == 10 else [f"t{j}" for j in range(i % 4)] for i in rows],
        "point": [None if i % 12 == 0 else [i * 0.5, None if i % 2 else -1.0] for i in rows],
        "attrs": [None if i % 13 == 7 else {f"k{j}": i * j for j in range(i % 3)}
                  for i in rows],
    }


STRIPES = [stripe(0, 40), stripe(40, 25), stripe(65, 3)]
PROPERTIES = {"source": "shardkit test", "rows": 68, "ratio": 0.25,
              "nested": {"list": [1, "two", None, b"\x03"], "when": datetime(2024, 5, 6)}}
CREATED = (datetime(2024, 5, 6, 7, 8, 9), datetime(2024, 5, 6, 7, 8, 10))


def expected_column(name: str) -> list[Any]:
    """What reading column ``name`` must give (the writer's inputs, normalised)."""
    out: list[Any] = []
    for s in STRIPES:
        out.extend(s[name])
    return out


INDEXED_SCHEMA: list[FieldSpec] = [
    field("id", "Int64"),
    field("reading", "Float64"),
    field("text", "String"),
    field("tags", "List", field("item", "String")),
]


def indexed_stripe(start: int, n: int) -> dict[str, list[Any]]:
    """Rows for the Roaring presence sections: id < 1 % nulls, reading > 99 % nulls."""
    rows = range(start, start + n)
    return {
        "id": [None if i == 17 else i for i in rows],
        "reading": [i / 8 if i == 123 else None for i in rows],
        "text": [None if i % 2 else f"word{i % 7} word{i % 5}" for i in rows],
        "tags": [[f"t{i % 3}"] * (i % 3) for i in rows],
    }


INDEXED_STRIPES = [indexed_stripe(0, 200), indexed_stripe(200, 100)]


def indexed_files() -> dict[str, bytes]:
    """A shard with index descriptors at every level and Roaring presence (writer options).

    The reference writer recipe writes no indexes; these exercise the reader: a shard-level
    inverted-term index whose "terms" artifact is a nested shard inside the root file and whose
    "positions" artifact is a nested shard in its own file; an empty IndexCollection for
    stripe 0 and none for stripe 1; a shard-level field index on ``id`` with an opaque artifact;
    a stripe-level field index on ``text`` in stripe 1.
    """
    words = sorted({w for s in INDEXED_STRIPES for t in s["text"] if t for w in t.split()})
    terms = build_amudai([field("term", "String"), field("count", "Int64")],
                         [{"term": words, "count": [1] * len(words)}])
    positions = build_amudai([field("term_id", "Int32"), field("position", "Int64")],
                             [{"term_id": [0, 1, 2], "position": [0, 2, 4]}])
    text_id = 2
    return build_amudai_files(
        INDEXED_SCHEMA, INDEXED_STRIPES, two_level=False, root_name="indexed.amudai.shard",
        presence="auto", created=CREATED,
        indexes=[IndexSpec(
            "inverted-term-index-v1", ("text",),
            (ArtifactSpec("terms", terms, properties={"collation": "case-preserving"}),
             ArtifactSpec("positions", positions, url="indexed-positions.amudai.shard")),
            {"tokenizer": "word"}, len(terms) + len(positions))],
        stripe_indexes=[[], None],
        field_indexes={"id": [IndexSpec("hashmap-index", ("id",),
                                        (ArtifactSpec("part0", bytes(range(64))),))]},
        stripe_field_indexes=[None, {"text": [IndexSpec("trivial", ((text_id,),))]}])


def samples() -> dict[str, bytes]:
    """The bundled sample files: single-file (plain and LZ4), two-level, and indexed."""
    files: dict[str, bytes] = {}
    files.update(build_amudai_files(SCHEMA, STRIPES, two_level=False,
                                    root_name="single.amudai.shard", properties=PROPERTIES,
                                    created=CREATED))
    lz4_schema = SCHEMA[:3] + SCHEMA[8:9]
    lz4_rows = {f.name: stripe(0, 3000)[f.name] for f in lz4_schema}
    files.update(build_amudai_files(lz4_schema, [lz4_rows],
                                    two_level=False, root_name="lz4.amudai.shard",
                                    compression="lz4"))
    files.update(build_amudai_files(SCHEMA, STRIPES, two_level=True,
                                    root_name="twolevel.amudai.shard", properties=PROPERTIES,
                                    created=CREATED))
    files.update(indexed_files())
    return files


if __name__ == "__main__":
    DATA.mkdir(parents=True, exist_ok=True)
    for name, data in samples().items():
        (DATA / name).write_bytes(data)
        print(f"{name}: {len(data)} bytes")
