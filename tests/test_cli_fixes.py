"""Issue 24's two bugs, run as the real commands: a dataset with an empty scale written by
``ng shard`` passes bulk verify, and every format reads over a server that ignores Range."""

from __future__ import annotations

import hashlib
import json
import shutil
import signal
import subprocess
import sys
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
    # (the test server may log the connection shardkit closed mid-answer: not ours)
    ours = [ln for ln in err.splitlines() if ln.startswith("shardkit: ")]
    assert len(ours) == 1 and ours[0].startswith("shardkit: error: ")
    err = ours[0]
    assert "the server ignores Range requests (it answered bytes [" in err
    assert "reading it whole is allowed up to 1024 bytes (max_whole_read): raise the limit " \
           "to read it into memory (shardkit COMMAND http" in err
    assert "or serve it from a server that honours Range requests" in err
    # the hint's form works as given: the option after the command (before it, argparse
    # refuses it)
    import re
    import shlex

    hint = re.search(r"\(shardkit (COMMAND \S+ --max-whole-read \S+):", err)
    assert hint is not None, err
    words = shlex.split(hint.group(1).replace("COMMAND", argv[0]))
    assert words[1].startswith(ignoring.url(argv[1])) and words[2] == "--max-whole-read"
    code, _, err = _run([argv[0], ignoring.url(argv[1]), *argv[2:], *words[2:]], capsys)
    assert code in (0, 1), err


def test_bulk_verify_takes_the_cap_too(ignoring, capsys):
    code, out, err = _run(["verify", ignoring.url("a.zss"), ignoring.url("a.shard"),
                           "--jobs", "1", "--no-progress", "--max-whole-read", "1K"], capsys)
    assert code == 2
    assert out.count("ERROR ") == 2 and "--max-whole-read" in out
    code, out, err = _run(["verify", ignoring.url("a.zss"), ignoring.url("a.shard"),
                           "--jobs", "1", "--no-progress"], capsys)
    assert code == 0, out + err
    assert "2 shard(s): 2 sound" in out
    assert err.count("shardkit: note: ") == 1  # two files read whole: said once
    assert "the server ignores Range requests, so files up to 16 MiB" in err


# -- rough edges -------------------------------------------------------------------------------

def test_a_forced_format_names_the_format_the_file_looks_like(capsys):
    zss = DATA / "zss" / "medium_zlib.zss"
    code, _, err = _run(["info", "--format", "swh", str(zss)], capsys)
    assert code == 2
    assert err == (f"shardkit: error: {zss}: not a Software Heritage read shard: the file looks "
                   "like a ZSS compressed sorted set (format 'zss'; leave the format out to "
                   "detect it) (at byte 0, field /magic)\n")


def test_unknown_format_is_one_short_line(tmp_path, capsys):
    junk = tmp_path / "junk.bin"
    junk.write_bytes(bytes(range(7, 250)) * 20)
    code, _, err = _run(["info", str(junk)], capsys)
    assert code == 2
    assert err == (f"shardkit: error: {junk}: not a shard shardkit knows (first bytes 07 08 09 "
                   "0a 0b 0c 0d 0e; it reads swh, mdb, zss, zs, amudai, mosaic, neuroglancer: "
                   "see "
                   "'shardkit formats') (at byte 0)\n")
    assert len(err) - len(str(junk)) < 180  # was 515 characters and more (one line, six formats)


@pytest.mark.parametrize(("sample", "cut"), [
    ("swh/medium.shard", 100_000), ("swh/medium.shard", 50), ("zss/medium_zlib.zss", 1000),
    ("zss/medium_zlib.zss", 10), ("amudai/single.amudai.shard", 20_000),
    ("mdb/real/cas_stored/23e2110f1bbcf1d9c2de87c42cd1679f91a581ae6112344e838d3c2c43781b01.mdb",
     2000),
    ("mdb/real/cas_stored/23e2110f1bbcf1d9c2de87c42cd1679f91a581ae6112344e838d3c2c43781b01.mdb",
     500),
])
def test_a_cut_file_says_truncated(tmp_path, capsys, sample, cut):
    path = tmp_path / Path(sample).name
    path.write_bytes((DATA / sample).read_bytes()[:cut])
    code, _, err = _run(["info", str(path)], capsys)
    assert code == 2
    assert err.startswith("shardkit: error: ") and err.count("\n") == 1
    assert "truncated" in err, err


