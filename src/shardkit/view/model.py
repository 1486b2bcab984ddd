"""The viewer's object tree: nodes with a value, a field path and a byte range, built lazily.

Nothing here imports Textual, so the model is usable (and tested) on its own. A :class:`Node`
knows how to make its children (:class:`Children`), and only does so when asked: a 50M-slot
index is a :class:`FuncChildren` whose nodes are read a page at a time, so opening a shard reads
no entry. The tree's top level is built by :func:`build_root` from the reader's public API:

- ``summary``: :meth:`summary` without scans (the cheap top of ``dump``);
- ``layout``: :meth:`sections`, the byte ranges ``shardkit map`` prints, as a tree of path
  components; a format with large arrays adds lazy children to its sections (see
  :mod:`shardkit.view.expand`);
- ``dump``: :meth:`to_dict` (``shardkit dump``), for files small enough to load whole;
- for a Neuroglancer dataset: its scales (or key-value part) and their shard files, each with
  its own ``summary`` and ``layout``.

Byte ranges are absolute offsets in one file; a node also names that file (``source``), so a
dataset's nodes show the bytes of their own shard file.
"""

from __future__ import annotations

import bisect
import dataclasses
import inspect
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..errors import ShardkitError
from ..render import to_jsonable
from ..sources import ByteSource

__all__ = ["PAGE", "Children", "FuncChildren", "ListChildren", "Node", "build_root",
           "damaged_root", "error_node", "group_spans", "value_node"]

#: Children shown at once under one node; longer lists are grouped in pages of pages.
PAGE = 100
#: ``dump`` (``to_dict``) is offered only for files up to this size: it loads everything.
DUMP_LIMIT = 64 << 20


class Children:
    """A node's children, made on demand: a length, a slice, and two ways to find one."""

    def __len__(self) -> int:
        raise NotImplementedError

    def nodes(self, lo: int, hi: int) -> list[Node]:
        """Children ``[lo, hi)`` (``hi - lo`` is at most :data:`PAGE`)."""
        raise NotImplementedError

    def index_of_key(self, key: str) -> int | None:
        """Index of the child whose key is ``key``, or None."""
        return None

    def index_at(self, offset: int) -> int | None:
        """Index of the child whose byte range holds ``offset`` (the innermost search), or None."""
        return None

    def index_in_decoded(self, offset: int) -> int | None:
        """Index of the child whose range in the parent's decoded bytes holds ``offset``."""
        return None


class ListChildren(Children):
    """Children held in a list (small, or already in memory)."""

    def __init__(self, items: Sequence[Node]) -> None:
        self.items = list(items)
        self._keys = {n.key: i for i, n in enumerate(self.items)}
        ranged = [(a, -b, i) for i, n in enumerate(self.items) for a, b in (
            n.pieces if n.pieces is not None else [(n.start, n.end)] if
            n.start is not None and n.end is not None else [])]
        ranged.sort()
        self._starts = [s for s, _, _ in ranged]
        self._ranged = ranged

    def __len__(self) -> int:
        return len(self.items)

    def nodes(self, lo: int, hi: int) -> list[Node]:
        return self.items[lo:hi]

    def index_of_key(self, key: str) -> int | None:
        return self._keys.get(key)

    def index_at(self, offset: int) -> int | None:
        # the last range starting at or before offset that still covers it; among ranges
        # with the same start the widest comes first, so the narrowest covering one wins
        best: int | None = None
        best_size = None
        j = bisect.bisect_right(self._starts, offset)
        for k in range(j - 1, max(-1, j - 1 - 64), -1):  # overlapping ranges are rare
            start, neg_end, i = self._ranged[k]
            end = -neg_end
            if start <= offset < end or (start == end == offset):
                size = end - start
                if best_size is None or size < best_size:
                    best, best_size = i, size
        return best


