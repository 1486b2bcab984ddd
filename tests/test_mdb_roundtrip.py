"""Xet MDB writer: byte-identical rebuilds of real shards, and built shards read back."""

from __future__ import annotations

from pathlib import Path

import pytest
from mdb_inputs import hashed_inputs
from shardkit.generated.xet_mdb_shard import XetMdbShard

import shardkit
from shardkit.formats.xet_mdb import (
    FileInfo,
    MdbShard,
    XetHash,
    XorbInfo,
)
from shardkit.sources import BytesSource
from shardkit.writers import xet_mdb as w

DATA = Path(__file__).parent / "data" / "mdb"
SAMPLES = [*sorted(DATA.glob("real/*/*.mdb")),
           DATA / "hf_server_global_dedup" / "gpt2-64-8bits.tflite.shard"]


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: f"{p.parent.name}-{p.name[:8]}")
def test_build_of_parse_is_byte_identical(path: Path) -> None:
    data = path.read_bytes()
    shard = MdbShard(BytesSource(data))
    assert w.build(shard) == data
    assert w.build(shard, engine="construct") == data


def test_records_match_the_construct_declarations() -> None:
    shard = shardkit.open(SAMPLES[0])
    f = next(fi for fi in shard.files if fi.terms and fi.sha256 is not None)
    raw = shard.source.read_range(f.offset, f.offset + 48 * f.num_records)
    head = w.FileDataSequenceHeader.parse(raw[:48])
    assert XetHash(head.file_hash) == f.hash and head.num_entries == len(f.terms)
    term = w.FileDataSequenceEntry.parse(raw[48:96])
    assert (term.chunk_index_start, term.chunk_index_end) == (f.terms[0].chunk_start,
                                                              f.terms[0].chunk_end)
    assert XetHash(w.FileMetadataExt.parse(raw[-48:]).sha256) == f.sha256
    footer = w.MdbFooterStruct.parse(shard.source.read_range(shard.source.size - 200,
                                                             shard.source.size))
    assert footer.footer_offset == shard.footer.footer_offset
    assert footer.chunk_lookup_num_entry == shard.footer.chunk_lookup_num_entry


def _synthetic(seed: int, n_xorbs: int = 4, n_files: int = 6) -> tuple[list, list, dict]:
    """Xorbs of random chunk data with real hashes, files cut from them, all hashes computed."""
    return hashed_inputs(seed, n_xorbs, n_files, max_piece=300, max_pieces=12, max_terms=3)


@pytest.mark.parametrize("form", ["full", "server", "upload"])
def test_built_shards_read_back_and_verify(form: str) -> None:
    files, xorbs, _ = _synthetic(7)
    data = w.build_mdb(files, xorbs, form=form)
    assert w.build_mdb(files, xorbs, form=form, engine="construct") == data
    s = MdbShard(BytesSource(data))
    assert s.verify() == []
    assert sorted(str(f.hash) for f in s.files) == sorted(str(f.hash) for f in files)
    assert [str(f.hash) for f in s.files] == sorted(str(f.hash) for f in s.files)
    for f in files:
        got = s.file(f.hash)
        assert got.terms == f.terms and got.verification_hashes == f.verification_hashes
        assert got.sha256 == f.sha256
    for x in xorbs:
        assert s.xorb(x.hash).chunks == x.chunks
        ref = s.find_chunk(x.chunks[-1].hash)
        assert ref is not None and ref.xorb_hash == x.hash
    assert (s.footer is None) == (form == "upload")
    if form == "full":
        assert s.footer.chunk_lookup_num_entry == sum(len(x.chunks) for x in xorbs)
        assert s.footer.key_expiry == 2**64 - 1
    elif form == "server":
        assert s.footer.file_lookup_offset == s.footer.footer_offset
    # the Kaitai parser reads the same bytes
    ks = XetMdbShard.from_bytes(data)
    assert len(ks.file_info.blocks) == len(files) + 1
    assert sum(len(b.chunks) for b in ks.xorb_info.blocks if not b.is_bookend) == \
        sum(len(x.chunks) for x in xorbs)
    assert ks.has_footer == (form != "upload")
    assert MdbShard(BytesSource(data), engine="kaitai").files == s.files
    # and the result rebuilds to itself
    assert w.build(s) == data


def test_keyed_export_is_found_through_the_key() -> None:
    _, xorbs, _ = _synthetic(3, n_files=0)
    key = bytes(range(32))
    keyed = [XorbInfo(x.hash, 0, tuple(c._replace(hash=c.hash.keyed(key)) for c in x.chunks),
                      x.num_bytes_in_xorb, 0) for x in xorbs]
    data = w.build_mdb([], keyed, form="server", hmac_key=key, creation_timestamp=1000,
                       key_expiry=1000 + 7 * 86400)
    s = MdbShard(BytesSource(data))
    assert s.footer.is_keyed and s.footer.expired(now=2000 + 7 * 86400)
    plain = xorbs[1].chunks[0].hash
    assert s.find_chunk(plain).xorb_hash == xorbs[1].hash
    assert s.verify() == []  # keyed: xorb hashes are not checked
    full = MdbShard(BytesSource(w.build_mdb([], keyed, hmac_key=key)))
    assert full.find_chunk(plain).chunk.hash == plain.keyed(key)


def test_writer_rejects_inconsistent_input() -> None:
    files, xorbs, _ = _synthetic(5)
    bad = FileInfo(files[1].hash, 0, files[1].terms, files[1].verification_hashes, None)
    with pytest.raises(ValueError):
        w.build_mdb([bad], xorbs)
    with pytest.raises(ValueError):
        w.build_mdb(files, xorbs, form="compressed")
    assert len(w.build_mdb([], [], form="upload")) == 144
