"""FMPH-GO, the minimal perfect hash function of the ``ph`` crate, in Python (plus numpy).

MOSAIC files (``swh-mosaic`` 0.6.1) map each key of an index to its rank in the index's
``IdxUnrolled`` array with a ``ph::fmph::GOFunction`` (``ph`` 0.10.0 on crates.io) in its default
configuration, serialized by ``GOFunction::write`` into the ``Map`` element. This module reads
that serialization and evaluates it for any key, giving exactly the value the crate gives, and
builds new functions that the crate reads and evaluates to the same bijection (byte for byte the
function the crate builds from the same keys).

The layout (``GOFunction::write``; every integer little-endian):

* ``u8`` bits per group, 16 (``TwoToPowerBitsStatic<4>``; ``GOFunction::read`` refuses others);
* the level sizes, in groups: a VByte count then one VByte per level (``binout::VByte``, LEB128
  with at most 8 groups of 7 bits and a 9th byte kept whole);
* the fingerprint array: ``ceil(16 * G / 64)`` ``u64`` words, where ``G`` is the total number of
  groups; bit ``i`` is bit ``i % 64`` of word ``i // 64``; level after level, each level's bits
  starting on a word boundary (a level has a multiple of 4 groups when the crate builds it);
* ``u8`` bits per seed, 4 (``TwoToPowerBitsStatic<2>``);
* the group seeds: ``ceil(4 * G / 64)`` ``u64`` words, the seed of global group ``g`` in bits
  ``4 * (g % 16)`` to ``4 * (g % 16) + 3`` of word ``g // 16``.

The rank structure (``bitm::ArrayWithRank101111``) is not stored: it is rebuilt on load.

Evaluation of a key (``GOFunction::get``), level ``l = 0, 1, ...`` with ``G_l`` groups and
``B_l`` groups before it:

* ``h = SipHash-1-3(k0 = k1 = 0)`` of ``u64le(l) || u64le(len(key)) || key``: the default
  ``BuildDefaultSeededHasher`` is ``Seedable<BuildHasherDefault<DefaultHasher>>`` (``seedable_hash``
  without optional features, as in swh-mosaic's lock file), which writes the seed first; a byte
  string hashes as its length (``usize``, 8 bytes) then its bytes;
* group ``g = B_l + ((h * G_l) >> 64)``, seed ``s`` = the group's 4-bit seed;
* bit ``b = 16 * g + (mix32((h mod 2**32) ^ s) mod 16)`` with ``mix32`` the 32-bit finalizer
  ``x ^= x >> 16; x *= 0x21f0aaad; x ^= x >> 15; x *= 0xd35a2d97; x ^= x >> 15``;
* if bit ``b`` is set, the value is the number of set bits before ``b`` (its rank); otherwise the
  next level is tried; after the last level the key is absent (``None``).

Construction (``GOBuilder::build_levels``, relative level size 100): a level for ``m`` remaining
keys has ``ceil(m / 64)`` 64-bit words, so ``4 * ceil(m / 64)`` groups. For each seed ``0..15``
every remaining key sets its bit; bits hit twice or more are cleared; each group keeps the seed
whose array has the most ones in it (the first such seed on a tie). The keys whose bit stays set
are placed; the others go to the next level. Building is deterministic, so :func:`build` returns
the very bytes swh-mosaic writes for the same keys.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from .._accel import accelerator
from ..errors import LayoutError, TruncatedError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
else:
    np = None  # replaced below: numpy is imported on first use


class _LazyNumpy:
    """numpy, imported on its first use (single lookups never need it)."""

    def __getattr__(self, name: str) -> Any:
        import numpy

        return getattr(numpy, name)


if not TYPE_CHECKING:
    np = _LazyNumpy()

#: The optional C accelerator (same answers and bytes as the Python path).
_native: Any = accelerator("shardkit.hashing._fmph")

__all__ = [
    "BITS_PER_GROUP",
    "BITS_PER_SEED",
    "GOFunction",
    "build",
    "build_with_ranks",
    "ranks_of",
    "siphash13",
]

BITS_PER_GROUP = 16
BITS_PER_SEED = 4
_M64 = (1 << 64) - 1
_M32 = (1 << 32) - 1
#: A build that goes this many levels without placing a key fails, as in the crate (duplicates).
_MAX_LEVELS_WITHOUT_REDUCTION = 10

# ---------------------------------------------------------------------------------------------
# SipHash-1-3 with the zero key (std's DefaultHasher), over u64le(seed) || u64le(len) || key
# ---------------------------------------------------------------------------------------------

_IV = (0x736F6D6570736575, 0x646F72616E646F6D, 0x6C7967656E657261, 0x7465646279746573)


def _sipround(v0: int, v1: int, v2: int, v3: int) -> tuple[int, int, int, int]:
    v0 = (v0 + v1) & _M64
    v1 = ((v1 << 13) | (v1 >> 51)) & _M64
    v1 ^= v0
    v0 = ((v0 << 32) | (v0 >> 32)) & _M64
    v2 = (v2 + v3) & _M64
    v3 = ((v3 << 16) | (v3 >> 48)) & _M64
    v3 ^= v2
    v0 = (v0 + v3) & _M64
    v3 = ((v3 << 21) | (v3 >> 43)) & _M64
    v3 ^= v0
    v2 = (v2 + v1) & _M64
    v1 = ((v1 << 17) | (v1 >> 47)) & _M64
    v1 ^= v2
    v2 = ((v2 << 32) | (v2 >> 32)) & _M64
    return v0, v1, v2, v3


def _absorb(state: tuple[int, int, int, int], m: int) -> tuple[int, int, int, int]:
    v0, v1, v2, v3 = state
    v0, v1, v2, v3 = _sipround(v0, v1, v2, v3 ^ m)
    return v0 ^ m, v1, v2, v3


# A memo of small integer states (not bytes, so not a ByteLRU): filled up to 4096 entries,
# then left as it is; read once per key hashed.
_prefix_cache: dict[tuple[int, int], tuple[int, int, int, int]] = {}


def _prefix_state(seed: int, length: int) -> tuple[int, int, int, int]:
    """The SipHash state after the seed and length words (the same for every key of a level)."""
    key = (seed, length)
    state = _prefix_cache.get(key)
    if state is None:
        state = _absorb(_absorb(_IV, seed & _M64), length & _M64)
        if len(_prefix_cache) < 4096:
            _prefix_cache[key] = state
    return state


def siphash13(seed: int, key: bytes) -> int:
    """The crate's ``hash_one(key, seed)`` for a byte string ``key`` (a 64-bit integer)."""
    v0, v1, v2, v3 = _prefix_state(seed, len(key))
    n_words = len(key) >> 3
    b = (((16 + len(key)) & 0xFF) << 56) | int.from_bytes(key[n_words << 3:], "little")
    mask = _M64
    # one round (inlined) after each message word and after the final word b
    for m in (*struct.unpack_from(f"<{n_words}Q", key), b):
        v3 ^= m
        v0 = (v0 + v1) & mask
        v1 = ((v1 << 13) | (v1 >> 51)) & mask ^ v0
        v0 = ((v0 << 32) | (v0 >> 32)) & mask
        v2 = (v2 + v3) & mask
        v3 = ((v3 << 16) | (v3 >> 48)) & mask ^ v2
        v0 = (v0 + v3) & mask
        v3 = ((v3 << 21) | (v3 >> 43)) & mask ^ v0
        v2 = (v2 + v1) & mask
        v1 = ((v1 << 17) | (v1 >> 47)) & mask ^ v2
        v2 = ((v2 << 32) | (v2 >> 32)) & mask
        v0 ^= m
    v2 ^= 0xFF
    # the finalization rounds: the round above (and _sipround) written out again, as a call
    # per round would slow every pure-Python lookup
    for _ in range(3):
        v0 = (v0 + v1) & mask
        v1 = ((v1 << 13) | (v1 >> 51)) & mask ^ v0
        v0 = ((v0 << 32) | (v0 >> 32)) & mask
        v2 = (v2 + v3) & mask
        v3 = ((v3 << 16) | (v3 >> 48)) & mask ^ v2
        v0 = (v0 + v3) & mask
        v3 = ((v3 << 21) | (v3 >> 43)) & mask ^ v0
        v2 = (v2 + v1) & mask
        v1 = ((v1 << 17) | (v1 >> 47)) & mask ^ v2
        v2 = ((v2 << 32) | (v2 >> 32)) & mask
    return v0 ^ v1 ^ v2 ^ v3


