"""ZS (zs 0.10): the reference's own files, files made by ``zs make``, the writer, verify, remote.

The reference implementation (``zs`` 0.10.0) needs Python 3.6 for its C extension; the interop
tests find it through ``ZS_PYTHON`` (a Python with ``zs`` installed, run as ``-m zs``) or a
``zs`` command on PATH, and are skipped with a reason otherwise. The files it made are committed
(tests/data/zs/MANIFEST.md), so everything else runs without it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import itertools
import json
import os
import random
import shutil
import struct
import subprocess
from pathlib import Path
from typing import Any

import pytest
from shardkit.generated.zs import Zs

import shardkit
from shardkit.errors import (
    ChecksumError,
    LayoutError,
    ShardkitError,
    TruncatedError,
    UnknownFormatError,
    UnsupportedVersionError,
)
from shardkit.formats.zs import BlockChecksumError, IncompleteFileError, ZsFile
from shardkit.hashing.crc64xz import crc64xz
from shardkit.writers.zs import UnsortedInputError, build_zs, write_zs
from shardkit.writers.zss import encode_uleb128

DATA = Path(__file__).parent / "data" / "zs"
REF = DATA / "reference"
BROKEN = REF / "broken-files"
MADE = DATA / "made"
LETTERS = [bytes([c]) * n for c in range(ord("b"), ord("z") + 1, 2) for n in (1, 2)]

_spec = importlib.util.spec_from_file_location("zs_made_inputs", MADE / "inputs.py")
assert _spec is not None and _spec.loader is not None
inputs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(inputs)


# -- the reference's sample files -----------------------------------------------------------------


@pytest.mark.parametrize("codec", ["none", "deflate", "lzma"])
def test_reference_samples_read_to_their_records(codec: str) -> None:
    with shardkit.open(REF / f"letters-{codec}.zs") as z:
        assert isinstance(z, ZsFile)
        assert list(z) == LETTERS
        assert len(z) == 26
        assert z.metadata["test-data"] == "letters"
        assert z.metadata["build-info"]["host"] == "test-host"
        assert z.codec == {"lzma": "lzma2;dsize=2^20"}.get(codec, codec)
        assert z.verify() == []
        assert list(z.search(prefix=b"d")) == [b"d", b"dd"]
        assert list(z.search(prefix=b"c")) == []
        assert list(z.search(start=b"x", stop=b"zz")) == [b"x", b"xx", b"z"]
        assert list(z.search(prefix=b"x", start=b"xa")) == [b"xx"]
        assert b"jj" in z and b"j" in z and b"k" not in z
        assert z.count(start=b"m") == 14
        info = z.summary(counts=True)
        assert info["record_count"] == 26
        assert info["root_index_offset"] == z.root
        sha = hashlib.sha256()
        for block, body in z.iter_blocks():
            if block.level == 0:
                sha.update(body)
        assert sha.digest() == z.data_sha256


@pytest.mark.parametrize("codec", ["none", "deflate", "lzma"])
def test_reference_search_matrix(codec: str) -> None:
    """The start/stop/prefix combinations of the reference's own reader test, every letter."""
    with shardkit.open(REF / f"letters-{codec}.zs") as z:
        for c in range(ord("a"), ord("z") + 1):
            b = bytes([c])
            for start, stop, prefix in [
                    (None, None, None), (b, None, None), (None, b, None), (None, None, b),
                    (b, b, None), (b, bytes([c + 1]), None), (b, bytes([c + 2]), None),
                    (b, bytes([c + 3]), None), (b, b"q", None), (None, 2 * b, b),
                    (b"m", b"s", b)]:
                expected = [r for r in LETTERS if (start is None or r >= start)
                            and (stop is None or r < stop)
                            and (prefix is None or r.startswith(prefix))]
                assert list(z.search(start=start, stop=stop, prefix=prefix)) == expected
        assert list(z.search(stop=b"bb", prefix=b"b")) == [b"b"]


