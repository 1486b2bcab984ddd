"""The one door to the generated Kaitai classes: parsing with errors mapped to shardkit's.

Generated parsers raise ``KaitaiStructError`` subclasses, ``EOFError`` and occasionally plain
``ValueError``/``UnicodeDecodeError``. :func:`kaitai_errors` turns every one of them into a
:class:`~shardkit.errors.ShardkitError` that names the absolute byte offset and the field path
(``/hash_function/compressed_seq/select/bits_vec``). The path is recovered from the traceback:
each frame of generated code is on a line ``self.<field> = ...``, and substreams (fields with a
``size:``) are located from the ``_raw_<field>`` bytes their parent read.
"""

from __future__ import annotations

import linecache
import re
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType, TracebackType
from typing import Any, TypeVar

# the runtime ships no annotations: [tool.mypy] says so for the repository; this ignore is for
# mypy run on the installed package without that configuration (unused under it)
import kaitaistruct  # type: ignore[import-untyped,unused-ignore]  # see above
from kaitaistruct import KaitaiStream, KaitaiStruct

from .errors import BadMagicError, LayoutError, ShardkitError, TruncatedError

__all__ = ["field_location", "kaitai_errors", "parse"]

T = TypeVar("T", bound=KaitaiStruct)

_ASSIGN = re.compile(r"self\.(?:_raw__m_|_raw_|_m_)?(\w+)(?:\s*=|\.append\()")
_READ_WIDTH = re.compile(r"read_[usf](\d)")


def _generated_frames(tb: TracebackType | None) -> list[Any]:
    frames = []
    while tb is not None:
        frame = tb.tb_frame
        obj = frame.f_locals.get("self")
        if isinstance(obj, KaitaiStruct):
            frames.append((frame, tb.tb_lineno, obj))
        tb = tb.tb_next
    return frames


def field_location(
    tb: TracebackType | None, base: int = 0
) -> tuple[str | None, int | None, int | None]:
    """Field path, absolute position and absolute stream end of the innermost generated frame.

    Args:
        tb: Traceback of an exception raised inside generated code.
        base: Absolute offset of the outermost generated object's stream start.

    Returns:
        ``(path, offset, stream_end)``; any may be ``None`` when it cannot be worked out.
    """
    frames = _generated_frames(tb)
    if not frames:
        return None, None, None
    parts: list[str] = []
    bases: dict[int, int] = {id(frames[0][2]._io): base}
    prev = None
    for frame, lineno, obj in frames:
        line = linecache.getline(frame.f_code.co_filename, lineno)
        io = obj._io
        if id(io) not in bases and prev is not None:
            pframe, pobj = prev
            pio = pobj._io
            for name, value in pframe.f_locals.items():
                if value is io and name.startswith("_io__raw_"):
                    raw = getattr(pobj, name[len("_io_"):], None)
                    if raw is not None and id(pio) in bases:
                        bases[id(io)] = bases[id(pio)] + pio.pos() - len(raw)
                    break
        m = _ASSIGN.search(line)
        if m is None and "raise " in line:  # a `valid:` check: the field is read just above
            for back in (1, 2, 3):
                m = _ASSIGN.search(linecache.getline(frame.f_code.co_filename, lineno - back))
                if m:
                    break
        if m:
            part = m.group(1)
            i = frame.f_locals.get("i")
            if ".append(" in line and isinstance(i, int):
                part = f"{part}/{i}"
            parts.append(part)
        prev = (frame, obj)
    frame, lineno, obj = frames[-1]
    offset = end = None
    if id(obj._io) in bases:
        offset = bases[id(obj._io)] + obj._io.pos()
        end = bases[id(obj._io)] + obj._io.size()
    return "/" + "/".join(parts), offset, end


