"""ZSS v1 compressed sorted sets (njsmith/zss, 2013): iteration, search through the index, fsck.

Modules: :mod:`.model` (constants, errors, value types), :mod:`.blocks` (body decoders),
:mod:`.reader` (:class:`ZssFile`), :mod:`.verify` (fsck).

Layout: ``schemas/zss.ksy`` (generated class :class:`Zss`; the unsigned LEB128 type is
``schemas/uleb128.ksy``); the full description is FORMAT.md of the corpus. This module
adds the meaning: codec dispatch (``zlib``, ``bz2``/``bzip2``, ``none+crc32c``) with a size cap,
CRC-32C checks, the index tree (an entry's key is the first record of its child's subtree),
search with exact multiset semantics, and :meth:`ZssFile.verify`.

Hot paths do not go through Kaitai objects: block framing is read with a small uleb128 decoder,
data-block bodies with :func:`decode_records` and index-block bodies with :func:`decode_index`,
tight loops over the decoded bytes (the tests check both against the generated
``Zss.DataBlockBody`` / ``Zss.IndexBlockBody``; a body they refuse is parsed again with the
generated class, which names the failing field).

Lookups (search, range iteration, membership) do not decode a whole data block into a list: a
block is kept as its body bytes, and the record wanted is found by walking the length fields
from the start of the body only as far as needed (for a prefix, ``bytes.find`` proposes where a
matching record may start and the walk checks it). A cached block that is used again gets an
array of its record positions, so later lookups in it are a bisection.

Positions: a block is named by its *voffset* (from the first byte after the header CRC); errors
and problems carry the absolute byte offset (``data_offset + voffset``) as well.
"""

from __future__ import annotations

# model's public names, re-exported (reader.py imports most of the same list for its own use);
# formats/zs/__init__.py exports the same names for ZS
from .blocks import decode_index, decode_records
from .model import (
    BODY_CRC32C_IMPL,
    CODECS,
    DEFAULT_MAX_BLOCK_SIZE,
    INCOMPLETE_MAGIC,
    MAGIC,
    BlockChecksumError,
    BlockInfo,
    CorruptBlockError,
    IncompleteFileError,
    IndexBlock,
    ZssHeader,
    prefix_successor,
)
from .reader import ZssFile

__all__ = [
    "BODY_CRC32C_IMPL",
    "CODECS",
    "DEFAULT_MAX_BLOCK_SIZE",
    "INCOMPLETE_MAGIC",
    "MAGIC",
    "BlockChecksumError",
    "BlockInfo",
    "CorruptBlockError",
    "IncompleteFileError",
    "IndexBlock",
    "ZssFile",
    "ZssHeader",
    "decode_index",
    "decode_records",
    "prefix_successor",
]
