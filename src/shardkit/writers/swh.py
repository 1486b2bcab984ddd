"""Write, delete from and truncate Software Heritage read shards.

:class:`SwhShardWriter` streams objects to disk as they come (only the 40 bytes of key and
offset per object stay in memory), then builds the CHD_PH function with shardkit's own
builder (:mod:`shardkit.hashing.cmph_build`, the reference's parameters), writes the index
and the cmph dump, the header last, and renames the file into place: a failed or interrupted
build never leaves a file under the final name.

Index initialisation: ``index_init="tombstones"`` (the default) writes what swh-shard >= 2
writes, every unused slot a tombstone (zero key, offset 2**64-1); ``"zeros"`` writes what
swh.perfecthash <= 1.3 wrote (unused slots all zeros). Both references read both.

Records are declared with construct (:data:`HEADER`, :data:`INDEX_ENTRY`,
:data:`OBJECT_SIZE`); the hot per-object path packs the size with the ``struct`` format of
that declaration and the index is laid out as a numpy array of the same 40-byte record.

:func:`delete` and :func:`truncate` change a shard in place, as ``swh-shard delete`` and
``swh-shard truncate`` do.
"""

from __future__ import annotations

import errno
import hashlib
import os
import struct
from array import array
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

import numpy as np
from construct import Bytes, Const, Int64ub, Padding, Struct

from ..errors import EntryNotFoundError, ShardkitError
from ..formats.swh import (
    HEADER_END,
    INDEX_DTYPE,
    KEY_LEN,
    SLOT_SIZE,
    TOMBSTONE,
    SwhShard,
    normalize_key,
)
from ..formats.swh.verify import first_nonzero
from ..hashing.cmph_build import BuildError, build_chd_ph
from ..sources import FileSource
from ._atomic import AtomicWriter

__all__ = ["HEADER", "INDEX_ENTRY", "OBJECT_SIZE", "KeysNotFoundError", "SwhShardWriter",
           "delete", "truncate", "write_swh", "write_swh_files"]

OBJECTS_POSITION = 512  # SHARD_OFFSET_HEADER
#: magic, padding to 32, then the seven big-endian header integers (shard.h shard_header_t)
HEADER = Struct(
    "magic" / Const(b"SWHShard\0"),
    Padding(32 - 9),
    "version" / Int64ub,
    "objects_count" / Int64ub,
    "objects_position" / Int64ub,
    "objects_size" / Int64ub,
    "index_position" / Int64ub,
    "index_size" / Int64ub,
    "hash_position" / Int64ub,
)
#: one index slot (shard.h shard_index_t, offset big-endian)
INDEX_ENTRY = Struct("key" / Bytes(KEY_LEN), "object_offset" / Int64ub)
#: the size field before each object's bytes
OBJECT_SIZE = Int64ub
_SIZE = struct.Struct(OBJECT_SIZE.fmtstr)
assert HEADER.sizeof() == HEADER_END and INDEX_ENTRY.sizeof() == SLOT_SIZE == INDEX_DTYPE.itemsize

IndexInit = Literal["tombstones", "zeros"]
_FLUSH = 1 << 20  # objects are written to the file in chunks of about this size


def _write_error(path: Path, exc: OSError) -> ShardkitError:
    what = "the disk is full" if exc.errno in (errno.ENOSPC, errno.EDQUOT) else (
        exc.strerror or str(exc))
    return ShardkitError(f"cannot write {path}: {what}")


def _as_bytes(value: object) -> memoryview:
    """A value's bytes as a flat memoryview of unsigned bytes (its ``len`` is ``nbytes``).

    Raises:
        ShardkitError: ``value`` is not a bytes-like object (a ``str``, an ``int``...).
    """
    try:
        view = memoryview(value)  # type: ignore[arg-type]  # any object; a TypeError is caught
    except TypeError:
        raise ShardkitError(f"SWH values are bytes-like objects, not "
                            f"{type(value).__name__}") from None
    if not view.c_contiguous:
        view = memoryview(view.tobytes())
    return view.cast("B") if view.format != "B" or view.ndim != 1 else view


