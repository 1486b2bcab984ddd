"""Xet MDB lookups: the three lookup tables, the indexes searched through them (or built from
the record sections when a table is absent), and the ``file`` / ``xorb`` / ``find_chunk``
lookups of :class:`~shardkit.formats.xet_mdb.MdbShard` (mixed into it from here)."""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Callable, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any

from ..._lazy import lazy_module
from ...errors import LayoutError
from ...hashing import xet as xh
from . import _fast, _io
from . import model as _model
from .model import (
    _FILE_HEAD,
    _TERM,
    _U64,
    _XORB_HEAD,
    FILE_FLAG_METADATA_EXT,
    FILE_FLAG_VERIFICATION,
    HEADER_SIZE,
    RECORD_SIZE,
    ChunkRef,
    FileInfo,
    XetHash,
    XorbInfo,
    _as_raw,
    _new_chunk,
    _new_file,
    _new_hash,
    _new_ref,
    _runs,
)

if TYPE_CHECKING:
    import numpy as np

    from ...sources import ByteSource
    from .model import MdbFooter, _Layout
else:
    np = lazy_module("numpy")


class _KeyIndex:
    """A lookup table's truncated keys in ascending order, with their columns, for lookups
    at Python speed: compact arrays (no object per entry) and bucket starts on the keys' top
    bits, so a search bisects a handful of entries (keys are truncated hashes, spread evenly).
    """

    __slots__ = ("cols", "keys", "n", "shift", "starts")

    def __init__(self, keys: np.ndarray, *cols: np.ndarray) -> None:
        keys = np.ascontiguousarray(keys, np.uint64)
        if len(keys) > 1 and not bool(np.all(keys[1:] >= keys[:-1])):
            order = np.argsort(keys, kind="stable")
            keys, cols = keys[order], tuple(c[order] for c in cols)
        bits = min(max(len(keys) - 1, 1).bit_length(), 24)
        self.shift = 64 - bits
        top = (keys >> np.uint64(self.shift)).astype(np.int64)
        starts = np.searchsorted(top, np.arange((1 << bits) + 1, dtype=np.int64))
        self.starts = array("q", starts.astype(np.int64).tobytes())
        self.keys = array("Q", keys.astype("=u8").tobytes())
        self.cols = [array("I", np.asarray(c, "=u4").tobytes()) for c in cols]
        self.n = len(self.keys)

    def first(self, key: int) -> int:
        """The index of the first entry whose key is ``key`` or more (bisected in its bucket)."""
        b = key >> self.shift
        return bisect_left(self.keys, key, self.starts[b], self.starts[b + 1])