def test_reference_sample_header_fields() -> None:
    with shardkit.open(REF / "letters-none.zs") as z:
        h = z.header
        assert (h.root_offset, h.root_length, h.file_length) == (862, 21, 883)
        assert h.header_length == 223
        assert z.summary()["levels"] == 6  # branching factor 2: 13 data blocks, 5 index levels
        json.dumps(z.to_dict())
        sections = z.sections()
        assert sections[0].name == "/magic" and sections[-1].end == 883
        blocks = [s for s in sections if s.name.startswith("/blocks/")]
        assert blocks[0].start == 24 + 223
        assert all(a.end == b.start for a, b in itertools.pairwise(blocks))
        assert [s.extra["is_root"] for s in blocks].count(True) == 1


@pytest.mark.parametrize("codec", ["none"])
def test_kaitai_schema_parses_the_sample(codec: str) -> None:
    raw = (REF / f"letters-{codec}.zs").read_bytes()
    ks = Zs.from_bytes(raw)
    assert crc64xz(ks.header_crc64xz_input) == ks.header_crc64xz
    records = [r.record for b in ks.blocks if b.body.level == 0
               for r in b.body.payload.records]
    assert records == LETTERS
    for b in ks.blocks:
        assert crc64xz(b._raw_body) == b.crc64xz  # level byte and payload
    root = ks.root.body
    assert root.level == 5
    with shardkit.open(raw) as z:
        assert [e.key for e in root.payload.entries] == list(z.root_block.keys)


# -- the 44 broken files: zs validate's verdicts ----------------------------------------------

#: File -> what ``zs validate`` says (sound / refused at open / refused by validation) and the
#: exception (refused at open) or the problem checks shardkit reports.
BROKEN_VERDICTS: dict[str, tuple[str, Any]] = {
    "bad-codec.zs": ("open", UnsupportedVersionError),
    "bad-data-order.zs": ("problems", {"order"}),
    "bad-index-key-1.zs": ("problems", {"index_key"}),
    "bad-index-key-2.zs": ("problems", {"index_key"}),
    "bad-index-key-3.zs": ("problems", {"index_key"}),
    "bad-index-order.zs": ("problems", {"order", "index_order", "index_key"}),
    "bad-level-index-1.zs": ("problems", {"reference"}),
    "bad-level-index-2.zs": ("problems", {"reference"}),
    "bad-level-root.zs": ("problems", {"root", "unreferenced"}),
    "bad-magic.zs": ("open", UnknownFormatError),
    "bad-ref-length.zs": ("problems", {"length"}),
    "bad-sha256.zs": ("problems", {"sha256"}),
    "bad-total-length.zs": ("open", TruncatedError),
    "empty-data.zs": ("problems", {"body"}),
    "empty-index.zs": ("problems", {"body", "unreferenced"}),
    "good-extension-blocks.zs": ("sound", None),
    "good-extension-header-fields.zs": ("sound", None),
    "good-index-key-1.zs": ("sound", None),
    "good-index-key-2.zs": ("sound", None),
    "good-index-key-3.zs": ("sound", None),
    "header-checksum.zs": ("open", ChecksumError),
    "incomplete-magic.zs": ("open", IncompleteFileError),
    "non-dict-metadata.zs": ("open", LayoutError),
    "partial-data-1.zs": ("problems", {"body", "sha256"}),
    "partial-data-2.zs": ("problems", {"body", "sha256"}),
    "partial-index-1.zs": ("problems", {"body", "unreferenced"}),
    "partial-index-2.zs": ("problems", {"body", "unreferenced"}),
    "partial-index-3.zs": ("problems", {"body", "unreferenced"}),
    "partial-index-4.zs": ("problems", {"body", "unreferenced"}),
    "post-header-junk.zs": ("problems", {"framing", "root", "sha256"}),
    "repeated-index.zs": ("problems", {"reference", "unreferenced"}),
    "root-checksum.zs": ("problems", {"checksum", "root", "unreferenced"}),
    "root-is-data.zs": ("problems", {"root"}),
    "short-root.zs": ("problems", {"root"}),
    "truncated-data-1.zs": ("problems", {"framing"}),
    "truncated-data-2.zs": ("problems", {"framing"}),
    "truncated-data-3.zs": ("problems", {"framing"}),
    "truncated-root.zs": ("problems", {"framing", "root", "unreferenced"}),
    "unref-data.zs": ("problems", {"unreferenced"}),
    "unref-index.zs": ("problems", {"root", "unreferenced"}),
    "wrong-root-length.zs": ("problems", {"root", "unreferenced"}),
    "wrong-root-level-1.zs": ("problems", {"level"}),
    "wrong-root-level-2.zs": ("problems", {"level"}),
    "wrong-root-offset.zs": ("problems", {"root", "unreferenced"}),
}


