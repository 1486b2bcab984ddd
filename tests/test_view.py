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
ZS_LETTERS = DATA / "zs" / "reference" / "letters-lzma.zs"
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


FILES = [SWH_TINY, ZSS_TINY, ZS_LETTERS, AMUDAI, MDB, DATA / "mosaic" / "tiles.mosaic"]


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


@pytest.mark.parametrize(("path", "field", "value"), [
    (SWH_TINY, "/header/num_objects", lambda r: r.header.objects_count),
    (ZSS_TINY, "/header/root_voffset", lambda r: r.root),
    (ZS_LETTERS, "/header/ofs_root_index", lambda r: r.root),
    (AMUDAI, "/directory/len_payload",
     lambda r: r.directory_ref.end - r.directory_ref.start - 8),
    (MDB, "/footer/ofs_file_info", lambda r: r.files[0].offset),
], ids=["swh", "zss", "zs", "amudai", "mdb"])
def test_leaf_fields_have_their_exact_bytes(path: Path, field: str, value: Any) -> None:
    """A header's fields are nodes with their own bytes (Kaitai's positions), not the
    header's: selecting one highlights exactly the bytes its value is read from."""

    async def script(app: ViewApp, pilot: Any, reader: Any) -> None:
        tnode = app.reveal_path(field)
        await pilot.pause()
        assert tnode is not None
        node = app.selected()
        assert node.path == field
        start, end = app.hex.highlight
        assert (start, end) == (node.start, node.end) and end - start in (4, 8)
        raw = path.read_bytes()[start:end]
        expected = value(reader)
        assert expected in (int.from_bytes(raw, "little"), int.from_bytes(raw, "big"))
        assert node.value.split(" ")[0] == str(expected)
        parent = field.rsplit("/", 1)[0]
        sec = next(s for s in reader.sections() if s.name == parent)
        assert sec.start <= start and end <= sec.end and end - start < sec.end - sec.start
        # the hex cursor on the field's last byte selects the field
        app.goto(end - 1)
        await pilot.pause()
        assert app.selected().path == field

    drive(path, script)


def test_mdb_file_blocks_open_to_their_terms_and_verification_entries() -> None:
    data = MDB.read_bytes()

    async def script(app: ViewApp, pilot: Any, reader: Any) -> None:
        i, info = next((i, f) for i, f in enumerate(reader.files)
                       if f.terms and f.verification_hashes)
        term = info.terms[0]
        base = f"/file_info/{i}/terms/0"
        assert app.reveal_path(f"{base}/chunk_index_end") is not None
        await pilot.pause()
        a, b = app.hex.highlight
        assert b - a == 4 and int.from_bytes(data[a:b], "little") == term.chunk_end
        assert app.selected().value == str(term.chunk_end)
        assert app.reveal_path(f"{base}/len_unpacked") is not None
        await pilot.pause()
        a, b = app.hex.highlight
        assert int.from_bytes(data[a:b], "little") == term.unpacked_bytes
        assert app.reveal_path(f"/file_info/{i}/verification/0") is not None
        await pilot.pause()
        node = app.selected()
        assert node.end - node.start == 48 and str(info.verification_hashes[0])[:16] in node.value
        xorb = reader.xorbs[0]
        assert app.reveal_path("/xorb_info/0/chunks/1/len_unpacked") is not None
        await pilot.pause()
        a, b = app.hex.highlight
        assert int.from_bytes(data[a:b], "little") == xorb.chunks[1].size

    drive(MDB, script)


@pytest.fixture
def skeleton_dataset(tmp_path: Path) -> tuple[Path, dict[int, bytes]]:
    """Real skeletons (the payload samples) in a sharded dataset written by shardkit."""
    import gzip

    from shardkit.writers.neuroglancer import write_sharded_dataset

    src = DATA / "ng_payloads" / "skeletons"
    items = {int(p.name[:-3]): gzip.decompress(p.read_bytes()) for p in src.glob("*.gz")}
    spec = {"@type": "neuroglancer_uint64_sharded_v1", "preshift_bits": 0, "hash": "identity",
            "minishard_bits": 1, "shard_bits": 0, "minishard_index_encoding": "raw",
            "data_encoding": "raw"}
    write_sharded_dataset(tmp_path / "skel", items, spec)
    return tmp_path / "skel", items


