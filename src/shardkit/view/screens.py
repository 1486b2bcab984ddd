"""The viewer's dialogs: one line of input, a list to pick from, the keys; Esc closes each."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from .keys import HELP

__all__ = ["CLOSE_ASK", "CLOSE_HELP", "CLOSE_LIST", "AskScreen", "HelpScreen", "ListScreen",
           "parse_offset"]

_Bindings = list[Binding | tuple[str, str] | tuple[str, str, str]]

#: What each dialog says about closing it.
CLOSE_ASK = "Enter: go   Esc: close"
CLOSE_LIST = "up/down: move   Enter: jump   Esc: close"
CLOSE_HELP = "Esc, q or ?: close"


def parse_offset(text: str) -> int:
    """``1234``, ``0x4d2`` or ``4d2h``: a byte offset.

    Raises:
        ValueError: Not a number.
    """
    t = text.strip().lower().replace("_", "")
    if t.startswith("0x"):
        return int(t[2:], 16)
    if t.endswith("h"):
        return int(t[:-1], 16)
    return int(t, 10)


class AskScreen(ModalScreen[str | None]):
    """One line of input (``g``, ``/``); Esc cancels."""

    BINDINGS: ClassVar[_Bindings] = [Binding("escape", "cancel", "cancel")]

    def __init__(self, prompt: str, value: str = "") -> None:
        super().__init__()
        self.prompt = prompt
        self.value = value

    def compose(self) -> ComposeResult:
        with Vertical(id="ask"):
            yield Label(self.prompt)
            yield Input(self.value, id="answer")
            yield Label(Text(CLOSE_ASK, style="dim"), classes="hint")

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ListScreen(ModalScreen[int | None]):
    """A list to pick from (verify's problems, the map's sections); Enter picks, Esc closes."""

    BINDINGS: ClassVar[_Bindings] = [Binding("escape", "cancel", "close")]

    def __init__(self, title: str, items: list[Text | str] | None = None,
                 bar: Text | None = None) -> None:
        super().__init__()
        self.title_text = title
        self.items = items
        self.bar = bar

    def compose(self) -> ComposeResult:
        with Vertical(id="list"):
            yield Label(self.title_text, id="list-title")
            yield Label(Text(CLOSE_LIST, style="dim"), classes="hint")
            if self.bar is not None:
                yield Static(self.bar, id="bar")
            yield OptionList(*[Option(i) for i in (self.items or [])], id="items")

    def fill(self, title: str, items: list[Text | str], bar: Text | None = None) -> None:
        """Show ``items`` (a worker's result; nothing if the screen was closed meanwhile)."""
        if not self.is_attached or not self.query("#items"):
            return
        self.query_one("#list-title", Label).update(title)
        if bar is not None:
            self.query_one("#bar", Static).update(bar)
        options = self.query_one("#items", OptionList)
        options.clear_options()
        options.add_options([Option(i) for i in items])
        options.highlighted = 0 if items else None
        options.focus()

    def set_title(self, title: str) -> None:
        """Say how far the work is (while the list is open)."""
        if self.is_attached and self.query("#list-title"):
            self.query_one("#list-title", Label).update(title)

    @on(OptionList.OptionSelected)
    def _picked(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option_index)

    def action_cancel(self) -> None:
        self.dismiss(None)


class _Closed(Exception):
    """The list a worker reports to was closed: stop the work."""


class HelpScreen(ModalScreen[None]):
    """The keys (``?``); any of Esc, q or ? closes it."""

    BINDINGS: ClassVar[_Bindings] = [Binding("escape,q,question_mark", "close", "close")]

    def compose(self) -> ComposeResult:
        with Vertical(id="help"):
            yield Label("shardkit view: keys", id="help-title")
            yield Static(HELP, id="help-text")
            yield Label(Text(CLOSE_HELP, style="dim"), classes="hint")

    def action_close(self) -> None:
        self.dismiss(None)
