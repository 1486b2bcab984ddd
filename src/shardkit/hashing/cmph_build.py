"""Build cmph CHD_PH minimal perfect hash functions, written as a ``cmph_dump``.

The construction follows cmph's ``chd_ph.c`` (``chd_ph_new``, ``chd_ph_mapping``,
``chd_ph_ordering``, ``place_buckets2``) with the parameters Software Heritage's shard
writers set (``swh/shard`` ``shard_hash_create``): load factor 0.99, one key per bin, four keys
per bucket on average (``b = 4``):

* ``m`` keys; ``nbuckets = m // 4 + 1``; ``n`` = the first prime >= ``int(m / 0.99) + 1``;
* with a random Jenkins seed, every key gets ``g = h0 % nbuckets``, ``f = h1 % n`` and
  ``h = h2 % (n - 1) + 1``; two keys of one bucket with equal ``(f, h)`` mean a new seed;
* buckets are placed largest first; all buckets of one size try displacement 0, 1, 2...
  together (``place_buckets2``): at each displacement the waiting buckets try in bucket order,
  and a bucket is placed at the first displacement ``d`` where every
  ``(f + h * (d % n) + d // n) % n`` of its keys is a free bin (and no two are equal).

The search gives exactly ``place_buckets2``'s displacements, in C (the accelerator's
``place``) or vectorised with numpy (:func:`_place`) alike, so the bytes of a built function
depend only on the keys and the seed: never on whether the accelerator was compiled. For the
seed a cmph build ended with, the dump is the one cmph wrote.
The displacements are stored as cmph's ``compressed_seq_generate`` and ``select_generate``
do (``compressed_seq.c``, ``select.c``).
"""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .._layouts import layouts, struct_of
from .cmph_chd_lazy import (
    LAYOUT_PREFIX_SIZE,
    LazyChdPh,
    check_tail,
    parse_layout,
)
from .jenkins import _jenkins_hash_vectors_np

__all__ = ["BuildError", "BuiltChd", "build_chd_ph", "chd_ph_dump", "next_prime"]

LOAD_FACTOR = 0.99
KEYS_PER_BUCKET = 4
MAX_SEEDS = 100  # chd_ph_new: 100 iterations of mapping + searching
_STEP_SELECT = 128
_SEQ_HEAD = struct_of(layouts.CMPH_CHD_PH__COMPRESSED_SEQ__HEAD)  # n, rem_r, total, len(sel)
_SELECT_HEAD = struct_of(layouts.CMPH_CHD_PH__SELECT__HEAD)  # ones, zeros
_HASH_ROWS = 1 << 16  # keys hashed per numpy pass


class BuildError(ValueError):
    """The function cannot be built (duplicate keys, no keys, or no convergence)."""


@dataclass(frozen=True)
class BuiltChd:
    """A built function: its dump, parameters, and the slot of every key (in input order)."""

    dump: bytes
    n: int
    nbuckets: int
    seed: int
    slots: npt.NDArray[np.int64]


def _is_prime(x: int) -> bool:
    if x < 2:
        return False
    if x % 2 == 0:
        return x == 2
    i = 3
    while i * i <= x:
        if x % i == 0:
            return False
        i += 2
    return True


def next_prime(x: int) -> int:
    """cmph's rounding of the bin count: ``x`` made odd, then the next prime (odd steps)."""
    if x % 2 == 0:
        x += 1
    while not _is_prime(x):
        x += 2
    return x


def _pack_bits(bits: npt.NDArray[np.uint8]) -> bytes:
    """A 0/1 array as cmph's bit table: bit p at bit p & 31 of little-endian word p >> 5."""
    raw = np.packbits(bits, bitorder="little").tobytes()
    words = (len(bits) + 31) >> 5
    return raw + bytes(4 * words - len(raw))


