"""Regenerate the MOSAIC sample files of this folder with the reference writer, swh-mosaic.

Run from the repository root with swh-mosaic 0.6.1 installed (a dev extra):

    python tests/data/mosaic/make_corpus.py [OUT_DIR]

Every file is described in PROVENANCE.md. The objects are small generated texts, so that the
files stay small; the keys are the objects' hashes as Software Heritage computes them.
With compression, swh-mosaic compresses on several threads, so the order of the objects in the
tiles (and the bytes of the file) may differ from one run to the next; what is stored does not.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

from swh.mosaic import IdxDescription, MosaicCreator, MosaicUpdater, create_zstd_dict

KINDS = {
    "sha1": IdxDescription.SHA1FMPHGO,
    "sha1_git": IdxDescription.SHA1GITFMPHGO,
    "sha256": IdxDescription.SHA256FMPHGO,
    "blake2s256": IdxDescription.BLAKE2FMPHGO,
}


def key(kind: str, data: bytes) -> bytes:
    """The key of ``data`` in an index of ``kind``."""
    if kind == "sha1_git":
        return hashlib.sha1(b"blob %d\0" % len(data) + data).digest()
    return hashlib.new(kind, data).digest()


def objects(n: int, seed: str = "") -> list[bytes]:
    """``n`` distinct small texts (the first one empty when ``seed`` is empty)."""
    out = []
    for i in range(n):
        line = f"{seed}object {i}: " + "lorem ipsum dolor sit amet " * (i % 7)
        out.append(b"" if (i == 0 and not seed) else line.encode())
    return out


def create(path: Path, objs: list[bytes], kinds: list[str], **options: object) -> None:
    """One MOSAIC file holding ``objs``, indexed by ``kinds``."""
    if path.exists():
        path.unlink()
    with MosaicCreator(path, [KINDS[k] for k in kinds], **options) as creator:
        for obj in objs:
            creator.add([key(k, obj) for k in kinds], obj)


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    create(out / "empty.mosaic", [], ["sha256"])
    create(out / "single.mosaic", [b"hello world\n"], ["sha256"])
    create(out / "sha256.mosaic", objects(20), ["sha256"])
    create(out / "all_indexes.mosaic", objects(12), ["sha1", "sha1_git", "sha256", "blake2s256"],
           comments=["MOSAIC sample made by shardkit's tests", "second comment: \u00e9t\u00e9"])
    create(out / "sha1.mosaic", objects(9, "s1 "), ["sha1"])
    create(out / "zstd.mosaic", objects(30), ["sha256", "sha1"], compression_level=3)
    samples = objects(60, "dictionary sample ")
    zdict = create_zstd_dict(samples, 1024)
    create(out / "zstd_dict.mosaic", objects(25), ["sha256"], compression_level=5,
           compression_data=zdict)
    # a small tile threshold: many tiles, and objects larger than it alone in their tile
    big = [b"x" * 700 + b"large one", bytes(range(256)) * 4]
    create(out / "tiles.mosaic", objects(15)[:8] + big + objects(15)[8:], ["sha256", "blake2s256"],
           tile_threshold=300)
    # deletions: MosaicUpdater voids the object and its entries in every index
    objs = objects(10)
    create(out / "deleted.mosaic", objs, ["sha256", "sha1"])
    with MosaicUpdater(out / "deleted.mosaic") as updater:
        for victim in (objs[3], objs[7]):
            updater.delete([(KINDS[k], key(k, victim)) for k in ("sha256", "sha1")])


def extra(out: Path) -> None:
    """The later samples: a reference deletion across tiles, and a conflict."""
    # swh-mosaic 0.6.1's MosaicUpdater.delete rewrites the CRC-32 of the tile after the
    # deleted object's: with several tiles, the object's own tile keeps a stale CRC-32
    objs = objects(15)
    create(out / "deleted_tiles.mosaic", objs, ["sha256"], tile_threshold=300)
    with MosaicUpdater(out / "deleted_tiles.mosaic") as updater:
        updater.delete([(KINDS["sha256"], key("sha256", objs[2]))])
    # swh-mosaic never writes Conflicts (a repeated key keeps its last object): shardkit's
    # writer does, for keys its caller gives
    from shardkit.writers.mosaic import MosaicWriter

    path = out / "conflict.mosaic"
    if path.exists():
        path.unlink()
    shared = key("sha256", b"first object of a shared key\n")
    with MosaicWriter(path, ["sha256"]) as w:
        w.add(b"first object of a shared key\n", [shared])
        w.add(b"an object of its own\n", [key("sha256", b"an object of its own\n")])
        w.add(b"second object of the shared key\n", [shared])


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(os.path.dirname(__file__))
    if len(sys.argv) > 2 and sys.argv[2] == "--extra":
        extra(target)
    else:
        main(target)
        extra(target)
