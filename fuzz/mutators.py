"""Structure-aware mutators: mutate what a checksum covers, then make the checksum right again.

Plain byte mutation rarely gets past a file's first checksum, so most inputs would only ever test
the checksum check. These mutators pick a region a checksum or a codec covers, mutate the bytes
inside it with libFuzzer's own mutator, and re-seal it, so the fuzzer reaches what lies behind:

- ZSS: a block's body is decoded (zlib, bz2, or ``none+crc32c`` with its CRC-32C stripped),
  mutated, re-encoded with the same codec and re-framed (new ``uleb128`` length; the blocks after
  it move, which the index then points into the middle of: the reader must say so); the header is
  mutated and its CRC-32C recomputed.
- ZS: a block's payload is decoded (raw deflate, raw LZMA2 or stored), mutated, re-encoded and
  re-framed with a new length and CRC-64-xz; the header's file length and CRC-64-xz are then made
  right again, so the file still opens and the walk reaches the blocks behind.
- Amudai: a length-message-checksum record (protobuf metadata, the FlatBuffers schema) or a data
  block with a trailing checksum is mutated in place, keeping its length, and ``ck`` recomputed
  (``ck = hi32 ^ lo32`` of XXH3-64).

Every mutator falls back to plain mutation for part of its calls, so structure is also broken.
"""

from __future__ import annotations

import bz2
import random
import struct
import zlib
from collections import OrderedDict
from collections.abc import Callable

import numpy as np
import xxhash

from shardkit.hashing.amudai import checksum as ck
from shardkit.hashing.crc32c import crc32c
from shardkit.hashing.crc64xz import crc64xz_le

Mutate = Callable[[bytes, int], bytes]


