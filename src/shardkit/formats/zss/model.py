"""ZSS constants, errors and value types (header, block framing, index blocks)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...errors import (
    ChecksumError,
    CorruptShardError,
    FormatError,
)
from ...hashing.crc32c import IMPLEMENTATION as CRC32C_IMPLEMENTATION
from ...hashing.crc32c import crc32c
from .._sorted_set import _POS_TYPE as _POS_TYPE  # shared with ZS; re-exported
from .._sorted_set import MAX_ULEB_BYTES as MAX_ULEB_BYTES
from .._sorted_set import _BodyError as _BodyError
from .._sorted_set import _escape as _escape
from .._sorted_set import _record as _record
from .._sorted_set import prefix_successor as prefix_successor

MAGIC = b"ZSS\x1c\x8el\x00\x01"
INCOMPLETE_MAGIC = b"SSZ\x1c\x8el\x00\x01"
#: Header codec name -> codec used to decode (``bzip2`` is the spec text's name for ``bz2``).
CODECS = {"zlib": "zlib", "bz2": "bz2", "bzip2": "bz2", "none+crc32c": "none+crc32c"}
HEADER_FIXED = 44  # root voffset, uuid, codec, metadata length
#: Decoded body cap (a decompression-bomb guard; the reference writes 256 KiB blocks).
DEFAULT_MAX_BLOCK_SIZE = 1 << 28  # 256 MiB
_FRAME_PEEK = 1 + MAX_ULEB_BYTES
_MISSING: Any = object()


_body_crc32c = crc32c
#: Which CRC-32C implementation checks ``none+crc32c`` block bodies ("crcmod" or "google-crc32c").
BODY_CRC32C_IMPL = CRC32C_IMPLEMENTATION


class IncompleteFileError(FormatError):
    """The file starts with the "SSZ" magic: its writer never finished it."""


class CorruptBlockError(CorruptShardError):
    """A block's payload or body cannot be decoded.

    Attributes:
        voffset: voffset of the block (its level byte).
    """

    voffset: int

    def __init__(self, message: str, *, voffset: int | None = None, offset: int | None = None,
                 field: str | None = None) -> None:
        if voffset is not None:
            self.voffset = voffset
        super().__init__(message, offset=offset, field=field)


# alike in shape to zs/model.py BlockChecksumError: a ZSS block is named by its voffset
# (FORMAT.md), a ZS block by its absolute offset (format.rst), and each keeps that name
class BlockChecksumError(ChecksumError, CorruptBlockError):
    """The CRC-32C of a ``none+crc32c`` block body does not match."""

    def __init__(self, voffset: int, stored: int, computed: int, *, offset: int | None = None,
                 field: str | None = None) -> None:
        self.voffset = voffset
        ChecksumError.__init__(self, f"block at voffset {voffset}", stored, computed,
                               offset=offset, field=field)



# -- value types -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ZssHeader:
    """The file header (FORMAT.md section 2).

    Attributes:
        header_length: N, the length of the header proper.
        data_offset: Absolute offset of voffset 0 (16 + N).
        root_voffset: voffset of the root index block.
        uuid: The 16-byte file id.
        codec: Codec name as stored (``zlib``, ``bz2``, ``bzip2`` or ``none+crc32c``).
        metadata_json: The metadata JSON text.
        header_crc32c: The stored CRC-32C of the header bytes.
    """

    header_length: int
    data_offset: int
    root_voffset: int
    uuid: bytes
    codec: str
    metadata_json: str
    header_crc32c: int

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON output (uuid as hex)."""
        return {"header_length": self.header_length, "data_offset": self.data_offset,
                "root_voffset": self.root_voffset, "uuid": self.uuid.hex(), "codec": self.codec,
                "metadata_json": self.metadata_json,
                "header_crc32c": f"{self.header_crc32c:08x}"}


@dataclass(frozen=True)
class BlockInfo:
    """A block's framing.

    Attributes:
        voffset: Position of the level byte, counted from the data offset.
        offset: The same position, absolute.
        level: 0 for a data block, L >= 1 for an index block.
        len_frame: Bytes of the level byte plus the length uleb128.
        len_payload: Bytes of the encoded payload.
    """

    voffset: int
    offset: int
    level: int
    len_frame: int
    len_payload: int

    @property
    def payload_offset(self) -> int:
        """Absolute offset of the payload."""
        return self.offset + self.len_frame

    @property
    def size(self) -> int:
        """Total bytes of the block."""
        return self.len_frame + self.len_payload

    @property
    def end_voffset(self) -> int:
        """voffset of the next block."""
        return self.voffset + self.size


@dataclass(frozen=True)
class IndexBlock:
    """A decoded index block: ``keys[i]`` is the first record under ``children[i]``."""

    voffset: int
    level: int
    keys: tuple[bytes, ...]
    children: tuple[int, ...]