def _mix32(x: int) -> int:
    x = ((x ^ (x >> 16)) * 0x21F0AAAD) & _M32
    x = ((x ^ (x >> 15)) * 0xD35A2D97) & _M32
    return x ^ (x >> 15)


# --- numpy versions (whole batches of keys of one length) -------------------------------------


_CHUNK = 1 << 18  # keys hashed at a time by numpy (bounds the temporaries to a few MiB)


def _np_rotl(x: npt.NDArray[Any], r: int, tmp: npt.NDArray[Any]) -> None:
    """Rotates ``x`` left by ``r`` bits in place (``tmp``: scratch of the same shape)."""
    np.right_shift(x, np.uint64(64 - r), out=tmp)
    np.left_shift(x, np.uint64(r), out=x)
    x |= tmp


def _np_rounds(v: list[npt.NDArray[Any]], count: int, tmp: npt.NDArray[Any]) -> None:
    v0, v1, v2, v3 = v
    for _ in range(count):
        v0 += v1
        _np_rotl(v1, 13, tmp)
        v1 ^= v0
        _np_rotl(v0, 32, tmp)
        v2 += v3
        _np_rotl(v3, 16, tmp)
        v3 ^= v2
        v0 += v3
        _np_rotl(v3, 21, tmp)
        v3 ^= v0
        v2 += v1
        _np_rotl(v1, 17, tmp)
        v1 ^= v2
        _np_rotl(v2, 32, tmp)


