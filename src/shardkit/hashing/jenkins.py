"""Bob Jenkins' 1996 lookup2 hash keeping all three words, as cmph computes it
(``src/jenkins_hash.c``: ``__jenkins_hash_vector``, ``mix``): one key in pure Python, a fast
path for 32-byte keys, and every row of a numpy array at once.

The hash of :mod:`.cmph_chd` (CHD_PH queries) and :mod:`.cmph_build` (building them).
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["jenkins_hash_vector"]

_M32 = 0xFFFFFFFF
_GOLDEN = 0x9E3779B9  # initial value of Jenkins' a and b
_KEY32 = struct.Struct("<8I")


def jenkins_hash_vector(seed: int, key: bytes) -> tuple[int, int, int]:
    """Computes cmph's ``jenkins_hash_vector_``: Jenkins' lookup2 hash keeping all three words.

    Key bytes are unsigned, as in cmph's ``__jenkins_hash_vector(seed, const unsigned char *k,
    keylen, hashes)``.  All arithmetic wraps modulo 2**32.

    Args:
        seed: The 32-bit seed stored in the dumped hash state.
        key: The key bytes (any bytes-like object).

    Returns:
        The three hash words ``(hashes[0], hashes[1], hashes[2])``.

    Raises:
        ValueError: If ``seed`` is not in ``[0, 2**32)`` or the key is 2**32 bytes or longer.
    """
    if not 0 <= seed <= _M32:
        raise ValueError(f"seed must be a 32-bit unsigned integer, got {seed}")
    data = bytes(key)
    length = len(data)
    if length > _M32:
        raise ValueError(f"key is {length} bytes long; cmph key lengths are 32-bit")
    nfull = length // 12
    # The tail (length % 12 bytes, possibly none) is zero-padded to a 12-byte block: zero
    # bytes add nothing, which reproduces the fall-through switch of the C code exactly.
    tail = data[nfull * 12 :] + b"\0" * (12 - length % 12 if length % 12 else 12)
    words = struct.unpack(f"<{3 * nfull + 3}I", data[: nfull * 12] + tail)
    a = b = _GOLDEN
    c = seed
    for i in range(0, 3 * nfull, 3):
        a += words[i]
        b += words[i + 1]
        c = (c + words[i + 2]) & _M32
        a, b, c = _mix(a, b, c)
    # The first byte of c is reserved for the length, so the tail bytes 8..10 go 8 bits up.
    c = (c + length + (words[-1] << 8)) & _M32
    a += words[-3]
    b += words[-2]
    return _mix(a, b, c)


#: ``mix()``'s shifts, step by step: (bits, to the left).
_MIX_SHIFTS = ((13, False), (8, True), (13, False), (12, False), (16, True), (5, False),
               (3, False), (10, True), (15, False))


def _mix(a: int, b: int, c: int) -> tuple[int, int, int]:
    """Jenkins' ``mix(a, b, c)`` on Python ints; ``c`` must already be reduced to 32 bits.

    ``(x ^ y) & M == (x & M) ^ (y & M)`` also for negative Python ints, so each subtraction
    chain is masked once.  ``a`` and ``b`` may exceed 32 bits on entry (they are only added to
    or subtracted from before being reassigned); every right-shifted operand is already masked.
    """
    a = ((a - b - c) ^ (c >> 13)) & _M32
    b = ((b - c - a) ^ (a << 8)) & _M32
    c = ((c - a - b) ^ (b >> 13)) & _M32
    a = ((a - b - c) ^ (c >> 12)) & _M32
    b = ((b - c - a) ^ (a << 16)) & _M32
    c = ((c - a - b) ^ (b >> 5)) & _M32
    a = ((a - b - c) ^ (c >> 3)) & _M32
    b = ((b - c - a) ^ (a << 10)) & _M32
    c = ((c - a - b) ^ (b >> 15)) & _M32
    return a, b, c


def _lookup2_abc(seed: int, key: bytes) -> tuple[int, int, int]:
    """``jenkins_hash_vector(seed, key)`` with a fast path for 32-byte keys (SWH's sha256).

    The lookups of :class:`ChdPh` and :class:`LazyChdPh` share it; ``a`` comes back reduced to
    32 bits.
    """
    if len(key) == 32:
        # jenkins_hash_vector() unrolled for 32 bytes (_mix written out twice, not called: this
        # runs for every key a pure lookup hashes): two 12-byte blocks, then the 8-byte
        # tail (words 6 and 7) plus the length in c.  Only b and c are ever right-shifted
        # by mix(); a is only added, subtracted and left-shifted before being masked, so it
        # is reduced to 32 bits once, at the end (the low 32 bits are unaffected).  For the
        # same reason (the low 32 bits of a sum depend only on the low 32 bits of its
        # terms), the mask of the last line of a mix() is shared with the addition to c
        # that follows it.  The two golden-ratio constants cancel in the first a - b.
        w0, w1, w2, w3, w4, w5, w6, w7 = _KEY32.unpack(key)
        b = 0x9E3779B9 + w1
        c = (seed + w2) & 0xFFFFFFFF
        a = (w0 - w1 - c) ^ (c >> 13)
        b = ((b - c - a) ^ (a << 8)) & 0xFFFFFFFF
        c = ((c - a - b) ^ (b >> 13)) & 0xFFFFFFFF
        a = (a - b - c) ^ (c >> 12)
        b = ((b - c - a) ^ (a << 16)) & 0xFFFFFFFF
        c = ((c - a - b) ^ (b >> 5)) & 0xFFFFFFFF
        a = (a - b - c) ^ (c >> 3)
        b = ((b - c - a) ^ (a << 10)) & 0xFFFFFFFF
        c = (((c - a - b) ^ (b >> 15)) + w5) & 0xFFFFFFFF
        a += w3
        b += w4
        a = (a - b - c) ^ (c >> 13)
        b = ((b - c - a) ^ (a << 8)) & 0xFFFFFFFF
        c = ((c - a - b) ^ (b >> 13)) & 0xFFFFFFFF
        a = (a - b - c) ^ (c >> 12)
        b = ((b - c - a) ^ (a << 16)) & 0xFFFFFFFF
        c = ((c - a - b) ^ (b >> 5)) & 0xFFFFFFFF
        a = (a - b - c) ^ (c >> 3)
        b = ((b - c - a) ^ (a << 10)) & 0xFFFFFFFF
        c = (((c - a - b) ^ (b >> 15)) + 32) & 0xFFFFFFFF
        a += w6
        b += w7
        a = (a - b - c) ^ (c >> 13)
        b = ((b - c - a) ^ (a << 8)) & 0xFFFFFFFF
        c = ((c - a - b) ^ (b >> 13)) & 0xFFFFFFFF
        a = (a - b - c) ^ (c >> 12)
        b = ((b - c - a) ^ (a << 16)) & 0xFFFFFFFF
        c = ((c - a - b) ^ (b >> 5)) & 0xFFFFFFFF
        a = (a - b - c) ^ (c >> 3)
        b = ((b - c - a) ^ (a << 10)) & 0xFFFFFFFF
        c = ((c - a - b) ^ (b >> 15)) & 0xFFFFFFFF
        return a & 0xFFFFFFFF, b, c
    return jenkins_hash_vector(seed, key)


def _mix_np(a: Any, b: Any, c: Any) -> None:
    """Jenkins' ``mix(a, b, c)`` in place on ``uint32`` numpy arrays (wrapping arithmetic).

    The nine steps of :func:`_mix` as one loop: each step is ``x -= y; x -= z; x ^= z shifted``
    on the next rotation of ``(a, b, c)``; a Python loop of nine costs nothing beside the array
    passes.
    """
    x, y, z = a, b, c
    for shift, left in _MIX_SHIFTS:
        x -= y
        x -= z
        x ^= (z << shift) if left else (z >> shift)
        x, y, z = y, z, x


def _jenkins_hash_vectors_np(seed: int, rows: npt.NDArray[np.uint8]) -> tuple[Any, Any, Any]:
    """:func:`jenkins_hash_vector` of every row of a 2-D ``uint8`` array, as ``uint32`` arrays."""
    import numpy as np

    count, length = rows.shape
    nfull = length // 12
    # Zero-pad every key to nfull + 1 blocks; the extra block holds the (possibly empty) tail.
    padded = np.zeros((count, 12 * (nfull + 1)), dtype=np.uint8)
    padded[:, :length] = rows
    words = padded.view("<u4").astype(np.uint32, copy=False)
    a = np.full(count, _GOLDEN, dtype=np.uint32)
    b = a.copy()
    c = np.full(count, seed, dtype=np.uint32)
    for i in range(0, 3 * nfull + 3, 3):
        a += words[:, i]
        b += words[:, i + 1]
        if i < 3 * nfull:
            c += words[:, i + 2]
        else:
            c += np.uint32(length & _M32)
            c += words[:, i + 2] << 8
        _mix_np(a, b, c)
    return a, b, c
