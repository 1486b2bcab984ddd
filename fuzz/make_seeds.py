"""Regenerate the small fuzz seeds in ``fuzz/seeds/<format>/`` with shardkit's own writers.

    python fuzz/make_seeds.py [--check]

The bundled samples are real files but large (an Amudai sample holds ~28 columns and one valid
input costs 50-85 ms), so the fuzzer would spend its time re-decoding the same columns. These
seeds are a few hundred bytes to a few KiB each and cover, one or two at a time, every type,
encoding, presence form, dictionary, compression and layout the writers can produce, so each
execution is cheap and each seed reaches a different branch of the reader.

Output is deterministic (fixed UUIDs, timestamps, random seeds; gzip without mtime): running the
script again rewrites the same bytes. ``--check`` exits 1 when a committed seed is stale or
missing, without writing.
"""

from __future__ import annotations

import argparse
import struct
import sys
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from shardkit.formats.neuroglancer import ShardingSpec
from shardkit.formats.xet_mdb import (
    FileInfo,
    XorbInfo,
)
from shardkit.writers.amudai import build_amudai, field
from shardkit.writers.neuroglancer import build_shard
from shardkit.writers.xet_mdb import build_mdb
from shardkit.writers.zs import build_zs
from shardkit.writers.zss import build_zss

HERE = Path(__file__).resolve().parent
SEEDS = HERE / "seeds"
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))  # mdb_inputs: the tests' MDB content generator

import targets  # noqa: E402
from mdb_inputs import hashed_inputs  # noqa: E402

CREATED = (datetime(2024, 5, 6, 7, 8, 9), datetime(2024, 5, 6, 7, 8, 10))
UUID = bytes(range(16))


# --- Amudai -------------------------------------------------------------------------------


def _amudai_columns(n: int) -> dict[str, tuple[Any, list[Any]]]:
    """Field spec and ``n`` values (nulls and edge values included) for each column kind."""
    rows = range(n)
    return {
        "i64": (field("i64", "Int64"), [None if i == 2 else i * 1000 - 5 for i in rows]),
        "i8": (field("i8", "Int8"), [-128 if i == 0 else i - 3 for i in rows]),
        "u16": (field("u16", "Int16", signed=False), [65535 if i == 1 else i for i in rows]),
        "i32": (field("i32", "Int32"), [-(2**31) if i == 2 else i * 3 for i in rows]),
        "u64": (field("u64", "Int64", signed=False), [2**64 - 1 if i == 0 else i for i in rows]),
        "f32": (field("f32", "Float32"), [None if i == 3 else i / 4 for i in rows]),
        "f64": (field("f64", "Float64"), [float("inf") if i == 1 else -i / 3 for i in rows]),
        "bool": (field("bool", "Boolean"), [None if i == 1 else i % 2 == 0 for i in rows]),
        "str": (field("str", "String"), [None if i == 2 else f"s{i}-ü" * (i % 3) for i in rows]),
        "bin": (field("bin", "Binary"), [bytes([i]) * (i % 4) for i in rows]),
        "guid": (field("guid", "Guid"), [None if i == 0 else uuid.UUID(int=i * 0x1234567)
                                         for i in rows]),
        "fsb": (field("fsb", "FixedSizeBinary", fixed_size=3), [b"%03d" % i for i in rows]),
        "when": (field("when", "DateTime"), [None if i == 3 else datetime(2024, 1, 1 + i, i)
                                             for i in rows]),
        "dict": (field("dict", "String", dictionary=True),
                 [None if i == 4 else ["Oslo", "Lima"][i % 2] for i in rows]),
        "const": (field("const", "Int32"), [42] * n),
        "null": (field("null", "Int64"), [None] * n),
        "struct": (field("struct", "Struct", field("a", "String"), field("b", "Int32")),
                   [None if i == 1 else {"a": f"x{i}", "b": i} for i in rows]),
        "list": (field("list", "List", field("item", "String")),
                 [None if i == 4 else [f"t{j}" for j in range(i % 3)] for i in rows]),
        "fsl": (field("fsl", "FixedSizeList", field("item", "Float64"), fixed_size=2),
                [None if i == 0 else [i * 0.5, None if i % 2 else -1.0] for i in rows]),
        "map": (field("map", "Map", field("key", "String"), field("value", "Int64")),
                [None if i == 2 else {f"k{j}": i * j for j in range(i % 3)} for i in rows]),
    }


