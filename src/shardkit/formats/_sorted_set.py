"""What the ZSS and ZS readers share: the record body, the cached data block and the queries.

ZSS (njsmith/zss, 2013) and its released successor ZS (``zs`` 0.10.0) store a sorted multiset of
byte strings the same way: data-block bodies are ``(uleb128 length, record)*`` in non-decreasing
memcmp order, and a tree of index blocks whose entry keys bound the first record under each child.
They differ in framing, checksums, codecs and the index entries' fields. This module holds the
part that is the same: the strict uleb128 decoder, :func:`decode_records`, :class:`_DataBlock`
(a decoded data block kept as its body bytes, with lower-bound and prefix walks), and
:class:`SortedSetQueries`, the iteration and search methods both readers offer (``iter``,
``search``, ``keys``, ``count``, ``len``, ``in``, ``[]``, key parsing and display).

A reader using :class:`SortedSetQueries` provides ``_frames(offset, data_only)`` (framing and
payload of each block from a position on), ``decode_payload``, ``records_of``, ``_body_error``,
``_read_block(position, end_hint)``, ``index_of``, ``_level_error``, ``_child_end(block, i,
position)`` (where child ``i`` ends at the latest) and ``_root_end()``, and the attributes
``root``, ``data_size``, ``readahead``, ``_serial_decode`` (decoding is not worth a worker
thread) and ``_len``; :meth:`SortedSetQueries._cached` reads blocks through the caches.
"""

from __future__ import annotations

import codecs as _codecs
import itertools
import json
from array import array
from bisect import bisect_left
from collections.abc import Callable, Generator, Iterator
from typing import TYPE_CHECKING, Any

from .._accel import accelerator
from .._lru import ByteLRU
from ..errors import (
    EntryNotFoundError,
    InvalidKeyError,
    LayoutError,
    LimitExceededError,
    ShardkitError,
)

if TYPE_CHECKING:
    from concurrent.futures import Future

    from ..sources import ByteSource
    from .base import Section

#: The optional C accelerator of record bodies (same answers as the Python loops below).
_records: Any = accelerator("shardkit.formats._records")

MAX_ULEB_BYTES = 9
#: A streaming scan gives back the mapped pages behind it every this many bytes.
RELEASE_STEP = 32 << 20
_POS_TYPE = "I" if array("I").itemsize >= 4 else "L"  # record positions in bodies < 4 GiB

class _BodyError(Exception):
    """Internal: a body failed to parse at body position ``pos``."""

    def __init__(self, message: str, pos: int) -> None:
        super().__init__(message)
        self.pos = pos


def prefix_successor(prefix: bytes) -> bytes | None:
    """The smallest byte string greater than every string starting with ``prefix``.

    ``None`` when there is none (the empty prefix, or only 0xff bytes).

    Example::

        >>> prefix_successor(b"ab\\xff")
        b'ac'
    """
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return None
    return stripped[:-1] + bytes((stripped[-1] + 1,))


def _record(value: Any, what: str = "record") -> bytes:
    """A record/prefix/bound as bytes: bytes-like as is, ``str`` as UTF-8."""
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise InvalidKeyError(f"a {what} is bytes (or str, taken as UTF-8), "
                          f"not {type(value).__name__}")


def _escape(key: bytes) -> str:
    out = []
    for b in key:
        if b == 0x5C:
            out.append("\\\\")
        elif 0x20 <= b < 0x7F:
            out.append(chr(b))
        elif b == 0x0A:
            out.append("\\n")
        elif b == 0x09:
            out.append("\\t")
        elif b == 0x0D:
            out.append("\\r")
        else:
            out.append(f"\\x{b:02x}")
    return "".join(out)



# -- primitives --------------------------------------------------------------------------------


def _uleb_slow(buf: bytes | memoryview, pos: int, end: int) -> tuple[int, int]:
    """Strict uleb128 at ``buf[pos]``: ``(value, position after it)``; raises _BodyError."""
    value = 0
    shift = 0
    start = pos
    while True:
        if pos >= end:
            raise _BodyError("uleb128 runs past the end", start)
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            if b == 0 and pos - start > 1:
                raise _BodyError("non-minimal uleb128 (last byte 0x00)", start)
            return value, pos
        shift += 7
        if pos - start >= MAX_ULEB_BYTES:
            raise _BodyError(f"uleb128 longer than {MAX_ULEB_BYTES} bytes", start)


