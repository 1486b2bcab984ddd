"""The hex pane's tools in the app: search (``/`` ``n`` ``N``), bookmarks (``b`` ``B``), range
export (``e``) and the data inspector. A mixin of :class:`~shardkit.view.app.ViewApp`."""

from __future__ import annotations

import os
import time
from typing import Any

from rich.text import Text
from textual.widgets import Static

from ..errors import ShardkitError
from .navigate import export_range, find, inspect_bytes, parse_pattern
from .screens import AskScreen, ListScreen

__all__ = ["HexTools"]


class _Stopped(Exception):
    """A search was replaced by a newer one."""


class HexTools:
    """Search, bookmarks, export and the inspector (needs the app's ``hex``, ``message``,
    ``update_status`` and ``reveal_offset``)."""

    search_pattern: bytes | None = None
    search_shown = ""
    _search_id = 0

    # -- search ---------------------------------------------------------------------------

    def action_search(self: Any) -> None:
        if self.hex.source is None:
            self.message = "no file shown: select a shard file first"
            self.update_status()
            return

        def done(answer: str | None) -> None:
            if not answer:
                return
            try:
                pattern, shown = parse_pattern(answer)
            except ValueError as exc:
                self.message = f"search: {exc}"
                self.update_status()
                return
            self.search_pattern, self.search_shown = pattern, shown
            self.start_search(self.hex.cursor, backward=False)

        self.push_screen(AskScreen('Search the bytes: hex pairs (53 57 48), "text" in quotes, '
                                   "or plain text (n: next, N: previous)"), done)

    def action_search_next(self: Any) -> None:
        self._again(backward=False)

    def action_search_prev(self: Any) -> None:
        self._again(backward=True)

    def _again(self: Any, backward: bool) -> None:
        if self.search_pattern is None:
            self.message = "no search yet: / in the hex pane searches the bytes"
            self.update_status()
            return
        self.start_search(self.hex.cursor if backward else self.hex.cursor + 1,
                          backward=backward)

    def start_search(self: Any, start: int, *, backward: bool) -> None:
        """Look for the search pattern from ``start`` in a worker; the status line says how
        far it is; the match is selected (its bytes, and the innermost node there)."""
        source, pattern = self.hex.source, self.search_pattern
        self._search_id += 1
        me = self._search_id
        self.message = f"searching for {self.search_shown}…"
        self.update_status()
        last = [time.monotonic()]

        def progress(offset: int) -> None:
            if me != self._search_id:
                raise _Stopped
            now = time.monotonic()
            if now - last[0] >= 0.25:
                last[0] = now
                pct = 100 * offset / max(1, source.size)
                self.call_from_thread(self._say, f"searching for {self.search_shown}… "
                                      f"{pct:.0f}%")

        def work() -> None:
            try:
                at = find(source, pattern, start, backward=backward, progress=progress)
            except _Stopped:
                return
            except (ShardkitError, OSError) as exc:
                self.call_from_thread(self._say, f"search: {exc}")
                return
            self.call_from_thread(self._found, me, source, at, backward)

        self.run_worker(work, thread=True, group="search", exclusive=True)

    def _say(self: Any, text: str) -> None:
        self.message = text
        self.update_status()

    def _found(self: Any, me: int, source: Any, at: int | None, backward: bool) -> None:
        if me != self._search_id or source is not self.hex.source:
            return
        assert self.search_pattern is not None
        if at is None:
            where = "before" if backward else "after"
            self._say(f"{self.search_shown}: not found {where} byte {self.hex.cursor}")
            return
        end = at + len(self.search_pattern)
        self.hex.set_cursor(at, notify=False)
        self.reveal_offset(at, keep_cursor=True)
        self.hex.select(at, end)
        self.hex.set_cursor(at, notify=False)
        self._say(f"{self.search_shown} found at byte {at} (0x{at:x}); n: next, N: previous")

    # -- bookmarks ------------------------------------------------------------------------

    bookmarks: list[tuple[Any, int, int, str]]

    def action_bookmark(self: Any) -> None:
        """Bookmark the selection, else the selected node's range, else the cursor's byte;
        the same again removes it."""
        if self.hex.source is None:
            return
        rng = self.hex.selection
        node = self.selected()
        if rng is None and node is not None and node.start is not None and \
                node.end is not None and node.start <= self.hex.cursor < max(node.end,
                                                                              node.start + 1):
            rng = (node.start, node.end)
        if rng is None:
            rng = (self.hex.cursor, self.hex.cursor + 1)
        label = (node.path or node.key) if node is not None else ""
        source = self.hex.source
        for i, (src, a, b, _) in enumerate(self.bookmarks):
            if src is source and (a, b) == rng:
                del self.bookmarks[i]
                self._show_bookmarks()
                self._say(f"bookmark [{a}, {b}) removed")
                return
        self.bookmarks.append((source, rng[0], rng[1], label))
        self._show_bookmarks()
        self._say(f"bookmark {len(self.bookmarks)}: [{rng[0]}, {rng[1]}) {label}  "
                  "(B lists them)")

    def _show_bookmarks(self: Any) -> None:
        self.hex.bookmarks = [(a, b) for src, a, b, _ in self.bookmarks
                              if src is self.hex.source]
        self.hex.refresh()

    def action_bookmarks(self: Any) -> None:
        if not self.bookmarks:
            self._say("no bookmarks yet: b bookmarks the selection or the selected node")
            return
        items: list[Text | str] = [
            Text(f"{i + 1:>3}  [{a}, {b})  {b - a} bytes  {label}  ({src.name})")
            for i, (src, a, b, label) in enumerate(self.bookmarks)]

        def done(index: int | None) -> None:
            if index is None:
                return
            src, a, b, _ = self.bookmarks[index]
            if src is not self.hex.source:
                self.hex.set_source(src)
            self.hex.set_cursor(a, notify=False)
            self.reveal_offset(a, keep_cursor=True)
            self.hex.select(a, b)
            self.hex.set_cursor(a, notify=False)
            self._show_bookmarks()
            self._say(f"bookmark {index + 1}: [{a}, {b})")

        self.push_screen(ListScreen(f"{len(self.bookmarks)} bookmark(s)", items), done)

    # -- export ---------------------------------------------------------------------------

    def export_target(self: Any) -> tuple[int, int] | None:
        """What ``e`` writes: the selection, else the selected node's range."""
        if self.hex.selection is not None:
            return self.hex.selection  # type: ignore[no-any-return]  # self is the app (Any)
        node = self.selected()
        if node is not None and node.start is not None and node.end is not None and \
                node.end > node.start:
            return node.start, node.end
        return None

    def action_export(self: Any) -> None:
        if self.hex.source is None:
            return
        rng = self.export_target()
        if rng is None:
            self._say("export: select bytes (shift+arrows) or a node with a range first")
            return
        start, end = rng
        name = f"{os.path.basename(self.hex.source.name) or 'bytes'}.{start}-{end}.bin"

        def done(answer: str | None) -> None:
            if not answer:
                return
            path = os.path.expanduser(answer.strip())
            try:
                n = export_range(self.hex.source, start, end, path)
            except (ShardkitError, OSError) as exc:
                self._say(f"export: {exc}")
                return
            self._say(f"exported {n} bytes [{start}, {end}) to {path}")

        self.push_screen(AskScreen(f"Export bytes [{start}, {end}) ({end - start} bytes) to "
                                   "the file:", name), done)

    # -- the data inspector ---------------------------------------------------------------

    def update_inspector(self: Any) -> None:
        """The bytes at the cursor, read as each type (the rows on screen: no new read)."""
        panes = self.query("#inspector")
        if not panes:
            return
        pane = panes.first(Static)
        if self.hex.source is None or not self.hex.size_bytes:
            pane.update("")
            return
        at = self.hex.cursor
        try:
            data = self.hex.bytes_at(at, 16)
        except (ShardkitError, OSError) as exc:
            pane.update(Text(f"cannot read byte {at}: {exc}", style="red"))
            return
        rows = dict(inspect_bytes(data))
        text = Text(f"{'byte ' + str(at) + f' (0x{at:x})':<24}", style="bold")
        text.append(f"{'little-endian':>24}  {'big-endian':>24}", style="dim")
        for name, value in rows.items():
            if " le / be" not in name:
                continue
            le, be = value.split(" / ")
            text.append(f"\n{name.split()[0]:<6}", style="dim")
            text.append(f"{le:>42.42}  {be:>24.24}")
        text.append("\nu8/i8 ", style="dim")
        text.append(f"{rows['u8 / i8']:<14}")
        text.append("varint ", style="dim")
        text.append(f"{rows['uleb128 varint']:<16}")
        text.append("binary ", style="dim")
        text.append(rows["binary"])
        text.append("\nascii ", style="dim")
        text.append(f"{rows['ascii']:<30}")
        text.append("utf-8 ", style="dim")
        text.append(rows["utf-8"])
        pane.update(text)
