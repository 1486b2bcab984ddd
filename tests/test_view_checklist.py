"""The viewer's checklist, from ksv and ImHex: each feature shown working on every format.

One Pilot run per target: every format's sample (ZS included), a Neuroglancer dataset, a
damaged file (its reader cannot open it) and a file served over HTTP. Each run ticks off:

- ksv: the tree, the hex pane, linked selection both ways (a node highlights its bytes, a byte
  selects its innermost node) and exact field ranges (a leaf field is its own bytes);
- ImHex: search (``/`` in the hex pane), the data inspector, bookmarks, export of a range to a
  file and, where the format compresses, the decoded view (``d``).

A ZS snapshot (pytest-textual-snapshot) shows the tree, a leaf field and the inspector.
"""

from __future__ import annotations

import asyncio
import gzip
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

import shardkit
from shardkit.sources import FileSource

textual = pytest.importorskip("textual", reason="the view extra (Textual) is not installed")

from shardkit.view.app import Opening, ViewApp  # noqa: E402

DATA = Path(__file__).parent / "data"
SIZE = (160, 48)
MDB = sorted((DATA / "mdb" / "real" / "session").glob("*.mdb"))[0]
NG_GZIP = DATA / "neuroglancer" / "ts_kv_identity_preshift_gzipdata"

#: target -> (leaf field path, its file under the target for a dataset, a decoded block path)
CASES: dict[str, tuple[Path, str, str, str | None]] = {
    "swh": (DATA / "swh" / "tiny.shard", "/header/num_objects", "", None),
    "zss": (DATA / "zss" / "tiny_zlib.zss", "/header/root_voffset", "", "/blocks/@0"),
    "zs": (DATA / "zs" / "reference" / "letters-lzma.zs", "/header/ofs_root_index", "",
           "/blocks/@247"),
    "mdb": (MDB, "/footer/ofs_file_info", "", None),
    "amudai": (DATA / "amudai" / "single.amudai.shard", "/directory/len_payload", "",
               "/stripes/0/fields/u16/data/blocks/0"),
    "dataset": (NG_GZIP, "0.shard/shard_index/0", "0.shard",
                "0.shard/minishards/0/chunks/0"),
}


async def _ask(app: ViewApp, pilot: Any, key: str, answer: str) -> None:
    await pilot.press(key)
    await pilot.pause()
    app.screen.query_one("#answer").value = answer
    await pilot.press("enter")
    await app.workers.wait_for_complete()
    await pilot.pause()
    await pilot.pause()


async def checklist(app: ViewApp, pilot: Any, data: bytes, field: str, tmp: Path,
                    decoded: tuple[str, bytes] | None) -> dict[str, bool]:
    """Tick each feature off on the running app; ``data`` is the bytes of the field's file."""
    done: dict[str, bool] = {}
    # ksv: the tree and the hex pane
    done["tree"] = len(app.tree_view.root.children) > 0
    tnode = app.reveal_path(field)
    await pilot.pause()
    node = app.selected()
    done["hex"] = app.hex.source is not None and str(app.hex.render()).split()[0] in (
        f"{0:08x}", f"{app.hex.top:08x}")
    # linked selection: the node highlights its bytes ...
    done["node -> bytes"] = tnode is not None and node.path == field and \
        app.hex.highlight == (node.start, node.end)
    # ... exactly its own (a leaf field, inside a larger parent) ...
    parent = tnode.parent.data.node if tnode is not None else None
    done["exact field range"] = parent is not None and parent.size is not None and \
        0 < node.size < parent.size and parent.start <= node.start and node.end <= parent.end
    # ... and a byte selects its innermost node
    app.goto(0)
    await pilot.pause()
    app.goto(node.start)
    await pilot.pause()
    done["bytes -> node"] = app.selected().path == field
    # ImHex: the inspector reads the bytes at the cursor
    inspector = str(app.query_one("#inspector").render())
    done["inspector"] = f"byte {node.start} (0x{node.start:x})" in inspector and \
        f"binary {data[node.start]:08b}" in inspector
    # search: the field's bytes, as hex pairs, from the start of the file
    pattern = data[node.start:node.end]
    app.goto(0)
    await pilot.pause()
    app.hex.focus()
    await _ask(app, pilot, "slash", pattern.hex(" "))
    done["search"] = app.hex.cursor == data.find(pattern) and \
        app.hex.selection == (data.find(pattern), data.find(pattern) + len(pattern))
    # bookmarks and export: the selection (the match) is bookmarked and written to a file
    await pilot.press("b")
    await pilot.pause()
    done["bookmark"] = [(a, b) for _, a, b, _ in app.bookmarks][-1:] == [app.hex.selection]
    out = tmp / "export.bin"
    await _ask(app, pilot, "e", str(out))
    done["export"] = out.exists() and out.read_bytes() == pattern
    if decoded is not None:  # a compressed block: d shows it decoded
        app.tree_view.focus()
        app.reveal_path(decoded[0])
        await pilot.pause()
        await pilot.press("d")
        await pilot.pause()
        pane = app.decoded_pane
        done["decoded view"] = pane.has_class("open") and pane.source is not None and \
            pane.source.read_range(0, pane.source.size) == decoded[1]
    return done