def _prefixed(body: bytes, pos: int, n: int) -> tuple[int, int]:
    """The ``(start, end)`` of the uleb128-length-prefixed item at ``body[pos]`` (a record, an
    index key); the caller checks ``end`` against what must follow it."""
    ln = body[pos]
    if ln < 0x80:
        pos += 1
    else:
        ln, pos = _uleb_slow(body, pos, n)
    return pos, pos + ln


def _index_key(body: bytes, pos: int, n: int, container: str) -> tuple[bytes, int]:
    """The key of the ZS or ZSS index entry at ``body[pos]`` and the position after it, where
    the child's position must follow (``container`` names the body in the message).

    :func:`_prefixed` inlined: one call per index entry, not two (index decoding is on every
    cold lookup's path)."""
    ln = body[pos]
    if ln < 0x80:
        pos += 1
    else:
        ln, pos = _uleb_slow(body, pos, n)
    end = pos + ln
    if end >= n:
        raise _BodyError(f"index entry of {end - pos} key bytes runs past the end of the "
                         f"{container}", pos)
    return body[pos:end], end


def decode_records(body: bytes) -> list[bytes]:
    """The records of a decoded data-block body (``(uleb128 length, bytes)*``).

    With the C accelerator (``_records.split``) in one call; without it, a body with no byte
    >= 0x80 (text records shorter than 128 bytes: every length is one byte) is split by a
    branch-free loop, unrolled by four, and any other body by the general one (which also
    names the fault of a body the accelerator refuses).

    Raises:
        _BodyError: A length is malformed or a record runs past the end (internal; the reader
            turns it into :class:`CorruptBlockError`).
    """
    if _records is not None:
        got = _records.split(body)
        if got is not None:
            return got  # type: ignore[no-any-return]  # the C extension is untyped
        return _decode_records_general(body)  # raises the precise error
    return _decode_records_python(body)


def _decode_records_python(body: bytes) -> list[bytes]:
    """:func:`decode_records` without the accelerator."""
    if not body.isascii():
        return _decode_records_general(body)
    out: list[bytes] = []
    append = out.append
    b = body
    n = len(b)
    pos = 0
    lim = n - 4 * 128  # four records of at most 128 bytes each cannot pass the end
    while pos < lim:
        s = pos + 1
        pos = s + b[pos]
        append(b[s:pos])
        s = pos + 1
        pos = s + b[pos]
        append(b[s:pos])
        s = pos + 1
        pos = s + b[pos]
        append(b[s:pos])
        s = pos + 1
        pos = s + b[pos]
        append(b[s:pos])
    while pos < n:
        s = pos + 1
        pos = s + b[pos]
        append(b[s:pos])
    if pos != n:  # the last record runs past the end: the general loop says where
        return _decode_records_general(body)
    return out


def _decode_records_general(body: bytes) -> list[bytes]:
    """:func:`decode_records` for any body: lengths of any size, each record checked."""
    out: list[bytes] = []
    append = out.append
    pos = 0
    n = len(body)
    while pos < n:
        pos, end = _prefixed(body, pos, n)
        if end > n:
            raise _BodyError(f"record of {end - pos} bytes runs past the end of the body", pos)
        append(body[pos:end])
        pos = end
    return out


class ScanReleaser:
    """Gives the pages a front-to-back scan has read back to the kernel, every RELEASE_STEP.

    For sources that map the file (:meth:`FileSource.release`); a no-op for others. Keeps a
    scan's resident memory bounded whatever the file's size.
    """

    __slots__ = ("_done", "_release")

    def __init__(self, source: Any, start: int) -> None:
        self._release = getattr(source, "release", None)
        self._done = start

    def passed(self, offset: int) -> None:
        """The scan has read everything before ``offset``."""
        if self._release is not None and offset - self._done >= RELEASE_STEP:
            self._release(self._done, offset)
            self._done = offset


