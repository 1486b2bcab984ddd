"""Amudai verification: every record, block, dictionary, count and index."""

from __future__ import annotations

import itertools
import struct
import sys
from collections.abc import Callable, Iterator
from typing import Any

from ...errors import (
    ChecksumError,
    LayoutError,
    Problem,
    ShardkitError,
    UnsupportedVersionError,
)
from ._deps import np, spb
from ._host import ShardHost
from .blocks import (
    _MAX_TICKS,
    decode_binary_raw,
    split_block,
    ticks_to_datetime,
)
from .model import (
    _BYTES_TYPES,
    BUFFER_KINDS,
    HOPS_BUFFER,
    HOPS_STRIPE,
    HOPS_STRIPE_FIELD,
    MAX_BUFFER,
    AmudaiField,
    AmudaiIndex,
    AmudaiIndexArtifact,
    AmudaiStripe,
    DataRefInfo,
    HopLimitError,
    _dtype_of,
    _is_text,
    _lookup_issue,
)

_Attempt = Callable[[str, Callable[..., Any]], Any]  # verify's "run this check, note its error"


def _unreadable(exc: ShardkitError) -> bool:
    """A file could not be read (a :class:`~shardkit.remote.RemoteError`: network, server):
    the shard is unreadable, not unsound, so verify lets the error through instead of calling
    it a problem. (A RemoteError exists only once shardkit.remote is loaded; looking it up
    there keeps verifying local files from importing it.)"""
    remote = sys.modules.get(__name__.split(".")[0] + ".remote")
    return remote is not None and isinstance(exc, remote.RemoteError)


def _problem(exc: ShardkitError, check: str) -> Problem:
    """``exc`` as a problem: a ``checksum`` or ``hops`` one when it is such an error, else a
    ``check`` one; an error that means the file could not be read is raised again."""
    if _unreadable(exc):
        raise exc
    name = ("checksum" if isinstance(exc, ChecksumError) else
            "hops" if isinstance(exc, HopLimitError) else check)
    return Problem(name, exc.message, exc.offset, exc.field)


