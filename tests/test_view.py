"""shardkit view: the tree model, and the app driven headless with Textual's Pilot.

Every format's sample is opened, its nodes expanded and selected; the highlighted byte range
must be the range ``shardkit map`` gives (``reader.sections()``). ``/`` looks known keys up,
``v`` lists a corrupt sample's problems, ``g``, ``m``, ``?`` and ``q`` do what ``?`` says.
No timing is asserted: the Pilot waits for the app to be idle.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

import shardkit
from shardkit.sources import CountingSource, FileSource
from shardkit.view.model import PAGE, FuncChildren, build_root, group_spans

textual = pytest.importorskip("textual", reason="the view extra (Textual) is not installed")

from shardkit.errors import ShardkitError  # noqa: E402
from shardkit.view.app import HelpScreen, ListScreen, Opening, ViewApp, parse_offset  # noqa: E402

DATA = Path(__file__).parent / "data"
SWH_TINY = DATA / "swh" / "tiny.shard"
SWH_MEDIUM = DATA / "swh" / "medium.shard"
ZSS_TINY = DATA / "zss" / "tiny_zlib.zss"
ZSS_CORRUPT = DATA / "zss" / "corrupt_medium_zlib.zss"
AMUDAI = DATA / "amudai" / "single.amudai.shard"
MDB = sorted((DATA / "mdb" / "real" / "session").glob("*.mdb"))[0]
NG_KV = DATA / "neuroglancer" / "cv_identity_raw"
NG_IMAGE = DATA / "neuroglancer" / "ts_image_identity_gzipindex"
SIZE = (160, 48)


def drive(target: Any, script: Callable[[ViewApp, Any, Any], Awaitable[Any]],
          **options: Any) -> Any:
    """Open ``target``, run the app headless at 160x48 and ``await script(app, pilot, reader)``."""

    async def go() -> Any:
        with shardkit.open(target, **options) as reader:
            app = ViewApp(reader)
            async with app.run_test(size=SIZE) as pilot:
                await pilot.pause()
                return await script(app, pilot, reader)

    return asyncio.run(go())


async def settle(app: ViewApp, pilot: Any) -> None:
    """Wait for the workers (verify, map) and the messages they post."""
    await app.workers.wait_for_complete()
    await pilot.pause()
    await pilot.pause()


def status(app: ViewApp) -> str:
    return str(app.query_one("#status").render())


# -- the model, without Textual ------------------------------------------------------------------


def test_import_shardkit_does_not_import_textual() -> None:
    code = ("import sys, shardkit; r = shardkit.open(sys.argv[1]); r.summary(); "
            "from shardkit.view import model, locate, expand; "
            "model.build_root(r).kids(); "
            "assert 'textual' not in sys.modules, 'textual imported'")
    subprocess.run([sys.executable, "-c", code, str(SWH_TINY)], check=True)


def test_group_spans_pages_of_pages() -> None:
    spans = group_spans(0, 50_000_000)
    assert len(spans) == 50 and spans[0] == (0, 1_000_000) and spans[-1][1] == 50_000_000
    inner = group_spans(*spans[3])
    assert len(inner) == 100 and inner[0] == (3_000_000, 3_010_000)
    assert group_spans(0, 250) == [(0, 100), (100, 200), (200, 250)]
    assert group_spans(0, PAGE) == [(0, PAGE)]


def test_swh_index_is_read_a_page_at_a_time() -> None:
    source = CountingSource(FileSource(str(SWH_MEDIUM)))
    with shardkit.open(source, format="swh") as reader:
        root = build_root(reader)
        layout = root.kids().nodes(0, 3)[1]
        index = next(n for n in layout.kids().nodes(0, 20) if n.path == "/index")
        entries = index.kids().nodes(0, 1)[0]
        slots = entries.kids()
        assert isinstance(slots, FuncChildren) and len(slots) == reader.num_slots
        before = source.stats.reads, source.stats.bytes_read
        page = slots.nodes(500, 600)
        assert source.stats.reads - before[0] == 1  # one range read for the page
        assert source.stats.bytes_read - before[1] == 100 * 40
        assert source.stats.bytes_read < reader.header.index_size  # the index is not read
        h = reader.header
        raw = SWH_MEDIUM.read_bytes()[h.index_position + 537 * 40: h.index_position + 538 * 40]
        assert page[37].path == "/index/entries/537"
        assert (page[37].start, page[37].end) == (h.index_position + 537 * 40,
                                                  h.index_position + 538 * 40)
        key = page[37].kids().nodes(0, 1)[0]
        assert key.value == raw[:32].hex()
        assert slots.index_at(h.index_position + 537 * 40 + 39) == 537
        node = entries.kids()
        node_after = entries.kids()
        assert node is node_after
        entries.forget()  # collapsing drops the made children
        assert entries._made is None


def test_parse_offset() -> None:
    assert parse_offset("600") == 600
    assert parse_offset("0x258") == 600
    assert parse_offset("258h") == 600
    with pytest.raises(ValueError):
        parse_offset("six hundred")


# -- selecting a node highlights map's range, for every format -----------------------------------


FILES = [SWH_TINY, ZSS_TINY, AMUDAI, MDB, DATA / "mosaic" / "tiles.mosaic"]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name[:20])
def test_select_highlights_map_range(path: Path) -> None:
    async def script(app: ViewApp, pilot: Any, reader: Any) -> None:
        sections = reader.sections()
        assert sections
        for s in sections[:6] + sections[-2:]:
            tnode = app.reveal_path(s.name)
            await pilot.pause()
            assert tnode is not None, s.name
            assert app.selected().path == s.name
            assert app.hex.highlight == (s.start, s.end)
            assert app.hex.cursor == min(s.start, reader.source.size - 1)
            assert s.name in status(app)

    drive(path, script)


def test_keys_move_through_the_tree_and_the_hex_follows() -> None:
    async def script(app: ViewApp, pilot: Any, reader: Any) -> None:
        sections = {s.name: (s.start, s.end) for s in reader.sections()}
        # lines: root, summary, layout, /magic, /reserved, /header...
        seen = []
        await pilot.press("down", "down", "down")
        for _ in range(5):
            await pilot.pause()
            node = app.selected()
            assert app.hex.highlight == sections[node.path]
            seen.append(node.path)
            await pilot.press("down")
        assert seen == ["/magic", "/reserved", "/header", "/header_padding", "/objects"]
        # expand the index, its entries, a slot: the slot's key is its first 32 bytes
        app.reveal_path("/index")
        await pilot.pause()
        await pilot.press("enter")  # expand /index
        await pilot.press("down", "enter")  # entries
        await pilot.press("down", "down", "down", "down", "enter")  # slot 3
        await pilot.pause()
        node = app.selected()
        first = reader.header.index_position
        assert node.path == "/index/entries/3"
        assert app.hex.highlight == (first + 3 * 40, first + 4 * 40)
        await pilot.press("down")  # its key
        await pilot.pause()
        assert app.selected().path == "/index/entries/3/key"
        assert app.hex.highlight == (first + 120, first + 152)

    drive(SWH_TINY, script)


def test_hex_cursor_selects_innermost_node() -> None:
    async def script(app: ViewApp, pilot: Any, reader: Any) -> None:
        app.hex.focus()
        await pilot.press("right", "down")  # byte 17: /reserved [9, 32)
        await pilot.pause()
        assert app.hex.cursor == 17
        assert app.selected().path == "/reserved"
        assert app.hex.highlight == (9, 32)
        app.goto(reader.header.index_position + 3 * 40 + 35)  # slot 3's offset field
        await pilot.pause()
        assert app.selected().path == "/index/entries/3/ofs"
        assert app.hex.cursor == reader.header.index_position + 3 * 40 + 35  # kept

    drive(SWH_TINY, script)


@pytest.mark.parametrize("dataset", [NG_KV, NG_IMAGE], ids=["kv", "image"])
def test_dataset_lists_shard_files_and_highlights_map_range(dataset: Path) -> None:
    async def script(app: ViewApp, pilot: Any, reader: Any) -> None:
        top = [c.data.node for c in app.tree_view.root.children]
        assert top[0].key == "info"
        if dataset == NG_KV:
            assert [n.key for n in top[1:]] == ["0.shard", "1.shard", "2.shard", "3.shard"]
        else:
            assert [n.key for n in top[1:]] == list(reader.scales)
        sections = reader.sections()
        for s in [sections[0], sections[1], sections[-1]]:
            assert app.reveal_path(s.name) is not None, s.name
            await pilot.pause()
            assert app.selected().path == s.name
            assert app.hex.highlight == (s.start, s.end)
            shard_file = s.name.split("/minishards")[0].split("/shard_index")[0]
            assert app.hex.source.name.endswith(shard_file)

    drive(dataset, script)


# -- keys: / g v m ? q ------------------------------------------------------------------------


def test_slash_looks_up_an_swh_key_and_jumps_to_its_object() -> None:
    key = hashlib.sha256(b"hello world\n").hexdigest()

    async def script(app: ViewApp, pilot: Any, reader: Any) -> None:
        await pilot.press("slash")
        await pilot.press(*key, "enter")
        await pilot.pause()
        slot = reader.slot_of(key)
        node = app.selected()
        assert node.path == f"/index/entries/{slot}/object"
        start, end = app.hex.highlight
        data = SWH_TINY.read_bytes()
        assert data[start + 8 : end] == b"hello world\n" == reader[key]
        assert struct.unpack(">Q", data[start : start + 8])[0] == 12
        assert app.hex.cursor == start
        # an absent key: said on the status line, the selection stays
        await pilot.press("slash")
        await pilot.press(*("00" * 32), "enter")
        await pilot.pause()
        assert "not found" in status(app)
        assert app.selected() is node

    drive(SWH_TINY, script)


@pytest.mark.parametrize(("path", "key", "section"), [
    (ZSS_TINY, "apple", "/blocks/@0"),
    (AMUDAI, "id", "/stripes/0/fields/id/data"),
    (NG_KV, "422", "0.shard/minishards/6/chunks/422"),
], ids=["zss", "amudai", "neuroglancer"])
def test_slash_jumps_to_the_section_holding_the_value(path: Path, key: str,
                                                       section: str) -> None:
    async def script(app: ViewApp, pilot: Any, reader: Any) -> None:
        sec = next(s for s in reader.sections() if s.name == section)
        await pilot.press("slash")
        await pilot.press(*key, "enter")
        await pilot.pause()
        assert app.selected().path == section
        assert app.hex.highlight == (sec.start, sec.end)
        if path == NG_KV:  # the chunk's bytes are the value
            raw = (NG_KV / "0.shard").read_bytes()[sec.start : sec.end]
            assert raw == reader[422]

    drive(path, script)


def test_zss_lookup_and_goto_read_no_more_than_their_path(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Above SCAN_LIMIT a block tree is not walked: `/` descends from the root, `g` reads the
    rows shown; the layout (every block) waits until it is opened."""
    monkeypatch.setattr("shardkit.view.expand.SCAN_LIMIT", 0)
    source = CountingSource(FileSource(str(DATA / "zss" / "medium_zlib.zss")))
    record = "fic yuk gwrhezm hqrfkuqob\\t1825\\t5913175"

    async def script(app: ViewApp, pilot: Any, reader: Any) -> None:
        target = app.jump_to_key(record)
        await pilot.pause()
        assert target is not None
        assert reader.parse_key(record) in reader.records_of(
            *next(iter(reader.iter_blocks(int(target.path.split("@")[1])))))
        assert app.hex.highlight == (target.start, target.end)
        # the block holding the record was found through the index tree
        assert app.selected().path == target.path
        assert app.selected().note == "level 0 data block"
        middle = source.size // 2
        app.goto(middle)
        await pilot.pause()
        node = app.selected()
        assert node.covers(middle) and node.path.startswith("/blocks/@")
        layout = next(t for t in app.tree_view.root.children if t.data.node.key == "layout")
        assert not layout.data.populated
        assert source.stats.bytes_read < source.size // 4
        # the layout, opened, lists the same block with the same range (map's)
        sec = next(s for s in reader.sections() if s.name == node.path)
        assert (sec.start, sec.end) == (node.start, node.end)

    drive(source, script, format="zss")


