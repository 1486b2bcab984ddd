"""Xet hashes (shardkit.hashing.xet): known-answer vectors from xet-core and FORMAT_NOTES."""

from __future__ import annotations

import hashlib

import pytest

from shardkit.hashing import xet as xh

P = xh.parse_display_hex
C1 = P("cfc5d07f6f03c29bbf424132963fe08d19a37d5757aaf520bf08119f05cd56d6")
C2 = P("c3e67584b5c4fc2a89837ec39e40f2c8a6bb0b2987ac94cd4b31e5fbdd210a72")
C3 = P("0d2beb91b9196929a5ddec9f6e306924ddf4a24268e3e59fd8464738d525af37")


def test_display_hex_swaps_each_word() -> None:
    raw = bytes.fromhex("16af3a84044b83d6") + bytes(range(24))
    assert xh.display_hex(raw).startswith("d6834b04843aaf16")
    assert xh.parse_display_hex(xh.display_hex(raw)) == raw
    with pytest.raises(ValueError):
        xh.display_hex(b"\0" * 31)
    with pytest.raises(ValueError):
        xh.parse_display_hex("00" * 31)


def test_keys_match_hashing_md_decimal_lists() -> None:
    assert list(xh.DATA_KEY[:3]) == [102, 151, 245]
    assert list(xh.INTERNAL_NODE_KEY[:3]) == [1, 126, 197]
    assert list(xh.VERIFICATION_KEY[:3]) == [127, 24, 87]


def test_chunk_hash() -> None:
    assert xh.display_hex(xh.chunk_hash(b"hello world\n")) == \
        "6899563fa6b6abb19b8ecdd9f662a6c9acfca9fd4ff9f513086ec6c5685193ab"


def test_single_chunk_xorb_and_file() -> None:
    assert xh.xorb_hash([(C1, 100)]) == C1
    assert xh.display_hex(xh.file_hash([(C1, 100)])) == \
        "8e16257caa3fe079d484d872a8975264b2ff683b0d6db9028cc7c0f968a45661"


def test_three_chunk_xorb_and_file() -> None:
    chunks = [(C1, 100), (C2, 200), (C3, 300)]
    assert xh.display_hex(xh.xorb_hash(chunks)) == \
        "71ec1275fca074724e2dd666921b3277c7cee603e4d025bcab2d4050015be2bc"
    assert xh.display_hex(xh.file_hash(chunks)) == \
        "54e55dccc6653c612bdb5576c5d3cb34bb31bc4e100248abccf4c908b3ef7715"


def test_empty_inputs() -> None:
    assert xh.aggregate([]) == bytes(32)
    assert xh.file_hash([]) == bytes(32)


def test_hello_txt_file_and_verification_hash() -> None:
    chunk = xh.chunk_hash(b"hello world\n")
    assert xh.display_hex(xh.file_hash([(chunk, 12)])) == \
        "a302d931b8763df0bfb9926b9ff26b11c2a77d5be8dde4ce1c8bb7202a6a8681"
    assert xh.display_hex(xh.verification_hash([chunk])) == \
        "d84ad4e9bba4ab4d3e7ecfb8c052e405dfa5829c57cca7e9b1160501366b3b76"


def test_sha256_display_convention() -> None:
    digest = hashlib.sha256(b"hello world\n").digest()
    stored = xh.parse_display_hex(digest.hex())
    assert stored[:8].hex() == "9b470f2f4f9048a9"
    assert xh.display_hex(stored) == digest.hex()


def test_large_aggregation_groups_and_keyed_hash() -> None:
    chunks = [(xh.chunk_hash(bytes([i]) * 10), 10 + i) for i in range(100)]
    root = xh.aggregate(chunks)
    assert len(root) == 32 and root != xh.aggregate(chunks[:-1])
    key = bytes(range(32))
    assert xh.keyed_chunk_hash(key, C1) == xh.blake3_keyed(key, C1) != C1
