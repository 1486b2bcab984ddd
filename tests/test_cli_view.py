"""``shardkit view`` on the command line: options, the missing-extra message, errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from shardkit.cli import build_parser, main

DATA = Path(__file__).parent / "data"
TINY = DATA / "swh" / "tiny.shard"


def test_view_is_registered_with_the_common_options() -> None:
    args = build_parser().parse_args(["view", str(TINY), "--offset", "0x258", "--format", "swh",
                                      "--cache", "8M", "--block-size", "128K"])
    assert args.command == "view" and args.offset == 600
    assert args.format == "swh" and args.cache == 8 << 20 and args.block_size == 128 << 10
    assert build_parser().parse_args(["view", str(TINY), "--offset", "4096"]).offset == 4096


@pytest.mark.parametrize("bad", ["-1", "ten", "0xZZ"])
def test_view_refuses_a_bad_offset(bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["view", str(TINY), "--offset", bad])
    assert exc.value.code == 2
    assert "--offset" in capsys.readouterr().err


def test_view_runs_the_app_on_the_opened_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("textual")
    seen: dict[str, Any] = {}

    def fake_run(reader: Any, *, offset: int | None = None) -> int:
        seen.update(format=reader.format_id, size=reader.source.size, offset=offset)
        return 0

    monkeypatch.setattr("shardkit.view.run", fake_run)
    assert main(["view", str(TINY), "--offset", "600"]) == 0
    assert seen == {"format": "swh", "size": TINY.stat().st_size, "offset": 600}


def test_view_of_an_unreadable_file_is_one_line_and_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("textual")
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"not a shard at all")
    assert main(["view", str(junk)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("shardkit: error:") and err.count("\n") == 1


def test_view_without_textual_says_what_to_install() -> None:
    code = ("import sys; sys.modules['textual'] = None\n"
            "from shardkit.cli import main\n"
            f"sys.exit(main(['view', {str(TINY)!r}]))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr == "shardkit: error: shardkit view needs Textual: pip install " \
                          "'shardkit[view]'\n"
    assert done.stdout == ""


def test_view_help_names_the_keys(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["view", "--help"])
    assert exc.value.code == 0
    out = " ".join(capsys.readouterr().out.split())  # argparse wraps the text
    assert "--offset N" in out and "pip install 'shardkit[view]'" in out
    assert "g offset, / look a key up, v verify, m map, ? keys, q quit" in out
