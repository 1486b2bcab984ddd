"""Xet MDB verify: what it could not check is reported (notes), --strict fails on it, and
every bit flipped in a covered region of a real shard is reported."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from shardkit.cli import main
from shardkit.errors import ShardkitError
from shardkit.formats.xet_mdb import (
    RECORD_SIZE,
    MdbShard,
    VerifyReport,
)
from shardkit.sources import BytesSource, FileSource

DATA = Path(__file__).parent / "data" / "mdb"
REAL = sorted(DATA.glob("real/*/*.mdb"))
DEDUP = DATA / "hf_server_global_dedup" / "gpt2-64-8bits.tflite.shard"
# every xorb its files use is in the shard itself
WHOLE = DATA / "real" / "session" / (
    "16005963ac6b5c538417eab4c9110a4d28da2d8595112b53bfacd0d0d768259c.mdb")
# 2 files whose 3 terms use 2 xorbs held by other shards
PARTIAL = DATA / "real" / "session" / (
    "278bd90ec34efd7735013b5e701b2cd49a2c05677a2bcda865dc968e1cd69a22.mdb")


def _open(data: bytes) -> MdbShard:
    return MdbShard(BytesSource(data))


def test_files_with_xorbs_elsewhere_are_counted_not_passed() -> None:
    s = MdbShard(FileSource(PARTIAL))
    report = s.verify()
    assert isinstance(report, VerifyReport) and report == []
    [note] = report.notes
    assert note.check == "unverifiable_files"
    assert note.message.startswith("2 file(s) not verifiable here: their xorbs are in other "
                                   "shards (3 term(s) use 2 xorb(s)")
    strict = MdbShard(FileSource(PARTIAL)).verify(strict=True)
    assert [p.check for p in strict] == ["unverifiable_files"] and strict.notes == []
    # with the shards that describe those xorbs, everything is checked
    others = [MdbShard(FileSource(p)) for p in REAL if p != PARTIAL]
    held = {bytes(x.hash) for o in others for x in o.xorbs}
    used = {bytes(t.xorb_hash) for f in s.files for t in f.terms}
    assert used <= held | {bytes(x.hash) for x in s.xorbs}
    full = MdbShard(FileSource(PARTIAL)).verify(other_shards=others, strict=True)
    assert full == [] and full.notes == []


@pytest.mark.parametrize("path", REAL, ids=lambda p: f"{p.parent.name}-{p.name[:8]}")
def test_real_samples_are_sound_and_notes_are_exact(path: Path) -> None:
    s = MdbShard(FileSource(path))
    report = s.verify(name_check=True)
    assert report == []
    held = {bytes(x.hash) for x in s.xorbs}
    missing = [f for f in s.files if any(bytes(t.xorb_hash) not in held for t in f.terms)]
    notes = {n.check: n for n in report.notes}
    assert set(notes) == ({"unverifiable_files"} if missing else set())
    if missing:
        assert notes["unverifiable_files"].message.startswith(f"{len(missing)} file(s) ")


def test_term_xorb_hash_flips_are_never_silent() -> None:
    # every bit of every term's xorb hash: a note (the xorb is now "elsewhere"), and a problem
    # under strict; before, all of these flips passed verify() silently
    data = WHOLE.read_bytes()
    s = _open(data)
    assert s.verify(strict=True) == []
    positions = [f.offset + RECORD_SIZE * (1 + i) for f in s.files for i in range(len(f.terms))]
    assert positions
    for pos in positions:
        for bit in range(0, 256, 7):
            b = bytearray(data)
            b[pos + bit // 8] ^= 1 << (bit % 8)
            report = _open(bytes(b)).verify()
            assert [n.check for n in report.notes] == ["unverifiable_files"]
            assert report.notes[0].message.startswith("1 file(s) not verifiable here")
            assert _open(bytes(b)).verify(strict=True) != []


def test_keyed_shards_say_which_hashes_were_not_recomputed() -> None:
    s = MdbShard(FileSource(DEDUP))
    report = s.verify()
    assert report == []
    [note] = report.notes
    assert note.check == "keyed_hashes" and f"the hashes of {len(s.xorbs)} xorb(s)" in note.message
    assert note.offset == s.footer.footer_offset + 72  # chunk_hash_hmac_key
    assert note.field == "/footer/chunk_hash_hmac_key"
    assert [p.check for p in MdbShard(FileSource(DEDUP)).verify(strict=True)] == ["keyed_hashes"]


# regions no check covers: the metadata records' sha256 (the file's content is not in a shard)
# and the footer's creation timestamp and key expiry (any value is valid)
def _uncovered(s: MdbShard) -> set[int]:
    out: set[int] = set()
    for f in s.files:
        if f.sha256 is not None:
            p = f.offset + RECORD_SIZE * (f.num_records - 1)
            out.update(range(p, p + 32))
    if s.footer is not None:
        fo = s.footer.footer_offset
        out.update(range(fo + 104, fo + 120))
    return out


@pytest.mark.parametrize("path", [WHOLE, REAL[-1]], ids=["session", "xorb_metadata"])
def test_every_bit_class_in_every_covered_region_is_reported(path: Path) -> None:
    """Flip bit (offset % 8) of every byte: each flip is an open error, a problem, or (strict)
    a check that could not be made; none passes except in the regions listed above."""
    data = path.read_bytes()
    s = _open(data)
    uncovered = _uncovered(s)
    for x in s.xorbs:  # num_bytes_on_disk: xet-core leaves it 0, nothing to compare it with
        uncovered.update(range(x.offset + 44, x.offset + 48))
    missed = []
    for i in range(len(data)):
        b = bytearray(data)
        b[i] ^= 1 << (i % 8)
        try:
            report = _open(bytes(b)).verify(strict=True)
        except ShardkitError:
            continue
        if not report:
            missed.append(i)
    assert set(missed) <= uncovered, [i for i in missed if i not in uncovered][:20]
    covered = len(data) - len(uncovered)
    assert covered > 0.8 * len(data)


def test_name_check_says_when_it_was_skipped(tmp_path: Path, capsys) -> None:
    renamed = tmp_path / "shard.mdb"
    shutil.copy(WHOLE, renamed)
    report = MdbShard(FileSource(renamed)).verify(name_check=True)
    assert report == [] and [n.check for n in report.notes] == ["name"]
    assert "name check skipped" in report.notes[0].message
    assert main(["verify", "--name-check", str(renamed)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("NOTE name: name check skipped: the file name 'shard.mdb'")
    assert "OK (Hugging Face Xet MDB shard), 1 kind(s) of check not made" in out
    assert main(["verify", "--name-check", "--json", str(renamed)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is True and [n["check"] for n in data["notes"]] == ["name"]
    assert main(["verify", "--name-check", "--strict", str(renamed)]) == 1
    assert "PROBLEM name: name check skipped" in capsys.readouterr().out
    # a real <hash>.mdb name is checked, and a wrong one is a problem
    assert MdbShard(FileSource(WHOLE)).verify(name_check=True).notes == []
    wrong = tmp_path / ("0" * 64 + ".mdb")
    shutil.copy(WHOLE, wrong)
    assert [p.check for p in MdbShard(FileSource(wrong)).verify(name_check=True)] == ["name"]


def test_cli_strict_on_partial_shard_and_on_other_formats(capsys) -> None:
    assert main(["verify", str(PARTIAL)]) == 0
    out = capsys.readouterr().out
    assert "NOTE unverifiable_files: 2 file(s) not verifiable here" in out
    assert main(["verify", "--strict", str(PARTIAL)]) == 1
    assert "1 problem(s) found" in capsys.readouterr().out
    swh = Path(__file__).parent / "data" / "swh" / "tiny.shard"
    assert main(["verify", "--strict", str(swh)]) == 2  # refused where it does not apply
    assert "--strict not supported" in capsys.readouterr().err


def test_reserved_words_and_unknown_flags_are_problems() -> None:
    data = WHOLE.read_bytes()
    s = _open(data)
    x, f = s.xorbs[0], next(f for f in s.files if f.terms)
    cases = {
        x.offset + RECORD_SIZE + 44: ("reserved", f"/xorb_info/blocks/{x.record_index}"
                                                  "/chunks/0/reserved"),
        x.offset + RECORD_SIZE + 40: ("xorb", f"/xorb_info/blocks/{x.record_index}"
                                              "/chunks/0/flags"),
        x.offset + 32: ("xorb", f"/xorb_info/blocks/{x.record_index}/flags"),
        f.offset + 40: ("reserved", f"/file_info/blocks/{f.record_index}/reserved"),
        f.offset + RECORD_SIZE + 32: ("term", f"/file_info/blocks/{f.record_index}/terms/0/"
                                              "flags"),
        s.xorb_info_offset - 8: ("reserved", "/file_info/bookend"),
        s.xorb_info_end - 1: ("reserved", "/xorb_info/bookend"),
    }
    for pos, (check, field) in cases.items():
        b = bytearray(data)
        b[pos] ^= 0x01
        found = [(p.check, p.field) for p in _open(bytes(b)).verify()]
        assert (check, field) in found, (pos, found)
