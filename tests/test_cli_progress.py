"""Progress on stderr: one display, tqdm's, for every long command (``create``, ``verify``,
``ng shard``); off unless asked for or stderr is a terminal; stdout (``--json``) unchanged."""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import sys
from pathlib import Path

import pytest
from conftest import swh_path

from shardkit.cli import common, main

RECORDS = [b"k%06d" % i for i in range(20_000)]


def _records(tmp_path: Path) -> Path:
    src = tmp_path / "records.txt"
    src.write_bytes(b"\n".join(RECORDS) + b"\n")
    return src


def test_one_progress_display_no_shims() -> None:
    for gone in ("Progress", "_Progress", "_print", "_io_options", "_positive_byte_count"):
        assert not hasattr(common, gone), gone
    assert "progress_bar" in common.__all__


def test_progress_bar_takes_both_library_callbacks(capsys) -> None:
    args = argparse.Namespace(progress=True)
    with common.progress_bar(args, "count", " records") as progress:
        progress(10)
        progress(4096)  # a count: records read so far
    with common.progress_bar(args, "steps") as progress:
        progress(0, 7)
        progress(7, 7)  # done of a total
    err = capsys.readouterr().err
    assert "count: 4096 records [" in err and "records/s]" in err
    assert "steps: 100%|" in err and "7/7 [" in err and "it/s]" in err
    with common.progress_bar(argparse.Namespace(progress=False), "off") as progress:
        progress(3, 9)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("fmt", ["zss", "zs"])
def test_create_records_progress_is_tqdm_and_json_unchanged(fmt, tmp_path, capsys) -> None:
    src = _records(tmp_path)
    out = tmp_path / f"out.{fmt}"
    assert main(["create", "--format", fmt, "--progress", "--json", str(out), str(src)]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert report["records"] == len(RECORDS) and report["created"] is True
    assert f"create {out}: " in captured.err and " records/s]" in captured.err
    assert main(["create", "--format", fmt, "--yes", "--json", str(out), str(src)]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""  # stderr is not a terminal here: no progress by default
    assert json.loads(captured.out)["records"] == len(RECORDS)


@pytest.mark.parametrize("fmt", ["swh", "mosaic"])
def test_create_files_progress_counts_the_files(fmt, tmp_path, capsys, monkeypatch) -> None:
    names = []
    for i in range(3):
        path = tmp_path / f"f{i}.bin"
        path.write_bytes(b"content %d" % i)
        names.append(str(path))
    out = tmp_path / f"out.{fmt}"
    assert main(["create", "--format", fmt, "--progress", "--json", str(out), *names]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["files"] == 3
    assert f"create {out}: 100%|" in captured.err and "3/3 [" in captured.err
    assert " files/s]" in captured.err
    # '-': the names one a line on stdin, the same shard
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n".join(names) + "\n"))
    again = tmp_path / f"again.{fmt}"
    assert main(["create", "--format", fmt, "--no-progress", str(again), "-"]) == 0
    assert capsys.readouterr().err == ""
    if fmt == "swh":
        assert hashlib.sha256(again.read_bytes()).digest() == \
            hashlib.sha256(out.read_bytes()).digest()


def test_verify_progress_is_tqdm(capsys) -> None:
    assert main(["verify", "--progress", str(swh_path("medium"))]) == 0
    err = capsys.readouterr().err
    assert "verify: 100%|" in err and "1000/1000 [" in err and "it/s]" in err
    assert main(["verify", "--no-progress", str(swh_path("medium"))]) == 0
    assert capsys.readouterr().err == ""
