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
    """Run the viewer full-screen; returns the exit code (0 on ``q``).

    ``reader`` is an open reader, or a :class:`~shardkit.view.app.Opening`: then the first
    frame shows before the reader is opened (in a thread), the reader is closed after the run,
    and an error opening it is raised here.
    """
    from .app import ViewApp

    app = ViewApp(reader, offset=offset)
    try:
        code = app.run()
    finally:
        app.close_opened()
    if app.open_error is not None:
        raise app.open_error
    return 0 if code is None else int(code)
