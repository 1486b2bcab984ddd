"""CRC-64-xz (the CRC of the .xz format), as ZS uses it for its header and every block.

Rocksoft parameters: width 64, polynomial 0x42F0E1EBA9EA3693, reflected in and out, init and
xor-out 0xFFFFFFFFFFFFFFFF; check value 0x995DC9BBDF1939FA for ``b"123456789"``. Computed with
crcmod's C extension (``crcmod.mkCrcFun(0x142F0E1EBA9EA3693, initCrc=0, rev=True,
xorOut=0xFFFFFFFFFFFFFFFF)``); ZS stores it as a u64 little-endian.
"""

from __future__ import annotations

import struct

import crcmod

__all__ = ["KNOWN_ANSWERS", "crc64xz", "crc64xz_le"]

_crc = crcmod.mkCrcFun(0x142F0E1EBA9EA3693, initCrc=0, rev=True, xorOut=0xFFFFFFFFFFFFFFFF)
_U64 = struct.Struct("<Q")

#: Input -> CRC-64-xz: the catalogue's check value and values from xz's own test vectors.
KNOWN_ANSWERS: dict[bytes, int] = {
    b"123456789": 0x995DC9BBDF1939FA,
    b"": 0x0000000000000000,
}


def crc64xz(data: bytes | bytearray | memoryview, crc: int = 0) -> int:
    """CRC-64-xz of ``data`` (continuing from ``crc``, the CRC of the bytes before it)."""
    return int(_crc(data, crc))


def crc64xz_le(data: bytes | bytearray | memoryview) -> bytes:
    """CRC-64-xz of ``data`` as the 8 little-endian bytes ZS stores."""
    return _U64.pack(_crc(data))
