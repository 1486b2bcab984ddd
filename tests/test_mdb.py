"""Xet MDB shards: the reader against the manifests of real hf-xet and Hugging Face shards."""

from __future__ import annotations

import hashlib
import io
import json
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import shardkit
from shardkit.cli import main
from shardkit.formats.xet_mdb import (
    NEVER_EXPIRES,
    ChunkEntry,
    MdbShard,
    XetHash,
)
from shardkit.hashing import xet as xh
from shardkit.sources import BytesSource, FileSource
from shardkit.writers.xet_mdb import build_mdb

DATA = Path(__file__).parent / "data" / "mdb"
MANIFEST = json.loads((DATA / "real" / "manifest.json").read_text())
SHARDS = {Path(e["path"]).name: e for e in MANIFEST["shards"]}
DEDUP = DATA / "hf_server_global_dedup" / "gpt2-64-8bits.tflite.shard"
DEDUP_JSON = json.loads(DEDUP.with_name(DEDUP.name + ".json").read_text())


def real_path(entry: dict[str, Any]) -> Path:
    return DATA / "real" / entry["path"]


@pytest.fixture(params=sorted(SHARDS), ids=lambda n: f"{SHARDS[n]['role']}-{n[:8]}")
def real(request):
    entry = SHARDS[request.param]
    with shardkit.open(real_path(entry)) as shard:
        yield shard, entry


def test_every_real_file_is_in_the_manifest():
    on_disk = sorted(p.name for p in (DATA / "real").glob("*/*.mdb"))
    assert on_disk == sorted(SHARDS)
    assert len(on_disk) == 13


def test_file_bytes_match_manifest(real):
    shard, entry = real
    data = real_path(entry).read_bytes()
    assert len(data) == entry["size"]
    assert hashlib.sha256(data).hexdigest() == entry["sha256_of_file"]
    assert isinstance(shard, MdbShard)
    assert str(shard.content_hash()) == entry["content_hash_blake3_datakey"]


def test_header_footer_and_layout(real):
    shard, entry = real
    assert shard.header.version == entry["header"]["version"]
    assert shard.header.footer_size == entry["header"]["footer_size"]
    assert shard.xorb_info_offset == entry["xorb_info_offset_scanned"]
    assert shard.xorb_info_end == entry["end_of_xorb_section"]
    want = entry["footer"]
    if want is None:
        assert shard.footer is None
        return
    got = shard.footer.to_dict()
    renamed = {"shard_creation_timestamp": "creation_timestamp",
               "shard_key_expiry": "key_expiry"}
    for key, value in want.items():
        key = renamed.get(key, key)
        if key == "chunk_hash_hmac_key":
            assert got["hmac_key"] == value
        elif key == "buffer":
            assert shard.footer.reserved == b"".join(struct.pack("<Q", v) for v in value)
        else:
            assert got[key] == value, key


def test_files_match_manifest(real):
    shard, entry = real
    assert len(shard.files) == len(entry["files"])
    for got, want in zip(shard.files, entry["files"], strict=True):
        assert got.hash == want["file_hash"]
        assert str(got.hash) == want["file_hash"]
        assert got.flags == want["flags"]
        assert got.reserved == want["reserved_u64"]
        assert got.record_index == want["entry_index"]
        assert [(str(t.xorb_hash), t.flags, t.unpacked_bytes, t.chunk_start, t.chunk_end)
                for t in got.terms] == [tuple(s) for s in want["segments"]]
        assert [str(h) for h in got.verification_hashes] == want["verification_range_hashes"]
        if want["sha256"] is None:
            assert got.sha256 is None
        else:
            assert str(got.sha256) == want["sha256"]
            assert bytes(got.sha256).hex() == want["sha256_raw_stored_bytes_hex"]


def test_xorbs_match_manifest(real):
    shard, entry = real
    assert len(shard.xorbs) == len(entry["xorbs"])
    for got, want in zip(shard.xorbs, entry["xorbs"], strict=True):
        assert str(got.hash) == want["xorb_hash"]
        assert got.flags == want["flags"]
        assert len(got.chunks) == want["num_entries"]
        assert got.num_bytes_in_xorb == want["num_bytes_in_xorb"]
        assert got.num_bytes_on_disk == want["num_bytes_on_disk"]
        assert got.record_index == want["entry_index"]
        assert [[str(c.hash), c.offset, c.size, c.flags] for c in got.chunks] == want["chunks"]


