"""The reading commands: ``info``, ``ls``, ``get``, ``dump``, ``map`` (and ``formats``).

Each opens FILE (a shard, a dataset folder or an fsspec URL) with the format detected or
given by ``--format``, and prints what the reader gives.
"""

from __future__ import annotations

import argparse
import functools
import inspect
import json
import sys
from collections.abc import Callable
from typing import Any

from ..errors import DeletedEntryError, EntryNotFoundError, ShardkitError
from ..render import to_json, to_text
from .common import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_PROBLEMS,
    base_parser,
    call_with,
    check_out,
    io_options,
    load_spec,
    print_out,
    run_guarded,
)

__all__ = ["add_parser", "open_and_run"]


def cmd_info(args: argparse.Namespace, reader: Any) -> int:
    """``shardkit info``: the reader's summary as ``key: value`` lines (or as JSON)."""
    if "count_chunks" in inspect.signature(reader.summary).parameters:
        # Neuroglancer: --counts scans every shard file (a URL's shards are not counted else)
        summary = reader.summary(count_chunks=True if args.counts else None)
        if isinstance(summary.get("counts"), str):
            summary["counts"] = "not counted (--counts scans every shard file)"
    else:
        summary = call_with(reader.summary, "info", reader, counts=args.counts or None)
    print_out(args, "" if args.json else to_text(summary), summary)
    # a dataset's shard files that could not be read: shown above, each named once here
    unreadable = [*summary.get("unreadable_shards", ()),
                  *(u for s in summary.get("scales") or () if isinstance(s, dict)
                    for u in s.get("unreadable_shards", ()))]
    for bad in unreadable:
        sys.stderr.write(f"shardkit: error: {bad['shard']}: {bad['error']}\n")
    return EXIT_ERROR if unreadable else EXIT_OK


def _image_scale(reader: Any, key: str | None, what: str) -> Any:
    """An image dataset's scale by key (or index); a one-line error for anything else."""
    scales = getattr(reader, "scales", None)
    if not isinstance(scales, dict) or not hasattr(reader, "cutout"):
        raise ShardkitError(f"{what}: {reader.source.name} is not a Neuroglancer image dataset "
                            "(it has no scales)")
    if key is None:
        return next(iter(scales.values()))
    if key in scales:
        return scales[key]
    if key.isdigit() and int(key) < len(scales):
        return list(scales.values())[int(key)]
    raise ShardkitError(f"{what}: no sharded scale {key!r} in {reader.source.name}; scales: "
                        f"{', '.join(scales)}")


def _ls_scale(args: argparse.Namespace, reader: Any) -> int:
    """``ls --scale KEY [--coords]``: a scale's chunk ids, sorted, with grid positions."""
    import numpy as np

    scale = _image_scale(reader, args.scale, "ls")
    ids = np.fromiter(scale.keys(), dtype=np.uint64)  # 8 bytes a chunk, to sort them
    ids.sort()
    if args.json:
        rows: list[Any] = ids.tolist() if not args.coords else [
            {"id": i, "position": list(scale.position(i))} for i in ids.tolist()]
        sys.stdout.write(to_json(rows) + "\n")
        return EXIT_OK
    write = sys.stdout.write
    for i in ids.tolist():
        write(f"{i}\t{','.join(map(str, scale.position(i)))}\n" if args.coords else f"{i}\n")
    return EXIT_OK


def _ls_mdb(args: argparse.Namespace, reader: Any) -> int:
    """``ls --xorbs`` / ``ls --chunks``: an MDB shard's xorbs, or every chunk, streamed."""
    if reader.format_id != "mdb":
        raise ShardkitError(f"ls: --xorbs and --chunks are for MDB shards, not "
                            f"{reader.format_name}")
    write = sys.stdout.write
    rows: list[dict[str, Any]] = []
    for x in reader.xorbs:
        if args.xorbs:
            row = {"hash": str(x.hash), "num_chunks": x.num_chunks,
                   "num_bytes_in_xorb": x.num_bytes_in_xorb,
                   "num_bytes_on_disk": x.num_bytes_on_disk}
            if args.json:
                rows.append(row)
            else:
                write(f"{row['hash']}\t{x.num_chunks} chunks\t{x.num_bytes_in_xorb} bytes\n")
            continue
        for i, c in enumerate(x.chunks):
            d = c.to_dict()
            if args.json:
                rows.append({"hash": d["hash"], "xorb": str(x.hash), "index": i,
                             "offset": d["offset"], "size": d["size"],
                             "flag_names": d["flag_names"]})
            else:
                write(f"{d['hash']}\t{x.hash}\t{i}\t{d['size']}"
                      + (f"\t{','.join(d['flag_names'])}" if d["flag_names"] else "") + "\n")
    if args.json:
        write(to_json(rows) + "\n")
    return EXIT_OK


