"""CRC-64-xz (the CRC of the .xz format), as ZS uses it for its header and every block.

Rocksoft parameters: width 64, polynomial 0x42F0E1EBA9EA3693, reflected in and out, init and
xor-out 0xFFFFFFFFFFFFFFFF; check value 0x995DC9BBDF1939FA for ``b"123456789"``. ZS stores it
as a u64 little-endian.

Two implementations give the same values:

* ``lzma_crc64`` of liblzma, the library behind Python's own :mod:`lzma` module, called through
  :mod:`ctypes`: its CRC is the one that defines the check (CLMUL-accelerated in liblzma 5.4 and
  later, several GB/s) and a ctypes call releases the GIL, so block checks in reader threads run
  in parallel;
* crcmod's table-driven C extension (``crcmod.mkCrcFun(0x142F0E1EBA9EA3693, initCrc=0,
  rev=True, xorOut=0xFFFFFFFFFFFFFFFF)``, about 100 MB/s), used where liblzma cannot be loaded.

:data:`BACKEND` names the one in use; :func:`crc64xz_crcmod` is always the crcmod one (the tests
check both against each other). Setting ``SHARDKIT_CRC64XZ=crcmod`` in the environment before
the import selects crcmod.
"""

from __future__ import annotations

import ctypes
import os
import struct
import sys
from collections.abc import Callable

import crcmod

__all__ = ["BACKEND", "KNOWN_ANSWERS", "crc64xz", "crc64xz_crcmod", "crc64xz_le"]

_crcmod = crcmod.mkCrcFun(0x142F0E1EBA9EA3693, initCrc=0, rev=True,
                          xorOut=0xFFFFFFFFFFFFFFFF)
_U64 = struct.Struct("<Q")

#: Input -> CRC-64-xz: the catalogue's check value and values from xz's own test vectors.
KNOWN_ANSWERS: dict[bytes, int] = {
    b"123456789": 0x995DC9BBDF1939FA,
    b"": 0x0000000000000000,
}


def _load_liblzma() -> Callable[[bytes, int, int], int] | None:
    """``lzma_crc64(buf, size, crc)`` of liblzma, checked against the check value, or None.

    The usual names are tried first; ``ctypes.util.find_library`` (which may start
    ``ldconfig`` or a compiler, tens of milliseconds) only when none of them loads.
    """
    names = {"darwin": ["liblzma.5.dylib"], "win32": ["liblzma.dll", "lzma.dll"]}.get(
        sys.platform, ["liblzma.so.5"])
    fn = _first_lzma_crc64(names)
    if fn is None:
        import ctypes.util

        found = ctypes.util.find_library("lzma")
        fn = _first_lzma_crc64([found] if found and found not in names else [])
    return fn


def _first_lzma_crc64(names: list[str]) -> Callable[[bytes, int, int], int] | None:
    """The first of ``names`` that loads and gives the known answers, or None."""
    for name in names:
        try:
            fn = ctypes.CDLL(name).lzma_crc64
        except (OSError, AttributeError):
            continue
        fn.restype = ctypes.c_uint64
        fn.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint64]
        if all(fn(k, len(k), 0) == v for k, v in KNOWN_ANSWERS.items()):
            return fn
    return None


_lib = None if os.environ.get("SHARDKIT_CRC64XZ") == "crcmod" else _load_liblzma()
#: The implementation in use: ``"liblzma"`` or ``"crcmod"``.
BACKEND = "crcmod" if _lib is None else "liblzma"


def crc64xz_crcmod(data: bytes | bytearray | memoryview, crc: int = 0, *,
                   length: int | None = None) -> int:
    """:func:`crc64xz` computed by crcmod's extension (the fallback)."""
    if length is not None and length != len(data):
        data = memoryview(data)[:length]
    return int(_crcmod(data, crc))


def crc64xz(data: bytes | bytearray | memoryview, crc: int = 0, *,
            length: int | None = None) -> int:
    """CRC-64-xz of ``data`` (of its first ``length`` bytes when given), continuing from
    ``crc`` (the CRC of the bytes before it).

    ``length`` spares the copy of a slice: ``crc64xz(raw, length=n)`` is the CRC of
    ``raw[:n]``.
    """
    if _lib is None:
        return crc64xz_crcmod(data, crc, length=length)
    n = len(data) if length is None else length
    if not 0 <= n <= len(data):
        raise ValueError(f"length {n} is outside 0..{len(data)}")
    if type(data) is not bytes:
        data = bytes(memoryview(data)[:n])
    return int(_lib(data, n, crc))


def crc64xz_le(data: bytes | bytearray | memoryview) -> bytes:
    """CRC-64-xz of ``data`` as the 8 little-endian bytes ZS stores."""
    return _U64.pack(crc64xz(data))
