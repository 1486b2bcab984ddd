"""ZSS block bodies: strict uleb128, data and index body decoders, the cached data block."""

from __future__ import annotations

from array import array
from bisect import bisect_left

from .model import _POS_TYPE, MAX_ULEB_BYTES, BlockInfo, _BodyError

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


def decode_records(body: bytes) -> list[bytes]:
    """The records of a decoded data-block body (``(uleb128 length, bytes)*``).

    Raises:
        _BodyError: A length is malformed or a record runs past the end (internal; the reader
            turns it into :class:`CorruptBlockError`).
    """
    out: list[bytes] = []
    append = out.append
    pos = 0
    n = len(body)
    while pos < n:
        ln = body[pos]
        if ln < 0x80:
            pos += 1
        else:
            ln, pos = _uleb_slow(body, pos, n)
        end = pos + ln
        if end > n:
            raise _BodyError(f"record of {ln} bytes runs past the end of the body", pos)
        append(body[pos:end])
        pos = end
    return out


def decode_index(body: bytes) -> tuple[list[bytes], list[int]]:
    """The entries of a decoded index-block body (``(uleb128 length, key, uleb128 voffset)*``).

    Returns:
        ``(keys, child_voffsets)``.

    Raises:
        _BodyError: A uleb128 is malformed or an entry runs past the end (internal; the reader
            parses such a body again with ``Zss.IndexBlockBody`` for a precise error).
    """
    keys: list[bytes] = []
    children: list[int] = []
    pos = 0
    n = len(body)
    while pos < n:
        ln = body[pos]
        if ln < 0x80:
            pos += 1
        else:
            ln, pos = _uleb_slow(body, pos, n)
        end = pos + ln
        if end >= n:
            raise _BodyError(f"index entry of {ln} key bytes runs past the end of the body", pos)
        keys.append(body[pos:end])
        child = body[end]
        pos = end + 1
        if child >= 0x80:  # voffsets are mostly 2-4 bytes: decoded inline, checked after
            child &= 0x7F
            shift = 7
            b = 0x80
            while b >= 0x80 and pos < n:
                b = body[pos]
                pos += 1
                child |= (b & 0x7F) << shift
                shift += 7
            if b >= 0x80 or b == 0 or pos - end > MAX_ULEB_BYTES:  # cut off, non-minimal, long
                child, pos = _uleb_slow(body, end, n)  # raises the precise error
        children.append(child)
    return keys, children


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

    def __init__(self, info: BlockInfo, body: bytes) -> None:
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
        lp = len(prefix)
        q = b.find(prefix)  # where the first candidate record's bytes would begin
        p = 0  # a length field (the walk's position)
        if self.ascii:  # the length field of a record starting at q is at q - 1
            while q != -1:
                c = q - 1
                lim = c - 8 * 128
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
                        raise _BodyError(f"record of {ln} bytes runs past the end of the body",
                                         d)
                    return None
            if d == q and ln >= lp:
                return p
            q = b.find(prefix, d if d > q else q + 1)
        return None


