"""MDB from the shell: ``ls --xorbs``/``--chunks``, ``get`` by xorb or chunk hash, flags by
name, ``verify --with OTHER.mdb``, run as the real commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import shardkit
from shardkit.cli import main

MDB = Path(__file__).parent / "data" / "mdb" / "real"
# a shard whose one file uses a xorb described only in other shards, and one that has it
USES = next(MDB.glob("*/*66eb43a150d6e7c8.mdb"))
HOLDS = next(MDB.glob("*/*838d3c2c43781b01.mdb"))


def _run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_ls_xorbs_and_chunks(capsys):
    with shardkit.open(HOLDS) as s:
        xorbs = list(s.xorbs)
        chunks = [(c, x, i) for x in xorbs for i, c in enumerate(x.chunks)]
    code, out, _ = _run(["ls", "--xorbs", str(HOLDS)], capsys)
    assert code == 0
    assert out.splitlines() == [f"{x.hash}\t{x.num_chunks} chunks\t{x.num_bytes_in_xorb} bytes"
                                for x in xorbs]
    code, out, _ = _run(["ls", "--chunks", str(HOLDS)], capsys)
    lines = out.splitlines()
    assert code == 0 and len(lines) == len(chunks) == 37
    for line, (c, x, i) in zip(lines, chunks, strict=True):
        fields = line.split("\t")
        assert fields[:4] == [str(c.hash), str(x.hash), str(i), str(c.size)]
        assert fields[4:] == (["global_dedup"] if c.flags & 0x8000_0000 else [])
    code, out, _ = _run(["ls", "--chunks", "--json", str(HOLDS)], capsys)
    rows = json.loads(out)
    assert [r["hash"] for r in rows] == [str(c.hash) for c, _, _ in chunks]
    assert sum(r["size"] for r in rows) == sum(x.num_bytes_in_xorb for x in xorbs)
    code, _, err = _run(["ls", "--xorbs", str(Path(__file__).parent / "data" / "zss" /
                                              "tiny_zlib.zss")], capsys)
    assert code == 2 and "--xorbs and --chunks are for MDB shards" in err


def test_get_by_file_xorb_and_chunk_hash_with_flag_names(capsys):
    with shardkit.open(HOLDS) as s:
        f = next(iter(s.files))
        x = s.xorbs[0]
        c = x.chunks[3]
    code, out, _ = _run(["get", str(HOLDS), str(f.hash)], capsys)
    data = json.loads(out)
    assert code == 0 and data["hash"] == str(f.hash) and data["flags"] == f.flags
    names = {0x8000_0000: "with_verification", 0x4000_0000: "with_metadata_ext"}
    assert data["flag_names"] == [n for bit, n in names.items() if f.flags & bit]
    code, out, _ = _run(["get", str(HOLDS), str(x.hash)], capsys)
    data = json.loads(out)["xorb"]
    assert code == 0 and data["hash"] == str(x.hash) and data["num_chunks"] == 37
    code, out, _ = _run(["get", str(HOLDS), str(c.hash)], capsys)
    data = json.loads(out)
    assert code == 0
    assert data["chunk"]["hash"] == str(c.hash) and data["chunk"]["size"] == c.size
    assert (data["xorb_hash"], data["chunk_index"]) == (str(x.hash), 3)
    missing = "00" * 31 + "ff"
    code, _, err = _run(["get", str(HOLDS), missing], capsys)
    assert code == 1
    assert err == f"shardkit: no file, xorb or chunk {missing} in this shard\n"


def test_verify_with_other_shards(capsys):
    code, out, _ = _run(["verify", str(USES)], capsys)
    assert code == 0 and out.startswith("NOTE unverifiable_files: 1 file(s) not verifiable")
    code, out, _ = _run(["verify", str(USES), "--strict"], capsys)
    assert code == 1
    code, out, _ = _run(["verify", str(USES), "--strict", "--with", str(HOLDS)], capsys)
    assert code == 0 and out == f"{USES}: OK (Hugging Face Xet MDB shard)\n"
    code, out, _ = _run(["verify", str(USES), "--json", "--with", str(HOLDS)], capsys)
    assert json.loads(out)["ok"] is True and "notes" not in json.loads(out)


@pytest.mark.parametrize(("argv", "message"), [
    (["verify", str(USES), str(HOLDS), "--with", str(HOLDS)],
     "verify: --with takes one MDB shard to verify"),
    (["verify", str(Path(__file__).parent / "data" / "zss" / "tiny_zlib.zss"), "--with",
      str(HOLDS)], "verify: --with is for MDB shards, not ZSS"),
])
def test_verify_with_refusals(capsys, argv, message):
    code, _, err = _run(argv, capsys)
    assert code == 2 and message in err
