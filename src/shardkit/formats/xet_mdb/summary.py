"""Xet MDB descriptions: the variant, ``summary`` (what ``shardkit info`` shows), ``to_dict``
and the byte layout (``sections``) of :class:`~shardkit.formats.xet_mdb.MdbShard` (mixed into
it from here)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..base import ReaderPart, Section
from . import model as _model
from .model import FOOTER_SIZE, HEADER_SIZE, NEVER_EXPIRES, RECORD_SIZE, _iso

if TYPE_CHECKING:
    import numpy as np

    from .model import FileInfo, MdbFooter, MdbHeader, XorbInfo, _Layout


class MdbSummary(ReaderPart):
    """What :class:`~shardkit.formats.xet_mdb.MdbShard` says about itself."""

    if TYPE_CHECKING:  # what these methods use of the host class, MdbShard
        header: MdbHeader
        footer: MdbFooter | None
        _footer_note: str | None

        @property
        def _have_all(self) -> bool: ...
        @property
        def _layout(self) -> _Layout: ...
        @property
        def files(self) -> Sequence[FileInfo]: ...
        @property
        def xorbs(self) -> Sequence[XorbInfo]: ...
        @property
        def file_lookup(self) -> np.ndarray | None: ...
        @property
        def xorb_lookup(self) -> np.ndarray | None: ...
        @property
        def chunk_lookup(self) -> np.ndarray | None: ...

    @property
    def variant(self) -> str:
        """Which variant of FORMAT_NOTES section 9 the shard looks like."""
        f = self.footer
        if f is None:
            return "upload body (no footer)"
        if f.is_keyed:
            return "keyed global-dedup response"
        tables = f.file_lookup_num_entry or f.xorb_lookup_num_entry or f.chunk_lookup_num_entry
        if tables:
            no_files = (f.xorb_info_offset == HEADER_SIZE + RECORD_SIZE if self._footer_counts()
                        else not len(self._layout.file_pos))
            if no_files and f.xorb_lookup_num_entry:
                return "xorb-only shard with lookup tables"
            return "full shard with lookup tables"
        if f.file_lookup_offset == 0 and f.xorb_lookup_offset == 0:
            return "shard without lookup tables (huggingface.js style, table offsets 0)"
        return "server-stored shard without lookup tables"

    def _footer_counts(self) -> tuple[int, int, int] | None:
        """(files, xorbs, chunks) as the footer's lookup tables count them, when the record
        sections are not at hand (a remote shard not yet fetched whole) and the tables say
        all three (a table is empty only when its section is); else None: walk the sections.
        """
        f = self.footer
        if self._have_all or "_layout" in self.__dict__ or f is None:
            return None
        if not (f.file_lookup_num_entry or f.xorb_lookup_num_entry):
            return None
        empty_files = f.xorb_info_offset == HEADER_SIZE + RECORD_SIZE
        empty_xorbs = f.file_lookup_offset == f.xorb_info_offset + RECORD_SIZE
        if ((f.file_lookup_num_entry == 0) != empty_files
                or (f.xorb_lookup_num_entry == 0) != empty_xorbs
                or (f.chunk_lookup_num_entry == 0) != empty_xorbs):
            return None
        return f.file_lookup_num_entry, f.xorb_lookup_num_entry, f.chunk_lookup_num_entry

    def summary(self) -> dict[str, Any]:
        """What ``shardkit info`` shows.

        Through ranged requests, a shard with lookup tables is summarised from its header and
        footer alone: the counts of files, xorbs and chunks are the tables' (``verify`` checks
        they match the sections), and ``terms``, which only a walk of the file section gives,
        is None. Otherwise (local files, shards without tables) the sections are walked.
        """
        f = self.footer
        counted = self._footer_counts()
        if counted is not None:
            out = self._summary_head()
            out.update(files=counted[0], xorbs=counted[1], chunks=counted[2], terms=None)
            out["counts_from"] = "lookup tables"
            return self._summary_tail(out)
        lay = self._layout
        out = self._summary_head()
        out.update(files=len(lay.file_pos), xorbs=len(lay.xorb_pos),
                   chunks=int(lay.xorb_chunks.sum()), terms=int(lay.file_terms.sum()))
        if f is None:
            out["totals"] = {
                "materialized_bytes": sum(fi.size for fi in self.files),
                "stored_bytes": int(lay.words(lay.xorb_pos, 2).sum()),
                "stored_bytes_on_disk": int(lay.words(lay.xorb_pos, 3).sum()),
            }
        return self._summary_tail(out)

    def _summary_head(self) -> dict[str, Any]:
        f = self.footer
        return {
            "format": self.format_id,
            "format_name": self.format_name,
            "file": self.source.name,
            "file_size": self.source.size,
            "variant": self.variant,
            "header": {"version": self.header.version, "footer_size": self.header.footer_size},
            "footer": f is not None,
        }

    def _summary_tail(self, out: dict[str, Any]) -> dict[str, Any]:
        f = self.footer
        out["lookup_tables"] = {
            "file": f is not None and f.file_lookup_num_entry > 0,
            "xorb": f is not None and f.xorb_lookup_num_entry > 0,
            "chunk": f is not None and f.chunk_lookup_num_entry > 0,
        }
        out["hmac_key_present"] = f is not None and f.is_keyed
        if f is not None:
            out["hmac_key"] = str(f.hmac_key) if f.is_keyed else None
            out["creation_timestamp"] = f.creation_timestamp
            out["creation_time"] = _iso(f.creation_timestamp)
            out["key_expiry"] = f.key_expiry
            out["key_expiry_time"] = ("never" if f.key_expiry == NEVER_EXPIRES
                                      else _iso(f.key_expiry))
            out["expired"] = f.expired()
            out["totals"] = {"materialized_bytes": f.materialized_bytes,
                             "stored_bytes": f.stored_bytes,
                             "stored_bytes_on_disk": f.stored_bytes_on_disk}
        if self._footer_note:
            out["note"] = self._footer_note
        return out

    def to_dict(self) -> dict[str, Any]:
        """The whole object tree: summary, header, footer, files, xorbs, lookup tables."""
        out = self.summary()
        out["footer"] = None if self.footer is None else self.footer.to_dict()
        out["files"] = [fi.to_dict() for fi in self.files]
        out["xorbs"] = [x.to_dict() for x in self.xorbs]
        tables: dict[str, Any] = {}
        for name, table in (("file", self.file_lookup), ("xorb", self.xorb_lookup)):
            tables[name] = [] if table is None else [
                [k, i] for k, i in zip(table["key"].tolist(), table["index"].tolist(),
                                       strict=True)]
        t = self.chunk_lookup
        tables["chunk"] = [] if t is None else [
            list(row) for row in zip(t["key"].tolist(), t["xorb"].tolist(),
                                     t["chunk"].tolist(), strict=True)]
        out["lookup_tables"] = tables
        out["sections"] = [s.to_dict() for s in self.sections()]
        return out

    def sections(self) -> list[Section]:
        """Byte layout, in file order."""
        lay, f, size = self._layout, self.footer, self.source.size
        out = [
            Section("/header", 0, HEADER_SIZE, f"tag, version {self.header.version}, "
                    f"footer_size {self.header.footer_size}"),
            Section("/file_info", HEADER_SIZE, lay.xorb_info_offset,
                    f"{len(lay.file_pos)} file blocks + bookend"),
            Section("/xorb_info", lay.xorb_info_offset, lay.xorb_info_end,
                    f"{len(lay.xorb_pos)} xorb blocks + bookend"),
        ]
        if f is not None:
            for name, ofs, n, width in (
                    ("file", f.file_lookup_offset, f.file_lookup_num_entry,
                     _model._LOOKUP_DTYPE.itemsize),
                    ("xorb", f.xorb_lookup_offset, f.xorb_lookup_num_entry,
                     _model._LOOKUP_DTYPE.itemsize),
                    ("chunk", f.chunk_lookup_offset, f.chunk_lookup_num_entry,
                     _model._CHUNK_LOOKUP_DTYPE.itemsize)):
                if n:
                    out.append(Section(f"/{name}_lookup", ofs, ofs + n * width,
                                       f"{n} entries x {width} bytes"))
            out.append(Section("/footer", size - FOOTER_SIZE, size, "footer v1"))
        elif lay.xorb_info_end < size:
            out.append(Section("/trailing", lay.xorb_info_end, size,
                               "bytes after the xorb bookend"))
        return out