def _np_siphash13(seed: int, rows: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint64]:
    """:func:`siphash13` of every row of a 2-D ``uint8`` array (keys of one length)."""
    count = rows.shape[0]
    out = np.empty(count, dtype=np.uint64)
    for start in range(0, count, _CHUNK):
        out[start:start + _CHUNK] = _np_siphash13_chunk(seed, rows[start:start + _CHUNK])
    return out


def _np_siphash13_chunk(seed: int, rows: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint64]:
    count, length = rows.shape
    state = _prefix_state(seed, length)
    v = [np.full(count, s, dtype=np.uint64) for s in state]
    tmp = np.empty(count, dtype=np.uint64)
    n_words = length >> 3
    if n_words:
        words = np.ascontiguousarray(rows[:, :n_words * 8]).view("<u8")
        for i in range(n_words):
            m = words[:, i]
            v[3] ^= m
            _np_rounds(v, 1, tmp)
            v[0] ^= m
    b = np.full(count, ((16 + length) & 0xFF) << 56, dtype=np.uint64)
    for j in range(length - n_words * 8):
        b |= rows[:, n_words * 8 + j].astype(np.uint64) << np.uint64(8 * j)
    v[3] ^= b
    _np_rounds(v, 1, tmp)
    v[0] ^= b
    v[2] ^= np.uint64(0xFF)
    _np_rounds(v, 3, tmp)
    v[0] ^= v[1]
    v[0] ^= v[2]
    v[0] ^= v[3]
    return v[0]


def _np_mix32(x: npt.NDArray[np.uint32]) -> npt.NDArray[np.uint32]:
    x = x ^ (x >> np.uint32(16))
    x *= np.uint32(0x21F0AAAD)
    x ^= x >> np.uint32(15)
    x *= np.uint32(0xD35A2D97)
    x ^= x >> np.uint32(15)
    return x