def test_slash_finds_an_mdb_file_record() -> None:
    async def script(app: ViewApp, pilot: Any, reader: Any) -> None:
        first = next(iter(reader.keys()))
        info = reader.file(first)
        target = app.jump_to_key(reader.format_key(first))
        await pilot.pause()
        assert target is not None and target.start == info.offset
        assert app.hex.cursor == info.offset
        node = app.selected()
        i = [f.offset for f in reader.files].index(info.offset)
        assert node.path == f"/file_info/{i}" and node.value == str(info.hash)
        sec = next(s for s in reader.sections() if s.name == "/file_info")
        end = reader.files[i + 1].offset if i + 1 < len(reader.files) else sec.end - 48
        assert (node.start, node.end) == (info.offset, end)
        assert app.hex.highlight == (node.start, node.end)

    drive(MDB, script)


def test_mdb_sections_list_their_record_blocks() -> None:
    async def script(app: ViewApp, pilot: Any, reader: Any) -> None:
        sec = {s.name: s for s in reader.sections()}
        files = list(reader.files)
        for i, f in enumerate(files):
            tnode = app.reveal_path(f"/file_info/{i}")
            await pilot.pause()
            assert tnode is not None
            end = files[i + 1].offset if i + 1 < len(files) else sec["/file_info"].end - 48
            assert app.hex.highlight == (f.offset, end)
            assert app.selected().value == str(f.hash)

    drive(MDB, script)


