"""Write Software Heritage MOSAIC files, and delete objects from them in place.

:class:`MosaicWriter` writes what swh-mosaic's ``MosaicCreator`` writes: the EBML header, the
``Mosaic`` root (its size VINT 8 bytes long, written last), ``ContainerMetaData`` (the counters
and ``EndOfTilesOffset`` as 8-byte integers, written last with the element's CRC-32), then the
objects in ``Tile``\\ s of about ``tile_threshold`` bytes (an object larger than that alone in its
tile), then one ``Index`` per key kind: ``IdxUnrolled`` entries placed at the rank an FMPH-GO
function (:mod:`shardkit.hashing.fmph`, the ``ph`` crate's layout) gives their key, the entry
size and the CRC-protected map.

Streaming: objects go to the file (a hidden temporary name beside the target, renamed into
place when complete) as tiles fill up; what stays in memory is the current tile and, per index
and object, the key and an 8-byte offset (then the index being written).

Keys are the objects' hashes (``sha1``, ``sha1_git`` = git's blob hash, ``sha256``,
``blake2s256``), computed here; the same content given twice is stored once. A caller that
gives its own keys (``add(data, keys=...)``) may give one key to several objects: the index
then lists the key under ``Conflicts`` with every object's offset (``GoToConflicts`` in its
entry), which :meth:`MosaicFile.get_all <shardkit.formats.mosaic.MosaicFile.get_all>` reads.

Fixed-width elements are declared with construct (:data:`UINT8_ELEMENT`, :data:`CRC32_ELEMENT`).

:func:`delete` does what swh-mosaic's ``MosaicUpdater.delete`` does.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np
from construct import Bytes, Const, Int32ul, Int64ub, Struct

from ..errors import EntryNotFoundError, InvalidKeyError, ShardkitError
from ..formats.mosaic import model as m
from ..formats.mosaic.model import KINDS, content_key
from ._atomic import AtomicWriter

__all__ = ["CRC32_ELEMENT", "DEFAULT_TILE_THRESHOLD", "UINT8_ELEMENT", "MosaicWriter",
           "delete", "write_mosaic", "write_mosaic_files"]

#: swh-mosaic's default tile threshold (MOSAIC_DEFAULT_TILE_THRESHOLD).
DEFAULT_TILE_THRESHOLD = 32_000_000

#: An unsigned integer element written on 8 bytes (two-byte ID, size VINT 0x88).
UINT8_ELEMENT = Struct("id" / Bytes(2), "size" / Const(b"\x88"), "value" / Int64ub)
#: A CRC-32 element: ID 0xBF, size 4, the CRC-32 little-endian (its data: mosaic.ksy crc32).
CRC32_ELEMENT = Struct("id" / Const(b"\xbf"), "size" / Const(b"\x84"), "value" / Int32ul)


def vint(value: int, length: int = 0) -> bytes:
    """``value`` as an EBML size VINT (the shortest, or ``length`` bytes)."""
    n = length or 1
    while value >= (1 << (7 * n)) - 1:  # all ones is "unknown size"
        n += 1
    if n > 8 or value >= (1 << (7 * n)) - 1:
        raise ShardkitError(f"{value} does not fit an EBML size of {n} bytes")
    return ((1 << (7 * n)) | value).to_bytes(n, "big")


#: One-byte size VINTs, by size (0 to 126).
_SIZE1 = [bytes([0x80 | n]) for n in range(127)]


def _digest(kind: str) -> Any:
    """A function giving an object's key of ``kind`` (see :func:`content_key`)."""
    import hashlib

    if kind == "sha1_git":
        return lambda data: content_key("sha1_git", data)
    new = hashlib.blake2s if kind == "blake2s256" else getattr(hashlib, kind)
    return lambda data: new(data).digest()