class _DataBlock:
    """A decoded data block as the lookup cache keeps it: the body, not a list of records.

    Lookups walk the length fields from the start of the body and stop at the record wanted.
    :meth:`index` records where every record starts (an ``array`` of 4-byte positions, about a
    quarter of the body's size for 16-byte records), after which a lookup is a bisection.
    Methods raise :class:`_BodyError` on a malformed body; the reader names the block.

    Attributes:
        info: The block's framing.
        body: The decoded body.
        ascii: No byte is >= 0x80, so every length field is one byte (the fast walk).
        heads: ``None``, or the position of every record's length field and then
            ``len(body)``.
    """

    __slots__ = ("ascii", "body", "heads", "info")

    def __init__(self, info: Any, body: bytes) -> None:
        self.info = info
        self.body = body
        self.ascii = body.isascii()
        self.heads: array[int] | None = None

    def index(self) -> array[int]:
        """Positions of all length fields, plus ``len(body)`` (built once, then kept)."""
        if self.heads is not None:
            return self.heads
        b = self.body
        n = len(b)
        heads = array(_POS_TYPE if n < 1 << 32 else "Q")
        append = heads.append
        p = d = ln = 0
        if self.ascii:
            while p < n:
                append(p)
                p += b[p] + 1
            if p != n:
                last = heads[-1]
                ln, d = b[last], last + 1
        else:
            while p < n:
                append(p)
                ln = b[p]
                if ln < 0x80:
                    d = p + 1
                else:
                    ln, d = _uleb_slow(b, p, n)
                p = d + ln
        if p != n:
            raise _BodyError(f"record of {ln} bytes runs past the end of the body", d)
        append(n)
        self.heads = heads
        return heads

    def record_at(self, p: int) -> tuple[bytes, int]:
        """The record whose length field is at ``p``, and the position after it."""
        b = self.body
        ln = b[p]
        if ln < 0x80:
            d = p + 1
        else:
            ln, d = _uleb_slow(b, p, len(b))
        end = d + ln
        if end > len(b):
            raise _BodyError(f"record of {ln} bytes runs past the end of the body", d)
        return b[d:end], end

    def _key(self, i: int) -> bytes:
        heads = self.heads
        assert heads is not None
        p = heads[i]
        ln = self.body[p]
        d = p + 1 if ln < 0x80 else _uleb_slow(self.body, p, len(self.body))[1]
        return self.body[d:heads[i + 1]]

    def lower_bound(self, key: bytes) -> int:
        """Position of the length field of the first record >= ``key`` (``len(body)``: none)."""
        heads = self.heads
        if heads is not None:
            return heads[bisect_left(range(len(heads) - 1), key, key=self._key)]
        b = self.body
        n = len(b)
        p = 0  # invariant: every record before p is < key
        if self.ascii:
            lim = n - 8 * 128  # 8 one-byte-length records span at most 1024 bytes
            while p < lim:
                q = p + b[p] + 1
                q += b[q] + 1
                q += b[q] + 1
                q += b[q] + 1
                q += b[q] + 1
                q += b[q] + 1
                q += b[q] + 1
                q += b[q] + 1
                if b[q + 1:q + 1 + b[q]] >= key:
                    break
                p = q
        while p < n:
            record, end = self.record_at(p)
            if record >= key:
                return p
            p = end
        return n

    def find_prefix(self, prefix: bytes) -> int | None:
        """Position of the length field of the first record starting with ``prefix``, or None.

        Records are sorted, so the first record (in block order) that starts with ``prefix``
        is the first one >= ``prefix``. ``bytes.find`` proposes where its bytes begin; the
        walk along the length fields, which only ever moves forward, confirms that a record
        starts there, or skips to the next occurrence after the record it landed in.
        """
        b = self.body
        n = len(b)
        if self.heads is not None or not prefix:
            p = self.lower_bound(prefix)
            return p if p < n and self.record_at(p)[0].startswith(prefix) else None
        q = b.find(prefix)  # where the first candidate record's bytes would begin
        if self.ascii:
            return _find_prefix_ascii(b, prefix, q)
        return _find_prefix_uleb(b, prefix, q)


