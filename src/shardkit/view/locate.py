"""``/``: a key looked up with the format's own lookup, and where its value's bytes are.

Every reader parses keys (``parse_key``) and looks them up (``reader[key]``). Where the value
is, in bytes, comes from the reader's own accessors: an SWH slot (``slot_of``), a Neuroglancer
chunk (``locate``), a ZSS-like block tree (``index_block``), an MDB file record (its
``offset``), or else the section whose field path names the key (an Amudai column).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any

from .._layouts import layouts, struct_of
from ..errors import EntryNotFoundError, ShardkitError
from ..sources import ByteSource

_ENTRY = struct_of(layouts.SWH_READ_SHARD__INDEX_ENTRY)  # an SWH index slot: key, offset
SLOT_SIZE = _ENTRY.size
_OBJECT_HEAD = struct_of(layouts.SWH_READ_SHARD__SHARD_OBJECT__HEAD)  # an object's size

__all__ = ["Target", "lookup"]


@dataclass(frozen=True)
class Target:
    """Where a looked-up value is.

    Attributes:
        key: The key as the format prints it.
        start: First byte of the value (or of what holds it: a compressed block).
        end: One past its last byte (``None``: unknown, the innermost node decides).
        path: Field path of the tree node to select (``None``: the innermost at ``start``).
        source: The file (a dataset's shard file), ``None`` for the main file.
        note: What was found.
    """

    key: str
    start: int
    end: int | None
    path: str | None = None
    source: ByteSource | None = None
    note: str = ""


def lookup(reader: Any, text: str) -> Target:
    """Look ``text`` up in ``reader`` and say where its value is.

    Raises:
        EntryNotFoundError: The key is not there (or was deleted).
        ShardkitError: The key is malformed, or the file is corrupt where the lookup went.
    """
    key = reader.parse_key(text.strip())
    shown = reader.format_key(key) if hasattr(reader, "format_key") else text
    if all(hasattr(reader, a) for a in ("slot_of", "num_slots", "header")):
        return _slot(reader, key, shown)
    if hasattr(reader, "store") and hasattr(reader, "kv"):  # a Neuroglancer dataset
        return _dataset(reader, key, shown)
    if hasattr(reader, "locate") and hasattr(reader, "minishard"):  # one Neuroglancer shard
        ref = reader.locate(key)
        if ref is None:
            raise EntryNotFoundError(key, f"chunk {shown} not found")
        return Target(shown, ref.start, ref.end, f"/minishards/{ref.minishard}/chunks/{key}",
                      note=f"chunk {shown}, minishard {ref.minishard}")
    if all(hasattr(reader, a) for a in ("index_block", "frame", "root")):
        return _block_tree(reader, key, shown)
    value = reader[key]  # the format's own lookup (raises EntryNotFoundError)
    offset = getattr(value, "offset", None)
    if isinstance(offset, int):  # a record that knows where it is (an MDB file)
        path = None
        files = getattr(reader, "files", None)
        if files is not None:  # its block's node (not the innermost field at its offset)
            i = bisect.bisect_left(files, offset, key=lambda b: b.offset)
            if i < len(files) and files[i].offset == offset:
                path = f"/file_info/{i}"
        return Target(shown, offset, None, path,
                      note=f"{type(value).__name__} at byte {offset}")
    for s in reader.sections():  # a section named after the key (an Amudai column)
        if f"/{key}/" in f"{s.name}/":
            what = s.note or "its bytes"
            return Target(shown, s.start, s.end, s.name,
                          note=f"found {' '.join(str(shown).split())}: {what}, the first of "
                               "its sections")
    raise ShardkitError(f"{shown} is in the file, but {reader.format_name} does not say where "
                        "its bytes are")


def _slot(reader: Any, key: bytes, shown: str) -> Target:
    slot = reader.slot_of(key)
    at = reader.header.index_position + slot * SLOT_SIZE
    reader[key]  # the format's own verdict: absent, deleted (with its message), or present
    (_, ofs) = _ENTRY.unpack(reader.source.read_range(at, at + SLOT_SIZE))
    head = _OBJECT_HEAD.size
    (size,) = _OBJECT_HEAD.unpack(reader.source.read_range(ofs, ofs + head))
    return Target(shown, ofs, ofs + head + size, f"/index/entries/{slot}/object",
                  note=f"slot {slot}, object of {size} bytes at byte {ofs}")


def _dataset(reader: Any, key: int, shown: str) -> Target:
    for prefix, kv in reader._all_kvs():
        loc = kv.spec.locate(key)
        shard = kv.shard(loc.shard)
        if shard is None:
            continue
        ref = shard.locate(key)
        if ref is None:
            continue
        name = kv.spec.shard_name(loc.shard)
        return Target(shown, ref.start, ref.end,
                      f"{prefix}{name}/minishards/{ref.minishard}/chunks/{key}", shard.source,
                      note=f"chunk {shown} in {prefix}{name}, minishard {ref.minishard}")
    raise EntryNotFoundError(key, f"chunk {shown} not found")


def _block_tree(reader: Any, key: bytes, shown: str) -> Target:
    if key not in reader:
        raise EntryNotFoundError(key, f"not found: {shown}")
    # descend from the root as the reader's search does: the last entry whose key is < key
    # (a run of duplicates may begin in an earlier block), then the blocks after it in order
    v = reader.root
    while True:
        info = reader.frame(v)
        if info.level == 0:
            break
        block = reader.index_block(v)
        if not block.children:
            raise EntryNotFoundError(key, f"not found: {shown}")
        v = block.children[max(bisect.bisect_left(block.keys, key) - 1, 0)]
    for info, body in reader.iter_blocks(v):
        if info.level == 0 and key in reader.records_of(info, body):
            return Target(shown, info.offset, info.offset + info.size, f"/blocks/@{info.voffset}",
                          note=f"record in the level-0 block at voffset {info.voffset}")
    raise EntryNotFoundError(key, f"not found: {shown}")
