"""A semantic diff of two shards, or two datasets, of the same format.

:func:`diff` yields one :class:`Difference` at a time, as it finds it:

1. the summary fields (header, counts, schema...) that differ, the file's own name left out;
2. what the shards hold, compared by value hashes (SHA-256 of each value), never loading a
   whole shard: keys of ``A`` looked up in ``B`` and then keys of ``B`` in ``A`` (two passes,
   a constant-time lookup each) for SWH shards, MDB files and Neuroglancer chunks; one merge
   of the two sorted record streams for ZSS (and any reader whose ``keys()`` are sorted
   records, such as a ZS reader with the same API); Amudai top-level columns one at a time,
   a thousand rows at a time;
3. per format: Neuroglancer chunks per scale (scales only on one side named once), MDB xorbs
   by hash (and their chunk counts and sizes), Amudai schema and row counts (in the summary).

Example::

    with shardkit.open("a.zss") as a, shardkit.open("b.zss") as b:
        for d in diff(a, b):
            print(d)
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import EntryNotFoundError, ShardkitError

__all__ = ["Difference", "diff", "value_hash"]

#: Summary fields that name where a shard is, not what it holds.
_IGNORED = frozenset({"file", "dataset", "counts"})


@dataclass(frozen=True)
class Difference:
    """One difference between ``A`` and ``B``.

    Attributes:
        kind: ``field`` (a summary or header field), ``added`` (only in B), ``removed``
            (only in A), ``changed`` (in both, values differ).
        where: The field path, or the key as ``shardkit ls`` prints it (with its scale or
            section first: ``s0/1234``, ``xorb:...``).
        a, b: The two values (a field's values, or the values' SHA-256 for keys).
    """

    kind: str
    where: str
    a: Any = None
    b: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "where": self.where, "a": self.a, "b": self.b}

    def __str__(self) -> str:
        if self.kind == "added":
            return f"added: {self.where}"
        if self.kind == "removed":
            return f"removed: {self.where}"
        if self.kind == "changed":
            return f"changed: {self.where} (sha256 {str(self.a)[:16]}... -> {str(self.b)[:16]}...)"
        return f"{self.kind}: {self.where}: {_short(self.a)} -> {_short(self.b)}"


def _short(value: Any) -> str:
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 80 else text[:77] + "..."


def value_hash(value: Any) -> str:
    """SHA-256 (hex) of a value: its bytes, or the JSON text of a structured value."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return hashlib.sha256(value).hexdigest()
    from .render import to_json

    return hashlib.sha256(to_json(value).encode()).hexdigest()


def _flatten(value: Any, path: str, out: dict[str, Any]) -> dict[str, Any]:
    if isinstance(value, Mapping):
        for k, v in value.items():
            if not path and k in _IGNORED:
                continue
            _flatten(v, f"{path}.{k}" if path else str(k), out)
    elif isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
        for i, v in enumerate(value):
            _flatten(v, f"{path}[{i}]", out)
        if not value:
            out[path] = []
    else:
        out[path] = value
    return out


def _name(reader: Any) -> str | None:
    source = getattr(reader, "source", None)
    name = getattr(source, "name", None) or getattr(reader, "name", None)
    return name if isinstance(name, str) and name else None


@contextlib.contextmanager
def _blame(reader: Any) -> Iterator[None]:
    """An error raised inside (a side unreadable, cut, corrupt) names the side it comes from,
    unless it starts with that name already (a dataset's shard file names itself)."""
    try:
        yield
    except EntryNotFoundError:
        raise
    except ShardkitError as exc:
        name = _name(reader)
        if name is not None and not exc.message.startswith(name):
            exc.message = f"{name}: {exc.message}"
        raise


def _each(reader: Any, items: Iterable[Any]) -> Iterator[Any]:
    """``items`` (an iteration over ``reader``), each step's error naming ``reader``."""
    with _blame(reader):
        it = iter(items)
    while True:
        with _blame(reader):
            try:
                item = next(it)
            except StopIteration:
                return
        yield item


