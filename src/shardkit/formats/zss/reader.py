"""The ZSS reader: header, block cache, iteration, search, summary and layout."""

from __future__ import annotations

import bz2
import zlib
from collections.abc import Iterator
from typing import Any, cast

# (much the same names as zs/reader.py imports: both readers raise the shared error classes and
# their models name their types alike; amudai/columns.py imports the same error classes)
from ..._kaitai import kaitai_errors, parse
from ...errors import (
    ChecksumError,
    LayoutError,
    LimitExceededError,
    ShardkitError,
    TruncatedError,
    UnsupportedVersionError,
)
from ...generated.zss import Zss
from ...hashing.crc32c import crc32c
from ...sources import ByteSource, as_stream
from .._sorted_set import ScanReleaser, SortedSetQueries, header_metadata, inflate_capped
from ..base import Reader, Section
from .blocks import _uleb_slow, decode_index, decode_records
from .model import (
    _FRAME_PEEK,
    CODECS,
    DEFAULT_MAX_BLOCK_SIZE,
    HEADER_FIXED,
    INCOMPLETE_MAGIC,
    BlockChecksumError,
    BlockInfo,
    CorruptBlockError,
    IncompleteFileError,
    IndexBlock,
    ZssHeader,
    _body_crc32c,
    _BodyError,
    _escape,
)
from .verify import ZssVerify


def _inflate(codec: str, payload: bytes, cap: int) -> tuple[bytes | None, bool, bytes]:
    """Decompress a block payload (zlib or bz2), capped (see :func:`inflate_capped`)."""
    d = zlib.decompressobj() if codec == "zlib" else bz2.BZ2Decompressor()
    return inflate_capped(d, payload, cap)


#: Most bytes read at once for a block whose end is only bounded by a hint (remote sources).
_MAX_HINTED_READ = 8 << 20

# -- the reader --------------------------------------------------------------------------------