def test_skeleton_chunks_open_to_their_fields(
        skeleton_dataset: tuple[Path, dict[int, bytes]]) -> None:
    path, items = skeleton_dataset

    async def script(app: ViewApp, pilot: Any, reader: Any) -> None:
        # the hex pane starts on the first shard file, never empty
        assert app.hex.source is not None and app.hex.source.name.endswith("0.shard")
        sec = next(s for s in reader.sections() if s.name.endswith("/chunks/23"))
        raw = (path / "0.shard").read_bytes()
        assert raw[sec.start:sec.end] == items[23]
        assert app.reveal_path(f"{sec.name}/num_vertices") is not None
        await pilot.pause()
        assert app.hex.highlight == (sec.start, sec.start + 4)
        n = int.from_bytes(items[23][:4], "little")
        assert app.selected().value.split()[0] == str(n)
        assert app.reveal_path(f"{sec.name}/vertex_positions") is not None
        await pilot.pause()
        assert app.hex.highlight == (sec.start + 8, sec.start + 8 + 12 * n)
        # the shard file's own node shows the file's bytes
        assert app.reveal_path("0.shard") is not None
        await pilot.pause()
        assert app.hex.highlight == (0, len(raw)) and app.hex.source.name.endswith("0.shard")

    drive(path, script)


def test_an_image_dataset_opens_on_its_first_shard_file() -> None:
    async def script(app: ViewApp, pilot: Any, reader: Any) -> None:
        first = reader.sections()[0].name.split("/shard_index")[0]
        assert app.hex.source is not None and app.hex.source.name.endswith(first)
        assert "cannot read" not in str(app.hex.render()) and app.hex.size_bytes > 0

    drive(NG_IMAGE, script)


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


def test_a_lookup_result_leaves_the_status_line_once_the_user_moves() -> None:
    async def script(app: ViewApp, pilot: Any, reader: Any) -> None:
        await pilot.press("slash")
        await pilot.press(*"id", "enter")
        await pilot.pause()
        assert "found id Int64: DATA buffer, 1 blocks" in status(app)
        assert not status(app).rstrip().endswith("section")
        await pilot.press("down")  # the user moves on: the result is stale
        await pilot.pause()
        assert "found id" not in status(app)
        await pilot.press("slash")
        await pilot.press(*"nosuchfield", "enter")
        await pilot.pause()
        assert "nosuchfield" in status(app)
        app.hex.focus()
        await pilot.press("right")
        await pilot.pause()
        assert "nosuchfield" not in status(app)

    drive(AMUDAI, script)


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


