"""Hugging Face Xet MDB shards (xet-core / hf-xet): files, xorbs, lookups and verification.

Layout: ``schemas/xet_mdb_shard.ksy`` (generated class :class:`XetMdbShard`). This package adds
the meaning (FORMAT_NOTES.md of the shared corpus, sections 1-11):

* hashes are :class:`XetHash` values: the 32 stored bytes, shown in display hex (each 8-byte
  group byte-reversed), comparing equal to their display hex;
* a file is its reconstruction terms (xorb, chunk range), one verification (range) hash per term
  when flag bit 31 is set, and the SHA-256 of its bytes when flag bit 30 is set;
* a xorb is its chunks (hash, offset in the xorb's uncompressed data, size, flags);
* the footer (full on-disk shards only) locates three optional lookup tables and holds the
  HMAC key of keyed (global-dedup) chunk hashes, timestamps and totals.

Every variant reads: session and cache shards with lookup tables, server-stored shards without
them, footer-less upload bodies (also those whose header wrongly announces a footer), xorb-only
shards, global-dedup responses (keyed, no files) and empty files.

Hot paths read the mapped bytes directly: the record sections are walked block by block with
``struct`` (every count checked against the bytes that remain before anything is allocated),
keeping only each block's offset in an int64 array. ``files`` and ``xorbs`` are sequences
whose objects are built on first access: a file keeps its block's records and decodes terms,
verification hashes and sha256 when one is first read; a xorb keeps its chunks as a read-only
numpy view of its records (:attr:`XorbInfo.chunk_records`) and builds the :class:`ChunkEntry`
tuple the first time ``xorb.chunks`` is read: a million-block shard parses without a million
objects. Lookup tables are searched through compact arrays of their keys;
:meth:`MdbShard.find_chunk` without a chunk table searches a numpy index of the xorb section
(sorted truncated hashes, full-hash check). Through ranged requests (a URL) the reader asks
for few, large ranges (see :mod:`._io`). ``engine="kaitai"`` builds the same objects (chunks
included, eagerly) from the generated parser instead; the tests check both agree.

Modules: :mod:`.model` (constants, record dtypes and the value objects), :mod:`.reader`
(:class:`MdbShard`: opening, the section walk, bulk decoding), :mod:`.lookups` (the lookup
tables and the ``file`` / ``xorb`` / ``find_chunk`` lookups, mixed into :class:`MdbShard`),
:mod:`.summary` (``variant``, ``summary``, ``to_dict``, ``sections``, mixed in likewise),
:mod:`.verify` (the checks behind :meth:`MdbShard.verify`) and :mod:`._io` (how bytes are
read from a remote source).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# model's public names, re-exported; reader.py imports most of the same list for its own use.
from .model import (
    BOOKEND,
    CHUNK_FLAG_GLOBAL_DEDUP,
    FILE_FLAG_METADATA_EXT,
    FILE_FLAG_VERIFICATION,
    FOOTER_SIZE,
    FOOTER_VERSION,
    GLOBAL_DEDUP_MODULUS,
    HEADER_SIZE,
    HEADER_VERSION,
    LEGACY_TAGS,
    MDB_TAG,
    NEVER_EXPIRES,
    RECORD_SIZE,
    ChunkEntry,
    ChunkRef,
    FileInfo,
    MdbFooter,
    MdbHeader,
    Term,
    XetHash,
    XorbInfo,
)
from .reader import MdbShard, open_mdb
from .verify import VerifyReport

if TYPE_CHECKING:
    from .model import CHUNK_DTYPE, RECORD_DTYPE


def __getattr__(name: str) -> Any:
    """``CHUNK_DTYPE`` and ``RECORD_DTYPE`` come from :mod:`.model` on first use (making them
    imports numpy, which opening a shard does not need)."""
    if name in ("CHUNK_DTYPE", "RECORD_DTYPE"):
        from . import model

        return getattr(model, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "BOOKEND",
    "CHUNK_DTYPE",
    "CHUNK_FLAG_GLOBAL_DEDUP",
    "FILE_FLAG_METADATA_EXT",
    "FILE_FLAG_VERIFICATION",
    "FOOTER_SIZE",
    "FOOTER_VERSION",
    "GLOBAL_DEDUP_MODULUS",
    "HEADER_SIZE",
    "HEADER_VERSION",
    "LEGACY_TAGS",
    "MDB_TAG",
    "NEVER_EXPIRES",
    "RECORD_DTYPE",
    "RECORD_SIZE",
    "ChunkEntry",
    "ChunkRef",
    "FileInfo",
    "MdbFooter",
    "MdbHeader",
    "MdbShard",
    "Term",
    "VerifyReport",
    "XetHash",
    "XorbInfo",
    "open_mdb",
]