class ZssFile(ZssVerify, SortedSetQueries, Reader):
    """A ZSS v1 file: a sorted multiset of byte strings, compressed in blocks, with an index.

    Opening reads and checks the header (magic, CRC-32C, codec, metadata). Records are read
    block by block: ``iter(z)`` streams every record in order in constant memory,
    ``z.search(prefix=...)`` / ``z.iter(start=..., stop=...)`` descend the index tree and read
    only the blocks on their path. Decoded index blocks and data blocks are kept in two small
    LRU caches; a cached data block used a second time gets an array of its record positions,
    so lookups in it are a bisection. One reader may be shared by threads (the caches are
    locked; a lookup, an iteration and ``verify`` may run at once).

    Args:
        source: Where the bytes come from.
        cache_blocks: Decoded data blocks kept in the LRU cache (lookups); 0 decodes the data
            block of every lookup afresh.
        max_block_size: Largest decoded block body accepted (a decompression-bomb guard).
        readahead: Blocks decompressed ahead in worker threads during a full scan (0: none).
        cache_index_blocks: Decoded index blocks kept in their own LRU cache (as the
            reference reader's ``index_block_cache``, 32 by default).

    Example::

        with shardkit.open("ngrams.zss") as z:
            for record in z.search(prefix=b"hello "):
                print(record)
    """

    # The docstring's options and the constructor mirror ZsFile's (zs/reader.py): one reader
    # API for both formats; what follows the shared set-up differs (a 4-byte header length,
    # CRC-32C, blocks named by voffset).
    format_id = "zss"
    format_name = "ZSS compressed sorted set"

    def __init__(self, source: ByteSource, *, cache_blocks: int = 64,
                 max_block_size: int = DEFAULT_MAX_BLOCK_SIZE, readahead: int = 2,
                 cache_index_blocks: int = 32) -> None:
        super().__init__(source)
        self._set_up(cache_blocks, max_block_size, readahead, cache_index_blocks)
        self._refuse_unfinished(INCOMPLETE_MAGIC, IncompleteFileError,
                                "incomplete file: magic is 'SSZ...', the writer never "
                                "finished it (ZSS writes the real magic last)")
        # the header checks follow ZsFile's: a 4-byte header length, CRC-32C (ZS: 8, CRC-64-xz)
        self._ks = parse(Zss, as_stream(source, buffer_size=4096), magic_fields=("/magic",))
        ks = self._ks
        h = ks.header
        n = ks.len_header
        with kaitai_errors():
            crc_input = ks.header_crc32c_input
        computed = crc32c(crc_input)
        if computed != ks.header_crc32c:
            raise ChecksumError("header", ks.header_crc32c, computed, offset=12 + n,
                                field="/header_crc32c")
        if h.codec not in CODECS:
            raise UnsupportedVersionError(
                f"unknown ZSS codec {h.codec!r} (known: {', '.join(CODECS)})", offset=12 + 24,
                field="/header/codec")
        metadata = header_metadata(h.metadata, 12 + HEADER_FIXED)
        self.data_offset = int(ks.ofs_data)  # 16 + header length (schemas/zss.ksy)
        self.header = ZssHeader(n, self.data_offset, h.root_voffset, h.uuid, h.codec,
                                h.metadata, ks.header_crc32c)
        self.data_size = source.size - self.data_offset
        if h.root_voffset >= self.data_size:
            raise LayoutError(f"truncated: root voffset {h.root_voffset} is past the end of the "
                              f"blocks ({self.data_size} bytes)", offset=12,
                              field="/header/root_voffset")
        self.metadata: dict[str, Any] = metadata
        self.codec: str = h.codec
        self.uuid: bytes = h.uuid
        self.root: int = h.root_voffset
        self._codec = CODECS[h.codec]
        self._serial_decode = self._codec == "none+crc32c"

    # -- blocks --------------------------------------------------------------------------------

    def _where(self, voffset: int) -> str:
        return f"voffset {voffset}, byte {self.data_offset + voffset}"

    def _child_end(self, block: IndexBlock, i: int, voffset: int) -> int:
        """Child ``i`` ends at the next child's voffset, or at its parent (children come first)."""
        return block.children[i + 1] if i + 1 < len(block.children) else voffset

    def _frame_from(self, voffset: int, head: bytes) -> BlockInfo:
        """Parse the framing of the block at ``voffset`` from its first bytes ``head``."""
        offset = self.data_offset + voffset
        if not head:
            raise TruncatedError(f"no block at {self._where(voffset)}: end of file",
                                 needed=1, available=0, offset=offset, field="/blocks")
        try:
            length, pos = _uleb_slow(head, 1, len(head))
        except _BodyError as exc:
            if "past the end" in str(exc):
                raise TruncatedError(f"block at {self._where(voffset)}: length cut off by the "
                                     "end of the file", offset=offset + 1,
                                     field=f"/blocks/@{voffset}/len_payload") from None
            raise LayoutError(f"block at {self._where(voffset)}: {exc}", offset=offset + 1,
                              field=f"/blocks/@{voffset}/len_payload") from None
        info = BlockInfo(voffset, offset, head[0], pos, length)
        end = info.payload_offset + length
        if end > self.source.size:
            raise TruncatedError(
                f"block at {self._where(voffset)}: payload of {length} bytes runs past the end "
                f"of the file by {end - self.source.size} bytes", needed=length,
                available=self.source.size - info.payload_offset, offset=info.payload_offset,
                field=f"/blocks/@{voffset}/payload")
        return info

    def frame(self, voffset: int) -> BlockInfo:
        """The framing of the block at ``voffset`` (reads at most 10 bytes)."""
        if not 0 <= voffset < self.data_size:
            raise LayoutError(f"voffset {voffset} is outside the blocks (0..{self.data_size})",
                              offset=None, field=f"/blocks/@{voffset}")
        offset = self.data_offset + voffset
        head = self.source.read_range(offset, min(offset + _FRAME_PEEK, self.source.size))
        return self._frame_from(voffset, head)

    def _over_cap(self, info: BlockInfo) -> bool:
        """A ``none+crc32c`` block whose body (the payload less its CRC-32C) is larger than
        ``max_block_size``: its framing says so, before any byte of the payload is read.
        (A compressed payload's length does not bound its body: those are capped while they
        are decompressed.)"""
        return self._codec == "none+crc32c" and info.len_payload - 4 > self.max_block_size

    def _cap_error(self, info: BlockInfo) -> LimitExceededError:
        v = info.voffset
        return LimitExceededError(f"block at {self._where(v)}: body of {info.len_payload - 4} "
                                  f"bytes exceeds the {self.max_block_size}-byte cap",
                                  offset=info.offset, field=f"/blocks/@{v}/payload")

    def _payload(self, info: BlockInfo) -> bytes:
        """The payload of a block, refused from its framing when over the cap."""
        if self._over_cap(info):
            raise self._cap_error(info)
        return self.source.read_range(info.payload_offset, info.payload_offset + info.len_payload)

    def _frames(self, voffset: int = 0, data_only: bool = False
                ) -> Iterator[tuple[BlockInfo, bytes]]:
        """(framing, payload) of every block from ``voffset`` to the end of the file.

        Each read fetches a payload together with the next block's framing: one request per
        block on remote sources. With ``data_only``, index blocks are skipped without reading
        their payloads. A ``none+crc32c`` payload over the cap is not read either: ``b""``
        stands in for it, and :meth:`decode_payload` refuses the block from its framing (so
        ``verify`` reports it and goes on to the next block). The mapped pages behind the scan
        are given back as it goes (bounded memory on files of any size).
        """
        size = self.source.size
        offset = self.data_offset + voffset
        head = self.source.read_range(offset, min(offset + _FRAME_PEEK, size))
        released = ScanReleaser(self.source, offset)
        while offset < size:
            released.passed(offset)
            info = self._frame_from(offset - self.data_offset, head)
            p0 = info.payload_offset
            p1 = p0 + info.len_payload
            skip = data_only and info.level
            if skip or self._over_cap(info):
                head = self.source.read_range(p1, min(p1 + _FRAME_PEEK, size))
                offset = p1
                if not skip:
                    yield info, b""  # not read: decode_payload raises the cap error
                continue
            chunk = self.source.read_range(p0, min(p1 + _FRAME_PEEK, size))
            yield info, chunk[: info.len_payload]
            head = chunk[info.len_payload :]
            offset = p1

    def decode_payload(self, info: BlockInfo, payload: bytes) -> bytes:
        """The decoded body of a block: decompressed (size-capped) or CRC-checked.

        Raises:
            CorruptBlockError: The codec stream is damaged (names the block's voffset).
            BlockChecksumError: A ``none+crc32c`` body does not match its CRC-32C.
            LimitExceededError: The body would exceed ``max_block_size``.
        """
        v = info.voffset
        field = f"/blocks/@{v}/payload"
        cap = self.max_block_size
        codec = self._codec
        if codec == "none+crc32c":
            if self._over_cap(info) or len(payload) - 4 > cap:  # refused before the CRC
                raise self._cap_error(info)
            if len(payload) < 4:
                raise CorruptBlockError(f"block at {self._where(v)}: payload of {len(payload)} "
                                        "bytes has no room for its CRC-32C", voffset=v,
                                        offset=info.payload_offset, field=field)
            n = len(payload) - 4
            stored = int.from_bytes(payload[n:], "little")
            computed = _body_crc32c(memoryview(payload)[:n])  # no copy for a bad body
            if stored != computed:
                raise BlockChecksumError(v, stored, computed, offset=info.payload_offset + n,
                                         field=field + "/body_crc32c")
            return payload[:n]
        return self._inflate_checked(
            info, v, payload, field, _inflate, (zlib.error, OSError, ValueError, EOFError,
                                                MemoryError),
            lambda message, at: CorruptBlockError(message, voffset=v, offset=at, field=field))

    def _body_error(self, info: BlockInfo, exc: _BodyError, what: str) -> CorruptBlockError:
        offset = info.payload_offset + exc.pos if self._codec == "none+crc32c" else \
            info.payload_offset
        return CorruptBlockError(f"{what} block at {self._where(info.voffset)}: {exc} (body "
                                 f"byte {exc.pos})", voffset=info.voffset, offset=offset,
                                 field=f"/blocks/@{info.voffset}/payload/body")

    def records_of(self, info: BlockInfo, body: bytes) -> list[bytes]:
        """The records of a decoded data-block body."""
        try:
            return decode_records(body)
        except _BodyError as exc:
            raise self._body_error(info, exc, "data") from None

    def index_of(self, info: BlockInfo, body: bytes) -> IndexBlock:
        """The entries of a decoded index-block body.

        :func:`decode_index` reads it; a body it refuses is parsed with ``Zss.IndexBlockBody``,
        whose error names the field.
        """
        keys: list[bytes] | tuple[bytes, ...]
        children: list[int] | tuple[int, ...]
        try:
            keys, children = decode_index(body)
        except _BodyError:
            pass
        else:
            return IndexBlock(info.voffset, info.level, tuple(keys), tuple(children))
        base = info.payload_offset if self._codec == "none+crc32c" else 0
        try:
            with kaitai_errors(prefix=f"/blocks/@{info.voffset}/payload/body", base=base):
                parsed = Zss.IndexBlockBody.from_bytes(body)
                entries = parsed.entries
                keys = tuple(e.key for e in entries)
                children = tuple(e.child_voffset.value for e in entries)
        except ShardkitError as exc:
            offset = exc.offset if self._codec == "none+crc32c" else info.payload_offset
            raise CorruptBlockError(f"index block at {self._where(info.voffset)}: "
                                    f"{exc.message}", voffset=info.voffset, offset=offset,
                                    field=exc.field) from None
        return IndexBlock(info.voffset, info.level, keys, children)

    def _read_block(self, voffset: int, end_hint: int | None) -> tuple[BlockInfo, bytes]:
        """Framing and payload of the block at ``voffset``.

        ``end_hint`` is a voffset the block ends at or before (the next sibling's voffset in
        the parent index, or the parent's own: ZSS writes children first). On a remote source
        (one with a ``block_size``, whose requests are whole blocks anyway) the block is then
        read with its framing in one request; other sources read the framing, then the
        payload, as they always did.
        """
        if end_hint is None or end_hint <= voffset or not getattr(self.source, "block_size", 0):
            info = self.frame(voffset)
            return info, self._payload(info)
        if not 0 <= voffset < self.data_size:
            raise LayoutError(f"voffset {voffset} is outside the blocks (0..{self.data_size})",
                              offset=None, field=f"/blocks/@{voffset}")
        offset = self.data_offset + voffset
        size = self.source.size
        stop = min(self.data_offset + end_hint, size, offset + _MAX_HINTED_READ)
        if self._codec == "none+crc32c":  # no more than a payload the cap lets through
            stop = min(stop, offset + _FRAME_PEEK + self.max_block_size + 4)
        chunk = self.source.read_range(offset, max(stop, min(offset + _FRAME_PEEK, size)))
        info = self._frame_from(voffset, chunk[:_FRAME_PEEK])
        end = info.len_frame + info.len_payload
        if end <= len(chunk):
            return info, chunk[info.len_frame:end]
        return info, self._payload(info)

    def _level_error(self, info: BlockInfo, level: int) -> None:
        raise LayoutError(f"block at {self._where(info.voffset)} has level {info.level}, its "
                          f"parent expects {level}", offset=info.offset,
                          field=f"/blocks/@{info.voffset}/level")

    def index_block(self, voffset: int) -> IndexBlock:
        """The decoded index block at ``voffset``."""
        info, value = self._cached(voffset)
        if info.level == 0:
            raise LayoutError(f"block at {self._where(voffset)} is a data block, not an index "
                              "block", offset=info.offset, field=f"/blocks/@{voffset}/level")
        return cast("IndexBlock", value)

    # -- iteration -----------------------------------------------------------------------------

    def iter_blocks(self, voffset: int = 0) -> Iterator[tuple[BlockInfo, bytes]]:
        """(framing, decoded body) of every block from ``voffset`` on, in file order."""
        for info, payload in self._frames(voffset):
            yield info, self.decode_payload(info, payload)


    # _survey, the counts of summary and sections follow ZsFile's (zs/reader.py) row by row; the
    # fields differ as the specs do: a ZSS block has a voffset and there are no extension
    # blocks, a ZS block has an absolute offset and levels from 64 up are extension blocks.
    def _survey(self) -> list[dict[str, Any]]:
        """One row per block in file order: framing, body size, items, first item."""
        rows = []
        for info, body in self.iter_blocks(0):
            if info.level == 0:
                items = self.records_of(info, body)
                first = items[0] if items else None
                n = len(items)
            else:
                ib = self.index_of(info, body)
                first = ib.keys[0] if ib.keys else None
                n = len(ib.keys)
            rows.append({"voffset": info.voffset, "offset": info.offset, "level": info.level,
                         "size": info.size, "len_payload": info.len_payload,
                         "len_body": len(body), "items": n, "first": first})
        return rows

    def summary(self, counts: bool = False) -> dict[str, Any]:
        """What ``shardkit info`` shows: the header, codec, metadata and the tree's depth.

        That costs the header and the root block's framing (a few bytes at the end of the
        file). ``counts=True`` also decodes every block once (a full read of the file) to add
        the block and record counts (``record_count``, ``blocks_per_level``...).
        """
        root_level = self.frame(self.root).level
        out = self._summary_head()
        out.update({
            "uuid": self.uuid.hex(),
            "metadata": self.metadata,
            "header": self.header.to_dict(),
            "root_voffset": self.root,
            "root_level": root_level,
            "levels": root_level + 1,
        })
        if not counts:
            return out
        rows = self._survey()
        per_level: dict[int, int] = {}
        for r in rows:
            per_level[r["level"]] = per_level.get(r["level"], 0) + 1
        records = sum(r["items"] for r in rows if r["level"] == 0)
        self._len = records
        out.update({
            "blocks": len(rows),
            "data_blocks": per_level.get(0, 0),
            "index_blocks": len(rows) - per_level.get(0, 0),
            "blocks_per_level": {str(k): v for k, v in sorted(per_level.items())},
            "record_count": records,
            "record_bytes_decoded": sum(r["len_body"] for r in rows if r["level"] == 0),
        })
        return out

    def sections(self) -> list[Section]:
        """Byte layout: magic, header, CRC, then every block (level, voffset, sizes, first key)."""
        n = self.header.header_length
        out = [
            Section("/magic", 0, 8, "ZSS v1"),
            Section("/len_header", 8, 12, f"u32le = {n}"),
            Section("/header", 12, 12 + n, f"root voffset {self.root}, codec {self.codec}, "
                    f"{len(self.header.metadata_json)} bytes of metadata"),
            Section("/header_crc32c", 12 + n, 16 + n, f"CRC-32C {self.header.header_crc32c:08x}"),
        ]
        for r in self._survey():
            kind = "data" if r["level"] == 0 else "index"
            first = None if r["first"] is None else _escape(r["first"][:64])
            root = ", root" if r["voffset"] == self.root else ""
            out.append(Section(
                f"/blocks/@{r['voffset']}", r["offset"], r["offset"] + r["size"],
                f"level {r['level']} {kind}{root}, voffset {r['voffset']}, payload "
                f"{r['len_payload']} -> body {r['len_body']} bytes, {r['items']} "
                f"{'records' if kind == 'data' else 'entries'}, first "
                + ("none" if first is None else f'"{first}"'),
                extra={"level": r["level"], "kind": kind, "voffset": r["voffset"],
                       "is_root": r["voffset"] == self.root, "len_payload": r["len_payload"],
                       "len_body": r["len_body"], "items": r["items"],
                       "first_key": None if r["first"] is None else r["first"].hex()}))
        return out

    def _block_detail(self, info: BlockInfo, body: bytes) -> dict[str, Any]:
        """A block of ``to_dict()``: its records or index entries."""
        row: dict[str, Any] = {"voffset": info.voffset, "level": info.level,
                               "len_payload": info.len_payload, "len_body": len(body)}
        if info.level == 0:
            row["records"] = [r.hex() for r in self.records_of(info, body)]
        else:
            ib = self.index_of(info, body)
            row["entries"] = [{"key": k.hex(), "child_voffset": c}
                              for k, c in zip(ib.keys, ib.children, strict=True)]
        return row