def test_ng_info_names_a_truncated_shard_and_shows_the_rest(tmp_path, capsys):
    ds = tmp_path / "ds"
    shutil.copytree(DATA / "neuroglancer" / "cv_identity_raw", ds)
    code, out, _ = _run(["info", str(ds), "--json"], capsys)
    whole = json.loads(out)
    assert code == 0 and whole["shard_files"] == 4
    with shardkit_open(ds / "1.shard", ds) as shard:
        in_1 = len(shard)
    (ds / "1.shard").write_bytes((ds / "1.shard").read_bytes()[:100])
    code, out, err = _run(["info", str(ds), "--json"], capsys)
    assert code == 2
    data = json.loads(out)
    assert data["chunk_count"] == whole["chunk_count"] - in_1 and data["shard_files"] == 4
    assert data["unreadable_shards"] == [{
        "shard": f"{ds}/1.shard",
        "error": "truncated: the shard index needs 128 bytes, the file has 100 (at byte 0, "
                 "field /shard_index)"}]
    assert err == (f"shardkit: error: {ds}/1.shard: truncated: the shard index needs 128 bytes, "
                   "the file has 100 (at byte 0, field /shard_index)\n")


def shardkit_open(path: Path, dataset: Path):
    import shardkit

    return shardkit.open(path, spec=json.loads((dataset / "info").read_text())["sharding"])


