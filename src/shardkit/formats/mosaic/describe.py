"""What :class:`~shardkit.formats.mosaic.MosaicFile` says about itself: ``sections`` (the byte
layout), ``summary`` (what ``shardkit info`` shows) and ``to_dict`` (mixed into it from here)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ...errors import ShardkitError
from ..base import ReaderPart, Section
from . import model as m
from .model import element_at

if TYPE_CHECKING:
    from .model import MosaicIndex, MosaicMeta


class MosaicDescription(ReaderPart):
    """The descriptions of :class:`~shardkit.formats.mosaic.MosaicFile`."""

    if TYPE_CHECKING:  # what these methods use of the host class, MosaicFile
        meta: MosaicMeta
        _raw: Any

        @property
        def indexes(self) -> list[MosaicIndex]: ...
        def _tail(self, idx: MosaicIndex) -> None: ...
        def _read(self, start: int, end: int) -> bytes: ...
        def iter_entries(self, index: str | None = None
                         ) -> Iterator[tuple[int, bytes, list[int]]]: ...

    def sections(self) -> list[Section]:
        """Byte layout: the EBML header, ContainerMetaData, the tiles (as one range) and each
        index with its parts."""
        meta = self.meta
        out = [Section("/EBML", 0, meta.root_start, "EBML header, DocType mosaic"),
               Section("/Mosaic/ContainerMetaData", meta.meta_start, meta.meta_end,
                       f"{meta.objects_counter} objects, {meta.compression}")]
        if meta.end_of_tiles_offset > meta.meta_end:
            out += self._tile_sections()
        for n, idx in enumerate(self.indexes):
            self._tail(idx)
            f = f"/Mosaic/Index[{n}]"
            out.append(Section(f, idx.start, idx.end, f"{idx.kind or idx.description}"))
            out.append(Section(f + "/IdxUnrolled", idx.unrolled_start,
                               idx.unrolled_start + idx.unrolled_size,
                               f"{idx.num_entries} entries of {idx.entry_size} bytes"))
            out.append(Section(f + "/MapContainer/Map", idx.map_start,
                               idx.map_start + idx.map_size, "FMPH-GO function"))
            if idx.conflicts_start >= 0:
                out.append(Section(f + "/Conflicts", idx.conflicts_start,
                                   idx.conflicts_start + idx.conflicts_size, "key conflicts"))
        return out

    def _tile_sections(self, limit: int = 64) -> list[Section]:
        """The first ``limit`` tiles of a mapped file one by one, then the rest as one range
        (over a URL: all of them as one range, which costs no read)."""
        meta = self.meta
        end = min(meta.end_of_tiles_offset, meta.root_end)
        out: list[Section] = []
        pos = meta.meta_end
        if self._raw is not None:
            try:
                while pos < end and len(out) < limit:
                    tile = element_at(self._read(pos, min(end, pos + 12)), 0, pos,
                                      meta.root_end, "/Mosaic/Tile")
                    if tile.id != m.TILE:
                        break
                    out.append(Section(f"/Mosaic/Tile[{len(out)}]", tile.start, tile.end,
                                       f"tile of {tile.size} bytes"))
                    pos = tile.end
            except ShardkitError:
                pass  # verify says what; map shows the rest as one range
        if pos < end:
            name = "/Mosaic/Tile" if not out else f"/Mosaic/Tile[{len(out)}:]"
            out.append(Section(name, pos, end, "tiles of objects"))
        return out

    def summary(self, counts: bool | None = None) -> dict[str, Any]:
        """What ``shardkit info`` shows: the metadata and the indexes."""
        out: dict[str, Any] = {
            "format": self.format_id, "format_name": self.format_name,
            "file": self.source.name, "file_size": self.source.size,
            "objects_count": self.meta.objects_counter,
            "objects_total_size": self.meta.objects_total_size,
            "compression": self.meta.compression,
            "comments": list(self.meta.comments),
            "doc_type_version": self.meta.doc_type_version,
        }
        if self.meta.compression_data is not None:
            out["compression_data_size"] = len(self.meta.compression_data)
        idxs = []
        for idx in self.indexes:
            self._tail(idx)
            idxs.append({"name": idx.kind, "entries": idx.num_entries,
                         "entry_size": idx.entry_size, "map_size": idx.map_size,
                         **({"description": idx.description} if idx.kind is None else {})})
        out["indexes"] = idxs
        return out

    def to_dict(self) -> dict[str, Any]:
        """The whole object tree: the summary, the metadata and every live entry of every
        index (key, offsets)."""
        out = self.summary()
        out["meta"] = self.meta.to_dict()
        out["entries"] = {
            idx.kind: [{"rank": r, "key": k.hex(), "offsets": o}
                       for r, k, o in self.iter_entries(idx.kind)]
            for idx in self.indexes if idx.kind is not None}
        out["sections"] = [s.to_dict() for s in self.sections()]
        return out