def test_v_lists_the_problems_of_a_corrupt_sample_and_enter_jumps() -> None:
    async def script(app: ViewApp, pilot: Any, reader: Any) -> None:
        expected = reader.verify()
        assert expected
        await pilot.press("v")
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, ListScreen)
        options = screen.query_one("#items")
        assert options.option_count == len(expected)
        assert [str(options.get_option_at_index(i).prompt) for i in range(len(expected))] == \
            [str(p) for p in expected]
        assert f"{len(expected)} problem(s)" in str(screen.query_one("#list-title").render())
        await pilot.press("enter")
        await pilot.pause()
        assert not isinstance(app.screen, ListScreen)
        assert app.hex.cursor == expected[0].offset
        assert expected[0].message in status(app)
        # the map cannot be read past the bad block: the index tree finds the block
        node = app.selected()
        assert node.covers(expected[0].offset)
        assert expected[0].field.startswith(node.path + "/") and node.path.startswith("/blocks/@")

    drive(ZSS_CORRUPT, script)


def test_v_on_a_corrupt_swh_index_jumps_to_the_slot(tmp_path: Path) -> None:
    bad = tmp_path / "bad.shard"
    shutil.copy(SWH_TINY, bad)
    with shardkit.open(bad) as reader:
        slot = next(iter(reader.iter_entries())).slot
        at = reader.header.index_position + slot * 40 + 32
    data = bytearray(bad.read_bytes())
    data[at : at + 8] = struct.pack(">Q", 700)  # inside the index, not the objects
    bad.write_bytes(bytes(data))

    async def script(app: ViewApp, pilot: Any, reader: Any) -> None:
        expected = reader.verify()
        i = next(i for i, p in enumerate(expected) if p.check == "object_bounds")
        assert expected[i].offset == at and expected[i].field.startswith(f"/index/entries/{slot}")
        await pilot.press("v")
        await settle(app, pilot)
        assert app.screen.query_one("#items").option_count == len(expected)
        await pilot.press(*["down"] * i, "enter")
        await pilot.pause()
        assert app.hex.cursor == at
        assert app.selected().path == f"/index/entries/{slot}/ofs"
        assert app.hex.highlight == (at, at + 8)

    drive(bad, script)


