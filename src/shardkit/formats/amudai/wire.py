"""A bound on what a protobuf record may make the decoder build, checked before it parses.

The protobuf runtime builds one object per message on the wire: an empty sub-message costs two
bytes there and about 80 bytes of memory, so a 16 MiB record of them would take ~700 MiB.
:func:`check_items` walks the wire format with the message's descriptor (so it knows which
fields are sub-messages), counting messages and repeated elements, and stops as soon as the
count passes the cap: the walk costs at most ``cap`` steps, whatever the record's size. The
reader walks only records of ``WALK_FROM`` bytes or more.
"""

from __future__ import annotations

from typing import Any

from ...errors import LimitExceededError, UnsupportedVersionError

__all__ = ["FORMAT_COMMIT", "MAX_ITEMS", "WALK_FROM", "check_items", "check_known",
           "directory_refs"]

#: Most messages and repeated elements one metadata record may hold.
MAX_ITEMS = 250_000
#: Records smaller than this are not walked: even all empty sub-messages, they stay under
#: ~50 MiB of decoded objects.
WALK_FROM = 1 << 20

_MESSAGE = 11  # FieldDescriptor.TYPE_MESSAGE


def _varint(buf: bytes | memoryview, pos: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= end or shift > 63:
            raise ValueError("varint runs past its message")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


def check_items(raw: bytes | memoryview, descriptor: Any, *, cap: int = MAX_ITEMS,
                max_depth: int = 64, offset: int | None = None, field: str | None = None
                ) -> int:
    """Count the messages and elements ``raw`` (a ``descriptor`` message) holds.

    Raises:
        LimitExceededError: More than ``cap`` items, or sub-messages nested deeper than
            ``max_depth``. Malformed wire data is left for the protobuf parser to report.
    """
    raw = bytes(raw)  # indexing bytes is the fastest
    count = 0
    stack: list[tuple[int, int, Any, int]] = [(0, len(raw), descriptor, 0)]
    while stack:
        pos, end, desc, depth = stack.pop()
        if depth > max_depth:
            raise LimitExceededError(f"protobuf messages nested deeper than {max_depth} levels",
                                     offset=offset, field=field)
        fields = desc.fields_by_number
        try:
            while pos < end:
                key = raw[pos]
                if key < 0x80:
                    pos += 1
                else:
                    key, pos = _varint(raw, pos, end)
                wire, number = key & 7, key >> 3
                count += 1
                if count > cap:
                    raise LimitExceededError(
                        f"{desc.name} record holds more than {cap} messages and repeated "
                        "elements", offset=offset, field=field)
                if wire == 0:
                    _, pos = _varint(raw, pos, end)
                elif wire == 1:
                    pos += 8
                elif wire == 5:
                    pos += 4
                elif wire == 2:
                    if pos < end and raw[pos] < 0x80:
                        length = raw[pos]
                        pos += 1
                    else:
                        length, pos = _varint(raw, pos, end)
                    fd = fields.get(number)
                    if fd is not None and fd.type == _MESSAGE and pos + length <= end:
                        stack.append((pos, pos + length, fd.message_type, depth + 1))
                    pos += length
                else:
                    return count  # groups or garbage: the parser says what is wrong
        except ValueError:
            return count
    return count


#: The format read is the protobuf of microsoft/amudai at commit 63c7da3 (Dec 2025), the
#: repository's last public state. Its messages changed several times in mid-2025 without a
#: version bump; fields of the earlier layouts that a parse under 63c7da3's messages leaves
#: unknown (a tag it lacks, or a tag whose wire type changed) are named here, by
#: (message, tag, wire type), so that a shard written under another commit is refused
#: by name instead of read into wrong values.
FORMAT_COMMIT = "63c7da3"
_RETIRED: dict[tuple[str, int, int | None], str] = {
    ("ShardDirectory", 11, None): "stored_index_size (before 2025-07-23)",
    ("ShardDirectory", 12, None): "plain_data_size (before 2025-07-23)",
    ("StripeDirectory", 8, None): "plain_data_size (before 2025-07-23)",
    ("StripeDirectory", 9, None): "record_offset = 9 (before 2025-07-23; since then "
                                  "shard_position = 7)",
    ("SplitBlockBloomFilter", 5, 2): "data = 5 (before 2025-08-24; since then data = 6 and "
                                     "hash_seed = 5)",
    ("FieldDescriptor", 5, None): "true_count = 5 (before 2025-06-15) or nan_count = 5 "
                                  "(before 2025-06-25)",
    ("FieldDescriptor", 6, 1): "nan_count = 6 (before 2025-06-15; since then range_stats = 6)",
    ("CardinalityInfo", 1, 2): "FieldDescriptor.range_stats = 7 (before 2025-06-15; since then "
                               "cardinality = 7)",
    ("FieldDescriptor", 11, None): "properties = 11 (before 2025-06-15)",
    ("FieldDescriptor", 42, None): "stored_index_size = 42 (before 2025-07-13)",
    ("FieldDescriptor", 43, None): "plain_data_size = 43 (before 2025-07-13)",
}
_WIRE_NAMES = {0: "varint", 1: "fixed64", 2: "length-delimited", 5: "fixed32"}


def check_known(msg: Any, *, offset: int | None = None, field: str | None = None,
                max_depth: int = 64) -> None:
    """Refuse a parsed message holding fields that 63c7da3's protobuf does not define.

    Raises:
        UnsupportedVersionError: naming the message, the tag and, for the fields of
            earlier commits' layouts, what the tag meant there.
    """
    from google.protobuf import unknown_fields

    stack: list[tuple[Any, str, int]] = [(msg, field or "", 0)]
    while stack:
        m, path, depth = stack.pop()
        if depth > max_depth:
            return  # the decoder's own depth limit reports this
        # the set iterates through __getitem__ (the old protocol), which mypy does not count
        unknown = list(unknown_fields.UnknownFieldSet(m))  # type: ignore[call-overload]  # see the note above
        if unknown:
            u = unknown[0]
            name = m.DESCRIPTOR.name
            retired = (_RETIRED.get((name, u.field_number, u.wire_type))
                       or _RETIRED.get((name, u.field_number, None)))
            what = (f"field {u.field_number} ({retired})" if retired else
                    f"field {u.field_number} ({_WIRE_NAMES.get(u.wire_type, 'wire type ')}"
                    f"{'' if u.wire_type in _WIRE_NAMES else u.wire_type})")
            raise UnsupportedVersionError(
                f"{name} {what} is not in the Amudai protobuf of commit {FORMAT_COMMIT}, the "
                "format shardkit reads: the shard was written under another commit's "
                "protobuf", offset=offset, field=f"{path}/{name}.{u.field_number}")
        for fd, value in m.ListFields():
            if fd.message_type is None:
                continue
            sub = f"{path}/{fd.name}"
            if fd.is_repeated:
                if fd.message_type.GetOptions().map_entry:
                    continue
                stack.extend((v, f"{sub}/{i}", depth + 1) for i, v in enumerate(value))
            else:
                stack.append((value, sub, depth + 1))


#: ShardDirectory's fields (63c7da3): 1-6 DataRef messages, 7-10 fixed64.
_DIRECTORY_REFS = ("schema_ref", "properties_ref", "field_list_ref", "stripe_list_ref",
                   "url_list_ref", "indexes_ref")


def _strict_varint(buf: bytes, pos: int, end: int) -> tuple[int, int] | None:
    value = shift = 0
    while pos < end and shift < 64:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return (value, pos) if value < 1 << 64 else None
        shift += 7
    return None


def _simple_data_ref(buf: bytes, pos: int, end: int) -> bool:
    """A DataRef (``string url = 1``, ``UInt64Range range = 2`` of two fixed64) made only of
    fields that message defines, with their wire types, and UTF-8 urls."""
    while pos < end:
        got = _strict_varint(buf, pos, end)
        if got is None:
            return False
        key, pos = got
        if key not in (0x0A, 0x12):  # url, range: length-delimited
            return False
        got = _strict_varint(buf, pos, end)
        if got is None or got[0] > end - got[1]:
            return False
        length, pos = got
        stop = pos + length
        if key == 0x0A:
            try:
                buf[pos:stop].decode("utf-8")
            except UnicodeDecodeError:
                return False
        else:
            p = pos
            while p < stop:  # start = 1, end = 2: fixed64 each
                if buf[p] not in (0x09, 0x11) or stop - p < 9:
                    return False
                p += 9
        pos = stop
    return True


def directory_refs(payload: bytes) -> set[str] | None:
    """The DataRef fields a ShardDirectory payload sets, read without the protobuf runtime;
    ``None`` unless every field on the wire is one 63c7da3's ShardDirectory defines, with
    its wire type, and well formed (then the protobuf parser, which names what is wrong,
    reads it instead). Opening a shard needs only this; the message itself is parsed on
    first use."""
    buf = bytes(payload)
    pos, end = 0, len(buf)
    found: set[str] = set()
    while pos < end:
        got = _strict_varint(buf, pos, end)
        if got is None:
            return None
        key, pos = got
        number, wire = key >> 3, key & 7
        if 1 <= number <= 6 and wire == 2:
            got = _strict_varint(buf, pos, end)
            if got is None or got[0] > end - got[1]:
                return None
            length, pos = got
            if not _simple_data_ref(buf, pos, pos + length):
                return None
            found.add(_DIRECTORY_REFS[number - 1])
            pos += length
        elif 7 <= number <= 10 and wire == 1:
            if end - pos < 8:
                return None
            pos += 8
        else:
            return None
    return found
