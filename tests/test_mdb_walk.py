"""The two record sections of an MDB shard (file info, xorb info) are walked by one method:
the same checks, the same errors, each naming its section's block and count field."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from shardkit.errors import TruncatedError
from shardkit.formats.xet_mdb.reader import MdbShard
from shardkit.sources import BytesSource

DATA = Path(__file__).parent / "data" / "mdb" / "real"
SESSION = (DATA / "session" /
           "b04ac8152506ea5af6b90a7378a3d35c46cbef373a597241937795e323cea8f1.mdb").read_bytes()
UPLOAD = (DATA / "upload_body" /
          "c2a7f4f3dcab2f5c0038b17845ec6b3db4e6478a53b442f1dd8a40354f82e009.mdb").read_bytes()
XORB_INFO = 912  # where SESSION's xorb info section starts
FOOTER = len(SESSION) - 200


def _patched(data: bytes, offset: int, new: bytes) -> bytes:
    return data[:offset] + new + data[offset + len(new):]


def test_both_sections_go_through_one_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[str, int, int]] = []
    walk = MdbShard._walk_section

    def spy(self: MdbShard, section, pos: int, limit: int):  # type: ignore[no-untyped-def]
        starts, end = walk(self, section, pos, limit)
        seen.append((section.kind, pos, len(starts)))
        return starts, end

    monkeypatch.setattr(MdbShard, "_walk_section", spy)
    shard = MdbShard(BytesSource(SESSION))
    assert [len(shard.files), len(shard.xorbs)] == [seen[0][2], seen[1][2]]
    assert [(kind, pos) for kind, pos, _ in seen] == [("file", 48), ("xorb", XORB_INFO)]


@pytest.mark.parametrize(("offset", "message", "field"), [
    (48 + 36, "truncated: file block 0 declares 4294967295 terms (8589934592 records, "
              "412316860416 bytes) but {left} bytes remain before the end of the sections",
     "/file_info/blocks/0/num_terms"),
    (XORB_INFO + 36, "truncated: xorb block 0 declares 4294967295 chunks (206158430208 bytes) "
                     "but {left} bytes remain before the end of the sections",
     "/xorb_info/blocks/0/num_chunks"),
])
def test_a_count_past_the_sections_names_its_section(offset: int, message: str,
                                                     field: str) -> None:
    shard = MdbShard(BytesSource(_patched(SESSION, offset, struct.pack("<I", 0xFFFF_FFFF))))
    with pytest.raises(TruncatedError) as e:
        _ = shard.files
    left = FOOTER - (offset - 36)
    assert str(e.value).startswith(message.format(left=left))
    assert (e.value.offset, e.value.field) == (offset, field)


def test_no_bookend_names_the_block_where_it_should_be() -> None:
    shard = MdbShard(BytesSource(UPLOAD[:-48]))
    with pytest.raises(TruncatedError) as e:
        _ = shard.files
    assert e.value.field == "/xorb_info/blocks/1"
    assert str(e.value).startswith("truncated: the xorb info section has no bookend: block 1 at ")
