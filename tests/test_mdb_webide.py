"""Xet MDB in the Web IDE's parser: the deep fields a full shard has, read alike in JS and Python.

The FORMATS row in test_webide_parity.py compares every sample; it can only require what every
variant holds. This checks the deep paths on a session shard (every table, verification and
metadata-ext records) and that a bad tag fails in both runtimes.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_webide_parity import FORMATS, covers, diff, py_dump, run_js_dump
from test_webide_parity import node as node  # the fixture skipping when node is missing

pytestmark = [pytest.mark.node, pytest.mark.usefixtures("node")]

SESSION = (Path(__file__).parent / "data" / "mdb" / "real" / "session" /
           "b04ac8152506ea5af6b90a7378a3d35c46cbef373a597241937795e323cea8f1.mdb")
FMT = next(f for f in FORMATS if f.js_class == "XetMdbShard")
DEEP = (
    "fileInfo/blocks/*/terms/*/xorbHash",
    "fileInfo/blocks/*/terms/*/chunkIndexEnd",
    "fileInfo/blocks/*/verificationEntries/*/rangeHash",
    "fileInfo/blocks/*/metadataExt/sha256",
    "xorbInfo/blocks/*/chunks/*/chunkHash",
    "xorbInfo/blocks/*/chunks/*/flags",
    "footer/chunkHashHmacKey",
    "footer/keyExpiry",
    "footer/ofsFooter",
    "fileLookup/entries/*/idxRecord",
    "xorbLookup/entries/*/truncatedHash",
    "chunkLookup/entries/*/idxChunk",
)


def test_session_shard_deep_fields() -> None:
    py = py_dump(FMT, SESSION)
    js = run_js_dump(FMT.js_class, [SESSION])[str(SESSION)]
    for path in DEEP:
        assert covers(py, path.split("/")), path
        assert covers(js, path.split("/")), path
    assert diff(py, js) == []
    assert js["footer"]["ofsFooter"] == 3448
    assert len(js["chunkLookup"]["entries"]) == 37


def test_bad_tag_fails_in_both(tmp_path: Path) -> None:
    bad = tmp_path / "bad.mdb"
    data = bytearray(SESSION.read_bytes())
    data[0] ^= 0xFF
    bad.write_bytes(bytes(data))
    py = py_dump(FMT, bad)
    js = run_js_dump(FMT.js_class, [bad])[str(bad)]
    assert py["error"].startswith("ValidationNotEqualError")
    assert js["error"].startswith("ValidationNotEqualError")


def test_truncated_hashes_are_exact_as_raw_bytes() -> None:
    """truncatedHashRaw holds bytes 0..8 of the hash each lookup entry points at, exactly,
    where truncatedHash (a u64 above 2**53) arrives rounded in JavaScript."""
    py = py_dump(FMT, SESSION)
    js = run_js_dump(FMT.js_class, [SESSION])[str(SESSION)]
    assert diff(py, js) == []
    for table, entries_py in (("fileLookup", py["fileLookup"]["entries"]),
                              ("xorbLookup", py["xorbLookup"]["entries"]),
                              ("chunkLookup", py["chunkLookup"]["entries"])):
        entries_js = js[table]["entries"]
        assert len(entries_js) == len(entries_py) > 0
        for e_py, e_js in zip(entries_py, entries_js, strict=True):
            assert e_js["truncatedHashRaw"] == e_py["truncatedHash"].to_bytes(8, "little").hex()
    rounded = [e for e in js["chunkLookup"]["entries"]
               if int.from_bytes(bytes.fromhex(e["truncatedHashRaw"]), "little") > 2**53]
    assert rounded and any(
        e["truncatedHash"] != int.from_bytes(bytes.fromhex(e["truncatedHashRaw"]), "little")
        for e in rounded)
    file_hashes = {b["fileHash"][:16] for b in js["fileInfo"]["blocks"] if not b["isBookend"]}
    assert {e["truncatedHashRaw"] for e in js["fileLookup"]["entries"]} == file_hashes
    xorb_hashes = {b["xorbHash"][:16] for b in js["xorbInfo"]["blocks"] if not b["isBookend"]}
    assert {e["truncatedHashRaw"] for e in js["xorbLookup"]["entries"]} == xorb_hashes
    chunk_hashes = {c["chunkHash"][:16] for b in js["xorbInfo"]["blocks"]
                    for c in (b.get("chunks") or [])}
    assert {e["truncatedHashRaw"] for e in js["chunkLookup"]["entries"]} <= chunk_hashes
