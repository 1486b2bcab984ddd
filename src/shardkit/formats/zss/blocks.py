"""ZSS index block bodies (data bodies and the uleb128 decoder: :mod:`.._sorted_set`)."""

from __future__ import annotations

from .._sorted_set import (
    MAX_ULEB_BYTES,
    _DataBlock,
    _index_key,
    _uleb_slow,
    decode_records,
)

__all__ = ["_DataBlock", "_uleb_slow", "decode_index", "decode_records"]


# alike in shape to zs/model.py decode_index (the key is read by the shared _index_key): a ZSS
# entry has one voffset, decoded inline here (most take 2-4 bytes), a ZS entry an offset and a
# length
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
        key, end = _index_key(body, pos, n, "body")
        keys.append(key)
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