@pytest.mark.parametrize("name", ["letters-lzma.zs", "letters-none.zs"])
def test_zs_index_tree_lookup_and_goto(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """ZS addresses blocks by file offset (ZSS by a virtual offset from 0): the index tree
    opens from the root, `/` selects the record's block through it and `g` lands on a block,
    with the layout left closed (as on a large file)."""
    monkeypatch.setattr("shardkit.view.expand.SCAN_LIMIT", 0)
    path = DATA / "zs" / "reference" / name

    async def script(app: ViewApp, pilot: Any, reader: Any) -> None:
        tree = next(t for t in app.tree_view.root.children if t.data.node.key == "index tree")
        assert tree.data.node.start == reader.root
        app.populate(tree)
        root_block = tree.children[0].data.node
        assert root_block.path == f"/blocks/@{reader.root}"
        assert root_block.value.startswith(f"level {reader.root_level} index block")
        target = app.jump_to_key("n")
        await pilot.pause()
        assert target is not None
        node = app.selected()
        assert node.path == target.path and node.note == "level 0 data block"
        voffset = int(target.path.split("@")[1])
        info, body = next(iter(reader.iter_blocks(voffset)))
        assert b"n" in reader.records_of(info, body)
        assert app.hex.highlight == (info.offset, info.offset + info.size)
        # a byte in the middle of the blocks selects the block holding it
        middle = (reader.blocks_offset + reader.root) // 2
        app.goto(middle)
        await pilot.pause()
        node = app.selected()
        assert node.covers(middle) and node.path.startswith("/blocks/@"), node.path
        assert app.hex.cursor == middle
        sec = next(s for s in reader.sections() if s.name == node.path)
        assert (sec.start, sec.end) == (node.start, node.end)
        layout = next(t for t in app.tree_view.root.children if t.data.node.key == "layout")
        assert not layout.data.populated

    drive(path, script)


def test_amudai_map_names_every_field_descriptor() -> None:
    out = subprocess.run([sys.executable, "-m", "shardkit", "map", "--json", str(AMUDAI)],
                         check=True, capture_output=True, text=True).stdout
    rows = json.loads(out)
    names = [r["name"] for r in rows]
    assert len(names) == len(set(names))  # no two sections share a name
    with shardkit.open(AMUDAI) as reader:
        fields = [n.path for n in reader.iter_fields()]
        refs = reader._shard_field_list
    descriptors = [r for r in rows if r["note"] == "FieldDescriptor record"]
    assert [r["name"] for r in descriptors] == [f"/fields/{f}/descriptor" for f in fields]
    assert [(r["start"], r["end"]) for r in descriptors] == [(x.start, x.end) for x in refs]


def test_amudai_field_nodes_are_their_own_pieces() -> None:
    """Every field descriptor is a node; a field's node is its descriptor and buffers, not
    the span from the first to the last (which holds every other field's data)."""

    async def script(app: ViewApp, pilot: Any, reader: Any) -> None:
        sec = {s.name: s for s in reader.sections()}
        refs = reader._shard_field_list
        for field, ref in zip(reader.iter_fields(), refs, strict=True):
            middle = (ref.start + ref.end) // 2
            app.goto(middle)
            await pilot.pause()
            assert app.selected().path == f"/fields/{field.path}/descriptor"
            assert app.hex.highlight == (ref.start, ref.end)
        own = sorted((s.start, s.end) for name, s in sec.items()
                     if name.startswith("/stripes/0/fields/id/"))
        assert len(own) == 2  # the data buffer and the descriptor, far apart
        tnode = app.reveal_path("/stripes/0/fields/id")
        await pilot.pause()
        node = app.selected()
        assert tnode is not None and node.path == "/stripes/0/fields/id"
        assert node.pieces == own and app.hex.pieces == own
        assert "in 2 pieces" in status(app)
        small = sec["/stripes/0/fields/small/data"]
        assert own[0][1] <= small.start and small.end <= own[1][0]
        assert not node.covers(small.start)  # another field's data is not the id field's
        app.goto(small.start)
        await pilot.pause()
        assert app.selected().path == "/stripes/0/fields/small/data/blocks/0"  # its block

    drive(AMUDAI, script)


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
        # the map cannot be read past the bad block: the layout's one error node is there
        node = app.selected()
        assert node.covers(expected[0].offset)
        assert node.key == "error" and node.path == expected[0].field

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


async def ask(app: ViewApp, pilot: Any, key: str, answer: str) -> None:
    """Press ``key`` and answer its dialog with ``answer`` (replacing any default)."""
    await pilot.press(key)
    await pilot.pause()
    app.screen.query_one("#answer").value = answer
    await pilot.press("enter")
    await settle(app, pilot)


def test_hex_search_finds_bytes_and_text_and_n_and_N_step() -> None:
    data = SWH_TINY.read_bytes()
    hits = [i for i in range(len(data)) if data.startswith(b"o", i)]
    assert len(hits) >= 3

    async def script(app: ViewApp, pilot: Any, reader: Any) -> None:
        app.hex.focus()
        await ask(app, pilot, "slash", '"hello world"')  # text, in quotes
        assert app.hex.cursor == data.find(b"hello world") == 520
        assert app.hex.selection == (520, 531)
        assert app.selected().covers(520)  # the node there is selected too
        assert "found at byte 520" in status(app)
        await ask(app, pilot, "slash", "53 6f 66 74")  # bytes: "Soft"
        assert app.hex.cursor == data.find(b"Soft") > 520
        app.goto(0)
        await ask(app, pilot, "slash", "o")  # plain text
        assert app.hex.cursor == hits[0]
        await pilot.press("n")
        await settle(app, pilot)
        assert app.hex.cursor == hits[1]
        await pilot.press("n")
        await settle(app, pilot)
        assert app.hex.cursor == hits[2]
        await pilot.press("N")
        await settle(app, pilot)
        assert app.hex.cursor == hits[1]
        app.goto(hits[-1])
        await pilot.press("n")
        await settle(app, pilot)
        assert app.hex.cursor == hits[-1] and "not found after" in status(app)
        # in the tree, / is the format's lookup, not a search of the bytes
        app.tree_view.focus()
        await pilot.press("slash")
        await pilot.pause()
        assert "Look up a key" in str(app.screen.query_one("Label").render())

    drive(SWH_TINY, script)


def test_search_reads_a_piece_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    from shardkit.view import navigate

    source = CountingSource(FileSource(str(SWH_MEDIUM)))
    data = SWH_MEDIUM.read_bytes()
    pattern = data[1_500_000:1_500_012]
    at = navigate.find(source, pattern, 0, chunk=65536)
    assert at == data.find(pattern)
    assert max(b - a for a, b in source.stats.ranges) < 65536 + len(pattern)
    zeros = b"\x00" * 6  # many matches: backward finds the last one that begins before `at`
    before = data.rfind(zeros, 0, at + len(zeros) - 1)
    assert 0 < before < at
    assert navigate.find(source, zeros, at, backward=True, chunk=65536) == before
    assert navigate.find(source, pattern, at, backward=True, chunk=65536) is None
    assert navigate.find(source, b"\xff" * 40, 0, chunk=65536) is None
    assert navigate.parse_pattern('"ab"') == (b"ab", 'text "ab"')
    assert navigate.parse_pattern("61 62")[0] == b"ab" == navigate.parse_pattern("ab cd x")[0][:2]


def test_inspector_reads_the_bytes_at_the_cursor() -> None:
    async def script(app: ViewApp, pilot: Any, reader: Any) -> None:
        reads = app.hex.reads
        app.goto(40)  # /header/num_objects: u64 big-endian 3
        await pilot.pause()
        text = str(app.query_one("#inspector").render())
        assert "byte 40 (0x28)" in text
        row = next(line for line in text.splitlines() if line.startswith("u64 "))
        raw = SWH_TINY.read_bytes()[40:48]
        assert row.split()[1:] == [str(int.from_bytes(raw, "little")), "3"]
        row = next(line for line in text.splitlines() if line.startswith("i16 "))
        assert row.split()[1:] == ["0", "0"]
        assert app.hex.reads == reads  # the rows on screen held those bytes
        app.goto(520)  # "hello": ASCII and UTF-8
        await pilot.pause()
        text = str(app.query_one("#inspector").render())
        assert "ascii 'h'" in text and "varint 104 (1 bytes)" in text

    drive(SWH_TINY, script)


def test_select_a_range_and_export_it(tmp_path: Path) -> None:
    data = SWH_TINY.read_bytes()

    async def script(app: ViewApp, pilot: Any, reader: Any) -> None:
        app.goto(520)
        app.hex.focus()
        await pilot.press(*["shift+right"] * 10)
        await pilot.pause()
        assert app.hex.selection == (520, 531)
        assert "selected [520, 531) 11 bytes" in status(app)
        out = tmp_path / "hello.bin"
        await ask(app, pilot, "e", str(out))
        assert out.read_bytes() == data[520:531] == b"hello world"
        assert f"exported 11 bytes [520, 531) to {out}" in status(app)
        await pilot.press("right")  # a plain move ends the selection
        await pilot.pause()
        assert app.hex.selection is None
        # without a selection, e exports the selected node's range
        app.reveal_path("/header")
        await pilot.pause()
        out2 = tmp_path / "header.bin"
        await ask(app, pilot, "e", str(out2))
        assert out2.read_bytes() == data[32:88]

    drive(SWH_TINY, script)


def test_bookmarks_are_listed_and_jump() -> None:
    async def script(app: ViewApp, pilot: Any, reader: Any) -> None:
        app.reveal_path("/header/num_objects")
        await pilot.pause()
        await pilot.press("b")
        app.reveal_path("/hash_function")
        await pilot.pause()
        await pilot.press("b")
        await pilot.pause()
        assert [(a, b, label) for _, a, b, label in app.bookmarks] == [
            (40, 48, "/header/num_objects"), (1023, 1098, "/hash_function")]
        assert app.hex.bookmarks == [(40, 48), (1023, 1098)]
        app.goto(0)
        await pilot.press("B")
        await pilot.pause()
        assert isinstance(app.screen, ListScreen)
        assert app.screen.query_one("#items").option_count == 2
        await pilot.press("enter")  # the first
        await pilot.pause()
        assert app.hex.cursor == 40 and app.hex.selection == (40, 48)
        assert app.selected().path == "/header/num_objects"
        await pilot.press("b")  # the same range again: removed
        await pilot.pause()
        assert [(a, b) for _, a, b, _ in app.bookmarks] == [(1023, 1098)]

    drive(SWH_TINY, script)


def test_g_past_the_end_says_so() -> None:
    async def script(app: ViewApp, pilot: Any, reader: Any) -> None:
        app.goto(600)
        await ask(app, pilot, "g", "5000")
        assert app.hex.cursor == 600
        assert "byte 5000 is past the end" in status(app) and "1098 bytes" in status(app)
        await ask(app, pilot, "g", "1097")
        assert app.hex.cursor == 1097

    drive(SWH_TINY, script)


def test_the_selected_node_scrolls_into_view() -> None:
    async def script(app: ViewApp, pilot: Any, reader: Any) -> None:
        tree = app.tree_view
        for slot in (90, 3, 777, 40):
            app.goto(reader.header.index_position + slot * 40 + 1)
            tnode = tree.cursor_node
            assert tnode.data.node.path == f"/index/entries/{slot}/key"

            def shown(tnode: Any = tnode) -> bool:
                top = tree.scroll_offset.y
                return bool(top <= tnode.line < top + tree.scrollable_content_region.height)

            for _ in range(50):  # (the app scrolls once the new lines are laid out)
                await pilot.pause()
                if shown():
                    break
            assert shown()

    drive(SWH_MEDIUM, script)


NG_GZIP = DATA / "neuroglancer" / "ts_kv_identity_preshift_gzipdata"


@pytest.mark.parametrize("path", [ZSS_TINY, ZS_LETTERS], ids=["zss", "zs"])
def test_d_shows_a_block_decoded_and_a_record_in_it(path: Path) -> None:
    async def script(app: ViewApp, pilot: Any, reader: Any) -> None:
        info, body = next(iter(reader.iter_blocks()))
        name = next(s.name for s in reader.sections() if s.start == info.offset)
        tnode = app.reveal_path(name)
        await pilot.pause()
        await pilot.press("d")
        await pilot.pause()
        pane = app.decoded_pane
        assert pane.has_class("open") and pane.source.read_range(0, pane.source.size) == body
        assert len(body) != info.size  # (decoded, not stored)
        # its records: selecting one highlights its bytes in the decoded pane
        app.populate(tnode)
        records = reader.records_of(info, body)
        k = len(records) - 1
        tnode.expand()
        await pilot.pause()
        app.tree_view.move_cursor(tnode.children[k])
        await pilot.pause()
        a, b = pane.highlight
        assert body[a:b] == records[k] and b == len(body)
        pane.focus()  # the decoded pane's cursor selects the record under it
        await pilot.press("home")
        await pilot.pause()
        first = app.selected()
        assert first.key == "0" and body[slice(*first.in_decoded)] == records[0]
        await pilot.press(*["right"] * (len(body) - 1))  # the last byte: the last record
        await pilot.pause()
        assert app.selected().key == str(k) and pane.cursor == len(body) - 1
        app.tree_view.focus()
        assert app.hex.highlight == (info.offset, info.offset + info.size)  # the stored block
        await pilot.press("d")  # closes it
        await pilot.pause()
        assert not pane.has_class("open")

    drive(path, script)


def test_d_shows_an_amudai_block_decoded() -> None:
    import numpy as np

    async def script(app: ViewApp, pilot: Any, reader: Any) -> None:
        path = "/stripes/0/fields/id/data/blocks/0"
        assert app.reveal_path(path) is not None
        await pilot.pause()
        node = app.selected()
        n = int(node.value.split()[0])
        await pilot.press("d")
        await pilot.pause()
        pane = app.decoded_pane
        values = np.frombuffer(pane.source.read_range(0, pane.source.size), "<i8")
        column = reader.read_column("id")[:n]  # the first stripe's values (nulls read as 0)
        assert values.tolist() == [0 if v is None else v for v in column]
        buffer = next(s for s in reader.sections() if s.name == "/stripes/0/fields/id/data")
        assert buffer.start <= node.start < node.end <= buffer.end  # the block, in its buffer
        # a value selected in the tree is highlighted among the decoded bytes
        assert app.reveal_path(f"{path}/2") is not None
        await pilot.pause()
        assert app.selected().value == str(column[2]) and app.selected().path == f"{path}/2"
        a, b = pane.highlight
        assert (a, b) == (16, 24) and int.from_bytes(values.tobytes()[a:b], "little",
                                                     signed=True) == column[2]
        # and back: the decoded pane's cursor selects the value under it
        pane.focus()
        await pilot.press("down")  # 16 bytes on: value 4
        await pilot.pause()
        assert pane.cursor == 32 and app.selected().path == f"{path}/4"
        assert pane.highlight == (32, 40)

    drive(AMUDAI, script)


def test_d_shows_a_gzip_chunk_decoded() -> None:
    async def script(app: ViewApp, pilot: Any, reader: Any) -> None:
        sec = next(s for s in reader.sections() if "/chunks/" in s.name)
        chunk = int(sec.name.rsplit("/", 1)[1])
        app.reveal_path(sec.name)
        await pilot.pause()
        await pilot.press("d")
        await pilot.pause()
        pane = app.decoded_pane
        data = pane.source.read_range(0, pane.source.size)
        assert data == reader[chunk] and data != app.hex.source.read_range(sec.start, sec.end)
        # a node that is no compressed block says so
        app.reveal_path(sec.name.split("/minishards")[0] + "/shard_index")
        await pilot.pause()
        assert pane.source is None and "no compressed block" in pane.border_title

    drive(NG_GZIP, script)


def test_command_palette_offers_shardkit_actions() -> None:
    async def script(app: ViewApp, pilot: Any, reader: Any) -> None:
        from textual.command import CommandPalette

        await pilot.press("ctrl+p")
        await pilot.pause()
        assert isinstance(app.screen, CommandPalette)
        await pilot.press(*"verify")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await settle(app, pilot)
        assert isinstance(app.screen, ListScreen)  # verify ran
        assert "verify: OK" in str(app.screen.query_one("#list-title").render())
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"0x258")  # an offset: go there at once
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause()
        assert app.hex.cursor == 0x258 and app.selected().covers(0x258)
        from shardkit.view.palette import ACTIONS

        assert {a for _, a, _ in ACTIONS} >= {"goto", "lookup_key", "verify", "map", "export"}
        assert all(hasattr(app, f"action_{a}") for _, a, _ in ACTIONS)

    drive(SWH_TINY, script)


