"""Format registry and detection.

Each supported format is a :class:`FormatInfo`: how to recognise its bytes (magic at the start,
and at the end where the format has a footer) and which reader opens it. Formats whose reader is
not in this version are still recognised, so the error says what the file is.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from ..errors import BadMagicError, ShardkitError, UnknownFormatError, UnsupportedVersionError
from ..sources import ByteSource, open_source

__all__ = ["FORMATS", "FormatInfo", "detect", "open_reader"]

_SNIFF = 64


@dataclass(frozen=True)
class FormatInfo:
    """A format shardkit knows.

    Attributes:
        id: Short name used by ``--format`` (``swh``, ``mdb``...).
        name: Human name.
        sniff: ``sniff(head, source)`` is True when the bytes look like this format; ``head``
            holds the first bytes, the source is there for formats that also check the end.
        describe: What ``sniff`` looks for, for error messages.
        opener: Builds the reader from a source; ``None`` while not implemented.
    """

    id: str
    name: str
    sniff: Callable[[bytes, ByteSource], bool]
    describe: str
    reader: str = ""

    @property
    def readable(self) -> bool:
        """Whether this version of shardkit has a reader for the format."""
        module = self.reader.partition(":")[0]
        if not module:
            return False
        # A reader inside a format package (``shardkit.formats.zss.reader``): look for the
        # package only, since finding a submodule imports its package, and so the whole reader.
        parts = module.split(".")
        if parts[:2] == ["shardkit", "formats"] and len(parts) > 3:
            module = ".".join(parts[:3])
        return importlib.util.find_spec(module) is not None

    def opener(self, source: ByteSource, **options: Any) -> Any:
        """Open ``source`` with the format's reader (``module:Class``), passing ``options``."""
        module, _, attr = self.reader.partition(":")
        return getattr(importlib.import_module(module), attr)(source, **options)


def _sniff_amudai(head: bytes, source: ByteSource) -> bool:
    # The header magic decides; a missing or damaged footer is then the reader's to report
    # (a truncated shard should say "truncated", not "unknown format").
    return head.startswith(b"amud")


def _sniff_mosaic(head: bytes, source: ByteSource) -> bool:
    # EBML magic, then the DocType element (42 82, any size VINT) holding "mosaic" among the
    # first bytes (swh-mosaic writes it 17 bytes in)
    at = head.find(b"\x42\x82", 4)
    return head.startswith(b"\x1a\x45\xdf\xa3") and at > 0 and b"mosaic" in head[at:at + 16]


_ZSS_MAGIC = b"ZSS\x1c\x8el\x00\x01"
_ZSS_INCOMPLETE_MAGIC = b"SSZ\x1c\x8el\x00\x01"
_ZS_MAGIC = b"\xabZSfiLe\x01"
_ZS_INCOMPLETE_MAGIC = b"\xabZStoBe\x01"
_MDB_TAG = bytes.fromhex("48465265706f4d6574614461746100556967456a7b815783a5bdd95ccdd14aa9")

FORMATS: dict[str, FormatInfo] = {
    f.id: f
    for f in [
        FormatInfo("swh", "Software Heritage read shard",
                   lambda head, src: head.startswith(b"SWHShard\x00"),
                   'starts with "SWHShard\\0"', "shardkit.formats.swh:SwhShard"),
        FormatInfo("mdb", "Hugging Face Xet MDB shard",
                   lambda head, src: head.startswith(_MDB_TAG),
                   "starts with the 32-byte HFRepoMetaData header tag",
                   "shardkit.formats.xet_mdb:MdbShard"),
        FormatInfo("zss", "ZSS compressed sorted set",
                   lambda head, src: head[:8] in (_ZSS_MAGIC, _ZSS_INCOMPLETE_MAGIC),
                   'starts with "ZSS\\x1c\\x8el\\0\\x01" (or "SSZ..." while incomplete)',
                   "shardkit.formats.zss.reader:ZssFile"),
        FormatInfo("zs", "ZS compressed sorted records",
                   lambda head, src: head[:8] in (_ZS_MAGIC, _ZS_INCOMPLETE_MAGIC),
                   'starts with "\\xabZSfiLe\\x01" (or "\\xabZStoBe\\x01" while unfinished)',
                   "shardkit.formats.zs.reader:ZsFile"),
        FormatInfo("amudai", "Microsoft Amudai shard",
                   _sniff_amudai,
                   'starts with the 8-byte "amud" header (and ends with the same footer)',
                   "shardkit.formats.amudai.reader:AmudaiShard"),
        FormatInfo("mosaic", "Software Heritage MOSAIC file",
                   _sniff_mosaic,
                   'starts with the EBML header 1a 45 df a3 of DocType "mosaic"',
                   "shardkit.formats.mosaic.reader:MosaicFile"),
        FormatInfo("neuroglancer", "Neuroglancer precomputed neuroglancer_uint64_sharded_v1",
                   lambda head, src: False,
                   "a dataset folder or URL holding an `info` file with sharding parameters "
                   "(or a .shard file given with an explicit sharding spec)",
                   "shardkit.formats.neuroglancer:NgShard"),
    ]
}