def test_v_shows_progress_and_closing_the_list_stops_verify() -> None:
    reached: list[int] = []

    def slow_verify(progress: Any = None) -> list[Any]:
        for i in range(100_000):
            reached.append(i)
            progress(i, 100_000)
            time.sleep(0.001)
        return []

    async def script(app: ViewApp, pilot: Any, reader: Any) -> None:
        reader.verify = slow_verify
        await pilot.press("v")
        title = app.screen.query_one("#list-title")
        for _ in range(10_000):  # until the first progress report is shown
            await pilot.pause()
            if "%" in str(title.render()):
                break
        assert "verify: running…" in str(title.render()) and " of 100000)" in str(title.render())
        await pilot.press("escape")
        await app.workers.wait_for_complete()
        assert len(reached) < 100_000  # stopped at the next report after the list closed
        assert app.problems is None

    drive(SWH_TINY, script)


def test_v_on_a_sound_file_says_ok() -> None:
    async def script(app: ViewApp, pilot: Any, reader: Any) -> None:
        await pilot.press("v")
        await settle(app, pilot)
        assert "OK" in str(app.screen.query_one("#list-title").render())
        assert app.screen.query_one("#items").option_count == 0
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, ListScreen)

    drive(SWH_TINY, script)


def test_g_jumps_to_an_offset() -> None:
    async def script(app: ViewApp, pilot: Any, reader: Any) -> None:
        await pilot.press("g")
        await pilot.press(*"0x258", "enter")  # 600: in slot 0's key
        await pilot.pause()
        first = reader.header.index_position
        assert app.hex.cursor == 600
        assert app.selected().path == "/index/entries/0/key"
        assert app.hex.highlight == (first, first + 32)
        assert "byte 600 (0x258)" in status(app)
        await pilot.press("g")
        await pilot.press(*"nowhere", "enter")
        await pilot.pause()
        assert app.hex.cursor == 600 and "not an offset" in status(app)

    drive(SWH_TINY, script)