def _np_group(h: npt.NDArray[np.uint64], groups: int) -> npt.NDArray[np.uint64]:
    """``(h * groups) >> 64`` for every hash (``map64_to_64``); ``groups`` < 2**32."""
    g = np.uint64(groups)
    hi = (h >> np.uint64(32)) * g
    lo = ((h & np.uint64(_M32)) * g) >> np.uint64(32)
    return (hi + lo) >> np.uint64(32)


def _popcount64(words: npt.NDArray[np.uint64]) -> npt.NDArray[Any]:
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(words)
    table = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)
    as_bytes = words.view(np.uint8).reshape(-1, 8)
    return table[as_bytes].sum(axis=1, dtype=np.uint8)  # type: ignore[no-any-return]  # numpy's sum is typed Any


def _key_rows(keys: Iterable[bytes] | npt.NDArray[np.uint8]) -> list[tuple[
        npt.NDArray[np.intp], npt.NDArray[np.uint8]]]:
    """The keys as ``(positions, rows)`` pairs, one per key length (rows: 2-D ``uint8``)."""
    if isinstance(keys, np.ndarray):
        if keys.ndim != 2 or keys.dtype != np.uint8:
            raise ValueError("a key array must be a 2-D uint8 array (one key per row)")
        return [(np.arange(keys.shape[0]), keys)]
    keys = keys if isinstance(keys, Sequence) else list(keys)
    by_len: dict[int, list[int]] = {}
    for i, k in enumerate(keys):
        by_len.setdefault(len(k), []).append(i)
    out = []
    for length, positions in sorted(by_len.items()):
        joined = b"".join(keys if len(by_len) == 1 else [keys[i] for i in positions])
        rows = np.frombuffer(joined, dtype=np.uint8).reshape(len(positions), length)
        out.append((np.asarray(positions, dtype=np.intp), rows))
    return out


# ---------------------------------------------------------------------------------------------
# Reading and evaluation
# ---------------------------------------------------------------------------------------------


class _Reader:
    __slots__ = ("base", "buf", "pos")

    def __init__(self, buf: memoryview, base: int) -> None:
        self.buf = buf
        self.pos = 0
        self.base = base

    def take(self, size: int, field: str) -> memoryview:
        remain = len(self.buf) - self.pos
        if size > remain:
            raise TruncatedError(f"needs {size} bytes, {remain} remain", needed=size,
                                 available=remain, offset=self.base + self.pos, field=field)
        out = self.buf[self.pos:self.pos + size]
        self.pos += size
        return out

    def u8(self, field: str) -> int:
        return self.take(1, field)[0]

    def vbyte(self, field: str) -> int:
        """binout's VByte: 7 bits a byte, low first, at most 8 such bytes then a whole byte."""
        result = 0
        shift = 0
        while shift < 56:
            byte = self.u8(field)
            result |= (byte & 0x7F) << shift
            if byte < 0x80:
                return result
            shift += 7
        return result | (self.u8(field) << shift)


