"""Lazy queries of cmph's CHD_PH minimal perfect hash: only the part of the compressed sequence
a key needs is decoded.

:func:`parse_layout` locates every part of a dump from its fixed-size prefix,
:func:`check_tail` checks the trailing counts, and :class:`LazyChdPh` decodes displacements
one select block (128 buckets) at a time and answers as :meth:`~.cmph_chd.ChdPh.slot` does.
:mod:`.cmph_chd` (the eager decoder, the dump format and its sources) re-exports these names.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from .cmph_chd import (
    _ALGO_NAME,
    _HASH_NAME,
    _JENKINS_STATE_SIZE,
    _MAX_FIELD_BITS,
    _NBITS_STEP_SELECT_TABLE,
    _U32,
    CmphError,
    _Reader,
)
from .jenkins import _M32, _lookup2_abc

__all__ = ["LAYOUT_PREFIX_SIZE", "MAX_CACHED_BLOCKS", "ChdLayout", "LazyChdPh", "check_tail",
           "parse_layout"]

_STEP = 1 << _NBITS_STEP_SELECT_TABLE  # buckets per select sample (128)
#: :class:`LazyChdPh` keeps at most this many decoded select blocks.
MAX_CACHED_BLOCKS = 2048
#: Bytes of a CHD_PH dump with a Jenkins hash up to and including ``cs.sel.m``: enough to
#: locate every other part (see :func:`parse_layout`).
LAYOUT_PREFIX_SIZE = len(_ALGO_NAME) + 1 + 4 + 4 + len(_HASH_NAME) + 1 + 4 + 4 + 6 * 4


@dataclass(frozen=True)
class ChdLayout:
    """Where each part of a CHD_PH dump lies (offsets from the start of the dump).

    Attributes:
        n: Number of bins (the ``size`` field).
        nbuckets: Number of buckets (``cs.n``).
        seed: Seed of the Jenkins hash.
        rem_r: Low bits of each cumulative length kept in ``length_rems``.
        total_length: Bits of ``store_table`` in use.
        sel_m: Zeros of the select bit vector.
        bits_vec: Offset of the select bit vector.
        select_table: Offset of the select samples (one ``u32`` every 128 ones).
        length_rems: Offset of the packed ``rem_r``-bit fields.
        store_table: Offset of the packed value bits.
        tail: Offset of the trailing ``u32 n, u32 nbuckets``.
        dump_size: Size of the whole dump.
    """

    n: int
    nbuckets: int
    seed: int
    rem_r: int
    total_length: int
    sel_m: int
    bits_vec: int
    select_table: int
    length_rems: int
    store_table: int
    tail: int
    dump_size: int

    @property
    def samples(self) -> int:
        """Number of meaningful select samples (one per 128 buckets)."""
        return (self.nbuckets + _STEP - 1) >> _NBITS_STEP_SELECT_TABLE


def parse_layout(prefix: bytes | bytearray | memoryview) -> ChdLayout:
    """Locates every part of a CHD_PH dump from its first :data:`LAYOUT_PREFIX_SIZE` bytes.

    Every size is checked against the others (as :meth:`ChdPh.from_dump` does), so a layout
    returned here never points outside a dump of :attr:`ChdLayout.dump_size` bytes; nothing is
    allocated in proportion to the counts.

    Raises:
        CmphError: If the prefix is short, of another algorithm or hash, or inconsistent.
    """
    # The fields ChdPh.from_dump (with _parse_compressed_seq) reads, read again: that walk has
    # the whole dump and names the field it runs out in, this one has only the prefix and
    # checks the sizes against each other (tests hold both sets of errors).
    view = memoryview(prefix).cast("B") if not isinstance(prefix, bytes) else memoryview(prefix)
    r = _Reader(view)
    name = r.cstring("algo_name")
    if name != _ALGO_NAME:
        raise CmphError("algo_name", 0, f"is {name!r}, expected {_ALGO_NAME!r}")
    size = r.u32("size")
    hl_size_off, hl_size = r.u32_at("hl_size")
    hl_off = r.offset
    hl_want = len(_HASH_NAME) + 1 + _JENKINS_STATE_SIZE
    # the name decides; a short or long state is then a size error
    hr = _Reader(r.take(hl_size if hl_size == hl_want else min(hl_size, r.remaining), "hl"),
                 hl_off)
    hash_name = hr.cstring("hl.name")
    if hash_name != _HASH_NAME:
        raise CmphError("hl.name", hl_off, f"is {hash_name!r}, only {_HASH_NAME!r} is supported")
    if hl_size != hl_want:
        raise CmphError("hl_size", hl_size_off, f"is {hl_size}, a jenkins state takes "
                        f"{hl_want} bytes")
    seed = hr.u32("hl.seed")
    cs_size_off, cs_size = r.u32_at("cs_size")
    cs_off, cs_n = r.u32_at("cs.n")
    rem_r_off, rem_r = r.u32_at("cs.rem_r")
    total_off, total_length = r.u32_at("cs.total_length")
    sel_size_off, sel_size = r.u32_at("cs.sel_size")
    sel_off, sel_n = r.u32_at("cs.sel.n")
    sel_m_off, sel_m = r.u32_at("cs.sel.m")
    bits_off = r.offset
    if rem_r > _MAX_FIELD_BITS:
        raise CmphError("cs.rem_r", rem_r_off, f"is {rem_r}, must be at most {_MAX_FIELD_BITS}")
    nbits = sel_n + sel_m
    if nbits + 31 > _M32:
        raise CmphError("cs.sel.m", sel_m_off, f"n + m = {nbits} overflows 32-bit arithmetic")
    if cs_n * rem_r + 31 > _M32:
        raise CmphError("cs.rem_r", rem_r_off, f"n * rem_r = {cs_n * rem_r} overflows 32 bits")
    if total_length + 31 > _M32:
        raise CmphError("cs.total_length", total_off, f"{total_length} overflows 32 bits")
    bits_len = 4 * ((nbits + 31) >> 5)
    table_len = 4 * ((sel_n >> _NBITS_STEP_SELECT_TABLE) + 1)
    if sel_size != 8 + bits_len + table_len:
        raise CmphError("cs.sel_size", sel_size_off, f"is {sel_size} but the select structure "
                        f"uses {8 + bits_len + table_len} bytes")
    rems_len = 4 * ((cs_n * rem_r + 31) >> 5)
    store_len = 4 * ((total_length + 31) >> 5)
    cs_used = 16 + sel_size + rems_len + store_len
    if cs_size != cs_used:
        raise CmphError("cs_size", cs_size_off,
                        f"is {cs_size} but the compressed sequence uses {cs_used}")
    if sel_n != cs_n:
        raise CmphError("cs.sel.n", sel_off, f"is {sel_n} but cs.n is {cs_n}")
    if sel_m != total_length >> rem_r:
        raise CmphError("cs.sel.m", sel_m_off,
                        f"is {sel_m} but total_length >> rem_r is {total_length >> rem_r}")
    tail = cs_off + cs_size
    if size < 2:
        raise CmphError("n", tail, f"is {size}: cmph would divide by zero")
    if cs_n == 0:
        raise CmphError("nbuckets", tail + 4, "is 0: cmph would divide by zero")
    table_off = bits_off + bits_len
    rems_off = table_off + table_len
    return ChdLayout(size, cs_n, seed, rem_r, total_length, sel_m, bits_off, table_off,
                     rems_off, rems_off + rems_len, tail, tail + 8)


def check_tail(layout: ChdLayout, tail: bytes) -> None:
    """Checks the trailing ``n`` and ``nbuckets`` of a dump against its layout.

    Raises:
        CmphError: If they disagree with ``size`` and ``cs.n`` (cmph would then search with
            other values than the ones the sequence was built for).
    """
    if len(tail) < 8:
        raise CmphError("n", layout.tail, f"needs 8 bytes, {len(tail)} remain")
    n, nbuckets = struct.unpack("<2I", tail[:8])
    if n != layout.n:
        raise CmphError("n", layout.tail, f"is {n} but the size field is {layout.n}")
    if nbuckets != layout.nbuckets:
        raise CmphError("nbuckets", layout.tail + 4,
                        f"is {nbuckets} but the compressed sequence has {layout.nbuckets}")


def _int_bits(buf: Any, base: int, lo_bit: int, hi_bit: int) -> int:
    """Bits ``[lo_bit, hi_bit)`` of the little-endian bit table at ``buf[base:]``, as an int."""
    return int.from_bytes(buf[base + (lo_bit >> 3) : base + ((hi_bit + 7) >> 3)],
                          "little") >> (lo_bit & 7)


class LazyChdPh:
    """A CHD_PH function that decodes its displacements 128 buckets at a time, on demand.

    Opening costs nothing in proportion to the function's size: the first query of a bucket
    decodes only its select block (one select sample, a few dozen bytes of the bit vector,
    of ``length_rems`` and of ``store_table``), checks it is consistent and keeps it.  Queries
    give exactly :meth:`ChdPh.slot`.

    Args:
        layout: From :func:`parse_layout` (and :func:`check_tail`).
        dump: The dump's bytes (any object sliceable to bytes-like: a memory map, a
            memoryview, bytes); only the parts a query needs are touched.
    """

    def __init__(self, layout: ChdLayout, dump: Any) -> None:
        self.layout = layout
        self.n = layout.n
        self.nbuckets = layout.nbuckets
        self.seed = layout.seed
        self.dump_size = layout.dump_size
        self._dump = dump
        # decoded blocks, at most MAX_CACHED_BLOCKS of them (about 5 KB each): forgotten
        # all at once when full, so memory never grows with the function's size (not a
        # ByteLRU: lookups read this dict inline, where a method call per lookup would cost)
        self._blocks: dict[int, tuple[int, ...]] = {}

    def block(self, k: int) -> tuple[int, ...]:
        """Displacements of buckets ``[128 k, 128 k + 128)`` (decoded on first use).

        Raises:
            CmphError: If the select sample, bit vector or lengths of this block are
                inconsistent (the field and offset are named).
        """
        blk = self._blocks.get(k)
        if blk is None:
            blk = self._decode_block(k)
            if len(self._blocks) >= MAX_CACHED_BLOCKS:
                self._blocks.clear()
            self._blocks[k] = blk
        return blk

    def _decode_block(self, k: int) -> tuple[int, ...]:
        lay, dump = self.layout, self._dump
        nb = lay.nbuckets
        first = k << _NBITS_STEP_SELECT_TABLE
        count = min(_STEP, nb - first)
        nbits = nb + lay.sel_m
        bits = lay.bits_vec
        (p0,) = _U32.unpack(dump[lay.select_table + 4 * k : lay.select_table + 4 * k + 4])
        if k + 1 < lay.samples:
            (p_end,) = _U32.unpack(dump[lay.select_table + 4 * k + 4 : lay.select_table
                                        + 4 * k + 8])
        else:
            p_end = nbits
        if not p0 < p_end <= nbits:
            raise CmphError("cs.sel.select_table", lay.select_table + 4 * k,
                            f"entry {k} is {p0}, not below the next sample or end {p_end}")
        # One of the block's ones is at (end(i) >> rem_r) + i, and a value is at most 31 bits
        # long, so consecutive ones are at most (31 >> rem_r) + 2 bits apart: a longer span is
        # refused before it is read (else a crafted bit vector of ones costs time quadratic in
        # its length below).
        span_max = count * ((_MAX_FIELD_BITS >> lay.rem_r) + 2)
        if p_end - p0 > span_max:
            raise CmphError("cs.sel.bits_vec", bits + (p0 >> 3),
                            f"select block {k} spans bits [{p0}, {p_end}), {p_end - p0} bits; "
                            f"{count} values of at most {_MAX_FIELD_BITS} bits span at most "
                            f"{span_max}")
        # Positions of ones first - 1 .. first + count - 1 (the one before the block lies at
        # most 32 bits before its sample: a value is at most 31 bits long).
        positions: list[int] = []
        if k:
            lo = max(0, p0 - 32)
            before = _int_bits(dump, bits, lo, p0) & ((1 << (p0 - lo)) - 1)
            if not before:
                raise CmphError("cs.sel.bits_vec", bits + (p0 >> 3),
                                f"no one within 32 bits before select sample {k}")
            positions.append(lo + before.bit_length() - 1)
        x = _int_bits(dump, bits, p0, p_end) & ((1 << (p_end - p0)) - 1)
        if not x & 1:
            raise CmphError("cs.sel.select_table", lay.select_table + 4 * k,
                            f"entry {k} is {p0}, which is not a one of the bit vector")
        ones = x.bit_count()
        if ones != count:  # checked before the loop below, which takes count steps
            raise CmphError("cs.sel.bits_vec", bits + (p0 >> 3),
                            f"select block {k} holds {ones} ones, expected {count}")
        while x:
            low = x & -x
            positions.append(p0 + low.bit_length() - 1)
            x ^= low
        if len(positions) - (1 if k else 0) != count or (
                k + 1 == lay.samples and positions[-1] != nbits - 1):
            raise CmphError("cs.sel.bits_vec", bits + (p0 >> 3),
                            f"select block {k} holds {len(positions) - (1 if k else 0)} ones, "
                            f"expected {count}")
        # end(i) = ((select(i) - i) << rem_r) + length_rems[i], for i = first - 1 .. last
        rem_r = lay.rem_r
        i0 = first - 1 if k else first
        ends: list[int] = []
        if rem_r:
            mask = (1 << rem_r) - 1
            rems = _int_bits(dump, lay.length_rems, i0 * rem_r, (first + count) * rem_r)
            for j, pos in enumerate(positions):
                ends.append(((pos - i0 - j) << rem_r) + ((rems >> (j * rem_r)) & mask))
        else:
            ends = [pos - i0 - j for j, pos in enumerate(positions)]
        prev = ends[0] if k else 0
        body = ends[1:] if k else ends
        store_lo = prev
        store = _int_bits(dump, lay.store_table, store_lo, max(store_lo, body[-1]))
        out: list[int] = []
        for j, end in enumerate(body):
            length = end - prev
            if not 0 <= length <= _MAX_FIELD_BITS or end > lay.total_length:
                raise CmphError("cs.length_rems", lay.length_rems + 4 * (((first + j) * rem_r)
                                                                         >> 5),
                                f"value {first + j} would be {length} bits long, ending at bit "
                                f"{end} of {lay.total_length}")
            out.append(((store >> (prev - store_lo)) & ((1 << length) - 1)) + (1 << length) - 1
                       if length else 0)
            prev = end
        return tuple(out)

    def displacement(self, g: int) -> int:
        """``compressed_seq_query(cs, g)``."""
        blk = self._blocks.get(g >> _NBITS_STEP_SELECT_TABLE)
        if blk is None:
            blk = self.block(g >> _NBITS_STEP_SELECT_TABLE)
        return blk[g & (_STEP - 1)]

    def slot(self, key: bytes) -> int:
        """``cmph_search(mphf, key, len(key))``, as :meth:`ChdPh.slot`."""
        seed, n, nbuckets = self.seed, self.n, self.nbuckets
        a, b, c = _lookup2_abc(seed, key)
        g = a % nbuckets
        blk = self._blocks.get(g >> 7)
        if blk is None:
            blk = self.block(g >> 7)
        disp = blk[g & 127]
        position: int = (b + (c % (n - 1) + 1) * disp + disp // n) % n
        return position