class MdbLookups:
    """The lookup tables and lookups of :class:`~shardkit.formats.xet_mdb.MdbShard`."""

    if TYPE_CHECKING:  # what these methods use of the host class, MdbShard
        footer: MdbFooter | None
        _io: ByteSource
        _local: bool
        _closed: bool
        _all: memoryview | bytes | None
        _slicer: Any
        _limit: int
        _fast_file: Callable[..., FileInfo | None] | None
        _fast_chunk: Callable[..., ChunkRef | None] | None

        @property
        def _mem(self) -> memoryview | bytes: ...
        @property
        def _have_all(self) -> bool: ...
        @property
        def _records_limit(self) -> int: ...
        @property
        def _layout(self) -> _Layout: ...
        @property
        def _xorb_records(self) -> np.ndarray: ...
        @property
        def files(self) -> Sequence[FileInfo]: ...
        @property
        def xorbs(self) -> Sequence[XorbInfo]: ...
        def _closed_error(self) -> ValueError: ...

    def _table(self, name: str, offset: int, count: int, dtype: np.dtype) -> np.ndarray | None:
        if self.footer is None or count == 0:
            return None
        end = offset + count * dtype.itemsize
        limit = self.footer.footer_offset
        if offset < HEADER_SIZE or end > limit:
            raise LayoutError(f"the {name} lookup table [{offset}, {end}) ({count} entries) "
                              f"does not fit before the footer at {limit}",
                              offset=self.footer.footer_offset, field=f"/{name}_lookup")
        if self._have_all:
            return np.frombuffer(self._mem, dtype, count=count, offset=offset)
        return np.frombuffer(self._io.read_range(offset, end), dtype, count=count)  # one range

    @cached_property
    def file_lookup(self) -> np.ndarray | None:
        """The file lookup table (fields ``key``, ``index``), or None when absent."""
        f = self.footer
        return None if f is None else self._table("file", f.file_lookup_offset,
                                                  f.file_lookup_num_entry, _model._LOOKUP_DTYPE)

    @cached_property
    def xorb_lookup(self) -> np.ndarray | None:
        """The xorb lookup table (fields ``key``, ``index``), or None when absent."""
        f = self.footer
        return None if f is None else self._table("xorb", f.xorb_lookup_offset,
                                                  f.xorb_lookup_num_entry, _model._LOOKUP_DTYPE)

    @cached_property
    def chunk_lookup(self) -> np.ndarray | None:
        """The chunk lookup table (fields ``key``, ``xorb``, ``chunk``), or None when absent."""
        f = self.footer
        return None if f is None else self._table("chunk", f.chunk_lookup_offset,
                                                  f.chunk_lookup_num_entry,
                                                  _model._CHUNK_LOOKUP_DTYPE)

    @cached_property
    def _file_index(self) -> _KeyIndex | None:
        t = self.file_lookup
        return None if t is None else _KeyIndex(t["key"], t["index"])

    @cached_property
    def _xorb_index(self) -> _KeyIndex | None:
        t = self.xorb_lookup
        return None if t is None else _KeyIndex(t["key"], t["index"])

    @cached_property
    def _chunk_index(self) -> tuple[int, _KeyIndex]:
        """What :meth:`find_chunk` searches: (xorb section offset, index of (truncated key ->
        xorb record index, chunk position)).

        From the chunk lookup table when there is one. Otherwise the xorb section is indexed
        with numpy: the truncated hash of every chunk record, stably sorted (equal keys stay
        in section order, so of repeated chunks the first one is found). No object per chunk.
        """
        t = self.chunk_lookup
        if t is not None:
            f = self.footer
            assert f is not None
            return f.xorb_info_offset, _KeyIndex(t["key"], t["xorb"], t["chunk"])
        rows = self._chunk_rows
        return (self._layout.xorb_info_offset,
                _KeyIndex(rows["key"], rows["xorb"], rows["chunk"]))

    @cached_property
    def _chunk_rows(self) -> np.ndarray:
        """(truncated stored hash, xorb record index, chunk position) of every chunk, in
        section order: the rows a chunk lookup table holds (``_CHUNK_LOOKUP_DTYPE``), from the
        xorb section's bytes, built with numpy."""
        layout = self._layout
        base = layout.xorb_info_offset
        head = (layout.xorb_pos - base) // RECORD_SIZE
        n = layout.xorb_chunks
        chunk_rec = _runs(head + 1, n)
        xorb_rec = np.repeat(head, n)
        out = np.empty(len(chunk_rec), _model._CHUNK_LOOKUP_DTYPE)
        out["key"] = np.frombuffer(self._mem, _model._KEY_DTYPE, offset=base,
                                   count=len(self._xorb_records))["key"][chunk_rec]
        out["xorb"] = xorb_rec
        out["chunk"] = chunk_rec - xorb_rec - 1
        return out

    @cached_property
    def _files_by_hash(self) -> dict[bytes, FileInfo]:
        out: dict[bytes, FileInfo] = {}
        for f in self.files:
            out.setdefault(bytes(f.hash), f)  # the first record wins, as in xet-core
        return out

    @cached_property
    def _xorbs_by_hash(self) -> dict[bytes, XorbInfo]:
        out: dict[bytes, XorbInfo] = {}
        for x in self.xorbs:
            out.setdefault(bytes(x.hash), x)
        return out

    def _block(self, pos: int, want: int) -> tuple[bytes | memoryview, int]:
        """(buffer, its absolute start) holding at least the record at ``pos`` and, through
        ranged reads, up to ``want`` bytes from it (a guess at the block's length)."""
        if self._have_all:
            return self._mem, 0
        return self._io.read_range(pos, min(self._records_limit, pos + want)), pos

    def _whole_block(self, buf: bytes | memoryview, base: int, pos: int,
                     nbytes: int) -> tuple[bytes | memoryview, int]:
        """``buf`` again if it holds ``nbytes`` from ``pos``, else one more ranged read."""
        if pos - base + nbytes <= len(buf):
            return buf, base
        return self._io.read_range(pos, pos + nbytes), pos

    def _file_at(self, buf: bytes | memoryview, base: int, pos: int) -> FileInfo | None:
        """The file block at absolute ``pos`` (None if it does not fit the sections).

        ``buf`` holds the file's bytes from absolute offset ``base`` (the whole file, or a
        ranged read starting at the block); a block longer than ``buf`` is read in full. The
        block's records are kept as one bytes object and decoded into terms and hashes when
        first read (see :class:`FileInfo`).
        """
        limit = self._limit
        if pos < HEADER_SIZE or pos + RECORD_SIZE > limit:
            return None
        o = pos - base
        h, flags, n, reserved = _FILE_HEAD.unpack_from(buf, o)
        nbytes = (1 + n + (n if flags & FILE_FLAG_VERIFICATION else 0)
                  + (1 if flags & FILE_FLAG_METADATA_EXT else 0)) * RECORD_SIZE
        if pos + nbytes > limit:
            return None
        if o + nbytes <= len(buf):
            src = self._slicer if buf is self._all else buf
            block = src[o + RECORD_SIZE : o + nbytes]  # the records after the header
            if type(block) is not bytes:
                block = bytes(block)
        else:
            block = self._io.read_range(pos + RECORD_SIZE, pos + nbytes)
        return _new_file(_new_hash(h), flags, block, reserved,
                         (pos - HEADER_SIZE) // RECORD_SIZE, pos)

    def file(self, h: XetHash | bytes | str, default: FileInfo | None = None
             ) -> FileInfo | None:
        """The file with hash ``h`` (a hash object, 32 stored bytes or display hex).

        Uses the file lookup table when present (the candidates of the truncated hash, then
        the full hash is compared at each candidate record; through ranged requests the table
        is read once, as one range, and each lookup reads its record); otherwise the file
        section is walked once and indexed. Returns ``default`` (None) when the file is not
        in the shard. On a mapped shard with a table the first lookup builds a probe table
        from it (see :mod:`._fast`); the lookup function made on the first call then answers
        as the instance's own ``file`` (the same signature; no method dispatch per call).
        """
        fast = self._fast_file
        if fast is None:
            fast = self._fast_file = self.__dict__["file"] = self._make_fast_file()
        return fast(h, default)

    def _make_fast_file(self) -> Callable[..., FileInfo | None]:
        if self._closed:  # close() dropped the lookup made before: every call comes here
            raise self._closed_error()
        if self.file_lookup is None:  # no table: a dict of the objects
            return _fast.dict_lookup(self._files_by_hash)
        if not self._local:  # ranged reads
            return self._file_general
        return _fast.file_lookup(self.file_lookup, self._all, self._slicer, self._limit,
                                 self._file_general)

    def _file_general(self, h: XetHash | bytes | str, default: FileInfo | None = None
                      ) -> FileInfo | None:
        """:meth:`file` on any source (with the sorted index of the table, or the dict)."""
        raw = h if type(h) is XetHash or (type(h) is bytes and len(h) == 32) else _as_raw(h)
        idx = self._file_index
        if idx is None:
            return self._files_by_hash.get(bytes(raw), default)
        key = _U64.unpack_from(raw)[0]
        keys, i = idx.keys, idx.first(key)
        n, index, mem = idx.n, idx.cols[0], self._all
        if mem is None:
            return self._file_remote(raw, key, i, idx, default)
        rawb, limit = bytes(raw), self._limit
        while i < n and keys[i] == key:
            pos = HEADER_SIZE + index[i] * RECORD_SIZE
            if pos + RECORD_SIZE <= limit and mem[pos : pos + 32] == rawb:
                found = self._file_at(mem, 0, pos)  # None: a block that overruns, as xet-core
                if found is not None:
                    return found
            i += 1
        return default

    def _file_remote(self, raw: bytes, key: int, i: int, idx: _KeyIndex,
                     default: FileInfo | None) -> FileInfo | None:
        """:meth:`file` through ranged requests: one read of the candidate record (and of
        the rest of its block when longer than guessed)."""
        keys, index, limit = idx.keys, idx.cols[0], self._limit
        while i < idx.n and keys[i] == key:
            pos = HEADER_SIZE + index[i] * RECORD_SIZE
            if pos + RECORD_SIZE <= limit:
                buf = self._io.read_range(pos, min(limit, pos + 8 * RECORD_SIZE))
                if buf[:32] == raw:
                    found = self._file_at(buf, pos, pos)
                    if found is not None:
                        return found
            i += 1
        return default

    def xorb(self, h: XetHash | bytes | str, default: XorbInfo | None = None
             ) -> XorbInfo | None:
        """The xorb with hash ``h`` (through the xorb lookup table when present)."""
        if self._closed:
            raise self._closed_error()
        raw = h if type(h) is XetHash or (type(h) is bytes and len(h) == 32) else _as_raw(h)
        idx = self._xorb_index
        if idx is None:
            return self._xorbs_by_hash.get(bytes(raw), default)
        key = _U64.unpack_from(raw)[0]
        keys, i, n = idx.keys, idx.first(key), idx.n
        index, limit = idx.cols[0], self._records_limit
        base0 = self.footer.xorb_info_offset  # type: ignore[union-attr]  # index: a footer
        while i < n and keys[i] == key:
            rec = index[i]
            pos = base0 + rec * RECORD_SIZE
            if pos + RECORD_SIZE <= limit:
                buf, base = self._block(pos, 64 << 10)
                if buf[pos - base : pos - base + 32] == raw:
                    h_, fl, nc, in_xorb, on_disk = _XORB_HEAD.unpack_from(buf, pos - base)
                    nbytes = (1 + nc) * RECORD_SIZE
                    if pos + nbytes <= limit:
                        buf, base = self._whole_block(buf, base, pos, nbytes)
                        recs = np.frombuffer(buf, _model.CHUNK_DTYPE, count=nc,
                                             offset=pos - base + RECORD_SIZE)
                        recs.flags.writeable = False
                        info = object.__new__(XorbInfo)  # chunks decoded when read
                        object.__setattr__(info, "__dict__", {
                            "hash": _new_hash(h_), "flags": fl, "_chunks": recs,
                            "num_bytes_in_xorb": in_xorb, "num_bytes_on_disk": on_disk,
                            "record_index": rec, "offset": pos})
                        return info
            i += 1
        return default

    def find_chunk(self, h: XetHash | bytes | str, *, keyed: bool = False) -> ChunkRef | None:
        """Find a chunk by its plain hash (a hash object, 32 stored bytes or display hex).

        When the footer carries a non-zero HMAC key the hash is keyed first (the shard stores
        keyed hashes), unless ``keyed=True`` says it already is.

        The candidates of the truncated hash, then the full hash is compared at each candidate
        record: from the chunk lookup table when present (through ranged requests: the table
        as one range, then the chunk's record and its xorb's header), otherwise from an index
        of the xorb section built once with numpy. Without a table the first of repeated
        chunks (in section order) is found; the table's order among equal keys is
        unspecified. On a mapped shard the first lookup builds a probe table
        (see :mod:`._fast`), then answers as the instance's own ``find_chunk``. Returns None
        when the chunk is not in the shard.
        """
        fast = self._fast_chunk
        if fast is None:
            fast = self._fast_chunk = self.__dict__["find_chunk"] = self._make_fast_chunk()
        return fast(h, keyed=keyed)

    def _make_fast_chunk(self) -> Callable[..., ChunkRef | None]:
        if self._closed:  # close() dropped the lookup made before: every call comes here
            raise self._closed_error()
        if not self._local:  # ranged reads
            return self._find_chunk_general
        f = self.footer
        t = self.chunk_lookup
        if t is not None:
            assert f is not None
            base, rows = f.xorb_info_offset, t
        else:
            base, rows = self._layout.xorb_info_offset, self._chunk_rows
        hmac = bytes(f.hmac_key) if f is not None and not f.hmac_key.is_zero else None
        return _fast.chunk_lookup(rows["key"], rows["xorb"], rows["chunk"], base, hmac,
                                  self._all, self._slicer, self._limit,
                                  self._find_chunk_general)

    def _find_chunk_general(self, h: XetHash | bytes | str, *,
                            keyed: bool = False) -> ChunkRef | None:
        """:meth:`find_chunk` on any source (with the sorted index)."""
        raw = h if type(h) is XetHash or (type(h) is bytes and len(h) == 32) else _as_raw(h)
        f = self.footer
        if not keyed and f is not None and not f.hmac_key.is_zero:
            raw = xh.keyed_chunk_hash(bytes(f.hmac_key), bytes(raw))
        base0, idx = self._chunk_index
        key = _U64.unpack_from(raw)[0]
        keys, i, n = idx.keys, idx.first(key), idx.n
        xorbs, chunks, limit, mem = idx.cols[0], idx.cols[1], self._limit, self._all
        if mem is not None:
            rawb = bytes(raw)
            while i < n and keys[i] == key:
                xr, ci = xorbs[i], chunks[i]
                pos = base0 + (xr + 1 + ci) * RECORD_SIZE
                if pos + RECORD_SIZE <= limit and mem[pos : pos + 32] == rawb:
                    return self._chunk_ref(mem, pos, mem, base0 + xr * RECORD_SIZE, xr, ci)
                i += 1
            return None
        while i < n and keys[i] == key:  # through ranged requests
            xr, ci = xorbs[i], chunks[i]
            pos = base0 + (xr + 1 + ci) * RECORD_SIZE
            xpos = base0 + xr * RECORD_SIZE
            if pos + RECORD_SIZE <= limit:
                if pos - xpos <= 64 << 10:  # xorb header .. chunk record: one range
                    buf = self._io.read_range(xpos, pos + RECORD_SIZE)
                    if buf[pos - xpos : pos - xpos + 32] == raw:
                        return self._chunk_ref(buf, pos - xpos, buf, 0, xr, ci)
                else:
                    xbuf, cbuf = _io.read_ranges(self._io, [(xpos, xpos + 32),
                                                            (pos, pos + RECORD_SIZE)])
                    if cbuf[:32] == raw:
                        return self._chunk_ref(cbuf, 0, xbuf, 0, xr, ci)
            i += 1
        return None

    @staticmethod
    def _chunk_ref(cbuf: bytes | memoryview, cofs: int, xbuf: bytes | memoryview, xofs: int,
                   xr: int, ci: int) -> ChunkRef:
        chash, start, size, fl, res = _TERM.unpack_from(cbuf, cofs)
        return _new_ref((_new_hash(xbuf[xofs : xofs + 32]), xr, ci,
                         _new_chunk((_new_hash(chash), start, size, fl, res))))