def test_lookup_tables_match_manifest(real):
    shard, entry = real
    tree = shard.to_dict()
    if entry["role"] == "upload_body":
        assert tree["lookup_tables"] == {"file": [], "xorb": [], "chunk": []}
        return
    assert tree["lookup_tables"] == entry["lookup_tables"]


def test_kaitai_engine_gives_the_same_objects(real):
    shard, entry = real
    slow = MdbShard(FileSource(real_path(entry)), engine="kaitai")
    assert slow.files == shard.files
    assert slow.xorbs == shard.xorbs
    assert slow.footer == shard.footer


def test_verify_clean_including_name(real):
    shard, _ = real
    assert shard.verify(name_check=True) == []


def test_lookups_find_every_file_and_chunk(real):
    shard, entry = real
    for want in entry["files"]:
        found = shard.file(want["file_hash"])
        assert found is not None and str(found.hash) == want["file_hash"]
        assert found == shard.files[[f.record_index for f in shard.files].index(
            want["entry_index"])]
        assert shard.file(bytes(XetHash(want["file_hash"]))) == found
        assert shard.file(XetHash(want["file_hash"])) == found
    for x in entry["xorbs"]:
        assert str(shard.xorb(x["xorb_hash"]).hash) == x["xorb_hash"]
        for i, (h, start, size, flags) in enumerate(x["chunks"]):
            ref = shard.find_chunk(h)
            assert ref is not None
            assert str(ref.chunk.hash) == h
            assert str(ref.xorb_hash) == x["xorb_hash"]
            # a chunk repeated inside a xorb is found at its first or a later position
            assert x["chunks"][ref.chunk_index][0] == h
            if [c[0] for c in x["chunks"]].count(h) == 1:
                assert (ref.chunk_index, ref.chunk.offset, ref.chunk.size) == (i, start, size)
                assert ref.chunk.flags == flags
    missing = "ab" * 32
    assert shard.file(missing) is None
    assert shard.find_chunk(missing) is None
    assert missing not in shard


def test_uploads_reported_by_hf_xet_are_in_their_session_shard():
    checked = 0
    for name, up in MANIFEST["uploads"].items():
        session = [e for e in MANIFEST["shards"]
                   if e["session"] == up["session"] and e["role"] in ("session", "upload_body")]
        if not session:  # session D keeps only its xorb-metadata shard
            assert up["session"] == "D", name
            continue
        with shardkit.open(real_path(session[0])) as shard:
            got = shard.file(up["hf_xet_result"]["xet_hash"])
            assert got is not None, name
            assert got.size == up["size"]
            if up["hf_xet_result"]["sha256"] is not None:
                assert got.sha256 == up["hf_xet_result"]["sha256"]
            checked += 1
    assert checked == 12


def test_empty_files():
    # session A: empty file with sha256 computed -> flags 0xC0000000, zero metadata ext
    a = shardkit.open(DATA / "real" / "session" /
                      "b04ac8152506ea5af6b90a7378a3d35c46cbef373a597241937795e323cea8f1.mdb")
    empty = a.file("0" * 64)
    assert empty.terms == () and empty.size == 0 and empty.flags == 0xC000_0000
    assert empty.sha256 == "0" * 64 and empty.sha256.is_zero
    # session E: sha256 skipped -> verification flag only, no ext
    e = shardkit.open(DATA / "real" / "upload_body" /
                      "c2a7f4f3dcab2f5c0038b17845ec6b3db4e6478a53b442f1dd8a40354f82e009.mdb")
    assert e.file(bytes(32)).flags == 0x8000_0000 and e.file(bytes(32)).sha256 is None


def test_cross_shard_terms_and_file_hashes():
    """Session B/C files use xorbs of session A: verify checks them given the other shards."""
    shards = [shardkit.open(real_path(e)) for e in MANIFEST["shards"] if e["role"] == "session"]
    c = next(s for s in shards if not s.xorbs)
    assert c.verify(other_shards=shards) == []
    stitched = c.file("965a1d140d736b80bb114aeaee15d5877194f0740f63981b86b21a77409b0310")
    assert stitched.size == MANIFEST["uploads"]["stitched.bin"]["size"]
    chunks = []
    for t in stitched.terms:
        x = next(s.xorb(t.xorb_hash) for s in shards if s.xorb(t.xorb_hash) is not None)
        chunks += [(c_.hash, c_.size) for c_ in x.chunks[t.chunk_start : t.chunk_end]]
    assert xh.display_hex(xh.file_hash(chunks)) == str(stitched.hash)


