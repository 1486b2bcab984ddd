"""The ``shardkit view`` application: the object tree beside the hex pane, linked both ways."""

from __future__ import annotations

import bisect
import inspect
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Footer, Static, Tree
from textual.widgets.tree import TreeNode

from ..errors import EntryNotFoundError, ShardkitError
from ..sources import ByteSource, BytesSource
from .hexpane import HexPane
from .keys import KEYS
from .locate import Target, lookup
from .model import PAGE, Node, build_root, damaged_root, group_spans
from .palette import ShardkitCommands
from .screens import AskScreen, HelpScreen, ListScreen, _Closed, parse_offset
from .tools import HexTools

__all__ = ["AskScreen", "HelpScreen", "ListScreen", "Opening", "ViewApp", "parse_offset"]

_Bindings = list[Binding | tuple[str, str] | tuple[str, str, str]]

#: Colours of the map's spans, in turn.
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf"]


@dataclass
class Entry:
    """What a tree line stands for: a model node, or a page of its parent's children."""

    node: Node
    lo: int = 0
    hi: int = 0
    group: bool = False
    populated: bool = False


@dataclass
class Opening:
    """A file the viewer opens itself, after its first frame (so it shows at once).

    Until ``open`` returns, the tree's root says ``name: format_name`` and the hex pane shows
    ``source`` (the file's bytes need no reader); then the tree fills. The viewer owns the
    reader ``open`` returns: :meth:`ViewApp.close_opened` closes it after the run.

    Attributes:
        open: Opens the reader (in a thread of its own: it may import the format's reader).
        name: The file's name, as its reader's source will name it.
        format_name: What the file is, if already known (its magic), else ``""``.
        source: The file's bytes for the hex pane meanwhile, or None (the caller closes it
            after the run; the pane moves to the reader's own source once it is open).
        format_id: The format's ``--format`` id, if known: a file its reader cannot open
            (damaged) is then shown as far as its schema reads, the damage as an error node.
    """

    open: Callable[[], Any]
    name: str
    format_name: str = ""
    source: ByteSource | None = None
    format_id: str = ""