def test_m_shows_the_map_and_enter_jumps() -> None:
    async def script(app: ViewApp, pilot: Any, reader: Any) -> None:
        sections = reader.sections()
        await pilot.press("m")
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, ListScreen)
        assert screen.query_one("#items").option_count == len(sections)
        bar = screen.query_one("#bar").render()
        assert len(str(bar)) == 120
        await pilot.press("down", "down", "enter")
        await pilot.pause()
        s = sections[2]
        assert app.selected().path == s.name
        assert app.hex.highlight == (s.start, s.end)

    drive(ZSS_TINY, script)


def test_help_and_quit() -> None:
    async def script(app: ViewApp, pilot: Any, reader: Any) -> int | None:
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        text = str(app.screen.query_one("#help-text").render())
        for key in ("g ", "/ ", "v ", "m ", "q "):
            assert f"\n{key:>7}" in "\n" + text or key.strip() in text
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("q")
        await pilot.pause()
        return app.return_code

    assert drive(SWH_TINY, script) == 0


def test_collapsing_drops_what_was_made() -> None:
    async def script(app: ViewApp, pilot: Any, reader: Any) -> None:
        tnode = app.reveal_path("/index/entries/3")
        await pilot.pause()
        entries = tnode.parent
        assert len(entries.children) == reader.num_slots
        entries.collapse()
        await pilot.pause()
        assert len(entries.children) == 0 and entries.data.node._made is None
        assert app.reveal_path("/index/entries/4") is not None  # made again on demand

    drive(SWH_TINY, script)


def test_scrolling_reads_only_the_rows_on_screen() -> None:
    source = CountingSource(FileSource(str(SWH_MEDIUM)))

    async def script(app: ViewApp, pilot: Any, reader: Any) -> None:
        app.hex.focus()
        await pilot.pause()
        seen = len(source.stats.ranges)
        window = app.hex.rows * 16
        for _ in range(20):
            await pilot.press("pagedown")
        await pilot.pause()
        assert app.hex.cursor == 20 * window
        new = source.stats.ranges[seen:]
        assert new  # the pane read what it showed...
        assert all(end - start <= window for start, end in new)  # ...and only that
        assert all(start <= app.hex.cursor + window for start, _ in new)
        assert app.hex._window is not None and len(app.hex._window[2]) <= window

    drive(source, script, format="swh")


