"""ZS constants, errors and value types (header, block framing, index blocks)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...errors import ChecksumError, CorruptShardError, FormatError
from .._sorted_set import MAX_ULEB_BYTES, _index_key, _uleb_slow

MAGIC = b"\xabZSfiLe\x01"
INCOMPLETE_MAGIC = b"\xabZStoBe\x01"
#: Header codec name -> what decodes it (``lzma`` is ``zs make``'s short name for the LZMA2 one).
CODECS = {"none": "none", "deflate": "deflate", "lzma2;dsize=2^20": "lzma"}
#: Codec names ``zs make --codec`` and :func:`shardkit.writers.zs.write_zs` take.
CODEC_SHORTHANDS = {"none": "none", "deflate": "deflate", "lzma": "lzma2;dsize=2^20"}
#: Levels from this one on are extension blocks, which readers skip.
FIRST_EXTENSION_LEVEL = 64
#: Byte offsets of the header fields (the header starts at 16, after the magic and its length).
HEADER_AT = {"root": 16, "len_root": 24, "len_file": 32, "sha256": 40, "codec": 72,
             "len_metadata": 88, "metadata": 96}
HEADER_FIXED = 80  # root offset and length, file length, sha256, codec, metadata length
CRC_LENGTH = 8
#: Decoded payload cap (a decompression-bomb guard; the reference writes 384 KiB blocks).
DEFAULT_MAX_BLOCK_SIZE = 1 << 28  # 256 MiB
_FRAME_PEEK = MAX_ULEB_BYTES + 1  # the length and the level byte


class IncompleteFileError(FormatError):
    """The file starts with the "ZStoBe" magic: its writer never finished it."""


class CorruptBlockError(CorruptShardError):
    """A block's framing, payload or body cannot be decoded.

    Attributes:
        block_offset: Absolute offset of the block (its length field).
    """

    block_offset: int

    def __init__(self, message: str, *, block_offset: int | None = None,
                 offset: int | None = None, field: str | None = None) -> None:
        if block_offset is not None:
            self.block_offset = block_offset
        super().__init__(message, offset=offset, field=field)


class BlockChecksumError(ChecksumError, CorruptBlockError):
    """The CRC-64-xz of a block does not match its bytes."""

    def __init__(self, block_offset: int, stored: int, computed: int, *,
                 offset: int | None = None, field: str | None = None) -> None:
        self.block_offset = block_offset
        ChecksumError.__init__(self, f"block at offset {block_offset}", stored, computed,
                               offset=offset, field=field)


@dataclass(frozen=True)
class ZsHeader:
    """The file header (format.rst, "Header").

    Attributes:
        header_length: N, the length of the header proper.
        root_offset: Absolute offset of the root index block.
        root_length: Bytes of the root index block (its length field and CRC included).
        file_length: The file's size as the header states it.
        sha256: SHA-256 of the decoded data block payloads, concatenated.
        codec: Codec name as stored (``none``, ``deflate`` or ``lzma2;dsize=2^20``).
        metadata_json: The metadata JSON text.
        extensions: Header bytes after the metadata (ignored).
        header_crc64xz: The stored CRC-64-xz of the header bytes.
    """

    header_length: int
    root_offset: int
    root_length: int
    file_length: int
    sha256: bytes
    codec: str
    metadata_json: str
    extensions: bytes
    header_crc64xz: int

    @property
    def blocks_offset(self) -> int:
        """Absolute offset of the first block."""
        return 24 + self.header_length

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON output (hashes as hex)."""
        return {"header_length": self.header_length, "root_index_offset": self.root_offset,
                "root_index_length": self.root_length, "total_file_length": self.file_length,
                "data_sha256": self.sha256.hex(), "codec": self.codec,
                "metadata_json": self.metadata_json, "extensions": self.extensions.hex(),
                "header_crc64xz": f"{self.header_crc64xz:016x}"}


@dataclass(frozen=True)
class BlockInfo:
    """A block's framing: ``uleb128 L | level | payload (L - 1 bytes) | CRC-64-xz``.

    Attributes:
        offset: Absolute offset of the block (its length field).
        level: 0 data, 1..63 index, 64 and above extension.
        len_length: Bytes of the length field.
        len_body: L, the bytes of the level byte and the payload (what the CRC covers).
    """

    offset: int
    level: int
    len_length: int
    len_body: int

    @property
    def voffset(self) -> int:
        """The block's position (ZS positions are absolute: the same as :attr:`offset`)."""
        return self.offset

    @property
    def payload_offset(self) -> int:
        """Absolute offset of the payload (after the level byte)."""
        return self.offset + self.len_length + 1

    @property
    def len_payload(self) -> int:
        """Bytes of the encoded payload."""
        return self.len_body - 1

    @property
    def crc_offset(self) -> int:
        """Absolute offset of the CRC-64-xz."""
        return self.offset + self.len_length + self.len_body

    @property
    def size(self) -> int:
        """Total bytes of the block, length field and CRC included."""
        return self.len_length + self.len_body + CRC_LENGTH

    @property
    def end_voffset(self) -> int:
        """Absolute offset of the next block."""
        return self.offset + self.size

    @property
    def is_extension(self) -> bool:
        """A level-64-or-above block, skipped by readers."""
        return self.level >= FIRST_EXTENSION_LEVEL


@dataclass(frozen=True)
class IndexBlock:
    """A decoded index block: entry ``i`` points to the block at ``children[i]`` of
    ``lengths[i]`` bytes, whose records are all >= ``keys[i]`` (and every record before them
    is <= ``keys[i]``)."""

    offset: int
    level: int
    keys: tuple[bytes, ...]
    children: tuple[int, ...]
    lengths: tuple[int, ...]


def decode_index(body: bytes) -> tuple[list[bytes], list[int], list[int]]:
    """The entries of a decoded ZS index payload: ``(keys, offsets, lengths)``.

    Each entry is ``uleb128 key length | key | uleb128 offset | uleb128 length``.

    Raises:
        _BodyError: A uleb128 is malformed or an entry runs past the end (internal).
    """
    # alike in shape to zss/blocks.py decode_index: each spec's entry after the shared key
    keys: list[bytes] = []
    offsets: list[int] = []
    lengths: list[int] = []
    pos = 0
    n = len(body)
    while pos < n:
        key, end = _index_key(body, pos, n, "payload")
        keys.append(key)
        off, pos = _uleb_slow(body, end, n)
        length, pos = _uleb_slow(body, pos, n)
        offsets.append(off)
        lengths.append(length)
    return keys, offsets, lengths
