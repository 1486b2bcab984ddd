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

from ...errors import LimitExceededError

__all__ = ["MAX_ITEMS", "WALK_FROM", "check_items"]

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
