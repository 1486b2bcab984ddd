"""Software Heritage MOSAIC files (swh-mosaic): lookup by several indexes, iteration, verify.

Layout: ``schemas/mosaic.ksy`` (generated class :class:`~shardkit.generated.mosaic.Mosaic`),
an EBML document (RFC 8794) of DocType ``mosaic``: the EBML header, then the ``Mosaic`` root
holding ``ContainerMetaData`` (counts, compression, comments, ``EndOfTilesOffset``), ``Tile``\\ s
of ``Object``\\ s and one ``Index`` per key kind. This package adds the meaning:

* an index's ``Map`` is a serialized FMPH-GO function of the ``ph`` crate
  (:mod:`shardkit.hashing.fmph`) giving a key's rank in ``IdxUnrolled``, whose fixed-size
  entries are ``Key`` + ``Offset`` (the absolute offset of the ``Object`` element);
* a key of several objects has ``GoToConflicts`` instead of ``Offset`` and its offsets under
  ``Conflicts``;
* a deleted object (swh-mosaic's ``MosaicUpdater.delete``) and its entries are ``Void``
  elements of the same length, and the counters and CRC-32 elements are updated;
* objects are stored plain, or as zstd frames (with the dictionary of ``CompressionData`` for
  ``zstd.dict``), decompressed with a cap.

Index names are SWH's ``HashDict`` names: ``sha1``, ``sha1_git``, ``sha256``, ``blake2s256``.
"""

from .model import KINDS, IndexKind, MosaicIndex, MosaicMeta, content_key
from .reader import MosaicFile

__all__ = ["KINDS", "IndexKind", "MosaicFile", "MosaicIndex", "MosaicMeta", "content_key"]
