"""The Xet MDB reader: header, footer, section walk, bulk decoding, the mapping protocol and
verification; the lookups come from :mod:`.lookups`, the summaries from :mod:`.summary`."""

from __future__ import annotations

import itertools
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any, NamedTuple

from ..._kaitai import kaitai_errors, parse
from ..._layouts import layouts, view_of
from ..._lazy import lazy_module
from ...errors import (
    EntryNotFoundError,
    LayoutError,
    ShardkitError,
    TruncatedError,
    UnsupportedVersionError,
)
from ...generated.xet_mdb_shard import XetMdbShard
from ...hashing import xet as xh
from ...sources import ByteSource, as_stream, open_source
from ..base import Reader
from . import _io
from . import model as _model
from . import verify as _verify
from .lookups import MdbLookups
from .model import (
    _BOOKEND_HASH,
    _FOOTER_AT,
    _HEADER_AT,
    _XORB_HEAD,
    FILE_FLAG_METADATA_EXT,
    FILE_FLAG_VERIFICATION,
    FOOTER_SIZE,
    HEADER_SIZE,
    LEGACY_TAGS,
    RECORD_SIZE,
    ChunkEntry,
    ChunkRef,
    FileInfo,
    MdbFooter,
    MdbHeader,
    Term,
    XetHash,
    XorbInfo,
    _Blocks,
    _Layout,
    _new_hash,
)
from .summary import MdbSummary
from .verify import VerifyReport

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_module("numpy")

# word 0 of a block head's hash, then its flags and count (file and xorb heads alike)
_WALK = view_of(layouts.XET_MDB_SHARD__FILE_BLOCK__HEAD, ("file_hash", "Q"), "flags",
                "num_terms")
_DROP_EVERY = 4096  # blocks walked between drops of the mapped pages
_ALL_ONES = 2**64 - 1


class _SectionWalk(NamedTuple):
    """How a record section's blocks are counted: a head record, then ``count`` records (in
    the u32 after word 0 of the head's hash, the flags in the one before), then the records
    that the flags add (file blocks: verification entries, one per term; a metadata ext)."""

    kind: str  # "file" or "xorb": /file_info, /xorb_info in the model
    unit: str
    count_field: str
    verification_flag: int = 0
    metadata_ext_flag: int = 0


_FILE_WALK = _SectionWalk("file", "terms", "num_terms", FILE_FLAG_VERIFICATION,
                          FILE_FLAG_METADATA_EXT)
_XORB_WALK = _SectionWalk("xorb", "chunks", "num_chunks")
#: The cached attributes that hold views of the file (dropped by close()).
_MAPPED = ("_layout", "files", "xorbs", "_xorb_records", "_kaitai_objects", "file_lookup",
           "xorb_lookup", "chunk_lookup", "_file_index", "_xorb_index", "_chunk_index",
           "_chunk_rows", "_files_by_hash", "_xorbs_by_hash", "file", "find_chunk")


def _before_bookend(blocks: Any) -> Iterator[Any]:
    """The blocks of a generated parser's section up to (not including) its bookend."""
    return itertools.takewhile(lambda b: not b.is_bookend, blocks)


def _footer_from_ks(f: Any) -> MdbFooter:
    return MdbFooter(
        f.version, f.ofs_file_info, f.ofs_xorb_info, f.ofs_file_lookup, f.num_file_lookup,
        f.ofs_xorb_lookup, f.num_xorb_lookup, f.ofs_chunk_lookup, f.num_chunk_lookup,
        XetHash(f.chunk_hash_hmac_key), f.creation_timestamp, f.key_expiry, bytes(f.reserved),
        f.len_stored_on_disk, f.len_materialized, f.len_stored, f.ofs_footer)


# -- the reader ----------------------------------------------------------------------------------