def test_bare_shardkit_prints_the_help():
    proc = subprocess.run([sys.executable, "-m", "shardkit"], capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout.startswith("usage: shardkit [-h] [--version] COMMAND ...")
    for command in ("info", "verify", "create", "delete", "ng", "schema"):
        assert f"\n    {command} " in proc.stdout


def test_interrupted_bulk_verify_says_how_to_resume(tmp_path):
    for i in range(40):
        shutil.copy(DATA / "swh" / "medium.shard", tmp_path / f"s{i:02d}.shard")
    report = tmp_path / "r.jsonl"
    argv = [sys.executable, "-m", "shardkit", "verify", str(tmp_path / "*.shard"), "--jobs",
            "1", "--no-progress", "--content-hash", "sha256"]
    proc = subprocess.Popen([*argv, "--report", str(report)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    first = proc.stdout.readline()
    assert first.startswith("OK ")
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130
    done = len(report.read_text().splitlines())
    assert 1 <= done < 40
    assert err.strip() == (f"shardkit: interrupted after {done} shard(s); {report} holds their "
                           f"results: rerun the same command with --resume {report} to check "
                           "only the rest")
    again = subprocess.run([*argv, "--resume", str(report)], capture_output=True, text=True,
                           check=False, timeout=600)
    assert again.returncode == 0, again.stderr
    assert again.stdout.count("OK ") == 40 - done
    assert f"40 shard(s): 40 sound ({done} sound in {report})" in again.stdout


def test_make_install_is_quiet():
    root = Path(__file__).parents[1]
    proc = subprocess.run(["make", "-n", "-C", str(root), "install", "VENV=/nonexistent"],
                          capture_output=True, text=True, check=False)
    line = next(ln for ln in proc.stdout.splitlines() if "pip install --quiet -e" in ln)
    # setuptools' editable-install warning box is a warning: silenced for that one step
    assert line.startswith('PYTHONWARNINGS="ignore:Editable installation" ')


def test_the_demo_shows_the_od_it_runs():
    text = (Path(__file__).parents[1] / "tools" / "demo.sh").read_text()
    line = next(ln for ln in text.splitlines() if ln.startswith("run_hex()"))
    shown = line.split('echo "\\$ shardkit $* | ', 1)[1].split('"', 1)[0]
    run = line.split('>"$tmp"; ', 1)[1].split(' "$tmp"', 1)[0]
    assert shown == run == "od -A d -t x1 -N 32"


def test_delete_ignore_missing_exits_0_when_retried(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_bytes(b"first")
    b.write_bytes(b"second")
    shard = tmp_path / "s.shard"
    assert main(["create", str(shard), str(a), str(b)]) == 0
    capsys.readouterr()
    ka, kb = (hashlib.sha256(x).hexdigest() for x in (b"first", b"second"))
    absent = "00" * 32
    assert main(["delete", "--yes", str(shard), ka]) == 0
    capsys.readouterr()
    # a retried script: ka is gone already
    code, out, err = _run(["delete", "--yes", str(shard), ka], capsys)
    assert code == 1 and "1 key(s) not in" in err
    code, out, err = _run(["delete", "--yes", "--ignore-missing", str(shard), ka, kb, absent,
                           "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["deleted"] == {kb: "deleted", ka: "not in the shard",
                                          absent: "not in the shard"}
    code, out, err = _run(["delete", "--yes", "--ignore-missing", str(shard), kb], capsys)
    assert code == 0 and out == f"{kb}: not in the shard\n"
    import shardkit

    with shardkit.open(shard) as s:
        assert not s.verify()


NG_TYPED = '''
from __future__ import annotations

import shardkit


def main(folder: str) -> int:
    ds = shardkit.open(folder, format="neuroglancer")
    value: bytes = ds[128]
    keys: list[int] = sorted(ds.keys())
    return len(value) + len(keys)
'''


def test_open_format_neuroglancer_is_typed_as_the_dataset(tmp_path):
    pytest.importorskip("mypy", reason="mypy is in the dev extra")
    script = tmp_path / "user.py"
    script.write_text(NG_TYPED)
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent",
         "--cache-dir", str(tmp_path / "cache"), str(script)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
        env={"MYPYPATH": str(Path(__file__).parents[1] / "src"), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stdout + out.stderr
    namespace: dict[str, object] = {}
    exec(compile(NG_TYPED, "user.py", "exec"), namespace)
    folder = DATA / "neuroglancer" / "cv_identity_raw"
    import shardkit

    with shardkit.open(folder, format="neuroglancer") as ds:
        expected = len(ds[128]) + len(list(ds.keys()))
    assert namespace["main"](str(folder)) == expected  # type: ignore[operator]


def test_verify_report_names_the_path_given(tmp_path, capsys):
    shard = str(DATA / "swh" / "tiny.shard")
    folder = tmp_path / "reports"
    folder.mkdir()
    code, out, err = _run(["verify", shard, shard, "--report", str(folder)], capsys)
    assert code == 2 and out == ""
    assert err == f"shardkit: error: cannot write {folder}: it is a folder (give a file " \
                  "name)\n"
    missing = tmp_path / "nowhere" / "r.jsonl"
    code, out, err = _run(["verify", shard, "--jobs", "1", "--report", str(missing)], capsys)
    assert code == 2 and ".tmp" not in err
    assert err == f"shardkit: error: cannot write {missing}: the folder {missing.parent} does " \
                  "not exist\n"
    assert list(folder.iterdir()) == []


def test_verify_a_glob_matching_nothing_is_an_error(tmp_path, capsys):
    pattern = str(tmp_path / "shards" / "*.shard")
    code, out, err = _run(["verify", pattern], capsys)
    assert (code, out) == (2, "")
    assert err == f"shardkit: error: {pattern}: no file matched (nothing verified)\n"
    shard = str(DATA / "swh" / "tiny.shard")
    code, out, err = _run(["verify", shard, pattern, "--json"], capsys)
    assert code == 2 and json.loads(out)["message"] == \
        f"{pattern}: no file matched (nothing verified)"
    (tmp_path / "shards").mkdir()
    shutil.copy(shard, tmp_path / "shards" / "a.shard")
    code, out, err = _run(["verify", pattern, "--jobs", "1", "--no-progress"], capsys)
    assert code == 0, err
    assert out.splitlines()[0] == f"OK {tmp_path / 'shards' / 'a.shard'} (swh)"


def test_the_error_example_of_the_conventions_page_is_what_the_command_prints(
        tmp_path, capsys, monkeypatch):
    page = (Path(__file__).parents[1] / "docs" / "reference" / "conventions.md").read_text()
    said = next(ln.strip() for ln in page.splitlines() if ln.strip().startswith(
        "shardkit: error: "))
    (tmp_path / "cut.shard").write_bytes((DATA / "swh" / "tiny.shard").read_bytes()[:549])
    monkeypatch.chdir(tmp_path)
    code, _, err = _run(["info", "cut.shard"], capsys)
    assert code == 2 and err == said + "\n"
    assert said.startswith("shardkit: error: cut.shard: ")
