"""A folder of many small shards of every format, sound, corrupt, truncated and unreadable.

Used by the bulk tests. Everything is made here, from the bundled real samples and shardkit's
writers; ``build(root)`` returns what each file was made to be (``sound`` or ``damaged`` or
``unreadable``) so tests can check a bulk report against how the files were built.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import shardkit
from shardkit.writers.amudai import field, write_amudai
from shardkit.writers.neuroglancer import write_sharded_dataset
from shardkit.writers.xet_mdb import build
from shardkit.writers.zss import write_zss

DATA = Path(__file__).parent / "data"

NG_SPEC = {"@type": "neuroglancer_uint64_sharded_v1", "preshift_bits": 0, "hash": "identity",
           "minishard_bits": 1, "shard_bits": 3, "minishard_index_encoding": "raw",
           "data_encoding": "raw"}


def flip(path: Path, offset: int) -> None:
    """Invert one byte (negative offsets count from the end)."""
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))


def cut(path: Path, keep: float = 0.5) -> None:
    """Keep the first part of the file only."""
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])


def build_corpus(root: Path, copies: int = 1) -> dict[str, str]:
    """Write the corpus under ``root``; ``{path: "sound" | "damaged" | "unreadable"}``.

    Neuroglancer shards live in dataset folders (``ng/ds*``, with ``info``); everything else
    in one folder per format. With ``copies=1`` there are about 250 shards.
    """
    rng = random.Random(13)
    made: dict[str, str] = {}

    def mark(path: Path, what: str) -> None:
        made[str(path)] = what

    # Software Heritage: copies of the reference-written samples
    swh = root / "swh"
    swh.mkdir(parents=True)
    for i in range(20 * copies):
        for name in ("tiny", "single"):
            dst = swh / f"{name}-{i:03d}.shard"
            shutil.copyfile(DATA / "swh" / f"{name}.shard", dst)
            mark(dst, "sound")
    for i in range(3):
        dst = swh / f"tiny-cut-{i}.shard"
        shutil.copyfile(DATA / "swh" / "tiny.shard", dst)
        cut(dst, 0.3 + 0.2 * i)
        mark(dst, "damaged")
    for offset in (700, 900):  # an index entry: counts and object bounds no longer agree
        dst = swh / f"tiny-flip-{offset}.shard"
        shutil.copyfile(DATA / "swh" / "tiny.shard", dst)
        flip(dst, offset)
        mark(dst, "damaged")
    # Xet MDB: rebuilt from the real shards by our writer (byte-identical), then damaged copies
    mdb = root / "mdb"
    mdb.mkdir()
    real = sorted((DATA / "mdb" / "real").glob("*/*.mdb"))
    for i in range(4 * copies):
        for j, src in enumerate(real):
            dst = mdb / f"{i:02d}-{j:02d}-{src.name}"
            with shardkit.open(src) as shard:
                dst.write_bytes(build(shard))
            mark(dst, "sound")
    for i, src in enumerate(real[:4]):
        dst = mdb / f"cut-{i}-{src.name}"
        shutil.copyfile(src, dst)
        cut(dst, 0.6)
        mark(dst, "damaged")
    # ZSS: written by our writer, every codec; damaged ones from the none+crc32c codec
    zss = root / "zss"
    zss.mkdir()
    codecs = ("zlib", "bz2", "none+crc32c")
    for i in range(60 * copies):
        n = rng.randrange(1, 300)
        records = sorted(f"rec-{rng.randrange(10**6):07d}".encode() for _ in range(n))
        dst = zss / f"r{i:03d}.zss"
        write_zss(dst, records, codec=codecs[i % 3], approx_block_size=512)
        mark(dst, "sound")
    for i in range(6):
        records = sorted(f"bad-{k:05d}".encode() for k in range(200))
        dst = zss / f"bad{i}.zss"
        write_zss(dst, records, codec="none+crc32c", approx_block_size=512)
        if i % 2:
            cut(dst, 0.5)
        else:
            flip(dst, 200 + 37 * i)
        mark(dst, "damaged")
    shutil.copyfile(DATA / "zss" / "incomplete_zlib.zss", zss / "incomplete.zss")
    mark(zss / "incomplete.zss", "damaged")
    # Neuroglancer: sharded key-value datasets (8 shards each), one with damaged shards
    for d in range(6 * copies):
        ds = root / "ng" / f"ds{d}"
        items = {k: f"segment {k} of dataset {d}".encode() * (1 + k % 5)
                 for k in range(1, 200, 1 + d % 3)}
        names = write_sharded_dataset(ds, items, NG_SPEC)
        for name in names[1:]:
            mark(ds / name, "sound")
    bad = root / "ng" / "ds0"
    flip(bad / "0.shard", 3)
    cut(bad / "1.shard", 0.5)
    mark(bad / "0.shard", "damaged")
    mark(bad / "1.shard", "damaged")
    # Amudai: single-file shards from our writer
    am = root / "amudai"
    am.mkdir()
    schema = [field("id", "Int64"), field("name", "String")]
    for i in range(30 * copies):
        n = rng.randrange(1, 50)
        dst = am / f"t{i:03d}.amudai.shard"
        write_amudai(dst, schema, [{"id": list(range(n)), "name": [f"n{k}" for k in range(n)]}])
        mark(dst, "sound")
    for i in range(4):
        dst = am / f"bad{i}.amudai.shard"
        write_amudai(dst, schema, [{"id": list(range(40)), "name": ["x"] * 40}])
        if i % 2:
            cut(dst, 0.7)
        else:
            flip(dst, 72 + 8 * i)  # inside the first data block (checksummed)
        mark(dst, "damaged")
    # not shards at all
    junk = root / "junk"
    junk.mkdir()
    (junk / "random.bin").write_bytes(rng.randbytes(4096))
    (junk / "empty.shard").write_bytes(b"")
    mark(junk / "random.bin", "unreadable")
    mark(junk / "empty.shard", "unreadable")
    return made