def _find_prefix_ascii(b: bytes, prefix: bytes, q: int) -> int | None:
    """:meth:`_DataBlock.find_prefix` in a body whose length fields are all one byte: the
    length field of a record starting at ``q`` is at ``q - 1``."""
    n = len(b)
    lp = len(prefix)
    p = 0  # a length field (the walk's position)
    while q != -1:
        c = q - 1
        lim = c - 8 * 128
        # written out 8 times, as lower_bound's walk and decode_records' 4 steps are (and the
        # one-byte uleb128 test inline in each walk): a loop or a helper here costs a Python
        # jump or call per record on every prefix search
        while p < lim:  # 8 steps of at most 128 bytes cannot pass c
            p += b[p] + 1
            p += b[p] + 1
            p += b[p] + 1
            p += b[p] + 1
            p += b[p] + 1
            p += b[p] + 1
            p += b[p] + 1
            p += b[p] + 1
        while p < c:
            p += b[p] + 1
        if p == c and b[c] >= lp:
            return c
        if p >= n:
            if p > n:
                raise _BodyError("a record runs past the end of the body", n)
            return None
        q = b.find(prefix, max(p, q) + 1)
    return None


def _find_prefix_uleb(b: bytes, prefix: bytes, q: int) -> int | None:
    """:meth:`_DataBlock.find_prefix` in a body with uleb128 length fields of any size."""
    n = len(b)
    lp = len(prefix)
    p = 0  # a length field (the walk's position)
    while q != -1:
        while True:
            ln = b[p]
            if ln < 0x80:
                d = p + 1
            else:
                ln, d = _uleb_slow(b, p, n)
            if d >= q:
                break
            p = d + ln
            if p >= n:
                if p > n:
                    raise _BodyError(f"record of {ln} bytes runs past the end of the body", d)
                return None
        if d == q and ln >= lp:
            return p
        q = b.find(prefix, d if d > q else q + 1)
    return None




def header_metadata(raw: str | bytes, offset: int) -> dict[str, Any]:
    """A ZS or ZSS header's metadata: a JSON object, else LayoutError at ``offset``."""
    try:
        metadata = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        why = "nested too deeply to decode" if isinstance(exc, RecursionError) else str(exc)
        raise LayoutError(f"metadata is not JSON: {why}", offset=offset,
                          field="/header/metadata") from exc
    if not isinstance(metadata, dict):
        raise LayoutError(f"metadata is a JSON {type(metadata).__name__}, not an object",
                          offset=offset, field="/header/metadata")
    return metadata


#: Most bytes of a block body decompressed in one step.
INFLATE_STEP = 16 << 20


def inflate_capped(d: Any, payload: bytes, cap: int) -> tuple[bytes | None, bool, bytes]:
    """Decompress a block payload with a fresh decompressor ``d``: ``(body, end of stream
    seen, bytes after it)``.

    ``d`` is a zlib-style ``decompressobj`` (ZSS zlib, ZS deflate: input past ``max_length``
    waits in ``unconsumed_tail``) or an LZMA/BZ2 decompressor (``needs_input``). The body is
    produced in pieces of at most 16 MiB and given up (``None``) as soon as it passes ``cap``,
    so a decompression bomb costs at most ``cap`` + 16 MiB of memory; a body that fits is
    decompressed in one step.
    """
    parts: list[bytes] = []
    total = 0
    if hasattr(d, "unconsumed_tail"):
        data = payload
        while True:
            want = min(cap + 1 - total, INFLATE_STEP)
            piece = d.decompress(data, want)
            total += len(piece)
            if total > cap:
                return None, False, b""
            parts.append(piece)
            data = d.unconsumed_tail
            if d.eof or (not data and len(piece) < want):
                break
    else:
        body = d.decompress(payload, max_length=min(cap + 1, INFLATE_STEP))
        parts, total = [body], len(body)
        while not d.eof and not d.needs_input and total <= cap:
            piece = d.decompress(b"", max_length=min(cap + 1 - total, INFLATE_STEP))
            total += len(piece)
            parts.append(piece)
        if total > cap:
            return None, False, b""
    return (parts[0] if len(parts) == 1 else b"".join(parts)), d.eof, d.unused_data