class AmudaiVerify(ShardHost):
    """The verify method of :class:`~shardkit.formats.amudai.AmudaiShard`."""

    # -- verification ---------------------------------------------------------------------------

    def verify(self, progress: Callable[[int, int], None] | None = None) -> list[Problem]:
        """Check every record, block, dictionary, count and index; return the problems found.

        Index descriptors (shard, stripe and field level) are checked too: their records'
        checksums, their schema ids, and every artifact's DataRef against its file's size.
        Artifacts that are Amudai shards are verified in turn (their problems' fields start
        with the artifact's path, offsets count in the artifact's file), as far as
        ``max_hops`` allows; a chain cut short by it is a ``hops`` problem.
        """
        problems: list[Problem] = []

        def attempt(check: str, fn: Callable[..., Any]) -> Any:
            try:
                return fn()
            except ShardkitError as exc:
                problems.append(_problem(exc, "unsupported" if isinstance(
                    exc, UnsupportedVersionError) else check))
                return None

        if attempt("schema", lambda: self.schema) is None:
            return problems
        self._verify_lookups(problems)
        attempt("url_list", lambda: self.urls)
        attempt("properties", lambda: self.properties)
        indexes: list[AmudaiIndex] = list(attempt("indexes", lambda: self.indexes) or ())
        stripes = attempt("stripe_list", lambda: self.stripes)
        if stripes is None:
            self._verify_indexes(indexes, problems)
            return problems
        self._verify_counts(stripes, problems)
        nodes = list(self.iter_fields())
        shard_counts: dict[int, int] = {}
        total = len(stripes) * (len(self.schema) + 1)
        done = 0
        for k, stripe in enumerate(stripes):
            indexes += self._verify_stripe_fields(attempt, k, nodes, shard_counts, problems)
            done += 1
            for top in self.schema:
                attempt("values", lambda k=k, t=top, c=stripe.record_count:
                        _StreamCheck(self).column(k, t, c))
                done += 1
                if progress:
                    progress(done, total)
        indexes += self._verify_shard_fields(attempt, nodes, shard_counts, problems)
        self._verify_indexes(indexes, problems)
        if progress:
            progress(total, total)
        return problems

    def _verify_stripe_fields(self, attempt: _Attempt, k: int, nodes: list[AmudaiField],
                              shard_counts: dict[int, int], problems: list[Problem]
                              ) -> list[AmudaiIndex]:
        """Stripe ``k``'s properties, indexes, field list, field descriptors (their position
        counts added to ``shard_counts``), field indexes and buffers; its indexes returned."""
        indexes: list[AmudaiIndex] = []
        attempt("stripe_properties", lambda k=k: self.stripe_properties(k))
        indexes += attempt("indexes", lambda k=k: self.stripe_indexes(k)) or ()
        refs = attempt("field_list", lambda k=k: self._stripe_field_list(k)) or []
        for sid, ref in enumerate(refs):
            if sid >= len(nodes) and not ref.empty:
                problems.append(Problem("field_list", f"stripe {k} field list entry {sid} "
                                        "is past the schema's ids", ref.start,
                                        f"/stripes/{k}/field_list/{sid}"))
        for node in nodes:
            sfd = attempt("descriptor", lambda k=k, n=node: self.stripe_field(k,
                                                                              n.schema_id))
            if sfd is not None:
                shard_counts[node.schema_id] = shard_counts.get(node.schema_id, 0) + \
                    sfd.field.position_count
                if sfd.field.HasField("indexes"):
                    indexes += attempt("indexes", lambda k=k, n=node, f=sfd.field:
                                       self._index_list(
                                           f.indexes,
                                           f"/stripes/{k}/field_list/{n.schema_id}",
                                           HOPS_STRIPE_FIELD)) or ()
                for buf in self._buffers_safe(sfd):
                    self._verify_buffer(buf, k, node, problems)
        return indexes

    def _verify_shard_fields(self, attempt: _Attempt, nodes: list[AmudaiField],
                             shard_counts: dict[int, int], problems: list[Problem]
                             ) -> list[AmudaiIndex]:
        """The shard's field descriptors: position counts against the stripes' sums; their
        indexes returned."""
        indexes: list[AmudaiIndex] = []
        for node in nodes:
            d = attempt("descriptor", lambda n=node: self.field_descriptor(n.schema_id))
            want = shard_counts.get(node.schema_id, 0)
            if d is not None and d.position_count != want:
                problems.append(Problem("count", f"shard descriptor of {node.path} says "
                                        f"{d.position_count} positions, its stripes {want}",
                                        None, f"/field_list/{node.schema_id}"))
            if d is not None and d.HasField("indexes"):
                indexes += attempt("indexes", lambda n=node, f=d: self._index_list(
                    f.indexes, f"/field_list/{n.schema_id}", HOPS_STRIPE)) or ()
        return indexes

    def _verify_lookups(self, problems: list[Problem]) -> None:
        """The schema's HashLookups (name -> child index) agree with the names (section 3)."""
        from ...generated import amudai_schema_fb as fb

        root = fb.Schema.GetRootAs(self._schema_fb, 0)
        todo: list[tuple[str, Any, list[Any]]] = []
        try:
            tops = [root.Fields(i).DataType() for i in range(root.FieldsLength())]
            todo.append(("/schema/field_lookup", root.FieldLookup(), tops))
            stack = [(dt, (dt.FieldName() or b"").decode("utf-8", "replace")) for dt in tops]
            while stack:  # the tree was checked (depth, ids) when self.schema was built
                dt, path = stack.pop()
                kids = [dt.Children(i) for i in range(dt.ChildrenLength())]
                todo.append((f"/schema/{path}/lookup", dt.Lookup(), kids))
                stack += [(k, f"{path}.{(k.FieldName() or b'').decode('utf-8', 'replace')}")
                          for k in kids]
        except (IndexError, struct.error, ValueError, TypeError, AttributeError) as exc:
            problems.append(Problem("lookup", f"schema name lookups unreadable: {exc}", None,
                                    "/schema"))
        for field, lookup, nodes in todo:
            if lookup is None:
                continue  # optional: readers may scan the names
            try:
                names = [n.FieldName() or b"" for n in nodes]
                issue = _lookup_issue([lookup.Buckets(i) for i in range(lookup.BucketsLength())],
                                      [lookup.Entries(i) for i in range(lookup.EntriesLength())],
                                      names)
            except (IndexError, struct.error, ValueError, TypeError, AttributeError) as exc:
                issue = f"unreadable: {exc}"
            if issue:
                problems.append(Problem("lookup", f"schema name lookup {issue}", None, field))

    def _verify_indexes(self, indexes: list[AmudaiIndex], problems: list[Problem]) -> None:
        """Schema ids in range; artifacts in bounds; nested shard artifacts verified."""
        count = getattr(self, "schema_id_count", 0)
        for index in indexes:
            for ids in index.indexed_fields:
                bad = [i for i in ids if i >= count]
                if bad or not ids:
                    problems.append(Problem("index", f"index {index.index_type!r} names schema "
                                            f"ids {list(ids)} (the schema has {count})", None,
                                            index.path + "/indexed_fields"))
            for art in index.artifacts:
                self._verify_artifact(art, problems)

    def _verify_artifact(self, art: AmudaiIndexArtifact, problems: list[Problem]) -> None:
        ref = art.data_ref
        try:
            self._hop(art.hops, art.path)
            src = self._blobs.locate(ref, art.path)
            if ref.end - ref.start < 28 or src.read_range(ref.start, ref.start + 4) != b"amud":
                return  # an opaque artifact: in bounds is all there is to check
            # a nested shard: verify it only when its deepest records are within max_hops
            self._hop(art.hops + HOPS_BUFFER, art.path)
            child = self.open_artifact(art)
        except ShardkitError as exc:
            problems.append(_problem(exc, "index"))
            return
        try:
            found = child.verify()
        except ShardkitError as exc:
            if _unreadable(exc):
                child.close()
                self._children.remove(child)
                raise
            found = [Problem("index", exc.message, exc.offset, exc.field)]
        try:
            for p in found:
                msg = p.message if p.message.startswith("in index artifact ") else \
                    f"in index artifact {art.path} ({art.name}): {p.message}"
                problems.append(Problem(
                    p.check, msg,
                    None if p.offset is None else ref.start + p.offset,
                    art.path + (p.field or "")))
        finally:
            self._children.remove(child)
            child.close()

    def _buffers_safe(self, sfd: spb.StripeFieldDescriptor) -> list[Any]:
        return [b for enc in sfd.encodings if enc.WhichOneof("kind") == "native"
                for b in enc.native.buffers]

    def _verify_counts(self, stripes: tuple[AmudaiStripe, ...], problems: list[Problem]
                       ) -> None:
        d = self.directory
        if d.stripe_count != len(stripes):
            problems.append(Problem("count", f"directory says {d.stripe_count} stripes, the "
                                    f"stripe list has {len(stripes)}", self.directory_ref.start,
                                    "/directory/stripe_count"))
        pos = 0
        for s in stripes:
            if s.shard_position != pos:
                problems.append(Problem("count", f"stripe {s.index} starts at record "
                                        f"{s.shard_position}, expected {pos}", None,
                                        f"/stripes/{s.index}/shard_position"))
            pos += s.record_count
        if pos != d.total_record_count:
            problems.append(Problem("count", f"directory says {d.total_record_count} records, "
                                    f"the stripes hold {pos}", self.directory_ref.start,
                                    "/directory/total_record_count"))
        for sid in range(len(self._shard_field_list_safe(problems))):
            if sid >= self.schema_id_count:
                problems.append(Problem("field_list", f"shard field list entry {sid} is past "
                                        f"schema_id_count {self.schema_id_count}", None,
                                        f"/field_list/{sid}"))

    def _shard_field_list_safe(self, problems: list[Problem]) -> list[DataRefInfo]:
        try:
            return self._shard_field_list
        except ShardkitError as exc:
            if _unreadable(exc):
                raise
            problems.append(Problem("field_list", exc.message, exc.offset, exc.field))
            return []

    def _verify_buffer(self, buf: spb.EncodedBuffer, k: int, node: AmudaiField,
                       problems: list[Problem]) -> None:
        kind = BUFFER_KINDS.get(buf.kind, str(buf.kind))
        field = f"/stripes/{k}/fields/{node.path}/{kind.lower()}"
        ref = DataRefInfo.of(buf.buffer)
        try:
            if buf.kind == spb.VALUE_DICTIONARY:
                self.value_dictionary(buf, field)
                if (ref.end - ref.start) % 64:
                    problems.append(Problem("alignment", f"value dictionary of "
                                            f"{ref.end - ref.start} bytes is not padded to 64",
                                            ref.start, field))
                return
            if not buf.HasField("block_map"):
                return
            mref = DataRefInfo.of(buf.block_map)
            if (mref.start - ref.start) % 16:
                problems.append(Problem("alignment", "block map does not start 16-aligned in "
                                        "its buffer", mref.start, field + "/block_map"))
            for i, (_, raw, base) in enumerate(self._blocks(buf, field)):
                if len(raw) % 8:
                    problems.append(Problem("alignment", f"block {i} is {len(raw)} bytes, not "
                                            "a multiple of 8", base, f"{field}/blocks/{i}"))
                split_block(raw, embedded_presence=buf.embedded_presence,
                            has_checksum=buf.block_checksums, base=base,
                            field=f"{field}/blocks/{i}", region=f"block {i} of {field}")
        except ShardkitError as exc:
            problems.append(_problem(exc, "buffer"))