def cmd_ls(args: argparse.Namespace, reader: Any) -> int:
    """``shardkit ls``: every key (or record, or chunk id), one per line."""
    if args.scale is not None or args.coords:
        return _ls_scale(args, reader)
    if args.xorbs or args.chunks:
        if args.xorbs and args.chunks:
            raise ShardkitError("ls: give --xorbs or --chunks, not both")
        return _ls_mdb(args, reader)
    keys = call_with(reader.keys, "ls", reader, prefix=_arg_bytes(args.prefix),
                     start=_arg_bytes(args.start), stop=_arg_bytes(args.stop))
    fmt = reader.format_key
    if args.hex:
        if "hex" not in inspect.signature(fmt).parameters:
            raise ShardkitError(f"ls: --hex not supported for {reader.format_name}")
        fmt = functools.partial(fmt, hex=True)
    if args.json:
        # records are arbitrary bytes: JSON gets their exact bytes as hex (lossless), the
        # rule `dump` follows for all bytes; the text form stays escaped text
        if "hex" in inspect.signature(reader.format_key).parameters:
            fmt = functools.partial(reader.format_key, hex=True)
        sys.stdout.write(to_json([fmt(k) for k in keys]) + "\n")
        return EXIT_OK
    write = sys.stdout.write
    for key in keys:
        write(fmt(key) + "\n")
    return EXIT_OK


def _arg_bytes(text: str | None) -> bytes | None:
    """A --prefix/--start/--stop value: ``hex:...`` for hex, otherwise UTF-8 text."""
    if text is None:
        return None
    if text.startswith("hex:"):
        try:
            return bytes.fromhex(text[4:])
        except ValueError as exc:
            raise ShardkitError(f"not hex: {text!r}") from exc
    return text.encode("utf-8")


def cmd_get(args: argparse.Namespace, reader: Any) -> int:
    """``shardkit get``: one value, raw to stdout or ``-o``; structured values as JSON."""
    try:
        try:
            key = reader.parse_key(args.key)
        except EntryNotFoundError:
            raise
        except ShardkitError as exc:  # a key this format cannot have: named with the file
            if not exc.message.startswith(args.file):
                exc.message = f"{args.file}: {exc.message}"
            raise
        try:
            value = reader[key]
        except EntryNotFoundError:
            value = _mdb_other(reader, key)  # an MDB xorb or chunk hash
            if value is None:
                raise
    except EntryNotFoundError as exc:
        message = _not_found(exc, reader)
        if args.json:
            sys.stdout.write(to_json({"error": type(exc).__name__, "message": message,
                                      "key": args.key}) + "\n")
        sys.stderr.write(f"shardkit: {message}\n")
        return EXIT_PROBLEMS
    if not isinstance(value, (bytes, bytearray, memoryview)):
        # structured values (a file's reconstruction, a column's values) print as JSON
        text = to_json(value) + "\n"
        if args.output is not None:
            with open(args.output, "w", encoding="utf-8") as fh:
                fh.write(text)
            if args.json:
                sys.stdout.write(to_json({"key": args.key, "written_to": args.output}) + "\n")
        else:
            sys.stdout.write(text)
        return EXIT_OK
    return _write_value(args, reader, key, value)


def _write_value(args: argparse.Namespace, reader: Any, key: Any,
                 value: bytes | bytearray | memoryview) -> int:
    """``shardkit get`` of a value in bytes: raw to stdout or ``-o``; with ``--json`` its
    key, size and SHA-256 (and the bytes in hex when not written to a file)."""
    value = bytes(value)
    if args.json:
        import hashlib

        # bytes in JSON are hex everywhere (ls --json, dump, get --json): see conventions.md
        shown = reader.format_key(key)
        if "hex" in inspect.signature(reader.format_key).parameters:
            shown = reader.format_key(key, hex=True)
        data: dict[str, Any] = {"key": shown, "size": len(value),
                                "sha256": hashlib.sha256(value).hexdigest()}
        if args.output is None:
            data["value_hex"] = value.hex()
        else:
            data["written_to"] = args.output
    if args.output is not None:
        with open(args.output, "wb") as fh:
            fh.write(value)
    elif not args.json:
        sys.stdout.buffer.write(value)
        sys.stdout.flush()
    if args.json:
        print_out(args, "", data)
    return EXIT_OK


