"""Issue 24's two bugs, run as the real commands: a dataset with an empty scale written by
``ng shard`` passes bulk verify, and every format reads over a server that ignores Range."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from httpserver import Fault
from test_ngconv_convert import _volume, _write_unsharded

from shardkit.cli import main

DATA = Path(__file__).parent / "data"


# -- bug 1: an empty scale -----------------------------------------------------------------------

def test_ng_shard_says_an_empty_scale_has_no_shard_and_bulk_verify_passes(tmp_path, capsys):
    _write_unsharded(tmp_path / "src", _volume(), extra_scale=True)  # s1 has no chunk at all
    sharded = tmp_path / "sharded"
    assert main(["ng", "shard", str(tmp_path / "src"), str(sharded), "--jobs", "1",
                 "--no-progress"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "s1: no chunks, so no shard file written (an empty scale: readers and verify see 0 " \
           "shards)" in out
    assert out[-1].startswith("shard: 36 chunks, 36 files in") and "1 shards written" in out[-1]
    assert sorted(p.name for p in sharded.iterdir()) == ["info", "s0"]
    assert main(["ng", "shard", str(tmp_path / "src"), str(tmp_path / "j"), "--jobs", "1",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["shards"] == {"s0": 1, "s1": 0}

    shutil.copytree(sharded, tmp_path / "sharded2")
    assert main(["verify", str(sharded)]) == 0  # one dataset, opened whole
    assert capsys.readouterr().out.startswith(f"{sharded}: OK")
    for argv in ([str(sharded), str(tmp_path / "sharded2")],
                 [str(sharded), "--report", str(tmp_path / "r.jsonl")]):
        assert main(["verify", *argv, "--jobs", "1", "--no-progress"]) == 0
        out = capsys.readouterr().out
        assert "ERROR" not in out and f"OK {sharded}/s0/0.shard (neuroglancer)" in out
    lines = (tmp_path / "r.jsonl").read_text().splitlines()
    assert [json.loads(ln)["status"] for ln in lines] == ["sound"]


# -- bug 2: a server that ignores Range -----------------------------------------------------------

@pytest.fixture
def ignoring(tmp_path, range_server):
    """Sample files of every format and a Neuroglancer dataset, served ignoring Range."""
    shutil.copytree(DATA / "neuroglancer" / "cv_identity_raw", tmp_path / "ng")
    shutil.copy(DATA / "zss" / "medium_zlib.zss", tmp_path / "a.zss")
    shutil.copy(DATA / "swh" / "medium.shard", tmp_path / "a.shard")
    shutil.copy(DATA / "amudai" / "single.amudai.shard", tmp_path / "a.amudai.shard")
    mdb = next((DATA / "mdb" / "real" / "cas_stored").glob("*.mdb"))
    shutil.copy(mdb, tmp_path / "a.mdb")
    srv = range_server(tmp_path)
    srv.add_fault(Fault(ignore_range=True))
    return srv


def _run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(("name", "fmt"), [
    ("a.zss", "zss"), ("a.shard", "swh"), ("a.amudai.shard", "amudai"), ("a.mdb", "mdb"),
    ("ng/", "Neuroglancer precomputed sharded dataset")])
def test_every_format_reads_whole_below_the_cap_said_once(ignoring, capsys, name, fmt):
    url = ignoring.url(name)
    code, out, err = _run(["info", url, "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["format"] == fmt
    code, out, err = _run(["verify", url], capsys)
    assert code == 0, err
    assert out.endswith(")\n") and ": OK (" in out
    notes = [ln for ln in err.splitlines() if ln.startswith("shardkit: note: ")]
    if name == "ng/":  # verify reads these small shards whole anyway: nothing was ignored
        assert len(notes) <= 1, err
        return
    assert len(notes) == 1, err
    assert "the server ignores Range requests, so files up to 16 MiB (max_whole_read) are " \
           "read whole" in notes[0]
    assert {r.status for r in ignoring.requests if r.method == "GET"} <= {200, 404}


def test_neuroglancer_get_and_ls_over_a_server_ignoring_range(ignoring, capsys):
    folder = DATA / "neuroglancer" / "cv_identity_raw"
    code, local_ls, _ = _run(["ls", str(folder)], capsys)
    assert code == 0 and len(local_ls.splitlines()) > 100
    code, out, err = _run(["ls", ignoring.url("ng/")], capsys)
    assert code == 0, err
    assert out == local_ls
    assert err.count("shardkit: note: ") == 1  # four shard files read whole: said once
    key = local_ls.splitlines()[5]
    code, local_value, _ = _run(["get", str(folder), key, "--json"], capsys)
    code, out, err = _run(["get", ignoring.url("ng/"), key, "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["sha256"] == json.loads(local_value)["sha256"]


@pytest.mark.parametrize("argv", [["info", "a.zss"], ["info", "a.shard"], ["ls", "ng/"],
                                  ["get", "ng/", "5"], ["verify", "a.mdb"]])
def test_above_the_cap_the_error_says_what_to_do(ignoring, capsys, argv):
    code, _, err = _run([argv[0], ignoring.url(argv[1]), *argv[2:], "--max-whole-read", "1K"],
                          capsys)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("shardkit: error: ")
    assert "the server ignores Range requests (it answered bytes [" in err
    assert "reading it whole is allowed up to 1024 bytes (max_whole_read): raise the limit " \
           "to read it into memory (shardkit --max-whole-read " in err
    assert "or serve it from a server that honours Range requests" in err


def test_bulk_verify_takes_the_cap_too(ignoring, capsys):
    code, out, err = _run(["verify", ignoring.url("a.zss"), ignoring.url("a.shard"),
                           "--jobs", "1", "--no-progress", "--max-whole-read", "1K"], capsys)
    assert code == 2
    assert out.count("ERROR ") == 2 and "--max-whole-read" in out
    code, out, err = _run(["verify", ignoring.url("a.zss"), ignoring.url("a.shard"),
                           "--jobs", "1", "--no-progress"], capsys)
    assert code == 0, out + err
    assert "2 shard(s): 2 sound" in out
