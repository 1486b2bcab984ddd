"""CRC-32C (Castagnoli, the iSCSI CRC), as ZSS uses it for its header and ``none+crc32c`` bodies.

The function is crcmod's predefined ``crc-32c`` (width 32, poly 0x1EDC6F41, init and xorout
0xFFFFFFFF, reflected), which is ``crcmod.mkCrcFun(0x11EDC6F41, initCrc=0, rev=True,
xorOut=0xFFFFFFFF)``; crcmod's C extension makes it about 400 MB/s. Results are stored as u32
little-endian in ZSS files. :data:`KNOWN_ANSWERS` holds the vectors the tests check.
"""

from __future__ import annotations

import struct

import crcmod.predefined

__all__ = ["KNOWN_ANSWERS", "crc32c", "crc32c_le"]

_CRC32C = crcmod.predefined.mkCrcFun("crc-32c")

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
    return _CRC32C(data, crc)


def crc32c_le(data: bytes | bytearray | memoryview) -> bytes:
    """The CRC-32C of ``data`` as the 4 little-endian bytes a ZSS file stores."""
    return struct.pack("<I", _CRC32C(data))