def _mdb_other(reader: Any, key: Any) -> dict[str, Any] | None:
    """What an MDB shard holds under a hash that is not a file's: a xorb, or a chunk."""
    if getattr(reader, "format_id", None) != "mdb":
        return None
    xorb = reader.xorb(key)
    if xorb is not None:
        return {"xorb": xorb.to_dict()}
    ref = reader.find_chunk(key)
    if ref is None:
        return None
    return {"chunk": ref.chunk.to_dict(), "xorb_hash": str(ref.xorb_hash),
            "xorb_record_index": ref.xorb_record_index, "chunk_index": ref.chunk_index}


def _not_found(exc: EntryNotFoundError, reader: Any) -> str:
    """The message for an absent key. Keys that are arbitrary bytes shown as escaped text (ZSS
    records) are shown once, in that form, never as a Python repr of it."""
    key = exc.key
    if isinstance(key, bytes) and not isinstance(exc, DeletedEntryError) \
            and "hex" in inspect.signature(reader.format_key).parameters:
        return f"not found: {reader.format_key(key)}"
    if getattr(reader, "format_id", None) == "mdb":
        return f"no file, xorb or chunk {reader.format_key(key)} in this shard"
    return str(exc)


def _bbox(text: str) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """``--bbox x0,y0,z0,x1,y1,z1``: six whole numbers."""
    try:
        v = [int(p) for p in text.replace(" ", "").split(",")]
    except ValueError:
        v = []
    if len(v) != 6:
        raise argparse.ArgumentTypeError(f"not x0,y0,z0,x1,y1,z1 (six whole numbers): {text!r}")
    return (v[0], v[1], v[2]), (v[3], v[4], v[5])


def cmd_cutout(args: argparse.Namespace, reader: Any) -> int:
    """``shardkit cutout``: a box of voxels of one scale saved as ``.npy`` (``ds.cutout``)."""
    import numpy as np

    from ..writers._atomic import atomic_file

    scale = _image_scale(reader, args.scale, "cutout")
    check_out(args.output)
    try:
        array = reader.cutout(scale.key, args.bbox, fill_missing=args.fill_missing)
    except EntryNotFoundError as exc:  # the library's option, as the command spells it
        raise ShardkitError(str(exc).replace("fill_missing=True", "--fill-missing")) from exc
    with atomic_file(args.output) as fh:
        np.save(fh, array, allow_pickle=False)
    data = {"output": args.output, "scale": scale.key, "bbox": [list(c) for c in args.bbox],
            "shape": list(array.shape), "dtype": str(array.dtype),
            "bytes": int(array.nbytes)}
    print_out(args, f"{args.output}: scale {scale.key}, shape {tuple(array.shape)} (x, y, z, "
                    f"channels), {array.dtype}, {array.nbytes} bytes", data)
    return EXIT_OK


def _cell(value: Any, width: int = 40) -> str:
    """A table cell: text as it is, anything else as its JSON; cut at ``width``."""
    text = value if isinstance(value, str) else to_json(value, indent=None)
    text = text.replace("\t", " ").replace("\n", " ")
    return text if len(text) <= width else text[: width - 3] + "..."


def cmd_head(args: argparse.Namespace, reader: Any) -> int:
    """``shardkit head``: the first rows of a table (Amudai), as a table or JSON lines."""
    rows_of = getattr(reader, "rows", None)
    if rows_of is None:
        raise ShardkitError(f"head: {reader.source.name} is a {reader.format_name}, not a "
                            "table (head shows the rows of an Amudai shard)")
    if args.n < 0:
        raise ShardkitError(f"head: -n must be 0 or more, not {args.n}")
    columns = None
    if args.columns is not None:
        # each column once, in the order first given (the table and --json then agree)
        columns = list(dict.fromkeys(c.strip() for c in args.columns.split(",") if c.strip()))
        if not columns:
            raise ShardkitError("head: --columns names no column")
        known = {n.split(".")[0] for n in reader.keys()}
        unknown = [c for c in columns if c not in known]
        if unknown:
            raise ShardkitError(f"head: no top-level column {unknown[0]!r}; columns: "
                                f"{', '.join(sorted(known))}")
    total = min(args.n, int(reader.record_count))
    write = sys.stdout.write
    header = False
    for start in range(0, total, 1000):  # a thousand rows at a time: bounded memory
        rows = rows_of(start, min(total, start + 1000), columns=columns)
        if args.json:
            for row in rows:
                write(to_json(row, indent=None) + "\n")
            continue
        names = columns or (list(rows[0]) if rows else [])
        cells = [[_cell(r.get(c)) for c in names] for r in rows]
        widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(names)]
        if not header:
            write("  ".join(c.ljust(w) for c, w in zip(names, widths, strict=True)).rstrip()
                  + "\n")
            header = True
        for row in cells:
            write("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip()
                  + "\n")
    return EXIT_OK


