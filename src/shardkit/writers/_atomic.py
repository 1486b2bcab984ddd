"""Writing a file so that its final name only ever holds a complete file.

:func:`atomic_file` opens a temporary file beside the target (a hidden name in the same
folder, so the final rename stays on one filesystem), yields it, and on success flushes it to
disk and renames it over the target in one step; on any failure (an exception, a full disk)
the temporary file is removed and the target is left as it was. A process killed in between
leaves at most a hidden ``.NAME.*.tmp`` file, never a partial file under NAME.

:func:`atomic_files` does the same for a set of files written one after another (a root file
and the files it refers to): each is written under its temporary name, and only once every one
is complete are they renamed, the first opened last, so the file that names the others never
appears before them.

:class:`AtomicWriter` is the life of a writer object that builds one file through
:func:`atomic_file` over several calls (``write``... then ``close``, or ``with``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from types import TracebackType
from typing import IO, Self

__all__ = ["AtomicFiles", "AtomicWriter", "atomic_file", "atomic_files", "write_bytes_atomic"]


def _temporary(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(6).hex()}.tmp")


@contextlib.contextmanager
def atomic_file(target: str | os.PathLike[str]) -> Iterator[IO[bytes]]:
    """A binary file to write ``target`` through (temporary name, then rename)."""
    path = Path(target)
    tmp = _temporary(path)
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


class _Aborted(Exception):
    """Thrown into :func:`atomic_file` to make it discard the temporary file."""


class AtomicWriter:
    """A writer of one file through :func:`atomic_file`, held open across calls.

    A subclass sets ``path``, calls :meth:`_open` once for the temporary file, writes to it,
    and defines :meth:`_finish`: the last writes, then :meth:`_commit`. :meth:`close` runs
    :meth:`_finish` once; on any failure, and on :meth:`abort`, the temporary file is removed,
    so ``path`` only ever holds a complete file. ``with`` closes the writer, or aborts it when
    the block raises.
    """

    path: Path
    _done = False
    _sink: AbstractContextManager[IO[bytes]] | None = None

    def _open(self) -> IO[bytes]:
        """The temporary file beside ``path`` (a hidden name), open for writing."""
        sink = atomic_file(self.path)
        fh = sink.__enter__()
        self._sink = sink
        return fh

    def _commit(self) -> None:
        """Flush the temporary file to disk, close it and rename it over ``path``."""
        sink, self._sink = self._sink, None
        assert sink is not None
        sink.__exit__(None, None, None)

    def _finish(self) -> None:
        raise NotImplementedError

    def close(self) -> Path:
        """Write what comes last and move the file into place; its path (once: closing again
        does nothing)."""
        if self._done:
            return self.path
        try:
            self._finish()
        except BaseException:
            self.abort()
            raise
        self._done = True
        return self.path

    def abort(self) -> None:
        """Stop and remove the partial file."""
        self._done = True
        sink, self._sink = self._sink, None
        if sink is not None:  # atomic_file closes and removes the temporary file
            sink.__exit__(_Aborted, _Aborted(), None)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is not None:
            self.abort()
        else:
            self.close()


class AtomicFiles:
    """Files written under temporary names, renamed together by :func:`atomic_files`."""

    def __init__(self) -> None:
        self._files: list[tuple[Path, Path, IO[bytes]]] = []  # (target, temporary, handle)

    def open(self, target: str | os.PathLike[str]) -> IO[bytes]:
        """A binary file to write ``target`` through; :meth:`close` it when complete (or
        leave it open: the group closes it)."""
        path = Path(target)
        if any(t == path for t, _, _ in self._files):
            raise ValueError(f"{path} is written twice")
        tmp = _temporary(path)
        fh = open(tmp, "xb")  # noqa: SIM115 - closed by close() or the group
        self._files.append((path, tmp, fh))
        return fh

    def close(self, fh: IO[bytes]) -> None:
        """Flush ``fh`` to disk and close it (still under its temporary name)."""
        if not fh.closed:
            fh.flush()
            os.fsync(fh.fileno())
            fh.close()

    def _commit(self) -> None:
        for _, _, fh in self._files:
            self.close(fh)
        for path, tmp, _ in reversed(self._files):
            os.replace(tmp, path)

    def _discard(self) -> None:
        for _, tmp, fh in self._files:
            with contextlib.suppress(OSError):
                fh.close()
            with contextlib.suppress(OSError):
                os.unlink(tmp)


@contextlib.contextmanager
def atomic_files() -> Iterator[AtomicFiles]:
    """A group of files (:meth:`AtomicFiles.open`) renamed into place when the block ends
    without an error, in the reverse order of opening (the first opened is renamed last);
    on an error before the renames every temporary file is removed and no target is
    touched. The renames themselves are one by one: should one fail, the files renamed before
    it stay (the first opened, a root file, is renamed last, so it never points at missing
    files)."""
    group = AtomicFiles()
    try:
        yield group
        group._commit()
    except BaseException:
        group._discard()
        raise