def test_every_dialog_says_esc_closes_it() -> None:
    from shardkit.view.screens import AskScreen

    async def script(app: ViewApp, pilot: Any, reader: Any) -> None:
        for key, kind in [("g", AskScreen), ("slash", AskScreen), ("m", ListScreen),
                          ("v", ListScreen), ("question_mark", HelpScreen)]:
            await pilot.press(key)
            await settle(app, pilot)
            assert isinstance(app.screen, kind), key
            hints = [str(h.render()) for h in app.screen.query(".hint")]
            assert len(hints) == 1 and "Esc" in hints[0] and "close" in hints[0], key
            await pilot.press("escape")
            await pilot.pause()
            assert len(app.screen_stack) == 1, key

    drive(SWH_TINY, script)


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
    error = OSError("tiny.shard: permission denied")  # no byte of the file to show

    async def script(app: ViewApp, pilot: Any, gate: Gate) -> Any:
        gate.go.set()
        await wait_opened(app, pilot)
        return app

    app = run_opening(SWH_TINY, script, error=error)
    assert app.open_error is error and app.return_code == 2 and app.reader is None


def all_nodes(app: ViewApp) -> list[Any]:
    out, stack = [], [app.tree_view.root]
    while stack:
        t = stack.pop()
        if t.data is not None and not t.data.group:
            out.append(t.data.node)
        stack.extend(t.children)
    return out


