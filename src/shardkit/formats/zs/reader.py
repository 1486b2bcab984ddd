"""The ZS reader: header, block framing and checks, block cache, summary and layout.

Iteration and search are :class:`~shardkit.formats._sorted_set.SortedSetQueries`, shared with
ZSS; this module supplies what differs: the framing (``uleb128 L | level | payload | CRC``),
the CRC-64-xz check of every block read, the codecs, and index entries that carry their child's
exact length (so each block on a lookup's path is one read of exactly its bytes).
"""

from __future__ import annotations

import lzma
import types
import zlib
from collections.abc import Iterator
from typing import Any

from ..._kaitai import kaitai_errors, parse
from ...errors import (
    ChecksumError,
    LayoutError,
    LimitExceededError,
    TruncatedError,
    UnsupportedVersionError,
)
from ...generated.zs import Zs
from ...hashing.crc64xz import crc64xz
from ...sources import ByteSource, as_stream
from .._sorted_set import (
    ScanReleaser,
    SortedSetQueries,
    _BodyError,
    _DataBlock,
    _escape,
    _uleb_slow,
    decode_records,
    header_metadata,
    inflate_capped,
)
from ..base import Reader, Section
from .model import (
    _FRAME_PEEK,
    CODECS,
    CRC_LENGTH,
    DEFAULT_MAX_BLOCK_SIZE,
    HEADER_AT,
    INCOMPLETE_MAGIC,
    BlockChecksumError,
    BlockInfo,
    CorruptBlockError,
    IncompleteFileError,
    IndexBlock,
    ZsHeader,
    decode_index,
)
from .verify import ZsVerify

_deflate: types.ModuleType
try:  # zlib-ng: raw deflate at about twice zlib's speed (the same API and checks)
    from zlib_ng import zlib_ng as _deflate
except ImportError:  # pragma: no cover - zlib-ng is a dependency; zlib stays the fallback
    _deflate = zlib

#: What a damaged codec stream raises.
_DECODE_ERRORS: tuple[type[BaseException], ...] = (
    zlib.error, _deflate.error, lzma.LZMAError, OSError, ValueError, EOFError, MemoryError)

_LZMA_FILTERS = [{"id": lzma.FILTER_LZMA2, "dict_size": 1 << 20}]
#: Most bytes read at once for a block whose end is only bounded by a hint.
_MAX_HINTED_READ = 8 << 20


def _inflate(codec: str, payload: bytes, cap: int) -> tuple[bytes | None, bool, bytes]:
    """Decompress a payload (raw deflate or raw LZMA2), capped (see :func:`inflate_capped`)."""
    if codec == "deflate":
        return inflate_capped(_deflate.decompressobj(-15), payload, cap)
    return inflate_capped(lzma.LZMADecompressor(format=lzma.FORMAT_RAW, filters=_LZMA_FILTERS),
                          payload, cap)


def _empty(info: BlockInfo, kind: str, items: str) -> CorruptBlockError:
    """A block without records or entries (the spec wants at least one in each)."""
    return CorruptBlockError(f"{kind} block at offset {info.offset} has no {items}",
                             block_offset=info.offset, offset=info.payload_offset,
                             field=f"/blocks/@{info.offset}/body/payload")


