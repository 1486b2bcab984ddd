"""``shardkit view`` on the command line: options, the missing-extra message, errors."""

from __future__ import annotations

import asyncio
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


def test_view_shows_a_local_file_before_opening_its_reader(
        monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("textual")
    seen: dict[str, Any] = {}

    def fake_run(opening: Any, *, offset: int | None = None) -> int:
        # the first frame needs only the bytes: the reader is opened by the app, later
        assert opening.source.read_range(0, 9) == b"SWHShard\0"
        seen.update(name=opening.name, format=opening.format_name,
                    size=opening.source.size, offset=offset)
        with opening.open() as reader:
            seen.update(reader=(reader.format_id, reader.source.name))
        return 0

    monkeypatch.setattr("shardkit.view.run", fake_run)
    assert main(["view", str(TINY), "--offset", "600"]) == 0
    assert seen == {"name": str(TINY), "format": "Software Heritage read shard",
                    "size": TINY.stat().st_size, "offset": 600,
                    "reader": ("swh", str(TINY))}


def test_view_opens_a_dataset_first(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("textual")
    seen: dict[str, Any] = {}

    def fake_run(reader: Any, *, offset: int | None = None) -> int:
        seen.update(format=reader.format_id, dataset=hasattr(reader, "store"))
        return 0

    monkeypatch.setattr("shardkit.view.run", fake_run)
    assert main(["view", str(DATA / "neuroglancer" / "cv_identity_raw")]) == 0
    assert seen == {"format": "neuroglancer", "dataset": True}  # an open reader


def headless_run(app: Any) -> Any:
    """``ViewApp.run`` without a terminal: wait for the reader, then press ``q``."""

    async def go() -> None:
        async with app.run_test(size=(160, 48)) as pilot:
            for _ in range(500):
                if app.reader is not None or app.open_error is not None:
                    break
                await pilot.pause(0.01)
            await pilot.pause()
            for _ in range(100):  # a damaged file: its tree fills once it is traced
                if app.open_error is None or app.damage is not None or \
                        app.return_code is not None:
                    break
                await pilot.pause(0.01)
            if app.open_error is None or app.damage is not None:
                seen["root"] = str(app.tree_view.root.label)
                seen["kids"] = [str(c.label).split(":")[0] for c in app.tree_view.root.children]
                await pilot.press("q")

    seen: dict[str, Any] = {}
    asyncio.run(go())
    headless_run.seen = seen  # type: ignore[attr-defined]
    return app.return_value


def test_view_end_to_end_opens_the_reader_after_the_first_frame(
        monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("textual")
    from shardkit.view.app import ViewApp

    monkeypatch.setattr(ViewApp, "run", headless_run)
    assert main(["view", str(TINY)]) == 0
    seen = headless_run.seen  # type: ignore[attr-defined]
    assert seen["root"] == f"{TINY}: Software Heritage read shard"
    assert seen["kids"] == ["summary", "layout", "dump"]


def test_view_of_a_truncated_file_shows_it_then_one_line_and_exit_2(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("textual")
    from shardkit.view.app import ViewApp

    cut = tmp_path / "cut.shard"
    cut.write_bytes(TINY.read_bytes()[:40])  # the magic, then the header cut short
    monkeypatch.setattr(ViewApp, "run", headless_run)
    assert main(["view", str(cut)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"shardkit: error: {cut}: truncated") and err.count("\n") == 1
    # meanwhile the viewer showed what reads: the magic and the header's first field
    seen = headless_run.seen  # type: ignore[attr-defined]
    assert seen["root"] == f"{cut}: Software Heritage read shard: damaged"
    assert seen["kids"] == ["layout"]
    assert main(["info", str(cut)]) == 2
    assert capsys.readouterr().err == err  # as every command says it


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
    assert "/ searches the bytes (n, N), shift+arrows select, e exports, b bookmarks, d " \
        "shows a block decoded; ^p the command palette" in out
