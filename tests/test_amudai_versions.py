"""Amudai shards written under another commit's protobuf are refused by name, never misread.

shardkit reads the protobuf of microsoft/amudai at commit 63c7da3. Earlier commits numbered
some fields differently without a version bump: ``StripeDirectory.record_offset`` was field 9
(``shard_position = 7`` since 2025-07-23) and ``SplitBlockBloomFilter.data`` was field 5 (field 6,
with ``hash_seed = 5``, since 2025-08-24). The shards here are our writer's, with those fields
added the way the earlier writers put them on the wire.
"""

from __future__ import annotations

import struct
from typing import Any

import pytest
from shardkit.generated import amudai_shard_pb2 as spb

import shardkit
import shardkit.writers.amudai as writer
from shardkit.errors import UnsupportedVersionError
from shardkit.formats.amudai.wire import FORMAT_COMMIT, check_known
from shardkit.writers.amudai import build_amudai, field

SCHEMA = [field("a", "Int64"), field("s", "String")]
STRIPES = [{"a": [1, 2, 3], "s": ["x", "y", None]}, {"a": [4, 5], "s": ["z", "w"]}]


def _fixed64(tag: int, value: int) -> bytes:
    return bytes([tag << 3 | 1]) + struct.pack("<Q", value)


def _patched(monkeypatch: pytest.MonkeyPatch, edit: Any) -> bytes:
    """A shard whose messages pass through ``edit`` before they are serialised."""
    real = writer._ser

    def ser(msg: Any) -> bytes:
        edit(msg)
        return real(msg)

    monkeypatch.setattr(writer, "_ser", ser)
    return build_amudai(SCHEMA, STRIPES)


def test_current_layout_reads() -> None:
    s = shardkit.open(build_amudai(SCHEMA, STRIPES), format="amudai")
    assert s.read_column("a") == [1, 2, 3, 4, 5]
    assert [st.shard_position for st in s.stripes] == [0, 3]
    assert FORMAT_COMMIT == "63c7da3"


def test_record_offset_field_9_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    def edit(msg: Any) -> None:
        if isinstance(msg, spb.StripeList):
            for sd, pos in zip(msg.stripes, (0, 3), strict=True):
                sd.ClearField("shard_position")
                if pos:  # proto3: a zero is not written
                    sd.MergeFromString(_fixed64(9, pos))

    s = shardkit.open(_patched(monkeypatch, edit), format="amudai")
    with pytest.raises(UnsupportedVersionError, match="record_offset") as info:
        s.read_column("a")
    assert info.value.field == "/stripe_list/stripes/1/StripeDirectory.9"
    assert "63c7da3" in str(info.value)
    problems = s.verify()
    assert [(p.check, p.field) for p in problems] == [
        ("unsupported", "/stripe_list/stripes/1/StripeDirectory.9")]


def test_bloom_filter_data_field_5_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    def edit(msg: Any) -> None:
        if isinstance(msg, spb.StripeFieldDescriptor) and msg.field.position_count == 3:
            sbbf = msg.field.membership_filters.sbbf
            sbbf.num_blocks = 1
            sbbf.hash_algorithm = "xxh3_64"
            sbbf.MergeFromString(b"\x2a\x20" + bytes(range(32)))  # data = 5, 32 bytes

    s = shardkit.open(_patched(monkeypatch, edit), format="amudai")
    with pytest.raises(UnsupportedVersionError, match=r"data = 5") as info:
        s.read_column("a")
    assert info.value.field.endswith(
        "/field/membership_filters/sbbf/SplitBlockBloomFilter.5")
    assert info.value.field.startswith("/stripes/0/field_list/")


def test_unknown_field_anywhere_is_refused() -> None:
    fd = spb.FieldDescriptor(position_count=3)
    fd.MergeFromString(_fixed64(15, 1))
    with pytest.raises(UnsupportedVersionError, match="FieldDescriptor field 15") as info:
        check_known(fd, offset=10, field="/x")
    assert info.value.offset == 10 and info.value.field == "/x/FieldDescriptor.15"
    check_known(spb.FieldDescriptor(position_count=3))  # the current layout passes
