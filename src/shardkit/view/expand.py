"""Lazy children for the sections that hold large arrays, found by the reader's API.

The viewer is format-generic: every reader gives ``summary()``, ``sections()`` and
``to_dict()``. Where a section is an array too large to list (an SWH index of 50M slots, a ZSS
index tree, a Neuroglancer shard index), the reader's own public accessors are used to read
one page of it at a time. Readers are recognised by what they offer (an index of fixed-size
slots, an index tree of blocks...), not by their format id, so a new reader with the same API
(the ZS format has ZSS's) is served as well.
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Callable
from typing import Any

from .._layouts import layouts, struct_of
from ..errors import ShardkitError
from ..sources import ByteSource
from .model import PAGE, Children, FuncChildren, ListChildren, Node, file_nodes, guarded

__all__ = ["SCAN_LIMIT", "dataset_parts", "expander_for", "index_tree", "sections_are_cheap"]

_SLOT = struct_of(layouts.SWH_READ_SHARD__INDEX_ENTRY)  # an SWH slot: key, object offset (u64 BE)
_OBJECT_SIZE = struct_of(layouts.SWH_READ_SHARD__SHARD_OBJECT__HEAD)  # before an SWH object
_TOMBSTONE = (1 << 64) - 1
_SHARD_ENTRY = struct_of(layouts.NEUROGLANCER_UINT64_SHARDED__SHARD_INDEX_ENTRY)  # start, end


def _is_slot_index(reader: Any) -> bool:
    return all(hasattr(reader, a) for a in ("slot_of", "num_slots", "header")) and hasattr(
        reader.header, "index_position")


def _is_block_tree(reader: Any) -> bool:
    return all(hasattr(reader, a) for a in ("index_block", "frame", "root"))


def _is_record_sections(reader: Any) -> bool:
    return all(hasattr(reader, a) for a in ("files", "xorbs", "file", "find_chunk"))


def _is_column_store(reader: Any) -> bool:
    return all(hasattr(reader, a) for a in ("stripe_field", "iter_fields", "_block_map",
                                            "block_table", "_buffers"))


def _is_ng_shard(reader: Any) -> bool:
    return all(hasattr(reader, a) for a in ("shard_index", "minishard", "index_size", "spec"))


#: Files up to this size have their ``layout`` opened at start (and searched by ``g``, ``/``
#: and the hex cursor) even where ``sections()`` reads every block or index.
SCAN_LIMIT = 64 << 20


def sections_are_cheap(reader: Any) -> bool:
    """Whether ``sections()`` costs a few reads, not a scan of the file's blocks or indices.

    ZSS-like block trees list every block, Neuroglancer shards every chunk: above
    :data:`SCAN_LIMIT` those are left until the user opens the ``layout`` node.
    """
    if not (_is_block_tree(reader) or _is_ng_shard(reader)):
        return True
    size = getattr(reader.source, "size", None)
    return isinstance(size, int) and size <= SCAN_LIMIT


def expander_for(reader: Any, source: ByteSource | None, base: str = "", payload: str = ""
                 ) -> Callable[[Node], None] | None:
    """A function that gives ``layout`` section nodes lazy children, or None."""
    src = source or reader.source
    if _is_slot_index(reader):
        return lambda node: _slot_index(reader, src, node, base)
    if _is_block_tree(reader):
        return lambda node: _block_tree(reader, src, node, base)
    if _is_ng_shard(reader):
        return lambda node: _ng_shard(reader, src, node, base, payload)
    if _is_record_sections(reader):
        return lambda node: _record_blocks(reader, node, base)
    if _is_column_store(reader):
        return lambda node: _column_buffer(reader, node)
    return None


# -- an index of fixed-size slots (SWH read shards) ---------------------------------------------


def _slot_index(reader: Any, src: ByteSource, node: Node, base: str) -> None:
    if node.path != f"{base}/index" or node.start is None:
        return
    first = node.start
    n = int(reader.num_slots)
    size = _SLOT.size
    path = node.path

    def make(lo: int, hi: int) -> list[Node]:
        raw = src.read_range(first + lo * size, first + hi * size)  # one read per page
        out = []
        for i in range(lo, hi):
            key, ofs = _SLOT.unpack_from(raw, (i - lo) * size)
            out.append(_slot_node(reader, src, path, first, i, key, ofs))
        return out

    def entries() -> Children:
        return FuncChildren(n, make, offset_to_index=lambda off: (off - first) // size)

    node.children = lambda: ListChildren([Node(
        "entries", f"{path}/entries", f"[{n}] {size}-byte slots: key, offset", first,
        first + n * size, source=node.source, children=guarded(entries, f"{path}/entries"))])


def _slot_node(reader: Any, src: ByteSource, path: str, first: int, i: int, key: bytes,
               ofs: int) -> Node:
    at = first + i * _SLOT.size
    p = f"{path}/entries/{i}"
    if ofs == 0:
        state = "empty"
    elif ofs == _TOMBSTONE:
        state = "tombstone"
    else:
        state = f"-> {ofs}"
    kids = [Node("key", f"{p}/key", key.hex(), at, at + 32),
            Node("ofs", f"{p}/ofs", str(ofs), at + 32, at + 40)]
    if state.startswith("->"):
        lo, hi = reader.header.objects_position, reader.header.index_position

        def obj() -> Children:
            if not lo <= ofs <= hi - 8:
                raise ShardkitError(f"slot {i} points to {ofs}, outside the objects section "
                                    f"[{lo}, {hi})")
            (length,) = _OBJECT_SIZE.unpack(src.read_range(ofs, ofs + 8))
            end = min(ofs + 8 + length, hi)
            return ListChildren([
                Node("len_data", f"{p}/object/len_data", str(length), ofs, ofs + 8),
                Node("data", f"{p}/object/data", f"{length} bytes", ofs + 8, end)])

        kids.append(Node("object", f"{p}/object", "u64 size + data", ofs, None,
                         children=guarded(obj, f"{p}/object")))
    return Node(str(i), p, f"{key.hex()[:16]}… {state}", at, at + _SLOT.size,
                children=lambda: ListChildren(kids))


# -- an index tree of blocks (ZSS, and readers with its API) ------------------------------------


def _block_tree(reader: Any, src: ByteSource, node: Node, base: str) -> None:
    if not node.path.startswith(f"{base}/blocks/@") or node.start is None:
        return
    try:
        voffset = int(node.key[1:])
    except ValueError:
        return
    node.children = guarded(lambda: _block_children(reader, voffset, base), node.path)
    node.decoded = functools.partial(_decoded_block, reader, voffset)


def index_tree(reader: Any, base: str = "") -> Node | None:
    """For a block-tree reader: the blocks from the root down, each read when opened.

    Unlike ``layout`` (``map``: every block, so a read of the whole file) this reads only the
    blocks on the way, so it is what ``g``, ``/`` and the hex cursor search in a large file.
    """
    if not _is_block_tree(reader):
        return None
    root = reader.frame(reader.root)
    # the first block: the blocks' subtrees start there (ZSS addresses blocks by a virtual
    # offset that starts at 0, ZS by their offset in the file, after the header)
    first = reader.frame(getattr(reader, "blocks_offset", 0)).offset

    def kids() -> Children:
        return FuncChildren(1, lambda lo, hi: [_block_node(reader, reader.root, base, root)],
                            offset_to_index=lambda off: 0 if off >= first else None)

    return Node("index tree", f"{base}/blocks", "the blocks from the root, each read when "
                "opened", root.offset, root.offset + root.size,
                children=guarded(kids, f"{base}/blocks"))


def _block_node(reader: Any, voffset: int, base: str, info: Any, label: str | None = None
                ) -> Node:
    path = f"{base}/blocks/@{voffset}"
    kind = "data" if info.level == 0 else "index"
    return Node(label or f"@{voffset}", path, f"level {info.level} {kind} block @{voffset}",
                info.offset, info.offset + info.size, f"level {info.level} {kind} block",
                children=guarded(lambda: _block_children(reader, voffset, base), path),
                decoded=functools.partial(_decoded_block, reader, voffset))


def _decoded_block(reader: Any, voffset: int) -> bytes:
    """A block's decoded payload (its records, or its index entries)."""
    for _, body in reader.iter_blocks(voffset):
        return bytes(body)
    return b""


