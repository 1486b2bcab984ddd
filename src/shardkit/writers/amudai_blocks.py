"""Amudai writer, the bytes of data: encoded blocks, block maps, value dictionaries, Roaring
presence (FORMAT_NOTES.md 4.2 to 4.6), as :mod:`shardkit.writers.amudai` lays them out."""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from .._layouts import layouts, struct_of
from ..errors import UnsupportedVersionError
from ..hashing.amudai import checksum

__all__ = ["PRESENCE_MODES", "ROARING_COOKIE", "block_map", "plain_block", "roaring_bitmap",
           "value_dictionary"]

SEGMENT_SIZE = 1024
PLAIN, ZSTD, LZ4 = 1, 16, 17
#: records of amudai_shard.ksy: an encoded block's two lengths, a block map segment's fixed
#: head, the block map footer
_BLOCK_HEAD = struct_of(layouts.AMUDAI_SHARD__ENCODED_BLOCK__HEAD)
_SEGMENT_HEAD = struct_of(layouts.AMUDAI_SHARD__BLOCK_MAP_SEGMENT__HEAD)
_BLOCK_MAP_FOOTER = struct_of(layouts.AMUDAI_SHARD__BLOCK_MAP_FOOTER)
#: the 128-byte value dictionary header of amudai_shard.ksy; its last field, a checksum of the rest
_DICT_HEADER = struct_of(layouts.AMUDAI_SHARD__VALUE_DICTIONARY_HEADER)



def _pad(n: int, to: int) -> int:
    return (-n) % to


ROARING_COOKIE = 12346  # portable serialization without run containers
PRESENCE_MODES = ("bytes", "roaring", "auto")


def roaring_bitmap(positions: Iterable[int]) -> bytes:
    """The portable RoaringBitmap serialization of a set of u32 ``positions``.

    The format CRoaring's ``roaring_bitmap_portable_serialize``, pyroaring's ``serialize`` and
    the Rust ``roaring`` crate's ``serialize_into`` write: ``u32 cookie 12346``, ``u32``
    container count, per container ``u16 key`` (high 16 bits) and ``u16 cardinality - 1``,
    per container a ``u32`` byte offset from the start, then the containers: sorted ``u16`` low
    bits (array, cardinality <= 4096) or 8192 bytes of bits, LSB first (bitmap). No run
    containers are written (readers accept them).
    """
    arr = np.unique(np.fromiter(positions, np.int64))
    if arr.size and (int(arr[0]) < 0 or int(arr[-1]) >= 2**32):
        raise ValueError("roaring bitmap positions must be u32")
    keys = arr >> 16
    cuts = np.flatnonzero(np.diff(keys)) + 1
    groups = np.split(arr, cuts) if arr.size else []
    header = bytearray(struct.pack("<II", ROARING_COOKIE, len(groups)))
    bodies = []
    for g in groups:
        header += struct.pack("<HH", int(g[0]) >> 16, len(g) - 1)
        low = (g & 0xFFFF).astype("<u2")
        if len(g) <= 4096:
            bodies.append(low.tobytes())
        else:
            bits = np.zeros(65536, bool)
            bits[low] = True
            bodies.append(np.packbits(bits, bitorder="little").tobytes())
    offset = len(header) + 4 * len(groups)
    for body in bodies:
        header += struct.pack("<I", offset)
        offset += len(body)
    return bytes(header) + b"".join(bodies)


def _presence_section(valid: np.ndarray | None, n: int, mode: str = "bytes") -> bytes:
    """A block's presence section (4.2): empty, ``01``, ``02`` + bytes, or ``03`` + Roaring.

    ``mode``: ``bytes`` (the Plain profile: never Roaring), ``roaring`` (Roaring whenever the
    block has some nulls and some values, listing the smaller side), ``auto`` (the reference
    writer's rule: Roaring of the null positions below 1 % nulls, of the present positions
    above 99 %).
    """
    if valid is None or n == 0 or bool(valid.all()):
        return b""
    if not valid.any():
        return b"\x01"
    nulls = n - int(valid.sum())
    negated = None
    if mode == "roaring":
        negated = nulls <= n - nulls
    elif mode == "auto" and nulls / n < 0.01:
        negated = True
    elif mode == "auto" and nulls / n > 0.99:
        negated = False
    if negated is None:
        return b"\x02" + valid.astype(np.uint8).tobytes()
    listed = np.flatnonzero(~valid if negated else valid)
    return b"\x03" + bytes([negated]) + roaring_bitmap(listed.tolist())


def _compress(codec: int, raw: bytes) -> bytes:
    """LZ4: u32 uncompressed size + raw LZ4 block; Zstd: one standard frame."""
    try:
        if codec == LZ4:
            import lz4.block

            packed: bytes = lz4.block.compress(raw, store_size=False)
            return struct.pack("<I", len(raw)) + packed
        import zstandard

        return zstandard.ZstdCompressor(level=3).compress(raw)
    except ImportError as exc:
        name = "LZ4 (package lz4)" if codec == LZ4 else "Zstd (package zstandard)"
        raise UnsupportedVersionError(f"writing {name} blocks needs {exc.name}") from exc


