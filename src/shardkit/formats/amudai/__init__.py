"""Microsoft Amudai shards: directory, schema, stripes, descriptors, indexes and column values.

Modules: :mod:`.model` (value types), :mod:`.refs` (DataRef targets), :mod:`.blocks` (block
decoding), :mod:`.columns` (buffers and whole columns), :mod:`.rows` (records by position),
:mod:`.wire` (protobuf limits), :mod:`.reader` (:class:`AmudaiShard`), :mod:`.verify`.

Layout: ``schemas/amudai_shard.ksy`` (generated class ``AmudaiShard``: the frame, the directory
record, block maps and value dictionaries); metadata payloads are decoded with the code generated
from ``schemas/amudai/*.proto`` (protobuf) and ``schemas/amudai/schema.fbs`` (FlatBuffers).
Semantics: FORMAT_NOTES.md. Opening reads the footer and the directory record only; the schema,
stripes, descriptors and buffers are read (and their checksums checked) on first use.

Semantic layer: directory -> schema tree (:class:`AmudaiField`) -> properties -> url list ->
stripes (:class:`AmudaiStripe`) -> shard- and stripe-level field descriptors with their
statistics (:class:`AmudaiFieldDescriptor`, from :meth:`AmudaiShard.descriptor`) -> data
encodings and encoded buffers (:class:`AmudaiEncoding`, :class:`AmudaiBuffer`) -> index
descriptors at shard, stripe and field level (:class:`AmudaiIndex`, ``.indexes`` on each).

References (DataRefs) resolve within the root file (empty url, or a url naming the root file
itself, the reference writer's quirk) or relative to the root file's folder (stripe files of the
two-level layout). ``..`` components, absolute paths and URL schemes are refused unless the
reader is opened with ``allow_external=True``. Every range is checked against its target's size
before it is read. Two caps bound where references can lead: ``max_files`` (distinct files
opened, shared by nested shards) and ``max_hops``, a counter of DataRefs followed from the root
directory to the record being read. Inside one shard the chain is at most 4 hops long
(directory -> stripe list -> field list -> descriptor -> buffer); index artifacts that are
themselves Amudai shards (:meth:`AmudaiShard.open_artifact`) add their own hops, so a cycle of
artifacts ends in a :class:`HopLimitError` naming the chain instead of looping.

Example::

    with shardkit.open("data.amudai.shard") as s:
        s.record_count, [f.name for f in s.schema]
        s.read_column("address.city")
        s.indexes, s.stripes[0].indexes, s.descriptor("address.city").range_stats
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# model's public names, re-exported; reader.py imports most of the same list for its own use.
from .model import (
    MAX_BUFFER,
    MAX_HOPS,
    MAX_POSITIONS,
    AmudaiBuffer,
    AmudaiEncoding,
    AmudaiField,
    AmudaiFieldDescriptor,
    AmudaiIndex,
    AmudaiIndexArtifact,
    AmudaiStripe,
    DataRefInfo,
    HopLimitError,
)
from .reader import AmudaiShard

if TYPE_CHECKING:
    from .model import BASIC_TYPES


def __getattr__(name: str) -> Any:
    """``BASIC_TYPES`` comes from :mod:`.model` on first use (making it imports the FlatBuffers
    runtime, which imports numpy; opening a shard does not need it)."""
    if name == "BASIC_TYPES":
        from . import model

        return model.BASIC_TYPES
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "BASIC_TYPES",
    "MAX_BUFFER",
    "MAX_HOPS",
    "MAX_POSITIONS",
    "AmudaiBuffer",
    "AmudaiEncoding",
    "AmudaiField",
    "AmudaiFieldDescriptor",
    "AmudaiIndex",
    "AmudaiIndexArtifact",
    "AmudaiShard",
    "AmudaiStripe",
    "DataRefInfo",
    "HopLimitError",
]

