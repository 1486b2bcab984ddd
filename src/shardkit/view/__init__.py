"""``shardkit view``: a terminal viewer, the object tree beside a hex view of the bytes.

Needs the ``view`` extra (``pip install 'shardkit[view]'``: Textual). The tree model
(:mod:`.model`, :mod:`.expand`) and the key lookup (:mod:`.locate`) do not import Textual;
:mod:`.app` (the application) and :mod:`.hexpane` do.

Example::

    import shardkit
    from shardkit.view import run
    with shardkit.open("objects.shard") as reader:
        run(reader)
"""

from __future__ import annotations

from typing import Any

__all__ = ["run"]


def run(reader: Any, *, offset: int | None = None) -> int:
    """Run the viewer full-screen on an open reader; returns the exit code (0 on ``q``)."""
    from .app import ViewApp

    app = ViewApp(reader, offset=offset)
    code = app.run()
    return 0 if code is None else int(code)
