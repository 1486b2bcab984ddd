"""The MOSAIC reader (see :mod:`shardkit.formats.mosaic`)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from typing import Any

# (the same names as swh/reader.py imports: both readers raise the shared error classes)
from ..._accel import accelerator
from ...errors import (
    BadMagicError,
    EntryNotFoundError,
    InvalidKeyError,
    LayoutError,
    Problem,
    ShardkitError,
    TruncatedError,
    UnsupportedVersionError,
)
from ...sources import ByteSource, read_ranges
from ..base import Reader
from . import model as m
from .describe import MosaicDescription
from .model import (
    HEAD_READ,
    INDEX_INTRO,
    KINDS,
    MAX_OBJECT_SIZE,
    Decoder,
    Element,
    MosaicIndex,
    MosaicMeta,
    children,
    element_at,
    kind_of_description,
    normalize_key,
    read_uint,
)

__all__ = ["ENTRY_CHUNK", "OBJECT_READAHEAD", "MosaicFile"]

#: The optional C accelerator of lookups and tile walks (same answers as the Python path).
_native: Any = accelerator("shardkit.formats.mosaic._native")

#: Bytes of an object read with its header in one request (more only for larger objects).
OBJECT_READAHEAD = 16 << 10
#: ``keys()``/``items()`` read IdxUnrolled in chunks of about this many bytes.
ENTRY_CHUNK = 1 << 20
_MISSING: Any = object()


def _text(data: bytes, offset: int, name: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise LayoutError(f"{name} is not UTF-8", offset=offset, field=f"/{name}") from None


class MosaicFile(MosaicDescription, Reader):
    """A Software Heritage MOSAIC file.

    Opening reads the first 64 KiB (the EBML header and ``ContainerMetaData``); the first
    lookup in an index reads that index's description and its map (the FMPH-GO function and
    the entry size), never its entries; a lookup then reads one entry and one object.

    Keys are bytes (or hex text); ``index=`` names the index to use (``sha1``, ``sha1_git``,
    ``sha256``, ``blake2s256``). Without it the key's length picks the index when only one
    index of the file has keys of that length, else the ``index`` given to the constructor
    decides.

    Args:
        source: The file's bytes.
        index: Default index for lookups and iteration.
        max_object_size: Largest decompressed object accepted (a bigger one is a
            :class:`~shardkit.errors.LimitExceededError`).
    """

    format_id = "mosaic"
    format_name = "Software Heritage MOSAIC file"

    def __init__(self, source: ByteSource, index: str | None = None,
                 max_object_size: int = MAX_OBJECT_SIZE) -> None:
        super().__init__(source)
        if index is not None and index not in KINDS:
            raise InvalidKeyError(f"unknown index {index!r}; MOSAIC indexes: "
                                  f"{', '.join(KINDS)}")
        self.default_index = index
        raw = getattr(source, "raw", None)
        #: The file's bytes when mapped or in memory (slicing gives bytes), for hot lookups.
        self._raw: Any = raw
        self._indexes: list[MosaicIndex] | None = None
        # memos of parsed objects, one per index of the file (not bytes: no ByteLRU)
        self._functions: dict[int, Any] = {}
        self._conflicts: dict[int, dict[bytes, list[int]]] = {}
        self._plans: dict[int | str, tuple[Any, ...] | None] = {}
        self._hot: dict[int, Any] = {}
        self.meta = self._read_meta()
        self.decoder = Decoder(self.meta.compression, self.meta.compression_data,
                               max_object_size)

    def close(self) -> None:
        """Release the source (the C lookups let the mapping go first)."""
        for plan in self._plans.values():
            if plan is not None and plan[-1] is not None:
                plan[-1].__self__.release()
        self._plans.clear()
        self._hot.clear()
        super().close()

    # -- opening ----------------------------------------------------------------------------

    def _read(self, start: int, end: int) -> bytes:
        raw = self._raw
        if raw is not None and 0 <= start <= end <= self.source.size:
            return raw[start:end]  # type: ignore[no-any-return]  # a mapping's bytes
        return self.source.read_range(start, end)

    def _read_meta(self) -> MosaicMeta:
        size = self.source.size
        head = self.source.read_range(0, min(size, HEAD_READ))
        header, values = self._ebml_header(head, size)
        root = element_at(head, header.end, 0, size, "/Mosaic")
        if root.id != m.MOSAIC:
            raise LayoutError(f"expected the Mosaic root element after the EBML header, found "
                              f"{root.name}", offset=root.start, field="/Mosaic")
        meta_el = element_at(head, root.data_start, 0, root.end, "/Mosaic/ContainerMetaData")
        if meta_el.id != m.CONTAINER_META_DATA:
            raise LayoutError(f"expected ContainerMetaData first in Mosaic, found {meta_el.name}",
                              offset=meta_el.start, field="/Mosaic/ContainerMetaData")
        buf, base = head, 0
        if meta_el.end > len(head):  # a large dictionary
            buf, base = self.source.read_range(meta_el.start, meta_el.end), meta_el.start
        field = "/Mosaic/ContainerMetaData"
        kids = children(buf, base, meta_el.data_start, meta_el.end, field)
        crc_stored = None
        covered = meta_el.data_start
        if kids and kids[0].id == m.CRC32:
            crc = kids[0]
            if crc.size != 4:
                raise LayoutError(f"CRC-32 element of {crc.size} bytes (4 expected)",
                                  offset=crc.start, field=field + "/CRC-32")
            crc_stored = int.from_bytes(buf[crc.data_start - base:crc.end - base], "little")
            covered = crc.end
        crc_computed = m.crc32_le(buf[covered - base:meta_el.end - base])
        found, comments = _meta_values(buf, base, meta_el, kids)
        return MosaicMeta(
            doc_type_version=values.get(m.DOC_TYPE_VERSION, 1),
            doc_type_read_version=values.get(m.DOC_TYPE_READ_VERSION, 1),
            root_start=root.start, root_data=root.data_start, root_end=root.end,
            meta_start=meta_el.start, meta_end=meta_el.end, crc_stored=crc_stored,
            crc_computed=crc_computed, objects_counter=found[m.OBJECTS_COUNTER],
            objects_total_size=found[m.OBJECTS_TOTAL_SIZE],
            end_of_tiles_offset=found[m.END_OF_TILES_OFFSET],
            compression=found.get(m.COMPRESSION_METHOD, "none"),
            compression_data=found.get(m.COMPRESSION_DATA), comments=comments)

    def _ebml_header(self, head: bytes, size: int) -> tuple[Element, dict[int, Any]]:
        """The EBML header: magic, DocType ``mosaic`` and a DocTypeReadVersion this version
        reads; returns it and its values by element id."""
        if len(head) < 4 or int.from_bytes(head[:4], "big") != m.EBML_ID:
            raise BadMagicError(f"{self.source.name}: not a MOSAIC file (no EBML header "
                                "1a 45 df a3)", offset=0, field="/EBML")
        header = element_at(head, 0, 0, size, "/EBML")
        if header.end > len(head):
            raise LayoutError(f"EBML header of {header.size} bytes (more than {HEAD_READ})",
                              offset=0, field="/EBML")
        values: dict[int, Any] = {}
        for el in children(head, 0, header.data_start, header.end, "/EBML"):
            data = head[el.data_start:el.end]
            values[el.id] = (_text(data, el.start, "DocType").rstrip("\0")
                             if el.id == m.DOC_TYPE else read_uint(data, el.start, el.name)
                             if el.id != m.VOID and el.id != m.CRC32 else None)
        doctype = values.get(m.DOC_TYPE, "")
        if doctype != m.DOCTYPE:
            raise BadMagicError(f"{self.source.name}: an EBML document of DocType {doctype!r}, "
                                "not 'mosaic'", offset=header.data_start, field="/EBML/DocType")
        read_version = values.get(m.DOC_TYPE_READ_VERSION, 1)
        if read_version > m.READ_VERSION:
            raise UnsupportedVersionError(
                f"{self.source.name}: MOSAIC DocTypeReadVersion {read_version}; this version "
                f"of shardkit reads version {m.READ_VERSION}", offset=header.data_start,
                field="/EBML/DocTypeReadVersion")
        return header, values

    # -- indexes ------------------------------------------------------------------------------

    @property
    def indexes(self) -> list[MosaicIndex]:
        """The file's indexes, in file order (their descriptions; read on first use)."""
        if self._indexes is None:
            self._indexes = self._list_indexes()
        return self._indexes

    @property
    def index_names(self) -> list[str]:
        """The kinds of the file's known indexes, in file order."""
        return [i.kind for i in self.indexes if i.kind is not None]

    def _list_indexes(self) -> list[MosaicIndex]:
        out: list[MosaicIndex] = []
        pos = self.meta.end_of_tiles_offset
        end = self.meta.root_end
        if not self.meta.meta_end <= pos <= end:
            raise LayoutError(f"EndOfTilesOffset {pos} outside the Mosaic element "
                              f"[{self.meta.meta_end}, {end}]", offset=self.meta.meta_start,
                              field="/Mosaic/ContainerMetaData/EndOfTilesOffset")
        while pos < end:
            n = len(out)
            field = f"/Mosaic/Index[{n}]"
            intro = self._read(pos, min(end, pos + INDEX_INTRO))
            el = element_at(intro, 0, pos, end, field)
            if el.id != m.INDEX:
                if el.id == m.TILE:
                    raise LayoutError("a Tile after EndOfTilesOffset", offset=el.start,
                                      field=field)
                pos = el.end  # Void or an element of a later version
                continue
            out.append(self._read_intro(el, intro, field))
            pos = el.end
        return out

    def _read_intro(self, el: Element, intro: bytes, field: str) -> MosaicIndex:
        """An Index's description and IdxUnrolled's place, from the bytes at its start."""
        pos = el.data_start
        buf, base = intro, el.start
        description = None
        while pos < el.end:
            if pos + 12 > base + len(buf) and base + len(buf) < el.end:
                buf, base = self._read(pos, min(el.end, pos + INDEX_INTRO)), pos
            child = element_at(buf, pos - base, base, el.end, field)
            if child.id == m.IDX_DESCRIPTION:
                if child.end > base + len(buf):
                    buf, base = self._read(child.start, child.end), child.start
                description = _text(buf[child.data_start - base:child.end - base],
                                     child.start, "IdxDescription").rstrip("\0")
            elif child.id == m.IDX_UNROLLED:
                if description is None:
                    raise LayoutError("IdxUnrolled before IdxDescription", offset=child.start,
                                      field=field + "/IdxUnrolled")
                kind = kind_of_description(description)
                return MosaicIndex(kind.name if kind else None, description, el.start,
                                   el.data_start, el.end, child.data_start, child.size)
            pos = child.end
        raise LayoutError("Index without IdxUnrolled" if description is not None
                          else "Index without IdxDescription", offset=el.start, field=field)

    def _tail(self, idx: MosaicIndex) -> None:
        """Read what follows IdxUnrolled: IdxUnrolledEntrySize, MapContainer, Conflicts."""
        if idx.entry_size:
            return
        n = self.indexes.index(idx)
        field = f"/Mosaic/Index[{n}]"
        start = idx.unrolled_start + idx.unrolled_size
        buf = self._read(start, idx.end)
        for el in children(buf, start, start, idx.end, field):
            data = buf[el.data_start - start:el.end - start]
            if el.id == m.IDX_UNROLLED_ENTRY_SIZE:
                idx.entry_size = read_uint(data, el.start, el.name)
            elif el.id == m.MAP_CONTAINER:
                for sub in children(buf, start, el.data_start, el.end, field + "/MapContainer"):
                    if sub.id == m.MAP:
                        idx.map_start, idx.map_size = sub.data_start, sub.size
            elif el.id == m.CONFLICTS:
                idx.conflicts_start, idx.conflicts_size = el.data_start, el.size
        if idx.entry_size == 0:
            raise LayoutError("Index without IdxUnrolledEntrySize (or 0)", offset=idx.start,
                              field=field + "/IdxUnrolledEntrySize")
        if idx.unrolled_size % idx.entry_size:
            raise LayoutError(f"IdxUnrolled of {idx.unrolled_size} bytes is not a multiple of "
                              f"IdxUnrolledEntrySize {idx.entry_size}",
                              offset=idx.unrolled_start, field=field + "/IdxUnrolled")
        if idx.map_start < 0:
            raise LayoutError("Index without MapContainer/Map", offset=idx.start,
                              field=field + "/MapContainer")

    def index(self, name: str | None = None) -> MosaicIndex:
        """The index ``name`` (the default index, or the file's first, when None), its tail
        read."""
        name = name or self.default_index
        for idx in self.indexes:
            if (name is None and idx.kind is not None) or idx.kind == name:
                self._tail(idx)
                return idx
        if name is not None and name not in KINDS:
            raise InvalidKeyError(f"unknown index {name!r}; MOSAIC indexes: "
                                  f"{', '.join(KINDS)}")
        raise InvalidKeyError(f"{self.source.name}: no {name or 'known'} index (this file has: "
                              f"{', '.join(self.index_names) or 'none'})")

    def function(self, idx: MosaicIndex) -> Any:
        """The index's FMPH-GO function (parsed once)."""
        f = self._functions.get(idx.start)
        if f is None:
            self._tail(idx)
            try:
                from ...hashing import fmph
            except ImportError:  # pragma: no cover - shipped together
                raise UnsupportedVersionError("this version of shardkit cannot evaluate "
                                              "FMPH-GO functions") from None
            data = self._read(idx.map_start, idx.map_start + idx.map_size)
            f = fmph.GOFunction.parse(data, base_offset=idx.map_start)
            self._functions[idx.start] = f
        return f

    def _index_for(self, key: bytes, index: str | None) -> MosaicIndex:
        if index is not None:
            idx = self.index(index)
            if len(key) != idx.key_len:
                raise InvalidKeyError(f"key of {len(key)} bytes; {index} keys are "
                                      f"{idx.key_len} bytes")
            return idx
        fits = [i for i in self.indexes if i.kind is not None and i.key_len == len(key)]
        if len(fits) == 1:
            self._tail(fits[0])
            return fits[0]
        if not fits:
            lens = sorted({f"{i.key_len}-byte {i.kind}" for i in self.indexes if i.kind})
            raise InvalidKeyError(f"key of {len(key)} bytes; this file's indexes take "
                                  f"{', '.join(lens) or 'no keys'}")
        for i in fits:
            if i.kind == self.default_index:
                self._tail(i)
                return i
        raise InvalidKeyError(f"a {len(key)}-byte key could be any of "
                              f"{', '.join(str(i.kind) for i in fits)}: pass index= (--index)")

    # -- lookups ------------------------------------------------------------------------------

    def _entry(self, idx: MosaicIndex, rank: int, buf: bytes | None = None,
               base: int = 0, want: bytes | None = None) -> tuple[bytes, list[int]] | None:
        """The key and object offsets of entry ``rank``; None when deleted (voided). With
        ``want``, an entry of another key gives that key and no offset (the rest of the entry
        is not read: ``want`` is not in the file)."""
        start = idx.unrolled_start + rank * idx.entry_size
        end = start + idx.entry_size
        if buf is None:
            buf, base = self._read(start, end), start
        klen = idx.key_len
        p = start - base
        # the layout every writer uses: Key (1-byte size), then Offset (1-byte size)
        if (idx.entry_size >= klen + 5 and buf[p] == m.KEY and buf[p + 1] == 0x80 | klen
                and buf[p + 2 + klen] == m.OFFSET):
            n = buf[p + 3 + klen] & 0x7F
            if buf[p + 3 + klen] & 0x80 and p + 4 + klen + n <= end - base and n <= 8:
                return (buf[p + 2:p + 2 + klen],
                        [int.from_bytes(buf[p + 4 + klen:p + 4 + klen + n], "big")])
        field = f"/Mosaic/Index[{self.indexes.index(idx)}]/IdxUnrolled/entry[{rank}]"
        el = element_at(buf, p, base, end, field)
        if el.id == m.VOID:
            return None
        if el.id != m.KEY:
            raise LayoutError(f"index entry starts with {el.name}, not Key", offset=el.start,
                              field=field)
        key = buf[el.data_start - base:el.end - base]
        if want is not None and key != want:
            return key, []
        nxt = el.end
        while True:
            if nxt >= end:
                raise LayoutError("index entry has a Key but no Offset", offset=start,
                                  field=field)
            el = element_at(buf, nxt - base, base, end, field)
            if el.id == m.OFFSET:
                return key, [read_uint(buf[el.data_start - base:el.end - base], el.start,
                                       "Offset")]
            if el.id == m.GO_TO_CONFLICTS:
                offsets = self.conflicts(idx).get(bytes(key))
                if not offsets:
                    raise LayoutError("GoToConflicts for a key with no Conflict",
                                      offset=el.start, field=field)
                return key, offsets
            if el.id != m.VOID:
                raise LayoutError(f"index entry holds {el.name} after its Key", offset=el.start,
                                  field=field)
            nxt = el.end
            if nxt >= end:
                return None  # Key kept but its Offset voided: deleted

    def conflicts(self, idx: MosaicIndex) -> dict[bytes, list[int]]:
        """The index's Conflicts: key -> offsets of its objects (read once)."""
        got = self._conflicts.get(idx.start)
        if got is not None:
            return got
        self._tail(idx)
        out: dict[bytes, list[int]] = {}
        if idx.conflicts_start >= 0:
            start, end = idx.conflicts_start, idx.conflicts_start + idx.conflicts_size
            field = f"/Mosaic/Index[{self.indexes.index(idx)}]/Conflicts"
            buf = self._read(start, end)
            for c in children(buf, start, start, end, field):
                if c.id != m.CONFLICT:
                    continue
                key, offsets = None, []
                for sub in children(buf, start, c.data_start, c.end, field + "/Conflict"):
                    data = buf[sub.data_start - start:sub.end - start]
                    if sub.id == m.CONFLICTING_KEY:
                        key = bytes(data)
                    elif sub.id == m.CONFLICTING_OFFSET:
                        offsets.append(read_uint(data, sub.start, "ConflictingOffset"))
                if key is None:
                    raise LayoutError("Conflict without ConflictingKey", offset=c.start,
                                      field=field + "/Conflict")
                out.setdefault(key, []).extend(offsets)
        self._conflicts[idx.start] = out
        return out

    def _object(self, offset: int) -> bytes:
        """The stored (not decoded) bytes of the Object element at ``offset``."""
        size = self.source.size
        if not 0 <= offset < size:
            raise LayoutError(f"object offset {offset} outside the file ({size} bytes)",
                              offset=offset, field="/Mosaic/Tile/Object")
        raw = self._raw
        head = self._read(offset, min(size, offset + (9 if raw is not None
                                                      else OBJECT_READAHEAD)))
        if head[0] == m.OBJECT and head[1] & 0x80:  # a 1-byte size
            n, skip = head[1] & 0x7F, 2
        else:
            el = element_at(head, 0, offset, self.meta.root_end, "/Mosaic/Tile/Object")
            if el.id != m.OBJECT:
                raise LayoutError(f"an index points at {el.name}, not an Object", offset=offset,
                                  field="/Mosaic/Tile/Object")
            n, skip = el.size, el.data_start - offset
        if offset + skip + n > size:
            raise TruncatedError(f"Object of {n} bytes at byte {offset} ends past the file",
                                 needed=n, available=size - offset - skip, offset=offset,
                                 field="/Mosaic/Tile/Object")
        if skip + n <= len(head):
            return head[skip:skip + n]
        return self._read(offset + skip, offset + skip + n)

    def _locate(self, key: bytes, index: str | None) -> tuple[MosaicIndex, list[int]] | None:
        idx = self._index_for(key, index)
        rank = self.function(idx).get(key)
        if rank is None or rank >= idx.num_entries:
            return None
        found = self._entry(idx, rank, want=key)
        if found is None or found[0] != key:
            return None
        return idx, found[1]

    def get_all(self, key: bytes | str, index: str | None = None) -> list[bytes]:
        """Every object of ``key`` (several for a key listed under Conflicts).

        Raises:
            EntryNotFoundError: The key is absent or deleted.
        """
        key = normalize_key(key)
        found = self._locate(key, index)
        if found is None:
            raise EntryNotFoundError(key)
        return [self.decoder.decode(self._object(o), o) for o in found[1]]

    def _plan(self, key: bytes, index: str | None) -> tuple[Any, ...] | None:
        """What the hot lookup path needs for ``key``'s index (``index``, or the one its length
        picks): the map's ``get``, the entries' start, size and count, the bytes an entry of
        the key starts with (before and after it), the mapped file. None when the file is not
        mapped or its entries are not Key + Offset of fixed sizes: the general path then reads
        them. Kept per ``index`` (or per key length when None)."""
        idx = self._index_for(key, index)
        klen = idx.key_len
        off_len = idx.entry_size - 4 - klen
        plan = None
        if self._raw is not None and 1 <= off_len <= 8:
            f = self.function(idx)
            fget = getattr(getattr(f, "_fast", None), "get", None) or f.get
            plain = self.meta.compression == "none"
            native = None
            if _native is not None:
                native = _native.Lookup(self._raw, fget, idx.unrolled_start, idx.entry_size,
                                        idx.num_entries, klen, off_len)
                native = native.get if plain else native.get_at
                if plain and index is None:
                    self._hot[klen] = native
            plan = (fget, idx.unrolled_start, idx.entry_size, idx.num_entries, klen,
                    bytes([m.KEY, 0x80 | klen]), bytes([m.OFFSET, 0x80 | off_len]), self._raw,
                    plain, native)
        self._plans[index if index is not None else klen] = plan
        return plan

    def _slow(self, key: bytes, index: str | None) -> bytes | None:
        found = self._locate(key, index)
        if found is None:
            return None
        o = found[1][0]
        return self.decoder.decode(self._object(o), o)

    # C901: inlined on purpose, the hot lookup of benchmarks/bench_mosaic.py (lookups/s)
    def get(self, key: bytes | str, default: Any = None,  # noqa: C901
            index: str | None = None) -> Any:
        """The object of ``key`` in ``index`` (picked from the key's length when None), or
        ``default`` when absent or deleted. A key of several objects gives the first
        (:meth:`get_all` gives them all)."""
        if index is None and type(key) is bytes:
            hot = self._hot.get(len(key))
            if hot is not None:  # C, plain objects, the index the key's length picks
                got = hot(key)
                if got is None:
                    return default
                if got is not NotImplemented:
                    return got
        if type(key) is not bytes:
            key = normalize_key(key)
        plans = self._plans
        ref = index if index is not None else len(key)
        plan = plans[ref] if ref in plans else self._plan(key, index)
        if plan is None:
            got = self._slow(key, index)
            return default if got is None else got
        fget, ustart, esize, n, klen, head, tail, raw, plain, native = plan
        if len(key) != klen:
            self._index_for(key, index)  # raises: wrong length
        if native is not None:
            got = native(key)
            if got is None:
                return default
            if got is not NotImplemented:
                return got if plain else self.decoder.decode(got[1], got[0])
            got = self._slow(key, index)
            return default if got is None else got
        rank = fget(key)
        if rank is None or rank >= n:
            return default
        p = ustart + rank * esize
        if raw[p:p + klen + 4] != head + key + tail:
            # deleted, absent (another key's entry), a conflict, or unusually written
            got = self._slow(key, index)
            return default if got is None else got
        o = int.from_bytes(raw[p + klen + 4:p + esize], "big")
        # The 1- and 2-byte size of an Object, decoded inline here and again in
        # _tile_objects_py: both are hot paths (the pure lookup, the tile walk) that a helper
        # would give one more Python call per object.
        if o + 3 <= len(raw) and raw[o] == 0xF0:
            b1 = raw[o + 1]
            if b1 & 0x80:
                a = o + 2
                z = a + (b1 & 0x7F)
            elif b1 & 0x40:
                a = o + 3
                z = a + (((b1 & 0x3F) << 8) | raw[o + 2])
            else:
                a = z = -1
            if a >= 0 and z <= len(raw):
                return raw[a:z] if plain else self.decoder.decode(raw[a:z], o)
        return self.decoder.decode(self._object(o), o)

    def __getitem__(self, key: bytes | str) -> bytes:
        if type(key) is bytes:
            hot = self._hot.get(len(key))
            if hot is not None:
                got = hot(key)
                if got is not None and got is not NotImplemented:
                    return got  # type: ignore[no-any-return]  # the C lookup's bytes
        got = self.get(key, _MISSING)
        if got is _MISSING:
            raise EntryNotFoundError(normalize_key(key))
        return got  # type: ignore[no-any-return]  # get's object (bytes)

    def __contains__(self, key: object) -> bool:
        try:
            return self._locate(normalize_key(key), None) is not None
        except InvalidKeyError:
            return False

    def get_many(self, keys: Sequence[bytes | str], default: Any = _MISSING,
                 index: str | None = None) -> list[Any]:
        """The objects of ``keys``, in order; ``default`` for absent ones (raise when not
        given). Over a URL the entries, then the objects, are fetched in one batch each."""
        todo = [normalize_key(k) for k in keys]
        if not todo:
            return []
        idxs = [self._index_for(k, index) for k in todo]
        spots: list[tuple[int, int] | None] = []
        for k, idx in zip(todo, idxs, strict=True):
            rank = self.function(idx).get(k)
            if rank is None or rank >= idx.num_entries:
                spots.append(None)
            else:
                s = idx.unrolled_start + rank * idx.entry_size
                spots.append((s, s + idx.entry_size))
        wanted = [s for s in spots if s is not None]
        entries = iter(read_ranges(self.source, wanted) if self._raw is None
                       else [self._raw[a:b] for a, b in wanted])
        offsets: list[int | None] = []
        for k, idx, spot in zip(todo, idxs, spots, strict=True):
            found = None
            if spot is not None:
                found = self._entry(idx, (spot[0] - idx.unrolled_start) // idx.entry_size,
                                    next(entries), spot[0], want=k)
            offsets.append(found[1][0] if found is not None and found[0] == k else None)
        if self._raw is None:  # fetch the objects' heads in one batch
            live = sorted({o for o in offsets if o is not None and 0 <= o < self.source.size})
            read_ranges(self.source, [(o, min(self.source.size, o + OBJECT_READAHEAD))
                                      for o in live])
        out = []
        for k, o in zip(todo, offsets, strict=True):
            if o is None:
                if default is _MISSING:
                    raise EntryNotFoundError(k)
                out.append(default)
            else:
                out.append(self.decoder.decode(self._object(o), o))
        return out

    # -- iteration ----------------------------------------------------------------------------

    def __len__(self) -> int:
        """ObjectsCounter: the objects in the file (deletions decrement it)."""
        return self.meta.objects_counter

    def iter_entries(self, index: str | None = None) -> Iterator[tuple[int, bytes, list[int]]]:
        """``(rank, key, object offsets)`` of every live entry of ``index``, in rank order,
        reading IdxUnrolled in chunks of about :data:`ENTRY_CHUNK` bytes."""
        idx = self.index(index)
        per = max(1, ENTRY_CHUNK // idx.entry_size)
        n = idx.num_entries
        for first in range(0, n, per):
            last = min(n, first + per)
            a = idx.unrolled_start + first * idx.entry_size
            buf = self._read(a, idx.unrolled_start + last * idx.entry_size)
            for rank in range(first, last):
                found = self._entry(idx, rank, buf, a)
                if found is not None:
                    yield rank, bytes(found[0]), found[1]

    def keys(self, index: str | None = None) -> Iterator[bytes]:
        """Live keys of ``index`` (the default one when None), in the map's (random) order."""
        for _, key, _ in self.iter_entries(index):
            yield key

    def __iter__(self) -> Iterator[bytes]:
        return self.keys()

    def items(self, index: str | None = None) -> Iterator[tuple[bytes, bytes]]:
        """``(key, object)`` of every live entry of ``index``; a key of several objects comes
        once per object."""
        for _, key, offsets in self.iter_entries(index):
            for o in offsets:
                yield key, self.decoder.decode(self._object(o), o)

    def _tiles(self, view: bool = False) -> Iterator[tuple[int, Any]]:
        """``(data offset, data)`` of every Tile, in file order, one read each (with ``view``,
        a memoryview of the mapped file where there is one: no copy, for the C walk)."""
        raw = self._raw if view else None
        pos = self.meta.meta_end
        end = min(self.meta.end_of_tiles_offset, self.meta.root_end)
        while pos < end:
            head = self._read(pos, min(end, pos + 12))
            tile = element_at(head, 0, pos, self.meta.root_end, "/Mosaic/Tile")
            if tile.id == m.TILE:
                if raw is not None:
                    with memoryview(raw) as whole, whole[tile.data_start:tile.end] as part:
                        yield tile.data_start, part
                else:
                    yield tile.data_start, self._read(tile.data_start, tile.end)
            pos = tile.end

    @staticmethod
    def _tile_objects(base: int, buf: bytes, offsets: list[int] | None,
                      strict: bool = False) -> list[bytes] | None:
        """The stored bytes of the Objects of one tile's data ``buf`` (at ``base``), Voids
        skipped; their offsets appended to ``offsets`` when given. With ``strict``, None (and
        ``offsets`` as given) when an element is neither an Object, a Void nor a leading
        CRC-32, or the framing is bad (verify's careful walk then says what)."""
        if _native is not None:
            got = _native.tile_objects(buf, base, offsets, strict)
            if got is not None or strict:
                return got  # type: ignore[no-any-return]  # C: a list of bytes or None
        if strict:
            first = len(offsets) if offsets is not None else 0
            try:
                out = MosaicFile._tile_objects_py(base, buf, offsets, True)
            except ShardkitError:
                out = None
            if out is None and offsets is not None:
                del offsets[first:]
            return out
        return MosaicFile._tile_objects_py(base, buf, offsets, False)

    @staticmethod
    def _tile_objects_py(base: int, buf: bytes, offsets: list[int] | None,
                         strict: bool) -> list[bytes] | None:
        out: list[bytes] = []
        pos, n = 0, len(buf)
        while pos < n:
            b = buf[pos]
            if (b == 0xF0 or b == 0xEC) and pos + 3 <= n:  # Object, Void: 1-byte IDs, inline
                b1 = buf[pos + 1]
                if b1 & 0x80:
                    a = pos + 2
                    z = a + (b1 & 0x7F)
                elif b1 & 0x40:
                    a = pos + 3
                    z = a + (((b1 & 0x3F) << 8) | buf[pos + 2])
                else:
                    a = z = -1
                if 0 < z <= n:
                    if b == 0xF0:
                        out.append(buf[a:z])
                        if offsets is not None:
                            offsets.append(base + pos)
                    pos = z
                    continue
            el = element_at(buf, pos, base, base + n, "/Mosaic/Tile")
            if strict and el.id not in (m.OBJECT, m.VOID) and not (el.id == m.CRC32
                                                                  and pos == 0):
                return None
            if el.id == m.OBJECT:
                out.append(buf[el.data_start - base:el.end - base])
                if offsets is not None:
                    offsets.append(el.start)
            pos = el.end - base
        return out

    def iter_objects(self) -> Iterator[tuple[int, bytes]]:
        """``(offset, stored bytes)`` of every Object, in file order (deleted ones, now Void,
        are skipped); tiles are read whole, one at a time."""
        for base, buf in self._tiles():
            offsets: list[int] = []
            yield from zip(offsets, self._tile_objects(base, buf, offsets) or (), strict=True)

    def values(self) -> Iterator[bytes]:
        """Every live object, decoded, in file order (not the order of :meth:`keys`)."""
        if self.meta.compression == "none":  # items flow from each tile's list in C
            if _native is not None:
                return itertools.chain.from_iterable(
                    _native.tile_objects(buf, base, None)
                    or self._tile_objects(base, bytes(buf), None) or ()
                    for base, buf in self._tiles(view=True))
            return itertools.chain.from_iterable(
                self._tile_objects(base, buf, None) or () for base, buf in self._tiles())
        return self._decoded_values()

    def _decoded_values(self) -> Iterator[bytes]:
        decode = self.decoder.decode
        for base, buf in self._tiles():
            offsets: list[int] = []
            for o, raw in zip(offsets, self._tile_objects(base, buf, offsets) or (),
                              strict=True):
                yield decode(raw, o)

    # -- verification (the descriptions are in describe.py) ---------------------------------

    def verify(self, content_hash: bool | str = True,
               progress: Callable[[int, int], None] | None = None) -> list[Problem]:
        """Run every check; return the problems found (empty list: the file is sound).

        Args:
            content_hash: Also check that each key is the hash of its decompressed object
                (sha1, git's blob sha1, sha256, blake2s256: each index's own kind; any
                non-empty string, as ``verify --content-hash`` gives, means yes).
            progress: Called as ``progress(done, total)`` (bytes walked).
        """
        from .verify import check

        return check(self, content_hash=bool(content_hash), progress=progress)

    def parse_key(self, text: str) -> bytes:
        """A key from its hex form (as ``shardkit get`` takes it)."""
        key = normalize_key(text)
        lens = {i.key_len for i in self.indexes if i.kind}
        if len(key) not in lens:
            raise InvalidKeyError(f"key of {len(key)} bytes; this file's indexes take "
                                  f"{', '.join(map(str, sorted(lens))) or 'none'}-byte keys")
        return key

    def format_key(self, key: bytes) -> str:
        """A key's display form (hex)."""
        return key.hex()


def _meta_values(buf: bytes, base: int, meta_el: Element,
                 kids: list[Element]) -> tuple[dict[int, Any], list[str]]:
    """ContainerMetaData's values by element id (the three counters required, a known
    CompressionMethod, CompressionData when it needs one) and its Comments."""
    field = "/Mosaic/ContainerMetaData"
    found: dict[int, Any] = {}
    comments: list[str] = []
    for el in kids:
        data = buf[el.data_start - base:el.end - base]
        if el.id in (m.OBJECTS_COUNTER, m.OBJECTS_TOTAL_SIZE, m.END_OF_TILES_OFFSET):
            found[el.id] = read_uint(data, el.start, el.name)
        elif el.id == m.COMPRESSION_METHOD:
            found[el.id] = _text(data, el.start, "CompressionMethod").rstrip("\0")
        elif el.id == m.COMPRESSION_DATA:
            found[el.id] = data
        elif el.id == m.COMMENT:
            comments.append(_text(data, el.start, "Comment").rstrip("\0"))
    for need in (m.OBJECTS_COUNTER, m.OBJECTS_TOTAL_SIZE, m.END_OF_TILES_OFFSET):
        if need not in found:
            raise LayoutError(f"ContainerMetaData has no {m.ELEMENT_NAMES[need]}",
                              offset=meta_el.start, field=field)
    method = found.get(m.COMPRESSION_METHOD, "none")
    if method not in ("none", "zstd", "zstd.dict"):
        raise UnsupportedVersionError(f"unknown CompressionMethod {method!r} (none, zstd "
                                      "and zstd.dict exist)", offset=meta_el.start,
                                      field=field + "/CompressionMethod")
    if method == "zstd.dict" and m.COMPRESSION_DATA not in found:
        raise LayoutError("CompressionMethod zstd.dict without CompressionData",
                          offset=meta_el.start, field=field + "/CompressionData")
    return found, comments
