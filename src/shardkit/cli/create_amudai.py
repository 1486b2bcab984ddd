"""``shardkit create --format amudai OUT INPUT...``: an Amudai shard from NDJSON or CSV files.

What ``amudai-cmd ingest`` of the reference implementation does
(:func:`shardkit.writers.amudai.ingest`): one stripe per INPUT (``.ndjson``, ``.json``,
``.jsonl``, ``.mdjson`` or ``.csv`` with a header row); the schema from ``--schema`` (text such
as ``"(a: long, b: string)"``), ``--schema-file`` (that text, or an Arrow schema in the JSON
``amudai-cmd infer-schema`` writes) or inferred from the first 100 records of each INPUT;
``--layout single`` (default: one file) or ``twolevel`` (the root and one
``.amudai.stripe`` file per stripe beside it). Written under temporary names and renamed when
complete, the root last.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from ..errors import ShardkitError
from .common import EXIT_OK, confirm, print_out, progress_bar

__all__ = ["run"]

_TAKES = {"schema", "schema_file", "layout"}


def _schema(args: argparse.Namespace) -> str | None:
    if args.schema is not None and args.schema_file is not None:
        raise ShardkitError("create --format amudai: give --schema or --schema-file, not both")
    if args.schema_file is None:
        text: str | None = args.schema
        return text
    try:
        return Path(args.schema_file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ShardkitError(f"--schema-file {args.schema_file}: {exc}") from exc


def run(args: argparse.Namespace) -> int:
    """Write ``args.shard`` from ``args.inputs``; returns the exit code."""
    from ..writers.amudai_ingest import ingest
    from .create import refuse_options

    refuse_options(args, _TAKES)
    if "-" in args.inputs:
        raise ShardkitError("create --format amudai: INPUTs are files (.ndjson, .csv...), "
                            "not stdin")
    schema = _schema(args)
    layout = args.layout or "single"
    if os.path.exists(args.shard) and not confirm(args, f"{args.shard} exists: replace it?"):
        print_out(args, "skipped", {"shard": args.shard, "created": False})
        return EXIT_OK
    with progress_bar(args, f"create {args.shard}", " records") as progress:
        paths = ingest(args.shard, args.inputs, schema=schema, layout=layout,
                       progress=progress)
    import shardkit

    with shardkit.open(paths[0], format="amudai") as shard:
        records = shard.record_count
        fields = [f.name for f in shard.schema]
    size = sum(p.stat().st_size for p in paths)
    data = {"shard": args.shard, "format": "amudai", "created": True, "records": records,
            "stripes": len(args.inputs), "layout": layout, "fields": fields,
            "files": [str(p) for p in paths], "size": size}
    print_out(args, f"{args.shard}: {records} records in {len(args.inputs)} stripe(s), "
                    f"{len(fields)} fields ({layout}, {size} bytes)", data)
    return EXIT_OK