def test_variants():
    kinds = {e["role"]: shardkit.open(real_path(e)).variant for e in MANIFEST["shards"]}
    assert kinds == {
        "session": "full shard with lookup tables",
        "client_cache": "full shard with lookup tables",
        "cas_stored": "server-stored shard without lookup tables",
        "xorb_metadata": "xorb-only shard with lookup tables",
        "upload_body": "upload body (no footer)",
    }


def test_cas_stored_global_dedup_flags():
    s = shardkit.open(DATA / "real" / "cas_stored" /
                      "23e2110f1bbcf1d9c2de87c42cd1679f91a581ae6112344e838d3c2c43781b01.mdb")
    flagged = [i for i, c in enumerate(s.xorbs[0].chunks) if c.global_dedup_flag]
    # file-start chunks: each file's first term's chunk_index_start into this xorb
    starts = sorted({f.terms[0].chunk_start for f in s.files if f.terms})
    assert flagged == starts and flagged
    assert all(c.global_dedup_eligible for c in s.xorbs[0].chunks if c.global_dedup_flag)


def test_timestamps_and_expiry():
    cache = shardkit.open(DATA / "real" / "client_cache" /
                          "a95fb9dab62d49d75474ca5260117c0f6c9db412de5061f444cc3749a2c54eb7.mdb")
    f = cache.footer
    assert f.key_expiry - f.creation_timestamp == 21 * 86400
    assert not f.expired(now=f.creation_timestamp)
    assert not f.expired(now=f.key_expiry)
    assert f.expired(now=f.key_expiry + 1)
    session = shardkit.open(DATA / "real" / "session" /
                            "b04ac8152506ea5af6b90a7378a3d35c46cbef373a597241937795e323cea8f1.mdb")
    assert session.footer.key_expiry == NEVER_EXPIRES
    assert session.footer.creation_timestamp == 0
    assert not session.footer.expired(now=2**63)


# -- the production global-dedup response ----------------------------------------------------


def test_global_dedup_response_matches_huggingface_js_expectation():
    s = shardkit.open(DEDUP)
    assert str(s.footer.hmac_key) == DEDUP_JSON["hmac_key"]
    assert s.footer.is_keyed and s.files == ()
    assert [str(x.hash) for x in s.xorbs] == [x["hash"] for x in DEDUP_JSON["xorbs"]]
    for x, want in zip(s.xorbs, DEDUP_JSON["xorbs"], strict=True):
        assert [str(c.hash) for c in x.chunks] == want["chunk_hashes"]
    assert [len(x.chunks) for x in s.xorbs] == [933, 1062, 122]
    f = s.footer
    assert (f.creation_timestamp, f.key_expiry) == (1754059905, 1754664705)
    assert f.key_expiry - f.creation_timestamp == 7 * 86400
    assert f.expired(now=1754664706) and not f.expired(now=1754059905)
    assert (f.materialized_bytes, f.stored_bytes) == (0, 135211006)
    assert sum(x.num_bytes_in_xorb for x in s.xorbs) == 135211006
    assert s.verify() == []


def test_global_dedup_find_chunk_applies_the_hmac_key():
    s = shardkit.open(DEDUP)
    plain = "9502eec19d4b0c9f7b389228fa801f68ecdf15d69ccd1da2f9ddbd0219898335"
    ref = s.find_chunk(plain)
    assert ref is not None
    assert str(ref.xorb_hash) == DEDUP_JSON["xorbs"][1]["hash"]
    assert ref.chunk_index == 0
    assert ref.chunk.hash == XetHash(plain).keyed(bytes(s.footer.hmac_key))
    # the stored (keyed) hash itself is only found with keyed=True
    assert s.find_chunk(ref.chunk.hash, keyed=True) == ref
    assert s.find_chunk(ref.chunk.hash) is None


# -- hashes ------------------------------------------------------------------------------------


