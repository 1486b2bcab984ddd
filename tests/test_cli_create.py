"""``shardkit create [--format FMT] OUT INPUT...``: the dispatcher, its shared options and the
record input (``iter_records``), run as the real command."""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import shardkit
from shardkit.cli import main
from shardkit.cli.common import iter_records
from shardkit.errors import ShardkitError
from shardkit.writers.zss import encode_uleb128

RECORDS = sorted([b"apple", b"banana", b"cherry", b"date\x00with nul", b"elderberry"] +
                 [b"k%05d" % i for i in range(3000)])


def _records_of(path: Path) -> list[bytes]:
    with shardkit.open(path) as z:
        assert z.format_id == "zss"
        assert not z.verify()
        return list(z)


def _args(inputs: list[str], **kw: object) -> argparse.Namespace:
    base = {"inputs": inputs, "terminator": None, "length_prefixed": None}
    base.update(kw)
    return argparse.Namespace(**base)


# -- iter_records ------------------------------------------------------------------------------

def test_iter_records_terminated_prefixed_and_stdin(tmp_path: Path, monkeypatch) -> None:
    lines = tmp_path / "lines.txt"
    lines.write_bytes(b"a\nbb\n\nccc")  # an empty record, and a last one without terminator
    assert list(iter_records(_args([str(lines)]))) == [b"a", b"bb", b"", b"ccc"]
    nul = tmp_path / "nul.bin"
    nul.write_bytes(b"x\0y\ny\0")
    assert list(iter_records(_args([str(nul)], terminator="\\0"))) == [b"x", b"y\ny"]
    big = [b"r" * 200, b"", b"s" * 3]
    uleb = tmp_path / "uleb.bin"
    uleb.write_bytes(b"".join(encode_uleb128(len(r)) + r for r in big))
    u64 = tmp_path / "u64.bin"
    u64.write_bytes(b"".join(len(r).to_bytes(8, "little") + r for r in big))
    assert list(iter_records(_args([str(uleb)], length_prefixed="uleb128"))) == big
    assert list(iter_records(_args([str(u64), str(u64)], length_prefixed="u64le"))) == big * 2
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"p\nq\n")))
    assert list(iter_records(_args(["-"]))) == [b"p", b"q"]


@pytest.mark.parametrize(("data", "kind", "message"), [
    (b"\x05abc", "uleb128", "uleb.bin: truncated: record 0 at byte 0: length 5 is more than "
                            "3 byte(s) left in the file"),
    (b"\x01a\x80", "uleb128", "uleb.bin: truncated: record 1 at byte 2: uleb128 length cut off"),
    (b"\x01\x00\x00", "u64le", "uleb.bin: truncated: record 0 at byte 0: u64le length needs 8 "
                               "bytes, got 3"),
    ((1 << 62).to_bytes(8, "little"), "u64le",
     "uleb.bin: truncated: record 0 at byte 0: length 4611686018427387904 is more than 0 "
     "byte(s) left in the file"),
])
def test_iter_records_refuses_cut_input_naming_record_and_offset(tmp_path, data, kind, message):
    path = tmp_path / "uleb.bin"
    path.write_bytes(data)
    with pytest.raises(ShardkitError) as err:
        list(iter_records(_args([str(path)], length_prefixed=kind)))
    assert str(err.value).endswith(message)


# -- create --format zss -----------------------------------------------------------------------

