"""Commands run as a new user runs them, on files made by the reference writers: the bugs that
turned up, each checked through the real command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_ngconv_convert import _volume, _write_unsharded

from shardkit.cli import main


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def empty_scale_dataset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A sharded dataset whose second scale has no chunk, hence no shard file."""
    _write_unsharded(tmp_path / "src", _volume(), extra_scale=True)
    sharded = tmp_path / "ds" / "sharded"
    assert main(["ng", "shard", str(tmp_path / "src"), str(sharded), "--jobs", "1",
                 "--no-progress"]) == 0
    capsys.readouterr()
    assert sorted(p.name for p in sharded.iterdir()) == ["info", "s0"]
    return sharded


def test_a_url_dataset_with_an_empty_scale_diffs_lists_and_counts(empty_scale_dataset, capsys,
                                                                  range_server):
    # Over HTTP the folder cannot be listed: the scale's shard file is asked for and is a 404,
    # which is an empty shard, not an error (it was FileNotFoundError, exit 2).
    srv = range_server(empty_scale_dataset.parent)
    url = srv.url("sharded/")
    code, out, err = _run(["diff", url, url], capsys)
    assert (code, err) == (0, "")
    assert out == f"{url} and {url}: the same\n"
    code, out, err = _run(["diff", url, str(empty_scale_dataset)], capsys)
    assert (code, err) == (0, "")
    code, out, err = _run(["ls", "--scale", "s1", url], capsys)
    assert (code, out, err) == (0, "", "")
    code, local, _ = _run(["ls", "--scale", "s0", "--coords", str(empty_scale_dataset)], capsys)
    code, out, err = _run(["ls", "--scale", "s0", "--coords", url], capsys)
    assert (code, err) == (0, "") and out == local and len(out.splitlines()) == 36
    code, out, err = _run(["info", "--json", url], capsys)
    assert code == 0, err
    scales = {s["key"]: s for s in json.loads(out)["scales"]}
    assert "unreadable_shards" not in scales["s1"]


@pytest.mark.parametrize(("fmt", "content"), [
    ("swh", b"some bytes\n"), ("zss", b"a\nb\nc\n"), ("amudai", b'{"a": 1}\n{"a": 2}\n'),
    ("mdb", b"{}")])
def test_create_names_out_when_its_folder_is_missing_or_it_is_a_folder(tmp_path, capsys, fmt,
                                                                       content):
    # It named the writer's temporary file (".x.1234.ab12.tmp: No such file or directory").
    src = tmp_path / "input.ndjson"
    src.write_bytes(content)
    out = tmp_path / "no" / "x"
    code, stdout, err = _run(["create", "--format", fmt, "-y", str(out), str(src)], capsys)
    assert (code, stdout) == (2, "")
    assert err == f"shardkit: error: cannot write {out}: the folder {out.parent} does not exist\n"
    code, stdout, err = _run(["create", "--format", fmt, "-y", str(tmp_path), str(src), "--json"],
                             capsys)
    assert code == 2
    assert json.loads(stdout)["message"] == (f"cannot write {tmp_path}: it is a folder (give a "
                                             "file name)")
    assert err.count("\n") == 1 and ".tmp" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["input.ndjson"]


@pytest.mark.parametrize("argv", [["ls"], ["ls", "--scale", "s0"], ["dump"], ["map"], ["info"],
                                  ["cutout", "--scale", "s0", "--bbox", "7,-3,100,107,87,120"]])