def amudai_seeds() -> Iterator[tuple[str, bytes]]:
    """One to three columns per shard; every kind once plain, then codecs, presence, stripes."""
    cols = _amudai_columns(5)

    def shard(names: list[str], n: int = 5, stripes: int = 1, **options: Any) -> bytes:
        columns = _amudai_columns(n * stripes) if n != 5 or stripes != 1 else cols
        schema = [columns[c][0] for c in names]
        parts = [{c: columns[c][1][k * n:(k + 1) * n] for c in names} for k in range(stripes)]
        options.setdefault("created", CREATED)
        return build_amudai(schema, parts, **options)

    for name in cols:
        yield f"{name}.amudai.shard", shard([name])
    yield "i64-str-list.amudai.shard", shard(["i64", "str", "list"])
    yield "struct-map.amudai.shard", shard(["struct", "map"])
    for codec in ("lz4", "zstd"):
        yield f"{codec}-i64-str.amudai.shard", shard(["i64", "str"], compression=codec)
        yield f"{codec}-dict-fsl.amudai.shard", shard(["dict", "fsl"], compression=codec)
    yield "nochecksum-i32-bin.amudai.shard", shard(["i32", "bin"], block_checksums=False)
    yield "roaring-f32-guid.amudai.shard", shard(["f32", "guid"], presence="roaring")
    yield "auto-presence-when.amudai.shard", shard(["when", "bool"], presence="auto")
    yield "stripes3-u64-dict.amudai.shard", shard(["u64", "dict"], n=3, stripes=3)
    yield "properties-i8.amudai.shard", shard(
        ["i8"], properties={"source": "seed", "n": 5, "r": 0.5, "nested": {"l": [1, "two", None]},
                            "span": timedelta(seconds=3)},
        stripe_properties=[{"stripe": 0}])
    yield "empty.amudai.shard", build_amudai([field("i64", "Int64")], [{"i64": []}],
                                             created=CREATED)


# --- ZSS ----------------------------------------------------------------------------------


def zss_seeds() -> Iterator[tuple[str, bytes]]:
    """Each codec with one block, several blocks and a two-level index; metadata; edge records."""
    words = sorted(f"{w}{i}".encode() for i, w in enumerate(
        ["apple", "banana", "cherry", "date", "elder", "fig", "grape", "kiwi"] * 3))
    for codec in ("zlib", "bz2", "none+crc32c"):
        tag = codec.split("+")[0]
        yield f"{tag}-one-block.zss", build_zss(words[:6], codec=codec, uuid=UUID)
        yield f"{tag}-two-level.zss", build_zss(words, codec=codec, uuid=UUID,
                                                approx_block_size=24, branching_factor=2)
    yield "zlib-metadata.zss", build_zss(words[:4], codec="zlib", uuid=UUID,
                                         metadata={"note": "seed", "n": [1, 2]})
    yield "zlib-empty-and-dups.zss", build_zss([b"", b"", b"a", b"a", b"\xff" * 40],
                                               codec="zlib", uuid=UUID, approx_block_size=16)
    yield "zlib-no-records.zss", build_zss([], codec="zlib", uuid=UUID)
    yield "bz2-wide-fanout.zss", build_zss(words, codec="bz2", uuid=UUID,
                                           approx_block_size=8, branching_factor=3,
                                           compress_level=1)


# --- Xet MDB ------------------------------------------------------------------------------


def _mdb_content(seed: int, n_xorbs: int, n_files: int,
                 sha: bool = True) -> tuple[list[FileInfo], list[XorbInfo]]:
    """Xorbs of random chunks with real hashes and files cut from them (all hashes right):
    chunks of 1..64 bytes, 1..5 a xorb, 1..2 terms a file."""
    files, xorbs, _ = hashed_inputs(seed, n_xorbs, n_files, max_piece=64, max_pieces=5,
                                    max_terms=2, sha=sha)
    return files, xorbs


def mdb_seeds() -> Iterator[tuple[str, bytes]]:
    """Each form, table subsets, keyed chunk hashes, files without verification entries."""
    files, xorbs = _mdb_content(1, 2, 3)
    for form in ("full", "server", "upload"):
        yield f"{form}.mdb", build_mdb(files, xorbs, form=form)
    yield "full-file-table-only.mdb", build_mdb(files, xorbs, tables=["file"])
    yield "full-no-tables.mdb", build_mdb(files, xorbs, tables=[])
    yield "zero-table-offsets.mdb", build_mdb(files, xorbs, zero_table_offsets=True)
    yield "xorbs-only.mdb", build_mdb([], xorbs, form="full")
    yield "files-only-upload.mdb", build_mdb(files[:1], [], form="upload")
    yield "empty-full.mdb", build_mdb([], [], form="full")
    key = bytes(range(32))
    keyed = [XorbInfo(x.hash, 0, tuple(c._replace(hash=c.hash.keyed(key)) for c in x.chunks),
                      x.num_bytes_in_xorb, 0) for x in xorbs]
    yield "keyed-server.mdb", build_mdb([], keyed, form="server", hmac_key=key,
                                        creation_timestamp=1000, key_expiry=1000 + 86400)
    plain = [FileInfo(f.hash, 0, f.terms, (), None) for f in files]
    yield "no-verification.mdb", build_mdb(plain, xorbs, form="full")
    more_files, more_xorbs = _mdb_content(2, 3, 4)
    yield "three-xorbs.mdb", build_mdb(more_files, more_xorbs, form="full")