def _fields(values: npt.NDArray[np.int64], widths: npt.NDArray[np.int64]) -> bytes:
    """Values of the given bit widths (each at most 31), packed one after the other
    (``set_bits_at_pos``); memory in proportion to the values, not to their bits."""
    total = int(widths.sum())
    if total == 0:
        return b""
    starts = np.cumsum(widths) - widths
    words = np.zeros(((total + 31) >> 5) + 1, dtype=np.uint64)
    mask = (np.int64(1) << widths) - 1
    # a field starts in word start >> 5 at bit start & 31 and spills at most into the next
    shifted = ((values & mask).astype(np.uint64)) << (starts & 31).astype(np.uint64)
    at = starts >> 5
    np.bitwise_or.at(words, at, shifted & np.uint64(0xFFFFFFFF))
    np.bitwise_or.at(words, at + 1, shifted >> np.uint64(32))
    raw = words[:-1].astype("<u4").tobytes()
    return raw[: (total + 7) >> 3]


def compressed_seq_dump(values: npt.NDArray[np.int64]) -> bytes:
    """``compressed_seq_generate`` + ``compressed_seq_dump`` of a sequence of u32 values."""
    n = len(values)
    vals = values.astype(np.int64)
    lengths = np.zeros(n, dtype=np.int64)
    nz = vals > 0
    # i_log2(v + 1) = floor(log2(v + 1)), exact through bit_length on int64
    lengths[nz] = np.frexp((vals[nz] + 1).astype(np.float64))[1] - 1
    stored = np.where(nz, vals - ((np.int64(1) << lengths) - 1), 0)
    total_length = int(lengths.sum())
    store_table = _fields(stored, lengths)
    store_table += bytes(4 * ((total_length + 31) >> 5) - len(store_table))
    rem_r = max(1, (total_length // n).bit_length() - 1) if total_length // n else 1
    cum = np.cumsum(lengths)
    rems = cum & ((1 << rem_r) - 1)
    length_rems = _fields(rems, np.full(n, rem_r, dtype=np.int64))
    length_rems += bytes(4 * ((n * rem_r + 31) >> 5) - len(length_rems))
    hi = cum >> rem_r
    m = total_length >> rem_r
    ones = np.arange(n, dtype=np.int64) + hi
    bits = np.zeros(n + m, dtype=np.uint8)
    bits[ones] = 1
    bits_vec = _pack_bits(bits)
    table = np.zeros((n >> 7) + 1, dtype="<u4")
    samples = ones[::_STEP_SELECT]
    table[: len(samples)] = samples
    sel = _SELECT_HEAD.pack(n, m) + bits_vec + table.tobytes()
    return (_SEQ_HEAD.pack(n, rem_r, total_length, len(sel)) + sel + length_rems
            + store_table)


def chd_ph_dump(n: int, nbuckets: int, seed: int, displacements: npt.NDArray[np.int64]) -> bytes:
    """The ``cmph_dump`` bytes of a CHD_PH function with a Jenkins hash."""
    hl = b"jenkins\0" + struct.pack("<I", seed)
    cs = compressed_seq_dump(displacements)
    return (b"chd_ph\0" + struct.pack("<II", n, len(hl)) + hl + struct.pack("<I", len(cs)) + cs
            + struct.pack("<II", n, nbuckets))


def _bins(f: npt.NDArray[np.int64], h: npt.NDArray[np.int64], d: npt.NDArray[Any],
          nn: np.uint64) -> npt.NDArray[np.int64]:
    """``(f + h * (d % n) + d // n) % n``, chd_ph_search's bin, in 64 bits without wrapping."""
    du = d.astype(np.uint64)
    out: npt.NDArray[np.int64] = ((f.astype(np.uint64) + h.astype(np.uint64) * (du % nn)
                                   + du // nn) % nn).astype(np.int64)
    return out


def _place(f: npt.NDArray[np.uint32], h: npt.NDArray[np.uint32], g: npt.NDArray[np.int64],
           n: int, nbuckets: int, max_probes: int) -> npt.NDArray[np.int64] | None:
    """Displacement of every bucket (cmph's ``place_buckets2``), or None when some bucket
    finds none below ``max_probes``.

    The result is exactly ``place_buckets2``'s (and the C accelerator's ``place``): buckets by
    size, largest first; all buckets of one size try displacement 0 in bucket order, each
    taking its bins at once, then the ones still waiting try 1, 2... Here each waiting bucket
    looks at a window of its next displacements at once (narrower as more buckets wait,
    bounding the temporary arrays to about 256k bins) and finds the first one whose bins are
    free and distinct. Those candidates are then taken in the order ``place_buckets2`` meets
    them (displacement, then bucket): one whose bins an earlier one took loses. A decision is
    kept only where every earlier step of ``place_buckets2`` is known: at or below the first
    loser's displacement (the loser tries again after it) and below the displacement where a
    bucket without a candidate in its window stopped looking; the rest waits for the next
    round.
    """
    order = np.argsort(g, kind="stable")
    sizes = np.bincount(g, minlength=nbuckets)
    first = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    occupied = np.zeros(n, dtype=bool)
    scratch = np.zeros(n, dtype=bool)  # _first_claims' bins taken (cleared after each use)
    disp = np.zeros(nbuckets, dtype=np.int64)
    nn = np.uint64(n)
    for size in range(int(sizes.max()), 0, -1):
        buckets = np.flatnonzero(sizes == size)  # in bucket order
        if not buckets.size:
            continue
        items = order[first[buckets][None, :] + np.arange(size)[:, None]]  # (size, buckets)
        # the waiting buckets' keys, one row per key of a bucket, compacted as they are placed
        bf, bh = f[items].astype(np.int64), h[items].astype(np.int64)
        waiting = buckets
        nxt = np.zeros(buckets.size, dtype=np.int64)  # next displacement each bucket tries
        while waiting.size:
            if int(nxt.min()) >= max_probes:
                return None
            width = int(min(64, max(1, (1 << 18) // (waiting.size * size))))
            probes = nxt[:, None] + np.arange(width)  # (K, W)
            small = int(nxt.max()) + width < n  # probe0 = d, probe1 = 0, h * d < 2**63
            busy = probes >= max_probes
            hit = np.empty(probes.shape, dtype=bool)
            bins: list[np.ndarray] = []
            for j in range(size):
                if small:
                    pj = bh[j][:, None] * probes
                    pj += bf[j][:, None]
                    np.remainder(pj, n, out=pj)
                else:
                    pj = _bins(bf[j][:, None], bh[j][:, None], probes, nn)
                np.take(occupied, pj, out=hit)
                busy |= hit
                for q in bins:  # two keys of the bucket on one bin
                    busy |= q == pj
                if size > 1:
                    bins.append(pj)
            del bins
            free = ~busy
            has = free.any(axis=1)
            pick = free.argmax(axis=1)
            nxt[~has] += width
            cand = np.flatnonzero(has)
            if not cand.size:
                continue
            d = nxt[cand] + pick[cand]
            rank = np.lexsort((cand, d))  # place_buckets2's order: displacement, then bucket
            cand, d = cand[rank], d[rank]
            cpos = np.stack([_bins(bf[j][cand], bh[j][cand], d.astype(np.uint64), nn)
                             for j in range(size)], axis=1)  # (C, size)
            won = _first_claims(cpos, scratch)
            lost = ~won
            # decided: up to the first loser's displacement, and below every displacement a
            # bucket without a candidate has not looked at yet
            final = d < (int(nxt[~has].min()) if not has.all() else max_probes)
            if lost.any():
                final &= d <= int(d[lost].min())
            take = won & final
            occupied[cpos[take].ravel()] = True
            disp[waiting[cand[take]]] = d[take]
            nxt[cand[lost & final]] = d[lost & final] + 1
            nxt[cand[~final]] = d[~final]  # busy below d; decided in the next round
            keep = np.ones(waiting.size, dtype=bool)
            keep[cand[take]] = False
            waiting, bf, bh, nxt = waiting[keep], bf[:, keep], bh[:, keep], nxt[keep]
    return disp


def _first_claims(cpos: npt.NDArray[np.int64], scratch: npt.NDArray[np.bool_]
                  ) -> npt.NDArray[np.bool_]:
    """Which rows of ``cpos`` (candidates in the order they are tried, one row of distinct
    bins each) take their bins when each row in turn takes them if none is taken yet.
    ``scratch``: one False per bin, used and left all False."""
    count, size = cpos.shape
    won = np.zeros(count, dtype=bool)
    flat = cpos.ravel()
    owner = np.repeat(np.arange(count), size)
    srt = np.argsort(flat, kind="stable")
    sp = flat[srt]
    shared_bin = np.zeros(sp.size, dtype=bool)
    shared_bin[1:] = sp[1:] == sp[:-1]
    shared_bin[:-1] |= shared_bin[1:]
    shared = np.zeros(count, dtype=bool)
    shared[owner[srt[shared_bin]]] = True
    won[~shared] = True  # no other candidate wants any of their bins
    alive = shared
    while alive.any():
        idx = np.flatnonzero(alive)
        fl = cpos[idx].ravel()
        ow = np.repeat(idx, size)
        s = np.lexsort((ow, fl))  # by bin, then by order
        fl_s, ow_s = fl[s], ow[s]
        head = np.ones(fl_s.size, dtype=bool)
        head[1:] = fl_s[1:] != fl_s[:-1]
        first_owner = ow_s[np.maximum.accumulate(np.where(head, np.arange(fl_s.size), 0))]
        behind = np.zeros(count, dtype=bool)
        behind[ow_s[ow_s != first_owner]] = True
        winners = idx[~behind[idx]]  # the first alive claimer of every one of its bins
        won[winners] = True
        alive[winners] = False
        # the alive ones that want a bin a winner took come later: they lose
        taken = cpos[winners].ravel()
        scratch[taken] = True
        lose = scratch[cpos[idx]].any(axis=1)
        scratch[taken] = False
        alive[idx[lose]] = False
    return won


def _search(keys: npt.NDArray[np.uint8], f: npt.NDArray[np.uint32],
            h: npt.NDArray[np.uint32], g: npt.NDArray[np.int64], n: int, nbuckets: int,
            max_probes: int) -> npt.NDArray[np.int64] | None:
    """Displacements with numpy (:func:`_place`), or None when this seed does not work.

    Raises:
        BuildError: Two keys are equal.
    """
    # chd_ph_mapping: two keys of a bucket with the same (f, h) always collide
    by = np.lexsort((h, f, g))
    same = (g[by[1:]] == g[by[:-1]]) & (f[by[1:]] == f[by[:-1]]) & (h[by[1:]] == h[by[:-1]])
    if same.any():
        i, j = int(by[int(np.argmax(same))]), int(by[int(np.argmax(same)) + 1])
        if np.array_equal(keys[i], keys[j]):
            raise BuildError(f"duplicate key {keys[i].tobytes().hex()}")
        return None
    del by, same
    return _place(f, h, g, n, nbuckets, max_probes)


def _native() -> Any:
    """The C accelerator of :mod:`shardkit.formats.swh` (one switch for reading and
    building), or None."""
    from ..formats.swh import reader

    return reader._native


def _hash_rows(native: Any, seed: int, rows: npt.NDArray[np.uint8]) -> tuple[Any, Any, Any]:
    """The three Jenkins words of 32-byte key rows (C when built, else numpy)."""
    if native is None or rows.shape[1] != 32:
        return _jenkins_hash_vectors_np(seed, rows)
    a, b, c = (np.empty(rows.shape[0], np.uint32) for _ in range(3))
    native.hash32_into(np.ascontiguousarray(rows), seed, a, b, c)
    return a, b, c


def build_chd_ph(keys: npt.NDArray[np.uint8], seed: int | None = None,
                 rng: random.Random | None = None) -> BuiltChd:
    """Builds a CHD_PH function for the rows of a 2-D ``uint8`` array (32-byte keys).

    Args:
        keys: One key per row; keys must be distinct.
        seed: The Jenkins seed to try first (default: drawn from ``rng``).
        rng: Where further seeds come from (default: ``random.Random(0)``, so a build is
            reproducible).

    Raises:
        BuildError: No keys, duplicate keys, or no seed in :data:`MAX_SEEDS` tries worked.
    """
    m = keys.shape[0]
    if m == 0:
        raise BuildError("a CHD_PH function needs at least one key")
    if m >= 2**32:
        raise BuildError(f"{m} keys: cmph counts are 32-bit")
    rng = rng or random.Random(0)
    nbuckets = m // KEYS_PER_BUCKET + 1
    n = next_prime(int(m / LOAD_FACTOR) + 1)
    max_probes = max(1, int(np.log2(m) / 20)) * (1 << 20)
    native = _native()
    for attempt in range(MAX_SEEDS):
        s = seed if (attempt == 0 and seed is not None) else rng.randrange(2**32)
        g = np.empty(m, dtype=np.int64)
        f = np.empty(m, dtype=np.uint32)
        h = np.empty(m, dtype=np.uint32)
        for lo in range(0, m, _HASH_ROWS):  # in slices: bounded temporaries
            a, b, c = _hash_rows(native, s, keys[lo : lo + _HASH_ROWS])
            g[lo : lo + a.size] = a % np.uint32(nbuckets)
            f[lo : lo + a.size] = b % np.uint32(n)
            h[lo : lo + a.size] = (c % np.uint32(n - 1)) + np.uint32(1)
        disp: npt.NDArray[np.int64] | None
        if native is not None:  # the same search in C, one bucket at a time
            disp = np.zeros(nbuckets, dtype=np.int64)
            placed = native.place(f, h, g, n, nbuckets, max_probes, disp)
            if isinstance(placed, tuple):  # two keys with the same (g, f, h)
                i, j = placed
                if np.array_equal(keys[i], keys[j]):
                    raise BuildError(f"duplicate key {keys[i].tobytes().hex()}")
                continue
            if not placed:
                continue
        else:
            disp = _search(keys, f, h, g, n, nbuckets, max_probes)
            if disp is None:
                continue
        # the slots, as chd_ph_search computes them
        slots = np.empty(m, dtype=np.int64)
        nn = np.uint64(n)
        for lo in range(0, m, _HASH_ROWS):
            d = disp[g[lo : lo + _HASH_ROWS]].astype(np.uint64)
            slots[lo : lo + d.size] = (f[lo : lo + d.size] + h[lo : lo + d.size].astype(np.uint64)
                                       * (d % nn) + d // nn) % nn
        del g, f, h  # before the dump is made: the build's peak memory
        seen = np.zeros(n, dtype=bool)
        seen[slots] = True
        if int(np.count_nonzero(seen)) != m:  # pragma: no cover - a bug
            raise BuildError("internal error: the built function is not injective")
        del seen
        dump = chd_ph_dump(n, nbuckets, s, disp)
        _check_dump(dump, disp)
        return BuiltChd(dump, n, nbuckets, s, slots)
    raise BuildError(f"no CHD_PH function found for {m} keys after {MAX_SEEDS} seeds")


def _check_dump(dump: bytes, disp: npt.NDArray[np.int64]) -> None:
    """The dump decodes to the displacements (sampled blocks, as a single lookup reads them)."""
    layout = parse_layout(dump[:LAYOUT_PREFIX_SIZE])
    check_tail(layout, dump[layout.tail : layout.tail + 8])
    lazy = LazyChdPh(layout, dump)
    blocks = layout.samples
    for k in sorted({0, blocks - 1, *random.Random(blocks).sample(range(blocks),
                                                                  min(blocks, 32))}):
        want = disp[k * 128 : k * 128 + 128].tolist()
        if list(lazy.block(k)) != want:  # pragma: no cover - a bug
            raise BuildError(f"internal error: select block {k} does not decode")