class GOFunction:
    """A ``ph::fmph::GOFunction`` (default configuration) read from its serialization.

    Attributes:
        level_sizes: Number of 16-bit groups of each level.
        size_bytes: Bytes of the serialization (``GOFunction::write_bytes``).
        trailing: Bytes of ``buf`` after the serialization (the crate's reader ignores them).
        base_offset: Absolute offset of the serialization's first byte in its file.
    """

    __slots__ = ("_array", "_fast", "_level_starts", "_n", "_rank", "_seeds",
                 "_words", "base_offset", "level_sizes", "size_bytes", "trailing")

    def __init__(self, level_sizes: tuple[int, ...], array: bytes, seeds: bytes,
                 size_bytes: int, trailing: int = 0, base_offset: int = 0) -> None:
        # plain attribute stores, alike in shape to other constructors' (no logic to share)
        self.level_sizes = level_sizes
        self.size_bytes = size_bytes
        self.trailing = trailing
        self.base_offset = base_offset
        self._array = array
        self._seeds = seeds
        starts = []
        total = 0
        for size in level_sizes:
            starts.append(total)
            total += size
        self._level_starts = tuple(starts)
        self._words: npt.NDArray[np.uint64] | None = None
        self._rank: npt.NDArray[np.uint64] | None = None
        self._fast = None
        if _native is not None and level_sizes:
            # the C evaluator builds its own rank directory (numpy's waits for the first use)
            self._fast = _native.Evaluator(array, seeds, self._levels_blob())
            self._n = int(self._fast.ones())
        else:
            self._n = int(self._rank_directory()[1][-1])

    def _rank_directory(self) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
        """The array as u64 words, and the ones before each word (one more entry)."""
        if self._words is None or self._rank is None:
            words = np.frombuffer(self._array, dtype="<u8")
            rank = np.zeros(len(words) + 1, dtype=np.uint64)
            if len(words):
                np.cumsum(_popcount64(words), out=rank[1:], dtype=np.uint64)
            self._words, self._rank = words, rank
        return self._words, self._rank

    def _levels_blob(self) -> bytes:
        return struct.pack(f"<{len(self.level_sizes)}Q", *self.level_sizes)

    @classmethod
    def parse(cls, buf: bytes | bytearray | memoryview, base_offset: int = 0) -> GOFunction:
        """Reads one serialized function (the ``Map`` payload of a MOSAIC index).

        Raises:
            TruncatedError: The bytes end before a field they declare.
            LayoutError: A field has a value the crate's reader refuses (group or seed size),
                or a level has no group.
        """
        r = _Reader(memoryview(buf).cast("B"), base_offset)
        at = r.pos
        bits_per_group = r.u8("bits_per_group")
        if bits_per_group != BITS_PER_GROUP:
            raise LayoutError(f"bits per group is {bits_per_group}; GOFunction's default "
                              f"configuration has {BITS_PER_GROUP}",
                              offset=base_offset + at, field="bits_per_group")
        at = r.pos
        num_levels = r.vbyte("num_levels")
        remain = len(r.buf) - r.pos
        if num_levels > remain:  # every level size takes a byte at least
            raise TruncatedError(f"{num_levels} levels declared, {remain} bytes remain",
                                 needed=num_levels, available=remain,
                                 offset=base_offset + at, field="num_levels")
        sizes = []
        total_groups = 0
        for i in range(num_levels):
            at = r.pos
            size = r.vbyte(f"level_sizes/{i}")
            if size == 0:
                raise LayoutError("a level of 0 groups (the crate never writes one)",
                                  offset=base_offset + at, field=f"level_sizes/{i}")
            sizes.append(size)
            total_groups += size
            if 2 * total_groups > len(r.buf) - r.pos:  # its array alone needs 2 bytes a group
                raise TruncatedError(
                    f"levels of {total_groups} groups need {2 * total_groups} array bytes, "
                    f"{len(r.buf) - r.pos} remain", needed=2 * total_groups,
                    available=len(r.buf) - r.pos, offset=base_offset + at,
                    field=f"level_sizes/{i}")
        array = bytes(r.take(8 * (-(-total_groups * BITS_PER_GROUP // 64)), "array"))
        at = r.pos
        bits_per_seed = r.u8("bits_per_seed")
        if bits_per_seed != BITS_PER_SEED:
            raise LayoutError(f"bits per seed is {bits_per_seed}; GOFunction's default "
                              f"configuration has {BITS_PER_SEED}",
                              offset=base_offset + at, field="bits_per_seed")
        seeds = bytes(r.take(8 * (-(-total_groups * BITS_PER_SEED // 64)), "group_seeds"))
        return cls(tuple(sizes), array, seeds, r.pos, len(r.buf) - r.pos, base_offset)

    def __len__(self) -> int:
        """Number of keys the function was built for (the ones of its array)."""
        return self._n

    def __repr__(self) -> str:
        return (f"GOFunction(n={self._n}, levels={len(self.level_sizes)}, "
                f"size_bytes={self.size_bytes})")

    @property
    def ones(self) -> int:
        """Set bits of the array: the number of values (``len``)."""
        return self._n

    def get(self, key: bytes) -> int | None:
        """The key's value: its rank in ``[0, len(self))`` for a key of the set.

        For another key: ``None`` when no level claims it, else some value in range (compare
        the stored key).
        """
        fast = self._fast
        if fast is not None:
            return fast.get(key)  # type: ignore[no-any-return]  # the C extension is untyped
        return self._get_py(key)

    def _get_py(self, key: bytes) -> int | None:
        key = bytes(key)
        array = self._array
        seeds = self._seeds
        for level, (groups, before) in enumerate(zip(self.level_sizes, self._level_starts,
                                                     strict=True)):
            h = siphash13(level, key)
            group = before + ((h * groups) >> 64)
            seed = (seeds[group >> 1] >> ((group & 1) << 2)) & 0xF
            bit = (group << 4) + (_mix32((h & _M32) ^ seed) & 0xF)
            word_index = bit >> 6
            word = int.from_bytes(array[word_index << 3:(word_index << 3) + 8], "little")
            if (word >> (bit & 63)) & 1:
                below = word & ((1 << (bit & 63)) - 1)
                return int(self._rank_directory()[1][word_index]) + below.bit_count()
        return None

    @property
    def getter(self) -> Callable[[bytes], int | None]:
        """:meth:`get` as the fastest plain callable (the C evaluator's method when it is
        built): bind it once for a loop of lookups."""
        fast = self._fast
        return fast.get if fast is not None else self._get_py

    def get_many(self, keys: Sequence[bytes] | npt.NDArray[np.uint8]) -> list[int | None]:
        """:meth:`get` of every key (in C when built, else vectorised with numpy).

        ``keys`` may also be a 2-D ``uint8`` array, one key per row.
        """
        fast = self._fast
        if fast is not None and not isinstance(keys, np.ndarray):
            return fast.get_many(keys)  # type: ignore[no-any-return]  # ditto
        return [None if v < 0 else v for v in self.values_of(keys).tolist()]

    def values_of(self, keys: Iterable[bytes] | npt.NDArray[np.uint8]) -> npt.NDArray[np.int64]:
        """:meth:`get` of every key as an ``int64`` array, -1 where ``get`` gives ``None``.

        ``keys`` may also be a 2-D ``uint8`` array, one key per row.
        """
        parts = _key_rows(keys)
        count = sum(len(p) for p, _ in parts)
        out = np.full(count, -1, dtype=np.int64)
        for positions, rows in parts:
            out[positions] = self._values_of_rows(rows)
        return out

    def _values_of_rows(self, rows: npt.NDArray[np.uint8]) -> npt.NDArray[np.int64]:
        out = np.full(rows.shape[0], -1, dtype=np.int64)
        todo = np.arange(rows.shape[0])
        seeds = np.frombuffer(self._seeds, dtype=np.uint8)
        words, rank = self._rank_directory()
        for level, (groups, before) in enumerate(zip(self.level_sizes, self._level_starts,
                                                     strict=True)):
            if not len(todo):
                break
            h = _np_siphash13(level, rows[todo] if len(todo) < rows.shape[0] else rows)
            group = _np_group(h, groups) + np.uint64(before)
            seed = (seeds[group >> np.uint64(1)] >> ((group & np.uint64(1)) << np.uint64(2)))
            seed = seed.astype(np.uint32) & np.uint32(0xF)
            low = (h & np.uint64(_M32)).astype(np.uint32) ^ seed
            bit = (group << np.uint64(4)) + (_np_mix32(low) & np.uint32(0xF)).astype(np.uint64)
            word_index = (bit >> np.uint64(6)).astype(np.intp)
            shift = bit & np.uint64(63)
            word = words[word_index]
            hit = ((word >> shift) & np.uint64(1)).astype(bool)
            below = word & ((np.uint64(1) << shift) - np.uint64(1))
            ranks = rank[word_index] + _popcount64(below).astype(np.uint64)
            out[todo[hit]] = ranks[hit].astype(np.int64)
            todo = todo[~hit]
        return out


# ---------------------------------------------------------------------------------------------
# Construction
# ---------------------------------------------------------------------------------------------


def _vbyte(value: int) -> bytes:
    out = bytearray()
    if value >= 1 << 28:
        for _ in range(4):
            out.append((value & 0x7F) | 0x80)
            value >>= 7
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _build_level(h: npt.NDArray[np.uint64], groups: int) -> tuple[
        npt.NDArray[np.bool_], npt.NDArray[np.uint8], npt.NDArray[np.uint64],
        npt.NDArray[np.bool_]]:
    """One level for the hashes ``h``: its bits, group seeds, each key's bit and placement."""
    bits_total = groups * BITS_PER_GROUP
    group = _np_group(h, groups)
    base = group << np.uint64(4)
    low = (h & np.uint64(_M32)).astype(np.uint32)
    del group
    best_bits: npt.NDArray[np.bool_] | None = None
    best_count: npt.NDArray[Any] | None = None
    best_seed = np.zeros(groups, dtype=np.uint8)
    for seed in range(1 << BITS_PER_SEED):
        idx = base + (_np_mix32(low ^ np.uint32(seed)) & np.uint32(0xF)).astype(np.uint64)
        counts = np.bincount(idx.astype(np.intp), minlength=bits_total)
        del idx
        ones = counts == 1
        del counts
        per_group = ones.reshape(groups, BITS_PER_GROUP).sum(axis=1, dtype=np.uint8)
        if best_bits is None or best_count is None:
            best_bits, best_count = ones, per_group
            continue
        better = per_group > best_count
        if better.any():
            best_count[better] = per_group[better]
            best_seed[better] = seed
            bits2 = best_bits.reshape(groups, BITS_PER_GROUP)
            bits2[better] = ones.reshape(groups, BITS_PER_GROUP)[better]
    assert best_bits is not None
    group_of = (base >> np.uint64(4)).astype(np.intp)
    key_seed = best_seed[group_of].astype(np.uint32)
    key_bit = base + (_np_mix32(low ^ key_seed) & np.uint32(0xF)).astype(np.uint64)
    placed = best_bits[key_bit.astype(np.intp)]
    return best_bits, best_seed, key_bit, placed


def _hash_level(level: int, rows: npt.NDArray[np.uint8], native: bool
                ) -> npt.NDArray[np.uint64]:
    if not native or _native is None:
        return _np_siphash13(level, rows)
    rows = np.ascontiguousarray(rows)
    out = np.empty(rows.shape[0], dtype=np.uint64)
    _native.hash_rows(level, rows, rows.shape[1], out)
    return out


def _build_level_native(h: npt.NDArray[np.uint64], groups: int) -> tuple[
        bytes, npt.NDArray[np.uint8], npt.NDArray[np.uint64], npt.NDArray[np.bool_]]:
    bits = bytearray(groups * BITS_PER_GROUP // 8)
    seeds = np.empty(groups, dtype=np.uint8)
    key_bit = np.empty(len(h), dtype=np.uint64)
    placed = np.empty(len(h), dtype=np.uint8)
    _native.build_level(np.ascontiguousarray(h), groups, bits, seeds, key_bit, placed)
    return bytes(bits), seeds, key_bit, placed.view(np.bool_)


def build_with_ranks(keys: Sequence[bytes] | npt.NDArray[np.uint8], *,
                     native: bool = True) -> tuple[bytes, npt.NDArray[np.int64]]:
    """:func:`build`, and the value the function gives each key (in the order of ``keys``).

    ``keys`` may also be a 2-D ``uint8`` array, one key per row (less memory than bytes
    objects at millions of keys).

    ``native=False`` keeps to numpy where the C accelerator is built (the same bytes, slower).

    Raises:
        ValueError: The keys are not distinct (the construction cannot place them).
    """
    native = native and _native is not None
    parts = _key_rows(keys)
    n = sum(len(p) for p, _ in parts)
    level_sizes: list[int] = []
    level_bits: list[bytes] = []
    level_seeds: list[npt.NDArray[np.uint8]] = []
    # where each key landed: level and bit within its level (filled level by level)
    key_level = np.full(n, -1, dtype=np.int16)
    key_bit = np.zeros(n, dtype=np.uint64)
    remaining = [(positions, rows) for positions, rows in parts if len(positions)]
    stalled = 0
    input_size = n
    while input_size:
        level = len(level_sizes)
        groups = (-(-input_size // 64)) * (64 // BITS_PER_GROUP)
        hashes = np.concatenate([_hash_level(level, rows, native) for _, rows in remaining])
        if native:
            bits, seeds, bit_of, placed = _build_level_native(hashes, groups)
        else:
            bool_bits, seeds, bit_of, placed = _build_level(hashes, groups)
            bits = np.packbits(bool_bits, bitorder="little").tobytes()
            del bool_bits
        del hashes
        level_sizes.append(groups)
        level_bits.append(bits)
        level_seeds.append(seeds)
        survivors = []
        start = 0
        for positions, rows in remaining:
            stop = start + len(positions)
            here = placed[start:stop]
            key_level[positions[here]] = level
            key_bit[positions[here]] = bit_of[start:stop][here]
            keep = ~here
            if keep.any():
                survivors.append((positions[keep], rows[keep]))
            start = stop
        remaining = survivors
        previous, input_size = input_size, sum(len(p) for p, _ in remaining)
        if input_size == previous:
            stalled += 1
            if stalled == _MAX_LEVELS_WITHOUT_REDUCTION:
                raise ValueError(f"{input_size} keys cannot be placed: the keys are not "
                                 "distinct")
        else:
            stalled = 0
    # serialize
    array = b"".join(level_bits)
    all_seeds = (np.concatenate(level_seeds) if level_seeds else np.zeros(0, np.uint8))
    total_groups = len(all_seeds)
    padded = np.zeros(-(-total_groups // 16) * 16, dtype=np.uint8)
    padded[:total_groups] = all_seeds
    seed_bytes = (padded[0::2] | (padded[1::2] << np.uint8(4))).tobytes()
    out = b"".join([bytes([BITS_PER_GROUP]), _vbyte(len(level_sizes)),
                    *(_vbyte(s) for s in level_sizes), array, bytes([BITS_PER_SEED]),
                    seed_bytes])
    # ranks: ones before each key's global bit
    words = np.frombuffer(array, dtype="<u8")
    rank = np.zeros(len(words) + 1, dtype=np.uint64)
    if len(words):
        np.cumsum(_popcount64(words), out=rank[1:], dtype=np.uint64)
    level_bit_start = np.zeros(max(len(level_sizes), 1), dtype=np.uint64)
    if level_sizes:
        level_bit_start[1:] = np.cumsum(np.asarray(level_sizes[:-1], dtype=np.uint64) * 16)
    ranks = np.zeros(n, dtype=np.int64)
    if n:
        global_bit = key_bit + level_bit_start[key_level.astype(np.intp)]
        word_index = (global_bit >> np.uint64(6)).astype(np.intp)
        below = words[word_index] & ((np.uint64(1) << (global_bit & np.uint64(63)))
                                     - np.uint64(1))
        ranks = (rank[word_index] + _popcount64(below).astype(np.uint64)).astype(np.int64)
    return out, ranks


def build(keys: Sequence[bytes] | npt.NDArray[np.uint8]) -> bytes:
    """A serialized ``GOFunction`` over distinct ``keys``: a bijection onto ``0..n-1``.

    The bytes are those ``GOFunction::write`` gives for the function the ``ph`` crate builds
    from the same keys in its default configuration (as swh-mosaic 0.6.1 does).
    """
    return build_with_ranks(keys)[0]


def ranks_of(func: bytes | GOFunction, keys: Sequence[bytes] | npt.NDArray[np.uint8]
             ) -> npt.NDArray[np.int64]:
    """The value of every key under ``func`` (serialized or parsed); -1 for ``None``."""
    f = func if isinstance(func, GOFunction) else GOFunction.parse(func)
    return f.values_of(keys)