def test_create_zss_from_lines_reads_back(tmp_path: Path, capsys) -> None:
    src = tmp_path / "in.txt"
    src.write_bytes(b"".join(r + b"\n" for r in RECORDS if b"\n" not in r))
    out = tmp_path / "out.zss"
    code = main(["create", "--format", "zss", str(out), str(src), "--json",
                 "--metadata", '{"who": "test"}', "--approx-block-size", "4K",
                 "--branching-factor", "4", "-z", "1"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    assert data == {"shard": str(out), "format": "zss", "created": True,
                    "records": len(RECORDS), "size": out.stat().st_size, "codec": "zlib"}
    assert _records_of(out) == RECORDS
    with shardkit.open(out) as z:
        info = z.summary(counts=True)
    assert info["metadata"] == {"who": "test"} and info["codec"] == "zlib"
    assert info["levels"] >= 3  # branching factor 4 over many 4K blocks
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


@pytest.mark.parametrize("codec", ["bz2", "none+crc32c"])
def test_create_zss_codecs_and_length_prefixed(tmp_path: Path, capsys, codec: str) -> None:
    src = tmp_path / "in.bin"
    src.write_bytes(b"".join(encode_uleb128(len(r)) + r for r in RECORDS))
    out = tmp_path / "out.zss"
    assert main(["create", "--format", "zss", "--codec", codec, "--length-prefixed",
                 "uleb128", str(out), str(src)]) == 0
    assert capsys.readouterr().out == f"{out}: {len(RECORDS)} records " \
                                      f"({out.stat().st_size} bytes, {codec})\n"
    assert _records_of(out) == RECORDS


def test_create_zss_from_stdin_as_a_process(tmp_path: Path) -> None:
    out = tmp_path / "s.zss"
    proc = subprocess.run([sys.executable, "-m", "shardkit", "create", "--format", "zss",
                           "--terminator", "\\0", str(out), "-"],
                          input=b"a\0b\nc\0d\0", capture_output=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert _records_of(out) == [b"a", b"b\nc", b"d"]


def test_create_zss_refusals_are_one_line_and_leave_nothing(tmp_path: Path, capsys) -> None:
    src = tmp_path / "in.txt"
    src.write_bytes(b"a\nc\nb\n")
    out = tmp_path / "out.zss"
    assert main(["create", "--format", "zss", str(out), str(src)]) == 2
    err = capsys.readouterr().err
    assert err == (f"shardkit: error: {src}: record 2 (line 3) is not sorted: b'b' comes "
                   "after b'c' (ZSS records must be in byte order: sort them first, e.g. "
                   "LC_ALL=C sort)\n")
    assert list(tmp_path.iterdir()) == [src]  # no partial file, no temporary left
    for extra, message in [
        (["--codec", "lzma"], "--codec lzma: not a ZSS codec; known: zlib, bz2, bzip2, "
                              "none+crc32c"),
        (["--metadata", "[1]"], "--metadata: must be a JSON object, not list"),
        (["--metadata", "{"], "--metadata: not JSON: "),
        (["--index-init", "zeros"], "create --format zss: --index-init not supported for zss"),
        (["--schema", "a: int"], "create --format zss: --schema not supported for zss"),
        (["--jobs", "2"], "create --format zss: --jobs not supported for zss"),
        (["--terminator", "x", "--length-prefixed", "u64le"],
         "give --terminator or --length-prefixed, not both"),
    ]:
        assert main(["create", "--format", "zss", str(out), str(src), *extra]) == 2
        assert capsys.readouterr().err.startswith("shardkit: error: " + message)
        assert not out.exists()


def test_create_defaults_to_swh_and_refuses_record_options(tmp_path: Path, capsys) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_bytes(b"hello")
    b.write_bytes(b"world!")
    out = tmp_path / "out.shard"
    assert main(["create", str(out), str(a), str(b), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["objects"] == 2 and data["index_init"] == "tombstones"
    with shardkit.open(out) as shard:
        assert shard.format_id == "swh"
        assert shard[hashlib.sha256(b"world!").digest()] == b"world!"
    assert main(["create", "--yes", str(out), str(a), "--codec", "zlib"]) == 2
    assert capsys.readouterr().err == ("shardkit: error: create --format swh: --codec not "
                                       "supported for swh\n")


def test_create_refuses_an_unknown_format_with_usage(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "shardkit", "create", "--format", "nope",
                           str(tmp_path / "x"), "y"], capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 2
    assert "argument --format: invalid choice: 'nope'" in proc.stderr
    assert not os.path.exists(tmp_path / "x")


# -- create --format mdb (from `shardkit dump --json`) -------------------------------------------

MDB_SAMPLES = sorted((Path(__file__).parent / "data" / "mdb").rglob("*.mdb"))


def _dump(path: Path, capsys) -> dict:
    assert main(["dump", "--compact", str(path)]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("sample", MDB_SAMPLES, ids=lambda p: p.parent.name + "/" + p.name[:8])
def test_dump_then_create_mdb_gives_the_same_bytes(tmp_path: Path, capsys, sample: Path):
    dump = tmp_path / "d.json"
    dump.write_text(json.dumps(_dump(sample, capsys)))
    out = tmp_path / "out.mdb"
    assert main(["create", "--format", "mdb", str(out), str(dump), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["same_as_dump"] is True and data["differs"] == []
    assert out.read_bytes() == sample.read_bytes()


def test_create_mdb_names_what_differs_from_the_dump(tmp_path: Path, capsys) -> None:
    sample = next(p for p in MDB_SAMPLES if "session" in p.parts)
    dump = _dump(sample, capsys)
    dump["sections"][0]["note"] = "edited"  # a part the writer makes its own way
    dump["file_size"] += 1
    (tmp_path / "d.json").write_text(json.dumps(dump))
    out = tmp_path / "o.mdb"
    assert main(["create", "--format", "mdb", str(out), str(tmp_path / "d.json")]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[1].startswith("NOTE the dump describes a shard this writer does "
                                           "not lay out the same way; it differs in: ")
    assert f"file_size ({dump['file_size']} in the dump, {dump['file_size'] - 1} written)" in text
    assert 'sections[0].note ("edited" in the dump' in text
    assert out.read_bytes() == sample.read_bytes()  # what it wrote is still a valid shard


def test_create_mdb_from_stdin_and_by_hand(tmp_path: Path) -> None:
    from shardkit.hashing.xet import chunk_hash, display_hex, file_hash, xorb_hash

    raw = chunk_hash(b"0123456789")
    chunk, xorb = display_hex(raw), display_hex(xorb_hash([(raw, 10)]))
    shard = {"files": [{"hash": display_hex(file_hash([(raw, 10)])), "terms": [
                 {"xorb_hash": xorb, "chunk_start": 0, "chunk_end": 1,
                  "unpacked_bytes": 10}]}],
             "xorbs": [{"hash": xorb, "chunks": [{"hash": chunk, "size": 10}]}]}
    out = tmp_path / "h.mdb"
    proc = subprocess.run([sys.executable, "-m", "shardkit", "create", "--format", "mdb",
                           str(out), "-"], input=json.dumps(shard), capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"{out}: 1 files, 1 xorbs ({out.stat().st_size} bytes)\n"
    with shardkit.open(out) as mdb:
        assert mdb.format_id == "mdb" and not mdb.verify()
        assert [str(f.hash) for f in mdb.files] == [shard["files"][0]["hash"]]
        assert mdb.footer is not None and mdb.footer.chunk_lookup_num_entry == 1


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: d["files"][1]["terms"][0].update(chunk_end=-1),
     "files[1].terms[0].chunk_end: must be a whole number from 0 to 4294967295, not -1"),
    (lambda d: d["xorbs"][0]["chunks"][2].update(hash="xyz"),
     "xorbs[0].chunks[2].hash: must be a hash of 64 hex digits, not 'xyz'"),
    (lambda d: d["files"][0].pop("terms"), "files[0].terms: missing"),
    (lambda d: d["files"][0].update(terms={}), "files[0].terms: must be a JSON list"),
    (lambda d: d["xorbs"][0].update(chunks="x"), "xorbs[0].chunks: must be a JSON list"),
    (lambda d: d.update(xorbs={}), "xorbs: must be a JSON list"),
    (lambda d: d.update(footer=[]), "footer: must be a JSON object or null"),
    (lambda d: d.update(format="zss"), "a dump of a zss file, not of an MDB shard"),
])
def test_create_mdb_refuses_bad_input_in_one_line(tmp_path: Path, capsys, edit, message):
    sample = next(p for p in MDB_SAMPLES if "session" in p.parts)
    dump = _dump(sample, capsys)
    edit(dump)
    (tmp_path / "d.json").write_text(json.dumps(dump))
    out = tmp_path / "o.mdb"
    assert main(["create", "--format", "mdb", str(out), str(tmp_path / "d.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert err.startswith(f"shardkit: error: {tmp_path / 'd.json'}: "), err  # the input named
    assert not out.exists()


@pytest.mark.parametrize(("text", "message"), [
    (b"[]", "must be a JSON object (shardkit dump --json of an MDB shard), not list"),
    (b"{", "not JSON: "),
    (b'{"files": "\xff"}', "not JSON: "),
])
def test_create_mdb_refuses_input_that_is_not_a_json_object(tmp_path: Path, capsys, text,
                                                            message) -> None:
    (tmp_path / "d.json").write_bytes(text)
    out = tmp_path / "o.mdb"
    assert main(["create", "--format", "mdb", str(out), str(tmp_path / "d.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"shardkit: error: {tmp_path / 'd.json'}: {message}"), err
    assert not out.exists()


def test_create_mdb_refuses_a_shard_that_would_not_verify(tmp_path: Path) -> None:
    shard = {"files": [], "xorbs": [{"hash": "cd" * 32, "chunks": [{"hash": "ab" * 32,
                                                                     "size": 10}]}]}
    (tmp_path / "in.json").write_text(json.dumps(shard))
    out = tmp_path / "x.mdb"
    assert main(["create", "--format", "mdb", str(out), str(tmp_path / "in.json")]) == 2
    assert not out.exists()


@pytest.mark.parametrize("fmt", ["zss", "zs"])
def test_create_names_the_input_of_an_unsorted_record(tmp_path: Path, capsys, fmt) -> None:
    first, second = tmp_path / "first.txt", tmp_path / "second.bin"
    first.write_bytes(b"a\nb\nc\n")
    second.write_bytes(b"\x01d\x01e\x01c")  # uleb128-framed: d, e, then c after e
    out = tmp_path / f"out.{fmt}"
    assert main(["create", "--format", fmt, str(out), str(first), str(first)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"shardkit: error: {first}: record 0 (line 1) is not sorted: b'a' "
                          "comes after b'c' ("), err
    assert main(["create", "--format", fmt, "--length-prefixed", "uleb128", str(out),
                 str(second)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"shardkit: error: {second}: record 2 is not sorted: b'c' comes "
                          "after b'e' ("), err
    assert not out.exists()


def test_get_with_a_bad_key_names_the_file(capsys) -> None:
    shard = str(Path(__file__).parent / "data" / "swh" / "tiny.shard")
    assert main(["get", shard, "zz"]) == 2
    assert capsys.readouterr().err == f"shardkit: error: {shard}: not a hex key: 'zz'\n"


@pytest.mark.parametrize(("fmt", "existed"), [("zss", False), ("zs", True)])
def test_ctrl_c_in_create_says_what_happened(tmp_path: Path, fmt, existed) -> None:
    import signal
    import time

    out = tmp_path / f"out.{fmt}"
    if existed:
        out.write_bytes(b"the old shard")
    proc = subprocess.Popen([sys.executable, "-m", "shardkit", "create", "--format", fmt,
                             "--yes", "--no-progress", str(out), "-"],
                            stdin=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None
    proc.stdin.write(b"".join(b"%08d\n" % i for i in range(1000)))
    proc.stdin.flush()
    deadline = time.monotonic() + 60  # the temporary file appears once the writer started
    while not any(p.name.endswith(".tmp") for p in tmp_path.iterdir()):
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    what = "is unchanged" if existed else "was not written"
    assert err.decode().strip() == (
        f"shardkit: interrupted: {out} {what} (a shard is written under a temporary name, "
        "renamed only when complete: nothing partial is left); run the command again to "
        "create it")
    assert sorted(p.name for p in tmp_path.iterdir()) == (["out." + fmt] if existed else [])
    if existed:
        assert out.read_bytes() == b"the old shard"


_MDB = Path(__file__).parent / "data" / "mdb" / "real"


def test_mdb_dump_edit_create_recomputes_the_totals(tmp_path: Path, capsys) -> None:
    import shardkit

    original = _MDB / "session" / ("7e1e7419edd76923515e45bb6d841ae38dd5e98c939beafc4cd2b966"
                                   "572dde47.mdb")
    assert main(["dump", str(original)]) == 0
    dump = json.loads(capsys.readouterr().out)
    out = tmp_path / "edited.mdb"

    # one file deleted: the footer's materialized total is the other files' sizes
    edited = dict(dump, files=dump["files"][1:])
    (tmp_path / "d.json").write_text(json.dumps(edited))
    assert main(["create", "--format", "mdb", "--yes", str(out), str(tmp_path / "d.json"),
                 "--json"]) == 0
    said = json.loads(capsys.readouterr().out)
    left = sum(f["size"] for f in dump["files"][1:])
    assert said["recomputed"] == [f"footer.materialized_bytes "
                                  f"({dump['footer']['materialized_bytes']} -> {left})"]
    with shardkit.open(out) as m:
        assert m.verify() == [] and len(m.files) == len(dump["files"]) - 1
        assert m.footer.materialized_bytes == left
        assert m.summary()["variant"] == dump["variant"]  # the form kept: footer, tables

    # the xorb deleted too: its stored bytes go, and its chunk table rows
    edited["xorbs"] = []
    (tmp_path / "d.json").write_text(json.dumps(edited))
    assert main(["create", "--format", "mdb", "--yes", str(out), str(tmp_path / "d.json")]) == 0
    text = capsys.readouterr().out
    assert f"footer.stored_bytes ({dump['footer']['stored_bytes']} -> 0)" in text
    assert f"lookup_tables.chunk ({len(dump['lookup_tables']['chunk'])} -> 0 rows" in text

    # a chunk deleted from a xorb its files use: no total can mend that; the field is named
    edited = json.loads(json.dumps(dump))
    del edited["xorbs"][0]["chunks"][0]
    (tmp_path / "d.json").write_text(json.dumps(edited))
    assert main(["create", "--format", "mdb", "--yes", str(out), str(tmp_path / "d.json")]) == 2
    err = capsys.readouterr().err
    assert "the shard built does not verify: xorb: " in err
    assert "field /xorb_info/blocks/0/chunks/0/ofs_unpacked" in err