class MdbShard(MdbLookups, MdbSummary, Reader):
    """A Xet MDB shard.

    Opening reads the header and, when the header announces one, the footer. Lookups through
    lookup tables read only the table entry and the records they point at; everything else
    walks the record sections once (cached).

    Example::

        with shardkit.open("b04a...f1.mdb") as s:
            info = s.file("1686ca90c1751860f1a32b3b103bed9f483886112eb26a999a6568a43fd38f1c")
            print([str(t.xorb_hash) for t in info.terms])

    Args:
        source: The shard bytes.
        engine: ``"numpy"`` (bulk decoding of the records, the default) or ``"kaitai"``
            (objects built from the generated parser's tree; slower, same result).
    """

    format_id = "mdb"
    format_name = "Hugging Face Xet MDB shard"

    def __init__(self, source: ByteSource, *, engine: str = "numpy") -> None:
        super().__init__(source)
        self._closed = False
        if engine not in ("numpy", "kaitai"):
            raise ShardkitError(f"unknown engine {engine!r} (numpy or kaitai)")
        self.engine = engine
        size = source.size
        self._local = _io.is_local(source)
        # Local: the mapping is read in place. Remote: header and footer in one batch, so the
        # parser below reads them from memory (a footer-less body wastes 200 bytes).
        self._io: ByteSource = source
        self._whole: _io.WholeFile | None = None
        if not self._local:
            pre = _io.Prefetched(source)
            if size <= HEADER_SIZE + FOOTER_SIZE:
                pre.fetch([(0, size)])
            else:
                pre.fetch([(0, HEADER_SIZE), (size - FOOTER_SIZE, size)])
            self._io, self._whole = pre, _io.WholeFile(pre)
        head = self._io.read_range(0, min(32, size))
        for tag, what in LEGACY_TAGS.items():
            if head.startswith(tag):
                raise UnsupportedVersionError(
                    f"{source.name}: an MDB shard of {what}; only header v2 is supported",
                    offset=_HEADER_AT["tag"], field="/header/tag")
        self._mem_data: memoryview | bytes | None = None  # the whole file, on first need
        #: The whole file when at hand (a local view at once; a remote file once fetched).
        self._all: memoryview | bytes | None = None
        if self._local:
            self._all = self._mem
        #: What lookups slice blocks from: the source's own bytes or mapping when it has them
        #: (slicing gives bytes in one step), else the whole-file view.
        self._slicer: Any = getattr(source, "raw", None) if self._local else None
        if self._slicer is None or len(self._slicer) != size:
            self._slicer = self._all
        self._ks = parse(XetMdbShard, as_stream(self._io, buffer_size=HEADER_SIZE
                                                if self._local else 0),
                         magic_fields=("/header/tag",), version_fields=("/header/version",))
        self.header = MdbHeader(self._ks.header.version, self._ks.header.len_footer)
        self._footer_note: str | None = None  # why an announced footer was not used
        self.footer: MdbFooter | None = self._read_footer()
        self._limit = self._records_limit  # fixed from here on (hot paths read the attribute)
        #: The lookups' hot paths, made on first use (see :mod:`._fast`).
        self._fast_file: Callable[..., FileInfo | None] | None = None
        self._fast_chunk: Callable[..., ChunkRef | None] | None = None

    @property
    def _mem(self) -> memoryview | bytes:
        """The whole file: a zero-copy view when the source has one; through ranged requests,
        fetched once in large blocks (the header and footer already read are not asked again).

        Opening and lookups through lookup tables do not need it; the section walks, lookups
        without tables and hashes of the whole file use it.
        """
        if self._closed:
            raise self._closed_error()
        mem = self._mem_data
        if mem is None:
            if self._whole is not None:
                mem = self._whole.get()
            else:
                view = getattr(self.source, "view", None)
                size = self.source.size
                mem = view(0, size) if view is not None else self.source.read_range(0, size)
            self._mem_data = self._all = mem
            if self._whole is not None or getattr(self, "_slicer", None) is None:
                self._slicer = mem
        return mem

    @property
    def _have_all(self) -> bool:
        """The whole file is at hand (local, or already fetched)."""
        return self._whole is None or self._whole.loaded

    def _read(self, start: int, end: int) -> bytes | memoryview:
        """Bytes ``[start, end)``: from the whole file when at hand, else one ranged read."""
        if self._have_all:
            return self._mem[start:end]
        return self._io.read_range(start, end)

    def __enter__(self) -> MdbShard:
        return self

    def close(self) -> None:
        """Release the file mapping. From then on, whatever needs the shard's bytes (lookups,
        ``files``, ``xorbs``, ``verify``, ``content_hash``...) raises ``ValueError``; objects
        already returned stay usable."""
        self._closed = True
        if isinstance(self._mem_data, memoryview) and self._whole is None:
            self._mem_data.release()
        self._mem_data = self._all = b""
        self._fast_file = self._fast_chunk = None
        for name in _MAPPED:  # what holds views of the mapping is built again, and refused
            self.__dict__.pop(name, None)
        super().close()

    def _closed_error(self) -> ValueError:
        return ValueError(f"{self.source.name}: the MdbShard is closed")

    # -- header, footer, layout ---------------------------------------------------------------

    def _ks_at(self, cls: type, pos: int, prefix: str, **mapping: Any) -> Any:
        """Parse generated type ``cls`` at absolute ``pos`` (errors mapped to ours)."""
        stream = as_stream(self._io)
        stream.seek(pos)
        with kaitai_errors(prefix=prefix, **mapping):
            return cls(stream, None, self._ks)

    def _read_footer(self) -> MdbFooter | None:
        size = self.source.size
        if self.header.footer_size != FOOTER_SIZE:
            return None
        pos = size - FOOTER_SIZE
        if pos < HEADER_SIZE + 2 * RECORD_SIZE:
            self._footer_note = (f"the header announces a {FOOTER_SIZE}-byte footer but the "
                                 f"file has only {size} bytes")
            return None
        error: ShardkitError | None = None
        footer: MdbFooter | None = None
        try:
            ks = self._ks_at(XetMdbShard.Footer, pos, "/footer",
                             version_fields=("/footer/version",))
            footer = _footer_from_ks(ks)
        except ShardkitError as exc:
            error = exc
        if footer is not None and footer.footer_offset == pos:
            return footer
        # Not a footer where one should be: a footer-less body whose header lies (the file ends
        # at the xorb bookend, FORMAT_NOTES section 11), or a corrupt footer.
        layout = self._layout
        if pos >= layout.xorb_info_end:
            if error is not None:
                raise error
            assert footer is not None
            raise LayoutError(f"footer_offset {footer.footer_offset} != file length - "
                              f"{FOOTER_SIZE} ({pos})", offset=pos + _FOOTER_AT["ofs_footer"],
                              field="/footer/ofs_footer")
        self._footer_note = ("the header announces a footer but the file ends "
                             f"{size - layout.xorb_info_end} bytes after the xorb bookend")
        return None

    @property
    def _records_limit(self) -> int:
        """Where the record sections must end at the latest."""
        if self.__dict__.get("footer") is not None:
            return self.source.size - FOOTER_SIZE
        return self.source.size

    @cached_property
    def _layout(self) -> _Layout:
        """Walk both record sections to their bookends, checking every count against the bytes
        that remain before anything is read."""
        mem, limit = self._mem, self._records_limit
        file_pos, pos = self._walk_section(_FILE_WALK, HEADER_SIZE, limit)
        xorb_info_offset = pos + RECORD_SIZE
        xorb_pos, pos = self._walk_section(_XORB_WALK, xorb_info_offset, limit)
        self._drop_pages()
        return _Layout(mem, np.frombuffer(file_pos, np.int64), xorb_info_offset,
                       np.frombuffer(xorb_pos, np.int64), pos + RECORD_SIZE)

    def _walk_section(self, walk: _SectionWalk, pos: int, limit: int) -> tuple[array[int], int]:
        """The offsets of one record section's blocks, from ``pos`` to its bookend (and where
        the bookend is); each block's record count is checked against the bytes left before
        ``limit`` before the next one is read."""
        mem = self._mem
        starts: array[int] = array("q")
        add = starts.append
        unpack = _WALK.unpack_from
        verification, metadata_ext = walk.verification_flag, walk.metadata_ext_flag
        i = 0
        while True:
            if pos + RECORD_SIZE > limit:
                raise TruncatedError(
                    f"truncated: the {walk.kind} info section has no bookend: block {i} at "
                    f"{pos} needs {RECORD_SIZE} bytes, {max(0, limit - pos)} remain",
                    needed=RECORD_SIZE, available=max(0, limit - pos), offset=pos,
                    field=f"/{walk.kind}_info/blocks/{i}")
            w0, flags, n = unpack(mem, pos)
            if w0 == _ALL_ONES and mem[pos : pos + 32] == _BOOKEND_HASH:
                return starts, pos
            nrec = (1 + n + (n if flags & verification else 0)
                    + (1 if flags & metadata_ext else 0))
            end = pos + nrec * RECORD_SIZE
            if end > limit:
                counted = f"{nrec} records, " if walk.kind == "file" else ""
                raise TruncatedError(
                    f"truncated: {walk.kind} block {i} declares {n} {walk.unit} ({counted}"
                    f"{nrec * RECORD_SIZE} bytes) but {limit - pos} bytes remain before the "
                    "end of the sections",
                    needed=nrec * RECORD_SIZE, available=limit - pos, offset=pos + 36,
                    field=f"/{walk.kind}_info/blocks/{i}/{walk.count_field}")
            add(pos)
            pos, i = end, i + 1
            if not i % _DROP_EVERY:
                self._drop_pages()

    def _drop_pages(self) -> None:
        """After a walk over the sections: let a mapped file's pages go from this process
        (:meth:`FileSource.release`; they stay in the page cache), so walks do not leave
        the whole shard resident."""
        release = getattr(self.source, "release", None)
        if release is not None:
            release()

    @property
    def xorb_info_offset(self) -> int:
        """Start of the xorb section (where it really is)."""
        return self._layout.xorb_info_offset

    @property
    def xorb_info_end(self) -> int:
        """The byte after the xorb bookend."""
        return self._layout.xorb_info_end

    def _records(self, start: int, end: int) -> np.ndarray:
        return np.frombuffer(self._mem, _model.RECORD_DTYPE, count=(end - start) // RECORD_SIZE,
                             offset=start)

    # -- bulk decoding ------------------------------------------------------------------------

    @cached_property
    def files(self) -> Sequence[FileInfo]:
        """Every file block, in section order: a sequence whose :class:`FileInfo` objects are
        built on first access (and kept), each decoding its terms, verification hashes and
        sha256 the first time one is read. ``engine="kaitai"`` gives a tuple."""
        if self.engine == "kaitai":
            return self._kaitai_objects[0]
        layout = self._layout
        pos = layout.file_pos
        mem = self._mem

        def make(i: int) -> FileInfo:
            if self._closed:  # a sequence taken before close()
                raise self._closed_error()
            info = self._file_at(mem, 0, int(pos[i]))
            if info is None:  # the walk checked every block fits: not reached
                raise LayoutError(f"file block {i} does not fit the sections",
                                  offset=int(pos[i]), field=f"/file_info/blocks/{i}")
            return info

        return _Blocks(len(pos), make)

    @cached_property
    def _xorb_records(self) -> np.ndarray:
        """The xorb section's records (without the bookend) as a read-only CHUNK_DTYPE view."""
        layout = self._layout
        base = layout.xorb_info_offset
        recs = np.frombuffer(self._mem, _model.CHUNK_DTYPE, offset=base,
                             count=(layout.xorb_info_end - RECORD_SIZE - base) // RECORD_SIZE)
        recs.flags.writeable = False
        return recs

    @cached_property
    def xorbs(self) -> Sequence[XorbInfo]:
        """Every xorb block, in section order: a sequence whose :class:`XorbInfo` objects are
        built on first access (and kept).

        Each xorb's chunks stay records (a view of the shard) until its ``chunks`` attribute is
        read; see :class:`XorbInfo`. ``engine="kaitai"`` gives a tuple.
        """
        if self.engine == "kaitai":
            return self._kaitai_objects[1]
        layout = self._layout
        base, recs, positions = layout.xorb_info_offset, self._xorb_records, layout.xorb_pos
        mem = self._mem

        def make(i: int) -> XorbInfo:
            if self._closed:  # a sequence taken before close()
                raise self._closed_error()
            pos = int(positions[i])
            h, fl, cnt, in_xorb, on_disk = _XORB_HEAD.unpack_from(mem, pos)
            r = (pos - base) // RECORD_SIZE
            info = object.__new__(XorbInfo)  # a frozen dataclass, filled directly
            object.__setattr__(info, "__dict__", {
                "hash": _new_hash(h), "flags": fl, "_chunks": recs[r + 1 : r + 1 + cnt],
                "num_bytes_in_xorb": in_xorb, "num_bytes_on_disk": on_disk,
                "record_index": r, "offset": pos})
            return info

        return _Blocks(len(positions), make)

    @cached_property
    def _kaitai_objects(self) -> tuple[tuple[FileInfo, ...], tuple[XorbInfo, ...]]:
        """Files and xorbs built from the generated parser's tree (``engine="kaitai"``)."""
        _ = self._layout  # precise errors for bad counts come from the walk
        with kaitai_errors():
            root = self._ks
            files = tuple(FileInfo(
                XetHash(b.file_hash), b.flags,
                tuple(Term(XetHash(t.xorb_hash), t.flags, t.len_unpacked,
                           t.chunk_index_start, t.chunk_index_end) for t in b.terms),
                tuple(XetHash(v.range_hash)
                      for v in getattr(b, "verification_entries", None) or ()),
                XetHash(b.metadata_ext.sha256) if b.has_metadata_ext else None,
                b.reserved, (b.ofs_block - HEADER_SIZE) // RECORD_SIZE, b.ofs_block)
                for b in _before_bookend(root.file_info.blocks))
            base = root.ofs_xorb_info
            xorbs = tuple(XorbInfo(
                XetHash(b.xorb_hash), b.flags,
                tuple(ChunkEntry(XetHash(c.chunk_hash), c.ofs_unpacked, c.len_unpacked,
                                 c.flags, c.reserved) for c in b.chunks),
                b.len_unpacked, b.len_on_disk, (b.ofs_block - base) // RECORD_SIZE,
                b.ofs_block)
                for b in _before_bookend(root.xorb_info.blocks))
        return files, xorbs

    # -- mapping protocol (CLI `ls` / `get`) --------------------------------------------------

    def __getitem__(self, key: XetHash | bytes | str) -> FileInfo:
        try:
            found = self.file(key)
        except ValueError as exc:
            if self._closed:
                raise
            raise EntryNotFoundError(key, str(exc)) from exc
        if found is None:
            raise EntryNotFoundError(key, f"no file {XetHash(key)} in this shard")
        return found

    def __contains__(self, key: object) -> bool:
        try:
            return self.file(key) is not None  # type: ignore[arg-type]  # else TypeError
        except (ValueError, TypeError):
            if self._closed:
                raise
            return False

    def __len__(self) -> int:
        return len(self._layout.file_pos)

    def keys(self) -> Iterator[XetHash]:
        """File hashes, in section order."""
        positions = self._layout.file_pos.tolist()
        mem = self._slicer if self._slicer is not None else self._mem
        for pos in positions:
            yield _new_hash(mem[pos : pos + 32])

    __iter__ = keys

    def items(self) -> Iterator[tuple[XetHash, FileInfo]]:
        """``(file hash, file)`` of every file block, in section order. The files are built
        as the walk reaches them and not kept (``files`` keeps what it builds): memory stays
        at one file whatever the shard's size."""
        files = self.files
        walk = files.walk() if isinstance(files, _Blocks) else iter(files)
        for i, info in enumerate(walk, 1):
            yield info.hash, info
            if not i % _DROP_EVERY:
                self._drop_pages()

    def parse_key(self, text: str) -> XetHash:
        """A file hash from its display hex (as ``shardkit get`` takes it)."""
        return XetHash(text)  # InvalidKeyError (a usage error) when it is not 64 hex digits

    def format_key(self, key: XetHash | bytes) -> str:
        """A file hash's display hex."""
        return str(XetHash(key))

    # -- verification -------------------------------------------------------------------------

    def verify(self, progress: Callable[[int, int], None] | None = None, *,
               name_check: bool = False, other_shards: Iterable[MdbShard] = (),
               strict: bool = False) -> VerifyReport:
        """Run every check; return the problems found (empty list: the shard is sound) and,
        in the result's ``notes``, what could not be checked here.

        Besides the frame, totals, tables, sizes and hashes, the order writers guarantee is
        checked (check ``lookup_table`` and ``order``): every lookup table's keys ascend, and
        a shard with lookup tables (xet-core's full writer) has its file and xorb sections
        sorted by hash. Shards without tables carry no order promise and are not checked for
        one. Words xet-core leaves zero (a file header's reserved word, the unused halves of
        verification and metadata records and bookends, a chunk's last word) must be zero
        (check ``reserved``), and flag bits nobody defines must be clear.

        Nothing is passed over silently: files whose terms use xorbs described in no shard
        at hand, and hashes that HMAC-keyed chunk hashes keep from being recomputed, are
        counted in the report's ``notes``. What no check can cover: a file's sha256 (its
        content is not in the shard), the footer's timestamps, and ``num_bytes_on_disk``.

        Args:
            progress: Called as ``progress(done, total)`` over xorbs and files.
            name_check: Also check the shard's content hash against a ``<hash>.mdb`` file name.
            other_shards: Shards whose xorb sections may describe xorbs this shard's files use
                (their terms and file hashes are then checked too).
            strict: Count every check that could not be made (files whose xorbs are in
                other shards, hashes hidden by HMAC-keyed chunk hashes, a name check without
                a ``<hash>.mdb`` name) as a problem instead of a note.

        Returns:
            A :class:`VerifyReport`: a list of :class:`~shardkit.errors.Problem` with a
            ``notes`` attribute (one note per kind of check not made, with counts).
        """
        if self._closed:
            raise self._closed_error()
        return _verify.verify(self, progress, name_check=name_check, other_shards=other_shards,
                              strict=strict)

    # -- conveniences -------------------------------------------------------------------------

    def content_hash(self) -> XetHash:
        """The shard's content hash (what its ``<hash>.mdb`` file name should be)."""
        return XetHash(xh.shard_hash(self._mem))

    def iter_chunks(self) -> Iterator[tuple[XorbInfo, int, ChunkEntry]]:
        """(xorb, chunk index, chunk) for every chunk, in section order."""
        for x in self.xorbs:
            for i, c in enumerate(x.chunks):
                yield x, i, c


def open_mdb(target: Any) -> MdbShard:
    """Open a path, bytes or ByteSource as an :class:`MdbShard` (no format detection)."""
    return MdbShard(open_source(target))
