"""Hugging Face Xet hashes: keyed BLAKE3, merkle aggregation and the display hex form.

Every hash of the Xet storage protocol is BLAKE3 in keyed mode with a 32-byte output
(``blake3_keyed(key, msg)``); "HMAC" in xet-core means exactly this, never HMAC-SHA256. The keys
and algorithms follow the shared corpus notes (FORMAT_NOTES.md sections 1, 2 and 7), checked
against the 18 reference vectors of xet-core ``aggregated_hashes.rs`` and against real shards:

* chunk hash = ``blake3_keyed(DATA_KEY, chunk bytes)``;
* xorb hash = merkle aggregation of the xorb's (chunk hash, size) pairs;
* file hash = ``blake3_keyed(32 zero bytes, aggregation of the file's chunks)`` (32 zero bytes
  for an empty file);
* term verification hash = ``blake3_keyed(VERIFICATION_KEY, concatenated chunk hashes)``;
* keyed (global-dedup) chunk hash = ``blake3_keyed(shard footer key, chunk hash)``;
* shard content hash (its ``<hash>.mdb`` file name) = ``blake3_keyed(DATA_KEY, shard bytes)``.

Hashes are handled as their 32 stored bytes. The display form (Hub, URLs, file names, hf-xet's
API) reverses the bytes of each 8-byte group before hex-encoding: :func:`display_hex` and
:func:`parse_display_hex` convert.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import blake3

__all__ = [
    "DATA_KEY",
    "HASH_LEN",
    "INTERNAL_NODE_KEY",
    "VERIFICATION_KEY",
    "ZERO_HASH",
    "aggregate",
    "blake3_keyed",
    "chunk_hash",
    "display_hex",
    "file_hash",
    "keyed_chunk_hash",
    "parse_display_hex",
    "shard_hash",
    "verification_hash",
    "xorb_hash",
]

HASH_LEN = 32
ZERO_HASH = bytes(HASH_LEN)
DATA_KEY = bytes.fromhex("6697f5775b9550de3135cbaca597181c9de421109beb2b58b4d0b04b93adf229")
INTERNAL_NODE_KEY = bytes.fromhex(
    "017ec5c7a5472996fd946666b48a02e65ddd536f37c76dd2f86352e64a53713f")
VERIFICATION_KEY = bytes.fromhex(
    "7f1857d6ce56ed66127ff913e7a5c3f3a4cd26d5b5db49e64124987f28fb94c3")
FILE_HASH_SALT = ZERO_HASH
MEAN_BRANCHING_FACTOR = 4
_MAX_GROUP = 2 * MEAN_BRANCHING_FACTOR + 1  # 9


def blake3_keyed(key: bytes, data: bytes | bytearray | memoryview) -> bytes:
    """BLAKE3 in keyed mode, 32-byte output.

    Args:
        key: The 32-byte key.
        data: The message.
    """
    return blake3.blake3(data, key=key).digest()


def display_hex(raw: bytes | bytearray | memoryview) -> str:
    """The display hex of 32 stored hash bytes (each 8-byte group byte-reversed).

    Example::

        >>> display_hex(bytes.fromhex("16af3a84044b83d6") + bytes(24))[:16]
        'd6834b04843aaf16'
    """
    b = bytes(raw)
    if len(b) != HASH_LEN:
        raise ValueError(f"a xet hash is {HASH_LEN} bytes, got {len(b)}")
    return (b[7::-1] + b[15:7:-1] + b[23:15:-1] + b[31:23:-1]).hex()


def parse_display_hex(text: str) -> bytes:
    """The 32 stored bytes of a display-hex hash (inverse of :func:`display_hex`).

    Raises:
        ValueError: ``text`` is not 64 hex digits.
    """
    if len(text) != 2 * HASH_LEN:
        raise ValueError(f"a xet hash is {2 * HASH_LEN} hex digits, got {len(text)}")
    b = bytes.fromhex(text)
    return b[7::-1] + b[15:7:-1] + b[23:15:-1] + b[31:23:-1]


def chunk_hash(data: bytes | bytearray | memoryview) -> bytes:
    """The hash of one chunk's uncompressed bytes."""
    return blake3_keyed(DATA_KEY, data)


def _last_word(raw: bytes) -> int:
    return int.from_bytes(raw[24:32], "little")


def _node(group: Sequence[tuple[bytes, int]]) -> tuple[bytes, int]:
    text = "".join(f"{display_hex(h)} : {size}\n" for h, size in group)
    return blake3_keyed(INTERNAL_NODE_KEY, text.encode("ascii")), sum(s for _, s in group)


def aggregate(entries: Iterable[tuple[bytes, int]]) -> bytes:
    """Merkle aggregation of (stored hash, uncompressed size) pairs (xet-core's merkle root).

    An empty list gives 32 zero bytes; a single entry is returned unchanged. Otherwise each pass
    cuts the list into groups of 3 to 9 nodes (a group ends at the first node from the third
    whose last u64 word is divisible by 4; at most 9; a tail of 1 or 2 is a group too) and
    replaces each group by one node, until one node remains.
    """
    level = [(bytes(h), int(s)) for h, s in entries]
    if not level:
        return ZERO_HASH
    while len(level) > 1:
        nxt: list[tuple[bytes, int]] = []
        i = 0
        n = len(level)
        while i < n:
            rest = n - i
            if rest <= 2:
                cut = rest
            else:
                end = min(_MAX_GROUP, rest)
                cut = end
                for j in range(2, end):
                    if _last_word(level[i + j][0]) % MEAN_BRANCHING_FACTOR == 0:
                        cut = j + 1
                        break
            nxt.append(_node(level[i : i + cut]))
            i += cut
        level = nxt
    return level[0][0]


def xorb_hash(chunks: Iterable[tuple[bytes, int]]) -> bytes:
    """A xorb's hash from its (chunk hash, size) pairs."""
    return aggregate(chunks)


def file_hash(chunks: Iterable[tuple[bytes, int]]) -> bytes:
    """A file's hash from its (chunk hash, size) pairs in file order; zero for an empty file."""
    entries = list(chunks)
    if not entries:
        return ZERO_HASH
    return blake3_keyed(FILE_HASH_SALT, aggregate(entries))


def verification_hash(chunk_hashes: Iterable[bytes]) -> bytes:
    """A term's verification (range) hash from the plain hashes of its chunks."""
    return blake3_keyed(VERIFICATION_KEY, b"".join(bytes(h) for h in chunk_hashes))


def keyed_chunk_hash(key: bytes, plain: bytes) -> bytes:
    """The global-dedup form of a chunk hash under a shard's HMAC key."""
    return blake3_keyed(bytes(key), bytes(plain))


def shard_hash(data: bytes | bytearray | memoryview) -> bytes:
    """A shard file's content hash; its display hex is the file's ``<hash>.mdb`` name."""
    return blake3_keyed(DATA_KEY, data)