def test_xet_hash_value_type():
    text = "d6834b04843aaf16f29903e2428a99be635099f9ea5056cc4e95e7ec8a41509f"
    h = XetHash(text)
    assert bytes(h)[:8] == bytes.fromhex("16af3a84044b83d6")
    assert str(h) == text and f"{h}" == text and h.display == text
    assert h == text and h == text.upper() and h != "00" * 32 and h != "nonsense"
    assert h == bytes(h) and XetHash(bytes(h)) == h and XetHash(h) is h
    assert repr(h) == f"XetHash('{text}')"
    assert h.truncated == int(text[:16], 16)
    assert h.last_word == int(text[48:], 16)
    # hashes like its display hex: sets and dicts of hashes meet hex text
    assert h in {text} and {h: 1}[text] == 1 and {text: 1}[h] == 1
    assert {str(f) for f in [h]} == {h}
    with pytest.raises(ValueError):
        XetHash("xyz")
    with pytest.raises(ValueError):
        XetHash(b"short")


def test_chunk_eligibility_by_last_word():
    zero_tail = XetHash(bytes(range(24)) + bytes(8))  # last word 0 -> divisible by 1024
    assert ChunkEntry(zero_tail, 0, 1, 0).global_dedup_eligible
    odd_tail = XetHash(bytes(24) + (1).to_bytes(8, "little"))
    assert not ChunkEntry(odd_tail, 0, 1, 0).global_dedup_eligible
    assert ChunkEntry(odd_tail, 0, 1, 0x8000_0000).global_dedup_eligible


# -- reads, summary, CLI ---------------------------------------------------------------------


def test_file_lookup_with_tables_does_not_walk_the_sections():
    path = (DATA / "real" / "session" /
            "b04ac8152506ea5af6b90a7378a3d35c46cbef373a597241937795e323cea8f1.mdb")
    s = MdbShard(BytesSource(path.read_bytes()))
    f = s.file("1686ca90c1751860f1a32b3b103bed9f483886112eb26a999a6568a43fd38f1c")
    assert f.record_index == 2 and len(f.terms) == 1 and f.size == 18256
    assert s.find_chunk(f.terms[0].xorb_hash) is None
    assert "_layout" not in s.__dict__  # answered from the tables: the sections were not walked


def test_summary_counts():
    s = shardkit.open(DATA / "real" / "session" /
                      "b04ac8152506ea5af6b90a7378a3d35c46cbef373a597241937795e323cea8f1.mdb")
    info = s.summary()
    assert (info["files"], info["xorbs"], info["chunks"], info["terms"]) == (5, 1, 37, 4)
    assert info["lookup_tables"] == {"file": True, "xorb": True, "chunk": True}
    assert info["hmac_key_present"] is False
    assert info["key_expiry_time"] == "never"
    assert info["totals"] == {"materialized_bytes": 2415996, "stored_bytes": 2415996,
                              "stored_bytes_on_disk": 0}
    names = [sec.name for sec in s.sections()]
    assert names == ["/header", "/file_info", "/xorb_info", "/file_lookup", "/xorb_lookup",
                     "/chunk_lookup", "/footer"]
    assert s.sections()[-1].start == 3448 and s.sections()[3].start == 2784