class ViewApp(HexTools, App[int]):
    """Look inside a shard: the tree of ``dump`` beside the file's bytes.

    Args:
        reader: An open reader (``shardkit.open``'s result; a dataset included). The app does
            not close it. Or an :class:`Opening`: the app opens the reader in a thread after
            its first frame; :attr:`reader` is then None until it is open, an error
            opening it ends the app (:attr:`open_error` holds it), and
            :meth:`close_opened` closes it after the run.
        offset: Start with the hex cursor (and the tree's selection) at this byte.
    """

    TITLE = "shardkit view"
    CSS = """
    #main { height: 1fr; }
    #tree { width: 1fr; border: round $secondary; }
    #right { width: 82; }
    #decoded { display: none; }
    #decoded.open { display: block; }
    #inspector { height: 13; border: round $secondary; padding: 0 1; }
    .hint { margin: 1 0 0 0; }
    #tree:focus { border: round $accent; }
    #status { height: 1; background: $boost; color: $text; padding: 0 1; }
    AskScreen, ListScreen, HelpScreen { align: center middle; }
    #ask { width: 70; height: auto; border: round $accent; background: $surface; padding: 1; }
    #list { width: 90%; height: 80%; border: round $accent; background: $surface; }
    #items { height: 1fr; }
    #bar { height: auto; margin: 1 0; }
    #help { width: 90; height: auto; border: round $accent; background: $surface; padding: 1; }
    """
    BINDINGS: ClassVar[_Bindings] = [Binding(k, a, label) for k, a, label, _ in KEYS]
    COMMANDS = App.COMMANDS | {ShardkitCommands}  # ^p: shardkit's actions first

    def __init__(self, reader: Any, *, offset: int | None = None) -> None:
        super().__init__()
        self.opening: Opening | None = reader if isinstance(reader, Opening) else None
        self.reader: Any = None if self.opening is not None else reader
        self.open_error: BaseException | None = None
        self._opener: threading.Thread | None = None
        self._opened_reader: Any = None  # a reader the app opened: close_opened() closes it
        self.start_offset = offset
        self.main_source: ByteSource | None
        if self.opening is not None:
            self.model = Node(self.opening.name, "", self.opening.format_name or "opening…")
            self.main_source = self.opening.source
        else:
            self.model = build_root(reader)
            self.main_source = self._source_of(reader)
        self.layouts: dict[int, TreeNode[Entry]] = {}  # id(source) -> its layout tree node
        self.trees: dict[int, TreeNode[Entry]] = {}  # id(source) -> its index tree node
        # the next highlight of this node keeps the hex cursor, or shows this range instead
        self._pending: tuple[TreeNode[Entry], bool, tuple[int, int] | None] | None = None
        self.problems: list[Any] | None = None
        self.last_target: Target | None = None
        self.damage: BaseException | None = None  # why a damaged file's reader did not open
        self.bookmarks: list[tuple[Any, int, int, str]] = []  # (source, start, end, label)
        self._decoded_of: Node | None = None  # the node whose decoded bytes are shown
        self.message = ""

    # -- building the tree --------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        tree: Tree[Entry] = Tree(self._label(self.model), data=Entry(self.model), id="tree")
        tree.guide_depth = 2
        with Horizontal(id="main"):
            yield tree
            with Vertical(id="right"):
                yield HexPane(self.main_source, id="hex")
                yield HexPane(None, id="decoded")
                yield Static("", id="inspector")
        yield Static("", id="status")
        yield Footer()

    @property
    def tree_view(self) -> Tree[Entry]:
        """The tree widget."""
        return self.query_one("#tree", Tree)

    @property
    def hex(self) -> HexPane:
        """The hex pane."""
        return self.query_one("#hex", HexPane)

    def _source_of(self, reader: Any) -> ByteSource | None:
        """The file the hex pane starts on: the reader's; a dataset's first shard file."""
        if not hasattr(reader, "store"):
            return reader.source  # type: ignore[no-any-return]  # reader is Any: a Reader here
        try:  # the dataset's top, then (an image volume) its first scale
            level = self.model.kids()
            for _ in range(2):
                nodes = level.nodes(0, min(len(level), PAGE))
                for node in nodes:
                    if node.source is not None:
                        return node.source
                scales = [n for n in nodes if n.children is not None and n.key != "info"]
                if not scales:
                    return None
                level = scales[0].kids()
        except (ShardkitError, OSError):
            return None
        return None

    def on_mount(self) -> None:
        if self.reader is not None:
            self._fill()
            return
        self.tree_view.focus()  # the reader opens once the first frame is painted
        if self.start_offset is not None and self.main_source is not None:
            self.hex.set_cursor(self.start_offset, notify=False)
        self.message = "opening…"
        self.update_status()

    class OpenDone(Message):
        """The opening thread is done: the reader and the tree's top, or the error."""

        def __init__(self, reader: Any, model: Node | None, error: BaseException | None
                     ) -> None:
            super().__init__()
            self.reader, self.model, self.error = reader, model, error

    def on_ready(self) -> None:
        # the first frame is on screen: now open the reader (importing it takes a while)
        if self.opening is not None and self._opener is None:
            self._opener = threading.Thread(target=self._open, name="shardkit-view-open",
                                            daemon=True)
            self._opener.start()

    def _open(self) -> None:
        """Open the reader and make the tree's top (the opening thread)."""
        assert self.opening is not None
        try:
            self._opened_reader = reader = self.opening.open()
            model = build_root(reader)
        except BaseException as exc:  # noqa: BLE001  # handed to the app, then to the caller
            self.post_message(self.OpenDone(None, self._damaged(exc), exc))
            return
        self.post_message(self.OpenDone(reader, model, None))

    def _damaged(self, exc: BaseException) -> Node | None:
        """The tree of a damaged file (its intact parts, an error node at the damage), or
        None: the error is not one of the file's bytes, or nothing of the file reads."""
        op = self.opening
        if op is None or op.source is None or not op.format_id or self._opened_reader is not \
                None or not isinstance(exc, ShardkitError):
            return None
        try:
            return damaged_root(op.name, op.format_name, op.format_id, op.source, exc)
        except (ShardkitError, OSError):
            return None

    @on(OpenDone)
    def _open_done(self, event: OpenDone) -> None:
        if event.error is not None:
            self.open_error = event.error  # raised after the run (the exit status is 2)
            if event.model is None:
                self.exit(2, return_code=2)
                return
            self.damage = event.error
            self.model = event.model
            root = self.tree_view.root
            root.data = Entry(event.model)
            root.set_label(self._label(event.model))
            root.allow_expand = True
            self.populate(root)
            root.expand()
            for child in root.children:
                self.populate(child)
                child.expand()
            self.message = f"damaged: {event.error}"
            self.update_status()
            return
        assert event.model is not None
        self._opened(event.reader, event.model)

    def close_opened(self) -> None:
        """After the run: wait for the opening thread, close the reader it opened (if any)."""
        if self._opener is not None:
            self._opener.join()
        reader, self._opened_reader = self._opened_reader, None
        if reader is not None:
            reader.close()

    def _opened(self, reader: Any, model: Node) -> None:
        """The reader is open: show its tree, the hex pane on its source (cursor kept)."""
        assert self.opening is not None
        self.reader, self.model = reader, model
        early, cursor = self.opening.source, self.hex.cursor
        self.main_source = self._source_of(reader)
        self.hex.set_source(self.main_source)  # the same bytes: `layouts` is keyed by source
        if early is not None and self.main_source is not None:
            self.hex.set_cursor(cursor, notify=False)
        root = self.tree_view.root
        root.data = Entry(model)
        root.set_label(self._label(model))
        root.allow_expand = model.expandable
        self.message = ""
        if self.start_offset is None and cursor:
            self.start_offset = cursor  # the user moved the hex cursor meanwhile
        self._fill()

    def _fill(self) -> None:
        """Open the tree's top (and a cheap layout); select the start offset's node."""
        tree = self.tree_view
        self.populate(tree.root)
        tree.root.expand()
        for child in tree.root.children:
            if child.data is not None and child.data.node.key == "layout" and self._cheap():
                self.populate(child)
                child.expand()
        tree.focus()
        if self.start_offset is not None:
            self.goto(self.start_offset)
        else:
            self.update_status()

    def _cheap(self) -> bool:
        from .expand import sections_are_cheap

        return sections_are_cheap(self.reader)

    @staticmethod
    def _label(node: Node) -> Text:
        text = Text(node.key, style="bold")
        if node.value is not None:
            width = 70 if node.start is None else 46  # room left for the range
            v = node.value if len(node.value) <= width else node.value[: width - 1] + "…"
            text.append(f": {v}", style="bold red" if node.key == "error" else "")
        if node.start is not None and node.end is not None:
            text.append(f"  [{node.start}, {node.end})", style="dim")
            if node.pieces is not None:
                text.append(f" in {len(node.pieces)} pieces", style="dim")
        elif node.start is not None:
            text.append(f"  @{node.start}", style="dim")
        return text

    def _add(self, parent: TreeNode[Entry], node: Node) -> TreeNode[Entry]:
        child = parent.add(self._label(node), data=Entry(node), allow_expand=node.expandable)
        if node.key == "layout" and (node.owner is not None or node.note == "damaged"):
            self.layouts[id(node.source or self.main_source)] = child
        elif node.key == "index tree":
            self.trees[id(node.source or self.main_source)] = child
        return child

    def populate(self, tnode: TreeNode[Entry]) -> None:
        """Add ``tnode``'s children (a page, or pages of pages, for long lists), once."""
        entry = tnode.data
        if entry is None or entry.populated:
            return
        entry.populated = True
        node = entry.node
        try:
            kids = node.kids()
            lo, hi = (entry.lo, entry.hi) if entry.group else (0, len(kids))
            if hi - lo <= PAGE:
                for child in kids.nodes(lo, hi):
                    self._add(tnode, self._inherit(child, node))
                return
            for a, b in group_spans(lo, hi):
                tnode.add(Text(f"[{a} … {b - 1}]", style="italic"),
                          data=Entry(node, a, b, group=True), allow_expand=True)
        except (ShardkitError, OSError) as exc:
            tnode.add_leaf(Text(f"error: {exc}", style="bold red"),
                           data=Entry(Node("error", node.path, str(exc))))

    @staticmethod
    def _inherit(child: Node, parent: Node) -> Node:
        if child.source is None and parent.source is not None:
            child.source = parent.source
        return child

    @on(Tree.NodeExpanded)
    def _expanded(self, event: Tree.NodeExpanded[Entry]) -> None:
        self.populate(event.node)

    @on(Tree.NodeCollapsed)
    def _collapsed(self, event: Tree.NodeCollapsed[Entry]) -> None:
        # drop what was made below: memory stays bounded by what is open on screen
        entry = event.node.data
        if entry is None or event.node is self.tree_view.root:
            return
        kept = [*self.layouts.values(), *self.trees.values()]
        if any(child in kept for child in event.node.children):
            return  # keep a file's layout and index tree (the hex cursor searches them)
        event.node.remove_children()
        entry.populated = False
        if not entry.group:
            entry.node.forget()

    # -- linking the tree and the bytes -------------------------------------------------------

    @on(Tree.NodeHighlighted)
    def _highlighted(self, event: Tree.NodeHighlighted[Entry]) -> None:
        entry = event.node.data
        if entry is None or entry.group or not self.query("#hex"):
            return  # (or the app is closing: its widgets are gone)
        node = entry.node
        pending, self._pending = self._pending, None
        keep, rng = (pending[1], pending[2]) if pending and pending[0] is event.node else \
            (False, None)
        if pending is None:  # the user moved: what a lookup or a search said is stale
            self._drop_message()
        source = node.source or self.main_source
        if source is not None and source is not self.hex.source:
            self.hex.set_source(source)
        if rng is not None:
            self.hex.show_range(*rng, move_cursor=not keep)
        elif node.start is not None and source is not None:
            end = node.end if node.end is not None else node.start + 1
            self.hex.show_range(node.start, end, move_cursor=not keep, pieces=node.pieces)
        if self.decoded_pane.has_class("open"):
            self.show_decoded(event.node, quiet=True)
        self.update_status()

    # -- the decoded pane (d) -------------------------------------------------------------

    @property
    def decoded_pane(self) -> HexPane:
        """The second hex pane: a compressed block's or chunk's decoded bytes."""
        return self.query_one("#decoded", HexPane)

    def _decoded_owner(self, tnode: TreeNode[Entry] | None) -> TreeNode[Entry] | None:
        while tnode is not None:
            if tnode.data is not None and not tnode.data.group and \
                    tnode.data.node.decoded is not None:
                return tnode
            tnode = tnode.parent
        return None

    def show_decoded(self, tnode: TreeNode[Entry] | None, *, quiet: bool = False) -> bool:
        """Show the decoded bytes of ``tnode``'s block (it, or the block it is a record of),
        the record's own bytes highlighted; False (the status line says why) if none."""
        pane = self.decoded_pane
        owner = self._decoded_owner(tnode)
        if owner is None or owner.data is None:
            pane.set_source(None)
            pane.border_title = "decoded: (no compressed block selected)"
            if not quiet:
                self.message = "d: select a compressed block or chunk (or a record of one)"
            return False
        node = owner.data.node
        if self._decoded_of is not node:
            assert node.decoded is not None
            try:
                data = node.decoded()
            except (ShardkitError, OSError) as exc:
                pane.set_source(None)
                self.message = f"decode: {exc}"
                return False
            self._decoded_of = node
            pane.set_source(BytesSource(data, f"{node.path} (decoded)"))
            pane.border_title = f"decoded: {node.path}  {len(data)} bytes " \
                                f"(from {node.size} stored)"
        leaf = tnode.data.node if tnode is not None and tnode.data is not None else None
        if leaf is not None and leaf.in_decoded is not None:
            a, b = leaf.in_decoded
            pane.show_range(a, b, move_cursor=not a <= pane.cursor < max(b, a + 1))
        return True

    def _decoded_cursor(self, offset: int) -> None:
        """The decoded pane's cursor moved: select the record (or value) there."""
        owner = self._decoded_owner(self.tree_view.cursor_node)
        if owner is None:
            return
        child = self._child_for(owner, lambda kids: kids.index_in_decoded(offset))
        if child is None or child is self.tree_view.cursor_node:
            return
        self._select(child, True, None)

    def action_decoded(self) -> None:
        pane = self.decoded_pane
        if pane.has_class("open"):
            pane.remove_class("open")
            self._decoded_of = None
            pane.set_source(None)
            return
        if self.show_decoded(self.tree_view.cursor_node):
            pane.add_class("open")
        self.update_status()

    def selected(self) -> Node | None:
        """The model node under the tree's cursor."""
        t = self.tree_view.cursor_node
        return None if t is None or t.data is None or t.data.group else t.data.node

    def update_status(self) -> None:
        """The status line: offset, size and field path of the selection."""
        hexp = self.hex
        node = self.selected()
        parts = []
        if hexp.source is not None:
            parts.append(f"{hexp.source.name}  byte {hexp.cursor} (0x{hexp.cursor:x}) of "
                         f"{hexp.size_bytes}")
        if node is not None:
            where = node.path or node.key
            if node.pieces is not None:
                where += (f"  {node.byte_count} bytes in {len(node.pieces)} pieces of "
                          f"[{node.start}, {node.end})")
            elif node.start is not None and node.end is not None:
                where += f"  [{node.start}, {node.end}) {node.end - node.start} bytes"
            parts.append(where)
        sel = hexp.selection
        if sel is not None:
            parts.append(f"selected [{sel[0]}, {sel[1]}) {sel[1] - sel[0]} bytes")
        if self.message:
            parts.append(self.message)
        self.query_one("#status", Static).update(Text("  |  ".join(parts), no_wrap=True,
                                                      overflow="ellipsis"))
        self.update_inspector()

    def _drop_message(self) -> None:
        """Forget what the last lookup, search or jump said (a damaged file stays said)."""
        if self.opening is not None and self.reader is None and self.damage is None:
            return  # "opening…" stays until the file is open
        self.message = f"damaged: {self.damage}" if self.damage is not None else ""

    @on(HexPane.CursorMoved)
    def _cursor_moved(self, event: HexPane.CursorMoved) -> None:
        if event.pane is not None and event.pane.id == "decoded":
            self._decoded_cursor(event.offset)
            return
        self._drop_message()
        self.reveal_offset(event.offset, keep_cursor=True)
        self.update_status()

    def _select(self, tnode: TreeNode[Entry], keep_cursor: bool,
                rng: tuple[int, int] | None = None) -> None:
        tree = self.tree_view
        parent = tnode.parent
        while parent is not None:
            parent.expand()
            parent = parent.parent
        _ = tree.last_line  # lay the lines out again so the node's line is known
        self._pending = (tnode, keep_cursor, rng) if tree.cursor_node is not tnode else None
        tree.move_cursor(tnode)
        tree.scroll_to_node(tnode, animate=False)
        # and once the lines just added are laid out: the selected node is always in view
        self.call_after_refresh(self._scroll_to, tnode)

    def _scroll_to(self, tnode: TreeNode[Entry]) -> None:
        tree = self.tree_view
        if tree.cursor_node is tnode and tnode.line >= 0:
            tree.scroll_to_line(tnode.line, animate=False)

    def _child_for(self, tnode: TreeNode[Entry], pick: Any) -> TreeNode[Entry] | None:
        """Descend one level: ``pick(children) -> index`` among the model's children, with
        pages opened on the way."""
        self.populate(tnode)
        entry = tnode.data
        assert entry is not None
        try:
            i = pick(entry.node.kids())
        except (ShardkitError, OSError, ValueError):
            return None
        if i is None:
            return None
        node = tnode
        while True:
            for child in node.children:
                d = child.data
                if d is None:
                    continue
                if d.group and d.lo <= i < d.hi:
                    self.populate(child)
                    node = child
                    break
                if not d.group and d.node is not None and node.data is not None and \
                        self._index_of(node, child) == i:
                    return child
            else:
                return None

    @staticmethod
    def _index_of(parent: TreeNode[Entry], child: TreeNode[Entry]) -> int:
        d = parent.data
        assert d is not None
        return (d.lo if d.group else 0) + list(parent.children).index(child)

    def innermost(self, offset: int, source: ByteSource | None = None) -> TreeNode[Entry] | None:
        """The innermost tree node whose range holds ``offset`` in the file shown."""
        src = source or self.hex.source
        if src is None:
            return None
        starts = []
        layout = self.layouts.get(id(src))
        if layout is not None and self._may_open(layout):
            starts.append(layout)
        if id(src) in self.trees:  # a block tree, from the root down (a large or corrupt map)
            starts.append(self.trees[id(src)])
        found = None
        for tnode in starts:
            top = tnode
            while True:
                child = self._child_for(tnode, lambda kids: kids.index_at(offset))
                if child is None:
                    break
                tnode = child
            node = tnode.data.node if tnode.data is not None else None
            if node is not None and node.covers(offset):
                found = tnode
                if tnode is not top:
                    break
        return found

    def _may_open(self, layout: TreeNode[Entry]) -> bool:
        """Whether a search may open ``layout``: it is open already, or its sections cost a
        few reads (a ZSS file's map reads every block: only the user opens that)."""
        from .expand import sections_are_cheap

        entry = layout.data
        return entry is not None and (entry.populated or entry.node.owner is None
                                      or sections_are_cheap(entry.node.owner))

    def reveal_offset(self, offset: int, *, keep_cursor: bool = False) -> bool:
        """Select the innermost node covering ``offset``; False when none does."""
        tnode = self.innermost(offset)
        if tnode is None:
            return False
        self._select(tnode, keep_cursor)
        return True

    def reveal_path(self, path: str, rng: tuple[int, int] | None = None
                    ) -> TreeNode[Entry] | None:
        """Select the node with field path ``path`` (opening what leads to it)."""
        tnode = self.tree_view.root
        while True:
            here = tnode.data.node.path if tnode.data is not None else ""
            if here == path and tnode is not self.tree_view.root:
                break
            rest = path[len(here):] if here and path.startswith(here) else path
            comp = rest.lstrip("/").split("/")[0]

            def pick(kids: Any, comp: str = comp) -> int | None:
                i = kids.index_of_key(comp)
                if i is not None:
                    return int(i)
                for j in range(min(len(kids), PAGE)):  # a prefix node (a file, a scale)
                    n = kids.nodes(j, j + 1)[0]
                    if (n.path == "" or path == n.path or path.startswith(
                            n.path.rstrip("/") + "/")) and n.key not in ("summary", "dump"):
                        return j
                return None

            child = self._child_for(tnode, pick)
            if child is None or (child.data is not None and child.data.node.key == "layout"
                                 and not self._may_open(child)):
                break
            tnode = child
        if tnode is self.tree_view.root:
            return None
        self._select(tnode, False, rng)
        return tnode

    def goto(self, offset: int) -> None:
        """Move the hex cursor to ``offset`` and select the innermost node there."""
        if self.hex.source is None:
            self.message = "no file shown: select a shard file first"
            self.update_status()
            return
        size = self.hex.size_bytes
        if not 0 <= offset < max(size, 1):
            self.message = (f"byte {offset} is past the end: {self.hex.source.name} has "
                            f"{size} bytes (the last is {max(size - 1, 0)}, 0x"
                            f"{max(size - 1, 0):x})")
            self.update_status()
            return
        self.hex.set_cursor(offset, notify=False)
        self.reveal_offset(self.hex.cursor, keep_cursor=True)
        self.update_status()

    # -- keys ---------------------------------------------------------------------------------

    def action_switch(self) -> None:
        (self.hex if self.tree_view.has_focus else self.tree_view).focus()

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_goto(self) -> None:
        def done(answer: str | None) -> None:
            if not answer:
                return
            try:
                offset = parse_offset(answer)
            except ValueError:
                self.message = f"not an offset: {answer!r}"
                self.update_status()
                return
            self.message = ""
            self.goto(offset)

        self.push_screen(AskScreen("Go to byte offset (decimal, or 0x... hex):"), done)

    def _opening(self) -> bool:
        """True (and the status line says so) while the reader is still opening."""
        if self.reader is not None:
            return False
        if self.damage is not None:
            self.message = f"damaged: {self.damage} (the file did not open: only g, the " \
                           "tree and the hex work)"
            self.update_status()
            return True
        self.message = "opening the file… (try again in a moment)"
        self.update_status()
        return True

    def action_lookup(self) -> None:
        if self.hex.has_focus:  # in the hex pane, / searches the bytes
            self.action_search()
            return
        if self._opening():
            return

        def done(answer: str | None) -> None:
            if answer:
                self.jump_to_key(answer)

        self.push_screen(AskScreen("Look up a key (as `shardkit get` takes it):"), done)

    def action_lookup_key(self) -> None:
        """The format's lookup, wherever the focus is (the palette's ``lookup``)."""
        self.tree_view.focus()
        self.action_lookup()

    def jump_to_key(self, text: str) -> Target | None:
        """Look ``text`` up; select its value's node and bytes. The status line says why not."""
        try:
            target = lookup(self.reader, text)
        except EntryNotFoundError as exc:
            self.message = str(exc) if "not found" in str(exc) else f"not found: {exc}"
            self.update_status()
            return None
        except ShardkitError as exc:
            self.message = f"lookup: {exc}"
            self.update_status()
            return None
        self.last_target = target
        self.message = target.note
        if target.source is not None:
            self.hex.set_source(target.source)
        end = target.end if target.end is not None else target.start + 1
        tnode = self.reveal_path(target.path, (target.start, end)) if target.path else None
        if tnode is not None and target.end is None and tnode.data is not None and \
                tnode.data.node.start == target.start and tnode.data.node.end is not None:
            end = tnode.data.node.end  # the node's range says where the value ends
            self._pending = (tnode, False, (target.start, end)) if self._pending else None
        if tnode is None:
            self.hex.set_cursor(target.start, notify=False)
            self.reveal_offset(target.start)
        self.hex.show_range(target.start, end)
        self.update_status()
        return target

    def action_verify(self) -> None:
        if self._opening():
            return
        screen = ListScreen("verify: running…")

        def done(index: int | None) -> None:
            if index is not None and self.problems:
                self.jump_to_problem(self.problems[index])

        self.push_screen(screen, done)
        self.run_worker(lambda: self._verify(screen), thread=True, group="verify",
                        exclusive=True)

    def _verify(self, screen: ListScreen) -> None:
        """Run ``verify`` (a worker thread), its progress in the list's title; closing the list
        stops it at the reader's next progress report."""
        last = [0.0]

        def progress(done: int, total: int) -> None:
            if not screen.is_attached:
                raise _Closed
            now = time.monotonic()
            if now - last[0] >= 0.25 and total:
                last[0] = now
                pct = 100 * done / total
                self.call_from_thread(screen.set_title,
                                      f"verify: running… {pct:.0f}% ({done} of {total})")

        options = {"progress": progress} if "progress" in inspect.signature(
            self.reader.verify).parameters else {}
        try:
            problems = list(self.reader.verify(**options))
            error = None
        except _Closed:
            return
        except ShardkitError as exc:
            problems, error = [], str(exc)
        self.problems = problems
        if error is not None:
            title, items = f"verify stopped: {error}", []
        elif problems:
            title = f"verify: {len(problems)} problem(s); Enter jumps to one"
            items = [Text(str(p)) for p in problems]
        else:
            title, items = "verify: OK, no problems", []
        self.call_from_thread(screen.fill, title, items)

    def jump_to_problem(self, problem: Any) -> None:
        """Select where a verify problem is: its byte offset, else its field path."""
        self.message = f"{problem.check}: {problem.message}"
        if problem.offset is not None and self.hex.source is not None:
            self.hex.set_cursor(problem.offset, notify=False)
            if self.reveal_offset(problem.offset, keep_cursor=True):
                self.hex.show_range(problem.offset, problem.offset + 1, move_cursor=False)
            self.update_status()
            return
        if problem.field:
            self.reveal_path(problem.field)
        self.update_status()

    def _map_owner(self) -> Any:
        tnode = self.layouts.get(id(self.hex.source)) if self.hex.source is not None else None
        if tnode is not None and tnode.data is not None and tnode.data.node.owner is not None:
            return tnode.data.node.owner
        return None if hasattr(self.reader, "store") else self.reader

    def action_map(self) -> None:
        if self._opening():
            return
        owner = self._map_owner()
        if owner is None:
            self.message = "map: open a shard file first"
            self.update_status()
            return
        screen = ListScreen("map: reading the sections…", bar=Text(""))
        holder: dict[str, Any] = {}

        def done(index: int | None) -> None:
            sections = holder.get("sections")
            if index is not None and sections:
                s = sections[index]
                self.hex.set_cursor(s.start, notify=False)
                # the section's own node (not the innermost field at its first byte)
                if self.reveal_path(s.name, (s.start, max(s.end, s.start + 1))) is None:
                    self.reveal_offset(s.start, keep_cursor=True)
                self.hex.show_range(s.start, max(s.end, s.start + 1), move_cursor=False)
                self.update_status()

        self.push_screen(screen, done)

        def work() -> None:
            try:
                sections = owner.sections()
            except ShardkitError as exc:
                self.call_from_thread(screen.fill, f"map: {exc}", [])
                return
            holder["sections"] = sections
            size = owner.source.size
            bar = map_bar(sections, size, 120)
            items = []
            for i, s in enumerate(sections):
                t = Text("██ ", style=PALETTE[i % len(PALETTE)])
                t.append(f"{s.start:>12} {s.end:>12} {s.size:>10}  {s.name}")
                if s.note:
                    t.append(f"  ({s.note})", style="dim")
                items.append(t)
            self.call_from_thread(screen.fill, f"map: {len(sections)} sections of "
                                  f"{owner.source.name} ({size} bytes)", items, bar)

        self.run_worker(work, thread=True, group="map", exclusive=True)

    async def action_quit(self) -> None:
        self.exit(0)


def map_bar(sections: list[Any], size: int, width: int) -> Text:
    """``width`` cells across the file, each coloured as the section at its middle byte."""
    text = Text()
    if size <= 0 or not sections:
        return text
    starts = [s.start for s in sections]
    for c in range(width):
        mid = int((c + 0.5) * size / width)
        k = bisect.bisect_right(starts, mid) - 1
        if k >= 0 and not sections[k].start <= mid < sections[k].end:
            k = -1  # a gap between sections
        text.append("█" if k >= 0 else "·", style=PALETTE[k % len(PALETTE)] if k >= 0 else "dim")
    return text