_MIN_COMPRESS = {LZ4: 2048, ZSTD: 4096}


def plain_block(values_section: bytes, presence: bytes | None = None,
                checksums: bool = True) -> bytes:
    """One encoded block (FORMAT_NOTES.md 4.2).

    ``[u32 presence_size][u32 values_size][presence][pad8][values][pad][u32 ck]``; the presence
    section and its padding exist only when ``presence`` is not None (embedded presence).
    """
    out = bytearray(_BLOCK_HEAD.pack(len(presence or b""), len(values_section)))
    if presence is not None:
        out += presence
        out += bytes(_pad(len(out), 8))
    out += values_section
    out += bytes(_pad(len(out) + (4 if checksums else 0), 8))
    if checksums:
        out += struct.pack("<I", checksum(out))
    return bytes(out)


def _numeric_values(raw: bytes, codec: int) -> bytes:
    if codec != PLAIN and len(raw) >= _MIN_COMPRESS[codec]:
        return struct.pack("<H", codec) + bytes(6) + _compress(codec, raw)
    return struct.pack("<H", PLAIN) + raw


def _binary_values(items: list[bytes], fixed: int, codec: int) -> bytes:
    data = b"".join(items)
    if fixed:
        return struct.pack("<HB", PLAIN, 0) + data
    offsets = np.zeros(len(items) + 1, "<u8")
    np.cumsum([len(x) for x in items], out=offsets[1:])
    if codec != PLAIN and len(data) >= _MIN_COMPRESS[codec]:
        packed = _compress(codec, data)
        out = bytearray(struct.pack("<HIBB", codec, len(packed), 8, 0))
        out += packed
        out += bytes(_pad(len(out), 8))
        return bytes(out + offsets.tobytes())
    return struct.pack("<HB", PLAIN, 8) + offsets.tobytes() + data


def block_map(blocks: Sequence[tuple[int, int]]) -> bytes:
    """The block map of a stream of ``(logical_size, byte_size)`` blocks (4.3)."""
    records = bytearray()
    seg_logical, seg_offsets = [0], [0]
    logical = offset = 0
    for first in range(0, len(blocks), SEGMENT_SIZE):
        seg = blocks[first : first + SEGMENT_SIZE]
        ls = [b[0] for b in seg]
        bs = [b[1] for b in seg]
        lmin, bmin = min(ls), min(bs)
        lw, bw = _width(max(ls) - lmin), _width(max(bs) - bmin)
        rec = bytearray(_SEGMENT_HEAD.pack(logical, offset, lmin, bmin, lw * 8, bw * 8,
                                           len(seg)))
        rec += b"".join((x - lmin).to_bytes(lw, "little") for x in ls)
        rec += bytes(_pad(len(rec), 4))
        rec += b"".join((x - bmin).to_bytes(bw, "little") for x in bs)
        rec += bytes(_pad(len(rec), 8))
        records += rec
        logical += sum(ls)
        offset += sum(bs)
        seg_logical.append(logical)
        seg_offsets.append(len(records))
    n_seg = len(seg_logical) - 1
    return bytes(records + struct.pack(f"<{n_seg + 1}Q", *seg_logical)
                 + struct.pack(f"<{n_seg + 1}Q", *seg_offsets)
                 + _BLOCK_MAP_FOOTER.pack(logical, len(blocks), n_seg, SEGMENT_SIZE, offset))


def _width(span: int) -> int:
    return 1 if span <= 0xFF else 2 if span <= 0xFFFF else 4


def _dict_section(payload: bytes) -> bytes:
    out = bytearray(struct.pack("<Q", len(payload)) + payload + bytes(64))
    out += bytes((12 - len(out)) % 16)
    return bytes(out + struct.pack("<I", checksum(payload)))


def value_dictionary(entries: Sequence[bytes], null_id: int | None, value_type: int,
                     fixed_size: int, sort_key: Any = None) -> bytes:
    """A VALUE_DICTIONARY buffer (4.6): 128-byte header, values/offsets/sorted-ids sections."""
    values = _dict_section(b"".join(entries))
    ids = [i for i in range(len(entries)) if i != null_id]
    ids.sort(key=lambda i: entries[i] if sort_key is None else sort_key(entries[i]))
    sorted_ids = _dict_section(np.asarray(ids, "<u4").tobytes())
    v0 = 128
    v1 = v0 + len(values)
    if fixed_size:
        o0 = o1 = v1
        offsets = b""
    else:
        offs = np.zeros(len(entries) + 1, "<u8")
        np.cumsum([len(e) for e in entries], out=offs[1:])
        offsets = _dict_section(offs.tobytes())
        o0, o1 = v1, v1 + len(offsets)
    s0, s1 = o1, o1 + len(sorted_ids)
    head = bytearray(_DICT_HEADER.pack(value_type, len(entries), null_id is not None,
                                       null_id or 0, fixed_size, v0, v1, o0, o1, s0, s1, b"", 0))
    struct.pack_into("<I", head, len(head) - 4, checksum(head[:-4]))
    out = bytes(head) + values + offsets + sorted_ids
    return out + bytes(_pad(len(out), 64))