def frames_until_error(frames: Iterator[Any], add: Any) -> Iterator[Any]:
    """The items of a block walk; a framing error is reported once through
    ``add("framing", None, message, field, offset)`` and ends the walk (``verify``)."""
    while True:
        try:
            item = next(frames, None)
        except ShardkitError as exc:
            add("framing", None, exc.message, exc.field, exc.offset)
            return
        if item is None:
            return
        yield item


def check_items_sorted(add: Any, where: int, items: list[bytes], what: str, field: str
                       ) -> None:
    """The order check of one ZSS or ZS block in verify: ``items`` (its records or index
    keys) sorted, else one ``order`` problem naming the first pair out of order."""
    for j in range(1, len(items)):
        if items[j] < items[j - 1]:
            add("order", where, f"{what} out of order at item {j}: "
                f"{_escape(items[j - 1][:40])!r} then {_escape(items[j][:40])!r}", field)
            return


class SortedSetQueries:
    """Iteration and search over a sorted set of records in blocks with an index tree."""

    root: int
    data_size: int
    readahead: int
    _serial_decode: bool
    _codec: str
    max_block_size: int
    _len: int | None
    _first_block: int = 0  # position of the first block
    if TYPE_CHECKING:  # what the summary and the dump use of the host class (a Reader)
        format_id: str
        format_name: str
        source: ByteSource
        codec: str

        def summary(self, counts: bool = False) -> dict[str, Any]: ...
        def sections(self) -> list[Section]: ...
        def iter_blocks(self) -> Iterator[tuple[Any, bytes]]: ...
        def index_block(self, position: int) -> Any: ...

    def _set_up(self, cache_blocks: int, max_block_size: int, readahead: int,
                cache_index_blocks: int) -> None:
        """The reader options (negative sizes are 0) and the empty caches (thread-safe)."""
        self.cache_blocks = max(0, cache_blocks)
        self.cache_index_blocks = max(0, cache_index_blocks)
        self.max_block_size = max_block_size
        self.readahead = max(0, readahead)
        # decoded blocks, charged their decoded bytes, bounded in number
        self._cache: ByteLRU[int, tuple[Any, Any]] = ByteLRU(None, max_items=self.cache_blocks)
        self._index_cache: ByteLRU[int, tuple[Any, Any]] = ByteLRU(
            None, max_items=self.cache_index_blocks)
        self._len = None

    def _refuse_unfinished(self, magic: bytes, error: type[ShardkitError], why: str) -> None:
        """Raise ``error`` when the file starts with ``magic``, the one its writer puts first
        and replaces with the real magic last: the writer never finished it."""
        source = self.source
        if source.read_range(0, min(8, source.size)) == magic:
            raise error(f"{source.name}: {why}", offset=0, field="/magic")

    def _where(self, position: int) -> str:
        raise NotImplementedError

    def _inflate_checked(self, info: Any, position: int, payload: bytes, field: str,
                         inflate: Callable[[str, bytes, int], tuple[bytes | None, bool, bytes]],
                         errors: tuple[type[BaseException], ...],
                         corrupt: Callable[[str, int], ShardkitError]) -> bytes:
        """A compressed payload decoded: at most ``max_block_size`` bytes, the stream whole and
        nothing after it (``corrupt(message, offset)`` makes the format's error)."""
        cap = self.max_block_size
        where = f"block at {self._where(position)}"
        try:
            body, done, rest = inflate(self._codec, payload, cap)
        except errors as exc:
            raise corrupt(f"corrupt {self.codec} {where}: {exc}", info.payload_offset) from None
        if body is None:
            raise LimitExceededError(f"{where}: decompresses to more than {cap} bytes",
                                     offset=info.payload_offset, field=field)
        if not done:
            raise corrupt(f"corrupt {self.codec} {where}: the compressed stream is cut off",
                          info.payload_offset)
        if rest:
            raise corrupt(f"corrupt {self.codec} {where}: {len(rest)} bytes after the end of "
                          "the compressed stream", info.payload_offset + len(payload) - len(rest))
        return body

    # -- summary and dump: the keys both formats give ------------------------------------------

    def _summary_head(self) -> dict[str, Any]:
        """The first keys of ``summary()``: the format, the file and its codec."""
        return {
            "format": self.format_id,
            "format_name": self.format_name,
            "file": self.source.name,
            "file_size": self.source.size,
            "codec": self.codec,
        }

    def _block_detail(self, info: Any, body: bytes) -> dict[str, Any]:
        """One row of ``to_dict()["blocks_detail"]``: a block with its records or entries."""
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:
        """Summary (with counts), layout and every block with its records or index entries."""
        out = self.summary(counts=True)
        out["sections"] = [s.to_dict() for s in self.sections()]
        out["blocks_detail"] = [self._block_detail(info, body)
                                for info, body in self.iter_blocks()]
        return out

    @property
    def root_block(self) -> Any:
        """The root index block."""
        return self.index_block(self.root)

    def _root_end(self) -> int | None:
        """Where the root block ends at the latest (default: the end of the blocks)."""
        return self.data_size

    def _child_end(self, block: Any, i: int, position: int) -> int | None:
        """Where child ``i`` of the index block at ``position`` ends at the latest."""
        raise NotImplementedError

    def _frames(self, position: int = 0, data_only: bool = False
                ) -> Iterator[tuple[Any, bytes]]:
        raise NotImplementedError

    def _read_block(self, position: int, end_hint: int | None) -> tuple[Any, bytes]:
        """Framing and payload of the block at ``position`` (one read when ``end_hint``, a
        position the block ends at or before, allows it)."""
        raise NotImplementedError

    def _level_error(self, info: Any, level: int) -> None:
        """Raise: the block ``info`` is not at the ``level`` its parent expects."""
        raise NotImplementedError

    def index_of(self, info: Any, body: bytes) -> Any:
        """The entries of an index block's decompressed ``body`` (an ``IndexBlock``)."""
        raise NotImplementedError

    def _check_read(self, info: Any, level: int | None, position: int) -> None:
        """Checks of a block's framing just read, before its payload is decoded (ZS: the root
        is an index block, no extension block in the tree). Default: none."""

    def _data_block(self, info: Any, body: bytes) -> _DataBlock:
        """A data block's decompressed ``body`` as the cache keeps it (ZS refuses an empty
        one)."""
        return _DataBlock(info, body)

    def _cached(self, position: int, level: int | None = None, end_hint: int | None = None
                ) -> tuple[Any, Any]:
        """Decoded block at ``position`` through the LRU caches: (info, _DataBlock or the
        reader's IndexBlock).

        A data block found in the cache gets its record positions (:meth:`_DataBlock.index`).
        ``level``: the level the parent expects; ``end_hint``: see :meth:`_read_block`.
        """
        hit = self._index_cache.get(position)  # the caches are shared by threads (ByteLRU)
        if hit is None:
            hit = self._cache.get(position)
        if hit is not None:
            info, value = hit
            if level is not None and info.level != level:
                self._level_error(info, level)
            if info.level == 0 and value.heads is None:
                try:
                    value.index()
                except _BodyError as exc:
                    raise self._body_error(info, exc, "data") from None
            return hit
        info, payload = self._read_block(position, end_hint)
        if level is not None and info.level != level:
            self._level_error(info, level)
        self._check_read(info, level, position)
        body = self.decode_payload(info, payload)
        if info.level == 0:
            value = self._data_block(info, body)
            cache = self._cache
        else:
            value = self.index_of(info, body)
            cache = self._index_cache
        cache.put(position, (info, value), len(body))
        return info, value

    def decode_payload(self, info: Any, payload: bytes) -> bytes:
        """The decompressed body of a block's ``payload`` (its codec's, capped in size)."""
        raise NotImplementedError

    def records_of(self, info: Any, body: bytes) -> list[bytes]:
        """The records of a data block's decompressed ``body``, in order."""
        raise NotImplementedError

    def _body_error(self, info: Any, exc: _BodyError, what: str) -> ShardkitError:
        raise NotImplementedError

    def _data_bodies(self, voffset: int = 0, readahead: int = 0) -> Iterator[list[bytes]]:
        """Record lists of the data blocks from ``voffset`` on (index blocks skipped).

        With ``readahead`` and a compressing codec, up to that many payloads are decompressed
        ahead in worker threads (zlib and bz2 release the GIL), so memory stays bounded.
        """
        frames = self._frames(voffset, data_only=True)
        if not readahead or self._serial_decode:
            for info, payload in frames:
                yield self.records_of(info, self.decode_payload(info, payload))
            return
        from concurrent.futures import ThreadPoolExecutor

        pool = ThreadPoolExecutor(max_workers=readahead, thread_name_prefix="block-inflate")
        pending: list[tuple[Any, Future[bytes]]] = []
        try:
            for info, payload in frames:
                pending.append((info, pool.submit(self.decode_payload, info, payload)))
                if len(pending) > readahead:
                    first, fut = pending.pop(0)
                    yield self.records_of(first, fut.result())
            for info, fut in pending:
                yield self.records_of(info, fut.result())
        finally:
            for _, fut in pending:
                fut.cancel()
            pool.shutdown(wait=True)

    def __iter__(self) -> Iterator[bytes]:
        """Every record in order, streaming block by block (constant memory)."""
        return itertools.chain.from_iterable(self._data_bodies(self._first_block, self.readahead))

    def _descend(self, key: bytes) -> tuple[_DataBlock, bytes | None] | None:
        """The data block where records >= ``key`` begin, and the first key after it.

        At each index level the last entry whose key is < ``key`` is taken (so a run of
        duplicates of ``key`` that starts in an earlier block is found too; FORMAT.md section
        9). The first record >= ``key`` is then in that block or is the first record of the
        next data block, whose first record is the entry key after the one taken at the
        deepest level that has one (``None``: the block is the last one). ``None`` for a file
        with no records.
        """
        v = self.root
        level: int | None = None
        after: bytes | None = None
        hint: int | None = self._root_end()
        while True:
            info, value = self._cached(v, level, hint)
            if info.level == 0:
                return value, after
            block = value  # an index block: .keys and .children
            if not block.children:
                if v == self.root:
                    return None  # an empty file: the root index has no entries
                raise LayoutError(f"index block at {self._where(v)} has no entries",
                                  offset=info.offset, field=f"/blocks/@{v}/payload")
            i = max(bisect_left(block.keys, key) - 1, 0)
            if i + 1 < len(block.keys):
                after = block.keys[i + 1]
            hint = self._child_end(block, i, v)
            v = block.children[i]
            level = info.level - 1

    def _range(self, lo: bytes, hi: bytes | None, prefix: bool = False) -> Iterator[bytes]:
        """Records ``r`` with ``lo <= r < hi`` in order (``hi`` None: to the end).

        With ``prefix``, every record in the range starts with ``lo`` (``hi`` is at most
        ``prefix_successor(lo)``), so the first one is located with :meth:`_DataBlock.find_prefix`.
        Reads the index path, one data block, and the following data blocks only while records
        in the range remain (the index keys say whether the next block starts in the range).
        """
        found = self._descend(lo)
        if found is None:
            return
        block, after = found
        try:
            p = block.find_prefix(lo) if prefix else block.lower_bound(lo)
        except _BodyError as exc:
            raise self._body_error(block.info, exc, "data") from None
        if p is not None and not (yield from self._emit(block, p, hi)):
            return
        if after is None or (hi is not None and after >= hi):
            return
        frames = self._frames(block.info.end_voffset, data_only=True)
        item = next(frames, None)
        if item is None:
            return
        # the next block is decoded lazily too: a run of a few matches that crosses into it
        # costs a few records, not a whole decoded block
        if not (yield from self._emit(_DataBlock(item[0], self.decode_payload(*item)), 0, hi)):
            return
        for info, payload in frames:  # a long range: whole blocks
            records = self.records_of(info, self.decode_payload(info, payload))
            if hi is not None and records and records[-1] >= hi:
                yield from records[:bisect_left(records, hi)]
                return
            yield from records

    def _emit(self, block: _DataBlock, p: int, hi: bytes | None
              ) -> Generator[bytes, None, bool]:
        """Records of ``block`` from the length field at ``p`` while < ``hi``.

        The first few are decoded one by one; a longer run decodes the rest of the block at
        once. Returns True when the block ran out before ``hi``.
        """
        b = block.body
        n = len(b)
        try:
            for _ in range(16):
                if p >= n:
                    return True
                r, p = block.record_at(p)
                if hi is not None and r >= hi:
                    return False
                yield r
            if p >= n:
                return True
            try:
                records = decode_records(b[p:])
            except _BodyError as exc:
                raise _BodyError(str(exc), exc.pos + p) from None
        except _BodyError as exc:
            raise self._body_error(block.info, exc, "data") from None
        if hi is not None and records and records[-1] >= hi:
            yield from records[:bisect_left(records, hi)]
            return False
        yield from records
        return True

    def iter(self, start: bytes | None = None, stop: bytes | None = None) -> Iterator[bytes]:
        """Records ``r`` with ``start <= r < stop`` (either bound optional), in order."""
        if start is not None:
            yield from self._range(_record(start, "bound"),
                                   None if stop is None else _record(stop, "bound"))
            return
        if stop is None:
            yield from self
            return
        stop = _record(stop, "bound")
        for r in self:
            if r >= stop:
                return
            yield r

    def search(self, prefix: bytes | None = None, start: bytes | None = None,
               stop: bytes | None = None) -> Iterator[bytes]:
        """Records starting with ``prefix`` and within ``[start, stop)``, in order.

        Duplicates are all returned (the file is a multiset). Only the index blocks on the path
        to the first match and the data blocks holding matches are read (a data block after the
        last match is read only when the index does not show that the run ended).
        """
        if prefix is None:
            return self.iter(start, stop)
        prefix = _record(prefix, "prefix")
        start = None if start is None else _record(start, "bound")
        stop = None if stop is None else _record(stop, "bound")
        lo = prefix if start is None or start < prefix else start
        succ = prefix_successor(prefix)
        hi = succ if stop is None or (succ is not None and succ < stop) else stop
        # every record in [lo, hi) starts with prefix (prefix <= lo, hi <= succ)
        return self._range(lo, hi, prefix=lo == prefix)

    def keys(self, prefix: bytes | None = None, start: bytes | None = None,
             stop: bytes | None = None) -> Iterator[bytes]:
        """What ``shardkit ls`` lists: the records, filtered as :meth:`search` does."""
        return self.search(prefix=prefix, start=start, stop=stop)

    def count(self, prefix: bytes | None = None, start: bytes | None = None,
              stop: bytes | None = None) -> int:
        """Number of records :meth:`search` would give."""
        return sum(1 for _ in self.search(prefix, start, stop))

    def __len__(self) -> int:
        """Number of records (one streaming pass on first use, then remembered)."""
        if self._len is None:
            self._len = sum(len(b) for b in self._data_bodies(self._first_block, self.readahead))
        return self._len

    def __contains__(self, record: object) -> bool:
        if not isinstance(record, (bytes, bytearray, memoryview, str)):
            return False
        record = _record(record)
        return next(self._range(record, record + b"\x00", prefix=True), None) is not None

    def __getitem__(self, record: bytes) -> bytes:
        """The record itself when present (a set has no values); else EntryNotFoundError."""
        record = _record(record)
        if record in self:
            return record
        raise EntryNotFoundError(record, f"record not found: {_escape(record)!r}")

    def parse_key(self, text: str) -> bytes:
        """A record from the command line: ``hex:...``, or text with backslash escapes."""
        if text.startswith("hex:"):
            try:
                return bytes.fromhex(text[4:])
            except ValueError as exc:
                raise ShardkitError(f"not hex: {text!r}") from exc
        try:
            return _codecs.escape_decode(text.encode("utf-8"))[0]
        except ValueError as exc:
            raise ShardkitError(f"bad escape in {text!r}: {exc}") from exc

    def format_key(self, key: bytes, hex: bool = False) -> str:
        """A record's display form: escaped text (``\\xNN`` for other bytes), or hex."""
        return key.hex() if hex else _escape(key)

    # -- structure -----------------------------------------------------------------------------