def test_every_broken_file_has_a_verdict() -> None:
    on_disk = sorted(p.name for p in BROKEN.glob("*.zs"))
    assert len(on_disk) == 44
    assert on_disk == sorted(BROKEN_VERDICTS)


@pytest.mark.parametrize("name", sorted(BROKEN_VERDICTS))
def test_broken_file_verdict(name: str) -> None:
    kind, detail = BROKEN_VERDICTS[name]
    if kind == "open":
        with pytest.raises(detail) as info:
            shardkit.open(BROKEN / name)
        assert info.value.offset is not None
        return
    with shardkit.open(BROKEN / name) as z:
        problems = z.verify()
    if kind == "sound":
        assert problems == []
        with shardkit.open(BROKEN / name) as z:
            assert list(z) == sorted(z)
        return
    assert {p.check for p in problems} == detail
    for p in problems:
        assert p.offset is not None and 0 <= p.offset < (BROKEN / name).stat().st_size


#: Files the reference refuses on casual use too (its test_reader.py: reading every record and
#: a search from b"\\x00", without validate).
REFUSED_ON_READ = ["short-root", "truncated-root", "bad-magic", "incomplete-magic",
                   "header-checksum", "root-checksum", "bad-codec", "non-dict-metadata",
                   "truncated-data-1", "truncated-data-2", "truncated-data-3",
                   "wrong-root-offset", "root-is-data", "wrong-root-level-1", "partial-data-1",
                   "partial-data-2", "empty-data", "partial-index-1", "partial-index-2",
                   "partial-index-3", "partial-index-4", "empty-index", "bad-total-length",
                   "bad-level-root", "bad-level-index-2", "post-header-junk"]


@pytest.mark.parametrize("name", REFUSED_ON_READ)
def test_broken_files_refused_on_read(name: str) -> None:
    with pytest.raises(ShardkitError), shardkit.open(BROKEN / f"{name}.zs") as z:
        list(z)
        list(z.search(start=b"\x00"))


def test_broken_file_details() -> None:
    with shardkit.open(BROKEN / "bad-ref-length.zs") as z:
        (p,) = z.verify()
    assert p.offset == 134 and p.field == "/blocks/@134/body/payload/entries/0/len_block"
    assert "length 15" in p.message and "14 bytes" in p.message
    with shardkit.open(BROKEN / "bad-index-key-1.zs") as z:
        (p,) = z.verify()
    assert p.offset == 120 and "'b'" in p.message and "'a'" in p.message
    with shardkit.open(BROKEN / "root-checksum.zs") as z:
        checks = [p for p in z.verify() if p.check == "checksum"]
        assert checks[0].offset == 120 + 6 and checks[0].field == "/blocks/@120/crc64xz"
        with pytest.raises(BlockChecksumError):
            list(z.search(prefix=b"a"))
    with pytest.raises(IncompleteFileError, match="unfinished ZS file"):
        shardkit.open(BROKEN / "incomplete-magic.zs")
    with shardkit.open(BROKEN / "good-extension-blocks.zs") as z:
        assert list(z) == [b"a", b"b", b"c", b"d"]
        assert list(z.search(prefix=b"c")) == [b"c"]
        assert z.summary(counts=True)["extension_blocks"] == 192
    with shardkit.open(BROKEN / "good-extension-header-fields.zs") as z:
        assert z.header.extensions == b"0123456789"