def _summary(reader: Any) -> dict[str, Any]:
    import inspect

    params = inspect.signature(reader.summary).parameters
    options = {name: True for name in ("counts", "count_chunks") if name in params}
    with _blame(reader):
        summary: dict[str, Any] = reader.summary(**options)  # with the counts a scan gives
    return summary


#: Summary fields that say how a summary was made, not what the shard holds: an MDB shard read
#: through ranged requests is counted from its lookup tables, a local one by a walk.
_PROVENANCE = ("counts_from",)
#: Summary fields that are None where they were not counted (MDB ``terms`` through ranged
#: requests): compared only where both sides counted them.
_UNCOUNTED = ("terms",)


def _fields(a: Any, b: Any) -> Iterator[Difference]:
    fa, fb = _flatten(_summary(a), "", {}), _flatten(_summary(b), "", {})
    for key in _PROVENANCE:
        fa.pop(key, None)
        fb.pop(key, None)
    for key in _UNCOUNTED:
        if key in fa and key in fb and (fa[key] is None or fb[key] is None):
            del fa[key], fb[key]
    for key in [*fa, *(k for k in fb if k not in fa)]:
        va, vb = fa.get(key), fb.get(key)
        if va != vb and not _repeats_header(key, fa, fb):
            yield Difference("field", key, va, vb)


def _repeats_header(key: str, fa: Mapping[str, Any], fb: Mapping[str, Any]) -> bool:
    """A top-level field that repeats ``header.<key>`` on both sides (ZS and ZSS summaries
    give the root's offset and length beside the header): said once, as the header's."""
    twin = f"header.{key}"
    return ("." not in key and all(k in f for k in (key, twin) for f in (fa, fb))
            and (fa[key], fb[key]) == (fa[twin], fb[twin]))


def _mapping(a: Any, b: Any, show: Any, prefix: str = "") -> Iterator[Difference]:
    """Keys of A looked up in B, then keys of B in A: bounded memory, two passes."""
    for key in _each(a, a.keys()):
        with _blame(b):
            there = key in b
        if not there:
            yield Difference("removed", prefix + show(key))
            continue
        with _blame(a):
            ha = value_hash(a[key])
        with _blame(b):
            hb = value_hash(b[key])
        if ha != hb:
            yield Difference("changed", prefix + show(key), ha, hb)
    for key in _each(b, b.keys()):
        with _blame(a):
            there = key in a
        if not there:
            yield Difference("added", prefix + show(key))


def _merged(a: Any, b: Any, show: Any) -> Iterator[Difference]:
    """Two sorted record streams merged in one pass (records are their own values)."""
    ia, ib = _each(a, a.keys()), _each(b, b.keys())
    end = object()
    ra, rb = next(ia, end), next(ib, end)
    while ra is not end or rb is not end:
        if rb is end or (ra is not end and ra < rb):  # type: ignore[operator]  # end tested first
            yield Difference("removed", show(ra))
            ra = next(ia, end)
        elif ra is end or rb < ra:  # type: ignore[operator]  # ditto
            yield Difference("added", show(rb))
            rb = next(ib, end)
        else:
            ra, rb = next(ia, end), next(ib, end)


def _neuroglancer(a: Any, b: Any) -> Iterator[Difference]:
    with _blame(a):
        parts_a = dict(_parts(a))
    with _blame(b):
        parts_b = dict(_parts(b))
    for name, kv in parts_a.items():
        if name not in parts_b:
            yield Difference("removed", f"scale {name}")
            continue
        yield from _mapping(kv, parts_b[name], str, f"{name}/" if name else "")
    for name in parts_b:
        if name not in parts_a:
            yield Difference("added", f"scale {name}")