def cmd_dump(args: argparse.Namespace, reader: Any) -> int:
    """``shardkit dump``: the whole object tree as JSON."""
    if args.values:
        return _dump_values(args, reader)
    sys.stdout.write(to_json(reader.to_dict(), indent=2 if not args.compact else None) + "\n")
    return EXIT_OK


def _dump_values(args: argparse.Namespace, reader: Any) -> int:
    """``dump --values`` (SWH): the tree with each entry's value in hex, entries in the order
    of their objects in the file (what ``create --input-format dump`` writes back in the same
    order); the values are read and written one at a time."""
    if getattr(reader, "format_id", None) != "swh":
        raise ShardkitError(f"dump --values: for SWH shards, not {reader.format_name} (ZSS and "
                            "ZS records are their own values: shardkit ls --json)")
    tree = reader.to_dict()
    entries = sorted(tree["entries"], key=lambda e: e["offset"])
    mark = "\x00entries\x00"
    tree["entries"] = mark
    indent = None if args.compact else 2
    head, tail = to_json(tree, indent=indent).split(json.dumps(mark), 1)
    write = sys.stdout.write
    write(head + "[")
    sep = ", " if indent is None else ",\n    "
    for i, entry in enumerate(entries):
        value = bytes(reader[bytes.fromhex(entry["key"])])
        write(("" if indent is None else "\n    ") if not i else sep)
        write(json.dumps({**entry, "value": value.hex()}))
    write(("" if indent is None or not entries else "\n  ") + "]" + tail + "\n")
    return EXIT_OK


def cmd_map(args: argparse.Namespace, reader: Any) -> int:
    """``shardkit map``: every section of the file with start, end and size."""
    sections = reader.sections()
    rows = [f"{'start':>12} {'end':>12} {'size':>12}  name"]
    rows += [f"{s.start:>12} {s.end:>12} {s.size:>12}  {s.name}" + (f"  ({s.note})" if s.note
                                                                      else "")
             for s in sections]
    print_out(args, "\n".join(rows), [s.to_dict() for s in sections])
    return EXIT_OK


def cmd_formats(args: argparse.Namespace) -> int:
    """``shardkit formats``: the formats shardkit knows and how each is recognised."""
    import textwrap

    from ..formats import FORMATS

    rows = [{"id": f.id, "name": f.name, "readable": f.readable,
             "detected_by": f.describe} for f in FORMATS.values()]
    print_out(args, "\n".join(f"{r['id']:<14} {r['name']}"
                              + ("" if r["readable"] else "  (detected only)") + "\n"
                              + textwrap.fill(f"detected by: {r['detected_by']}", 92,
                                              initial_indent=" " * 15,
                                              subsequent_indent=" " * 17) for r in rows),
              rows)
    return EXIT_OK


def open_and_run(args: argparse.Namespace,
                 handler: Callable[[argparse.Namespace, Any], int]) -> int:
    """Open ``args.file`` (``--format``, ``--spec``, the I/O options) and run ``handler`` on
    the reader, with the command line's error handling."""
    from ..formats import open_reader

    def run() -> int:
        options: dict[str, Any] = {}
        if args.spec is not None:
            options["spec"] = load_spec(args.spec)
        with open_reader(args.file, args.format, io_options=io_options(args),
                         **options) as reader:
            index = getattr(args, "index", None)
            if index is not None:
                if getattr(reader, "format_id", None) != "mosaic":
                    raise ShardkitError("--index: only MOSAIC files have several indexes")
                reader.index(index)  # refuses an index the file does not have
                reader.default_index = index
            return handler(args, reader)

    return run_guarded(args, run)


