"""Exact byte ranges of a file's Kaitai fields: ``/header/num_objects`` is its 8 bytes.

The generated parsers keep no positions (they are compiled without ``--debug``), so the
positions are taken the way ``--debug`` takes them, while parsing: the format's top-level
class is run on a stream that notes where each read starts and ends, and which field it is
(the line of generated code that reads it, ``self.<field> = ...``, as
:func:`shardkit._kaitai.field_location` finds a failing field). Substreams (fields with a
``size:``) are traced too, at the offset of the bytes they were cut from.

The trace is bounded: at most :data:`MAX_READS` reads per top-level part and no single read
over :data:`MAX_READ` bytes (a blob of objects is noted as a range, and the trace of that part
stops there), so a 1 GB file costs a few small reads. A damaged file's trace stops at the
damage: what was read before it stays (:class:`Trace` ``error``).
"""

from __future__ import annotations

import io
import linecache
import re
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import kaitaistruct
from kaitaistruct import KaitaiStream, KaitaiStruct

from ..sources import ByteSource, SourceStream

__all__ = [
    "CLASSES",
    "MAX_READ",
    "MAX_READS",
    "Field",
    "Trace",
    "class_for",
    "field_nodes",
    "kaitai_class",
    "show",
    "trace",
]

#: Reads traced per top-level part (the seq, then each instance).
MAX_READS = 2000
#: The largest single read traced; a larger one is noted as a range and ends that part.
MAX_READ = 4 << 10

_ASSIGN = re.compile(r"self\.(?:_raw__m_|_raw__raw_|_raw_|_m_)?(\w+)(?:\s*=|\.append\()")
_local = threading.local()
_patch_lock = threading.Lock()


@dataclass
class Field:
    """One field read: its path, absolute range and value (``None`` for a struct)."""

    path: str
    start: int
    end: int
    value: Any = None
    children: dict[str, Field] = field(default_factory=dict)


@dataclass
class Trace:
    """The fields read, as a tree under ``root`` (keyed by path component)."""

    root: Field
    error: str | None = None
    error_offset: int | None = None

    def find(self, path: str) -> Field | None:
        """The field at ``path`` (``/header/num_objects``), or None."""
        node = self.root
        for part in [p for p in path.split("/") if p]:
            nxt = node.children.get(part)
            if nxt is None:
                return None
            node = nxt
        return node

    def walk(self) -> Iterator[Field]:
        """Every field, depth first."""
        stack = [self.root]
        while stack:
            f = stack.pop()
            yield f
            stack.extend(reversed(list(f.children.values())))


class _Stop(Exception):
    """The trace of one part is over (a budget is spent)."""


class _Context:
    def __init__(self, root_obj_holder: list[Any]) -> None:
        self.records: list[tuple[tuple[str, ...], int, int, Any]] = []
        self.reads = 0
        self.last_bytes_start: int | None = None
        self.last_bytes_len = -1
        self.holder = root_obj_holder
        self.max_read = MAX_READ


class _Traced(KaitaiStream):  # type: ignore[misc]  # the runtime ships no annotations
    """A KaitaiStream that notes each read in the thread's trace (plain without one)."""

    def __init__(self, stream: Any, base: int | None = None) -> None:
        super().__init__(stream)
        self._ctx: _Context | None = getattr(_local, "ctx", None)
        if base is None:  # a substream cut from the bytes just read
            ctx = self._ctx
            if ctx is not None and ctx.last_bytes_start is not None and \
                    self.size() == ctx.last_bytes_len:
                base = ctx.last_bytes_start
            else:  # bytes made by a `process:` (decoded): no place in the file to note
                self._ctx, base = None, 0
        self._base = base


def _wrap(name: str) -> Any:
    orig = getattr(KaitaiStream, name)

    def traced(self: _Traced, *args: Any, **kwargs: Any) -> Any:
        ctx = self._ctx
        if ctx is None:
            return orig(self, *args, **kwargs)
        start = self.pos()
        if name == "read_bytes" and args and isinstance(args[0], int) and args[0] > ctx.max_read:
            if start + args[0] <= self.size():  # (past the end it is no field: damage)
                _note(ctx, sys._getframe(1), self._base + start, self._base + start + args[0],
                      f"{args[0]} bytes")
            raise _Stop
        if name == "read_bytes_full" and self.size() - start > ctx.max_read:
            _note(ctx, sys._getframe(1), self._base + start, self._base + self.size(),
                  f"{self.size() - start} bytes")
            raise _Stop
        ctx.reads += 1
        if ctx.reads > MAX_READS:
            raise _Stop
        value = orig(self, *args, **kwargs)
        if isinstance(value, (bytes, bytearray)):
            ctx.last_bytes_start, ctx.last_bytes_len = self._base + start, len(value)
        _note(ctx, sys._getframe(1), self._base + start, self._base + self.pos(), value)
        return value

    traced.__name__ = name
    return traced


for _name in [n for n in vars(KaitaiStream) if n.startswith("read_")]:
    setattr(_Traced, _name, _wrap(_name))


def _note(ctx: _Context, frame: Any, start: int, end: int, value: Any) -> None:
    parts: list[str] = []
    while frame is not None:
        obj = frame.f_locals.get("self")
        if not isinstance(obj, KaitaiStruct):
            break
        line = linecache.getline(frame.f_code.co_filename, frame.f_lineno)
        m = _ASSIGN.search(line)
        if m:
            part = m.group(1)
            i = frame.f_locals.get("i")
            if ".append(" in line and isinstance(i, int):
                parts.append(str(i))
            parts.append(part)
        frame = frame.f_back
    if parts:
        ctx.records.append((tuple(reversed(parts)), start, end, value))