# --- Neuroglancer -------------------------------------------------------------------------


def neuroglancer_seeds() -> Iterator[tuple[str, bytes]]:
    """For each sample spec: one chunk, a few chunks in several minishards, an empty value.

    A fuzz input is one byte choosing the spec (its index in ``targets.NG_SPECS``) and the shard.
    """
    for index, raw in enumerate(targets.NG_SPECS):
        spec = ShardingSpec.coerce(raw)
        keys = [k for k in range(1, 4096) if spec.locate(k).shard == 0][:6]
        items = {k: bytes([k % 256]) * (1 + k % 9) for k in keys}
        prefix = bytes([index])
        yield f"spec{index}-one.shard", prefix + build_shard({keys[0]: b"chunk"}, raw)
        yield f"spec{index}-few.shard", prefix + build_shard(items, raw)
        yield f"spec{index}-empty-value.shard", prefix + build_shard({keys[1]: b""}, raw)


# --- ZS -----------------------------------------------------------------------------------


def zs_seeds() -> Iterator[tuple[str, bytes]]:
    """Each codec with one block and a deep index; metadata; empty, NUL and duplicate records."""
    words = sorted(f"{w}{i}".encode() for i, w in enumerate(
        ["apple", "banana", "cherry", "date", "elder", "fig", "grape", "kiwi"] * 3))
    for codec in ("none", "deflate", "lzma"):
        yield f"{codec}-one-block.zs", build_zs(words[:6], codec=codec)
        yield f"{codec}-three-level.zs", build_zs(words, codec=codec, approx_block_size=24,
                                                  branching_factor=2)
    yield "deflate-metadata.zs", build_zs(words[:4], codec="deflate",
                                          metadata={"note": "seed", "n": [1, {"x": None}]})
    yield "none-empty-and-dups.zs", build_zs([b"", b"", b"\x00", b"a", b"a", b"\xff" * 40],
                                             codec="none", approx_block_size=4)


# --- Neuroglancer compressed_segmentation chunks -----------------------------------------------


def cseg_seeds() -> Iterator[tuple[str, bytes]]:
    """The tensorstore sample's eight chunks (uint64, two channels, 8x4x4 blocks: a whole chunk
    and its clipped edges), and a uint32 chunk of one label (0 encoded bits) built by hand."""
    import shardkit

    ds = shardkit.open(targets.DATA / "neuroglancer" / "ts_seg_cseg_uint64")
    scale = ds.scales["8_8_40"]
    for key in sorted(scale.keys()):
        lo, hi = scale.chunk_box(scale.position(key))
        shape = tuple(b - a for a, b in zip(lo, hi, strict=True))
        head = targets.cseg_head("uint64", 2, shape, scale.block_size)
        yield f"ts-uint64-chunk{key}.cseg", bytes([head]) + scale.get(key)
    # one channel at word 1; one 8x8x8 block: its table at word 2 of the channel, 0 bits
    one = struct.pack("<4I", 1, 2, 2, 7)
    yield "one-label-uint32.cseg", bytes([targets.cseg_head("uint32", 1, (5, 2, 8),
                                                            (8, 8, 8))]) + one


# --- MOSAIC ----------------------------------------------------------------------------------


