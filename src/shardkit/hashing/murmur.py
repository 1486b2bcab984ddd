"""MurmurHash3_x86_128, as Neuroglancer's sharded format uses it.

``neuroglancer_uint64_sharded_v1`` with ``"hash": "murmurhash3_x86_128"`` hashes the 8-byte
little-endian encoding of ``key >> preshift_bits`` with MurmurHash3_x86_128 (seed 0) and keeps
the low 64 bits of the 128-bit result (the first two 32-bit output words, ``h1 | h2 << 32``).
The arithmetic is done by the ``mmh3`` package (C); :func:`murmurhash3_x86_128_low64` is the
general function and :func:`hash_uint64` the shard-locating one.

Known answers (checked by ``tests/test_neuroglancer_hashing.py``):

>>> murmurhash3_x86_128_low64(b"")
0
>>> hash_uint64(1822975381 >> 6) & 0x7ff  # cloud-volume's pinned example: minishard 18
18
"""

from __future__ import annotations

from collections.abc import Iterable

import mmh3
import numpy as np

__all__ = ["hash_uint64", "hash_uint64_array", "murmurhash3_x86_128_low64"]

_MASK64 = (1 << 64) - 1


def murmurhash3_x86_128_low64(data: bytes, seed: int = 0) -> int:
    """Low 64 bits of MurmurHash3_x86_128 of ``data``.

    Args:
        data: The bytes to hash.
        seed: The 32-bit seed (Neuroglancer uses 0).

    Returns:
        An unsigned 64-bit integer.
    """
    return mmh3.hash64(data, seed, False, False)[0]


def hash_uint64(value: int) -> int:
    """Neuroglancer's murmur hash of a 64-bit key (already shifted by ``preshift_bits``).

    Args:
        value: An integer in ``[0, 2**64)``; it is hashed as 8 little-endian bytes.
    """
    return mmh3.hash64((value & _MASK64).to_bytes(8, "little"), 0, False, False)[0]


def hash_uint64_array(values: Iterable[int] | np.ndarray) -> np.ndarray:
    """:func:`hash_uint64` of many keys, as a ``uint64`` numpy array."""
    arr = np.ascontiguousarray(np.asarray(values, dtype="<u8"))
    raw = arr.tobytes()
    h64 = mmh3.hash64
    out = np.fromiter((h64(raw[i : i + 8], 0, False, False)[0]
                       for i in range(0, len(raw), 8)), dtype=np.uint64, count=arr.size)
    return out