class FuncChildren(Children):
    """``n`` children made by ``make(lo, hi)`` a page at a time (nothing held but the function).

    ``key_to_index`` and ``offset_to_index`` find a child without making the others (an array
    of fixed-size entries: ``(offset - base) // size``).
    """

    def __init__(self, n: int, make: Callable[[int, int], list[Node]], *,
                 key_to_index: Callable[[str], int | None] | None = None,
                 offset_to_index: Callable[[int], int | None] | None = None,
                 decoded_to_index: Callable[[int], int | None] | None = None) -> None:
        self.n = n
        self.make = make
        self.key_to_index = key_to_index
        self.offset_to_index = offset_to_index
        self.decoded_to_index = decoded_to_index

    def index_in_decoded(self, offset: int) -> int | None:
        if self.decoded_to_index is None:
            return None
        i = self.decoded_to_index(offset)
        return i if i is not None and 0 <= i < self.n else None

    def __len__(self) -> int:
        return self.n

    def nodes(self, lo: int, hi: int) -> list[Node]:
        return self.make(lo, min(hi, self.n))

    def index_of_key(self, key: str) -> int | None:
        if self.key_to_index is not None:
            return self.key_to_index(key)
        try:
            i = int(key)
        except ValueError:
            return None
        return i if 0 <= i < self.n else None

    def index_at(self, offset: int) -> int | None:
        if self.offset_to_index is None:
            return None
        i = self.offset_to_index(offset)
        return i if i is not None and 0 <= i < self.n else None


@dataclasses.dataclass(eq=False)
class Node:
    """One line of the tree.

    Attributes:
        key: The last component of the field path (``header``, ``5``, ``@30``).
        path: The field path, as ``map`` and errors name it (``/index/entries/5``).
        value: Short text of the value (``None`` for a node with children only).
        start: First byte of the node's range in ``source`` (``None``: no range).
        end: One past its last byte.
        note: What the range holds (``map``'s note).
        source: The file the range is in (``None``: the viewer's main file).
        children: Makes the children on first expansion (``None``: a leaf).
        owner: For a file's ``layout`` node: the reader of that file (``m`` maps it).
        pieces: For a node that groups ranges with gaps between them (an Amudai field: its
            descriptor and its buffers), those ranges, sorted; ``start``/``end`` then span
            them, and only the pieces are the node's bytes (``covers``, the highlight).
        decoded: For a compressed block or chunk: returns its decoded bytes (``d`` shows them
            in a second hex pane).
        in_decoded: For a record of such a block: its range in the decoded bytes.
    """

    key: str
    path: str
    value: str | None = None
    start: int | None = None
    end: int | None = None
    note: str = ""
    source: ByteSource | None = None
    children: Callable[[], Children] | None = None
    owner: Any = None
    pieces: list[tuple[int, int]] | None = None
    decoded: Callable[[], bytes] | None = None
    in_decoded: tuple[int, int] | None = None
    _made: Children | None = dataclasses.field(default=None, repr=False)

    @property
    def size(self) -> int | None:
        """Length of the range, or None."""
        if self.start is None or self.end is None:
            return None
        return self.end - self.start

    @property
    def expandable(self) -> bool:
        """Whether the node has (or may have) children."""
        return self.children is not None

    def kids(self) -> Children:
        """The children (made once; :meth:`forget` drops them again)."""
        if self._made is None:
            self._made = self.children() if self.children is not None else ListChildren([])
        return self._made

    def forget(self) -> None:
        """Drop the made children (when the node is collapsed: memory stays bounded)."""
        self._made = None

    def label(self, width: int = 60) -> str:
        """``key: value  [start, end)``, the value cut to ``width`` characters."""
        text = self.key
        if self.value is not None:
            v = self.value if len(self.value) <= width else self.value[: width - 1] + "…"
            text += f": {v}"
        if self.start is not None and self.end is not None:
            text += f"  [{self.start}, {self.end})"
            if self.pieces is not None:
                text += f" in {len(self.pieces)} pieces"
        return text

    def covers(self, offset: int) -> bool:
        """Whether ``offset`` is in the node's range (in one of its pieces, if it has some)."""
        if self.pieces is not None:
            k = bisect.bisect_right(self.pieces, (offset, 1 << 62)) - 1
            return k >= 0 and self.pieces[k][0] <= offset < self.pieces[k][1]
        return self.start is not None and self.end is not None and \
            (self.start <= offset < self.end or self.start == self.end == offset)

    @property
    def byte_count(self) -> int | None:
        """Bytes the node holds: its pieces' total, or its range's length."""
        if self.pieces is not None:
            return sum(b - a for a, b in self.pieces)
        return self.size