def mosaic_seeds() -> Iterator[tuple[str, bytes]]:
    """Each index kind, zstd, zstd with a dictionary, several tiles, a conflict, a deletion and
    an empty file, a few objects each (shardkit's writer: deterministic bytes)."""
    import tempfile

    from shardkit.formats.mosaic import content_key
    from shardkit.writers.mosaic import MosaicWriter, delete, write_mosaic

    objs = [b"", b"a", b"hello world\n", b"seed " * 30, bytes(range(200))]
    with tempfile.TemporaryDirectory() as tmp:
        def made(name: str, write: Callable[[Path], object]) -> tuple[str, bytes]:
            path = Path(tmp) / name
            write(path)
            return name, path.read_bytes()

        yield made("sha256.mosaic", lambda p: write_mosaic(p, objs[:3]))
        yield made("all-indexes.mosaic", lambda p: write_mosaic(
            p, objs, ["sha1", "sha1_git", "sha256", "blake2s256"], comments=["seed"]))
        yield made("zstd.mosaic", lambda p: write_mosaic(p, objs, ["sha1"], zstd_level=1))
        yield made("zstd-dict.mosaic", lambda p: write_mosaic(
            p, objs[2:], zstd_level=1, zstd_dict=b"seed hello world " * 8))
        yield made("tiles.mosaic", lambda p: write_mosaic(p, objs, ["blake2s256"],
                                                         tile_threshold=64))
        yield made("empty.mosaic", lambda p: write_mosaic(p, []))

        def conflict(p: Path) -> None:
            with MosaicWriter(p, ["sha256"]) as w:
                w.add(b"one", [content_key("sha256", b"one")])
                w.add(b"two", [content_key("sha256", b"one")])
                w.add(b"three", [content_key("sha256", b"three")])

        yield made("conflict.mosaic", conflict)

        def deleted(p: Path) -> None:
            write_mosaic(p, objs, ["sha256", "sha1"])
            delete(p, [content_key("sha1", objs[2])], index="sha1")

        yield made("deleted.mosaic", deleted)


# --- Neuroglancer annotation values -------------------------------------------------------------


def ngann_seeds() -> Iterator[tuple[str, bytes]]:
    """For each layout of ``targets.NGANN_LAYOUTS``: the ``by_id`` value of one annotation and
    the level-0 cell of a three-annotation layer written by shardkit's writer (unsharded)."""
    import tempfile

    import shardkit
    from shardkit.writers.neuroglancer import write_annotations

    values = {"uint8": 1, "int8": -2, "uint16": 3, "int16": -4, "uint32": 2**31 + 5,
              "int32": -6, "float32": 0.5, "rgb": [1, 2, 3], "rgba": [4, 5, 6, 7]}
    for index, lay in enumerate(targets.NGANN_LAYOUTS):
        info = targets.ngann_info(index)
        rank = lay["rank"]
        anns = []
        for i in range(3):
            p, q = [float(i + d) for d in range(rank)], [float(i + 2) for _ in range(rank)]
            geometry = {"point": {"point": p}, "line": {"point_a": p, "point_b": q},
                        "axis_aligned_bounding_box": {"point_a": p, "point_b": q},
                        "ellipsoid": {"center": q, "radii": [0.5] * rank},
                        "polyline": {"points": [p, q, p][: i + 1]}}[lay["annotation_type"]]
            anns.append({"id": i + 1, **geometry,
                         "properties": {pr["id"]: values[pr["type"]] for pr in lay["properties"]},
                         "relationships": {r: [10 + i, 20] for r in lay["relationships"]}})
        with tempfile.TemporaryDirectory() as tmp:
            write_annotations(tmp, anns, annotation_type=lay["annotation_type"],
                              dimensions=info["dimensions"], properties=lay["properties"],
                              relationships=lay["relationships"], sharded=False,
                              lower_bound=[0] * rank, upper_bound=[8] * rank)
            layer = shardkit.open(tmp)
            by_id = layer.raw(3)
            cell = (Path(tmp) / "spatial0" / "_".join("0" * rank)).read_bytes()
        yield (f"{index}-{lay['annotation_type']}.ngann",
               bytes([index]) + len(by_id).to_bytes(2, "little") + by_id + cell)


MAKERS: dict[str, Callable[[], Iterator[tuple[str, bytes]]]] = {
    "amudai": amudai_seeds,
    "zss": zss_seeds,
    "zs": zs_seeds,
    "mdb": mdb_seeds,
    "neuroglancer": neuroglancer_seeds,
    "cseg": cseg_seeds,
    "mosaic": mosaic_seeds,
    "ngann": ngann_seeds,
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when a committed seed differs from what would be written")
    args = parser.parse_args()
    stale = []
    for fmt, make in MAKERS.items():
        folder = SEEDS / fmt
        want = dict(make())
        have = {p.name: p.read_bytes() for p in folder.glob("*") if p.is_file()}
        if args.check:
            stale += [f"{fmt}/{n}" for n in sorted(set(want) | set(have))
                      if want.get(n) != have.get(n)]
            continue
        folder.mkdir(parents=True, exist_ok=True)
        for name in set(have) - set(want):
            (folder / name).unlink()
        for name, data in want.items():
            (folder / name).write_bytes(data)
        print(f"{fmt}: {len(want)} seeds, {sum(map(len, want.values()))} bytes")
    if stale:
        print("stale seeds (run python fuzz/make_seeds.py):", *stale, sep="\n  ")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