def test_remote_file_reads_only_the_visible_window(range_server: Any) -> None:
    srv = range_server(DATA / "swh")
    url = srv.url("medium.shard")
    size = SWH_MEDIUM.stat().st_size

    async def script(app: ViewApp, pilot: Any, reader: Any) -> None:
        opened = srv.count()
        assert srv.bytes_sent < size // 8
        srv.reset()
        app.goto(size // 2)  # rows in the middle: one block read, not the file
        await pilot.pause()
        assert app.hex.cursor == size // 2
        assert 1 <= srv.count() <= 2
        assert srv.bytes_sent <= 2 * 64 * 1024
        assert opened <= 3

    drive(url, script)


# -- opening after the first frame (what `shardkit view FILE` does for a local file) ----------


def lines(app: ViewApp) -> list[tuple[int, str, bool]]:
    """The tree as (depth, label, expanded), every node made so far."""
    out: list[tuple[int, str, bool]] = []

    def walk(node: Any, depth: int) -> None:
        out.append((depth, str(node.label), node.is_expanded))
        for child in node.children:
            walk(child, depth + 1)

    walk(app.tree_view.root, 0)
    return out


class Gate:
    """An opener that waits until the test lets it go, and remembers the reader it made."""

    def __init__(self, path: Path, error: Exception | None = None) -> None:
        self.path, self.error = path, error
        self.go = threading.Event()
        self.reader: Any = None
        self.closed = 0

    def __call__(self) -> Any:
        assert self.go.wait(10), "the test never let the opener go"
        if self.error is not None:
            raise self.error
        self.reader = shardkit.open(self.path)
        close = self.reader.close

        def counted() -> None:
            self.closed += 1
            close()

        self.reader.close = counted
        return self.reader


async def wait_opened(app: ViewApp, pilot: Any) -> None:
    for _ in range(500):
        if app.reader is not None or app.open_error is not None:
            break
        await pilot.pause(0.01)
    await pilot.pause()
    await pilot.pause()


def run_opening(path: Path, script: Callable[[ViewApp, Any, Gate], Awaitable[Any]],
                offset: int | None = None, error: Exception | None = None) -> Any:
    """Run the app on an :class:`Opening` of ``path`` (its bytes shown from the start)."""
    gate = Gate(path, error)
    source = FileSource(path)

    async def go() -> Any:
        app = ViewApp(Opening(gate, source.name, "Software Heritage read shard", source),
                      offset=offset)
        try:
            async with app.run_test(size=SIZE) as pilot:
                await pilot.pause()
                return await script(app, pilot, gate)
        finally:
            gate.go.set()
            app.close_opened()
            source.close()

    return asyncio.run(go())


def test_opening_paints_the_root_and_the_bytes_before_the_reader_opens() -> None:
    async def reference(app: ViewApp, pilot: Any, reader: Any) -> Any:
        return lines(app), str(app.hex.render()), status(app)

    want_lines, want_hex, want_status = drive(str(SWH_TINY), reference)

    async def script(app: ViewApp, pilot: Any, gate: Gate) -> None:
        # the first frame: the root (the file, its format) and the hex of offset 0, no reader
        assert app.reader is None and gate.reader is None
        assert lines(app) == [(0, f"{SWH_TINY}: Software Heritage read shard", False)]
        hex_now = str(app.hex.render())
        assert hex_now.splitlines()[0] == "00000000  53 57 48 53 68 61 72 64  00 00 00 00 00 " \
                                          "00 00 00  SWHShard........"
        assert hex_now == want_hex
        assert "opening…" in status(app)
        await pilot.press("slash")  # keys that need the reader say to wait
        await pilot.pause()
        assert "opening the file" in status(app) and len(app.screen_stack) == 1
        await pilot.press("v", "m")
        await pilot.pause()
        assert len(app.screen_stack) == 1
        gate.go.set()
        await wait_opened(app, pilot)
        # then the tree is the one the opened reader gives, the hex pane on its source
        assert app.reader is gate.reader and app.open_error is None
        assert lines(app) == want_lines
        assert app.hex.source is gate.reader.source
        assert str(app.hex.render()) == want_hex
        assert status(app) == want_status
        sections = {s.name: (s.start, s.end) for s in gate.reader.sections()}
        app.reveal_path("/header")
        await pilot.pause()
        assert app.hex.highlight == sections["/header"]
        assert gate.closed == 0  # the app's caller closes it (close_opened)

    gate_holder: list[Gate] = []

    async def keep(app: ViewApp, pilot: Any, gate: Gate) -> None:
        gate_holder.append(gate)
        await script(app, pilot, gate)

    run_opening(SWH_TINY, keep)
    assert gate_holder[0].closed == 1


def test_opening_with_an_offset_selects_its_node_once_open() -> None:
    async def script(app: ViewApp, pilot: Any, gate: Gate) -> None:
        assert app.hex.cursor == 17  # the cursor is there from the first frame
        gate.go.set()
        await wait_opened(app, pilot)
        assert app.selected().path == "/reserved"
        assert app.hex.cursor == 17 and app.hex.highlight == (9, 32)

    run_opening(SWH_TINY, script, offset=17)


def test_an_error_opening_ends_the_app_with_it() -> None:
    error = ShardkitError("tiny.shard: truncated header", offset=32)

    async def script(app: ViewApp, pilot: Any, gate: Gate) -> Any:
        gate.go.set()
        await wait_opened(app, pilot)
        return app

    app = run_opening(SWH_TINY, script, error=error)
    assert app.open_error is error and app.return_code == 2 and app.reader is None


def test_quitting_while_opening_closes_the_reader_opened_after() -> None:
    async def script(app: ViewApp, pilot: Any, gate: Gate) -> Gate:
        await pilot.press("q")
        await pilot.pause()
        assert app.return_code == 0 and gate.reader is None
        return gate

    gate = run_opening(SWH_TINY, script)
    assert gate.reader is not None and gate.closed == 1  # opened after the quit, then closed


# -- snapshots (SVG): the layout --------------------------------------------------------------


@pytest.fixture
def in_data(monkeypatch: pytest.MonkeyPatch) -> None:
    """Snapshots show the file's name: open the samples by their name in tests/data."""
    monkeypatch.chdir(DATA)


def _app(path: Path, **options: Any) -> ViewApp:
    return ViewApp(shardkit.open(str(path.relative_to(DATA)), **options))


def test_snapshot_swh_opened(snap_compare: Any, in_data: None) -> None:
    assert snap_compare(_app(SWH_TINY), terminal_size=SIZE)


def test_snapshot_swh_key_looked_up(snap_compare: Any, in_data: None) -> None:
    key = hashlib.sha256(b"hello world\n").hexdigest()
    assert snap_compare(_app(SWH_TINY), press=["slash", *key, "enter", "_"],
                        terminal_size=SIZE)


def test_snapshot_zss_map(snap_compare: Any, in_data: None) -> None:
    async def before(pilot: Any) -> None:
        await pilot.press("m")
        await settle(pilot.app, pilot)

    assert snap_compare(_app(ZSS_TINY), run_before=before, terminal_size=SIZE)


def test_snapshot_help(snap_compare: Any, in_data: None) -> None:
    assert snap_compare(_app(SWH_TINY), press=["question_mark", "_"], terminal_size=SIZE)


def test_manifest_key_is_in_the_sample() -> None:  # the key the snapshots look up
    manifest = json.loads((DATA / "swh" / "manifest.json").read_text())
    values = manifest["files"]["tiny.shard"]["generator"]["params"]["values"]
    assert "hello world\n" in values
