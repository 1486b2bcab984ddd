"""The hex and ASCII pane: reads only the rows on screen, highlights the selected range."""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget

from ..errors import ShardkitError
from ..sources import ByteSource

__all__ = ["ROW", "HexPane", "hex_rows"]

ROW = 16  #: bytes per row


def hex_rows(data: bytes, first: int, width: int = 12) -> list[str]:
    """Plain ``offset  hex  |ascii|`` lines of ``data`` (which starts at byte ``first``)."""
    out = []
    for i in range(0, len(data), ROW):
        chunk = data[i : i + ROW]
        hexes = " ".join(f"{b:02x}" for b in chunk)
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        out.append(f"{first + i:0{width}x}  {hexes:<{ROW * 3 - 1}}  {text}")
    return out


class HexPane(Widget, can_focus=True):
    """Rows of 16 bytes: offset, hex, ASCII. Only the visible window is read (one range read).

    The cursor is a byte offset; moving it posts :class:`HexPane.CursorMoved` (the viewer then
    selects the innermost tree node that covers it). ``highlight`` is the selected node's range.
    """

    DEFAULT_CSS = """
    HexPane { width: 82; height: 1fr; border: round $secondary; padding: 0 1; }
    HexPane:focus { border: round $accent; }
    """

    cursor: reactive[int] = reactive(0)
    top: reactive[int] = reactive(0)  # first byte shown (a multiple of ROW)

    class CursorMoved(Message):
        """The hex cursor moved to ``offset`` (by a key or a click)."""

        def __init__(self, offset: int, pane: HexPane | None = None) -> None:
            super().__init__()
            self.offset = offset
            self.pane = pane

    def __init__(self, source: ByteSource | None = None, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.source = source
        self.highlight: tuple[int, int] | None = None
        #: The highlighted bytes: ``highlight``, or the pieces of a node with gaps in it.
        self.pieces: list[tuple[int, int]] = []
        #: Where a range selection began (shift+arrows); the selection runs to the cursor.
        self.mark: int | None = None
        self._selection: tuple[int, int] | None = None
        #: Bookmarked ranges (underlined).
        self.bookmarks: list[tuple[int, int]] = []
        self.reads = 0  # range reads made (tests check that only the window is read)
        self._window: tuple[int, int, bytes] | None = None  # (start, end, bytes) last read
        self.error: str | None = None

    @property
    def size_bytes(self) -> int:
        """Size of the file shown (0 when none)."""
        return self.source.size if self.source is not None else 0

    @property
    def rows(self) -> int:
        """Rows that fit on screen."""
        return max(1, self.content_size.height or 1)

    def set_source(self, source: ByteSource | None) -> None:
        """Show another file (a dataset's shard files each have their own bytes)."""
        if source is not self.source:
            self.source = source
            self._window = None
            self.highlight = None
            self.pieces = []
            self.mark = None
            self._selection = None
            self.top = 0
            self.cursor = 0
            self.refresh()

    def show_range(self, start: int, end: int, *, move_cursor: bool = True,
                   pieces: list[tuple[int, int]] | None = None) -> None:
        """Highlight ``[start, end)`` (only its ``pieces``, if given); bring ``start`` into
        view (and the cursor there)."""
        self.highlight = (start, end)
        self.pieces = list(pieces) if pieces else [(start, end)]
        if move_cursor:
            self.set_cursor(start, notify=False)
        self.refresh()

    def set_cursor(self, offset: int, *, notify: bool = True) -> None:
        """Move the cursor to ``offset`` (clamped to the file), scrolling to keep it shown."""
        size = self.size_bytes
        offset = max(0, min(offset, size - 1 if size else 0))
        self.cursor = offset
        row = offset - offset % ROW
        if row < self.top:
            self.top = row
        elif row >= self.top + self.rows * ROW:
            self.top = max(0, row - (self.rows // 3) * ROW)
        if notify:
            self.post_message(self.CursorMoved(offset, self))

    @property
    def selection(self) -> tuple[int, int] | None:
        """The selected range ``[start, end)``, or None."""
        return self._selection

    def select(self, start: int, end: int) -> None:
        """Select ``[start, end)`` (shift+arrows then extend it from ``start``)."""
        self.mark = start
        self._selection = (start, max(end, start + 1))
        self.refresh()

    def bytes_at(self, offset: int, n: int) -> bytes:
        """Up to ``n`` bytes from ``offset`` (from the rows on screen when they hold them)."""
        if self.source is None:
            return b""
        end = min(self.size_bytes, offset + n)
        w = self._window
        if w is not None and w[0] <= offset and end <= w[1]:
            return w[2][offset - w[0] : end - w[0]]
        self.reads += 1
        return self.source.read_range(offset, end)

    def _read(self, start: int, end: int) -> bytes:
        w = self._window
        if w is not None and w[0] <= start and end <= w[1]:
            return w[2][start - w[0] : end - w[0]]
        assert self.source is not None
        data = self.source.read_range(start, end)
        self.reads += 1
        self._window = (start, end, data)
        return data

    #: What the pane says with no file to show.
    empty_text = "(no bytes here: select a shard file, or a node under one, in the tree)"

    def render(self) -> Text:
        if self.source is None:
            return Text(self.empty_text, style="dim")
        size = self.size_bytes
        start = min(self.top, max(0, size - size % ROW))
        end = min(size, start + self.rows * ROW)
        try:
            data = self._read(start, end)
        except (ShardkitError, OSError) as exc:
            return Text(f"cannot read bytes [{start}, {end}): {exc}", style="red")
        width = max(8, len(f"{size:x}"))
        lit = self._lit(start, end)
        sel = self.selection or (-1, -1)
        marks = [(a, b) for a, b in self.bookmarks if a < end and b > start]
        out = Text(no_wrap=True, overflow="crop")
        for i in range(0, len(data), ROW):
            row = start + i
            out.append(f"{row:0{width}x}  ", style="dim")
            chunk = data[i : i + ROW]
            for j, b in enumerate(chunk):
                at = row + j
                out.append(f"{b:02x}", style=self._style(at, lit, sel, marks))
                out.append(" " if j != 7 else "  ")
            out.append("   " * (ROW - len(chunk)) + (" " if len(chunk) <= 7 else ""))
            out.append(" ")
            for j, b in enumerate(chunk):
                at = row + j
                out.append(chr(b) if 32 <= b < 127 else ".", style=self._style(at, lit, sel, marks))
            out.append("\n")
        if not data:
            out.append("(empty file)", style="dim")
        return out

    def _lit(self, start: int, end: int) -> list[tuple[int, int]]:
        """The highlighted pieces that meet the rows ``[start, end)`` on screen."""
        return [(a, b) for a, b in self.pieces if a < end and b > start]

    def _style(self, at: int, lit: list[tuple[int, int]], sel: tuple[int, int],
               marks: list[tuple[int, int]]) -> str:
        if at == self.cursor:
            return "reverse bold"
        mark = " underline" if any(a <= at < b for a, b in marks) else ""
        if sel[0] <= at < sel[1]:
            return "white on blue" + mark
        if any(a <= at < b for a, b in lit):
            return "black on yellow" + mark
        return mark.strip()

    def watch_top(self) -> None:
        self.refresh()

    def watch_cursor(self) -> None:
        self.refresh()

    async def _on_key(self, event: events.Key) -> None:
        moves = {"left": -1, "right": 1, "up": -ROW, "down": ROW,
                 "pageup": -ROW * self.rows, "pagedown": ROW * self.rows}
        key = event.key
        extend = key.startswith("shift+")
        if extend:
            key = key[len("shift+"):]
        if key in moves or key in ("home", "end"):
            if extend and self.mark is None:
                self.mark = self.cursor
            elif not extend:
                self.mark = self._selection = None
            if key in moves:
                self.set_cursor(self.cursor + moves[key])
            else:
                self.set_cursor(0 if key == "home" else self.size_bytes - 1)
            if self.mark is not None:
                self._selection = (min(self.mark, self.cursor), max(self.mark, self.cursor) + 1)
            self.refresh()
        else:
            return
        event.stop()
        event.prevent_default()

    def _on_mouse_scroll_down(self, event: events.MouseScrollDown) -> None:
        last = max(0, self.size_bytes - self.rows * ROW)
        self.top = min(last - last % ROW if last else 0, self.top + 3 * ROW)
        event.stop()

    def _on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        self.top = max(0, self.top - 3 * ROW)
        event.stop()

    async def _on_click(self, event: events.Click) -> None:
        size = self.size_bytes
        width = max(8, len(f"{size:x}"))
        at = event.get_content_offset(self)
        if at is None:
            return
        x, y = at
        col = x - (width + 2)
        if col < 0:
            return
        j = col // 3 if col < 8 * 3 else (col - 1) // 3
        if 0 <= j < ROW:
            self.focus()
            self.set_cursor(self.top + y * ROW + j)