def _record_ranges(body: bytes, records: list[bytes]) -> list[tuple[int, int] | None]:
    """Where each record is in its decoded block (``(uleb128 length, bytes)*``)."""
    out: list[tuple[int, int] | None] = []
    pos = 0
    for rec in records:
        n, size = len(rec), 1
        while n >= 0x80:
            n >>= 7
            size += 1
        start = pos + size
        if body[start:start + len(rec)] != rec:
            out.extend([None] * (len(records) - len(out)))  # not minimal lengths: no ranges
            break
        out.append((start, start + len(rec)))
        pos = start + len(rec)
    return out


def _escape(record: bytes, limit: int = 80) -> str:
    text = "".join(chr(b) if 32 <= b < 127 and b != 92 else f"\\x{b:02x}"
                   for b in record[:limit])
    return text + ("…" if len(record) > limit else "")


def _block_children(reader: Any, voffset: int, base: str) -> Children:
    """An index block's entries (each its child block, expandable) or a data block's records.

    The blocks below entry ``i`` lie between the end of entry ``i - 1``'s block and the end of
    entry ``i``'s (a writer puts children before their parent), so the entry whose subtree
    holds a byte is found by a binary search over a few of the children's frames.
    """
    info = reader.frame(voffset)
    path = f"{base}/blocks/@{voffset}"
    if info.level > 0:
        block = reader.index_block(voffset)
        keys, kids = list(block.keys), list(block.children)

        def make(lo: int, hi: int) -> list[Node]:
            out = []
            for i in range(lo, hi):
                node = _block_node(reader, kids[i], base, reader.frame(kids[i]), str(i))
                node.value = f'"{_escape(keys[i], 40)}" -> @{kids[i]}'
                out.append(node)
            return out

        def end(i: int) -> int:
            f = reader.frame(kids[i])
            return int(f.offset + f.size)

        def at(offset: int) -> int | None:
            i = bisect.bisect_right(range(len(kids)), offset, key=end)
            return i if i < len(kids) else None

        return FuncChildren(len(keys), make, offset_to_index=at)
    body = _decoded_block(reader, voffset)
    records: list[bytes] = list(reader.records_of(info, body))
    ranges = _record_ranges(body, records)

    def make_records(lo: int, hi: int) -> list[Node]:
        return [Node(str(i), f"{path}/records/{i}", _escape(records[i]),
                     in_decoded=ranges[i]) for i in range(lo, hi)]

    ends = [r[1] if r is not None else -1 for r in ranges]

    def in_decoded(offset: int) -> int | None:  # the record whose length or bytes hold it
        i = bisect.bisect_right(ends, offset)
        return i if i < len(ends) else None

    return FuncChildren(len(records), make_records,
                        decoded_to_index=in_decoded if all(ranges) else None)