class SwhShardWriter(AtomicWriter):
    """Builds a shard: ``write(key, value)`` for each object, then ``close()`` (or ``with``).

    Args:
        path: The shard to create. It appears only when complete.
        index_init: ``"tombstones"`` (swh-shard >= 2, default) or ``"zeros"``
            (swh.perfecthash <= 1.3): what unused index slots hold.
        overwrite: Replace an existing file (default: refuse).
        seed: First Jenkins seed to try (default: reproducible seeds).

    Raises:
        ShardkitError: The file exists, a key is duplicated or malformed, the disk is full.
    """

    def __init__(self, path: str | os.PathLike[str], *, index_init: IndexInit = "tombstones",
                 overwrite: bool = False, seed: int | None = None) -> None:
        if index_init not in ("tombstones", "zeros"):
            raise ShardkitError(f"index_init must be 'tombstones' or 'zeros', not {index_init!r}")
        self.path = Path(path)
        if self.path.exists() and not overwrite:
            raise ShardkitError(f"{self.path} already exists")
        self.index_init = index_init
        self.seed = seed
        # a hidden temporary file beside the target, renamed over it by close() (abort() and
        # every failure remove it): the final name only ever holds a complete shard
        try:
            self._fh = self._open()
            self._fh.write(bytes(OBJECTS_POSITION))
        except OSError as exc:
            self.abort()
            raise _write_error(self.path, exc) from exc
        self._keys = bytearray()
        self._buf = bytearray()  # objects not yet written (flushed every _FLUSH bytes)
        self._offsets = array("Q")
        self._pos = OBJECTS_POSITION

    def __len__(self) -> int:
        return len(self._offsets)

    def write(self, key: bytes | str, value: bytes | bytearray | memoryview) -> None:
        """Append one object (key: 32 bytes or 64 hex characters; value: any bytes-like object).

        Raises:
            InvalidKeyError: A malformed key.
            ShardkitError: The value is not bytes-like, or the shard is closed. Nothing is
                written then.
        """
        if self._done:
            raise ShardkitError("the shard is already closed")
        if type(key) is not bytes or len(key) != KEY_LEN:
            key = normalize_key(key)
        if type(value) is not bytes:
            value = _as_bytes(value)
        size = len(value)
        buf = self._buf
        buf += _SIZE.pack(size)
        buf += value
        self._keys += key
        self._offsets.append(self._pos)
        self._pos += 8 + size
        if len(buf) >= _FLUSH:
            self._flush()

    def _flush(self) -> None:
        try:
            self._fh.write(self._buf)
        except OSError as exc:
            self.abort()
            raise _write_error(self.path, exc) from exc
        self._buf.clear()

    def add_file(self, path: str | os.PathLike[str]) -> bytes:
        """Append a file's content under its sha256 (as ``swh-shard create`` does)."""
        data = Path(path).read_bytes()
        key = hashlib.sha256(data).digest()
        self.write(key, data)
        return key

    def _finish(self) -> None:
        """Build the hash function, write index, dump and header, and move the file in place."""
        self._flush()
        count = len(self._offsets)
        keys = np.frombuffer(self._keys, dtype=np.uint8).reshape(count, KEY_LEN)
        try:  # duplicate keys are found by the builder (equal keys hash alike)
            built = build_chd_ph(keys, seed=self.seed)
        except BuildError as exc:
            if str(exc).startswith("duplicate key"):
                raise ShardkitError(str(exc)) from exc
            raise ShardkitError(f"cannot build the hash function: {exc}") from exc
        # which object goes to each slot (-1: unused), then the index in slices of 64k slots
        small = np.int32 if count < 2**31 else np.int64  # half the memory for most shards
        item_at: np.ndarray = np.full(built.n, -1, dtype=small)
        item_at[built.slots] = np.arange(count, dtype=small)
        offsets = np.frombuffer(self._offsets, dtype=np.uint64)
        objects_size = self._pos - OBJECTS_POSITION
        index_pos = self._pos
        index_size = built.n * SLOT_SIZE
        hash_pos = index_pos + index_size
        header = HEADER.build(dict(version=1, objects_count=count,
                                   objects_position=OBJECTS_POSITION, objects_size=objects_size,
                                   index_position=index_pos, index_size=index_size,
                                   hash_position=hash_pos))
        unused = TOMBSTONE if self.index_init == "tombstones" else 0
        try:
            for lo in range(0, built.n, 1 << 16):
                which = item_at[lo : lo + (1 << 16)]
                part = np.zeros(which.size, dtype=INDEX_DTYPE)
                live = which >= 0
                part["ofs"] = unused
                part["key"][live] = keys[which[live]].view("V32").ravel()
                part["ofs"][live] = offsets[which[live]]
                part.tofile(self._fh)
            self._fh.write(built.dump)
            self._fh.seek(0)
            self._fh.write(header)
            self._commit()  # flush, fsync, close, rename into place
        except OSError as exc:
            raise _write_error(self.path, exc) from exc


def write_swh(path: str | os.PathLike[str], items: Iterable[tuple[bytes | str, bytes]], *,
              index_init: IndexInit = "tombstones", overwrite: bool = False) -> Path:
    """Write a shard from (key, value) pairs; returns its path."""
    with SwhShardWriter(path, index_init=index_init, overwrite=overwrite) as w:
        for key, value in items:
            w.write(key, value)
    return Path(path)


