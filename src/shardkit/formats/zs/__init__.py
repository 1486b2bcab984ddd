"""ZS files (``zs`` 0.10, njsmith/zs): iteration, search through the index, verification.

ZS is the released successor of ZSS: a sorted multiset of byte strings ("records") in
compressed, CRC-64-xz-checked blocks with an index tree, used to distribute large record sets
(the Google Books N-gram corpora were repacked as ``.zs``). The reference's ``doc/format.rst``
is the specification; ``schemas/zs.ksy`` (generated class ``Zs``) describes the bytes.

Modules: :mod:`.model` (constants, errors, value types, the index payload decoder),
:mod:`.reader` (:class:`ZsFile`), :mod:`.verify` (``zs validate``'s checks). Data payloads,
the cached data block and the search methods are shared with ZSS
(:mod:`shardkit.formats._sorted_set`).

Positions are absolute byte offsets; a block is named by the offset of its length field.
"""

from __future__ import annotations

# model's public names, re-exported (reader.py imports most of the same list for its own use);
# formats/zss/__init__.py exports the same names for ZSS, whose model names its types alike
from .model import (
    CODEC_SHORTHANDS,
    CODECS,
    DEFAULT_MAX_BLOCK_SIZE,
    FIRST_EXTENSION_LEVEL,
    INCOMPLETE_MAGIC,
    MAGIC,
    BlockChecksumError,
    BlockInfo,
    CorruptBlockError,
    IncompleteFileError,
    IndexBlock,
    ZsHeader,
    decode_index,
)
from .reader import ZsFile

__all__ = [
    "CODECS",
    "CODEC_SHORTHANDS",
    "DEFAULT_MAX_BLOCK_SIZE",
    "FIRST_EXTENSION_LEVEL",
    "INCOMPLETE_MAGIC",
    "MAGIC",
    "BlockChecksumError",
    "BlockInfo",
    "CorruptBlockError",
    "IncompleteFileError",
    "IndexBlock",
    "ZsFile",
    "ZsHeader",
    "decode_index",
]