# -- sections of variable-size record blocks (Xet MDB files and xorbs) --------------------------

_BOOKEND = 48  # the all-ones record that ends an MDB section


def _record_blocks(reader: Any, node: Node, base: str) -> None:
    what = {f"{base}/file_info": "files", f"{base}/xorb_info": "xorbs"}.get(node.path)
    if what is None or node.end is None:
        return
    end = node.end - _BOOKEND
    path = node.path

    def kids() -> Children:
        blocks = getattr(reader, what)  # a sequence whose items are built when read

        def make(lo: int, hi: int) -> list[Node]:
            out = []
            for i in range(lo, hi):
                b = blocks[i]
                stop = blocks[i + 1].offset if i + 1 < len(blocks) else end
                node = Node(str(i), f"{path}/{i}", str(b.hash), b.offset, stop,
                            f"{what[:-1]} block")
                node.children = guarded(functools.partial(
                    _file_block if what == "files" else _xorb_block, b, node.path), node.path)
                out.append(node)
            return out

        def at(offset: int) -> int | None:  # a binary search: log2(n) blocks are built
            i = bisect.bisect_right(blocks, offset, key=lambda b: b.offset) - 1
            return i if i >= 0 and offset < end else None

        return FuncChildren(len(blocks), make, offset_to_index=at)

    node.children = guarded(kids, path)


