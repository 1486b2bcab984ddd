"""Writing a file so that its final name only ever holds a complete file.

:func:`atomic_file` opens a temporary file beside the target (a hidden name in the same
folder, so the final rename stays on one filesystem), yields it, and on success flushes it to
disk and renames it over the target in one step; on any failure (an exception, a full disk)
the temporary file is removed and the target is left as it was. A process killed in between
leaves at most a hidden ``.NAME.*.tmp`` file, never a partial file under NAME.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO

__all__ = ["atomic_file", "write_bytes_atomic"]


@contextlib.contextmanager
def atomic_file(target: str | os.PathLike[str]) -> Iterator[IO[bytes]]:
    """A binary file to write ``target`` through (temporary name, then rename)."""
    path = Path(target)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(6).hex()}.tmp")
    fh = open(tmp, "xb")  # noqa: SIM115 - closed below on every path
    try:
        yield fh
        fh.flush()
        os.fsync(fh.fileno())
        fh.close()
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):  # closing flushes: on a full disk it fails again
            fh.close()
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_bytes_atomic(target: str | os.PathLike[str], data: bytes) -> None:
    """``Path(target).write_bytes(data)``, through :func:`atomic_file`."""
    with atomic_file(target) as fh:
        fh.write(data)