# -- files made by zs make ------------------------------------------------------------------------


def _expected(name: str) -> list[bytes]:
    return inputs.lines() if name.startswith("lines") else inputs.binary_records()


MADE_FILES = sorted(p.name for p in MADE.glob("*.zs"))


def test_made_set_covers_the_options() -> None:
    assert len(MADE_FILES) == 11
    for codec in ("none", "deflate", "lzma"):
        assert any(f"-{codec}-" in n for n in MADE_FILES)
    assert any("u64le" in n for n in MADE_FILES) and any("uleb128" in n for n in MADE_FILES)
    assert any(r == b"" for r in inputs.binary_records())
    assert any(b"\x00" in r for r in inputs.binary_records())
    assert any(b"\n" in r for r in inputs.binary_records())


@pytest.mark.parametrize("name", MADE_FILES)
def test_made_files_read_back_equal(name: str) -> None:
    expected = _expected(name)
    with shardkit.open(MADE / name) as z:
        assert list(z) == expected
        assert z.verify() == []
        if "bf2" in name or "bf3" in name:
            assert z.summary()["levels"] >= 5
        if "u64le" not in name and "bf16" not in name:
            assert z.metadata["dataset"]["nested"] == {"depth": [1, {"x": None}]}
        rng = random.Random(name)
        for _ in range(40):
            prefix = rng.choice(expected)[: rng.randrange(0, 5)]
            assert list(z.search(prefix=prefix)) == [r for r in expected
                                                      if r.startswith(prefix)]
            lo, hi = sorted(rng.sample(expected, 2))
            assert list(z.iter(start=lo, stop=hi)) == [r for r in expected if lo <= r < hi]


# -- the writer -----------------------------------------------------------------------------------

BINARY = sorted([b"", b"", b"\x00", b"a\nb", b"\xff" * 300] +
                [struct.pack(">I", i * 7919 % 100_003) for i in range(5000)])


@pytest.mark.parametrize("codec", ["none", "deflate", "lzma"])
@pytest.mark.parametrize("jobs", [1, 2])
def test_writer_round_trip(tmp_path: Path, codec: str, jobs: int) -> None:
    path = tmp_path / "out.zs"
    n = write_zs(path, iter(BINARY), codec=codec, jobs=jobs, approx_block_size=2000,
                 branching_factor=4, metadata={"k": [1, {"n": None}]})
    assert n == len(BINARY)
    raw = path.read_bytes()
    assert raw[:8] == b"\xabZSfiLe\x01"
    with shardkit.open(path) as z:
        assert list(z) == BINARY
        assert z.verify() == []
        assert z.metadata == {"k": [1, {"n": None}]}
        assert z.header.file_length == len(raw)
        assert list(z.search(prefix=b"\x00\x00\x01")) == [r for r in BINARY
                                                          if r.startswith(b"\x00\x00\x01")]
    if jobs == 2:
        assert raw == build_zs(BINARY, codec=codec, approx_block_size=2000,
                               branching_factor=4, metadata={"k": [1, {"n": None}]})


def test_writer_progress_and_batches() -> None:
    import io

    seen: list[int] = []
    buf = io.BytesIO()
    records = [b"%08d" % i for i in range(150_000)]
    assert write_zs(buf, iter(records), codec="none", progress=seen.append) == 150_000
    assert seen == [65536, 131072, 150_000]
    with shardkit.open(buf.getvalue()) as z:
        assert list(z) == records


def test_writer_refuses_unsorted_input_and_leaves_no_file(tmp_path: Path) -> None:
    path = tmp_path / "out.zs"
    with pytest.raises(UnsortedInputError) as info:
        write_zs(path, [b"a", b"b", b"c", b"bb"], codec="deflate")
    assert info.value.index == 3 and info.value.record == b"bb" and "record 3" in str(info.value)
    assert not path.exists() and list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match="at least one record"):
        write_zs(path, [], codec="deflate")
    assert not path.exists()