def _parts(ds: Any) -> list[tuple[str, Any]]:
    scales = getattr(ds, "scales", None)
    if isinstance(scales, Mapping):
        return [(str(k), v) for k, v in scales.items()]
    kv = getattr(ds, "kv", None)
    return [("", kv if kv is not None else ds)]


def _mdb(a: Any, b: Any) -> Iterator[Difference]:
    yield from _mapping(a, b, a.format_key, "file:")
    xa = {str(x.hash): x for x in _each(a, a.xorbs)}
    xb = {str(x.hash): x for x in _each(b, b.xorbs)}
    for h, x in xa.items():
        other = xb.get(h)
        if other is None:
            yield Difference("removed", f"xorb:{h}")
            continue
        for attr in ("num_chunks", "num_bytes_in_xorb", "num_bytes_on_disk", "flags"):
            va, vb = getattr(x, attr, None), getattr(other, attr, None)
            if va != vb:
                yield Difference("field", f"xorb:{h}.{attr}", va, vb)
    for h in xb:
        if h not in xa:
            yield Difference("added", f"xorb:{h}")


def _column_hash(shard: Any, column: str, batch: int = 1000) -> str:
    """SHA-256 of a top-level column's values, read ``batch`` rows at a time."""
    from .render import to_json

    h = hashlib.sha256()
    total = int(shard.record_count)
    for start in range(0, total, batch):
        for row in shard.rows(start, min(total, start + batch), columns=[column]):
            h.update(to_json(row[column], indent=None).encode())
            h.update(b"\n")
    return h.hexdigest()


def _amudai(a: Any, b: Any) -> Iterator[Difference]:
    """Top-level columns (nested fields are inside them; the schema is a summary field)."""
    top_a = [n for n in _each(a, a.keys()) if "." not in n]
    top_b = [n for n in _each(b, b.keys()) if "." not in n]
    for column in top_a:
        if column not in top_b:
            yield Difference("removed", f"column {column}")
            continue
        with _blame(a):
            ha = _column_hash(a, column)
        with _blame(b):
            hb = _column_hash(b, column)
        if ha != hb:
            yield Difference("changed", f"column {column}", ha, hb)
    for column in top_b:
        if column not in top_a:
            yield Difference("added", f"column {column}")


def _mosaic(a: Any, b: Any) -> Iterator[Difference]:
    """Objects by the first index kind both files have (every object of a conflicting key)."""
    common = [k for k in a.index_names if k in b.index_names]
    if not common:
        return
    kind = common[0]
    prefix = f"{kind}:"
    for key in a.keys(kind):
        try:
            vb = b.get_all(key, index=kind)
        except EntryNotFoundError:
            yield Difference("removed", prefix + key.hex())
            continue
        ha = value_hash(b"".join(a.get_all(key, index=kind)))
        hb = value_hash(b"".join(vb))
        if ha != hb:
            yield Difference("changed", prefix + key.hex(), ha, hb)
    for key in b.keys(kind):
        if a.get(key, index=kind) is None:
            yield Difference("added", prefix + key.hex())


def diff(a: Any, b: Any) -> Iterator[Difference]:
    """Every difference between readers ``a`` and ``b`` (see the module doc), as found.

    Raises:
        ShardkitError: The two are not of the same format.
    """
    fa, fb = getattr(a, "format_id", None), getattr(b, "format_id", None)
    if fa != fb:
        raise ShardkitError(f"{a.source.name} is {fa} and {b.source.name} is {fb}: diff "
                            "compares two shards of the same format")
    yield from _fields(a, b)
    if fa == "neuroglancer" and hasattr(a, "store"):
        yield from _neuroglancer(a, b)
    elif fa == "mdb":
        yield from _mdb(a, b)
    elif fa == "amudai":
        yield from _amudai(a, b)
    elif fa == "mosaic":
        yield from _mosaic(a, b)
    elif getattr(a, "sorted_keys", fa in ("zss", "zs")):
        yield from _merged(a, b, a.format_key)
    else:
        yield from _mapping(a, b, a.format_key)
