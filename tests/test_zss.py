"""ZSS v1: the reader against the reference writer's manifest of real files, search, CLI."""

from __future__ import annotations

import bz2
import hashlib
import itertools
import json
import struct
import zlib
from bisect import bisect_left
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shardkit.generated.zss import Zss

import shardkit
from shardkit.cli import main
from shardkit.formats.zss import ZssFile, decode_index, decode_records, prefix_successor
from shardkit.remote import RemoteSource
from shardkit.sources import BytesSource, CountingSource, FileSource
from shardkit.writers.zss import build_zss

DATA = Path(__file__).parent / "data" / "zss"
MANIFEST: dict[str, Any] = json.loads((DATA / "manifest.json").read_text())["files"]
VALID = [name for name, e in MANIFEST.items() if e["expected"] == "valid"]


def records_hash(records: list[bytes]) -> str:
    """The manifest's records_sha256: sha256 of u64le(len) || record, in order."""
    h = hashlib.sha256()
    for r in records:
        h.update(struct.pack("<Q", len(r)))
        h.update(r)
    return h.hexdigest()


@pytest.fixture(params=VALID)
def sample(request):
    name = request.param
    with shardkit.open(DATA / name) as z:
        yield name, z, MANIFEST[name]


@pytest.fixture(scope="module")
def medium_records() -> list[bytes]:
    with shardkit.open(DATA / "medium_none.zss") as z:
        return list(z)


def test_file_is_the_manifest_file(sample):
    name, _, expected = sample
    data = (DATA / name).read_bytes()
    assert len(data) == expected["size"]
    assert hashlib.sha256(data).hexdigest() == expected["file_sha256"]


def test_header(sample):
    _, z, expected = sample
    assert isinstance(z, ZssFile)
    h = expected["header"]
    assert z.header.header_length == h["header_length"]
    assert z.header.data_offset == h["data_offset"]
    assert z.root == z.header.root_voffset == h["root_voffset"]
    assert f"{z.header.header_crc32c:08x}" == h["header_crc32c_hex"]
    assert z.header.metadata_json == h["metadata_json"]
    assert z.codec == expected["codec"]
    assert z.uuid.hex() == expected["uuid_hex"]
    assert z.metadata == expected["metadata"]


def test_records_match_manifest(sample):
    _, z, expected = sample
    records = list(z)
    assert len(records) == expected["record_count"] == len(z)
    assert records_hash(records) == expected["records_sha256"]
    assert sum(map(len, records)) == expected["total_record_bytes"]
    assert records[0].hex() == expected["first_record_hex"]
    assert records[-1].hex() == expected["last_record_hex"]
    assert records == sorted(records)


def test_prefix_counts(sample):
    _, z, expected = sample
    records = list(z)
    for pc in expected["prefix_counts"]:
        prefix = bytes.fromhex(pc["prefix_hex"])
        found = list(z.search(prefix=prefix))
        assert len(found) == pc["count"], prefix
        assert found == [r for r in records if r.startswith(prefix)]
        assert z.count(prefix=prefix) == pc["count"]


def test_structure(sample):
    _, z, expected = sample
    s = expected["structure"]
    info = z.summary(counts=True)
    assert info["blocks_per_level"] == {k: v for k, v in s["blocks_per_level"].items()}
    assert info["root_level"] == s["root_level"] == z.root_block.level
    assert info["levels"] == info["root_level"] + 1 == len(info["blocks_per_level"])
    assert len(z.root_block.children) == s["root_entries"]
    assert info["record_count"] == expected["record_count"]
    assert info["data_blocks"] == expected["generator"]["data_blocks_expected"]
    biggest = max(len(z.records_of(i, b)) for i, b in z.iter_blocks() if i.level == 0)
    assert biggest == s["max_data_block_records"]


def test_verify_clean(sample):
    _, z, _ = sample
    calls = []
    assert z.verify(progress=lambda d, t: calls.append((d, t))) == []
    assert calls[-1][0] == calls[-1][1] == z.data_size


def test_fast_decoder_equals_kaitai(sample):
    """decode_records (the hot path) gives what the generated Zss.DataBlockBody parses."""
    _, z, _ = sample
    for info, body in z.iter_blocks():
        if info.level == 0:
            ks = Zss.DataBlockBody.from_bytes(body)
            assert decode_records(body) == [r.record for r in ks.records]


def test_fast_index_decoder_equals_kaitai(sample):
    """decode_index (the hot path) gives what the generated Zss.IndexBlockBody parses."""
    _, z, _ = sample
    for info, body in z.iter_blocks():
        if info.level:
            ks = Zss.IndexBlockBody.from_bytes(body)
            assert decode_index(body) == ([e.key for e in ks.entries],
                                          [e.child_voffset.value for e in ks.entries])