_REC = 48  # an MDB record
_FLAG_VERIFICATION = 0x8000_0000
_FLAG_METADATA_EXT = 0x4000_0000


def _record(key: str, path: str, at: int, value: str, fields: list[tuple[str, int, Any]]
            ) -> Node:
    """A 48-byte record whose fields are ``(name, size, value)`` in order."""
    kids, pos = [], at
    for name, size, v in fields:
        kids.append(Node(name, f"{path}/{name}", str(v), pos, pos + size))
        pos += size
    return Node(key, path, value, at, at + _REC, children=functools.partial(ListChildren, kids))


def _records_node(key: str, path: str, at: int, n: int, make: Callable[[int, str, int], Node],
                  what: str) -> Node:
    def kids() -> Children:
        return FuncChildren(n, lambda lo, hi: [make(i, f"{path}/{i}", at + i * _REC)
                                               for i in range(lo, hi)],
                            offset_to_index=lambda off: (off - at) // _REC)

    return Node(key, path, f"[{n}] {what}", at, at + n * _REC, children=kids if n else None)


def _file_block(info: Any, path: str) -> Children:
    """A file block's records: its header, terms, verification entries, metadata ext."""
    at = info.offset
    terms = info.terms
    n = len(terms)
    out = [_record("header", f"{path}/header", at, f"{n} terms, flags 0x{info.flags:08x}", [
        ("file_hash", 32, info.hash), ("flags", 4, f"0x{info.flags:08x}"), ("num_terms", 4, n),
        ("reserved", 8, info.reserved)])]

    def term(i: int, p: str, a: int) -> Node:
        t = terms[i]
        return _record(str(i), p, a, f"xorb {str(t.xorb_hash)[:16]}… chunks [{t.chunk_start}, "
                       f"{t.chunk_end}) {t.unpacked_bytes} bytes", [
                           ("xorb_hash", 32, t.xorb_hash), ("flags", 4, t.flags),
                           ("len_unpacked", 4, t.unpacked_bytes),
                           ("chunk_index_start", 4, t.chunk_start),
                           ("chunk_index_end", 4, t.chunk_end)])

    pos = at + _REC
    out.append(_records_node("terms", f"{path}/terms", pos, n, term, "reconstruction terms"))
    pos += n * _REC
    if info.flags & _FLAG_VERIFICATION:
        hashes = info.verification_hashes

        def check(i: int, p: str, a: int) -> Node:
            return _record(str(i), p, a, f"range hash {str(hashes[i])[:16]}…", [
                ("range_hash", 32, hashes[i]), ("reserved", 16, 0)])

        out.append(_records_node("verification", f"{path}/verification", pos, len(hashes),
                                 check, "verification entries, one per term"))
        pos += len(hashes) * _REC
    if info.flags & _FLAG_METADATA_EXT:
        out.append(_record("metadata_ext", f"{path}/metadata_ext", pos, f"sha256 {info.sha256}",
                           [("sha256", 32, info.sha256), ("reserved", 16, 0)]))
    return ListChildren(out)


def _xorb_block(info: Any, path: str) -> Children:
    """A xorb block's records: its header and its chunks."""
    at = info.offset
    chunks = info.chunks
    n = len(chunks)
    out = [_record("header", f"{path}/header", at, f"{n} chunks, {info.num_bytes_in_xorb} bytes",
                   [("xorb_hash", 32, info.hash), ("flags", 4, info.flags), ("num_chunks", 4, n),
                    ("len_unpacked", 4, info.num_bytes_in_xorb),
                    ("len_on_disk", 4, info.num_bytes_on_disk)])]

    def chunk(i: int, p: str, a: int) -> Node:
        c = chunks[i]
        return _record(str(i), p, a, f"chunk {str(c.hash)[:16]}… at {c.offset}, {c.size} bytes",
                       [("chunk_hash", 32, c.hash), ("ofs_unpacked", 4, c.offset),
                        ("len_unpacked", 4, c.size), ("flags", 4, f"0x{c.flags:08x}"),
                        ("reserved", 4, c.reserved)])

    out.append(_records_node("chunks", f"{path}/chunks", at + _REC, n, chunk, "chunks"))
    return ListChildren(out)


# -- a column store's block streams (Amudai DATA buffers) --------------------------------------


def _column_buffer(reader: Any, node: Node) -> None:
    parts = node.path.split("/")
    if len(parts) != 6 or parts[1] != "stripes" or parts[3] != "fields" or \
            parts[5] != "data" or node.start is None:
        return
    try:
        k = int(parts[2])
        field_node = reader.field(parts[4])
    except (ValueError, ShardkitError):
        return
    node.children = guarded(functools.partial(_column_blocks, reader, k, field_node, node.path),
                            node.path)


def _column_blocks(reader: Any, k: int, fnode: Any, path: str) -> Children:
    """A DATA buffer's block map and blocks (each read and decoded only for ``d``)."""
    from ..formats.amudai.model import _dtype_of
    from ..generated import amudai_shard_pb2 as spb

    field = path.rsplit("/", 1)[0]
    sfd = reader.stripe_field(k, fnode.schema_id)
    buf = reader._buffers(sfd, field).get(spb.DATA) if sfd is not None else None
    if buf is None:
        return ListChildren([])
    ref, mref, _ = reader._block_map(buf, field)
    src = reader._blobs.locate(ref, path)
    table = reader.block_table(src.read_range(mref.start, mref.end), mref.start,
                               path + "/block_map")
    dtype = _dtype_of(fnode)
    fixed = fnode.fixed_size if fnode.type in ("FixedSizeBinary", "Guid") else 0
    if fnode.type == "Guid":
        fixed = fixed or 16
    import numpy as np

    if spb.VALUE_DICTIONARY in reader._buffers(sfd, field):
        dtype = np.dtype("<u4")  # ids into the value dictionary
    elif fnode.type == "Boolean":
        dtype = np.dtype(np.uint8)  # bits, eight to a byte

    def block(i: int) -> Node:
        logical, ofs, size = table[i]
        at = ref.start + ofs
        p = f"{path}/blocks/{i}"
        decode = functools.partial(_decode_column_block, src, buf, at, size, logical, dtype,
                                   fixed, p)
        return Node(str(i), p, f"{logical} values, {size} bytes", at, at + size, "block",
                    decoded=decode, children=guarded(functools.partial(
                        _column_values, decode, logical, dtype, p), p))

    nodes = [block(i) for i in range(min(len(table), PAGE))]
    nodes.append(Node("block_map", f"{path}/block_map", f"{len(table)} blocks", mref.start,
                      mref.end, "block map"))
    return ListChildren(nodes)


def _column_values(decode: Callable[[], bytes], n: int, dtype: Any, path: str) -> Children:
    """A block's values, each with its range in the decoded bytes (``d`` highlights it)."""
    data = decode()
    if dtype is None or dtype.itemsize * n != len(data):  # bits, or byte strings: one node
        return ListChildren([Node("values", f"{path}/values", f"{len(data)} decoded bytes",
                                  in_decoded=(0, len(data)))])
    import numpy as np

    values = np.frombuffer(data, dtype)
    w = dtype.itemsize

    def make(lo: int, hi: int) -> list[Node]:
        return [Node(str(i), f"{path}/{i}", str(values[i].item()),
                     in_decoded=(i * w, (i + 1) * w)) for i in range(lo, hi)]

    return FuncChildren(n, make, decoded_to_index=lambda offset: offset // w)


def _decode_column_block(src: ByteSource, buf: Any, at: int, size: int, n: int, dtype: Any,
                         fixed: int, path: str) -> bytes:
    """A block's values, decoded: fixed-width values as little-endian bytes, byte strings
    one after another."""
    from ..formats.amudai.blocks import decode_binary_values, decode_numeric_values, split_block

    raw = memoryview(src.read_range(at, at + size))
    parts = split_block(raw, embedded_presence=buf.embedded_presence,
                        has_checksum=buf.block_checksums, base=at, field=path, region=path)
    base = at + parts.values_offset
    if dtype is not None:
        return bytes(decode_numeric_values(parts.values, n, dtype, base=base,
                                           field=path + "/values").tobytes())
    return b"".join(decode_binary_values(parts.values, n, fixed, base=base,
                                         field=path + "/values"))


# -- a Neuroglancer shard: its shard index ------------------------------------------------------


def _ng_shard(reader: Any, src: ByteSource, node: Node, base: str, payload: str = "") -> None:
    if node.path.startswith(f"{base}/minishards/") and "/chunks/" in node.path:
        try:
            chunk = int(node.key)
        except ValueError:
            return
        gzip = getattr(reader.spec, "data_encoding", "raw") == "gzip"
        if gzip:
            node.decoded = functools.partial(reader.__getitem__, chunk)  # un-gzipped
        if payload == "neuroglancer_skeletons" and node.start is not None:
            node.children = guarded(functools.partial(
                _skeleton, reader, chunk, node.path, None if gzip else node.start), node.path)
        return
    if node.path != f"{base}/shard_index":
        return
    n = int(reader.spec.num_minishards)
    size = _SHARD_ENTRY.size
    index_size = int(reader.index_size)
    path = node.path

    def make(lo: int, hi: int) -> list[Node]:
        raw = src.read_range(lo * size, hi * size)
        out = []
        for m in range(lo, hi):
            s, e = _SHARD_ENTRY.unpack_from(raw, (m - lo) * size)
            what = "empty" if s == e else f"index at [{index_size + s}, {index_size + e})"
            out.append(Node(str(m), f"{path}/{m}", f"minishard {m}: {what}", m * size,
                            (m + 1) * size, source=node.source))
        return out

    node.children = lambda: FuncChildren(n, make, offset_to_index=lambda off: off // size)


def _skeleton(reader: Any, chunk: int, path: str, at: int | None) -> Children:
    """A skeleton chunk's fields (``ng_skeleton.ksy``): in the file at ``at``, or, for a gzip
    chunk, in its decoded bytes (``d`` shows them)."""
    from ..generated.ng_skeleton import NgSkeleton
    from ..sources import BytesSource
    from .fields import show, trace

    data = reader[chunk]
    t = trace(NgSkeleton, BytesSource(data), max_read=len(data))

    def nodes(parent: Any) -> list[Node]:
        out = []
        for key, f in parent.children.items():
            n = len(f.children)
            value = (f"[{n}]" if all(k.isdigit() for k in f.children) else f"{{{n}}}") \
                if f.children else show(f.value)
            node = Node(key, path + f.path, value)
            if at is None:
                node.in_decoded = (f.start, f.end)
            else:
                node.start, node.end = at + f.start, at + f.end
            if f.children:
                node.children = functools.partial(lambda f: ListChildren(nodes(f)), f)
            out.append(node)
        return out

    kids = nodes(t.root)
    if t.error is not None:
        kids.append(Node("error", path, f"not a skeleton past byte {t.error_offset}: {t.error}"))
    return ListChildren(kids)


# -- Neuroglancer datasets: scales and shard files ----------------------------------------------


def dataset_parts(reader: Any) -> list[Node] | None:
    """A dataset's top level (its ``info``, then each scale's shard files), or None for a file."""
    if hasattr(reader, "indexes") and hasattr(reader, "spatial"):  # an annotation layer
        return _annotation_parts(reader)
    if not (hasattr(reader, "store") and hasattr(reader, "info") and hasattr(reader, "kv")):
        return None
    from .model import value_node

    out = [value_node("info", "/info", reader.info)]
    payload = str(reader.info.get("@type", "")) if isinstance(reader.info, dict) else ""
    scales = getattr(reader, "scales", None)
    parts = reader._all_kvs()  # (the prefix `map` gives its sections, the shards' mapping)
    if scales:
        for (prefix, kv), key in zip(parts, scales, strict=True):
            # the path is the prefix `map` gives the scale's sections ("" for a lone scale)
            out.append(Node(str(key), prefix.rstrip("/"), "scale: its shard files",
                            children=guarded(functools.partial(_shard_files, kv, prefix,
                                                               payload),
                                             f"/scales/{key}")))
    else:
        for prefix, kv in parts:
            files = _shard_files(kv, prefix, payload)
            if len(files) <= PAGE:
                out.extend(files.nodes(0, len(files)))
            else:  # thousands of shard files: pages of them
                out.append(Node("shard files", prefix.rstrip("/"), f"[{len(files)}]",
                                children=functools.partial(_same, files)))
    return out


def _annotation_parts(layer: Any) -> list[Node]:
    """An annotation layer: its ``info``; the annotations (decoded, from ``by_id``); each index
    (sharded: its shard files; unsharded: its files, decoded); each spatial level's cells."""
    import itertools

    from .model import value_node

    out = [value_node("info", "/info", layer.info)]
    if layer.by_id is not None:
        def annotations() -> Children:
            anns = list(itertools.islice(iter(layer), PAGE))
            return ListChildren([value_node(str(a.id), f"/annotations/{a.id}", a.to_dict())
                                 for a in anns])

        out.append(Node("annotations", "/annotations", f"the first {PAGE}, decoded",
                        children=guarded(annotations, "/annotations")))
    for level in layer.spatial:
        def cells(level: Any = level) -> Children:
            import numpy as np

            nodes = []
            for cell in itertools.islice(np.ndindex(*level.grid_shape), PAGE * 4):
                anns = layer.read_cell(level.level, cell)
                if anns:
                    name = "_".join(map(str, cell))
                    nodes.append(value_node(name, f"/{level.key}/{name}",
                                            [a.to_dict() for a in anns]))
                if len(nodes) >= PAGE:
                    break
            return ListChildren(nodes)

        out.append(Node(f"cells of {level.key}", f"/{level.key}/cells",
                        f"level {level.level}, grid {list(level.grid_shape)}, decoded",
                        children=guarded(cells, f"/{level.key}")))
    for key, index in layer.indexes():
        if getattr(index, "sharded", False):
            out.append(Node(key, key, "sharded index: its shard files", children=guarded(
                functools.partial(_shard_files, index.kv, f"{key}/"), f"/{key}")))
        else:
            out.append(Node(key, key, f"unsharded index: {len(index.names())} files"))
    return out


def _same(children: Children) -> Children:
    return children


def _shard_files(kv: Any, prefix: str, payload: str = "") -> Children:
    numbers = kv.shard_numbers()

    def make(lo: int, hi: int) -> list[Node]:
        out = []
        for number in numbers[lo:hi]:
            name = kv.spec.shard_name(number)
            shard = kv.shard(number)
            if shard is None:
                out.append(Node(name, f"{prefix}{name}", "(no such file)"))
                continue
            src = shard.source
            kids = file_nodes(shard, src, f"{prefix}{name}", payload)
            out.append(Node(name, f"{prefix}{name}", f"shard file, {src.size} bytes", 0,
                            src.size, source=src,
                            children=functools.partial(ListChildren, kids)))
        return out

    if len(numbers) <= PAGE:
        return ListChildren(make(0, len(numbers)))
    return FuncChildren(len(numbers), make)