class _StreamCheck:
    """The values pass of ``verify``, block by block: every block of every buffer decoded and
    dropped, so memory stays that of one block (and one value dictionary) whatever the
    stripe's size. It checks what reading the column checks: value and position counts,
    list offsets (from 0, never decreasing, across blocks), DateTime ranges, dictionary ids,
    fixed sizes and UTF-8."""

    def __init__(self, shard: Any) -> None:
        self.s = shard

    def column(self, k: int, node: AmudaiField, count: int) -> None:
        s = self.s
        field = f"/stripes/{k}/fields/{node.path}"
        sfd = s.stripe_field(k, node.schema_id)
        if sfd is None:
            return
        s._check_count(sfd, count, field)
        if sfd.field.HasField("constant_value"):
            s._constant(sfd, node, field)
            return
        bufs = s._buffers(sfd, field)
        if spb.PRESENCE in bufs:
            self.bits(bufs[spb.PRESENCE], count, field + "/presence")
        t = node.type
        if t == "Struct":
            for child in node.children:
                self.column(k, child, count)
            return
        if t in ("List", "Map"):
            if spb.OFFSETS not in bufs:
                raise LayoutError(f"{t} field without an OFFSETS buffer", field=field)
            total = self.offsets(bufs[spb.OFFSETS], count, field + "/offsets")
            want = 1 if t == "List" else 2
            if len(node.children) != want:
                raise LayoutError(f"{t} field with {len(node.children)} children (expected "
                                  f"{want})", field=field)
            for child in node.children:
                self.column(k, child, total)
            return
        if t == "FixedSizeList":
            if len(node.children) != 1 or node.fixed_size <= 0:
                raise LayoutError("FixedSizeList needs one child and a positive size",
                                  field=field)
            self.column(k, node.children[0], count * node.fixed_size)
            return
        self.leaf(bufs, node, count, field)

    def leaf(self, bufs: dict[int, Any], node: AmudaiField, count: int, field: str) -> None:
        """A column of values (not Struct, List, Map or FixedSizeList): its DATA buffer."""
        t = node.type
        if spb.DATA not in bufs:
            raise LayoutError(f"{t} field without a DATA buffer", field=field)
        if t == "Boolean":
            self.bits(bufs[spb.DATA], count, field + "/data")
            return
        dtype = _dtype_of(node)
        if dtype is not None:
            self.numeric(bufs[spb.DATA], dtype, count, field + "/data", t == "DateTime")
            return
        if t in _BYTES_TYPES:
            self.binary(bufs, node, count, field)
            return
        raise UnsupportedVersionError(f"reading {t} columns is not supported", field=field)

    def _values(self, buf: spb.EncodedBuffer, dtype: np.dtype, field: str
                ) -> Iterator[np.ndarray]:
        """The values of a fixed-width block stream, by block or by run of blocks (C)."""
        for values, _ in self.s._numeric_pieces(buf, dtype, field):
            yield values

    def numeric(self, buf: spb.EncodedBuffer, dtype: np.dtype, count: int, field: str,
                ticks: bool = False) -> int:
        seen = 0
        for values in self._values(buf, dtype, field):
            seen += len(values)
            if ticks and len(values):
                hi = int(values.max())
                if hi > _MAX_TICKS:
                    ticks_to_datetime(hi, field=field)
        if seen != count:
            raise LayoutError(f"DATA buffer holds {seen} values, the stripe {count}",
                              offset=buf.buffer.range.start, field=field)
        return seen

    def bits(self, buf: spb.EncodedBuffer, count: int, field: str) -> None:
        have = sum(8 * len(v) for v in self._values(buf, np.dtype(np.uint8), field))
        if have < count:
            raise LayoutError(f"bit buffer holds {have} bits for {count} positions",
                              offset=buf.buffer.range.start, field=field)

    def offsets(self, buf: spb.EncodedBuffer, count: int, field: str) -> int:
        seen = 0
        last = 0
        start = buf.buffer.range.start
        for values in self._values(buf, np.dtype("<u8"), field):
            if not len(values):
                continue
            first = int(values[0])
            if (seen == 0 and first != 0) or first < last or bool(
                    np.any(np.diff(values.astype(np.int64)) < 0)):
                raise LayoutError("list offsets do not increase from 0", offset=start,
                                  field=field)
            last = int(values[-1])
            seen += len(values)
        if seen != count + 1:
            raise LayoutError(f"OFFSETS buffer holds {seen} values for {count} positions "
                              f"(expected {count + 1})", offset=start, field=field)
        if last > MAX_BUFFER:
            raise LayoutError("list offsets do not increase from 0", offset=start, field=field)
        return last

    def binary(self, bufs: dict[int, Any], node: AmudaiField, count: int, field: str) -> None:
        s = self.s
        if spb.VALUE_DICTIONARY in bufs:
            entries, _ = s.value_dictionary(bufs[spb.VALUE_DICTIONARY], field + "/dictionary")
            seen = 0
            for ids in self._values(bufs[spb.DATA], np.dtype("<u4"), field + "/data"):
                seen += len(ids)
                if len(ids) and int(ids.max()) >= len(entries):
                    raise LayoutError(f"dictionary id {int(ids.max())} of {len(entries)} "
                                      "entries", field=field + "/data")
            if seen != count:
                raise LayoutError(f"{seen} dictionary ids for {count} positions",
                                  field=field + "/data")
            if _is_text(node):
                self._utf8(entries, None, field)
            return
        fixed = node.fixed_size if node.type in ("FixedSizeBinary", "Guid") else 0
        if node.type == "Guid":
            fixed = fixed or 16
        seen = 0
        text = _is_text(node)
        for n, parts, valid, base, where in s._block_parts(bufs[spb.DATA], field + "/data"):
            data, offs = decode_binary_raw(parts.values, n, fixed,
                                           base=base + parts.values_offset,
                                           field=where + "/values")
            seen += len(offs) - 1
            if text and not data.isascii():  # ASCII is UTF-8 whatever the slicing
                bounds = offs.tolist()
                self._utf8([data[a:b] for a, b in itertools.pairwise(bounds)], valid, field)
        if seen != count:
            raise LayoutError(f"DATA buffer holds {seen} values, expected {count}",
                              field=field + "/data")

    @staticmethod
    def _utf8(items: list[Any], valid: np.ndarray | None, field: str) -> None:
        try:
            for i, v in enumerate(items):
                if valid is None or valid[i]:
                    bytes(v).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise LayoutError(f"String value is not UTF-8: {exc}", field=field) from exc
