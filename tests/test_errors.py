"""shardkit.errors: messages with their location, and Problem as an immutable value."""

from __future__ import annotations

import copy
import pickle

import pytest

from shardkit.errors import EntryNotFoundError, Problem, TruncatedError


def test_problem_is_an_immutable_value():
    p = Problem("slot", "key is in slot 0 but hashes to slot 7", offset=88, field="/index/0")
    same = Problem("slot", "key is in slot 0 but hashes to slot 7", 88, "/index/0")
    assert p == same and hash(p) == hash(same) and len({p, same}) == 1
    assert p != Problem("slot", "key is in slot 0 but hashes to slot 7", 88)
    assert p != ("slot", "key is in slot 0 but hashes to slot 7", 88, "/index/0")
    with pytest.raises(AttributeError):
        p.check = "other"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        p.extra = 1  # type: ignore[attr-defined]
    assert pickle.loads(pickle.dumps(p)) == p  # problems cross process boundaries
    assert copy.deepcopy(p) == p
    assert str(p) == "slot: key is in slot 0 but hashes to slot 7 (at byte 88, field /index/0)"
    assert repr(p) == ("Problem(check='slot', message='key is in slot 0 but hashes to slot 7', "
                       "offset=88, field='/index/0')")
    assert p.to_dict() == {"check": "slot", "message": "key is in slot 0 but hashes to slot 7",
                           "offset": 88, "field": "/index/0"}
    match p:
        case Problem("slot", message, offset):
            assert (message, offset) == ("key is in slot 0 but hashes to slot 7", 88)
        case _:
            pytest.fail("Problem does not match positionally")


def test_error_messages_name_offset_and_field():
    err = TruncatedError("truncated: needs 8 bytes, 6 remain", needed=8, available=6,
                         offset=80, field="/header/ofs_hash")
    assert str(err) == ("truncated: needs 8 bytes, 6 remain "
                        "(at byte 80, field /header/ofs_hash)")
    assert isinstance(err, EOFError)
    missing = EntryNotFoundError(b"\x01\x02")
    assert str(missing) == "key not found: 0102"  # not KeyError's repr of the message
    assert isinstance(missing, KeyError)