def test_writer_leaves_unfinished_magic_on_error() -> None:
    import io

    from shardkit.writers.zs import ZsWriter

    buf = io.BytesIO()
    with pytest.raises(UnsortedInputError), ZsWriter(buf, codec="none") as w:
        w.add_many([b"b", b"a"])
    with pytest.raises(IncompleteFileError):
        shardkit.open(buf.getvalue())


def test_writer_options_are_checked() -> None:
    with pytest.raises(ValueError, match="codec"):
        build_zs([b"a"], codec="bz2")
    with pytest.raises(ValueError, match="lzma level"):
        build_zs([b"a"], codec="lzma", level=2)
    with pytest.raises(TypeError, match="record 1 is a str"):
        build_zs([b"a", "b"], codec="none")
    assert build_zs([bytearray(b"a"), memoryview(b"b")], codec="none") == \
        build_zs([b"a", b"b"], codec="none")
    with pytest.raises(ValueError, match="deflate level"):
        build_zs([b"a"], codec="deflate", level=11)
    assert len(build_zs([b"a"], codec="lzma", level="1e")) > 0


def test_writer_block_layout_matches_the_spec() -> None:
    raw = build_zs([b"a", b"b"], codec="none", metadata={})
    ks = Zs.from_bytes(raw)
    (data, root) = ks.blocks
    assert data.body.level == 0 and [r.record for r in data.body.payload.records] == [b"a", b"b"]
    (entry,) = root.body.payload.entries
    assert (entry.key, entry.ofs_block.value) == (b"a", ks.ofs_blocks)
    assert entry.len_block.value == 1 + 5 + 8
    assert ks.header.sha256 == hashlib.sha256(b"\x01a\x01b").digest()
    assert ks.header.len_file == len(raw)


# -- damage ---------------------------------------------------------------------------------------


def test_damaged_blocks_are_reported_with_offsets() -> None:
    raw = bytearray(build_zs(BINARY, codec="deflate", approx_block_size=4000))
    with shardkit.open(bytes(raw)) as z:
        second = [b for b, _ in z.iter_blocks()][1]
    raw[second.payload_offset + 3] ^= 0xFF
    with shardkit.open(bytes(raw)) as z:
        problems = z.verify()
        assert problems[0].check == "checksum" and problems[0].offset == second.crc_offset
        with pytest.raises(BlockChecksumError):
            list(z)


def test_file_length_mismatch_is_refused() -> None:
    raw = build_zs([b"a"], codec="none")
    with pytest.raises(LayoutError, match="header says"):
        shardkit.open(raw + b"\x00")
    with pytest.raises(TruncatedError):
        shardkit.open(raw[:-1])


# -- remote ---------------------------------------------------------------------------------------


def test_remote_prefix_search_costs_few_requests(tmp_path: Path, range_server) -> None:
    rng = random.Random(3)
    records = sorted(b"%07d %s" % (i, rng.randbytes(20).hex().encode()) for i in range(140_000))
    write_zs(tmp_path / "big.zs", records, codec="deflate", branching_factor=16,
             approx_block_size=16384)
    size = (tmp_path / "big.zs").stat().st_size
    assert size > 3 << 20
    srv = range_server(tmp_path)
    with shardkit.open(srv.url("big.zs")) as z:
        assert z.summary()["levels"] >= 3
        srv.reset()
        got = list(z.search(prefix=b"0065"))
        assert got == [r for r in records if r.startswith(b"0065")]
        assert srv.count() <= 10
        assert sum(r.body_bytes for r in srv.requests) < size // 8


# -- the reference, live ---------------------------------------------------------------------------


def _reference() -> list[str] | None:
    exe = os.environ.get("ZS_PYTHON")
    if exe:
        return [exe, "-m", "zs"]
    found = shutil.which("zs")
    return [found] if found else None


