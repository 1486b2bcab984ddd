"""``^p``: the command palette offers shardkit's actions (goto, lookup, search, verify, map,
export, decoded view, bookmarks), and ``g``'s jump at once when the query is an offset."""

from __future__ import annotations

from functools import partial
from typing import Any

from textual.command import DiscoveryHit, Hit, Hits, Provider

from .screens import parse_offset

__all__ = ["ACTIONS", "ShardkitCommands"]

#: ``(title, action, help)``: the palette's shardkit commands.
ACTIONS: list[tuple[str, str, str]] = [
    ("goto: go to a byte offset", "goto", "g: move the cursor to a byte; its node is selected"),
    ("lookup: look a key up", "lookup_key", "/ in the tree: the format's own lookup"),
    ("search: search the bytes", "search", "/ in the hex pane: hex pairs or text; n, N"),
    ("verify: check the whole file", "verify", "v: list the problems, Enter jumps to one"),
    ("map: the sections of the file", "map", "m: coloured spans, Enter jumps to one"),
    ("export: write the selected bytes to a file", "export", "e: the selection, or the node's"),
    ("decoded: show a compressed block decoded", "decoded", "d: a second hex pane"),
    ("bookmark: bookmark the selection or node", "bookmark", "b: again removes it"),
    ("bookmarks: list the bookmarks", "bookmarks", "B: Enter jumps to one"),
    ("keys: what each key does", "help", "?"),
]


class ShardkitCommands(Provider):
    """The viewer's actions for Textual's command palette."""

    def _run(self, action: str) -> None:
        app: Any = self.app
        getattr(app, f"action_{action}")()

    def _goto(self, offset: int) -> None:
        app: Any = self.app
        app.goto(offset)

    async def discover(self) -> Hits:
        for title, action, help_text in ACTIONS:
            yield DiscoveryHit(title, partial(self._run, action), help=help_text)

    async def search(self, query: str) -> Hits:
        try:
            offset = parse_offset(query)
        except ValueError:
            offset = None
        if offset is not None and offset >= 0:
            yield Hit(1.0, f"goto: byte {offset} (0x{offset:x})", partial(self._goto, offset),
                      help="move the cursor there")
        matcher = self.matcher(query)
        for title, action, help_text in ACTIONS:
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), partial(self._run, action),
                          help=help_text)
