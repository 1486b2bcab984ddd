"""The Kaitai Struct schemas shipped with shardkit (the library of ``shardkit schema``).

Every layout shardkit reads is declared in a ``.ksy`` file of the repository's flat ``schemas/``
folder; the wheel ships the same files as the package ``shardkit.schemas``. To look at a shard
in the Kaitai Web IDE (https://ide.kaitai.io) a user uploads one format's schema together with
the schemas it imports: the IDE stores uploads under their base names and resolves a relative
import by base name among them, so the files are written side by side, flat.

Which files a schema needs comes from ``generated/schemas.json``, written by ``make generate``
(``tools/ksc.js``) from the imports the compiler actually resolved.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import ShardkitError
from .writers._atomic import write_bytes_atomic

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

__all__ = [
    "SCHEMA_OF_FORMAT",
    "SchemaInfo",
    "resolve",
    "schema_bytes",
    "schemas",
    "write_upload_files",
]

WEB_IDE = "https://ide.kaitai.io"

# `--format` ids (shardkit.formats.FORMATS) -> the schema of that format
SCHEMA_OF_FORMAT = {
    "swh": "swh_read_shard",
    "mdb": "xet_mdb_shard",
    "zss": "zss",
    "zs": "zs",
    "neuroglancer": "neuroglancer_uint64_sharded",
    "amudai": "amudai_shard",
    "mosaic": "mosaic",
}


@dataclass(frozen=True)
class SchemaInfo:
    """One shipped schema.

    Attributes:
        id: ``meta/id``, also the file's base name without ``.ksy``.
        title: ``meta/title``.
        format: The ``--format`` id it declares, or ``None`` for a shared type.
        upload: The files to upload to the Web IDE for it: the schema first, then every schema
            it imports (directly or not), by base name.
    """

    id: str
    title: str
    format: str | None
    upload: tuple[str, ...]

    @property
    def filename(self) -> str:
        return f"{self.id}.ksy"

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "file": self.filename, "title": self.title,
                "format": self.format, "upload": list(self.upload)}


def _schema_dir() -> Traversable:
    """The shipped ``.ksy`` files: the package ``shardkit.schemas`` (the repository's
    ``schemas/`` folder), or that folder itself in a source tree installed before the package
    existed."""
    from importlib import resources  # here: every CLI start builds this module's parser

    try:
        folder = resources.files("shardkit.schemas")
    except ModuleNotFoundError:
        folder = None
    if folder is not None and folder.joinpath("zss.ksy").is_file():
        return folder
    source_tree = Path(__file__).resolve().parents[2] / "schemas"
    if source_tree.is_dir():
        return source_tree
    raise ShardkitError("the .ksy schemas are missing from this installation of shardkit")


@cache
def schemas() -> dict[str, SchemaInfo]:
    """Every shipped schema by id: the format schemas, then the shared types they import."""
    from importlib import resources

    try:
        text = resources.files("shardkit.generated").joinpath("schemas.json").read_text("utf-8")
        index = json.loads(text)
    except (OSError, ValueError) as exc:
        raise ShardkitError(f"cannot read the schema index (generated/schemas.json): {exc}") \
            from exc
    format_of = {schema: fmt for fmt, schema in SCHEMA_OF_FORMAT.items()}
    infos = [SchemaInfo(id=sid, title=entry.get("title", ""), format=format_of.get(sid),
                        upload=tuple(entry["upload"]))
             for sid, entry in index.items()]
    infos.sort(key=lambda s: (s.format is None, s.format or s.id))
    return {info.id: info for info in infos}


def resolve(name: str) -> SchemaInfo:
    """The schema named by a ``--format`` id (``swh``), a schema id or a ``.ksy`` file name.

    Raises:
        ShardkitError: No such schema; the message lists the known names.
    """
    known = schemas()
    sid = SCHEMA_OF_FORMAT.get(name, name.removesuffix(".ksy"))
    if sid not in known:
        names = ", ".join([*SCHEMA_OF_FORMAT, *(s for s in known if s not in
                                                SCHEMA_OF_FORMAT.values())])
        raise ShardkitError(f"no schema {name!r}; known: {names}")
    return known[sid]


def schema_bytes(filename: str) -> bytes:
    """The bytes of one shipped ``.ksy`` file, by base name."""
    if Path(filename).name != filename or not filename.endswith(".ksy"):
        raise ShardkitError(f"not a schema file name: {filename!r}")
    item = _schema_dir().joinpath(filename)
    if not item.is_file():
        raise ShardkitError(f"schema file {filename} is missing from this installation")
    return item.read_bytes()


def write_upload_files(name: str, outdir: str | os.PathLike[str]) -> list[Path]:
    """Write the files to upload to the Web IDE for ``name`` into ``outdir``, flat.

    Each file is written under a temporary name and renamed, so no partial file is left
    under its final name. Returns the written paths, the schema first.
    """
    info = resolve(name)
    out = Path(outdir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ShardkitError(f"cannot create {out}: {exc.strerror or exc}") from exc
    written = []
    for filename in info.upload:
        data = schema_bytes(filename)
        target = out / filename
        write_bytes_atomic(target, data)  # temporary name, then rename
        written.append(target)
    return written


def _hint(info: SchemaInfo) -> str:
    files = " and ".join(info.upload) if len(info.upload) <= 2 else ", ".join(info.upload)
    return (f"next: open {WEB_IDE}, upload {files} with the upload button, open "
            f"{info.filename} from the file list, then upload a shard and select it")