def test_kaitai_parses_none_samples_whole():
    """For none+crc32c files the schema alone reads every record (what the Web IDE shows)."""
    ks = Zss.from_file(str(DATA / "medium_none.zss"))
    recs = [r.record for b in ks.blocks if b.level == 0 for r in b.payload.body.records]
    assert records_hash(recs) == MANIFEST["medium_none.zss"]["records_sha256"]
    assert ks.root.level == MANIFEST["medium_none.zss"]["structure"]["root_level"]
    assert ks.header_crc32c_input == (DATA / "medium_none.zss").read_bytes()[12:58]


@pytest.mark.parametrize("name", ["medium_zlib.zss", "medium_bz2.zss"])
def test_kaitai_body_types_on_decompressed_payloads(name):
    ks = Zss.from_file(str(DATA / name))
    decompress = zlib.decompress if ks.header.codec == "zlib" else bz2.decompress
    recs = [r.record for b in ks.blocks if b.level == 0
            for r in Zss.DataBlockBody.from_bytes(decompress(b.payload)).records]
    assert records_hash(recs) == MANIFEST[name]["records_sha256"]


def test_duplicates_across_block_boundary(medium_records):
    """`dup\\0record` repeats 300 times across a block boundary: all are found."""
    dup = b"dup\x00record"
    assert medium_records.count(dup) == 300
    for name in ("medium_none.zss", "medium_zlib.zss", "medium_bz2.zss"):
        with shardkit.open(DATA / name) as z:
            assert list(z.search(prefix=dup)) == [dup] * 300
            assert list(z.iter(start=dup, stop=dup + b"\0")) == [dup] * 300
            assert dup in z
            assert z[dup] == dup
            # the run really crosses a data block
            blocks = [z.records_of(i, b) for i, b in z.iter_blocks() if i.level == 0]
            assert sum(1 for recs in blocks if dup in recs) >= 2


def test_iter_ranges_match_bisect(medium_records):
    recs = medium_records
    with shardkit.open(DATA / "medium_zlib.zss") as z:
        for start, stop in [(b"", b"b"), (b"k", b"kz"), (b"dup", None), (None, b"c"),
                            (b"zzzz", None), (b"\xff", b"\xff\xff\xff"), (b"m", b"m")]:
            lo = 0 if start is None else bisect_left(recs, start)
            hi = len(recs) if stop is None else bisect_left(recs, stop)
            assert list(z.iter(start=start, stop=stop)) == recs[lo:max(lo, hi)], (start, stop)
        assert list(z.search(prefix=b"k", start=b"kk", stop=b"km")) == [
            r for r in recs if r.startswith(b"k") and b"kk" <= r < b"km"]


def test_membership(medium_records):
    with shardkit.open(DATA / "medium_bz2.zss") as z:
        present = set(medium_records[::997])
        for r in present:
            assert r in z
            assert z.get(r) == r
        for r in (b"dup\x00recorc", b"\xff\xff\xff", b"zz" * 30, medium_records[5] + b"\0"):
            if r not in set(medium_records):
                assert r not in z
                with pytest.raises(shardkit.EntryNotFoundError):
                    z[r]
                assert z.get(r, None) is None
        assert 42 not in z


def test_crc32c_implementations_agree():
    """The hardware CRC-32C (google-crc32c) and crcmod's are the same function."""
    from shardkit.formats.zss import BODY_CRC32C_IMPL
    from shardkit.hashing.crc32c import IMPLEMENTATION, crc32c, crc32c_crcmod

    assert BODY_CRC32C_IMPL == IMPLEMENTATION
    assert IMPLEMENTATION in ("crcmod", "google-crc32c")
    data = hashlib.sha256(b"seed").digest() * 9000
    for cut in (0, 1, 3, 4, 15, 16, 17, 1000, 262_145, len(data)):
        assert crc32c(data[:cut]) == crc32c_crcmod(data[:cut])
        assert crc32c(data[cut:], crc32c(data[:cut])) == crc32c_crcmod(data)
    # views (how block bodies are checked) give the same answer, past the 1 MiB pieces too
    big = data * 5
    for view in (memoryview(big), memoryview(big)[3:-4], memoryview(bytearray(data))):
        assert crc32c(view) == crc32c_crcmod(bytes(view))
        assert crc32c(view, 7) == crc32c_crcmod(bytes(view), 7)


def test_prefix_successor():
    assert prefix_successor(b"") is None
    assert prefix_successor(b"\xff\xff") is None
    assert prefix_successor(b"ab") == b"ac"
    assert prefix_successor(b"a\xff\xff") == b"b"
    assert prefix_successor(b"\x00") == b"\x01"