def test_cli_ls_get_info_dump_map_verify(capsys):
    path = str(DATA / "real" / "session" /
               "b04ac8152506ea5af6b90a7378a3d35c46cbef373a597241937795e323cea8f1.mdb")
    entry = SHARDS[Path(path).name]
    assert main(["ls", path]) == 0
    assert capsys.readouterr().out.split() == [f["file_hash"] for f in entry["files"]]
    want = entry["files"][1]
    assert main(["get", path, want["file_hash"]]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["hash"] == want["file_hash"] and got["sha256"] == want["sha256"]
    assert [[t["xorb_hash"], t["chunk_start"], t["chunk_end"]] for t in got["terms"]] == [
        [s[0], s[3], s[4]] for s in want["segments"]]
    assert main(["get", path, "ab" * 32]) == 1
    capsys.readouterr()
    assert main(["info", "--json", path]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["format"] == "mdb" and info["chunks"] == 37
    assert main(["dump", "--json", path]) == 0
    tree = json.loads(capsys.readouterr().out)
    assert tree["xorbs"][0]["chunks"][0]["hash"] == entry["xorbs"][0]["chunks"][0][0]
    assert main(["map", path]) == 0
    assert "/chunk_lookup" in capsys.readouterr().out
    assert main(["verify", "--name-check", path]) == 0
    assert "OK" in capsys.readouterr().out


def test_cli_name_check_catches_a_renamed_file(tmp_path, capsys):
    src = DATA / "real" / "session" / \
        "b04ac8152506ea5af6b90a7378a3d35c46cbef373a597241937795e323cea8f1.mdb"
    wrong = tmp_path / ("ab" * 32 + ".mdb")
    wrong.write_bytes(src.read_bytes())
    assert main(["verify", "--name-check", str(wrong)]) == 1
    assert "name" in capsys.readouterr().out
    assert main(["verify", str(wrong)]) == 0


def test_footer_expiry_takes_datetimes():
    import datetime

    path = Path(__file__).parent / "data" / "mdb" / "hf_server_global_dedup"
    with shardkit.open(path / "gpt2-64-8bits.tflite.shard") as s:
        expiry = s.footer.key_expiry
        moment = datetime.datetime.fromtimestamp(expiry, datetime.UTC)
        assert not s.footer.expired(now=moment)
        assert s.footer.expired(now=moment + datetime.timedelta(seconds=1))
        assert s.footer.expired(now=expiry + 1) and not s.footer.expired(now=expiry - 1)
        with pytest.raises(shardkit.InvalidKeyError):
            s.file("zz")


def test_open_reads_only_header_and_footer():
    root = Path(__file__).parent / "data" / "mdb" / "real"
    footed = [p for p in sorted(root.glob("*/*.mdb")) if p.parent.name != "upload_body"]
    assert len(footed) >= 10
    for path in footed:
        src = shardkit.CountingSource(shardkit.FileSource(path))
        with shardkit.open(src) as s:
            size = src.size
            assert s.footer is not None
            assert all(end <= 64 or start >= size - 200 for start, end in src.stats.ranges), path
            assert src.stats.bytes_read < 600
            assert isinstance(s.files, Sequence)
            assert [str(f.hash) for f in s.files] == [  # reads the sections
                f["file_hash"] for f in SHARDS[path.name]["files"]]
            assert src.stats.bytes_read > size


@pytest.mark.parametrize("engine", ["numpy", "kaitai"])
@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])
@pytest.mark.parametrize("source", ["file", "bytes"])
def test_a_closed_shard_refuses_every_read(engine: str, warm: bool, source: str,
                                           tmp_path: Path) -> None:
    # before, content_hash() gave the hash of no bytes, lookups raised struct.error or found
    # nothing, keys() gave zero hashes and verify() reported problems of a released mapping
    files, xorbs = [], []
    for e in MANIFEST["shards"]:  # one shard of the session shards' files and xorbs
        if e["role"] == "session":
            with shardkit.open(real_path(e)) as one:
                files += one.files
                xorbs += one.xorbs
    path = tmp_path / "joined.mdb"
    path.write_bytes(build_mdb(files, xorbs))
    src = FileSource(path) if source == "file" else BytesSource(path.read_bytes())
    s = MdbShard(src, engine=engine)
    fh, x = next(iter(s.keys())), s.xorbs[0]
    files, xorbs = s.files, s.xorbs
    assert len(xorbs) > 1
    with MdbShard(FileSource(path)) as other:
        i, want = next((i, f.terms) for i, f in enumerate(other.files) if f.terms)
    kept = s.files[i]  # its terms not read yet
    if warm:  # every cache and lookup made before close()
        assert s.file(fh) is not None and s.find_chunk(x.chunks[0].hash) is not None
        assert s.xorb(x.hash) is not None and len(s) and s.summary()
        s.verify()
    s.close()
    s.close()  # twice is fine
    reads = {
        "content_hash": s.content_hash, "file": lambda: s.file(fh),
        "find_chunk": lambda: s.find_chunk(x.chunks[0].hash), "xorb": lambda: s.xorb(x.hash),
        "verify": s.verify, "files": lambda: s.files[0].terms, "xorbs": lambda: s.xorbs[0],
        "getitem": lambda: s[fh], "contains": lambda: fh in s, "len": lambda: len(s),
        "keys": lambda: list(s.keys()), "summary": s.summary, "sections": s.sections,
        "to_dict": s.to_dict, "iter_chunks": lambda: next(s.iter_chunks()),
    }
    if engine == "numpy" and not warm:  # items not built yet of sequences taken before
        reads.update({"files before": lambda: files[0 if i else 1],
                      "xorbs before": lambda: xorbs[-1]})
    for name, read in reads.items():
        with pytest.raises(ValueError, match="the MdbShard is closed") as info:
            read()
        assert type(info.value) is ValueError, name  # not a lookup failure or a parse error
    assert kept.terms == want and s.footer is not None  # what was returned stays usable