ZS_CMD = _reference()
needs_zs = pytest.mark.skipif(ZS_CMD is None, reason="the zs 0.10.0 reference is not installed "
                              "(set ZS_PYTHON to a Python 3.6 with zs, or put zs on PATH)")


def _zs(*args: str) -> subprocess.CompletedProcess[bytes]:
    assert ZS_CMD is not None
    return subprocess.run([*ZS_CMD, *args], capture_output=True, timeout=120, check=False)


@pytest.mark.interop
@needs_zs
@pytest.mark.parametrize("codec", ["none", "deflate", "lzma"])
def test_reference_accepts_and_reads_back_our_files(tmp_path: Path, codec: str) -> None:
    path = tmp_path / f"ours-{codec}.zs"
    write_zs(path, BINARY, codec=codec, approx_block_size=1500, branching_factor=3, jobs=2,
             metadata={"who": "shardkit"})
    done = _zs("validate", "-j", "0", str(path))
    assert done.returncode == 0 and b"looks good" in done.stdout, done.stdout + done.stderr
    for mode in ("uleb128", "u64le"):
        out = tmp_path / f"dump.{mode}"
        done = _zs("dump", "-j", "0", f"--length-prefixed={mode}", "-o", str(out), str(path))
        assert done.returncode == 0, done.stderr
        data, got, pos = out.read_bytes(), [], 0
        while pos < len(data):
            if mode == "u64le":
                (n,), pos = struct.unpack_from("<Q", data, pos), pos + 8
            else:
                n = shift = 0
                while True:
                    b = data[pos]
                    pos += 1
                    n |= (b & 0x7F) << shift
                    shift += 7
                    if b < 0x80:
                        break
            got.append(data[pos:pos + n])
            pos += n
        assert got == BINARY
    done = _zs("info", str(path))
    assert json.loads(done.stdout)["metadata"] == {"who": "shardkit"}


@pytest.mark.interop
@needs_zs
@pytest.mark.parametrize("codec", ["none", "deflate", "lzma"])
@pytest.mark.parametrize("bf", [2, 1024])
def test_live_zs_make_files_read_back(tmp_path: Path, codec: str, bf: int) -> None:
    src = tmp_path / "in.uleb128"
    src.write_bytes(b"".join(encode_uleb128(len(r)) + r for r in BINARY))
    path = tmp_path / "ref.zs"
    done = _zs("make", "--no-spinner", "-j", "2", f"--codec={codec}", f"--branching-factor={bf}",
               "--approx-block-size=700", "--length-prefixed=uleb128",
               '{"a": {"b": [1, 2]}}', str(src), str(path))
    assert done.returncode == 0, done.stderr
    with shardkit.open(path) as z:
        assert list(z) == BINARY
        assert z.verify() == []
        assert z.metadata["a"] == {"b": [1, 2]}
        assert "build-info" in z.metadata
        assert list(z.search(prefix=b"\x00\x01")) == [r for r in BINARY
                                                      if r.startswith(b"\x00\x01")]