def detect(source: ByteSource) -> FormatInfo:
    """The format of ``source``, from its first and last bytes.

    Raises:
        UnknownFormatError: Nothing matched: one short line; ``tried`` holds what each format
            starts with.
    """
    head = source.read_range(0, min(_SNIFF, source.size))
    for info in FORMATS.values():
        if info.sniff(head, source):
            return info
    tried = [f"{info.id}: {info.describe}" for info in FORMATS.values()]
    shown = f"first bytes {head[:8].hex(' ')}" if head else "an empty file"
    # one short line: what each format starts with is in `tried` (and `shardkit formats`)
    raise UnknownFormatError(
        f"{source.name}: not a shard shardkit knows ({shown}; it reads "
        f"{', '.join(FORMATS)}: see 'shardkit formats')",
        tried,
        offset=0,
    )


#: Names that are files, never dataset folders: no ``<url>/info`` is asked for them.
_FILE_SUFFIXES = (".shard", ".zss", ".zs", ".mdb", ".amudai", ".stripe", ".bin", ".gz", ".zst",
                  ".mosaic")


def _url_kind(url: str) -> str:
    """``"dataset"`` (ends with ``/``), ``"file"`` (a shard file's name) or ``"unknown"``."""
    path = url.split("?", 1)[0].split("#", 1)[0]
    if path.endswith("/"):
        return "dataset"
    if path.rsplit("/", 1)[-1].lower().endswith(_FILE_SUFFIXES):
        return "file"
    return "unknown"


def _fetch_info(url: str, storage_options: dict[str, Any]) -> bytes | None:
    """The bytes of ``<url>/info``, or None (one request; asked only when nothing else decided).

    The bytes are handed to the dataset reader, so the ``info`` file is read once.
    """
    try:
        import fsspec

        fs, path = fsspec.core.url_to_fs(url, **storage_options)
        return bytes(fs.cat_file(path.rstrip("/") + "/info"))
    except (OSError, ValueError, ImportError):
        return None


def _is_dataset(target: Any, **storage_options: Any) -> bool:
    """True for a local folder that holds an ``info`` file, or a URL ending with ``/``."""
    if not isinstance(target, (str, os.PathLike)):
        return False
    text = os.fspath(target)
    if "://" not in text:
        return os.path.isdir(text) and os.path.isfile(os.path.join(text, "info"))
    return _url_kind(text) == "dataset"


def _open_dataset(target: Any, storage_options: dict[str, Any], info: bytes | None = None,
                  **options: Any) -> Any:
    ng = FORMATS["neuroglancer"]
    if not ng.readable:
        if "://" not in os.fspath(target):
            _check_info(os.path.join(os.fspath(target), "info"))
        raise UnsupportedVersionError(f"{target}: recognised as a {ng.name} dataset, but "
                                      "this version of shardkit cannot read it yet")
    module = importlib.import_module(ng.reader.partition(":")[0])
    if info is not None:
        options["info"] = info
    return module.open_dataset(target, storage_options=storage_options, **options)


