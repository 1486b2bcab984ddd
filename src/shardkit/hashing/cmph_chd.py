"""Query side of cmph's CHD_PH minimal perfect hash, in pure Python (plus a numpy batch path).

Software Heritage read shards (``swh.perfecthash``) end with a ``cmph_dump`` of a CHD_PH
function built by the libcmph 2.0.2 bundled in the ``swh.perfecthash`` wheel.  This module
loads that dump and answers ``cmph_search`` for any key, giving exactly the slot the C library
gives, without needing the C library.

The algorithm and the dump layout follow the cmph sources:

* ``src/cmph_structs.c`` (``__cmph_dump``/``__cmph_load``): NUL-terminated algorithm name, then
  the ``u32`` size of the function (equal to ``n`` for CHD_PH).
* ``src/chd_ph.c`` (``chd_ph_dump``/``chd_ph_load``/``chd_ph_search``): ``u32`` hash-state
  length, hash state, ``u32`` compressed-sequence length, compressed sequence, ``u32 n``,
  ``u32 nbuckets``; the query is::

      hash_vector(hl, key, keylen, h)          # three 32-bit Jenkins hashes
      g = h[0] % nbuckets
      f = h[1] % n
      h = h[2] % (n - 1) + 1
      disp = compressed_seq_query(cs, g)
      probe0 = disp % n
      probe1 = disp / n
      position = (f + (uint64)h * probe0 + probe1) % n

* ``src/hash.c`` (``hash_state_load``): NUL-terminated hash name (``"jenkins"``) then the state.
* ``src/jenkins_hash.c`` (``__jenkins_hash_vector``, ``mix``, ``jenkins_state_load``): Bob
  Jenkins' 1996 lookup2 hash keeping all three words; the state is a ``u32`` seed.  Key bytes
  are read as *unsigned* (``const unsigned char *k``; the bundled libcmph 2.0.2 loads them with
  ``movzbl``), so bytes >= 0x80 are never sign-extended.
* ``src/compressed_seq.c`` (``compressed_seq_load``/``compressed_seq_query``): ``u32 n``,
  ``u32 rem_r``, ``u32 total_length``, ``u32`` select length, select structure, then the
  ``length_rems`` table (``BITS_TABLE_SIZE(n, rem_r)`` words) and the ``store_table``
  (``(total_length + 31) >> 5`` words).
* ``src/select.c`` (``select_load``/``_select_query``/``_select_next_query``) and
  ``src/select_lookup_tables.h``: ``u32 n``, ``u32 m``, ``bits_vec`` (``(n + m + 31) >> 5``
  words) and ``select_table`` (``(n >> 7) + 1`` words, one sample every 128 ones).
* ``src/bitbool.h`` (``get_bits_value``, ``get_bits_at_pos``, ``BITS_TABLE_SIZE``): fixed- and
  variable-width little-endian bit fields.

(Repositories consulted: ``bonitao/cmph`` and ``rurban/cmph`` on GitHub; every behaviour was
cross-checked against the libcmph shipped in ``swh.perfecthash`` 1.3.2.)

Instead of emulating the select structure at query time, :meth:`ChdPh.from_dump` decodes the
whole compressed sequence once into one displacement per bucket, after checking that the select
samples agree with the bit vector (so the decoded values are exactly what
``compressed_seq_query`` returns).  The decoding is vectorised with numpy (all the bit fields
of a table are gathered at once); a query is then one Jenkins hash, a few modulo operations and
a tuple lookup, in plain Python.

All integers in the dump are little-endian (the native order of the x86-64 machines that write
shards); the shard header around it is big-endian and is not handled here.

Queries that decode only the select block a key needs (a function opened without reading it
whole) are in :mod:`.cmph_chd_lazy`; their names are importable from here too.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import InitVar, dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, NamedTuple

from .jenkins import (
    _M32,
    _jenkins_hash_vectors_np,
    _lookup2_abc,
    jenkins_hash_vector,
)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
else:
    np = None  # replaced below: numpy is imported on first use


class _LazyNumpy:
    """numpy, imported on its first use: opening a shard and single lookups never need it
    (its import is a large part of a short process's start)."""

    def __getattr__(self, name: str) -> Any:
        import numpy

        return getattr(numpy, name)


if not TYPE_CHECKING:
    np = _LazyNumpy()
#: numpy for modules whose common paths do not need it (``from ... import lazy_numpy as np``)
lazy_numpy: Any = np

__all__ = ["LAYOUT_PREFIX_SIZE", "MAX_CACHED_BLOCKS", "ChdLayout", "ChdPh", "CmphError",
           "LazyChdPh", "check_tail", "jenkins_hash_vector", "lazy_numpy", "parse_layout"]

_U32 = struct.Struct("<I")
_ALGO_NAME = b"chd_ph"
_HASH_NAME = b"jenkins"
_JENKINS_STATE_SIZE = 4  # u32 seed
_MAX_NAME = 64  # longest NUL-terminated name we look for (cmph's names are < 8 bytes)
_NBITS_STEP_SELECT_TABLE = 7  # select.c: one select sample every 128 ones
_MAX_FIELD_BITS = 31  # compressed_seq.c: i_log2 of a u32 is at most 31
_BATCH_ROWS = 1 << 18  # keys hashed per numpy pass in ChdPh.slots()


class CmphError(ValueError):
    """A cmph dump is malformed, truncated or not a CHD_PH function with a Jenkins hash.

    Attributes:
        field: Dotted name of the dump field at fault (e.g. ``"cs.sel.bits_vec"``).
        offset: Byte offset of that field from the start of the dump.
    """

    def __init__(self, field: str, offset: int, detail: str) -> None:
        """Builds the error.

        Args:
            field: Dotted name of the dump field at fault.
            offset: Byte offset of that field from the start of the dump.
            detail: What is wrong with it.
        """
        super().__init__(f"cmph dump: {field} at offset {offset}: {detail}")
        self.field = field
        self.offset = offset


class _Reader:
    """Bounds-checked little-endian reader over a byte buffer."""

    __slots__ = ("_base", "_buf", "_pos")

    def __init__(self, buf: memoryview, base: int = 0) -> None:
        self._buf = buf
        self._pos = 0
        self._base = base  # offset of buf[0] within the whole dump, for messages

    @property
    def offset(self) -> int:
        """Offset of the next unread byte within the whole dump."""
        return self._base + self._pos

    @property
    def remaining(self) -> int:
        """Number of unread bytes."""
        return len(self._buf) - self._pos

    def take(self, size: int, name: str) -> memoryview:
        """Returns the next ``size`` bytes, or raises if fewer remain (nothing is allocated)."""
        if size > self.remaining:
            raise CmphError(name, self.offset, f"needs {size} bytes, {self.remaining} remain")
        out = self._buf[self._pos : self._pos + size]
        self._pos += size
        return out

    def u32(self, name: str) -> int:
        """Reads one little-endian ``u32``."""
        value: int = _U32.unpack(self.take(4, name))[0]
        return value

    def u32_at(self, name: str) -> tuple[int, int]:
        """Reads one little-endian ``u32``: ``(its offset in the dump, its value)``."""
        at = self._base + self._pos
        value: int = _U32.unpack(self.take(4, name))[0]
        return at, value

    def cstring(self, name: str) -> bytes:
        """Reads a NUL-terminated string (the NUL is consumed, not returned)."""
        window = bytes(self._buf[self._pos : self._pos + _MAX_NAME])
        end = window.find(b"\0")
        if end < 0:
            if len(window) < _MAX_NAME:
                raise CmphError(
                    name,
                    self.offset,
                    f"no NUL terminator in the {len(window)} bytes that remain",
                )
            raise CmphError(name, self.offset, f"no NUL terminator within {_MAX_NAME} bytes")
        self._pos += end + 1
        return window[:end]


def _decode_compressed_seq(buf: memoryview, base: int, nbuckets: int) -> tuple[int, ...]:
    """Parses a ``compressed_seq_dump`` and decodes every value ``compressed_seq_query`` returns.

    Args:
        buf: Exactly the compressed-sequence bytes (``cs_size`` of them).
        base: Offset of ``buf[0]`` within the whole dump, for error messages.
        nbuckets: Number of buckets of the CHD_PH function (must equal the sequence length).

    Returns:
        ``compressed_seq_query(cs, i)`` for every ``i`` in ``range(nbuckets)``.

    Raises:
        CmphError: If the structure is truncated, has trailing bytes or is inconsistent.
    """
    cs = _parse_compressed_seq(buf, base, nbuckets)
    ones = _select_ones(cs)
    return _decode_values(cs, ones)


class _CompressedSeq(NamedTuple):
    """The parts of a ``compressed_seq_dump``, each with the offset it starts at, sized and
    checked against each other (every count bounded by the bytes present)."""

    n: int
    rem_r: int
    total_length: int
    total_off: int
    sel_n: int
    nbits: int
    bits_vec: memoryview
    bits_off: int
    select_table: memoryview
    table_off: int
    length_rems: memoryview
    rems_off: int
    store_table: memoryview


def _parse_compressed_seq(buf: memoryview, base: int, nbuckets: int) -> _CompressedSeq:
    """Split a ``compressed_seq_dump`` into its parts; every size and count checked before
    anything proportional to them is allocated."""
    r = _Reader(buf, base)
    n_off, cs_n = r.u32_at("cs.n")
    rem_r_off, rem_r = r.u32_at("cs.rem_r")
    total_off, total_length = r.u32_at("cs.total_length")
    sel_size_off, sel_size = r.u32_at("cs.sel_size")
    sel_off = r.offset
    sr = _Reader(r.take(sel_size, "cs.sel"), sel_off)
    sel_n = sr.u32("cs.sel.n")
    sel_m_off, sel_m = sr.u32_at("cs.sel.m")
    nbits = sel_n + sel_m
    if nbits + 31 > _M32:  # select.c computes (n + m + 31) >> 5 in 32 bits
        raise CmphError("cs.sel.m", sel_m_off, f"n + m = {nbits} overflows 32-bit arithmetic")
    bits_off = sr.offset
    bits_vec = sr.take(4 * ((nbits + 31) >> 5), "cs.sel.bits_vec")
    table_off = sr.offset
    table_words = (sel_n >> _NBITS_STEP_SELECT_TABLE) + 1
    select_table = sr.take(4 * table_words, "cs.sel.select_table")
    if sr.remaining:
        raise CmphError(
            "cs.sel_size",
            sel_size_off,
            f"is {sel_size} but the select structure uses {sel_size - sr.remaining} bytes",
        )
    if rem_r > _MAX_FIELD_BITS:
        raise CmphError("cs.rem_r", rem_r_off, f"is {rem_r}, must be at most {_MAX_FIELD_BITS}")
    rems_bits = cs_n * rem_r
    if rems_bits + 31 > _M32:  # BITS_TABLE_SIZE(n, rem_r) is computed in 32 bits
        raise CmphError("cs.rem_r", rem_r_off, f"n * rem_r = {rems_bits} overflows 32 bits")
    rems_off = r.offset
    length_rems = r.take(4 * ((rems_bits + 31) >> 5), "cs.length_rems")
    if total_length + 31 > _M32:
        raise CmphError("cs.total_length", total_off, f"{total_length} overflows 32 bits")
    store_table = r.take(4 * ((total_length + 31) >> 5), "cs.store_table")
    if r.remaining:
        # From a whole dump, blame the cs_size field just before buf; from bare cs bytes
        # (ChdPh.from_parts), blame the buffer itself.
        name, offset = ("cs_size", base - 4) if base >= 4 else ("cs", base)
        raise CmphError(
            name,
            offset,
            f"is {len(buf)} bytes but the compressed sequence uses {len(buf) - r.remaining}",
        )

    # Structural consistency, all checked before any allocation proportional to the counts
    # (every count below is now bounded by the number of bytes actually present).
    if cs_n != nbuckets:
        raise CmphError("cs.n", n_off, f"is {cs_n} but nbuckets is {nbuckets}")
    if sel_n != cs_n:
        raise CmphError("cs.sel.n", sel_off, f"is {sel_n} but cs.n is {cs_n}")
    if sel_m != total_length >> rem_r:
        raise CmphError(
            "cs.sel.m",
            sel_m_off,
            f"is {sel_m} but total_length >> rem_r is {total_length >> rem_r}",
        )
    return _CompressedSeq(cs_n, rem_r, total_length, total_off, sel_n, nbits, bits_vec,
                          bits_off, select_table, table_off, length_rems, rems_off, store_table)


def _select_ones(cs: _CompressedSeq) -> Any:
    """The positions of the ones of the select bit vector, checked against n and against
    every sample of the select table."""
    # Bit p is bit p & 7 of byte p >> 3, i.e. bit p & 31 of little-endian word p >> 5, as in
    # bitbool.h.  select_generate() writes n ones and m zeros and nothing else, the last bit
    # written being a one.  The unpacked vector takes 8 bytes per byte of bits_vec, which is
    # present in full.
    ones = np.flatnonzero(np.unpackbits(np.frombuffer(cs.bits_vec, dtype=np.uint8),
                                        bitorder="little"))
    if ones.size != cs.sel_n:
        raise CmphError(
            "cs.sel.bits_vec", cs.bits_off, f"has {ones.size} bits set, expected n = {cs.sel_n}"
        )
    if cs.sel_n and ones[-1] != cs.nbits - 1:
        raise CmphError(
            "cs.sel.bits_vec", cs.bits_off,
            f"the last bit set is not bit n + m - 1 = {cs.nbits - 1}"
        )

    # _select_query() starts from select_table[i >> 7] and counts ones forward, so it returns
    # the true i-th one exactly when every sample is the position of one number 128 * k.
    expected = ones[:: 1 << _NBITS_STEP_SELECT_TABLE]
    samples = np.frombuffer(cs.select_table, dtype="<u4")[: expected.size]
    wrong = np.flatnonzero(samples != expected)
    if wrong.size:
        k = int(wrong[0])
        raise CmphError(
            "cs.sel.select_table",
            cs.table_off + 4 * k,
            f"entry {k} is {int(samples[k])}, but one number {k << 7} is at bit {int(expected[k])}",
        )
    return ones


def _decode_values(cs: _CompressedSeq, ones: Any) -> tuple[int, ...]:
    """``compressed_seq_query(i)`` for every i, each field checked to lie in the store
    table."""
    # compressed_seq_query(idx): the encoded value of idx occupies store_table bits
    # [end(idx - 1), end(idx)) with end(i) = ((select(i) - i) << rem_r) + length_rems[i]
    # (end(-1) = 0), and decodes to stored + 2**length - 1 (0 when length is 0).
    # ones[i] - i <= n + m < 2**32 and rem_r <= 31, so end(i) < 2**63 fits in int64.
    cs_n, rem_r, total_length = cs.n, cs.rem_r, cs.total_length
    end = ones - np.arange(cs_n, dtype=np.int64)
    end <<= rem_r
    if rem_r:
        # length_rems: n fields of rem_r bits (get_bits_value), field i at bit i * rem_r.
        end += _bit_fields(cs.length_rems, np.arange(cs_n, dtype=np.int64) * rem_r, rem_r)
    start = np.empty_like(end)
    start[:1] = 0
    start[1:] = end[:-1]
    length = end - start
    bad = np.flatnonzero((length < 0) | (length > _MAX_FIELD_BITS) | (end > total_length))
    if bad.size:
        i = int(bad[0])
        if not 0 <= length[i] <= _MAX_FIELD_BITS:
            raise CmphError(
                "cs.length_rems",
                cs.rems_off + 4 * ((i * rem_r) >> 5),
                f"value {i} would be {int(length[i])} bits long (must be 0..{_MAX_FIELD_BITS})",
            )
        raise CmphError(
            "cs.total_length",
            cs.total_off,
            f"is {total_length} but value {i} ends at bit {int(end[i])}",
        )
    used = int(end[-1]) if cs_n else 0
    if used != total_length:
        raise CmphError(
            "cs.total_length",
            cs.total_off,
            f"is {total_length} but the encoded values use {used} bits",
        )
    # Every field now lies within store_table: 0 <= start <= end <= total_length.
    ones_mask = (np.int64(1) << length) - 1  # 2**length - 1, also the decoding offset
    values = _bit_fields(cs.store_table, start, length) + ones_mask
    return tuple(values.tolist())


def _bit_fields(raw: memoryview, pos: Any, width: Any) -> Any:
    """Little-endian bit fields of a table of ``u32`` words (bitbool.h's ``get_bits_at_pos``).

    Args:
        raw: The table (a multiple of 4 bytes).
        pos: ``int64`` array of the bit offsets of the fields; every field must lie within
            ``raw``.
        width: Width of every field (an int or an ``int64`` array), each at most 31 bits.

    Returns:
        The fields, as an ``int64`` array.
    """
    # window[j] holds words j and j + 1, so a field of at most 31 bits starting in word j
    # (at bit pos & 31 <= 31 of it) is always within window[pos >> 5].
    count = len(raw) >> 2
    window = np.zeros(count + 1, dtype=np.uint64)
    window[:count] = np.frombuffer(raw, dtype="<u4")
    window[:count] |= window[1:] << np.uint64(32)
    # Reinterpreted as int64, the shift is arithmetic, but the field ends at bit
    # (pos & 31) + width <= 62 of the window, so the sign bits it shifts in are masked off.
    fields = window[pos >> 5].view(np.int64)
    fields >>= pos & 31
    fields &= (np.int64(1) << width) - 1
    return fields


@dataclass(frozen=True)
class ChdPh:
    """A loaded CHD_PH minimal perfect hash function, answering ``cmph_search``.

    Attributes:
        n: Number of bins, i.e. the range of :meth:`slot` (``cmph_size``).
        nbuckets: Number of buckets of the first-level hash.
        seed: Seed of the Jenkins hash.
        displacements: The decoded compressed sequence: the displacement of every bucket
            (``compressed_seq_query(cs, g)`` for ``g`` in ``range(nbuckets)``).
        dump_size: Number of bytes of the dump that were consumed (for :meth:`from_parts`,
            the size a ``cmph_dump`` of these parts has).
    """

    n: int
    nbuckets: int
    seed: int
    displacements: tuple[int, ...] = field(repr=False)
    dump_size: int = 0
    # (seed, n, n - 1, nbuckets, displacements): what slot() needs, in one attribute read.
    _query: tuple[int, int, int, int, tuple[int, ...]] = field(
        init=False, repr=False, compare=False
    )
    # True only from from_dump() and from_parts(), whose decoder can only yield displacements
    # in [0, 2**32 - 2]; skips the range check, a pass over every bucket.
    _decoded: InitVar[bool] = field(default=False, kw_only=True)

    def __post_init__(self, _decoded: bool) -> None:
        """Validates the parameters and gathers what :meth:`slot` needs in one tuple.

        Args:
            _decoded: Whether the displacements come from the compressed-sequence decoder.

        Raises:
            ValueError: If a parameter is out of range (``n < 2`` would make cmph divide by
                zero in ``h[2] % (n - 1)``).
        """
        if not 2 <= self.n <= _M32:
            raise ValueError(f"n must be in [2, 2**32), got {self.n}")
        if not 1 <= self.nbuckets <= _M32:
            raise ValueError(f"nbuckets must be in [1, 2**32), got {self.nbuckets}")
        if not 0 <= self.seed <= _M32:
            raise ValueError(f"seed must be a 32-bit unsigned integer, got {self.seed}")
        if len(self.displacements) != self.nbuckets:
            raise ValueError(
                f"{len(self.displacements)} displacements given for {self.nbuckets} buckets"
            )
        displacements = self.displacements
        # min() and max() run at C speed (nbuckets >= 1, so neither sees an empty sequence).
        if not _decoded and (min(displacements) < 0 or max(displacements) > _M32):
            raise ValueError("displacements must be 32-bit unsigned integers")
        query = (self.seed, self.n, self.n - 1, self.nbuckets, displacements)
        object.__setattr__(self, "_query", query)

    @classmethod
    def from_dump(cls, buf: bytes | bytearray | memoryview) -> ChdPh:
        """Loads a ``cmph_dump`` of a CHD_PH function, as ``cmph_load`` does.

        Bytes after the dump are ignored; compare :attr:`dump_size` with the length of the
        buffer to require that the dump ends exactly at its end.

        Args:
            buf: The dump, starting with the NUL-terminated name ``chd_ph``.

        Returns:
            The loaded function.

        Raises:
            CmphError: If the dump is truncated, malformed, of another algorithm, uses another
                hash function than Jenkins, or is inconsistent.
        """
        view = memoryview(buf)
        if view.ndim != 1 or view.itemsize != 1:
            view = view.cast("B")
        r = _Reader(view)
        name = r.cstring("algo_name")
        if name != _ALGO_NAME:
            raise CmphError("algo_name", 0, f"is {name!r}, expected {_ALGO_NAME!r}")
        size_off, size = r.u32_at("size")
        hl_size_off, hl_size = r.u32_at("hl_size")
        hl_off = r.offset
        hr = _Reader(r.take(hl_size, "hl"), hl_off)
        hash_name = hr.cstring("hl.name")
        if hash_name != _HASH_NAME:
            raise CmphError(
                "hl.name", hl_off, f"is {hash_name!r}, only {_HASH_NAME!r} is supported"
            )
        seed = hr.u32("hl.seed")
        if hr.remaining:
            raise CmphError(
                "hl_size",
                hl_size_off,
                f"is {hl_size}, a jenkins state takes {hl_size - hr.remaining} bytes",
            )
        cs_size = r.u32("cs_size")
        cs_off = r.offset
        cs = r.take(cs_size, "cs")
        n_off, n = r.u32_at("n")
        nbuckets_off, nbuckets = r.u32_at("nbuckets")
        if n != size:
            raise CmphError("n", n_off, f"is {n} but the size field at offset {size_off} is {size}")
        if n == 0:
            raise CmphError("n", n_off, "is 0: cmph would divide by zero in h[1] % n")
        if n == 1:
            raise CmphError("n", n_off, "is 1: cmph would divide by zero in h[2] % (n - 1)")
        if nbuckets == 0:
            raise CmphError("nbuckets", nbuckets_off, "is 0: cmph would divide by zero")
        displacements = _decode_compressed_seq(cs, cs_off, nbuckets)
        return cls(n, nbuckets, seed, displacements, r.offset, _decoded=True)

    @classmethod
    def from_parts(
        cls, n: int, nbuckets: int, seed: int, cs_bytes: bytes | bytearray | memoryview
    ) -> ChdPh:
        """Builds a function from its fields and the bytes of its compressed sequence.

        Args:
            n: Number of bins.
            nbuckets: Number of buckets.
            seed: Seed of the Jenkins hash.
            cs_bytes: The ``compressed_seq_dump`` bytes (the ``cs`` field of a dump).

        Returns:
            The function; its :attr:`dump_size` is the size of the equivalent ``cmph_dump``.

        Raises:
            CmphError: If ``cs_bytes`` is malformed (offsets are relative to ``cs_bytes``).
            ValueError: If ``n``, ``nbuckets`` or ``seed`` is out of range.
        """
        view = memoryview(cs_bytes)
        if view.ndim != 1 or view.itemsize != 1:
            view = view.cast("B")
        if not 2 <= n <= _M32 or not 1 <= nbuckets <= _M32:
            raise ValueError(f"need 2 <= n < 2**32 and 1 <= nbuckets < 2**32, got {n}, {nbuckets}")
        displacements = _decode_compressed_seq(view, 0, nbuckets)
        header = len(_ALGO_NAME) + 1 + 4 + 4 + len(_HASH_NAME) + 1 + _JENKINS_STATE_SIZE + 4
        return cls(n, nbuckets, seed, displacements, header + len(view) + 8, _decoded=True)

    def slot(self, key: bytes) -> int:
        """Returns ``cmph_search(mphf, key, len(key))``: the slot of ``key`` in ``range(n)``.

        Keys that were not in the key set still get a slot (a perfect hash cannot tell them
        apart); check the key stored at that slot.

        Args:
            key: The key (any bytes-like object); 32-byte keys take a fast path.

        Returns:
            The slot, in ``range(self.n)``.
        """
        seed, n, nm1, nbuckets, displacements = self._query
        a, b, c = _lookup2_abc(seed, key)
        disp = displacements[a % nbuckets]
        # chd_ph_search() computes (f + h * probe0 + probe1) % n in 64 bits, without wrapping,
        # with f = b % n, h = c % (n - 1) + 1, probe0 = disp % n and probe1 = disp // n.
        # Modulo n, f is b and h * probe0 is h * disp; Python ints do not overflow, so the
        # reductions of b and disp can be left to the final % n.
        position: int = (b + (c % nm1 + 1) * disp + disp // n) % n
        return position

    def slots(self, keys: Sequence[bytes] | npt.NDArray[np.uint8]) -> npt.NDArray[np.int64]:
        """Vectorised :meth:`slot` for many keys at once (numpy arithmetic).

        Args:
            keys: Either a sequence of bytes-like keys, or a 2-D ``uint8`` array with one key
                per row.  Keys of equal length are hashed with numpy ``uint32`` arithmetic;
                a sequence of keys of different lengths falls back to :meth:`slot` per key.

        Returns:
            A 1-D ``int64`` array with the slot of every key, in order.

        Raises:
            ValueError: If ``keys`` is an array that is not 2-D ``uint8``.
        """
        if isinstance(keys, np.ndarray):
            if keys.ndim != 2 or keys.dtype != np.uint8:
                raise ValueError(f"a key array must be 2-D uint8, got {keys.ndim}-D {keys.dtype}")
            rows = keys
        else:
            count = len(keys)
            if count == 0:
                return np.empty(0, dtype=np.int64)
            width = len(keys[0])
            if any(len(k) != width for k in keys):
                return np.fromiter((self.slot(k) for k in keys), dtype=np.int64, count=count)
            rows = np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(count, width)
        out = np.empty(rows.shape[0], dtype=np.int64)
        for start in range(0, rows.shape[0], _BATCH_ROWS):
            chunk = rows[start : start + _BATCH_ROWS]
            out[start : start + chunk.shape[0]] = self._slots_np(chunk)
        return out

    @cached_property
    def _np_probes(self) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
        """``probe0`` and ``probe1`` per bucket as ``uint64`` arrays (built on first use)."""
        disp = np.array(self.displacements, dtype=np.uint64)
        probe1, probe0 = np.divmod(disp, np.uint64(self.n))
        return probe0, probe1

    def _slots_np(self, rows: npt.NDArray[np.uint8]) -> npt.NDArray[np.int64]:
        """Slots of the keys in the rows of a 2-D ``uint8`` array."""
        a, b, c = _jenkins_hash_vectors_np(self.seed, rows)
        probe0, probe1 = self._np_probes
        n = self.n
        g = a % np.uint32(self.nbuckets)
        f = (b % np.uint32(n)).astype(np.uint64)
        h = (c % np.uint32(n - 1)).astype(np.uint64) + np.uint64(1)
        # h * probe0 <= (n - 1)**2, so the 64-bit sum cannot wrap (n < 2**32).
        pos = (f + h * probe0[g] + probe1[g]) % np.uint64(n)
        result: npt.NDArray[np.int64] = pos.astype(np.int64)
        return result


#: Lazy-query names, now in :mod:`.cmph_chd_lazy`, importable from here as before.
_LAZY = frozenset({"LAYOUT_PREFIX_SIZE", "MAX_CACHED_BLOCKS", "ChdLayout", "LazyChdPh",
                   "check_tail", "parse_layout"})

if TYPE_CHECKING:
    from .cmph_chd_lazy import (
        LAYOUT_PREFIX_SIZE,
        MAX_CACHED_BLOCKS,
        ChdLayout,
        LazyChdPh,
        check_tail,
        parse_layout,
    )


def __getattr__(name: str) -> Any:
    """The lazy-query names come from :mod:`.cmph_chd_lazy` (which imports this module, so
    they are looked up on first use rather than imported at the top)."""
    if name in _LAZY:
        from . import cmph_chd_lazy

        return getattr(cmph_chd_lazy, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