def _uleb(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _read_uleb(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    for i in range(10):
        if pos + i >= len(data):
            raise ValueError("eof")
        byte = data[pos + i]
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos + i + 1
    raise ValueError("long")


def zss_blocks(data: bytes) -> tuple[int, list[tuple[int, int, int]]] | None:
    """(data_offset, [(block start, payload start, payload end)]) of a ZSS file, or None."""
    if len(data) < 16:
        return None
    n = struct.unpack_from("<I", data, 8)[0]
    pos = 16 + n
    if pos > len(data):
        return None
    blocks = []
    while pos < len(data) and len(blocks) < 4096:
        try:
            length, start = _read_uleb(data, pos + 1)
        except ValueError:
            break
        if start + length > len(data):
            break
        blocks.append((pos, start, start + length))
        pos = start + length
    return 16 + n, blocks


def _codec_of(payload: bytes) -> str:
    if payload[:3] == b"BZh":
        return "bz2"
    if len(payload) >= 2 and payload[0] & 0x0F == 8 and (payload[0] << 8 | payload[1]) % 31 == 0:
        return "zlib"
    return "none"


def _decode(codec: str, payload: bytes) -> bytes | None:
    try:
        if codec == "bz2":
            return bz2.decompress(payload)
        if codec == "zlib":
            d = zlib.decompressobj()
            out = d.decompress(payload, 1 << 22)
            return out if d.eof else None
        return payload[:-4] if len(payload) >= 4 else None
    except (OSError, ValueError, zlib.error, EOFError):
        return None


def _encode(codec: str, body: bytes) -> bytes:
    if codec == "bz2":
        return bz2.compress(body, 1)
    if codec == "zlib":
        return zlib.compress(body, 1)
    return body + struct.pack("<I", crc32c(body))


def mutate_zss(data: bytes, max_size: int, seed: int, mutate: Mutate) -> bytes:
    """Mutate one ZSS block body (re-encoded and re-framed) or the header (CRC re-sealed)."""
    rng = random.Random(seed)
    layout = zss_blocks(data) if rng.random() < 0.8 else None
    if not layout or not layout[1]:
        return mutate(data, max_size)
    data_offset, blocks = layout
    if rng.random() < 0.15:  # the header, CRC recomputed
        n = data_offset - 16
        header = mutate(data[12:12 + n], n + 16)
        return (data[:8] + struct.pack("<I", len(header)) + header
                + struct.pack("<I", crc32c(header)) + data[data_offset:])[:max_size]
    start, p0, p1 = blocks[rng.randrange(len(blocks))]
    payload = data[p0:p1]
    codec = _codec_of(payload)
    body = _decode(codec, payload)
    if body is None:
        return mutate(data, max_size)
    new_body = mutate(body, len(body) + 64)
    if new_body == body:
        return data
    new_payload = _encode(codec, new_body)
    block = data[start:start + 1] + _uleb(len(new_payload)) + new_payload
    return (data[:start] + block + data[p1:])[:max_size]


def zs_blocks(data: bytes) -> tuple[int, list[tuple[int, int, int]]] | None:
    """(first block offset, [(block start, body start, body end)]) of a ZS file, or None."""
    if len(data) < 24 or data[:8] != b"\xabZSfiLe\x01":
        return None
    pos = 24 + struct.unpack_from("<Q", data, 8)[0]
    first, blocks = pos, []
    while pos < len(data) and len(blocks) < 256:
        try:
            length, body = _read_uleb(data, pos)
        except (IndexError, ValueError):
            break
        if length < 1 or body + length + 8 > len(data):
            break
        blocks.append((pos, body, body + length))
        pos = body + length + 8
    return first, blocks


def _zs_codec(data: bytes) -> str:
    n = struct.unpack_from("<Q", data, 8)[0]
    return data[72:88].rstrip(b"\0").decode("ascii", "replace") if n >= 72 else "none"


def _zs_decode(codec: str, payload: bytes) -> bytes | None:
    import lzma

    try:
        if codec == "deflate":
            return zlib.decompress(payload, -15)
        if codec.startswith("lzma2"):
            return lzma.decompress(payload, format=lzma.FORMAT_RAW, filters=[
                {"id": lzma.FILTER_LZMA2, "dict_size": 1 << 20}])
    except (zlib.error, lzma.LZMAError):
        return None
    return payload


def _zs_encode(codec: str, body: bytes) -> bytes:
    import lzma

    if codec == "deflate":
        c = zlib.compressobj(1, zlib.DEFLATED, -15)
        return c.compress(body) + c.flush()
    if codec.startswith("lzma2"):
        return lzma.compress(body, format=lzma.FORMAT_RAW,
                             filters=[{"id": lzma.FILTER_LZMA2, "preset": 0}])
    return body


def _zs_reseal(data: bytes) -> bytes:
    """The header's file length set to the size, and its CRC-64-xz recomputed."""
    n = struct.unpack_from("<Q", data, 8)[0]
    if n < 24 or 24 + n > len(data):
        return data
    header = data[16:32] + struct.pack("<Q", len(data)) + data[40:16 + n]
    return data[:16] + header + crc64xz_le(header) + data[24 + n:]


def mutate_zs(data: bytes, max_size: int, seed: int, mutate: Mutate) -> bytes:
    """Mutate one ZS block payload (re-encoded, re-framed, CRC-64-xz re-sealed) or the header."""
    rng = random.Random(seed)
    layout = zs_blocks(data) if rng.random() < 0.8 else None
    if not layout or not layout[1]:
        return mutate(data, max_size)
    first, blocks = layout
    if rng.random() < 0.15:  # the header, CRC recomputed
        n = first - 24
        header = mutate(data[16:16 + n], n + 16)
        out = (data[:8] + struct.pack("<Q", len(header)) + header + crc64xz_le(header)
               + data[first:])
        return out[:max_size]
    start, b0, b1 = blocks[rng.randrange(len(blocks))]
    codec = _zs_codec(data)
    level, payload = data[b0:b0 + 1], data[b0 + 1:b1]
    body = _zs_decode(codec, payload)
    if body is None:
        return mutate(data, max_size)
    if rng.random() < 0.1:
        level = bytes([rng.choice([0, 1, 2, 63, 64, 255])])
        new_body = body
    else:
        new_body = mutate(body, len(body) + 64)
    contents = level + _zs_encode(codec, new_body)
    block = _uleb(len(contents)) + contents + crc64xz_le(contents)
    return _zs_reseal(data[:start] + block + data[b1 + 8:])[:max_size]


_AMUDAI_CACHE: OrderedDict[bytes, list[tuple[int, int, int]]] = OrderedDict()


def amudai_regions(data: bytes) -> list[tuple[int, int, int]]:
    """Checksummed regions of an Amudai file as (start, end, checksum offset), cached per input.

    A length-message-checksum record at ``p`` is ``u32 L | payload | u32 ck(payload)``; a data
    block with a checksum ends in ``u32 ck(block bytes before it)`` (found from the records' own
    lengths is not possible without the metadata, so blocks are found where a checksum matches).
    """
    key = xxhash.xxh3_128_digest(data)
    hit = _AMUDAI_CACHE.get(key)
    if hit is not None:
        _AMUDAI_CACHE.move_to_end(key)
        return hit
    regions = []
    n = len(data)
    if n >= 24:
        # Candidate filter in numpy: a u32 length L at p with 0 < L and p + 8 + L <= n - 8 (the
        # record and its checksum end before the footer); only those are hashed.
        b = np.frombuffer(data, dtype=np.uint8).astype(np.int64)
        lengths = b[:-3] | b[1:-2] << 8 | b[2:-1] << 16 | b[3:] << 24
        p = np.arange(8, n - 15)
        ok = lengths[p]
        ok = (ok > 0) & (p + 8 + ok <= n - 8)
        for start in p[ok].tolist():
            end = start + 4 + int(lengths[start])
            if int(lengths[end]) == ck(data[start + 4:end]):
                regions.append((start + 4, end, end))
    _AMUDAI_CACHE[key] = regions
    if len(_AMUDAI_CACHE) > 512:
        _AMUDAI_CACHE.popitem(last=False)
    return regions


def mutate_amudai(data: bytes, max_size: int, seed: int, mutate: Mutate) -> bytes:
    """Mutate inside one checksummed Amudai record, keeping its length, and re-seal it."""
    rng = random.Random(seed)
    regions = amudai_regions(data) if rng.random() < 0.8 else []
    if not regions:
        return mutate(data, max_size)
    start, end, at = regions[rng.randrange(len(regions))]
    chunk = mutate(data[start:end], end - start)
    chunk = (chunk + data[start + len(chunk):end])[:end - start]
    out = bytearray(data)
    out[start:end] = chunk
    out[at:at + 4] = struct.pack("<I", ck(bytes(chunk)))
    return bytes(out)[:max_size]


MUTATORS = {"zss": mutate_zss, "zs": mutate_zs, "amudai": mutate_amudai}