#: The generated top-level class of each format (``--format`` id) read from its first byte.
CLASSES = {"swh": "swh_read_shard:SwhReadShard", "mdb": "xet_mdb_shard:XetMdbShard",
           "zss": "zss:Zss", "zs": "zs:Zs", "amudai": "amudai_shard:AmudaiShard"}


def class_for(format_id: str) -> type[KaitaiStruct] | None:
    """The generated top-level class of a format, or None (no schema of the whole file)."""
    import importlib

    name = CLASSES.get(format_id)
    if name is None:
        return None
    module, _, cls = name.partition(":")
    found: type[KaitaiStruct] = getattr(
        importlib.import_module(f"shardkit.generated.{module}"), cls)
    return found


def kaitai_class(reader: Any) -> type[KaitaiStruct] | None:
    """The generated top-level class a reader parses its file with, or None."""
    ks = getattr(reader, "_ks", None)
    if isinstance(ks, KaitaiStruct):
        return type(ks)
    return class_for(str(getattr(reader, "format_id", "")))


def trace(cls: type[KaitaiStruct], source: ByteSource, max_read: int = MAX_READ) -> Trace:
    """Parse ``source`` with ``cls`` and note every field's range (bounded; see the module:
    ``max_read`` is the largest single read, for bytes already in memory)."""
    module: Any = sys.modules[cls.__module__]  # a generated parser's module
    ctx = _Context([])
    ctx.max_read = max_read
    error: BaseException | None = None
    with _patch_lock:
        saved = module.KaitaiStream
        module.KaitaiStream = _Traced  # substreams made while tracing are traced too
        _local.ctx = ctx
        try:
            stream = _Traced(io.BufferedReader(SourceStream(source),
                                               buffer_size=4096), base=0)
            obj = None
            try:
                obj = cls(stream)
            except _Stop:
                pass
            except (kaitaistruct.KaitaiStructError, EOFError, ValueError, OSError,
                    UnicodeDecodeError, OverflowError, IndexError, MemoryError) as exc:
                error = exc
            except Exception as exc:  # noqa: BLE001  # a shardkit error from the source
                error = exc
            if obj is not None:
                for name in _instances(cls):
                    ctx.reads = 0
                    before = len(ctx.records)
                    try:
                        getattr(obj, name)
                    except _Stop:
                        pass
                    except Exception:  # noqa: BLE001  # an instance past the damage
                        pass
                    _drop_repeats(ctx.records, before)
        finally:
            _local.ctx = None
            module.KaitaiStream = saved
    out = _tree(ctx.records)
    if error is not None:
        offset = ctx.records[-1][2] if ctx.records else 0
        return Trace(out, f"{type(error).__name__}: {error}", offset)
    return Trace(out)


def _drop_repeats(records: list[Any], before: int) -> None:
    """Drop a plain value an instance read if its bytes are already fields
    (``header_crc_input`` is the header's bytes again)."""
    new = records[before:]
    if not new or any(len(r[0]) > 1 for r in new):
        return  # (an array of structs over a blob's bytes shows what the blob holds)
    tops: dict[str, tuple[int, int]] = {}
    for parts, start, end, _ in records[:before]:
        a, b = tops.get(parts[0], (start, end))
        tops[parts[0]] = (min(a, start), max(b, end))
    lo, hi = min(r[1] for r in new), max(r[2] for r in new)
    if any(a <= lo and hi <= b for a, b in tops.values()):
        del records[before:]


def _instances(cls: type) -> list[str]:
    return [n for n, v in vars(cls).items() if isinstance(v, property) and not n.startswith("_")]


def _tree(records: list[tuple[tuple[str, ...], int, int, Any]]) -> Field:
    root = Field("", 0, 0)
    for parts, start, end, value in records:
        node = root
        path = ""
        for p in parts:
            path += "/" + p
            nxt = node.children.get(p)
            if nxt is None:
                nxt = node.children[p] = Field(path, start, end)
            else:
                nxt.start, nxt.end = min(nxt.start, start), max(nxt.end, end)
            node = nxt
        if not node.children:
            node.value = value
    return root


def show(value: Any) -> str:
    """A field's value as the tree shows it: ``30 (0x1e)``, ``"zlib"``, ``e9c2b4…``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value} (0x{value:x})" if value > 9 else str(value)
    if isinstance(value, (bytes, bytearray)):
        text = bytes(value).rstrip(b"\x00")
        if text and all(32 <= b < 127 for b in text[:64]):
            shown = text[:64].decode("ascii")
            return f'"{shown}"' + ("…" if len(text) > 64 else "") + \
                (f" + {len(value) - len(text)} NUL" if len(text) < len(value) else "")
        return bytes(value[:24]).hex() + ("…" if len(value) > 24 else "") + \
            f" ({len(value)} bytes)"
    if value is None:
        return ""
    return str(getattr(value, "name", value))


def field_nodes(parent: Field, source: ByteSource | None) -> Any:
    """The children of a traced field as tree nodes (each with its exact range)."""
    from .model import ListChildren, Node

    out = []
    for key, f in parent.children.items():
        n = len(f.children)
        value = (f"[{n}]" if all(k.isdigit() for k in f.children) else f"{{{n}}}") \
            if f.children else show(f.value)
        node = Node(key, f.path, value, f.start, f.end, source=source)
        if f.children:
            node.children = (lambda f=f: field_nodes(f, source))
        out.append(node)
    return ListChildren(out)