def _field_start(exc: BaseException, offset: int | None, end: int | None,
                 tb: TracebackType | None) -> int | None:
    """Move ``offset`` (stream position after the failure) back to where the field began."""
    if offset is None:
        return None
    if isinstance(exc, kaitaistruct.NoTerminatorFoundError):
        # the string ran to the end of its stream; the runtime's read loop still holds what it
        # consumed (local `r` of read_bytes_term[_multi]), so count that back from the end
        last = tb
        while last is not None and last.tb_next is not None:
            last = last.tb_next
        consumed = last.tb_frame.f_locals.get("r") if last is not None else None
        if isinstance(consumed, (bytes, bytearray)):
            return offset - len(consumed)
        return offset
    if isinstance(exc, kaitaistruct.EndOfStreamError) and end is not None:
        # the read wanted more than the stream's last `bytes_available` bytes; large reads
        # are refused before the position moves, so count back from the stream's end
        return end - (exc.bytes_available or 0)
    if isinstance(exc, UnicodeDecodeError) and isinstance(exc.object, (bytes, bytearray)):
        return offset - len(exc.object) - 1  # strz: the text and its terminator
    if isinstance(exc, kaitaistruct.ValidationFailedError):
        actual = getattr(exc, "actual", None)
        if isinstance(actual, (bytes, bytearray)):
            return offset - len(actual)
        if isinstance(actual, str):  # strz: the text and its terminator
            return offset - len(actual.encode("utf-8")) - 1
        frames = _generated_frames(tb)
        if frames:
            frame, lineno, _ = frames[-1]
            # the read is on the line before the `if not ...: raise` line
            for back in (1, 2):
                m = _READ_WIDTH.search(linecache.getline(frame.f_code.co_filename, lineno - back))
                if m:
                    return offset - int(m.group(1))
    return offset


@contextmanager
def kaitai_errors(prefix: str = "", base: int = 0, magic_fields: tuple[str, ...] = ("/magic",),
                  version_fields: tuple[str, ...] = ()) -> Iterator[None]:
    """Map any error raised by generated code inside the block to a :class:`ShardkitError`.

    Args:
        prefix: Field path of the object being read, prepended to the recovered path.
        base: Absolute offset of that object's stream start.
        magic_fields: Field paths whose validation failure means "not this format".
        version_fields: Field paths whose validation failure means "unsupported version".
    """
    try:
        yield
    except ShardkitError:
        raise
    except (kaitaistruct.KaitaiStructError, EOFError, ValueError, struct.error, IndexError,
            OverflowError, UnicodeDecodeError, MemoryError) as exc:
        tb = exc.__traceback__
        path, offset, end = field_location(tb, base)
        offset = _field_start(exc, offset, end, tb)
        full = (prefix.rstrip("/") + path) if path else (prefix or None)
        raise _translate(exc, full, offset, magic_fields, version_fields) from exc


def _translate(exc: BaseException, path: str | None, offset: int | None,
               magic_fields: tuple[str, ...], version_fields: tuple[str, ...]) -> ShardkitError:
    from .errors import UnsupportedVersionError

    if isinstance(exc, kaitaistruct.EndOfStreamError):
        return TruncatedError(
            f"truncated: needs {exc.bytes_needed} bytes, {exc.bytes_available} remain",
            needed=exc.bytes_needed, available=exc.bytes_available, offset=offset, field=path)
    if isinstance(exc, EOFError):
        return TruncatedError(f"truncated: {exc}", offset=offset, field=path)
    if isinstance(exc, kaitaistruct.ValidationFailedError):
        expected = getattr(exc, "expected", None)
        actual = getattr(exc, "actual", None)
        detail = f"expected {_show(expected)}, found {_show(actual)}" if expected is not None \
            else f"invalid value {_show(actual)}"
        if path in magic_fields:
            return BadMagicError(f"bad magic: {detail}", offset=offset, field=path)
        if path in version_fields:
            return UnsupportedVersionError(f"unsupported version: {detail}", offset=offset,
                                           field=path)
        return LayoutError(f"invalid field: {detail}", offset=offset, field=path)
    if isinstance(exc, MemoryError):
        return LayoutError("a size in the file is too large to allocate", offset=offset,
                           field=path)
    return LayoutError(f"cannot parse: {exc}", offset=offset, field=path)


def _show(value: Any) -> str:
    if isinstance(value, (bytes, bytearray)):
        return value.hex() if len(value) <= 64 else value[:64].hex() + "..."
    return repr(value)


def parse(cls: type[T], stream: KaitaiStream, **mapping: Any) -> T:
    """Construct generated class ``cls`` on ``stream`` with errors mapped (see kaitai_errors)."""
    with kaitai_errors(**mapping):
        parsed: T = cls(stream)
    return parsed


def generated_dir() -> Path:
    """Folder of the generated parsers (for tools and tests)."""
    from . import generated

    module: ModuleType = generated
    assert module.__file__ is not None  # a package of files
    return Path(module.__file__).parent