@pytest.mark.parametrize("name", ["medium_zlib.zss", "medium_bz2.zss", "medium_none.zss"])
@pytest.mark.parametrize("prefix", [b"kb", b"dup", b"q", b"zzzzzz", b"\x00"])
def test_search_reads_only_the_path(name, prefix):
    """A prefix search reads the index blocks on its path and the data blocks of its matches.

    Allowed besides: the framing bytes of the blocks passed over, and the one data block after
    the last match (to see that the run ended).
    """
    with shardkit.open(DATA / name) as ref:
        blocks = [(i, ref.records_of(i, b) if i.level == 0 else ref.index_of(i, b))
                  for i, b in ref.iter_blocks()]
        by_v = {i.voffset: (i, v) for i, v in blocks}
        path, v = [], ref.root
        while by_v[v][0].level:
            path.append(v)
            ib = by_v[v][1]
            v = ib.children[max(bisect_left(ib.keys, prefix) - 1, 0)]
        path.append(v)
    data = [(i, recs) for i, recs in blocks if i.level == 0]
    matching = {i.voffset for i, recs in data if any(r.startswith(prefix) for r in recs)}
    last = max((k for k, (i, _) in enumerate(data) if i.voffset in matching | {path[-1]}))
    allowed = set(path) | matching | ({data[last + 1][0].voffset} if last + 1 < len(data)
                                      else set())
    src = CountingSource(FileSource(DATA / name))
    z = ZssFile(src, cache_blocks=0)
    src.stats.ranges.clear()
    found = list(z.search(prefix=prefix))
    assert len(found) == sum(r.startswith(prefix) for _, recs in data for r in recs)
    payload_read = set()
    for lo, hi in src.stats.ranges:
        for i, _ in blocks:
            if lo < i.payload_offset + i.len_payload and hi > i.payload_offset + 10:
                payload_read.add(i.voffset)
    assert payload_read <= allowed
    assert set(path) <= payload_read
    z.close()


def test_fsspec_url_ranged_reads(medium_records):
    url = (DATA / "medium_none.zss").as_uri()
    with shardkit.open(url) as z:
        assert isinstance(z.source, RemoteSource)
        assert list(z.search(prefix=b"dup")) == [r for r in medium_records
                                                 if r.startswith(b"dup")]
        counted = CountingSource(z.source)
        z2 = ZssFile(counted)
        assert b"dup\x00record" in z2
        assert counted.stats.bytes_read < 30_000  # of 609,835
        assert list(z2) == medium_records


def test_sections_and_dump(sample):
    _name, z, expected = sample
    sections = z.sections()
    blocks = [s for s in sections if s.name.startswith("/blocks/")]
    assert len(blocks) == sum(expected["structure"]["blocks_per_level"].values())
    assert blocks[0].start == expected["header"]["data_offset"]
    assert blocks[-1].end == expected["size"]
    for a, b in itertools.pairwise(blocks):
        assert a.end == b.start
    assert any("root" in s.note for s in blocks)
    tree = z.to_dict()
    recs = [bytes.fromhex(r) for b in tree["blocks_detail"] if b["level"] == 0
            for r in b["records"]]
    assert records_hash(recs) == expected["records_sha256"]


# -- CLI ----------------------------------------------------------------------------------------


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_info_json(capsys):
    code, out, _ = run(capsys, "info", "--json", "--counts", str(DATA / "metadata_zlib.zss"))
    assert code == 0
    info = json.loads(out)
    e = MANIFEST["metadata_zlib.zss"]
    assert info["codec"] == "zlib"
    assert info["uuid"] == e["uuid_hex"]
    assert info["metadata"] == e["metadata"]
    assert info["root_level"] == e["structure"]["root_level"]
    assert info["record_count"] == e["record_count"]
    assert info["blocks_per_level"] == e["structure"]["blocks_per_level"]


def test_cli_ls(capsys):
    path = str(DATA / "tiny_none.zss")
    code, out, _ = run(capsys, "ls", path)
    assert code == 0
    assert out.splitlines() == ["", "a", "apple", "apple\\x00\\xff\\n", "zebra"]
    code, out, _ = run(capsys, "ls", "--hex", path)
    assert out.splitlines() == ["", "61", "6170706c65", "6170706c6500ff0a", "7a65627261"]
    code, out, _ = run(capsys, "ls", "--prefix", "appl", path)
    assert out.splitlines() == ["apple", "apple\\x00\\xff\\n"]
    code, out, _ = run(capsys, "ls", "--start", "apple", "--stop", "hex:7a", path)
    assert out.splitlines() == ["apple", "apple\\x00\\xff\\n"]
    code, out, _ = run(capsys, "ls", "--json", "--prefix", "dup", str(DATA / "medium_zlib.zss"))
    assert json.loads(out) == [b"dup\x00record".hex()] * 300  # JSON: the exact bytes, as hex


