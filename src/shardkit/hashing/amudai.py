"""The Amudai 32-bit checksum and the schema's name-lookup hash (FORMAT_NOTES.md, conventions).

``checksum(x)``: ``h = XXH3_64(x)`` (no seed), folded to 32 bits as
``(h >> 32) ^ (h & 0xFFFFFFFF)``.
Known answers: ``checksum(b"") == 0x15D514C7``, ``checksum(b"testdata") == 0x59981402``,
``checksum(b"amud") == 0xD647C322``.
"""

from __future__ import annotations

import xxhash

__all__ = ["checksum", "lookup_bucket_count", "name_hash"]

_MASK32 = 0xFFFF_FFFF


def checksum(data: bytes | bytearray | memoryview) -> int:
    """The Amudai checksum of ``data``: XXH3-64 folded to 32 bits.

    Example::

        >>> hex(checksum(b"amud"))
        '0xd647c322'
    """
    h = xxhash.xxh3_64_intdigest(data)
    return (h >> 32) ^ (h & _MASK32)


def name_hash(name: str | bytes) -> int:
    """XXH3-64 of a field name's UTF-8 bytes (the schema HashLookup key)."""
    return xxhash.xxh3_64_intdigest(name.encode("utf-8") if isinstance(name, str) else name)


def lookup_bucket_count(count: int) -> int:
    """Buckets of a HashLookup over ``count`` names: next power of two of ``max(count, 4) // 2``."""
    n = max(count, 4) // 2
    return 1 << (n - 1).bit_length()