def _run(app: ViewApp, script: Callable[[ViewApp, Any], Awaitable[Any]]) -> Any:
    async def go() -> Any:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            return await script(app, pilot)

    return asyncio.run(go())


def _decoded(reader: Any, path: str) -> bytes:
    if "/fields/" in path:  # an Amudai block: the stripe's values, little-endian
        import numpy as np

        n = int(reader.summary()["stripes"][0]["record_count"])
        values = reader.read_column(path.split("/")[4])[:n]  # u16: an unsigned Int16
        return np.array([0 if v is None else v for v in values], "<u2").tobytes()
    if "/chunks/" in path:
        return bytes(reader[int(path.rsplit("/", 1)[1])])
    voffset = int(path.split("@")[1])
    return bytes(next(iter(reader.iter_blocks(voffset)))[1])


@pytest.mark.parametrize("case", list(CASES))
def test_checklist(case: str, tmp_path: Path) -> None:
    target, field, name, block = CASES[case]
    data = (target / name).read_bytes() if name else target.read_bytes()
    with shardkit.open(target) as reader:
        decoded = (block, _decoded(reader, block)) if block else None
        app = ViewApp(reader)

        async def script(app: ViewApp, pilot: Any) -> dict[str, bool]:
            return await checklist(app, pilot, data, field, tmp_path, decoded)

        done = _run(app, script)
    want = {"tree", "hex", "node -> bytes", "exact field range", "bytes -> node", "inspector",
            "search", "bookmark", "export"} | ({"decoded view"} if block else set())
    assert set(done) == want
    assert [k for k, ok in done.items() if not ok] == []


def test_checklist_over_http(range_server: Any, tmp_path: Path) -> None:
    path = DATA / "swh" / "medium.shard"
    srv = range_server(path.parent)
    data = path.read_bytes()
    with shardkit.open(srv.url(path.name)) as reader:
        app = ViewApp(reader)

        async def script(app: ViewApp, pilot: Any) -> dict[str, bool]:
            return await checklist(app, pilot, data, "/header/num_objects", tmp_path, None)

        done = _run(app, script)
    assert len(done) == 9 and [k for k, ok in done.items() if not ok] == []
    # ranged reads: the search read one piece (it matched in the header), not the file
    from shardkit.view.navigate import CHUNK

    assert srv.bytes_sent < CHUNK + (256 << 10) < len(data)


def test_checklist_of_a_damaged_file(tmp_path: Path) -> None:
    whole = (DATA / "swh" / "tiny.shard").read_bytes()
    cut = tmp_path / "cut.shard"
    cut.write_bytes(whole[:700])
    data = cut.read_bytes()
    source = FileSource(str(cut))
    app = ViewApp(Opening(lambda: shardkit.open(cut), str(cut),
                          "Software Heritage read shard", source, "swh"))

    async def script(app: ViewApp, pilot: Any) -> dict[str, bool]:
        for _ in range(300):
            if app.damage is not None:
                break
            await pilot.pause(0.02)
        done = await checklist(app, pilot, data, "/header/num_objects", tmp_path, None)
        errors = [c for c in app.tree_view.root.children[0].children
                  if c.data.node.key == "error"]
        done["one error node at the damage"] = len(errors) == 1 and \
            errors[0].data.node.start == 80
        return done

    try:
        done = _run(app, script)
    finally:
        source.close()
    assert [k for k, ok in done.items() if not ok] == []
    assert len(done) == 10


def test_snapshot_zs(snap_compare: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """ZS in the viewer: the index tree, the header's fields, one selected with the
    inspector on its bytes."""
    monkeypatch.chdir(DATA)

    async def before(pilot: Any) -> None:
        app = pilot.app
        app.reveal_path("/header/len_root_index")
        await pilot.pause()
        tree = next(t for t in app.tree_view.root.children
                    if t.data.node.key == "index tree")
        tree.expand()
        await pilot.pause()

    app = ViewApp(shardkit.open("zs/reference/letters-lzma.zs"))
    assert snap_compare(app, run_before=before, terminal_size=SIZE)


def test_gzip_sample_is_compressed() -> None:  # the dataset case's decoded view decodes
    with shardkit.open(NG_GZIP) as reader:
        sec = next(s for s in reader.sections() if s.name == CASES["dataset"][3])
        raw = (NG_GZIP / "0.shard").read_bytes()[sec.start:sec.end]
        assert gzip.decompress(raw) == reader[0] != raw