def test_cli_get(capfdbinary):
    path = str(DATA / "tiny_zlib.zss")
    assert main(["get", path, "apple\\x00\\xff\\n"]) == 0
    assert capfdbinary.readouterr().out == b"apple\x00\xff\n"
    assert main(["get", path, "hex:7a65627261"]) == 0
    assert capfdbinary.readouterr().out == b"zebra"
    assert main(["get", path, "appl"]) == 1
    assert "not found" in capfdbinary.readouterr().err.decode()


def test_cli_ls_output_roundtrips_through_get(capsys):
    """Every line `ls` prints is a RECORD `get` accepts."""
    path = str(DATA / "metadata_zlib.zss")
    _, out, _ = run(capsys, "ls", path)
    lines = out.split("\n")[:-1]
    with shardkit.open(path) as z:
        assert [z.parse_key(line) for line in lines] == list(z)


def test_cli_verify_and_map(capsys):
    code, out, _ = run(capsys, "verify", str(DATA / "medium_bz2.zss"))
    assert code == 0 and "OK" in out
    code, out, _ = run(capsys, "map", "--json", str(DATA / "medium_none.zss"))
    rows = json.loads(out)
    assert code == 0
    assert sum("level 0 data" in r["note"] for r in rows) == 167
    root = [r for r in rows if "index, root" in r["note"]]
    assert root[0]["start"] == 62 + MANIFEST["medium_none.zss"]["header"]["root_voffset"]
    assert "level 4 index" in root[0]["note"]
    code, out, _ = run(capsys, "dump", "--compact", str(DATA / "tiny_bz2.zss"))
    assert json.loads(out)["record_count"] == 5


# Lookups walk length fields inside a block instead of decoding it (see _DataBlock): text blocks
# (every byte < 0x80) take the one-byte-length fast walk, others the general one, and a cached
# block used again is bisected. Records here hold bytes that look like length fields and many
# copies of the probes' bytes, so bytes.find proposes many false starts.
_ALPHABET = b"ab\x01\x02\x03\x7f"
text_records = st.lists(st.binary(max_size=24).map(lambda b: bytes(_ALPHABET[x % 6] for x in b)),
                        min_size=150, max_size=800)
long_records = st.lists(st.binary(min_size=1, max_size=3).map(lambda b: b * 60)
                        | st.binary(max_size=6), min_size=1, max_size=200)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=text_records | long_records, codec=st.sampled_from(["zlib", "none+crc32c"]),
       block=st.sampled_from([64, 1500, 6000, 1 << 16]), data=st.data())
def test_lookups_match_sorted_list(records, codec, block, data):
    records.sort()
    blob = build_zss(records, codec=codec, approx_block_size=block, branching_factor=4)
    picks = data.draw(st.lists(st.sampled_from(records), min_size=1, max_size=6))
    probes = [r[:k] for r in picks for k in {0, 1, len(r) // 2, len(r)}]
    probes += [r + b"\x00" for r in picks] + [r[:-1] + b"\x7f" for r in picks if r]
    probes += [r[len(r) // 2:] for r in picks]  # bytes that occur inside records
    probes += data.draw(st.lists(st.binary(max_size=3), max_size=4))
    cold = ZssFile(BytesSource(blob), cache_blocks=0)
    warm = ZssFile(BytesSource(blob))
    for p in probes:
        lo = bisect_left(records, p)
        matches = [r for r in records[lo:] if r.startswith(p)][:len(records)]
        stop = p + b"\x02"
        for z in (cold, warm, warm):  # warm twice: the second use bisects the cached block
            assert list(z.search(prefix=p)) == matches, p
            assert list(z.iter(start=p)) == records[lo:], p
            assert list(z.iter(start=p, stop=stop)) == records[lo:bisect_left(records, stop)]
            assert (p in z) == (p in records[lo:lo + 1]), p
            assert list(z.search(prefix=p[:1], start=p)) == [
                r for r in records[lo:] if r.startswith(p[:1])]
    assert any(b.heads is not None for _, b in warm._cache.values())


def test_text_keys_and_bad_key_types():
    with shardkit.open(DATA / "medium_none.zss") as z:
        assert list(z.search(prefix="dup")) == list(z.search(prefix=b"dup"))
        assert ("dup\x00record" in z) == (b"dup\x00record" in z)
        assert 42 not in z
        with pytest.raises(shardkit.InvalidKeyError):
            list(z.search(prefix=42))


def test_map_json_has_block_fields(capsys):
    assert main(["map", "--json", str(DATA / "tiny_none.zss")]) == 0
    blocks = [s for s in json.loads(capsys.readouterr().out) if s["name"].startswith("/blocks")]
    assert blocks and all({"level", "voffset", "first_key", "items"} <= b.keys() for b in blocks)
    assert sum(b["is_root"] for b in blocks) == 1