def test_a_damaged_file_keeps_its_intact_parts_with_one_error_node(tmp_path: Path) -> None:
    """A shard cut short: its reader does not open, but the magic and the header read (each
    field its own bytes) and the damage is one error node at the byte the error names."""
    cut = tmp_path / "half.shard"
    cut.write_bytes(SWH_TINY.read_bytes()[:700])
    with pytest.raises(ShardkitError) as info:
        shardkit.open(cut)
    error = info.value
    source = FileSource(str(cut))

    async def go() -> ViewApp:
        app = ViewApp(Opening(lambda: shardkit.open(cut), str(cut),
                              "Software Heritage read shard", source, "swh"))
        async with app.run_test(size=SIZE) as pilot:
            for _ in range(300):
                if app.damage is not None or app.return_code is not None:
                    break
                await pilot.pause(0.02)
            await pilot.pause()
            assert app.return_code is None  # still running: the file is shown
            assert str(app.tree_view.root.label).endswith("damaged")
            nodes = all_nodes(app)
            errors = [n for n in nodes if n.key == "error"]
            assert len(errors) == 1
            assert errors[0].start == error.offset == 80 and errors[0].path == error.field
            layout = app.tree_view.root.children[0]
            assert [c.data.node.key for c in layout.children] == [
                "magic", "reserved", "header", "error"]
            assert app.reveal_path("/header/num_objects") is not None
            await pilot.pause()
            assert app.hex.highlight == (40, 48)
            assert app.selected().value == "3"
            app.goto(80)
            await pilot.pause()
            assert app.selected().key == "error" and app.hex.highlight == (80, 81)
            assert "damaged" in status(app)
            await pilot.press("slash")  # what needs the reader says why not
            await pilot.pause()
            assert len(app.screen_stack) == 1 and "did not open" in status(app)
            await pilot.press("q")
        return app

    try:
        app = asyncio.run(go())
    finally:
        source.close()
    assert app.open_error is app.damage and str(app.open_error) == str(error)


