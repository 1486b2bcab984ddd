"""What ``create`` and ``delete`` of SWH and MOSAIC files share: the list of input files and
the KEYs to delete (``-``: read from stdin), checked the same way for both formats."""

from __future__ import annotations

import hashlib
import io
import json
import sys
from pathlib import Path

import pytest

import shardkit
from shardkit.cli import main

CONTENTS = [b"first", b"second", b"third"]


def _made(fmt: str, tmp_path: Path) -> tuple[Path, list[str]]:
    names = []
    for i, data in enumerate(CONTENTS):
        path = tmp_path / f"in{i}"
        path.write_bytes(data)
        names.append(str(path))
    out = tmp_path / f"out.{fmt}"
    assert main(["create", "--format", fmt, "--no-progress", str(out), *names]) == 0
    return out, [hashlib.sha256(d).hexdigest() for d in CONTENTS]


@pytest.mark.parametrize("fmt", ["swh", "mosaic"])
def test_delete_keys_from_stdin(fmt: str, tmp_path: Path, capsys, monkeypatch) -> None:
    out, keys = _made(fmt, tmp_path)
    capsys.readouterr()
    monkeypatch.setattr(sys, "stdin", io.StringIO(f"{keys[0]}\n {keys[2]}\t\n"))
    assert main(["delete", "--json", str(out), "-"]) == 0  # no question asked
    report = json.loads(capsys.readouterr().out)
    assert report["deleted"] == {keys[0]: "deleted", keys[2]: "deleted"}
    with shardkit.open(out) as r:
        assert bytes.fromhex(keys[0]) not in r and r[bytes.fromhex(keys[1])] == CONTENTS[1]


@pytest.mark.parametrize("fmt", ["swh", "mosaic"])
def test_delete_refuses_bad_and_repeated_keys_before_touching_the_file(fmt: str,
                                                                       tmp_path: Path,
                                                                       capsys) -> None:
    out, keys = _made(fmt, tmp_path)
    before = out.read_bytes()
    capsys.readouterr()
    assert main(["delete", "--yes", str(out), keys[0], keys[0].upper()]) == 2
    assert f"shardkit: error: delete {out}: duplicate keys" in capsys.readouterr().err
    assert main(["delete", "--yes", str(out), "xyz"]) == 2
    assert f"shardkit: error: delete {out}: " in capsys.readouterr().err
    assert out.read_bytes() == before


def test_one_reading_of_files_and_keys_for_both_formats() -> None:
    from shardkit.cli import common, create_mosaic, create_swh

    for module in (create_swh, create_mosaic):
        assert module.keys_to_delete is common.keys_to_delete
        assert module.input_files is common.input_files and module.each_file is common.each_file
