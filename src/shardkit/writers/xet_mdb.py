"""Xet MDB shard writer: construct records plus plain-Python layout (FORMAT_NOTES section 10).

Every 48-byte record, the header, the footer and the lookup entries are declared below as
construct ``Struct``s, field for field as schemas/xet_mdb_shard.ksy declares them (names are its
ids or ``-orig-id``s, xet-core's; ``tests/test_layouts.py`` checks each against the schema).
:func:`build_mdb` lays a shard out the way xet-core's writers do:

1. the header (tag, version 2, footer size 200, or 0 for the upload body);
2. the file blocks (sorted by hash unless told otherwise), then the file bookend;
3. the xorb blocks (sorted by hash), then the xorb bookend;
4. the file, xorb and chunk lookup tables (the chunk table sorted by key), when asked for;
5. the footer, whose offsets, counts and totals are computed from what was laid out.

Three forms: ``"full"`` (session/cache shard: tables and footer), ``"server"`` (the CAS-stored
form: footer, no tables, their offsets equal to the footer offset) and ``"upload"`` (the body of
``POST /v1/shards``: header footer_size 0, ends at the xorb bookend). :func:`build` rebuilds a
parsed shard; for every real sample its output is the original bytes.

Large shards: records are packed column-wise through numpy (:data:`RECORD_DTYPE` has exactly the
layout of the construct records; ``engine="construct"`` packs record by record with construct
instead, and the tests check both give the same bytes).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any, BinaryIO, Protocol

import numpy as np
from construct import Bytes, Const, Int32ul, Int64ul, Padding, Struct

from ..formats.xet_mdb import (
    BOOKEND,
    FILE_FLAG_METADATA_EXT,
    FILE_FLAG_VERIFICATION,
    FOOTER_SIZE,
    HEADER_SIZE,
    MDB_TAG,
    NEVER_EXPIRES,
    RECORD_DTYPE,
    MdbShard,
    XetHash,
    XorbInfo,
)
from ..formats.xet_mdb.model import _CHUNK_LOOKUP_DTYPE, _LOOKUP_DTYPE
from ._atomic import write_bytes_atomic

__all__ = [
    "Bookend",
    "ChunkLookupEntry",
    "FileDataSequenceEntry",
    "FileDataSequenceHeader",
    "FileMetadataExt",
    "FileVerificationEntry",
    "Header",
    "LookupEntry",
    "MdbFooterStruct",
    "XorbChunkSequenceEntry",
    "XorbChunkSequenceHeader",
    "build",
    "build_mdb",
    "write_mdb",
]

Hash = Bytes(32)

Header = Struct(
    "tag" / Const(MDB_TAG),
    "version" / Int64ul,
    "footer_size" / Int64ul,
)
FileDataSequenceHeader = Struct(
    "file_hash" / Hash,
    "file_flags" / Int32ul,
    "num_entries" / Int32ul,
    "reserved" / Int64ul,
)
FileDataSequenceEntry = Struct(
    "cas_hash" / Hash,
    "cas_flags" / Int32ul,
    "unpacked_segment_bytes" / Int32ul,
    "chunk_index_start" / Int32ul,
    "chunk_index_end" / Int32ul,
)
FileVerificationEntry = Struct(
    "range_hash" / Hash,
    Padding(16),
)
FileMetadataExt = Struct(
    "sha256" / Hash,
    Padding(16),
)
XorbChunkSequenceHeader = Struct(
    "xorb_hash" / Hash,
    "cas_flags" / Int32ul,
    "num_entries" / Int32ul,
    "num_bytes_in_xorb" / Int32ul,
    "num_bytes_on_disk" / Int32ul,
)
XorbChunkSequenceEntry = Struct(
    "chunk_hash" / Hash,
    "chunk_byte_range_start" / Int32ul,
    "unpacked_segment_bytes" / Int32ul,
    "flags" / Int32ul,
    "reserved" / Int32ul,
)
Bookend = Const(BOOKEND)
LookupEntry = Struct(
    "truncated_hash" / Int64ul,
    "index" / Int32ul,
)
ChunkLookupEntry = Struct(
    "truncated_hash" / Int64ul,
    "xorb_index" / Int32ul,
    "chunk_offset" / Int32ul,
)
MdbFooterStruct = Struct(
    "version" / Int64ul,
    "file_info_offset" / Int64ul,
    "cas_info_offset" / Int64ul,
    "file_lookup_offset" / Int64ul,
    "file_lookup_num_entry" / Int64ul,
    "cas_lookup_offset" / Int64ul,
    "cas_lookup_num_entry" / Int64ul,
    "chunk_lookup_offset" / Int64ul,
    "chunk_lookup_num_entry" / Int64ul,
    "chunk_hash_hmac_key" / Hash,
    "shard_creation_timestamp" / Int64ul,
    "shard_key_expiry" / Int64ul,
    "reserved" / Bytes(48),
    "stored_bytes_on_disk" / Int64ul,
    "materialized_bytes" / Int64ul,
    "stored_bytes" / Int64ul,
    "footer_offset" / Int64ul,
)

TABLES = ("file", "xorb", "chunk")


class TermLike(Protocol):
    """What the writer reads from a term (shardkit's :class:`Term` fits)."""

    xorb_hash: bytes
    flags: int
    unpacked_bytes: int
    chunk_start: int
    chunk_end: int


class FileLike(Protocol):
    """What the writer reads from a file (shardkit's :class:`FileInfo` fits)."""

    hash: bytes
    terms: Sequence[TermLike]
    verification_hashes: Sequence[bytes]
    sha256: bytes | None


class ChunkLike(Protocol):
    """What the writer reads from a chunk (shardkit's :class:`ChunkEntry` fits)."""

    hash: bytes
    size: int


class XorbLike(Protocol):
    """What the writer reads from a xorb (shardkit's :class:`XorbInfo` fits)."""

    hash: bytes
    chunks: Sequence[ChunkLike]


def _raw(h: Any) -> bytes:
    """32 stored bytes of a hash given as a hash object, raw bytes or display hex."""
    if isinstance(h, bytes) and len(h) == 32:  # XetHash included: it is its stored bytes
        return h
    return bytes(XetHash(h))


def _records_numpy(rows: list[tuple[bytes, int, int, int, int]]) -> bytes:
    """Pack (hash, w0, w1, w2, w3) rows as 48-byte records in one numpy pass."""
    if not rows:
        return b""
    hashes, w0, w1, w2, w3 = zip(*rows, strict=True)
    arr = np.empty(len(rows), RECORD_DTYPE)
    arr["hash"] = np.frombuffer(b"".join(hashes), "V32")
    arr["w0"], arr["w1"], arr["w2"], arr["w3"] = w0, w1, w2, w3
    return arr.tobytes()


def _file_rows(f: Any) -> list[tuple[bytes, int, int, int, int]]:
    """The records of one file block as (hash, w0, w1, w2, w3) (construct field order)."""
    terms = list(f.terms)
    ver = list(getattr(f, "verification_hashes", ()) or ())
    sha = getattr(f, "sha256", None)
    if ver and len(ver) != len(terms):
        raise ValueError(f"file {f.hash}: {len(ver)} verification hashes for {len(terms)} "
                         "terms")
    flags = getattr(f, "flags", None)
    if flags is None:
        flags = (FILE_FLAG_VERIFICATION if ver else 0) | (FILE_FLAG_METADATA_EXT
                                                          if sha is not None else 0)
    if bool(flags & FILE_FLAG_VERIFICATION) != bool(ver) and terms:
        raise ValueError(f"file {f.hash}: flags {flags:#x} disagree with the verification "
                         "entries given")
    if bool(flags & FILE_FLAG_METADATA_EXT) != (sha is not None):
        raise ValueError(f"file {f.hash}: flags {flags:#x} disagree with the sha256 given")
    reserved = getattr(f, "reserved", 0)
    rows = [(_raw(f.hash), flags, len(terms), reserved & 0xFFFF_FFFF, reserved >> 32)]
    rows += [(_raw(t.xorb_hash), getattr(t, "flags", 0), t.unpacked_bytes, t.chunk_start,
              t.chunk_end) for t in terms]
    if flags & FILE_FLAG_VERIFICATION:
        rows += [(_raw(v), 0, 0, 0, 0) for v in ver]
    if sha is not None:
        rows.append((_raw(sha), 0, 0, 0, 0))
    return rows


def _xorb_rows(x: Any) -> list[tuple[bytes, int, int, int, int]]:
    if isinstance(x, XorbInfo) and not x.chunks_loaded:  # parsed, chunks still records
        recs = x.chunk_records
        return [(_raw(x.hash), x.flags, len(recs), x.num_bytes_in_xorb, x.num_bytes_on_disk),
                *recs.tolist()]
    chunks = list(x.chunks)
    in_xorb = getattr(x, "num_bytes_in_xorb", None)
    if in_xorb is None:
        in_xorb = sum(c.size for c in chunks)
    rows = [(_raw(x.hash), getattr(x, "flags", 0), len(chunks), in_xorb,
             getattr(x, "num_bytes_on_disk", 0))]
    start = 0
    for c in chunks:
        rows.append((_raw(c.hash), getattr(c, "offset", start), c.size, getattr(c, "flags", 0),
                     getattr(c, "reserved", 0)))
        start += c.size
    return rows


def _records_construct(rows: list[tuple[bytes, int, int, int, int]], kinds: list[str]) -> bytes:
    """Pack the same rows record by record with the construct declarations (reference path)."""
    out = bytearray()
    for (h, a, b, c, d), kind in zip(rows, kinds, strict=True):
        if kind == "file":
            out += FileDataSequenceHeader.build(dict(file_hash=h, file_flags=a, num_entries=b,
                                                     reserved=c | (d << 32)))
        elif kind == "term":
            out += FileDataSequenceEntry.build(dict(cas_hash=h, cas_flags=a,
                                                    unpacked_segment_bytes=b,
                                                    chunk_index_start=c, chunk_index_end=d))
        elif kind == "verification":
            out += FileVerificationEntry.build(dict(range_hash=h))
        elif kind == "ext":
            out += FileMetadataExt.build(dict(sha256=h))
        elif kind == "xorb":
            out += XorbChunkSequenceHeader.build(dict(xorb_hash=h, cas_flags=a, num_entries=b,
                                                      num_bytes_in_xorb=c,
                                                      num_bytes_on_disk=d))
        else:
            out += XorbChunkSequenceEntry.build(dict(chunk_hash=h, chunk_byte_range_start=a,
                                                     unpacked_segment_bytes=b, flags=c,
                                                     reserved=d))
    return bytes(out)


def _file_kinds(f: Any) -> list[str]:
    n = len(f.terms)
    ver = bool(getattr(f, "verification_hashes", ()))
    return (["file"] + ["term"] * n + ["verification"] * (n if ver else 0)
            + (["ext"] if getattr(f, "sha256", None) is not None else []))


def build_mdb(
    files: Iterable[Any] = (),
    xorbs: Iterable[Any] = (),
    *,
    form: str = "full",
    tables: Iterable[str] = TABLES,
    sort: bool = True,
    hmac_key: bytes = bytes(32),
    creation_timestamp: int = 0,
    key_expiry: int = NEVER_EXPIRES,
    totals: tuple[int, int, int] | None = None,
    footer_reserved: bytes = bytes(48),
    zero_table_offsets: bool = False,
    header_footer_size: int | None = None,
    chunk_table: Sequence[tuple[int, int, int]] | None = None,
    engine: str = "numpy",
) -> bytes:
    """Lay out a shard and return its bytes.

    Parsing: the result reads back through :class:`~shardkit.formats.xet_mdb.MdbShard` (and the
    generated Kaitai parser) with the same files and xorbs. Building: counts, offsets, record
    indexes, chunk starts (when the chunks do not carry ``offset``) and totals are computed.

    Args:
        files: File blocks (``hash``, ``terms``, ``verification_hashes``, ``sha256``; optional
            ``flags`` and ``reserved``), e.g. :class:`FileInfo` objects.
        xorbs: Xorb blocks (``hash``, ``chunks`` of ``hash``/``size`` and optional
            ``offset``/``flags``), e.g. :class:`XorbInfo` objects.
        form: ``"full"``, ``"server"`` or ``"upload"`` (see the module doc).
        tables: Which lookup tables a ``"full"`` shard gets (any of file, xorb, chunk).
        sort: Sort files and xorbs by hash, as xet-core does (stable: duplicates keep order).
        hmac_key: The footer's chunk-hash key (the chunk hashes given must already be keyed).
        creation_timestamp: Footer creation time (Unix seconds).
        key_expiry: Footer expiry (Unix seconds; 2**64-1 never).
        totals: (stored_bytes_on_disk, materialized_bytes, stored_bytes) to write instead of
            the computed sums.
        footer_reserved: The footer's 48 reserved bytes.
        zero_table_offsets: Write 0 for the table offsets and counts (huggingface.js style).
        header_footer_size: Header footer_size to write instead of 200 / 0.
        chunk_table: The chunk table's (key, xorb record, chunk) rows in the order to write;
            default sorted by key, then xorb record, then chunk.
        engine: ``"numpy"`` (column-wise packing) or ``"construct"`` (record by record).

    Raises:
        ValueError: Inconsistent input (flags against entries, an unknown form or table).

    Example::

        >>> data = build_mdb([], [], form="upload")
        >>> len(data)  # header + two bookends
        144
    """
    if form not in ("full", "server", "upload"):
        raise ValueError(f"unknown form {form!r} (full, server or upload)")
    tables = set(tables) if form == "full" else set()
    if tables - set(TABLES):
        raise ValueError(f"unknown lookup tables {sorted(tables - set(TABLES))}")

    def order(item: Any) -> str:  # words 0..3 numerically = display hex lexicographically
        return str(XetHash(item.hash))

    files = sorted(files, key=order) if sort else list(files)
    xorbs = sorted(xorbs, key=order) if sort else list(xorbs)

    # File section
    file_rows, file_kinds, file_table, materialized = _file_section(files, engine)
    # Xorb section
    xorb_rows, xorb_kinds, xorb_table, chunk_rows, stored, on_disk = _xorb_section(
        xorbs, engine)

    file_bytes, xorb_bytes = _pack_sections(engine, file_rows, file_kinds, xorb_rows,
                                            xorb_kinds)

    if header_footer_size is None:
        header_footer_size = 0 if form == "upload" else FOOTER_SIZE
    out = bytearray(Header.build(dict(version=2, footer_size=header_footer_size)))
    out += file_bytes
    out += BOOKEND
    xorb_info_offset = len(out)
    out += xorb_bytes
    out += BOOKEND
    if form == "upload":
        return bytes(out)

    lookups = _lookup_tables(out, tables, file_table, xorb_table, chunk_rows, chunk_table)
    return _with_footer(out, lookups, xorb_info_offset, (on_disk, materialized, stored),
                        zero_table_offsets=zero_table_offsets, totals=totals,
                        hmac_key=hmac_key, creation_timestamp=creation_timestamp,
                        key_expiry=key_expiry, footer_reserved=footer_reserved)


# a file or xorb section record's row: hash, then four integer fields
_Row = tuple[bytes, int, int, int, int]


def _file_section(files: Iterable[Any], engine: str
                  ) -> tuple[list[_Row], list[str], list[tuple[int, int]], int]:
    """:func:`build_mdb`'s file section: its records' rows (and kinds for the construct
    engine), its lookup table rows (key, record) and the materialized bytes of its files."""
    file_rows: list[tuple[bytes, int, int, int, int]] = []
    file_kinds: list[str] = []
    file_table: list[tuple[int, int]] = []
    materialized = 0
    for f in files:
        rows = _file_rows(f)
        file_table.append((int.from_bytes(rows[0][0][:8], "little"), len(file_rows)))
        file_rows += rows
        if engine == "construct":
            file_kinds += _file_kinds(f)
        materialized += sum(t.unpacked_bytes for t in f.terms)
    return file_rows, file_kinds, file_table, materialized


def _xorb_section(xorbs: Iterable[Any], engine: str
                  ) -> tuple[list[_Row], list[str], list[tuple[int, int]],
                             list[tuple[int, int, int]], int, int]:
    """:func:`build_mdb`'s xorb section: its records' rows (and kinds for the construct
    engine), its lookup table rows (key, record), the chunk table's rows (key, xorb record,
    chunk) and the stored and on-disk bytes of its xorbs."""
    xorb_rows: list[tuple[bytes, int, int, int, int]] = []
    xorb_kinds: list[str] = []
    xorb_table: list[tuple[int, int]] = []
    chunk_rows: list[tuple[int, int, int]] = []
    stored = on_disk = 0
    for x in xorbs:
        rows = _xorb_rows(x)
        rec = len(xorb_rows)
        xorb_table.append((int.from_bytes(rows[0][0][:8], "little"), rec))
        chunk_rows += [(int.from_bytes(r[0][:8], "little"), rec, i)
                       for i, r in enumerate(rows[1:])]
        xorb_rows += rows
        if engine == "construct":
            xorb_kinds += ["xorb"] + ["chunk"] * (len(rows) - 1)
        stored += rows[0][3]
        on_disk += rows[0][4]
    return xorb_rows, xorb_kinds, xorb_table, chunk_rows, stored, on_disk


def _pack_sections(engine: str, file_rows: list[_Row], file_kinds: list[str],
                   xorb_rows: list[_Row], xorb_kinds: list[str]
                   ) -> tuple[bytes, bytes]:
    """The file and xorb sections' records packed by ``engine``."""
    pack = (_records_numpy if engine == "numpy"
            else lambda rows, kinds: _records_construct(rows, kinds))
    if engine == "numpy":
        file_bytes, xorb_bytes = _records_numpy(file_rows), _records_numpy(xorb_rows)
    elif engine == "construct":
        file_bytes = pack(file_rows, file_kinds)  # type: ignore[call-arg]  # pack is the construct lambda here
        xorb_bytes = pack(xorb_rows, xorb_kinds)  # type: ignore[call-arg]  # ditto
    else:
        raise ValueError(f"unknown engine {engine!r} (numpy or construct)")
    return file_bytes, xorb_bytes


def _lookup_tables(out: bytearray, tables: set[str], file_table: list[tuple[int, int]],
                   xorb_table: list[tuple[int, int]], chunk_rows: list[tuple[int, int, int]],
                   chunk_table: Sequence[tuple[int, int, int]] | None
                   ) -> tuple[int, int, int, int, int, int]:
    """The lookup tables asked for appended to ``out``; the offset and entry count of each
    (file, xorb, chunk)."""
    def table_bytes(rows: Sequence[tuple[int, ...]], dtype: np.dtype) -> bytes:
        return np.array(list(rows), dtype=dtype).tobytes() if rows else b""

    file_lookup_offset = len(out)
    n_file = len(file_table) if "file" in tables else 0
    if n_file:
        out += table_bytes(file_table, _LOOKUP_DTYPE)
    xorb_lookup_offset = len(out)
    n_xorb = len(xorb_table) if "xorb" in tables else 0
    if n_xorb:
        out += table_bytes(xorb_table, _LOOKUP_DTYPE)
    chunk_lookup_offset = len(out)
    n_chunk = len(chunk_rows) if "chunk" in tables else 0
    if n_chunk:
        rows_c = list(chunk_table) if chunk_table is not None else sorted(chunk_rows)
        out += table_bytes(rows_c, _CHUNK_LOOKUP_DTYPE)
    return (file_lookup_offset, n_file, xorb_lookup_offset, n_xorb, chunk_lookup_offset,
            n_chunk)


def _with_footer(out: bytearray, lookups: tuple[int, int, int, int, int, int],
                 xorb_info_offset: int, sums: tuple[int, int, int], *,
                 zero_table_offsets: bool, totals: tuple[int, int, int] | None,
                 hmac_key: bytes, creation_timestamp: int, key_expiry: int,
                 footer_reserved: bytes) -> bytes:
    """``out`` with the footer appended: the sections' and tables' offsets and counts
    (``lookups`` as :func:`_lookup_tables` gives them), the key, times and the totals
    (``sums``: on disk, materialized, stored, unless ``totals`` are given)."""
    (file_lookup_offset, n_file, xorb_lookup_offset, n_xorb, chunk_lookup_offset,
     n_chunk) = lookups
    on_disk, materialized, stored = sums
    footer_offset = len(out)
    if zero_table_offsets:
        file_lookup_offset = xorb_lookup_offset = chunk_lookup_offset = 0
    t_disk, t_mat, t_stored = totals if totals is not None else (on_disk, materialized, stored)
    out += MdbFooterStruct.build(dict(
        version=1,
        file_info_offset=HEADER_SIZE,
        cas_info_offset=xorb_info_offset,
        file_lookup_offset=file_lookup_offset,
        file_lookup_num_entry=n_file,
        cas_lookup_offset=xorb_lookup_offset,
        cas_lookup_num_entry=n_xorb,
        chunk_lookup_offset=chunk_lookup_offset,
        chunk_lookup_num_entry=n_chunk,
        chunk_hash_hmac_key=bytes(hmac_key),
        shard_creation_timestamp=creation_timestamp,
        shard_key_expiry=key_expiry,
        reserved=bytes(footer_reserved),
        stored_bytes_on_disk=t_disk,
        materialized_bytes=t_mat,
        stored_bytes=t_stored,
        footer_offset=footer_offset,
    ))
    assert len(out) == footer_offset + FOOTER_SIZE
    return bytes(out)


def build(shard: MdbShard, *, engine: str = "numpy") -> bytes:
    """Rebuild a parsed shard: same form, tables, footer fields and record order.

    For every real sample in ``tests/data/mdb`` the result is the original file, byte for byte.
    """
    f = shard.footer
    kwargs: dict[str, Any] = {"sort": False, "engine": engine,
                              "header_footer_size": shard.header.footer_size}
    if f is None:
        kwargs["form"] = "upload"
    else:
        present = {name for name, n in (("file", f.file_lookup_num_entry),
                                        ("xorb", f.xorb_lookup_num_entry),
                                        ("chunk", f.chunk_lookup_num_entry)) if n}
        kwargs.update(
            form="full" if present else "server",
            tables=present,
            hmac_key=bytes(f.hmac_key),
            creation_timestamp=f.creation_timestamp,
            key_expiry=f.key_expiry,
            totals=(f.stored_bytes_on_disk, f.materialized_bytes, f.stored_bytes),
            footer_reserved=f.reserved,
            zero_table_offsets=not present and f.file_lookup_offset == 0,
        )
        if shard.chunk_lookup is not None:
            t = shard.chunk_lookup
            kwargs["chunk_table"] = list(zip(t["key"].tolist(), t["xorb"].tolist(),
                                             t["chunk"].tolist(), strict=True))
    return build_mdb(shard.files, shard.xorbs, **kwargs)


def write_mdb(target: str | os.PathLike[str] | BinaryIO, files: Iterable[Any] = (),
              xorbs: Iterable[Any] = (), **options: Any) -> int:
    """Write :func:`build_mdb`'s bytes; returns the number of bytes written.

    Args:
        target: A path: the shard is written under a temporary name beside it and renamed
            once complete, so the path never holds a partial shard (an old file stays until
            the new one replaces it; the temporary file is removed on error). Or an open
            binary file, written as it is.
        files: The file blocks (:class:`~shardkit.formats.xet_mdb.FileInfo` or alike).
        xorbs: The xorb blocks.
        **options: Passed to :func:`build_mdb`.
    """
    data = build_mdb(files, xorbs, **options)
    if isinstance(target, (str, os.PathLike)):
        write_bytes_atomic(target, data)
    else:
        target.write(data)
    return len(data)