def test_header_and_footer_field_offsets_are_the_schemas() -> None:
    """The offsets the reader and verify name (model._HEADER_AT, _FOOTER_AT) and the lookup
    entry widths, against the generated parser of schemas/xet_mdb_shard.ksy: structures whose
    every 8-byte word differs are parsed, and each field's value must be the bytes at the
    offset the table gives."""
    from kaitaistruct import KaitaiStream
    from shardkit.generated.xet_mdb_shard import XetMdbShard

    from shardkit.formats.xet_mdb.model import (
        _CHUNK_LOOKUP_DTYPE,
        _FOOTER_AT,
        _HEADER_AT,
        _LOOKUP_DTYPE,
        FOOTER_SIZE,
        HEADER_SIZE,
        MDB_TAG,
    )

    def check(cls: type, data: bytes, table: dict[str, int], size: int) -> None:
        ks = cls(KaitaiStream(io.BytesIO(data)), None, None)
        fields = [k for k in vars(ks) if not k.startswith("_")]
        assert fields == list(table), "the table lists the schema's fields, in order"
        end = 0
        for name, at in table.items():
            value = getattr(ks, name)
            raw = value if isinstance(value, bytes) else value.to_bytes(8, "little")
            assert at == end and data[at : at + len(raw)] == raw, name
            end = at + len(raw)
        assert end == ks._io.pos() == size

    check(XetMdbShard.Header, MDB_TAG + struct.pack("<QQ", 2, 200), _HEADER_AT, HEADER_SIZE)
    words = [1] + [1000 + 8 * w for w in range(1, FOOTER_SIZE // 8)]  # version 1, then distinct
    check(XetMdbShard.Footer, struct.pack(f"<{len(words)}Q", *words), _FOOTER_AT, FOOTER_SIZE)
    for cls, dtype in ((XetMdbShard.FileLookupTable, _LOOKUP_DTYPE),
                       (XetMdbShard.ChunkLookupTable, _CHUNK_LOOKUP_DTYPE)):
        data = bytes(range(3 * dtype.itemsize))
        entries = cls(KaitaiStream(io.BytesIO(data)), None, None).entries
        assert len(entries) == 3
        keys = np.frombuffer(data, dtype)["key"].tolist()
        assert [e.truncated_hash for e in entries] == keys


def test_xet_hash_takes_only_bytes_or_hex() -> None:
    # bytes(32) is 32 zero bytes, bytes([...]) the list's values: XetHash(32) was the zero
    # hash (an empty file's), so `32 in s` was True and s.file(32) gave the empty file
    raw = bytes(range(32))
    for ok in (raw, bytearray(raw), memoryview(raw), XetHash(raw), str(XetHash(raw))):
        assert XetHash(ok) == raw
    for bad in (32, 0, list(raw), tuple(raw), iter(raw), 3.0, None, object()):
        with pytest.raises(shardkit.InvalidKeyError, match="not a xet hash"):
            XetHash(bad)  # type: ignore[arg-type]
    path = real_path(next(e for e in MANIFEST["shards"] if e["role"] == "session"))
    with shardkit.open(path) as s:
        assert any(f.hash.is_zero for f in s.files)  # an empty file: the zero hash
        for bad in (32, list(bytes(32))):
            assert bad not in s
            with pytest.raises(shardkit.InvalidKeyError):
                s.file(bad)  # type: ignore[arg-type]
            with pytest.raises(shardkit.EntryNotFoundError):
                s[bad]  # type: ignore[index]
            with pytest.raises(shardkit.InvalidKeyError):
                s.xorb(bad)  # type: ignore[arg-type]
            with pytest.raises(shardkit.InvalidKeyError):
                s.find_chunk(bad)  # type: ignore[arg-type]
