"""The viewer's keys: one table, used by the bindings, the footer and the ``?`` screen."""

from __future__ import annotations

__all__ = ["HELP", "KEYS"]

#: ``(key, action, footer label, what it does)``; ``action`` names an ``action_*`` method.
KEYS: list[tuple[str, str, str, str]] = [
    ("g", "goto", "go to offset", "go to a byte offset (decimal, or 0x... hex)"),
    ("slash", "lookup", "look up key", "look a key up with the format's own lookup; jump to "
     "its value"),
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
    ("lists: up/down, Enter, Esc", "move, jump to the item, close"),
]

_NAMES = {"slash": "/", "question_mark": "?", "tab": "Tab"}


def key_name(key: str) -> str:
    """How a key is written for people (``/`` for ``slash``)."""
    return _NAMES.get(key, key)


HELP = "\n".join([f"{key_name(k):>6}  {what}" for k, _, _, what in KEYS]
                 + [""] + [f"{k}: {what}" for k, what in PANE_KEYS])
