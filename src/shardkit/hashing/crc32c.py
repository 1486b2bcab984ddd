"""CRC-32C (Castagnoli, the iSCSI CRC), as ZSS uses it for its header and ``none+crc32c`` bodies.

The function is crcmod's predefined ``crc-32c`` (width 32, poly 0x1EDC6F41, init and xorout
0xFFFFFFFF, reflected), which is ``crcmod.mkCrcFun(0x11EDC6F41, initCrc=0, rev=True,
xorOut=0xFFFFFFFF)``. When the ``google-crc32c`` package is installed with its C extension
(SSE4.2 / ARMv8 CRC instructions: a 256 KiB block in ~0.01 ms instead of crcmod's ~0.6 ms) and
gives the known answers, it is used instead; :data:`IMPLEMENTATION` says which. Results are
stored as u32 little-endian in ZSS files. :data:`KNOWN_ANSWERS` holds the vectors the tests
check.
"""

from __future__ import annotations

import struct
from typing import Any, cast

import crcmod.predefined

__all__ = ["IMPLEMENTATION", "KNOWN_ANSWERS", "crc32c", "crc32c_crcmod", "crc32c_le"]

crc32c_crcmod = crcmod.predefined.mkCrcFun("crc-32c")

#: Input -> CRC-32C, from the Rocksoft catalogue ("123456789") and the reference ZSS tests.
KNOWN_ANSWERS: dict[bytes, int] = {
    b"123456789": 0xE3069283,
    b"": 0x00000000,
    b"a": 0xC1D04330,
    b"foo": 0xCFC4AE1D,
    b"hello world": 0xC99465AA,
    bytes(32): 0x8A9136AA,
    b"\xff" * 32: 0x62A8AB43,
    bytes(range(1, 241)): 0x24C5D375,
}


def crc32c(data: bytes | bytearray | memoryview, crc: int = 0) -> int:
    """CRC-32C of ``data``.

    Args:
        data: The bytes to checksum.
        crc: A previous result, to continue a running checksum over several pieces
            (``crc32c(b, crc32c(a)) == crc32c(a + b)``).

    Returns:
        The checksum as an unsigned 32-bit integer.

    Example::

        >>> hex(crc32c(b"123456789"))
        '0xe3069283'
    """
    return cast(int, _impl(data, crc))


def crc32c_le(data: bytes | bytearray | memoryview) -> bytes:
    """The CRC-32C of ``data`` as the 4 little-endian bytes a ZSS file stores."""
    return struct.pack("<I", _impl(data, 0))


#: Largest piece of a view copied at once for an implementation that takes bytes only.
_PIECE = 1 << 20


def _pick() -> tuple[str, Any]:
    try:
        import google_crc32c
    except ImportError:
        return "crcmod", crc32c_crcmod
    if getattr(google_crc32c, "implementation", "") != "c":
        return "crcmod", crc32c_crcmod

    def fast(data: bytes | bytearray | memoryview, crc: int = 0) -> int:
        if type(data) is not bytes:  # the C extension takes bytes only: a view goes in
            view = memoryview(data).cast("B")  # pieces, so no whole copy is made
            for i in range(0, len(view), _PIECE):
                crc = google_crc32c.extend(crc, bytes(view[i : i + _PIECE]))
            return crc
        return cast(int, google_crc32c.extend(crc, data) if crc else google_crc32c.value(data))

    if any(fast(data) != want for data, want in KNOWN_ANSWERS.items()):
        return "crcmod", crc32c_crcmod
    return "google-crc32c", fast


#: Which implementation :func:`crc32c` uses: ``"google-crc32c"`` or ``"crcmod"``.
IMPLEMENTATION, _impl = _pick()