def element(eid: int, data: bytes) -> bytes:
    """A whole element: ID, size VINT, data."""
    return eid.to_bytes((eid.bit_length() + 7) // 8, "big") + vint(len(data)) + data


def uint_element(eid: int, value: int) -> bytes:
    """An unsigned integer element on the fewest bytes (0 is no byte)."""
    return element(eid, value.to_bytes((value.bit_length() + 7) // 8, "big"))


def _crc(data: bytes | bytearray | memoryview, value: int = 0) -> int:
    return m.crc32_le(data, value)


def _master_with_crc(eid: int, parts: Sequence[bytes | bytearray | memoryview]
                     ) -> list[bytes | bytearray | memoryview]:
    """A master element whose first child is the CRC-32 of ``parts``: the pieces to write."""
    crc = 0
    size = 6
    for p in parts:
        crc = _crc(p, crc)
        size += len(p)
    head = eid.to_bytes((eid.bit_length() + 7) // 8, "big") + vint(size)
    return [head, CRC32_ELEMENT.build({"value": crc}), *parts]


def _write_error(path: Path, exc: OSError) -> ShardkitError:
    return ShardkitError(f"cannot write {path}: {exc.strerror or exc}")


class MosaicWriter(AtomicWriter):
    """Builds a MOSAIC file: ``add(data)`` for each object, then ``close()`` (or ``with``).

    Args:
        path: The file to create. It appears only when complete.
        indexes: Key kinds, one index each, in file order (``sha1``, ``sha1_git``,
            ``sha256``, ``blake2s256``).
        zstd_level: Compress each object with zstd at this level (None: stored plain).
        zstd_dict: A zstd dictionary (bytes) for ``zstd.dict`` compression (needs
            ``zstd_level``), stored in ``CompressionData``.
        tile_threshold: Close a tile before it would reach this many bytes (default 32 MB).
        comments: ``Comment`` elements.
        overwrite: Replace an existing file (default: refuse).

    Raises:
        ShardkitError: Bad options, the file exists, the disk is full.
    """

    def __init__(self, path: str | os.PathLike[str], indexes: Sequence[str] = ("sha256",), *,
                 zstd_level: int | None = None, zstd_dict: bytes | None = None,
                 tile_threshold: int | None = None, comments: Iterable[str] = (),
                 overwrite: bool = False) -> None:
        self.path = Path(path)
        self.kinds = [KINDS.get(k) for k in indexes]
        if not indexes or None in self.kinds:
            raise ShardkitError(f"indexes must be some of {', '.join(KINDS)}, not "
                                f"{list(indexes)!r}")
        if len(set(indexes)) != len(indexes):
            raise ShardkitError(f"an index is named twice: {list(indexes)!r}")
        if zstd_dict is not None and zstd_level is None:
            raise ShardkitError("a zstd dictionary needs a zstd level")
        if self.path.exists() and not overwrite:
            raise ShardkitError(f"{self.path} already exists")
        self.indexes = list(indexes)
        self.tile_threshold = DEFAULT_TILE_THRESHOLD if tile_threshold is None \
            else int(tile_threshold)
        if self.tile_threshold < 1:
            raise ShardkitError(f"tile_threshold must be positive, not {tile_threshold}")
        self.comments = [str(c) for c in comments]
        self._compress: Any = None
        method = "none"
        if zstd_level is not None:
            import zstandard

            zd = zstandard.ZstdCompressionDict(bytes(zstd_dict)) if zstd_dict is not None \
                else None
            try:
                self._compress = zstandard.ZstdCompressor(level=int(zstd_level),
                                                          dict_data=zd).compress
            except zstandard.ZstdError as exc:
                raise ShardkitError(f"bad zstd level or dictionary: {exc}") from None
            method = "zstd.dict" if zstd_dict is not None else "zstd"
        self.compression = method
        # what stays in memory: per index the keys and, per object, its offset and size
        self._keys = [bytearray() for _ in self.indexes]
        self._digests = [(store, _digest(k)) for store, k in zip(self._keys, self.indexes,
                                                                  strict=True)]
        self._offsets = array("Q")
        self._sizes = array("Q")
        self._tile_starts = array("Q")
        self._explicit = False
        self._tile = bytearray()
        meta = [uint_element(m.EBML_VERSION, 1), uint_element(m.EBML_READ_VERSION, 1),
                uint_element(m.EBML_MAX_ID_LENGTH, 4), uint_element(m.EBML_MAX_SIZE_LENGTH, 8),
                element(m.DOC_TYPE, b"mosaic"), uint_element(m.DOC_TYPE_VERSION, 1),
                uint_element(m.DOC_TYPE_READ_VERSION, 1)]
        header = element(m.EBML_ID, b"".join(meta))
        self._root_size_at = len(header) + 4
        # ContainerMetaData: CRC-32 and the three counters written again by close()
        tail = [element(m.COMPRESSION_METHOD, method.encode())]
        if zstd_dict is not None:
            tail.append(element(m.COMPRESSION_DATA, bytes(zstd_dict)))
        tail += [element(m.COMMENT, c.encode("utf-8")) for c in self.comments]
        self._meta_tail = b"".join(tail)
        self._meta_start = self._root_size_at + 8
        body = self._counters(0, 0, 0)
        meta_el = b"".join(_master_with_crc(m.CONTAINER_META_DATA, [body, self._meta_tail]))
        self._counters_at = self._meta_start + len(meta_el) - len(self._meta_tail) - len(body)
        try:
            self._fh = self._open()
            self._fh.write(header + (m.MOSAIC).to_bytes(4, "big") + vint(0, 8) + meta_el)
        except OSError as exc:
            self.abort()
            raise _write_error(self.path, exc) from exc
        self._pos = self._meta_start + len(meta_el)  # where the next tile starts

    @staticmethod
    def _counters(count: int, total: int, eot: int) -> bytes:
        return b"".join(UINT8_ELEMENT.build({"id": eid.to_bytes(2, "big"), "value": v})
                        for eid, v in ((m.OBJECTS_COUNTER, count),
                                       (m.OBJECTS_TOTAL_SIZE, total),
                                       (m.END_OF_TILES_OFFSET, eot)))

    def __len__(self) -> int:
        """Objects added so far."""
        return len(self._offsets)

    def add(self, data: bytes | bytearray | memoryview, keys: Sequence[bytes] | None = None
            ) -> None:
        """Add one object; its keys are its hashes, or ``keys`` (one per index, in order)."""
        if self._done:
            raise ShardkitError("the writer is closed")
        if type(data) is not bytes:
            data = bytes(data)
        if keys is None:
            for store, digest in self._digests:
                store += digest(data)
        else:
            self._add_keys(keys)
        stored = self._compress(data) if self._compress is not None else data
        n = len(stored)
        tile = self._tile
        if tile and len(tile) + n + 10 >= self.tile_threshold:
            self._flush_tile()
            tile = self._tile
        self._offsets.append(len(tile))  # relative to the tile's data for now
        self._sizes.append(len(data))
        tile += b"\xf0" + (_SIZE1[n] if n < 127 else vint(n))
        tile += stored

    def _add_keys(self, keys: Sequence[bytes]) -> None:
        self._explicit = True
        if len(keys) != len(self.indexes):
            raise InvalidKeyError(f"{len(keys)} keys for {len(self.indexes)} indexes")
        keys = [bytes(k) for k in keys]
        for kind, key in zip(self.kinds, keys, strict=True):
            assert kind is not None
            if len(key) != kind.key_len:
                raise InvalidKeyError(f"{kind.name} keys are {kind.key_len} bytes, not "
                                      f"{len(key)}")
        for store, key in zip(self._keys, keys, strict=True):
            store += key

    def _flush_tile(self) -> None:
        if not self._tile:
            return
        parts = _master_with_crc(m.TILE, [self._tile])
        start = self._pos
        first = start + len(parts[0]) + len(parts[1])
        # the objects of this tile are the last ones added: make their offsets absolute
        n = len(self._offsets)
        for i in range(self._absolute, n):
            self._offsets[i] += first
        self._absolute = n
        self._tile_starts.append(start)
        try:
            for p in parts:
                self._fh.write(p)
        except OSError as exc:
            self.abort()
            raise _write_error(self.path, exc) from exc
        self._pos += sum(len(p) for p in parts)
        self._tile = bytearray()

    #: Objects whose offsets are absolute (those of the tiles written).
    _absolute = 0

    # -- closing ------------------------------------------------------------------------------

    def _dedupe(self) -> np.ndarray:
        """Objects kept in the indexes: with computed keys, a second copy of some content is
        voided in its tile (as a deletion would) and left out."""
        n = len(self._offsets)
        keep = np.ones(n, bool)
        if self._explicit or n < 2:
            return keep
        k0 = self.kinds[0]
        assert k0 is not None
        keys = np.frombuffer(bytes(self._keys[0]), np.uint8).reshape(n, k0.key_len)
        order = np.lexsort(keys.T[::-1])
        sk = keys[order]
        same = np.all(sk[1:] == sk[:-1], axis=1)
        if not same.any():
            return keep
        later = order[1:][same]  # lexsort is stable: the first copy stays
        keep[later] = False
        tiles = {self._void_object(int(self._offsets[i])) for i in sorted(later.tolist())}
        for t in sorted(tiles):
            self._rewrite_crc(t)
        return keep

    def _pread(self, start: int, n: int) -> bytes:
        """Bytes written so far (the temporary file is opened for writing only)."""
        self._fh.flush()
        fd = os.open(self._fh.name, os.O_RDONLY)
        try:
            return os.pread(fd, n, start)
        finally:
            os.close(fd)

    def _void_object(self, offset: int) -> int:
        """Overwrite the Object at ``offset`` with a Void of the same length; return its
        tile's offset (whose CRC-32 is then to be written again)."""
        fh = self._fh
        el = m.element_at(self._pread(offset, 9), 0, offset, 1 << 62)
        fh.seek(offset)
        fh.write(b"\xec")
        fh.seek(el.data_start)
        zero = bytes(min(el.size, 1 << 20))
        left = el.size
        while left:
            fh.write(zero[:min(left, len(zero))])
            left -= min(left, len(zero))
        starts = self._tile_starts
        t = int(np.searchsorted(np.frombuffer(starts.tobytes(), np.uint64), offset,
                                side="right")) - 1
        return int(starts[t])

    def _rewrite_crc(self, start: int) -> None:
        fh = self._fh
        el = m.element_at(self._pread(start, 16), 0, start, 1 << 62)
        pos, end, crc = el.data_start + 6, el.end, 0
        while pos < end:
            chunk = self._pread(pos, min(end - pos, 1 << 20))
            if not chunk:
                raise ShardkitError(f"short read of {fh.name} at byte {pos}")
            crc = _crc(chunk, crc)
            pos += len(chunk)
        fh.seek(el.data_start)
        fh.write(CRC32_ELEMENT.build({"value": crc}))
        fh.seek(0, os.SEEK_END)

    def _finish(self) -> None:
        """Write the last tile, the indexes, the counters and the CRC-32s, and move the file
        into place."""
        self._flush_tile()
        fh = self._fh
        self._digests = []  # they hold the key stores, let go one by one below
        eot = self._pos
        keep = self._dedupe()
        every = bool(keep.all())
        offsets = np.frombuffer(self._offsets, np.uint64) if len(self._offsets) \
            else np.zeros(0, np.uint64)
        if not every:
            offsets = offsets[keep]
        count = int(keep.sum())
        total = int(np.frombuffer(self._sizes.tobytes(), np.uint64)[keep].sum()) \
            if count else 0
        off_len = max(2, len(vint(eot)))
        fh.seek(0, os.SEEK_END)
        for i, kind in enumerate(self.kinds):
            assert kind is not None
            store, self._keys[i] = self._keys[i], bytearray()  # let each go once written
            n = len(store) // kind.key_len
            keys = np.frombuffer(store, np.uint8).reshape(n, kind.key_len)
            if not every:
                keys = keys[keep]
            for part in self._index(kind, keys, offsets, off_len):
                fh.write(part)
            del keys, store
        end = fh.tell()
        fh.seek(self._root_size_at)
        fh.write(vint(end - self._meta_start, 8))
        fh.seek(self._counters_at)
        fh.write(self._counters(count, total, eot))
        self._rewrite_crc(self._meta_start)
        self._commit()

    def _index(self, kind: m.IndexKind, keys: np.ndarray, offsets: np.ndarray,
               off_len: int) -> list[bytes | bytearray | memoryview]:
        """The Index element of ``kind``: the pieces to write."""
        from ..hashing import fmph

        klen = kind.key_len
        # unique keys; a key of several objects (explicit keys only) becomes a Conflict
        if len(keys):
            order = np.lexsort(keys.T[::-1])
            sk = keys[order]
            first = np.ones(len(sk), bool)
            first[1:] = np.any(sk[1:] != sk[:-1], axis=1)
            starts = np.nonzero(first)[0]
            ukeys = np.ascontiguousarray(sk[starts])
            counts = np.diff(np.append(starts, len(sk)))
        else:
            order = np.zeros(0, np.int64)
            sk = ukeys = np.zeros((0, klen), np.uint8)
            starts = counts = np.zeros(0, np.int64)
        conflict_order = order if len(keys) and not bool((counts == 1).all()) else None
        try:
            func, ranks = fmph.build_with_ranks(ukeys)
        except ValueError as exc:  # pragma: no cover - the keys are distinct
            raise ShardkitError(f"cannot build the {kind.name} map: {exc}") from None
        entry = 4 + klen + off_len
        # the entries, written in place at their ranks: table[ranks[u]] is unique key u's
        table = np.empty((len(ukeys), entry), np.uint8)
        table[:, 0] = m.KEY
        table[:, 1] = 0x80 | klen
        table[ranks, 2:2 + klen] = ukeys
        del sk
        single = counts == 1
        first_off = offsets[order[starts]] if len(starts) else np.zeros(0, np.uint64)
        be = first_off.astype(">u8").view(np.uint8).reshape(-1, 8)
        table[:, 2 + klen] = m.OFFSET
        table[:, 3 + klen] = 0x80 | off_len
        table[ranks, 4 + klen:] = be[:, 8 - off_len:]
        del be, first_off, order
        conflicts = []
        for u in np.nonzero(~single)[0].tolist():
            row = int(ranks[u])
            table[row, 2 + klen] = m.GO_TO_CONFLICTS
            table[row, 3 + klen] = 0x80
            table[row, 4 + klen] = m.VOID
            table[row, 5 + klen] = 0x80 | (off_len - 2)
            table[row, 6 + klen:] = 0
            s = int(starts[u])
            assert conflict_order is not None  # a key with several offsets: conflicts
            offs = sorted(int(o) for o in offsets[conflict_order[s:s + int(counts[u])]])
            conflicts.append(element(m.CONFLICT, element(m.CONFLICTING_KEY, bytes(ukeys[u]))
                                     + b"".join(uint_element(m.CONFLICTING_OFFSET, o)
                                                for o in offs)))
        unrolled = table.reshape(-1).data
        mp = element(m.MAP, func)
        parts: list[bytes | bytearray | memoryview] = [
            element(m.IDX_DESCRIPTION, kind.description.encode()),
            m.IDX_UNROLLED.to_bytes(2, "big") + vint(len(unrolled)),
            unrolled,
            uint_element(m.IDX_UNROLLED_ENTRY_SIZE, entry),
            b"".join(_master_with_crc(m.MAP_CONTAINER, [mp])),
        ]
        if conflicts:
            parts.append(element(m.CONFLICTS, b"".join(conflicts)))
        return _master_with_crc(m.INDEX, parts)



def write_mosaic(path: str | os.PathLike[str], objects: Iterable[bytes],
                 indexes: Sequence[str] = ("sha256",), zstd_level: int | None = None,
                 zstd_dict: bytes | None = None, tile_threshold: int | None = None,
                 comments: Iterable[str] = (), *, overwrite: bool = False) -> Path:
    """Write a MOSAIC file of ``objects`` (any iterable of bytes), keyed by their hashes in
    each of ``indexes``; returns its path. See :class:`MosaicWriter` for the options."""
    with MosaicWriter(path, indexes, zstd_level=zstd_level, zstd_dict=zstd_dict,
                      tile_threshold=tile_threshold, comments=comments,
                      overwrite=overwrite) as w:
        for obj in objects:
            w.add(obj)
    return Path(path)


def write_mosaic_files(path: str | os.PathLike[str], files: Iterable[str | os.PathLike[str]],
                       indexes: Sequence[str] = ("sha256",), **options: Any) -> int:
    """Write a MOSAIC file holding each file's content as one object; returns the number of
    files read (the same content twice is stored once)."""
    n = 0

    def contents() -> Iterable[bytes]:
        nonlocal n
        for f in files:
            try:
                data = Path(f).read_bytes()
            except OSError as exc:
                raise ShardkitError(f"cannot read {f}: {exc.strerror or exc}") from exc
            n += 1
            yield data

    write_mosaic(path, contents(), indexes, **options)
    return n


def delete(path: str | os.PathLike[str], keys: Iterable[bytes | str],
           index: str | None = None) -> list[bytes]:
    """Delete objects in place, as swh-mosaic's ``MosaicUpdater.delete`` does.

    For each key (of ``index``, or of the index its length picks): the Object and its entry
    in every index become Void elements of the same length, ObjectsCounter and
    ObjectsTotalSize are decremented, and the CRC-32 of the tile, of every index and of
    ContainerMetaData are written again. The FMPH-GO maps are unchanged (a deleted key's rank
    now holds a Void).

    Returns:
        The keys deleted (``keys`` in order, as bytes).

    Raises:
        EntryNotFoundError: A key is absent; nothing was changed.
    """
    from ..formats.mosaic.model import normalize_key

    wanted = [normalize_key(k) for k in keys]
    plan, entries, tiles, meta, count, total, index_starts = _delete_plan(path, wanted, index)
    with open(path, "r+b") as fh:
        def void(at: int) -> None:
            # Object, Key and Offset have 1-byte IDs, as Void has: the ID is replaced, the
            # size kept and the data zeroed, so the element keeps its length
            fh.seek(at)
            el = m.element_at(fh.read(12), 0, at, 1 << 62)
            fh.seek(at)
            fh.write(b"\xec")
            fh.seek(el.data_start)
            left = el.size
            while left:
                step = min(left, 1 << 20)
                fh.write(bytes(step))
                left -= step

        for at in entries:
            fh.seek(at)
            head = fh.read(64)
            pos = at
            while pos < at + 64:
                el = m.element_at(head, pos - at, at, 1 << 62)
                if el.id in (m.KEY, m.OFFSET):
                    void(pos)
                pos = el.end
                if el.id == m.OFFSET:
                    break
        for o, _ in plan:
            void(o)
        arr = np.array(tiles, np.uint64)
        for t in sorted({int(arr[int(np.searchsorted(arr, o, side="right")) - 1])
                         for o, _ in plan}):
            _rewrite_crc(fh, t)
        for s in index_starts:
            _rewrite_crc(fh, s)
        _write_counters(fh, meta, count, total)
    return wanted


def _delete_plan(path: str | os.PathLike[str], wanted: list[bytes], index: str | None
                 ) -> tuple[list[tuple[int, int]], list[int], list[int], Any, int, int,
                            list[int]]:
    """What :func:`delete` changes, read before anything is written: the objects (offset,
    size), the index entries to void, the tile starts, the metadata, its counters after, and
    the starts of the indexes touched. A key absent or of several objects raises here."""
    from ..formats.mosaic import MosaicFile
    from ..sources import FileSource

    with MosaicFile(FileSource(path)) as r:
        plan: list[tuple[int, int]] = []  # (object offset, object size)
        entries: list[int] = []  # entry offsets to void
        planned: set[int] = set()
        touched: set[int] = set()
        for key in wanted:
            found = r._locate(key, index)
            if found is None:
                raise EntryNotFoundError(key, f"key not found: {key.hex()}")
            _, offs = found
            if len(offs) > 1:
                raise ShardkitError(f"{key.hex()} is a key of {len(offs)} objects "
                                    "(Conflicts): deleting them is not supported")
            o = offs[0]
            if o in planned:
                continue
            data = r.decoder.decode(r._object(o), o)
            planned.add(o)
            plan.append((o, len(data)))
            for idx in r.indexes:
                if idx.kind is None:
                    continue
                touched.add(idx.start)
                entries.append(_entry_of(r, idx, data, o))
        tiles = _tile_starts(r)
        meta = r.meta
        count = meta.objects_counter - len(plan)
        total = meta.objects_total_size - sum(s for _, s in plan)
        index_starts = sorted(touched)
    return plan, entries, tiles, meta, count, total, index_starts


def _entry_of(r: Any, idx: Any, data: bytes, offset: int) -> int:
    """Offset of the entry of ``idx`` pointing at the Object at ``offset`` (its key is the
    object's hash; a scan of the index when it is not)."""
    key = content_key(idx.kind, data)
    rank = r.function(idx).get(key)
    if rank is not None and rank < idx.num_entries:
        found = r._entry(idx, rank)
        if found is not None and offset in found[1]:
            return int(idx.unrolled_start + rank * idx.entry_size)
    for rank, _, offs in r.iter_entries(idx.kind):
        if offset in offs:
            return int(idx.unrolled_start + rank * idx.entry_size)
    raise ShardkitError(f"no {idx.kind} entry points at the Object at byte {offset}")


def _tile_starts(r: Any) -> list[int]:
    out = []
    pos = r.meta.meta_end
    while pos < r.meta.end_of_tiles_offset:
        el = m.element_at(r.source.read_range(pos, min(r.source.size, pos + 12)), 0, pos,
                          r.source.size)
        if el.id == m.TILE:
            out.append(pos)
        pos = el.end
    return out


def _rewrite_crc(fh: IO[bytes], start: int) -> None:
    fh.seek(start)
    head = fh.read(16)
    el = m.element_at(head, 0, start, 1 << 62)
    fh.seek(el.data_start + 6)
    crc, left = 0, el.size - 6
    while left:
        chunk = fh.read(min(left, 1 << 20))
        if not chunk:
            raise ShardkitError(f"short read at byte {fh.tell()}")
        crc = _crc(chunk, crc)
        left -= len(chunk)
    fh.seek(el.data_start)
    fh.write(CRC32_ELEMENT.build({"value": crc}))


def _write_counters(fh: IO[bytes], meta: Any, count: int, total: int) -> None:
    fh.seek(meta.meta_start)
    buf = fh.read(meta.meta_end - meta.meta_start)
    data_start = m.element_at(buf, 0, meta.meta_start).data_start
    for el in m.children(buf, meta.meta_start, data_start, meta.meta_end):
        value = {m.OBJECTS_COUNTER: count, m.OBJECTS_TOTAL_SIZE: total}.get(el.id)
        if value is not None:
            fh.seek(el.data_start)
            fh.write(value.to_bytes(el.size, "big"))
    _rewrite_crc(fh, meta.meta_start)