def group_spans(lo: int, hi: int, page: int = PAGE) -> list[tuple[int, int]]:
    """Pages of ``[lo, hi)``: at most ``page`` spans, each a power of ``page`` long.

    ``[0, 50_000_000)`` gives 50 spans of 1,000,000; each of those 100 of 10,000, and so on,
    so any child is ``log_page(n)`` expansions away and no expansion makes more than ``page``
    tree lines.
    """
    n = hi - lo
    step = page
    while n > step * page:
        step *= page
    return [(a, min(a + step, hi)) for a in range(lo, hi, step)]


def _short(value: Any, limit: int = 200) -> str:
    if isinstance(value, str):
        text = value
    elif value is None:
        text = "null"
    elif isinstance(value, bool):
        text = "true" if value else "false"
    else:
        text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def value_node(key: str, path: str, value: Any, sections: dict[str, Any] | None = None,
               source: ByteSource | None = None) -> Node:
    """A node for a plain value (``to_dict``/``summary`` output): dicts and lists expand.

    A node whose path names a section (``/header``) gets that section's range, so the summary
    and the dump are linked to the bytes the way ``map`` is.
    """
    sec = (sections or {}).get(path)
    start, end, note = (sec.start, sec.end, sec.note) if sec is not None else (None, None, "")
    value = to_jsonable(value)
    if isinstance(value, dict):
        items = list(value.items())

        def make_dict() -> Children:
            return ListChildren([value_node(str(k), f"{path.rstrip('/')}/{k}", v, sections,
                                            source) for k, v in items])

        return Node(key, path, f"{{{len(items)}}}", start, end, note, source,
                    make_dict if items else None)
    if isinstance(value, list):
        seq = value

        def make_list() -> Children:
            return FuncChildren(len(seq), lambda a, b: [
                value_node(str(i), f"{path.rstrip('/')}/{i}", seq[i], sections, source)
                for i in range(a, b)])

        return Node(key, path, f"[{len(seq)}]", start, end, note, source,
                    make_list if seq else None)
    return Node(key, path, _short(value), start, end, note, source)


def _call_cheap(func: Callable[..., Any]) -> Any:
    """Call ``summary`` without its optional scans (``counts``/``count_chunks`` off)."""
    params = inspect.signature(func).parameters
    options = {name: False for name in ("counts", "count_chunks") if name in params}
    return func(**options)


def layout_children(sections: Iterable[Any], source: ByteSource | None,
                    expand: Callable[[Node], None] | None = None, base: str = "") -> Children:
    """``map``'s sections as a tree of their path components (``/stripes/0/fields/id/data``).

    A component that is itself a section carries its range; one that only groups others
    carries the span of what it groups. ``expand(node)`` may give a section node lazy
    children (an index's entries); ``base`` goes before every path (a dataset's shard file,
    ``0.shard``, as ``map`` names a dataset's sections).
    """
    tree: dict[str, Any] = {}
    for s in sections:
        parts = [p for p in s.name.split("/") if p]
        if not parts:
            continue
        level = tree
        for p in parts[:-1]:
            level = level.setdefault(p, {"": None, "/": {}})["/"]
        last, n = parts[-1], 1
        while last in level and level[last][""] is not None:  # a name given twice: keep both
            n += 1
            last = f"{parts[-1]} ({n})"
        level.setdefault(last, {"": None, "/": {}})[""] = s
    return _layout_level(tree, base + "/", source, expand)


