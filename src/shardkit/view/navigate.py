"""Byte and text search, the data inspector and range export: the hex pane's tools.

Nothing here imports Textual. Search and export read the file in pieces of :data:`CHUNK`
bytes, so a search through a 1 GB file, or an export of a large range, holds one piece at a
time; a search can be stopped between two pieces.
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Callable

from ..errors import ShardkitError
from ..sources import ByteSource

__all__ = ["CHUNK", "export_range", "find", "inspect_bytes", "parse_pattern"]

#: Bytes read at a time by a search or an export.
CHUNK = 1 << 20

_HEX = re.compile(r"^(?:[0-9a-fA-F]{2}\s*)+$")


def parse_pattern(text: str) -> tuple[bytes, str]:
    """What ``/`` in the hex pane looks for: ``(bytes, how it is shown)``.

    ``"text"`` (in double quotes) is that text in UTF-8; hex digits in pairs (``53 57 48`` or
    ``535748``) are those bytes; anything else is text.

    Raises:
        ValueError: Nothing to look for.
    """
    t = text.strip()
    if len(t) >= 2 and t[0] == t[-1] == '"':
        data = t[1:-1].encode("utf-8")
        shown = f"text {t}"
    elif _HEX.match(t):
        data = bytes.fromhex(t.replace(" ", ""))
        shown = f"bytes {data.hex(' ')}"
    else:
        data = t.encode("utf-8")
        shown = f'text "{t}"'
    if not data:
        raise ValueError("nothing to look for")
    return data, shown


def find(source: ByteSource, pattern: bytes, start: int, *, backward: bool = False,
         chunk: int = CHUNK, progress: Callable[[int], None] | None = None) -> int | None:
    """The first offset at or after ``start`` (before it, ``backward``) where ``pattern``
    begins, or None; the file is read ``chunk`` bytes at a time (``progress(offset)`` after
    each piece may raise to stop)."""
    size = source.size
    n = len(pattern)
    chunk = max(chunk, 2 * n)
    if not backward:
        pos = max(0, start)
        while pos < size:
            end = min(size, pos + chunk)
            data = source.read_range(pos, min(size, end + n - 1))
            i = data.find(pattern)
            if i >= 0 and pos + i < end:
                return pos + i
            pos = end
            if progress is not None:
                progress(pos)
        return None
    hi = min(size, start + n - 1)  # a match must begin before `start`
    while hi > 0:
        lo = max(0, hi - chunk)
        data = source.read_range(lo, hi)
        i = data.rfind(pattern)
        if i >= 0:
            return lo + i
        if lo == 0:
            break
        hi = lo + n - 1
        if progress is not None:
            progress(lo)
    return None


def _uleb(data: bytes) -> str:
    value = shift = 0
    for i, b in enumerate(data[:10]):
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return f"{value} ({i + 1} bytes)"
    return "(not ended within 10 bytes)"


def _utf8(data: bytes) -> str:
    for n in (1, 2, 3, 4):
        try:
            ch = data[:n].decode("utf-8")
        except UnicodeDecodeError:
            continue
        return repr(ch) + f" U+{ord(ch):04X}" if ch.isprintable() else f"U+{ord(ch):04X}"
    return "(not UTF-8)"


def inspect_bytes(data: bytes) -> list[tuple[str, str]]:
    """The bytes at the cursor read as each type: ``(type, value)`` rows (the data
    inspector); a type needing more bytes than there are shows ``-``."""
    rows: list[tuple[str, str]] = []

    def fmt(code: str, size: int) -> str:
        if len(data) < size:
            return "-"
        value = struct.unpack(code, data[:size])[0]
        return f"{value:.7g}" if isinstance(value, float) else str(value)

    for bits, u, i in ((8, "B", "b"), (16, "H", "h"), (32, "I", "i"), (64, "Q", "q")):
        size = bits // 8
        if bits == 8:
            rows.append(("u8 / i8", f"{fmt(u, 1)} / {fmt(i, 1)}"))
            continue
        rows.append((f"u{bits} le / be", f"{fmt('<' + u, size)} / {fmt('>' + u, size)}"))
        rows.append((f"i{bits} le / be", f"{fmt('<' + i, size)} / {fmt('>' + i, size)}"))
    rows.append(("f32 le / be", f"{fmt('<f', 4)} / {fmt('>f', 4)}"))
    rows.append(("f64 le / be", f"{fmt('<d', 8)} / {fmt('>d', 8)}"))
    rows.append(("uleb128 varint", _uleb(data) if data else "-"))
    rows.append(("ascii", repr(chr(data[0])) if data and 32 <= data[0] < 127 else
                 (f"0x{data[0]:02x} (not printable)" if data else "-")))
    rows.append(("utf-8", _utf8(data) if data else "-"))
    rows.append(("binary", f"{data[0]:08b}" if data else "-"))
    return rows


def export_range(source: ByteSource, start: int, end: int, path: str | os.PathLike[str]
                 ) -> int:
    """Write bytes ``[start, end)`` of ``source`` to ``path`` (atomically: the name holds the
    whole range or nothing), :data:`CHUNK` bytes at a time; returns the count written.

    Raises:
        ShardkitError: The range is not in the file.
        OSError: The file cannot be written.
    """
    from ..writers._atomic import atomic_file

    if not 0 <= start <= end <= source.size:
        raise ShardkitError(f"range [{start}, {end}) is not in the file ({source.size} bytes)")
    with atomic_file(path) as out:
        pos = start
        while pos < end:
            piece = source.read_range(pos, min(end, pos + CHUNK))
            out.write(piece)
            pos += len(piece)
    return end - start