def test_a_corrupt_block_keeps_the_layout_before_and_after_it() -> None:
    """A ZSS file whose map stops at a corrupt block: its layout is the parts its schema reads
    (header, blocks, root) with the damage as one error node at its byte."""

    async def script(app: ViewApp, pilot: Any, reader: Any) -> None:
        with pytest.raises(ShardkitError) as info:
            reader.sections()
        offset = info.value.offset
        layout = next(t for t in app.tree_view.root.children if t.data.node.key == "layout")
        app.populate(layout)
        keys = [c.data.node.key for c in layout.children]
        assert keys[:3] == ["magic", "len_header", "header"] and keys.count("error") == 1
        err = next(c.data.node for c in layout.children if c.data.node.key == "error")
        assert err.start == offset
        app.goto(offset)
        await pilot.pause()
        assert app.selected() is err and app.hex.highlight == (offset, offset + 1)
        app.goto(15)  # the header's root voffset: intact, its own 8 bytes
        await pilot.pause()
        assert app.selected().path == "/header/root_voffset"
        assert app.hex.highlight == (12, 20)
        assert "header_crc32c_input" not in keys  # an instance over the header's bytes
        assert "blocks" in keys and keys.index("error") < len(keys)

    drive(ZSS_CORRUPT, script)


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