def open_reader(target: Any, format: str | None = None,
                storage_options: dict[str, Any] | None = None,
                io_options: dict[str, Any] | None = None, **options: Any) -> Any:
    """Open ``target`` (path, URL, bytes or ByteSource) with the right reader.

    A URL is taken for a Neuroglancer dataset folder when it ends with ``/``; a URL named like
    a shard file (``.shard``, ``.zss``, ``.mdb``...) is a file; any other URL is opened as a
    file first (its first block read tells the size and the magic) and only when no format
    matches is ``<url>/info`` looked for. So a file costs no wasted request.

    Args:
        target: What to open: a shard file, or a Neuroglancer dataset folder or URL.
        format: Force a format id instead of detecting it.
        storage_options: Passed to fsspec for URLs.
        io_options: Remote reads (``block_size``, ``cache``, ``concurrency``, ``retries``,
            ``max_whole_read``): see :class:`~shardkit.remote.RemoteSource`;
            ``max_whole_read`` applies to Neuroglancer datasets too.
        options: Passed to the format's reader (e.g. ``spec=`` for a bare Neuroglancer shard).
    """
    storage_options = storage_options or {}
    if format is not None and format not in FORMATS:
        raise ShardkitError(f"unknown format {format!r}; known: {', '.join(FORMATS)}")
    is_url = isinstance(target, (str, os.PathLike)) and "://" in os.fspath(target)
    kind = _url_kind(os.fspath(target)) if is_url else "file"
    whole = (io_options or {}).get("max_whole_read")
    ds_options = dict(options) if whole is None else {**options, "max_whole_read": whole}
    if format in (None, "neuroglancer") and "spec" not in options and (
            _is_dataset(target, **storage_options)
            or (is_url and format == "neuroglancer" and kind != "file")):
        return _open_dataset(target, storage_options, **ds_options)
    maybe_dataset = is_url and kind == "unknown" and format is None and "spec" not in options
    try:
        source = open_source(target, io_options=io_options, **storage_options)
    except ShardkitError:
        raw = _fetch_info(os.fspath(target), storage_options) if maybe_dataset else None
        if raw is not None:
            return _open_dataset(target, storage_options, raw, **ds_options)
        raise
    try:
        fmt = format
        if fmt is None and "spec" in options:
            fmt = "neuroglancer"  # a bare shard file only makes sense with its spec
        if fmt == "neuroglancer" and "spec" not in options:
            raise ShardkitError(f"{source.name}: a bare Neuroglancer .shard file needs its "
                                "sharding spec (spec=... / --spec INFO_OR_JSON), or open the "
                                "dataset folder that holds the info file")
        try:
            info = FORMATS[fmt] if fmt else detect(source)
        except UnknownFormatError:
            raw = _fetch_info(os.fspath(target), storage_options) if maybe_dataset else None
            if raw is not None:
                source.close()
                return _open_dataset(target, storage_options, raw, **ds_options)
            # a bare Neuroglancer .shard beside its dataset's info file: read it with that spec
            from .neuroglancer.loader import sibling_spec

            found = sibling_spec(target, storage_options)
            if found is None:
                raise
            info, options = FORMATS["neuroglancer"], {**options, **found}
        if not info.readable:
            raise UnsupportedVersionError(f"{source.name}: recognised as a {info.name}, but "
                                          "this version of shardkit cannot read it yet")
        if getattr(source, "read_whole", False):  # its server ignores Range: read whole
            import warnings

            from ..remote import whole_read_notice

            warnings.warn(whole_read_notice(source.name, source.size,
                                            cast(Any, source).max_whole_read),
                          stacklevel=2)
        if format is None:
            return info.opener(source, **options)
        try:
            return info.opener(source, **options)
        except BadMagicError as exc:
            raise _wrong_format(source, info, exc) from exc
    except BaseException:
        source.close()
        raise


def _wrong_format(source: Any, asked: FormatInfo, exc: BadMagicError) -> BadMagicError:
    """A forced format's bad magic, saying which format the file looks like, if any."""
    try:
        other = detect(source)
    except ShardkitError:
        return exc
    if other.id == asked.id:
        return exc
    return BadMagicError(f"{source.name}: not a {asked.name}: the file looks like a "
                         f"{other.name} (format {other.id!r}; leave the format out to detect "
                         "it)", offset=exc.offset, field=exc.field)


def _check_info(path: str) -> None:
    try:
        with open(path, encoding="utf-8") as fh:
            json.load(fh)
    except (OSError, ValueError) as exc:
        raise UnknownFormatError(f"{path}: unreadable dataset info file: {exc}") from exc