def write_swh_files(path: str | os.PathLike[str], files: Iterable[str | os.PathLike[str]], *,
                    index_init: IndexInit = "tombstones", overwrite: bool = False
                    ) -> dict[bytes, str]:
    """Write a shard of files keyed by the sha256 of their content (duplicates stored once).

    Returns:
        key -> the file it was read from.
    """
    added: dict[bytes, str] = {}
    with SwhShardWriter(path, index_init=index_init, overwrite=overwrite) as w:
        for f in files:
            data = Path(f).read_bytes()
            key = hashlib.sha256(data).digest()
            if key in added:
                continue
            w.write(key, data)
            added[key] = os.fspath(f)
    return added


class KeysNotFoundError(EntryNotFoundError):
    """Keys to delete that are not in the shard; nothing was deleted.

    Attributes:
        missing: Every such key (32 bytes each), in the order given; ``key`` is the first.
    """

    def __init__(self, missing: list[bytes]) -> None:
        self.missing = list(missing)
        first = missing[0].hex()
        super().__init__(missing[0], f"key not found: {first} (nothing deleted)"
                         if len(missing) == 1 else f"{len(missing)} keys not found, the first "
                         f"{first} (nothing deleted)")


def _plan_delete(path: Path, wanted: list[bytes], strict: bool
                 ) -> tuple[list[tuple[bytes, int, int, int]], dict[str, str]]:
    """What :func:`delete` changes: (key, entry position, object offset, size) per object to
    delete, and the status of the keys that need nothing.

    Raises:
        KeysNotFoundError: Keys that are not in the shard (every one of them).
    """
    plan: list[tuple[bytes, int, int, int]] = []
    status: dict[str, str] = {}
    missing: list[bytes] = []
    with SwhShard(FileSource(path)) as shard:
        certain = shard._tombstones_are_deletions()
        for key in wanted:
            slot = shard.slot_of(key)
            entry = shard.header.index_position + slot * SLOT_SIZE
            stored, ofs = shard._entry(slot)
            if ofs == TOMBSTONE:
                # with swh-shard >= 2 an unused slot is a tombstone too
                if certain:
                    status[key.hex()] = "already deleted"
                elif strict:
                    missing.append(key)
                else:
                    status[key.hex()] = "deleted or absent"
                continue
            if stored != key or ofs == 0:
                missing.append(key)
                continue
            plan.append((key, entry, ofs, shard._object_size(ofs, slot)))
    if missing:
        raise KeysNotFoundError(missing)
    return plan, status


def delete(path: str | os.PathLike[str], keys: Iterable[bytes | str], *,
           strict: bool = False) -> dict[str, str]:
    """Delete objects in place, as swh-shard does: zero the object, tombstone its slot.

    Every key is checked first: if one is absent, nothing is changed and
    :class:`KeysNotFoundError` (an :class:`EntryNotFoundError`) is raised, naming every absent
    key. Deleting an already deleted key does nothing.

    A key whose slot holds a tombstone is "already deleted" when the header tells tombstones
    can only be deletions (no unused slot, or a zero-initialised index). Otherwise (swh-shard
    >= 2 writes every unused slot as a tombstone) it may also be a key never written: it is
    ``"deleted or absent"``, or with ``strict`` not in the shard, as for ``swh-shard delete``
    (whose lookup raises ``KeyError`` for it).

    Args:
        path: The shard, changed in place.
        keys: 32-byte keys or 64 hex characters.
        strict: Count a key on a tombstone that may be an unused slot as absent.

    Returns:
        hex key -> ``"deleted"``, ``"already deleted"``, or ``"deleted or absent"``.

    Raises:
        KeysNotFoundError: Keys not in the shard (nothing was changed).
        ShardkitError: The file cannot be written (read-only, permissions).
    """
    path = Path(path)
    plan, status = _plan_delete(path, [normalize_key(k) for k in keys], strict)
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError as exc:
        raise ShardkitError(f"cannot delete from {path}: {exc.strerror or exc}") from exc
    try:
        for key, entry, ofs, size in plan:
            os.pwrite(fd, bytes(8 + size), ofs)
            os.pwrite(fd, INDEX_ENTRY.build(dict(key=bytes(KEY_LEN), object_offset=TOMBSTONE)),
                      entry)
            status[key.hex()] = "deleted"
        os.fsync(fd)
    except OSError as exc:
        raise _write_error(path, exc) from exc
    finally:
        os.close(fd)
    return status


def truncate(path: str | os.PathLike[str]) -> tuple[int, int]:
    """Cut a pre-allocated shard to its content (the end of the cmph dump).

    Refuses when the bytes after the dump are not all zeros (they would be lost).

    Returns:
        (size before, size after).
    """
    path = Path(path)
    with SwhShard(FileSource(path)) as shard:
        end = shard.content_end
        size = shard.source.size
        if first_nonzero(shard.source.read_range, end, size) is not None:
            raise ShardkitError(f"{path}: bytes after the hash function (from {end}) are "
                                "not zeros; not truncating")
    if size > end:
        try:
            os.truncate(path, end)
        except OSError as exc:
            raise ShardkitError(f"cannot truncate {path}: {exc.strerror or exc}") from exc
    return size, end