def test_a_truncated_shard_file_of_a_dataset_is_named_by_every_command(empty_scale_dataset,
                                                                       capsys, argv):
    # info named it; ls, dump, map and cutout said only "truncated: ..." (which file of many?).
    shard = empty_scale_dataset / "s0" / "0.shard"
    data = shard.read_bytes()
    shard.write_bytes(data[: len(data) // 2])
    extra = ["-o", str(empty_scale_dataset.parent / "box.npy")] if argv[0] == "cutout" else []
    code, _, err = _run([argv[0], str(empty_scale_dataset), *argv[1:], *extra], capsys)
    assert code == 2
    lines = err.splitlines()
    assert lines[-1].startswith(f"shardkit: error: {empty_scale_dataset}/s0/0.shard: "), err
    assert "past the end" in lines[-1] or "truncated" in lines[-1]
    assert "(at byte " in lines[-1] and "Traceback" not in err
    assert not (empty_scale_dataset.parent / "box.npy").exists()


def test_info_counts_a_url_dataset_with_counts(empty_scale_dataset, capsys, range_server):
    # --counts was refused ("not supported") for Neuroglancer, and the summary told a shell
    # user to call summary(count_chunks=True).
    url = range_server(empty_scale_dataset.parent).url("sharded/")
    code, out, err = _run(["info", url], capsys)
    assert (code, err) == (0, "")
    assert "shard_files: -\n" in out
    assert "counts: not counted (--counts scans every shard file)\n" in out
    code, out, err = _run(["info", "--counts", "--json", url], capsys)
    assert (code, err) == (0, "")
    got = json.loads(out)
    code, local, _ = _run(["info", "--json", str(empty_scale_dataset)], capsys)
    want = json.loads(local)
    assert (got["shard_files"], got["chunk_count"]) == (want["shard_files"], want["chunk_count"])
    assert (got["shard_files"], got["chunk_count"]) == (1, 36)
    assert [(s["shard_files"], s["chunk_count"]) for s in got["scales"]] == [(1, 36), (0, 0)]
    assert "counts" not in got


def test_bare_ng_prints_its_help_and_exits_0():
    # Bare `shardkit` prints the help; bare `shardkit ng` was an argparse error (exit 2).
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "shardkit", "ng"], capture_output=True,
                          text=True, timeout=60)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("usage: shardkit ng [-h] ACTION ...")
    for action in ("spec", "shard", "unshard"):
        assert f"\n    {action} " in done.stdout


def test_diff_of_one_mdb_shard_local_and_at_a_url_is_the_same(tmp_path, capsys, range_server):
    # Through ranged requests an MDB shard is summarised from its lookup tables (terms not
    # counted, counts_from set): diff said "terms: None -> 2" and exit 1 for the same file.
    import shutil

    data = Path(__file__).parent / "data" / "mdb" / "real" / "session"
    shard = next(p for p in sorted(data.glob("*.mdb")))
    shutil.copy(shard, tmp_path / "a.mdb")
    url = range_server(tmp_path).url("a.mdb")
    code, out, err = _run(["info", "--json", url], capsys)
    assert json.loads(out)["terms"] is None  # the case of the bug: counted from the tables
    code, out, err = _run(["diff", url, str(shard)], capsys)
    assert (code, err) == (0, "")
    assert out == f"{url} and {shard}: the same\n"
    code, out, err = _run(["diff", "--json", str(shard), url], capsys)
    assert code == 0
    assert json.loads(out.splitlines()[-1])["summary"]["differences"] == 0


def test_cutout_names_the_output_when_its_folder_is_missing(empty_scale_dataset, capsys):
    # It named the writer's temporary file (".box.npy.1234.ab12.tmp: No such file...").
    out = empty_scale_dataset.parent / "no" / "box.npy"
    code, stdout, err = _run(["cutout", str(empty_scale_dataset), "--scale", "s0", "--bbox",
                              "7,-3,100,17,7,110", "-o", str(out)], capsys)
    assert (code, stdout) == (2, "")
    assert err == f"shardkit: error: cannot write {out}: the folder {out.parent} does not exist\n"
    code, stdout, err = _run(["cutout", str(empty_scale_dataset), "--scale", "s0", "--bbox",
                              "7,-3,100,17,7,110", "-o", str(out.parent.parent)], capsys)
    assert code == 2
    assert err == (f"shardkit: error: cannot write {out.parent.parent}: it is a folder (give a "
                   "file name)\n")
    code, stdout, err = _run(["cutout", str(empty_scale_dataset), "--scale", "s0", "--bbox",
                              "7,-3,100,17,7,110", "-o", str(out.parent.parent / "b.npy")],
                             capsys)
    assert (code, err) == (0, "")
    import numpy as np

    assert np.load(out.parent.parent / "b.npy").shape == (10, 10, 10, 1)
