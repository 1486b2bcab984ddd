"""Generated Xet MDB content (files and xorbs) for the tests, the benchmarks and the fuzz seeds.

Two kinds, each seeded and deterministic:

* :func:`random_inputs`: random hashes (not content-derived), one term per file over a whole
  xorb: shards of any size for lookups and speed, which the reader does not re-hash;
* :func:`hashed_inputs`: xorbs of random chunk data with their real hashes and files cut from
  them, every hash (chunk, xorb, verification, file, sha256) right: shards ``verify`` accepts.

The order of the random draws is part of each function's contract: ``fuzz/seeds`` hold what
``fuzz/make_seeds.py`` builds from :func:`hashed_inputs`, and a test checks they stay equal.
Imported as ``mdb_inputs`` with the ``tests`` folder on ``sys.path`` (pytest puts it there;
``fuzz/make_seeds.py`` and the benchmarks add it).
"""

from __future__ import annotations

import hashlib
import random

from shardkit.formats.xet_mdb import (
    FILE_FLAG_METADATA_EXT,
    FILE_FLAG_VERIFICATION,
    ChunkEntry,
    FileInfo,
    Term,
    XetHash,
    XorbInfo,
)
from shardkit.hashing import xet as xh

__all__ = ["hashed_inputs", "random_inputs"]


def random_inputs(n_files: int, n_xorbs: int, per_xorb: int, seed: int, *,
                  chunk_sizes: tuple[int, int] = (1000, 9000), plain_every: int | None = None,
                  prefixes: dict[int, bytes] | None = None
                  ) -> tuple[list[FileInfo], list[XorbInfo]]:
    """``n_xorbs`` xorbs of ``per_xorb`` chunks and ``n_files`` files with random hashes.

    File ``i`` is one term over the whole of xorb ``i % n_xorbs``, with a verification entry
    and a sha256 (flags bits 31 and 30).

    Args:
        chunk_sizes: Smallest and largest chunk size (``randint`` bounds).
        plain_every: When set, files whose index is a multiple of it have flags 0 and neither
            verification entry nor sha256.
        prefixes: File index -> bytes the file's stored hash starts with (colliding or all-ones
            truncated keys).
    """
    rnd = random.Random(seed)
    lo, hi = chunk_sizes
    xorbs = []
    for _ in range(n_xorbs):
        chunks, pos = [], 0
        for _ in range(per_xorb):
            size = rnd.randint(lo, hi)
            chunks.append(ChunkEntry(XetHash(rnd.randbytes(32)), pos, size, 0))
            pos += size
        xorbs.append(XorbInfo(XetHash(rnd.randbytes(32)), 0, tuple(chunks), pos, 0))
    files = []
    for i in range(n_files):
        x = xorbs[i % n_xorbs]
        h = rnd.randbytes(32)
        if prefixes and i in prefixes:
            h = prefixes[i] + h[len(prefixes[i]):]
        extras = plain_every is None or i % plain_every != 0
        flags = (FILE_FLAG_VERIFICATION | FILE_FLAG_METADATA_EXT) if extras else 0
        ver = (XetHash(rnd.randbytes(32)),) if extras else ()
        sha = XetHash(rnd.randbytes(32)) if extras else None
        files.append(FileInfo(XetHash(h), flags,
                              (Term(x.hash, 0, x.num_bytes_in_xorb, 0, len(x.chunks)),),
                              ver, sha))
    return files, xorbs


def hashed_inputs(seed: int, n_xorbs: int, n_files: int, *, max_piece: int, max_pieces: int,
                  max_terms: int, sha: bool = True
                  ) -> tuple[list[FileInfo], list[XorbInfo], dict[bytes, list[bytes]]]:
    """Xorbs of random chunks with their real hashes and files cut from them.

    Each xorb holds 1..``max_pieces`` chunks of 1..``max_piece`` random bytes. File ``i`` has
    1..``max_terms`` terms (file 0 may have none: the empty file), each a random chunk range
    of a random xorb, with verification entries; odd files also get the sha256 of their
    content when ``sha``.

    Returns:
        (files, xorbs, the chunk data of each xorb by its 32 stored hash bytes).
    """
    rnd = random.Random(seed)
    xorbs, pieces_of = [], {}
    for _ in range(n_xorbs):
        pieces = [rnd.randbytes(rnd.randint(1, max_piece))
                  for _ in range(rnd.randint(1, max_pieces))]
        chunks, pos = [], 0
        for p in pieces:
            chunks.append(ChunkEntry(XetHash(xh.chunk_hash(p)), pos, len(p), 0))
            pos += len(p)
        h = XetHash(xh.xorb_hash((c.hash, c.size) for c in chunks))
        xorbs.append(XorbInfo(h, 0, tuple(chunks), pos, 0))
        pieces_of[bytes(h)] = pieces
    files = []
    for i in range(n_files):
        terms, ver, pairs, content = [], [], [], b""
        for _ in range(rnd.randint(0 if i == 0 else 1, max_terms)):
            x = rnd.choice(xorbs)
            a = rnd.randrange(len(x.chunks))
            b = rnd.randint(a + 1, len(x.chunks))
            sel = x.chunks[a:b]
            terms.append(Term(x.hash, 0, sum(c.size for c in sel), a, b))
            ver.append(XetHash(xh.verification_hash(c.hash for c in sel)))
            pairs += [(c.hash, c.size) for c in sel]
            content += b"".join(pieces_of[bytes(x.hash)][a:b])
        digest = XetHash(xh.parse_display_hex(hashlib.sha256(content).hexdigest())) \
            if sha and i % 2 else None
        flags = FILE_FLAG_VERIFICATION | (FILE_FLAG_METADATA_EXT if digest is not None else 0)
        files.append(FileInfo(XetHash(xh.file_hash(pairs)), flags, tuple(terms), tuple(ver),
                              digest))
    return files, xorbs, pieces_of
