"""Round trips from the shell, run as the real commands: ``ls --json`` or ``ls --hex`` ->
``create`` (ZSS, ZS), SWH ``dump --values`` -> ``create``, and one encoding of bytes (hex)
across ``ls --json``, ``get --json`` and ``dump``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import shardkit
from shardkit.cli import main
from shardkit.writers.zs import write_zs
from shardkit.writers.zss import write_zss

DATA = Path(__file__).parent / "data"
#: records no text form keeps: empty, newlines, NUL, bytes that are not UTF-8
RECORDS = sorted([b"", b"a\nb", b"\x00\xff", b"apple", b"b\r\n", b"caf\xc3\xa9", b"\xff" * 3])


def _run(argv: list[str], capsys) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(params=["zss", "zs"])
def records_file(request, tmp_path: Path) -> tuple[str, Path]:
    path = tmp_path / f"in.{request.param}"
    (write_zss if request.param == "zss" else write_zs)(path, RECORDS)
    return request.param, path


@pytest.mark.parametrize("form", ["json", "hex"])
def test_ls_then_create_gives_the_same_records(records_file, tmp_path, capsys, form):
    fmt, path = records_file
    code, listed, _ = _run(["ls", str(path), f"--{form}"], capsys)
    assert code == 0
    (tmp_path / "listed").write_text(listed)
    out = tmp_path / f"out.{fmt}"
    code, said, err = _run(["create", "--format", fmt, "--input-format", form, str(out),
                            str(tmp_path / "listed")], capsys)
    assert code == 0, err
    assert said.startswith(f"{out}: {len(RECORDS)} records")
    with shardkit.open(out) as made:
        assert list(made) == RECORDS
    code, listed_again, _ = _run(["ls", str(out), f"--{form}"], capsys)
    assert listed_again == listed


def test_create_takes_json_lines_and_stdin_and_names_bad_items(tmp_path):
    lines = "".join(json.dumps(r.hex()) + "\n" for r in RECORDS)
    out = tmp_path / "out.zss"
    proc = subprocess.run([sys.executable, "-m", "shardkit", "create", "--format", "zss",
                           "--input-format", "json", str(out), "-"], input=lines.encode(),
                          capture_output=True, check=False)
    assert proc.returncode == 0, proc.stderr
    with shardkit.open(out) as made:
        assert list(made) == RECORDS
    bad = tmp_path / "bad.json"
    bad.write_text('["61", "6g", "62"]')
    proc = subprocess.run([sys.executable, "-m", "shardkit", "create", "--format", "zs",
                           "--input-format", "json", "--yes", str(out), str(bad)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert proc.stderr == f"shardkit: error: {bad}: record 1: not hex: '6g'\n"
    bad.write_text("61\n62\n6\n")
    proc = subprocess.run([sys.executable, "-m", "shardkit", "create", "--format", "zss",
                           "--input-format", "hex", "--yes", str(out), str(bad)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert proc.stderr == f"shardkit: error: {bad}: record 2 (line 3): not hex: '6'\n"


def test_one_encoding_of_bytes_in_json(tmp_path, capsys):
    path = tmp_path / "r.zss"
    write_zss(path, RECORDS)
    code, listed, _ = _run(["ls", str(path), "--json"], capsys)
    assert json.loads(listed) == [r.hex() for r in RECORDS]
    record = b"caf\xc3\xa9"
    code, got, _ = _run(["get", str(path), "hex:" + record.hex(), "--json"], capsys)
    got = json.loads(got)
    assert code == 0 and got["key"] == record.hex() and got["value_hex"] == record.hex()
    shard = DATA / "swh" / "tiny.shard"
    code, keys, _ = _run(["ls", str(shard), "--json"], capsys)
    code, dumped, _ = _run(["dump", str(shard), "--values"], capsys)
    entries = json.loads(dumped)["entries"]
    assert sorted(e["key"] for e in entries) == sorted(json.loads(keys))
    with shardkit.open(shard) as s:
        for e in entries:
            code, got, _ = _run(["get", str(shard), e["key"], "--json"], capsys)
            assert json.loads(got)["value_hex"] == e["value"] == bytes(s[e["key"]]).hex()


@pytest.mark.parametrize("name", ["tiny.shard", "medium.shard", "deleted.shard"])
def test_swh_dump_values_then_create(tmp_path, capsys, name):
    shard = DATA / "swh" / name
    code, dumped, _ = _run(["dump", str(shard), "--values"], capsys)
    assert code == 0
    (tmp_path / "d.json").write_text(dumped)
    out = tmp_path / "copy.shard"
    code, said, err = _run(["create", "--input-format", "dump", str(out),
                            str(tmp_path / "d.json"), "--json"], capsys)
    assert code == 0, err
    said = json.loads(said)
    with shardkit.open(shard) as a, shardkit.open(out) as b:
        assert said["objects"] == len(b) == len(list(a.keys()))
        assert said["index_init"] == json.loads(dumped)["index_init"]
        assert {k: bytes(a[k]) for k in a.keys()} == {k: bytes(b[k]) for k in b.keys()}
        assert b.verify() == []
    code, out_text, _ = _run(["diff", str(shard), str(out), "--json"], capsys)
    kinds = {json.loads(line).get("kind") for line in out_text.splitlines()[:-1]}
    assert kinds <= {"field"}  # no key added, removed or changed


def test_dump_values_refusals(tmp_path, capsys):
    zs = DATA / "zs" / "made" / "lines-deflate-default.zs"
    code, _, err = _run(["dump", str(zs), "--values"], capsys)
    assert code == 2 and "dump --values: for SWH shards" in err
    (tmp_path / "d.json").write_text('{"format": "swh", "entries": [{"key": "00"}]}')
    code, _, err = _run(["create", "--input-format", "dump", str(tmp_path / "o.shard"),
                         str(tmp_path / "d.json")], capsys)
    assert code == 2 and err == (f"shardkit: error: {tmp_path / 'd.json'}: entries[0]: no "
                                 "value (make the dump with shardkit dump --values)\n")
    assert not (tmp_path / "o.shard").exists()