# -- bounded memory on large files --------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["zs", "zss"])
def test_scans_give_back_the_mapped_pages_behind_them(tmp_path: Path, fmt: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Iteration and verify release what they have read (FileSource.release, madvise), so
    their resident memory does not grow with the file; every byte behind the scan is given
    back once, in order."""
    import shardkit.formats._sorted_set as shared
    from shardkit.sources import FileSource
    from shardkit.writers.zss import write_zss

    monkeypatch.setattr(shared, "RELEASE_STEP", 4096)
    path = tmp_path / f"r.{fmt}"
    if fmt == "zs":
        write_zs(path, BINARY, codec="none", approx_block_size=2000)
    else:
        write_zss(path, BINARY, codec="none+crc32c", approx_block_size=2000)
    source = FileSource(path)
    calls: list[tuple[int, int]] = []
    release = source.release
    monkeypatch.setattr(source, "release",
                        lambda a, b: (calls.append((a, b)), release(a, b))[1])
    with shardkit.open(source, format=fmt) as z:
        assert [r for r in z] == BINARY  # one scan (list() would ask len() first)
        first = calls[0][0]
        assert all(a[1] == b[0] for a, b in itertools.pairwise(calls))
        assert calls[-1][1] > path.stat().st_size - 8192
        calls.clear()
        assert z.verify() == []
        assert calls[0][0] == first and calls[-1][1] > path.stat().st_size - 8192
        assert list(z.search(prefix=b"\x00\x00\x01")) == [r for r in BINARY
                                                          if r.startswith(b"\x00\x00\x01")]


# -- the command line ----------------------------------------------------------------------------


def test_cli_reads_zs(capsys: pytest.CaptureFixture[str]) -> None:
    from shardkit.cli import main

    path = str(REF / "letters-deflate.zs")
    assert main(["ls", "--prefix", "x", path]) == 0
    assert capsys.readouterr().out.split() == ["x", "xx"]
    assert main(["ls", "--start", "m", "--stop", "p", path]) == 0
    assert capsys.readouterr().out.split() == ["n", "nn"]
    assert main(["ls", "--json", "--prefix", "z", path]) == 0
    assert "7a7a" in capsys.readouterr().out
    assert main(["get", path, "jj"]) == 0
    capsys.readouterr()
    assert main(["get", path, "k"]) == 1
    capsys.readouterr()
    assert main(["info", "--counts", "--json", path]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["record_count"] == 26 and info["format"] == "zs"
    assert main(["map", "--json", path]) == 0
    sections = json.loads(capsys.readouterr().out)
    assert sections[0]["name"] == "/magic" and sections[-1]["end"] == 904
    assert main(["dump", path]) == 0
    assert json.loads(capsys.readouterr().out)["blocks_detail"]
    assert main(["verify", path]) == 0
    capsys.readouterr()
    assert main(["verify", str(BROKEN / "bad-index-key-2.zs")]) == 1
    assert "index_key" in capsys.readouterr().out
    assert main(["info", str(BROKEN / "incomplete-magic.zs")]) == 2
    assert "unfinished ZS file" in capsys.readouterr().err
    assert main(["formats"]) == 0
    assert "ZS compressed sorted records" in capsys.readouterr().out


@pytest.mark.parametrize("codec", ["none", "deflate", "lzma"])
@pytest.mark.parametrize("framing", [None, "uleb128", "u64le"])
def test_cli_create_zs(tmp_path: Path, capsys: pytest.CaptureFixture[str], codec: str,
                      framing: str | None) -> None:
    from shardkit.cli import main

    if framing is None:
        records = [r for r in BINARY if b"\n" not in r]
        data = b"".join(r + b"\n" for r in records)
    else:
        records = BINARY
        data = b"".join((encode_uleb128(len(r)) if framing == "uleb128"
                         else struct.pack("<Q", len(r))) + r for r in records)
    src = tmp_path / "in.bin"
    src.write_bytes(data)
    out = tmp_path / "out.zs"
    argv = ["create", "--format", "zs", "--codec", codec, "--jobs", "2", "--metadata",
            '{"m": {"n": [1]}}', "--approx-block-size", "3000", "--branching-factor", "4",
            str(out), str(src), "--json"]
    if framing:
        argv[3:3] = ["--length-prefixed", framing]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["records"] == len(records)
    with shardkit.open(out) as z:
        assert list(z) == records and z.verify() == []
        assert z.metadata == {"m": {"n": [1]}}
    if ZS_CMD is not None:
        done = _zs("validate", "-j", "0", str(out))
        assert done.returncode == 0, done.stdout


def test_cli_create_zs_refuses_bad_input(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    from shardkit.cli import main

    src = tmp_path / "in.txt"
    src.write_bytes(b"a\nc\nb\n")
    out = tmp_path / "out.zs"
    assert main(["create", "--format", "zs", str(out), str(src)]) == 2
    assert f"{src}: record 2 (line 3) is not sorted" in capsys.readouterr().err
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["in.txt"]
    src.write_bytes(b"a\n")
    assert main(["create", "--format", "zs", "--codec", "bz2", str(out), str(src)]) == 2
    assert "not a ZS codec" in capsys.readouterr().err
    assert main(["create", "--format", "zs", "-z", "3", str(out), str(src)]) == 2
    assert "lzma levels are 0, 1, 0e or 1e" in capsys.readouterr().err
    assert main(["create", "--format", "zs", "--codec", "deflate", "-z", "1e", str(out),
                 str(src)]) == 2
    assert "deflate levels are 0 to 9" in capsys.readouterr().err
    assert main(["create", "--format", "zss", "-z", "1e", str(out), str(src)]) == 2
    assert "extreme levels (Ne) are lzma's" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["create", "--format", "zs", "-z", "e", str(out), str(src)])
    assert exc.value.code == 2 and "not a level" in capsys.readouterr().err
    src.write_bytes(b"")
    assert main(["create", "--format", "zs", str(out), str(src)]) == 2
    assert "at least one record" in capsys.readouterr().err


@pytest.mark.parametrize("level", ["0", "1", "0e", "1e"])
def test_cli_create_zs_lzma_levels(tmp_path: Path, level: str) -> None:
    """``-z N`` and ``-z Ne`` (lzma's extreme mode) give the library's bytes for that level."""
    from shardkit.cli import main

    rng = random.Random(7)
    records = sorted(b"%08d %s" % (rng.randrange(10**8), bytes(rng.choices(b"abcdefgh", k=40)))
                     for _ in range(3000))
    src = tmp_path / "in.txt"
    src.write_bytes(b"".join(r + b"\n" for r in records))
    out = tmp_path / "out.zs"
    assert main(["create", "--format", "zs", "-z", level, str(out), str(src)]) == 0
    want = int(level) if level.isdigit() else level
    data = out.read_bytes()
    assert data == build_zs(records, codec="lzma", level=want, record_overhead=1)
    other = level[:-1] if level.endswith("e") else level + "e"
    assert data != build_zs(records, codec="lzma", level=other, record_overhead=1)
    with shardkit.open(out) as z:
        assert list(z) == records


def test_deflate_without_zlib_ng_reads_and_writes_the_same_records(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Where zlib-ng is missing, the standard zlib reads and writes ZS deflate (the fallback);
    each reads the other's blocks."""
    import zlib

    from shardkit.formats.zs import reader as zs_reader
    from shardkit.writers import zs as zs_writer

    fast = build_zs(BINARY, codec="deflate", approx_block_size=500)
    monkeypatch.setattr(zs_reader, "_deflate", zlib)
    monkeypatch.setattr(zs_writer, "_deflate", zlib)
    plain = build_zs(BINARY, codec="deflate", approx_block_size=500)
    assert (fast != plain) == (zs_reader._DECODE_ERRORS[1] is not zlib.error)  # zlib-ng: others
    for data in (fast, plain):
        with shardkit.open(data) as z:
            assert list(z) == BINARY and z.verify() == []
    with shardkit.open(REF / "letters-deflate.zs") as z:
        assert list(z) == LETTERS and z.verify() == []
    monkeypatch.undo()
    for data in (fast, plain):
        with shardkit.open(data) as z:
            assert list(z) == BINARY


def test_ci_skips_the_live_reference_only_with_a_stated_reason() -> None:
    """conftest's CI hook: no ZS_PYTHON and no zs on PATH is a failure unless .ci/run said
    why (no Python 3.6 for the reference)."""
    from conftest import missing_zs_reference

    on_path = shutil.which("zs") is not None
    assert missing_zs_reference({}) == ([] if on_path else ["zs 0.10.0 (ZS_PYTHON)"])
    assert missing_zs_reference({"ZS_PYTHON": "/x/python3.6"}) == []
    assert missing_zs_reference({"SHARDKIT_NO_ZS_REFERENCE": "no Python 3.6"}) == []
