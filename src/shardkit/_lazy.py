"""A module imported on first use, so that opening a file imports only what reading its
header needs (numpy, protobuf and the network stack come with the first value decoded).

Use it as::

    if TYPE_CHECKING:
        import numpy as np
    else:
        np = lazy_module("numpy")

Type checkers see the real module; at run time the first attribute read imports it and every
attribute read is then kept on the stand-in, so later reads cost an ordinary attribute lookup.
"""

from __future__ import annotations

import importlib
from typing import Any


class LazyModule:
    """Stands for module ``name`` until an attribute is read, then imports it."""

    def __init__(self, name: str) -> None:
        self.__dict__["_lazy_name"] = name

    def __getattr__(self, attr: str) -> Any:
        module = importlib.import_module(self.__dict__["_lazy_name"])
        value = getattr(module, attr)
        self.__dict__[attr] = value
        return value

    def __repr__(self) -> str:
        return f"<lazy module {self.__dict__['_lazy_name']!r}>"


def lazy_module(name: str) -> Any:
    """A stand-in for module ``name`` that imports it when an attribute is first read."""
    return LazyModule(name)
