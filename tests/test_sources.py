"""Byte sources, the Kaitai stream adapter, detection and the error tree."""

from __future__ import annotations

import dataclasses
import io
import shutil
from pathlib import Path

import pytest
from conftest import swh_path

import shardkit
from shardkit.errors import Problem
from shardkit.sources import BytesSource, CountingSource, FileSource, SourceStream, as_stream

DATA = bytes(range(256)) * 4


@pytest.fixture(params=["bytes", "file", "fsspec", "remote"])
def source(request, tmp_path):
    path = tmp_path / "blob.bin"
    path.write_bytes(DATA)
    if request.param == "bytes":
        src = BytesSource(DATA)
    elif request.param == "file":
        src = FileSource(path)
    elif request.param == "fsspec":
        src = shardkit.FsspecSource(path.as_uri())
    else:
        from shardkit.remote import RemoteSource

        src = RemoteSource(path.as_uri(), block_size=100, cache=300)
    yield src
    src.close()


def test_read_range(source):
    assert source.size == len(DATA)
    assert source.read_range(0, 4) == DATA[:4]
    assert source.read_range(1000, 1024) == DATA[1000:1024]
    assert source.read_range(7, 7) == b""
    with pytest.raises(shardkit.TruncatedError) as info:
        source.read_range(1000, 1030)
    assert isinstance(info.value, EOFError)
    assert info.value.offset == 1000
    assert info.value.needed == 30
    assert info.value.available == 24
    with pytest.raises(shardkit.ShardkitError):
        source.read_range(10, 5)


def test_stream_adapter(source):
    stream = SourceStream(source)
    assert stream.seek(0, io.SEEK_END) == len(DATA)
    stream.seek(250)
    assert stream.read(10) == DATA[250:260]
    assert stream.tell() == 260
    stream.seek(-4, io.SEEK_END)
    assert stream.read(100) == DATA[-4:]
    assert stream.read(1) == b""
    ks = as_stream(source)
    assert ks.size() == len(DATA)
    ks.seek(1)
    assert ks.read_u2be() == 0x0102
    buffered = as_stream(source, buffer_size=64)
    buffered.seek(255)
    assert buffered.read_u2le() == 0x00FF


def test_counting_source_counts_and_caches():
    inner = BytesSource(DATA)
    plain = CountingSource(inner)
    plain.read_range(0, 10)
    plain.read_range(5, 20)
    assert plain.stats.reads == 2
    assert plain.stats.bytes_read == 25
    assert plain.stats.ranges == [(0, 10), (5, 20)]
    cached = CountingSource(inner, block_size=256)
    assert cached.read_range(10, 300) == DATA[10:300]
    assert cached.read_range(20, 30) == DATA[20:30]
    assert cached.stats.reads == 2
    assert cached.stats.cache_hits == 1
    assert cached.stats.ranges == [(0, 256), (256, 512)]


def test_empty_file(tmp_path):
    path = tmp_path / "empty"
    path.write_bytes(b"")
    src = FileSource(path)
    assert src.size == 0
    assert src.read_range(0, 0) == b""
    src.close()
    with pytest.raises(shardkit.UnknownFormatError, match="empty file"):
        shardkit.open(path)


def test_missing_file(tmp_path):
    with pytest.raises(shardkit.ShardkitError, match="cannot open"):
        shardkit.open(tmp_path / "nope.shard")


def test_nul_byte_in_path_is_a_shardkit_error(tmp_path):
    for target in (str(tmp_path / "a\x00b.shard"), tmp_path / "a\x00b.shard"):
        with pytest.raises(shardkit.ShardkitError, match="null byte"):
            FileSource(target)
        with pytest.raises(shardkit.ShardkitError, match="cannot open"):
            shardkit.open(target)


def test_unknown_format_says_what_was_tried(tmp_path):
    path = tmp_path / "junk.bin"
    path.write_bytes(b"PK\x03\x04" + bytes(100))
    with pytest.raises(shardkit.UnknownFormatError) as info:
        shardkit.open(path)
    message = str(info.value)
    for fmt in ("swh", "mdb", "zss", "amudai", "neuroglancer"):
        assert fmt in message
    assert "50 4b 03 04" in message
    assert len(info.value.tried) == len(shardkit.FORMATS)


@pytest.mark.parametrize(
    ("head", "fmt"),
    [
        (b"SWHShard\x00" + bytes(40), "swh"),
        (bytes.fromhex("48465265706f4d6574614461746100556967456a7b815783a5bdd95ccdd14aa9"), "mdb"),
        (b"ZSS\x1c\x8el\x00\x01" + bytes(8), "zss"),
        (b"SSZ\x1c\x8el\x00\x01" + bytes(8), "zss"),
        (b"amud\x00\x01\x00\x00" + bytes(16) + b"amud\x00\x01\x00\x00", "amudai"),
    ],
)
def test_detect_by_magic(head, fmt):
    assert shardkit.detect(BytesSource(head)).id == fmt


def test_detected_but_unreadable_format_is_named(monkeypatch):
    """A format recognised by its magic whose reader is missing says what the file is."""
    fmt = shardkit.FORMATS["zss"]
    monkeypatch.setitem(shardkit.FORMATS, "zss",
                        dataclasses.replace(fmt, reader="shardkit.formats.no_such_reader:X"))
    assert not shardkit.FORMATS["zss"].readable
    with pytest.raises(shardkit.UnsupportedVersionError, match="ZSS compressed sorted set"):
        shardkit.open(b"ZSS\x1c\x8el\x00\x01" + bytes(8))


def test_forced_format_and_unknown_format_name():
    with shardkit.open(swh_path("tiny").read_bytes(), format="swh") as shard:
        assert len(shard) == 3
    with pytest.raises(shardkit.ShardkitError, match="unknown format"):
        shardkit.open(b"", format="nope")


def test_error_tree_two_parents():
    assert issubclass(shardkit.TruncatedError, EOFError)
    assert issubclass(shardkit.TruncatedError, shardkit.CorruptShardError)
    assert issubclass(shardkit.EntryNotFoundError, KeyError)
    assert issubclass(shardkit.DeletedEntryError, shardkit.EntryNotFoundError)
    assert issubclass(shardkit.UnsupportedVersionError, NotImplementedError)
    assert issubclass(shardkit.BadMagicError, shardkit.FormatError)
    assert issubclass(shardkit.ChecksumError, shardkit.CorruptShardError)
    err = shardkit.ChecksumError("header", 0x1234, 0x5678, offset=12, field="/header_crc")
    assert str(err) == ("checksum mismatch in header: stored 0x1234, computed 0x5678 "
                        "(at byte 12, field /header_crc)")
    assert (err.region, err.stored, err.computed) == ("header", 0x1234, 0x5678)
    missing = shardkit.EntryNotFoundError(b"\x01\x02")
    assert str(missing) == "key not found: 0102"
    assert Problem("slot", "bad", 40).to_dict() == {"check": "slot", "message": "bad",
                                                   "offset": 40, "field": None}


def test_dataset_folder_is_recognised_locally_and_by_url(tmp_path):
    ds = tmp_path / "dataset"
    shutil.copytree(Path(__file__).parent / "data" / "neuroglancer" / "cv_identity_raw", ds)
    for target in (ds, ds.as_uri()):
        with shardkit.open(target) as opened:
            assert opened.format_id == "neuroglancer"
            assert opened.spec.shard_bits == 2
    (tmp_path / "plain").mkdir()
    with pytest.raises(shardkit.ShardkitError):
        shardkit.open(tmp_path / "plain")
