"""``shardkit create --format mdb OUT DUMP.json``: a Xet MDB shard from ``shardkit dump --json``.

The input is the JSON object ``shardkit dump`` prints for an MDB shard (or a hand-written one
with at least ``files`` and ``xorbs``). The shard is laid out by
:func:`shardkit.writers.xet_mdb.build_mdb` with what the dump says of its form: the footer
(``null``: an upload body), which lookup tables it has and their chunk-table order, the HMAC
key, timestamps, totals and reserved bytes. A dump of a shard our writer reproduces gives the
same bytes back; where it cannot (a record field the dump does not carry), the new shard is
still written and the parts that differ are named (``differs`` in ``--json``). A dump edited by
hand (a file or xorb deleted) keeps its form: the footer totals and the chunk table order,
which described the shard before the edit, are computed again and named (``recomputed``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

from ..errors import ShardkitError
from .common import EXIT_OK, confirm, json_object, print_out

__all__ = ["run"]

_TAKES: set[str] = set()
_U64 = (1 << 64) - 1
_U32 = (1 << 32) - 1


def _field(obj: Any, key: str, where: str) -> Any:
    if not isinstance(obj, dict):
        raise ShardkitError(f"{where}: must be a JSON object, not {type(obj).__name__}")
    if key not in obj:
        raise ShardkitError(f"{where}.{key}: missing")
    return obj[key]


def _int(value: Any, where: str, top: int = _U64) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= top:
        raise ShardkitError(f"{where}: must be a whole number from 0 to {top}, not {value!r}")
    return value


def _hash(value: Any, where: str) -> Any:
    from ..formats.xet_mdb import XetHash

    if not isinstance(value, str) or len(value) != 64:
        raise ShardkitError(f"{where}: must be a hash of 64 hex digits, not {value!r:.80}")
    try:
        return XetHash(value)
    except ShardkitError as exc:
        raise ShardkitError(f"{where}: {exc.message}") from exc


def _raw_hex(value: Any, where: str, size: int) -> bytes:
    try:
        raw = bytes.fromhex(value) if isinstance(value, str) else None
    except ValueError:
        raw = None
    if raw is None or len(raw) != size:
        raise ShardkitError(f"{where}: must be {size} bytes as {2 * size} hex digits")
    return raw


def _items(value: Any, where: str) -> Iterator[tuple[str, Any]]:
    """``(where[i], item)`` for each item of the JSON list ``value``."""
    if not isinstance(value, list):
        raise ShardkitError(f"{where}: must be a JSON list")
    return ((f"{where}[{i}]", item) for i, item in enumerate(value))


def _files(items: Any) -> list[SimpleNamespace]:
    out = []
    for w, f in _items(items, "files"):
        terms = _items(_field(f, "terms", w), f"{w}.terms")
        ver = _items(f.get("verification_hashes") or [], f"{w}.verification_hashes")
        sha = f.get("sha256")
        flags = f.get("flags")
        out.append(SimpleNamespace(
            hash=_hash(_field(f, "hash", w), f"{w}.hash"),
            flags=None if flags is None else _int(flags, f"{w}.flags", _U32),
            reserved=_int(f.get("reserved", 0), f"{w}.reserved"),
            terms=[SimpleNamespace(
                xorb_hash=_hash(_field(t, "xorb_hash", tw), f"{tw}.xorb_hash"),
                flags=_int(t.get("flags", 0), f"{tw}.flags", _U32),
                unpacked_bytes=_int(_field(t, "unpacked_bytes", tw), f"{tw}.unpacked_bytes",
                                    _U32),
                chunk_start=_int(_field(t, "chunk_start", tw), f"{tw}.chunk_start", _U32),
                chunk_end=_int(_field(t, "chunk_end", tw), f"{tw}.chunk_end", _U32))
                for tw, t in terms],
            verification_hashes=[_hash(v, vw) for vw, v in ver],
            sha256=None if sha is None else _hash(sha, f"{w}.sha256")))
    return out


def _xorbs(items: Any) -> list[SimpleNamespace]:
    out = []
    for w, x in _items(items, "xorbs"):
        chunks = _items(_field(x, "chunks", w), f"{w}.chunks")
        made = []
        for cw, c in chunks:
            one = SimpleNamespace(hash=_hash(_field(c, "hash", cw), f"{cw}.hash"),
                                  size=_int(_field(c, "size", cw), f"{cw}.size", _U32),
                                  flags=_int(c.get("flags", 0), f"{cw}.flags", _U32))
            if "offset" in c:
                one.offset = _int(c["offset"], f"{cw}.offset", _U32)
            made.append(one)
        xorb = SimpleNamespace(hash=_hash(_field(x, "hash", w), f"{w}.hash"),
                               flags=_int(x.get("flags", 0), f"{w}.flags", _U32), chunks=made)
        if "num_bytes_in_xorb" in x:
            xorb.num_bytes_in_xorb = _int(x["num_bytes_in_xorb"], f"{w}.num_bytes_in_xorb",
                                          _U32)
        xorb.num_bytes_on_disk = _int(x.get("num_bytes_on_disk", 0), f"{w}.num_bytes_on_disk",
                                      _U32)
        out.append(xorb)
    return out


def layout_options(dump: dict[str, Any]) -> dict[str, Any]:
    """``build_mdb`` options for the form, tables and footer fields a dump describes."""
    kwargs: dict[str, Any] = {"sort": "footer" in dump or "header" in dump}
    header = dump.get("header")
    if isinstance(header, dict) and "footer_size" in header:
        kwargs["header_footer_size"] = _int(header["footer_size"], "header.footer_size")
    if "footer" not in dump:
        return kwargs  # a hand-written input: a full shard with every table, sorted
    kwargs["sort"] = False  # a dump lists records in file order
    f = dump["footer"]
    if f is None:
        kwargs["form"] = "upload"
        return kwargs
    if not isinstance(f, dict):
        raise ShardkitError("footer: must be a JSON object or null")
    counts = {name: _int(f.get(f"{name}_lookup_num_entry", 0), f"footer.{name}_lookup_num_entry")
              for name in ("file", "xorb", "chunk")}
    present = {name for name, n in counts.items() if n}
    kwargs.update(
        form="full" if present else "server", tables=present,
        hmac_key=_raw_hex(f.get("hmac_key", "00" * 32), "footer.hmac_key", 32),
        creation_timestamp=_int(f.get("creation_timestamp", 0), "footer.creation_timestamp"),
        key_expiry=_int(f.get("key_expiry", _U64), "footer.key_expiry"),
        footer_reserved=_raw_hex(f.get("reserved", "00" * 48), "footer.reserved", 48),
        zero_table_offsets=not present and f.get("file_lookup_offset") == 0,
    )
    if all(k in f for k in ("stored_bytes_on_disk", "materialized_bytes", "stored_bytes")):
        kwargs["totals"] = (_int(f["stored_bytes_on_disk"], "footer.stored_bytes_on_disk"),
                            _int(f["materialized_bytes"], "footer.materialized_bytes"),
                            _int(f["stored_bytes"], "footer.stored_bytes"))
    chunk_rows = (dump.get("lookup_tables") or {}).get("chunk") or []
    if "chunk" in present and chunk_rows:
        if not isinstance(chunk_rows, list) or not all(
                isinstance(r, list) and len(r) == 3 for r in chunk_rows):
            raise ShardkitError("lookup_tables.chunk: must be a list of [key, xorb, chunk]")
        kwargs["chunk_table"] = [(_int(k, f"lookup_tables.chunk[{i}][0]"),
                                  _int(x, f"lookup_tables.chunk[{i}][1]", _U32),
                                  _int(c, f"lookup_tables.chunk[{i}][2]", _U32))
                                 for i, (k, x, c) in enumerate(chunk_rows)]
    return kwargs


def differences(want: Any, got: Any, path: str = "", out: list[str] | None = None,
                limit: int = 20) -> list[str]:
    """Paths where ``got`` differs from ``want`` (keys ``want`` does not have are ignored)."""
    out = [] if out is None else out
    if len(out) >= limit:
        return out
    if isinstance(want, dict) and isinstance(got, dict):
        for key, value in want.items():
            if key in ("file",):  # the dump's own file name
                continue
            if key not in got:
                out.append(f"{path}.{key}".lstrip("."))
            else:
                differences(value, got[key], f"{path}.{key}", out, limit)
    elif isinstance(want, list) and isinstance(got, list):
        if len(want) != len(got):
            out.append(f"{path.lstrip('.')} ({len(want)} in the dump, {len(got)} written)")
        else:
            for i, (a, b) in enumerate(zip(want, got, strict=True)):
                differences(a, b, f"{path}[{i}]", out, limit)
    elif want != got:
        out.append(f"{path.lstrip('.')} ({json.dumps(want)[:40]} in the dump, "
                   f"{json.dumps(got)[:40]} written)")
    return out


_TOTALS = ("stored_bytes_on_disk", "materialized_bytes", "stored_bytes")


def _recomputed(dump: dict[str, Any], rebuilt: dict[str, Any], derived: list[str]) -> list[str]:
    """What was computed again instead of taken from the dump: ``footer.X (old -> new)``."""
    out = []
    if "totals" in derived:
        was, now = dump.get("footer") or {}, rebuilt.get("footer") or {}
        out += [f"footer.{k} ({was.get(k)} -> {now.get(k)})" for k in _TOTALS
                if was.get(k) != now.get(k)]
    if "chunk_table" in derived:
        was_rows = (dump.get("lookup_tables") or {}).get("chunk")
        now_rows = (rebuilt.get("lookup_tables") or {}).get("chunk")
        if was_rows != now_rows:
            out.append(f"lookup_tables.chunk ({len(was_rows or ())} -> {len(now_rows or ())} "
                       "rows, sorted by key)")
    return out


def _what_to_remove(problem: Any, dump: dict[str, Any]) -> str:
    """For a dump edited by hand: which of its parts to delete to have them computed."""
    if dump.get("footer") is None or problem.check not in ("footer", "totals", "lookup_table",
                                                            "order"):
        return ""  # a record that contradicts another: the problem names its field
    part = "lookup_tables" if problem.check in ("lookup_table", "order") else "footer"
    return (f" (an edited dump: delete its \"{part}\" to have it computed from the files "
            "and xorbs; deleting \"footer\" also writes every lookup table)")


def _load(args: argparse.Namespace) -> dict[str, Any]:
    if len(args.inputs) != 1:
        raise ShardkitError("create --format mdb: give one JSON input (shardkit dump --json "
                            "output; '-' for stdin)")
    name = args.inputs[0]
    if name == "-":
        text = getattr(sys.stdin, "buffer", sys.stdin).read()
    else:
        with open(name, "rb") as fh:
            text = fh.read()
    dump = json_object(text, name, "a JSON object (shardkit dump --json of an MDB shard)")
    if dump.get("format") not in (None, "mdb"):
        raise ShardkitError(f"{name}: a dump of a {dump.get('format')} file, not of an MDB "
                            "shard")
    return dump


def run(args: argparse.Namespace) -> int:
    """Write ``args.shard`` from the dump in ``args.inputs``; returns the exit code."""
    from ..formats.xet_mdb import MdbShard
    from ..sources import BytesSource
    from ..writers._atomic import write_bytes_atomic
    from ..writers.xet_mdb import build_mdb
    from .create import refuse_options

    refuse_options(args, _TAKES)
    dump = _load(args)
    shown = "stdin" if args.inputs[0] == "-" else args.inputs[0]
    try:  # a field of the dump that is not what it should be: named with the input
        files = _files(_field(dump, "files", "input"))
        xorbs = _xorbs(_field(dump, "xorbs", "input"))
        kwargs = layout_options(dump)
    except ShardkitError as exc:
        exc.message = f"{shown}: {exc.message}"
        raise

    def built(options: dict[str, Any]) -> tuple[bytes, list[Any], dict[str, Any]]:
        try:
            data = build_mdb(files, xorbs, **options)
        except ValueError as exc:
            raise ShardkitError(f"create --format mdb: {exc}") from exc
        with MdbShard(BytesSource(data, args.shard)) as shard:  # what was built reads back
            return data, list(shard.verify()), json.loads(json.dumps(shard.to_dict(),
                                                                     default=str))

    data, problems, rebuilt = built(kwargs)
    recomputed: list[str] = []
    derived: list[str] = [k for k in ("totals", "chunk_table") if k in kwargs]
    if problems and derived:
        # an edited dump (a file, xorb or chunk removed): the footer's totals and the chunk
        # table's order it carries describe the shard before the edit; computed again from
        # the files and xorbs it now lists, the rest of its form kept
        again = built({k: v for k, v in kwargs.items() if k not in derived})
        data, problems, rebuilt = again  # its problems, if any, are the edit's own
        recomputed = _recomputed(dump, rebuilt, derived)
    if problems:
        raise ShardkitError(f"create --format mdb: the shard built does not verify: "
                            f"{problems[0]}{_what_to_remove(problems[0], dump)}")
    differs = differences(dump, rebuilt) if "sections" in dump else []
    if os.path.exists(args.shard) and not confirm(args, f"{args.shard} exists: replace it?"):
        print_out(args, "skipped", {"shard": args.shard, "created": False})
        return EXIT_OK
    write_bytes_atomic(args.shard, data)
    out = {"shard": args.shard, "format": "mdb", "created": True, "size": len(data),
           "files": len(files), "xorbs": len(xorbs), "same_as_dump": not differs,
           "differs": differs, "recomputed": recomputed}
    human = f"{args.shard}: {len(files)} files, {len(xorbs)} xorbs ({len(data)} bytes)"
    if recomputed:
        human += ("\nNOTE recomputed from the files and xorbs the dump lists (its values "
                  "described the shard before it was edited): " + ", ".join(recomputed))
    if differs:
        human += ("\nNOTE the dump describes a shard this writer does not lay out the same way; "
                  "it differs in: " + ", ".join(differs))
    print_out(args, human, out)
    return EXIT_OK
