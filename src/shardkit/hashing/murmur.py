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
from typing import TYPE_CHECKING, Any, cast

import mmh3

from .._accel import accelerator
from .._lazy import lazy_module

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_module("numpy")

__all__ = ["hash_uint64", "hash_uint64_array", "murmurhash3_x86_128_low64"]

_MASK64 = (1 << 64) - 1

#: The optional C accelerator of :func:`hash_uint64_array` (``_murmur.c``: the same answers as
#: the numpy twin and ``mmh3``, see the tests); ``SHARDKIT_NO_NATIVE`` set: numpy, for
#: comparisons.
_native: Any = accelerator("shardkit.hashing._murmur")


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


def _fmix32(h: np.ndarray) -> np.ndarray:
    h ^= h >> np.uint32(16)
    h *= np.uint32(0x85EBCA6B)
    h ^= h >> np.uint32(13)
    h *= np.uint32(0xC2B2AE35)
    h ^= h >> np.uint32(16)
    return h


def _rotl32(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def _hash_uint64_numpy(arr: np.ndarray) -> np.ndarray:
    """MurmurHash3_x86_128 (seed 0) of 8-byte keys, low 64 bits, in numpy: an 8-byte input is
    one 8-byte tail (no 16-byte block), so the whole function is a few array operations."""
    words = arr.astype("<u8").view("<u4").reshape(-1, 2)
    k1, k2 = words[:, 0].astype(np.uint32), words[:, 1].astype(np.uint32)
    c1, c2, c3 = np.uint32(0x239B961B), np.uint32(0xAB0E9789), np.uint32(0x38B34AE5)
    k2 = _rotl32(k2 * c2, 16) * c3
    k1 = _rotl32(k1 * c1, 15) * c2
    length = np.uint32(8)
    h1, h2 = k1 ^ length, k2 ^ length
    h3 = np.full_like(h1, length)
    h4 = h3.copy()
    h1 = h1 + h2 + h3 + h4
    h2, h3, h4 = h2 + h1, h3 + h1, h4 + h1
    h1, h2, h3, h4 = _fmix32(h1), _fmix32(h2), _fmix32(h3), _fmix32(h4)
    h1 = h1 + h2 + h3 + h4
    h2 = h2 + h1
    return cast("np.ndarray", h1.astype(np.uint64) | (h2.astype(np.uint64) << np.uint64(32)))


def hash_uint64_array(values: Iterable[int] | np.ndarray) -> np.ndarray:
    """:func:`hash_uint64` of many keys, as a ``uint64`` numpy array (computed with numpy
    array arithmetic for more than a few keys: the same values, see the tests)."""
    arr = np.ascontiguousarray(np.asarray(values, dtype="<u8"))
    if _native is not None and arr.size:
        out = np.empty(arr.shape, "<u8")
        _native.murmur_u64(arr, out)
        return out.astype(np.uint64, copy=False)
    if arr.size > 64:
        with np.errstate(over="ignore"):
            return _hash_uint64_numpy(arr.reshape(-1)).reshape(arr.shape)
    raw = arr.tobytes()
    h64 = mmh3.hash64
    out = np.fromiter((h64(raw[i : i + 8], 0, False, False)[0]
                       for i in range(0, len(raw), 8)), dtype=np.uint64, count=arr.size)
    return out.reshape(arr.shape)  # the input's shape, as the other paths keep it
