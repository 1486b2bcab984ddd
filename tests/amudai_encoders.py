"""Independent test-side encoders for Amudai numeric blocks (FORMAT_NOTES.md 4.4).

Shared by the cascade and ALP/FSST tests. Written from the notes literally (codes, the
``round_up(own + 2, 8) - 2`` metadata rule, FastLanes packing by the ORDER/lane formula,
paddings to 8), independently of the reader and of shardkit's writer.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

import numpy as np

from shardkit.formats.amudai.blocks import decode_numeric_values

Enc = Callable[[np.ndarray], bytes]
ORDER = [0, 4, 2, 6, 1, 5, 3, 7]


def meta(own: bytes) -> bytes:
    """Metadata area: ``own`` bytes zero-padded to ``round_up(len + 2, 8) - 2``."""
    size = -(-(len(own) + 2) // 8) * 8 - 2
    return own + bytes(size - len(own))


def code(c: int) -> bytes:
    return struct.pack("<H", c)


def pad8(b: bytes) -> bytes:
    return b + bytes(-len(b) % 8)


def unsigned(dt: np.dtype) -> np.dtype:
    return np.dtype(f"<u{np.dtype(dt).itemsize}")


def plain(a: np.ndarray) -> bytes:
    return code(1) + a.tobytes()


def single(a: np.ndarray) -> bytes:
    return code(7) + a[:1].tobytes()


def fl_pack(values: np.ndarray, width: int) -> bytes:
    """FastLanes chunks: lane l's bit stream takes element ORDER[r/8]*16 + (r%8)*128 + l."""
    bits = values.dtype.itemsize * 8
    lanes = 1024 // bits
    out = b""
    for lo in range(0, len(values), 1024):
        chunk = [int(v) for v in values[lo : lo + 1024]]
        chunk += [0] * (1024 - len(chunk))
        words = [0] * (lanes * width)
        for lane in range(lanes):
            stream = 0
            for r in range(bits):
                idx = ORDER[r // 8] * 16 + (r % 8) * 128 + lane
                stream |= (chunk[idx] & ((1 << width) - 1)) << (r * width)
            for k in range(width):
                words[lanes * k + lane] = stream >> (k * bits) & ((1 << bits) - 1)
        out += np.array(words, values.dtype).tobytes()
    return out


def flbitpack(width: int) -> Enc:
    return lambda a: code(2) + meta(bytes([width])) + fl_pack(a, width)


def for_(inner: Enc) -> Enc:
    def enc(a: np.ndarray) -> bytes:
        udt = np.dtype(f"<u{a.dtype.itemsize}")
        ref = a.min() if a.size else a.dtype.type(0)
        deltas = (a.view(udt) - np.array([ref], a.dtype).view(udt)[0]).astype(udt)
        return code(3) + meta(np.array([ref], a.dtype).tobytes()) + inner(deltas)
    return enc


def delta(inner: Enc) -> Enc:
    def enc(a: np.ndarray) -> bytes:
        u = a.view(unsigned(a.dtype))
        diffs = np.diff(u).astype(u.dtype).view(a.dtype)  # wrapping differences, type T
        return code(5) + meta(a[:1].tobytes()) + inner(diffs)
    return enc


def decode(section: bytes, n: int, dtype: str) -> np.ndarray:
    return decode_numeric_values(memoryview(section), n, np.dtype(dtype), base=0, field="t")
