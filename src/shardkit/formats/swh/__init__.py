"""Software Heritage read shards (``swh.perfecthash``): lookup, iteration and verification.

Layout: ``schemas/swh_read_shard.ksy`` (generated class :class:`SwhReadShard`). This module adds
the meaning: the cmph CHD_PH function maps a 32-byte key to its index slot; a slot holds a live
entry (key, offset of the object) or a zero key with offset 0 ("empty") or 2**64-1
("tombstone"). What a tombstone means depends on the writer generation, so it is decided from
the header, never from the slot alone:

* swh.perfecthash (<= 1.3) zero-fills the index: unused slots of the function are empty, a
  tombstone is a deleted object;
* swh-shard (>= 2.0) initialises every slot as a tombstone before filling the live ones, so
  unused slots and deleted objects look the same.

Either way ``objects_count`` (never decremented by deletions) gives the split: deleted =
``objects_count - live``, unused = ``slots - objects_count``. ``Shard.delete`` also zeroes the
object's size and data. Deleted keys cannot be read back from the file, so
:meth:`SwhShard.deleted_keys` tells which *candidate* keys land on a tombstone. A file may be
pre-allocated: zeros after the cmph dump, up to the end of the file.

Hot paths (lookups, the index scan) read the mapped bytes directly with ``struct``/numpy; the
tests check them equal to the Kaitai path.
"""

from typing import Any

# model's public names, re-exported; reader.py imports most of the same list for its own use.
from .model import (
    HEADER_END,
    KEY_LEN,
    MAGIC,
    OBJECT_READAHEAD,
    REMOTE_DUMP_ONE_READ,
    SLOT_SIZE,
    SUMMARY_SCAN_LIMIT,
    TOMBSTONE,
    VERIFY_BLOCK,
    SwhCounts,
    SwhEntry,
    SwhHeader,
    Tombstone,
    normalize_key,
)
from .reader import SwhShard

__all__ = ["HEADER_END", "INDEX_DTYPE", "KEY_LEN", "MAGIC", "OBJECT_READAHEAD",
           "REMOTE_DUMP_ONE_READ", "SLOT_SIZE", "SUMMARY_SCAN_LIMIT", "TOMBSTONE", "VERIFY_BLOCK",
           "SwhCounts", "SwhEntry", "SwhHeader", "SwhShard", "Tombstone", "normalize_key"]


def __getattr__(name: str) -> Any:
    """``INDEX_DTYPE`` from :mod:`.model`, on first use (it needs numpy)."""
    if name == "INDEX_DTYPE":
        from . import model

        return model.INDEX_DTYPE
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