_EPILOG = "exit codes: 0 ok, 2 usage error or a file that cannot be read"
_EPILOGS = {
    "get": "exit codes: 0 ok, 1 no such key (MDB: no such file, xorb or chunk), 2 usage error "
           "or a file that cannot be read",
    "info": "exit codes: 0 ok, 2 usage error or a file that cannot be read (a dataset with "
            "unreadable shard files: what can be read is shown, each bad file named)",
    "cutout": "exit codes: 0 ok, 2 usage error, a box outside the scale, a chunk not stored "
              "(without --fill-missing) or a file that cannot be read",
}

COMMANDS: dict[str, tuple[Callable[[argparse.Namespace, Any], int], str]] = {
    "info": (cmd_info, "summary: format, header, counts"),
    "ls": (cmd_ls, "list keys, one per line"),
    "get": (cmd_get, "write one value to stdout (or -o FILE)"),
    "dump": (cmd_dump, "the whole object tree as JSON"),
    "map": (cmd_map, "byte layout: every section with start, end and size"),
    "cutout": (cmd_cutout, "Neuroglancer: a box of voxels of one scale saved as .npy"),
    "head": (cmd_head, "Amudai: the first rows, as a table (or JSON lines)"),
}


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """Register ``info``, ``ls``, ``get``, ``dump``, ``map`` and ``formats``."""
    for name, (handler, help_text) in COMMANDS.items():
        p = sub.add_parser(name, parents=[common], help=help_text, description=help_text,
                           epilog=_EPILOGS.get(name, _EPILOG))
        p.set_defaults(subparser=p, run=functools.partial(open_and_run, handler=handler))
        p.add_argument("file", metavar="FILE", help="shard file, dataset folder or URL")
        if name == "info":
            p.add_argument("--counts", action="store_true",
                           help="also counts that need a full scan: ZSS and ZS records and blocks; "
                                "SWH live/deleted/unused entries (by default for local SWH "
                                "files of modest size); Neuroglancer shard files and chunks "
                                "(by default for a local dataset only)")
        if name == "ls":
            p.add_argument("--hex", action="store_true", help="print keys as hex (ZSS, ZS)")
            for opt, what in (("prefix", "records starting with P"),
                              ("start", "records >= P"), ("stop", "records < P")):
                p.add_argument(f"--{opt}", metavar="P",
                               help=f"only {what} (ZSS, ZS; text, or hex:... for bytes)")
            p.add_argument("--scale", metavar="KEY",
                           help="Neuroglancer image dataset: the chunk ids of this scale (key "
                                "or index), sorted")
            p.add_argument("--xorbs", action="store_true",
                           help="MDB: the xorbs (hash, chunks, bytes) instead of the files")
            p.add_argument("--chunks", action="store_true",
                           help="MDB: every chunk (hash, xorb, index, size, flags)")
            p.add_argument("--coords", action="store_true",
                           help="Neuroglancer image dataset: also each chunk's grid position "
                                "x,y,z (of the first scale without --scale)")
        if name == "head":
            p.add_argument("-n", type=int, default=10, metavar="N",
                           help="how many rows (default 10)")
            p.add_argument("--columns", metavar="a,b",
                           help="only these top-level columns, in this order")
        if name == "cutout":
            p.add_argument("--scale", metavar="KEY", required=True,
                           help="the scale: its key (8_8_40) or index (0)")
            p.add_argument("--bbox", metavar="x0,y0,z0,x1,y1,z1", type=_bbox, required=True,
                           help="the box, half-open, in absolute voxel coordinates "
                                "(voxel_offset included)")
            p.add_argument("-o", "--output", metavar="OUT.npy", required=True,
                           help="where to save the array (x, y, z, channels), numpy .npy")
            p.add_argument("--fill-missing", action="store_true",
                           help="zeros for chunks that are not stored (default: an error)")
        if name == "get":
            p.add_argument("key", metavar="KEY",
                           help="the key: hex (SWH), display hex (MDB: a file, xorb or chunk "
                                "hash), escaped text or hex:... (ZSS, ZS), a decimal chunk id "
                                "(Neuroglancer), a column path (Amudai)")
            p.add_argument("-o", "--output", metavar="OUT", help="write the value to OUT")
        if name == "dump":
            p.add_argument("--compact", action="store_true", help="one-line JSON")
            p.add_argument("--values", action="store_true",
                           help="SWH: each entry's value too, in hex, entries in file order "
                                "(what create --input-format dump takes)")
    p = sub.add_parser("formats", parents=[base_parser()], help="list the formats shardkit knows",
                       description="list the formats shardkit knows and how it recognises each")
    p.set_defaults(subparser=p, run=cmd_formats)