class ZsFile(ZsVerify, SortedSetQueries, Reader):
    """A ZS file (``zs`` 0.10): a sorted multiset of byte strings in checksummed blocks.

    Opening reads and checks the header (magic, CRC-64-xz, codec, metadata, the file length).
    ``iter(z)`` streams every record in order in constant memory; ``z.search(prefix=...)`` and
    ``z.iter(start=..., stop=...)`` descend the index tree and read only the blocks on their
    path, each in one read of exactly its bytes (index entries carry their child's length).
    Every block read has its CRC-64-xz checked. Extension blocks (level 64 and above) are
    skipped. Decoded blocks are kept in two small LRU caches; one reader may be shared by
    threads.

    Args:
        source: Where the bytes come from.
        cache_blocks: Decoded data blocks kept for lookups (0: none).
        max_block_size: Largest decoded payload accepted (a decompression-bomb guard).
        readahead: Blocks decompressed ahead in worker threads during a full scan (0: none).
        cache_index_blocks: Decoded index blocks kept (the reference keeps 32).

    Example::

        with shardkit.open("google-books-eng-us-all-20120701-2gram.zs") as z:
            for record in z.search(prefix=b"hello\\t"):
                print(record)
    """

    format_id = "zs"
    format_name = "ZS compressed sorted records"

    def __init__(self, source: ByteSource, *, cache_blocks: int = 64,
                 max_block_size: int = DEFAULT_MAX_BLOCK_SIZE, readahead: int = 2,
                 cache_index_blocks: int = 32) -> None:
        super().__init__(source)
        self._set_up(cache_blocks, max_block_size, readahead, cache_index_blocks)
        self._refuse_unfinished(INCOMPLETE_MAGIC, IncompleteFileError,
                                "unfinished ZS file: magic is 'ZStoBe', its writer never "
                                "finished it (ZS writers put the real magic 'ZSfiLe' last)")
        ks = parse(Zs, as_stream(source, buffer_size=8192), magic_fields=("/magic",))
        h = ks.header
        n = ks.len_header
        with kaitai_errors():
            crc_input = ks.header_crc64xz_input
        computed = crc64xz(crc_input)
        if computed != ks.header_crc64xz:
            raise ChecksumError("header", ks.header_crc64xz, computed, offset=16 + n,
                                field="/header_crc64xz")
        if h.codec not in CODECS:
            raise UnsupportedVersionError(
                f"unknown ZS codec {h.codec!r} (known: {', '.join(CODECS)})",
                offset=HEADER_AT["codec"], field="/header/codec")
        metadata = header_metadata(h.metadata, HEADER_AT["metadata"])
        if h.len_file != source.size:
            cls = TruncatedError if h.len_file > source.size else LayoutError
            raise cls(f"{source.name}: the file is {source.size} bytes, but its header says "
                      f"{h.len_file}" + (" (truncated)" if h.len_file > source.size else ""),
                      offset=HEADER_AT["len_file"], field="/header/len_file")
        self.header = ZsHeader(n, h.ofs_root_index, h.len_root_index, h.len_file, h.sha256,
                               h.codec, h.metadata, h.extensions, ks.header_crc64xz)
        self.blocks_offset = self._first_block = self.header.blocks_offset
        if not self.blocks_offset <= h.ofs_root_index < source.size:
            raise LayoutError(f"root index offset {h.ofs_root_index} is outside the blocks "
                              f"({self.blocks_offset}..{source.size})",
                              offset=HEADER_AT["root"], field="/header/ofs_root_index")
        self.data_size = source.size  # positions are absolute
        self.metadata: dict[str, Any] = metadata
        self.codec: str = h.codec
        self.data_sha256: bytes = h.sha256
        self.root: int = h.ofs_root_index
        self.root_length: int = h.len_root_index
        self._codec = CODECS[h.codec]
        self._serial_decode = self._codec == "none"

    # -- blocks --------------------------------------------------------------------------------

    def _where(self, offset: int) -> str:
        return f"offset {offset}"

    def _root_end(self) -> int:
        return self.root + self.root_length

    def _child_end(self, block: IndexBlock, i: int, offset: int) -> int:
        return block.children[i] + block.lengths[i]

    def _frame_from(self, offset: int, head: bytes) -> BlockInfo:
        """The framing of the block at ``offset`` from its first bytes ``head``."""
        field = f"/blocks/@{offset}"
        if not head:
            raise TruncatedError(f"no block at offset {offset}: end of file", needed=1,
                                 available=0, offset=offset, field=field)
        try:
            length, pos = _uleb_slow(head, 0, len(head))
        except _BodyError as exc:
            if "past the end" in str(exc):
                raise TruncatedError(f"block at offset {offset}: length cut off by the end of "
                                     "the file", offset=offset, field=field + "/len_body"
                                     ) from None
            raise LayoutError(f"block at offset {offset}: {exc}", offset=offset,
                              field=field + "/len_body") from None
        if length == 0:
            raise LayoutError(f"block at offset {offset}: length 0 leaves no room for the level "
                              "byte", offset=offset, field=field + "/len_body")
        if pos >= len(head):
            raise TruncatedError(f"block at offset {offset}: level byte cut off by the end of "
                                 "the file", offset=offset + pos, field=field + "/body/level")
        info = BlockInfo(offset, head[pos], pos, length)
        end = info.end_voffset
        if end > self.source.size:
            raise TruncatedError(
                f"block at offset {offset}: {info.size} bytes run past the end of the file by "
                f"{end - self.source.size} bytes", needed=info.size,
                available=self.source.size - offset, offset=offset, field=field)
        return info

    def frame(self, offset: int) -> BlockInfo:
        """The framing of the block at ``offset`` (reads at most 10 bytes)."""
        if not self.blocks_offset <= offset < self.source.size:
            raise LayoutError(f"offset {offset} is outside the blocks "
                              f"({self.blocks_offset}..{self.source.size})", offset=offset,
                              field=f"/blocks/@{offset}")
        head = self.source.read_range(offset, min(offset + _FRAME_PEEK, self.source.size))
        return self._frame_from(offset, head)

    def _raw(self, info: BlockInfo) -> bytes:
        """The level byte, payload and CRC of a block (what :meth:`decode_payload` takes)."""
        start = info.offset + info.len_length
        return self.source.read_range(start, start + info.len_body + CRC_LENGTH)

    def _frames(self, offset: int | None = None, data_only: bool = False
                ) -> Iterator[tuple[BlockInfo, bytes]]:
        """(framing, level + payload + CRC) of every block from ``offset`` to the end.

        Each read fetches a block together with the next block's framing. With ``data_only``,
        index and extension blocks are skipped without reading them. The mapped pages behind
        the scan are given back as it goes (bounded memory on files of any size).
        """
        size = self.source.size
        offset = self.blocks_offset if offset is None else offset
        head = self.source.read_range(offset, min(offset + _FRAME_PEEK, size))
        released = ScanReleaser(self.source, offset)
        while offset < size:
            released.passed(offset)
            info = self._frame_from(offset, head)
            end = info.end_voffset
            if data_only and info.level:
                head = self.source.read_range(end, min(end + _FRAME_PEEK, size))
                offset = end
                continue
            start = offset + info.len_length
            chunk = self.source.read_range(start, min(end + _FRAME_PEEK, size))
            k = end - start
            yield info, chunk[:k]
            head = chunk[k:]
            offset = end

    def check_crc(self, info: BlockInfo, raw: bytes) -> None:
        """Raise :class:`BlockChecksumError` when the block's CRC-64-xz does not match."""
        n = info.len_body
        stored = int.from_bytes(raw[n:n + CRC_LENGTH], "little")
        computed = crc64xz(raw, length=n)
        if stored != computed:
            raise BlockChecksumError(info.offset, stored, computed, offset=info.crc_offset,
                                     field=f"/blocks/@{info.offset}/crc64xz")

    def decode_payload(self, info: BlockInfo, raw: bytes) -> bytes:
        """The decoded payload of a block, after checking its CRC-64-xz.

        Raises:
            BlockChecksumError: The CRC does not match.
            CorruptBlockError: The codec stream is damaged.
            LimitExceededError: The payload would exceed ``max_block_size``.
        """
        self.check_crc(info, raw)
        v = info.offset
        field = f"/blocks/@{v}/body/payload"
        cap = self.max_block_size
        payload = raw[1:info.len_body]
        if self._codec == "none":
            if len(payload) > cap:
                raise LimitExceededError(f"block at offset {v}: payload of {len(payload)} "
                                         f"bytes exceeds the {cap}-byte cap",
                                         offset=info.payload_offset, field=field)
            return payload
        return self._inflate_checked(
            info, v, payload, field, _inflate, _DECODE_ERRORS,
            lambda message, at: CorruptBlockError(message, block_offset=v, offset=at,
                                                  field=field))

    def _body_error(self, info: BlockInfo, exc: _BodyError, what: str) -> CorruptBlockError:
        offset = info.payload_offset + exc.pos if self._codec == "none" else \
            info.payload_offset
        return CorruptBlockError(f"{what} block at offset {info.offset}: {exc} (payload byte "
                                 f"{exc.pos})", block_offset=info.offset, offset=offset,
                                 field=f"/blocks/@{info.offset}/body/payload")

    def records_of(self, info: BlockInfo, body: bytes) -> list[bytes]:
        """The records of a decoded data payload (at least one, as the spec requires)."""
        try:
            records = decode_records(body)
        except _BodyError as exc:
            raise self._body_error(info, exc, "data") from None
        if not records:
            raise _empty(info, "data", "records")
        return records

    def index_of(self, info: BlockInfo, body: bytes) -> IndexBlock:
        """The entries of a decoded index payload (at least one, as the spec requires)."""
        try:
            keys, children, lengths = decode_index(body)
        except _BodyError as exc:
            raise self._body_error(info, exc, "index") from None
        if not keys:
            raise _empty(info, "index", "entries")
        return IndexBlock(info.offset, info.level, tuple(keys), tuple(children), tuple(lengths))

    def _read_block(self, offset: int, end_hint: int | None) -> tuple[BlockInfo, bytes]:
        """Framing and raw bytes of the block at ``offset``, in one read up to ``end_hint``
        (its end as its parent or the header gives it, which must be exact)."""
        if not self.blocks_offset <= offset < self.source.size:
            raise LayoutError(f"offset {offset} is outside the blocks "
                              f"({self.blocks_offset}..{self.source.size})", offset=offset,
                              field=f"/blocks/@{offset}")
        size = self.source.size
        stop = size if end_hint is None or end_hint <= offset else min(end_hint, size)
        stop = min(stop, offset + _MAX_HINTED_READ)
        chunk = self.source.read_range(offset, max(stop, min(offset + _FRAME_PEEK, size)))
        info = self._frame_from(offset, chunk[:_FRAME_PEEK])
        if end_hint is not None and end_hint > offset and info.size != end_hint - offset:
            raise LayoutError(f"block at offset {offset} is {info.size} bytes, its parent (or "
                              f"the header) says {end_hint - offset}", offset=offset,
                              field=f"/blocks/@{offset}")
        if info.size <= len(chunk):
            return info, chunk[info.len_length:info.size]
        return info, self._raw(info)

    def _check_read(self, info: BlockInfo, level: int | None, offset: int) -> None:
        """The root is an index block; an extension block is no part of the tree."""
        if info.level == 0 and level is None and offset == self.root:
            raise LayoutError(f"the root at offset {offset} is a data block (it must be an "
                              "index block)", offset=offset, field="/header/ofs_root_index")
        if info.is_extension:
            self._level_error(info, level if level is not None else 1)

    def _data_block(self, info: BlockInfo, body: bytes) -> _DataBlock:
        """A data block holds at least one record (the spec)."""
        if not body:
            raise _empty(info, "data", "records")
        return _DataBlock(info, body)

    def _level_error(self, info: BlockInfo, level: int) -> None:
        raise LayoutError(f"block at offset {info.offset} has level {info.level}, its parent "
                          f"expects {level}", offset=info.offset,
                          field=f"/blocks/@{info.offset}/body/level")

    def index_block(self, offset: int) -> IndexBlock:
        """The decoded index block at ``offset``."""
        info, value = self._cached(offset)
        if info.level == 0:
            raise LayoutError(f"block at offset {offset} is a data block, not an index block",
                              offset=offset, field=f"/blocks/@{offset}/body/level")
        block: IndexBlock = value
        return block

    @property
    def root_level(self) -> int:
        """Level of the root index (a lookup reads this many blocks below the root)."""
        return self.frame(self.root).level

    def iter_blocks(self, offset: int | None = None) -> Iterator[tuple[BlockInfo, bytes]]:
        """(framing, decoded payload) of every block from ``offset`` on, in file order.

        Extension blocks are given with their raw payload (CRC checked, not decoded).
        """
        for info, raw in self._frames(offset):
            if info.is_extension:
                self.check_crc(info, raw)
                yield info, raw[1:info.len_body]
            else:
                yield info, self.decode_payload(info, raw)

    # -- structure -----------------------------------------------------------------------------

    def _survey(self) -> Iterator[dict[str, Any]]:
        """One row per block in file order: framing, payload size, items, first item."""
        for info, body in self.iter_blocks():
            first: bytes | None = None
            n = 0
            if info.level == 0:
                items = self.records_of(info, body)
                first, n = items[0], len(items)
            elif not info.is_extension:
                ib = self.index_of(info, body)
                first, n = ib.keys[0], len(ib.keys)
            yield {"offset": info.offset, "level": info.level, "size": info.size,
                   "len_payload": info.len_payload, "len_decoded": len(body), "items": n,
                   "first": first}

    def summary(self, counts: bool = False) -> dict[str, Any]:
        """What ``shardkit info`` shows: header fields, codec, metadata, the root's level.

        That costs the header and the root's framing. ``counts=True`` also decodes every block
        once (a full read) to add block and record counts.
        """
        root_level = self.root_level
        out = self._summary_head()
        out.update({
            "data_sha256": self.data_sha256.hex(),
            "metadata": self.metadata,
            "header": self.header.to_dict(),
            "root_index_offset": self.root,
            "root_index_length": self.root_length,
            "root_level": root_level,
            "levels": root_level + 1,
        })
        if not counts:
            return out
        per_level: dict[int, int] = {}
        records = decoded = 0
        for r in self._survey():
            per_level[r["level"]] = per_level.get(r["level"], 0) + 1
            if r["level"] == 0:
                records += r["items"]
                decoded += r["len_decoded"]
        self._len = records
        total = sum(per_level.values())
        ext = sum(v for k, v in per_level.items() if k >= 64)
        out.update({
            "blocks": total,
            "data_blocks": per_level.get(0, 0),
            "index_blocks": total - per_level.get(0, 0) - ext,
            "extension_blocks": ext,
            "blocks_per_level": {str(k): v for k, v in sorted(per_level.items())},
            "record_count": records,
            "record_bytes_decoded": decoded,
        })
        return out

    def sections(self) -> list[Section]:
        """Byte layout: magic, header, CRC, then every block (level, sizes, first key)."""
        n = self.header.header_length
        out = [
            Section("/magic", 0, 8, "ZS (format 0.10)"),
            Section("/len_header", 8, 16, f"u64le = {n}"),
            Section("/header", 16, 16 + n, f"root at {self.root} ({self.root_length} bytes), "
                    f"codec {self.codec}, {len(self.header.metadata_json)} bytes of metadata"
                    + (f", {len(self.header.extensions)} bytes of extensions"
                       if self.header.extensions else "")),
            Section("/header_crc64xz", 16 + n, 24 + n,
                    f"CRC-64-xz {self.header.header_crc64xz:016x}"),
        ]
        for r in self._survey():
            level = r["level"]
            kind = "data" if level == 0 else "index" if level < 64 else "extension"
            first = None if r["first"] is None else _escape(r["first"][:64])
            root = ", root" if r["offset"] == self.root else ""
            what = {"data": "records", "index": "entries", "extension": "items"}[kind]
            out.append(Section(
                f"/blocks/@{r['offset']}", r["offset"], r["offset"] + r["size"],
                f"level {level} {kind}{root}, payload {r['len_payload']} -> "
                f"{r['len_decoded']} bytes, {r['items']} {what}, first "
                + ("none" if first is None else f'"{first}"'),
                extra={"level": level, "kind": kind, "is_root": r["offset"] == self.root,
                       "len_payload": r["len_payload"], "len_decoded": r["len_decoded"],
                       "items": r["items"],
                       "first_key": None if r["first"] is None else r["first"].hex()}))
        return out

    def _block_detail(self, info: BlockInfo, body: bytes) -> dict[str, Any]:
        """A block of ``to_dict()``: its records, index entries or extension payload."""
        row: dict[str, Any] = {"offset": info.offset, "level": info.level,
                               "len_payload": info.len_payload, "len_decoded": len(body)}
        if info.level == 0:
            row["records"] = [r.hex() for r in self.records_of(info, body)]
        elif not info.is_extension:
            ib = self.index_of(info, body)
            row["entries"] = [{"key": k.hex(), "offset": c, "length": ln}
                              for k, c, ln in zip(ib.keys, ib.children, ib.lengths,
                                                  strict=True)]
        else:
            row["payload"] = body.hex()
        return row
