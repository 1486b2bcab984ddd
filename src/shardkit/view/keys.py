"""The viewer's keys: one table, used by the bindings, the footer and the ``?`` screen."""

from __future__ import annotations

__all__ = ["HELP", "KEYS"]

#: ``(key, action, footer label, what it does)``; ``action`` names an ``action_*`` method.
KEYS: list[tuple[str, str, str, str]] = [
    ("g", "goto", "go to offset", "go to a byte offset (decimal, or 0x... hex)"),
    ("slash", "lookup", "look up / search", "in the tree: look a key up with the format's "
     "own lookup and jump to its value; in the hex pane: search the bytes (hex pairs, "
     "\"text\" or text)"),
    ("n", "search_next", "next", "the next match of the search"),
    ("N", "search_prev", "previous", "the previous match of the search"),
    ("b", "bookmark", "bookmark", "bookmark the selected bytes or node (again: remove it)"),
    ("B", "bookmarks", "bookmarks", "the bookmarks; Enter jumps to one"),
    ("e", "export", "export", "export the selected bytes (or the node's) to a file"),
    ("d", "decoded", "decoded", "a compressed block's or chunk's decoded bytes in a second "
     "hex pane (a record selected there is highlighted); d again closes it"),
    ("v", "verify", "verify", "run verify: list the problems; Enter jumps to one"),
    ("m", "map", "map", "the map: sections as coloured spans; Enter jumps to one"),
    ("tab", "switch", "tree/hex", "move between the tree and the hex pane"),
    ("question_mark", "help", "keys", "these keys"),
    ("q", "quit", "quit", "quit"),
]

#: Keys handled by the panes themselves.
PANE_KEYS: list[tuple[str, str]] = [
    ("tree: up/down, Enter or space", "move; expand or collapse (large arrays open a page "
     "at a time)"),
    ("hex: arrows, PgUp/PgDn, Home/End", "move the cursor; the innermost node under it is "
     "selected"),
    ("hex: shift + arrows/PgUp/PgDn/Home/End", "select a range of bytes (e exports it)"),
    ("inspector (under the hex)", "the bytes at the cursor as u8…u64 LE/BE, f32/f64, "
     "varint, ASCII/UTF-8"),
    ("lists: up/down, Enter, Esc", "move, jump to the item, close"),
    ("^p", "the command palette: shardkit's actions (goto, lookup, search, verify, map, "
     "export, decoded, bookmarks); an offset typed there goes to it"),
]

_NAMES = {"slash": "/", "question_mark": "?", "tab": "Tab", "ctrl+p": "^p"}


def key_name(key: str) -> str:
    """How a key is written for people (``/`` for ``slash``)."""
    return _NAMES.get(key, key)


HELP = "\n".join([f"{key_name(k):>6}  {what}" for k, _, _, what in KEYS]
                 + [""] + [f"{k}: {what}" for k, what in PANE_KEYS])