def _layout_level(level: dict[str, Any], base: str, source: ByteSource | None,
                  expand: Callable[[Node], None] | None) -> Children:
    nodes = []
    for key, entry in level.items():
        sec, sub = entry[""], entry["/"]
        path = f"{base}{key}"
        if sec is not None:
            start, end, note = sec.start, sec.end, sec.note
            pieces = None
        else:
            pieces = _merge(_spans(sub))
            start = pieces[0][0] if pieces else None
            end = max(b for _, b in pieces) if pieces else None
            note = ""
            if len(pieces) <= 1:
                pieces = None  # one run of bytes: the range says it all
        node = Node(key, path, note or None, start, end, note, source, pieces=pieces)
        if sub:
            node.children = (lambda sub=sub, path=path:
                             _layout_level(sub, path + "/", source, expand))
        if expand is not None:
            expand(node)
        nodes.append(node)
    nodes.sort(key=lambda n: (n.start if n.start is not None else -1, n.key))
    return ListChildren(nodes)


def _merge(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted ranges with those that touch or overlap joined."""
    out: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            if b > out[-1][1]:
                out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


def _spans(level: dict[str, Any]) -> Iterable[tuple[int, int]]:
    for entry in level.values():
        if entry[""] is not None:
            yield entry[""].start, entry[""].end
        yield from _spans(entry["/"])


def _error_node(path: str, exc: BaseException) -> Node:
    return Node("error", path, str(exc))


def guarded(make: Callable[[], Children], path: str) -> Callable[[], Children]:
    """``make``, with a corrupt file's error shown as a child instead of raised."""

    def run() -> Children:
        try:
            return make()
        except ShardkitError as exc:
            return ListChildren([_error_node(path, exc)])

    return run


def file_nodes(reader: Any, source: ByteSource | None = None, base: str = "",
               payload: str = "") -> list[Node]:
    """``summary``, ``layout`` and (small files) ``dump`` of one file's reader.

    ``base`` goes before every field path (a dataset's shard file: ``0.shard``);
    ``payload`` names what a Neuroglancer dataset's chunks hold (``neuroglancer_skeletons``:
    each chunk opens to its fields).
    """
    from .expand import expander_for

    expand = _with_fields(reader, source, base, expander_for(reader, source, base,
                                                                 payload))
    cache: dict[str, Any] = {}

    def secs() -> dict[str, Any]:
        if "by_name" not in cache:
            cache["list"] = got = reader.sections()
            cache["by_name"] = {base + s.name: s for s in got}
        return cache["by_name"]  # type: ignore[no-any-return]  # the dict holds mixed values

    def summary_kids() -> Children:
        summary = _call_cheap(reader.summary)
        by_name = secs() if _cheap_sections(reader) else {}
        return ListChildren([value_node(str(k), f"{base}/{k}", v, by_name, source)
                             for k, v in to_jsonable(summary).items()])

    def layout_kids() -> Children:
        try:
            secs()
        except ShardkitError as exc:  # the parts before the damage, then the damage
            from .fields import kaitai_class

            cls = kaitai_class(reader)
            kids = damaged_parts(cls, source or reader.source, exc, base) \
                if cls is not None and not base else None
            if kids is None:
                raise
            return kids
        return layout_children(cache["list"], source, expand, base)

    def dump_kids() -> Children:
        tree = to_jsonable(reader.to_dict())
        by_name = secs()
        return ListChildren([value_node(str(k), f"{base}/{k}", v, by_name, source)
                             for k, v in tree.items()])

    size = getattr(source or reader.source, "size", None)
    out = [Node("summary", f"{base}/summary", "what `shardkit info` shows", source=source,
                children=guarded(summary_kids, f"{base}/summary")),
           Node("layout", base or "/", "the byte ranges of `shardkit map`",
                0 if isinstance(size, int) else None, size if isinstance(size, int) else None,
                source=source, children=guarded(layout_kids, base or "/"), owner=reader)]
    from .expand import index_tree

    try:
        tree = index_tree(reader, base)
    except ShardkitError as exc:
        tree = _error_node(f"{base}/blocks", exc)
    if tree is not None:
        tree.source = source
        out.append(tree)
    if isinstance(size, int) and size <= DUMP_LIMIT and hasattr(reader, "to_dict"):
        out.append(Node("dump", f"{base}/dump", "the tree of `shardkit dump`", source=source,
                        children=guarded(dump_kids, f"{base}/dump")))
    return out


def _with_fields(reader: Any, source: ByteSource | None, base: str,
                 expand: Callable[[Node], None] | None) -> Callable[[Node], None]:
    """``expand``, then: a section with no children of its own gets its Kaitai fields, each
    with its exact range (``/header`` -> ``/header/num_objects``: its 8 bytes)."""
    from .fields import field_nodes, kaitai_class, trace

    made: dict[str, Any] = {}

    def traced() -> Any:
        if "trace" not in made:
            cls = kaitai_class(reader)
            made["trace"] = trace(cls, source or reader.source) if cls is not None else None
        return made["trace"]

    def run(node: Node) -> None:
        if expand is not None:
            expand(node)
        if node.children is not None or node.start is None or not node.path.startswith(base):
            return
        t = traced()
        f = t.find(node.path[len(base):]) if t is not None else None
        if f is not None and f.children and (f.start, f.end) == (node.start, node.end):
            node.children = lambda: field_nodes(f, node.source or source)

    return run


def error_node(exc: BaseException, path: str = "", source: ByteSource | None = None) -> Node:
    """An ``error`` node at the byte the error names (one byte long), else without a range."""
    offset = getattr(exc, "offset", None)
    field = getattr(exc, "field", None) or path
    start, end = (offset, offset + 1) if isinstance(offset, int) else (None, None)
    return Node("error", field, str(exc), start, end, "damaged here", source)


def damaged_parts(cls: Any, source: ByteSource, exc: BaseException, base: str = ""
                  ) -> Children | None:
    """A damaged file's intact parts, as its Kaitai schema reads them (each field with its
    bytes), with one ``error`` node at the damage; None when not even the first field reads."""
    from .fields import field_nodes, trace

    t = trace(cls, source)
    if not t.root.children:
        return None
    kids = field_nodes(t.root, source)
    nodes = [*kids.nodes(0, len(kids)), error_node(exc, base or "/", source)]
    nodes.sort(key=lambda n: (n.start if n.start is not None else -1))
    return ListChildren(nodes)


def damaged_root(name: str, format_name: str, format_id: str, source: ByteSource,
                 exc: BaseException) -> Node | None:
    """The tree of a file its reader cannot open: its ``layout`` holds the parts that read
    (magic, header...) and the damage as one ``error`` node; None if nothing reads."""
    from .fields import class_for

    cls = class_for(format_id)
    kids = damaged_parts(cls, source, exc) if cls is not None else None
    if kids is None:
        return None
    layout = Node("layout", "/", "the parts that read, and where the damage is", 0,
                  source.size, "damaged", source, children=lambda: kids)
    return Node(name, "", f"{format_name}: damaged", children=lambda: ListChildren([layout]))


def _cheap_sections(reader: Any) -> bool:
    """Whether ``sections()`` costs a few reads (not a scan of the file)."""
    from .expand import sections_are_cheap

    return sections_are_cheap(reader)


def build_root(reader: Any) -> Node:
    """The tree's root for an open reader (a file, or a Neuroglancer dataset)."""
    from .expand import dataset_parts

    parts = dataset_parts(reader)
    if parts is None:
        kids = file_nodes(reader)
        return Node(reader.source.name, "", reader.format_name, children=lambda: ListChildren(
            kids))
    return Node(str(getattr(reader.source, "name", "dataset")), "", reader.format_name,
                children=lambda: ListChildren(parts))
