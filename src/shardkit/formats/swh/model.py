"""The SWH read shard's records, constants and key forms (see :mod:`shardkit.formats.swh`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from ..._layouts import dtype_spec, layouts, struct_of
from ...errors import InvalidKeyError

if TYPE_CHECKING:
    import numpy as np

__all__ = ["HEADER_END", "INDEX_DTYPE", "KEY_LEN", "OBJECT_READAHEAD", "REMOTE_DUMP_ONE_READ",
           "SLOT_SIZE", "SUMMARY_SCAN_LIMIT", "TOMBSTONE", "VERIFY_BLOCK", "SwhCounts",
           "SwhEntry", "SwhHeader", "Tombstone", "normalize_key"]

MAGIC = b"SWHShard\x00"
# the records as schemas/swh_read_shard.ksy declares them (generated/layouts.py)
_SLOT_LAYOUT = layouts.SWH_READ_SHARD__INDEX_ENTRY
KEY_LEN = _SLOT_LAYOUT.fields[0].size
SLOT_SIZE = _SLOT_LAYOUT.size  # 32-byte key + u64 offset
TOMBSTONE = 2**64 - 1
HEADER_END = layouts.SWH_READ_SHARD.size  # magic area + seven u64
_ZERO_KEY = bytes(KEY_LEN)
_U64 = struct_of(layouts.SWH_READ_SHARD__SHARD_OBJECT__HEAD)  # an object's size field
_ENTRY = struct_of(_SLOT_LAYOUT)
if TYPE_CHECKING:
    INDEX_DTYPE: np.dtype[Any]


def __getattr__(name: str) -> Any:
    """``INDEX_DTYPE`` (numpy's structured dtype of a slot), made on first use: importing
    this module does not import numpy."""
    if name == "INDEX_DTYPE":
        import numpy

        dtype = numpy.dtype(dtype_spec(_SLOT_LAYOUT, "key", "ofs"))
        globals()["INDEX_DTYPE"] = dtype
        return dtype
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_MISSING: Any = object()
#: Over a remote source, a hash function section up to this size is fetched in one request
#: (the dump is about 2.1 bits per object: 13 MB for 50M objects).
REMOTE_DUMP_ONE_READ = 32 << 20
#: Block size of the sequential reads of ``verify`` over a remote source.
VERIFY_BLOCK = 8 << 20
#: ``summary()`` counts live/deleted/unused slots by default only for mapped files whose index
#: is at most this large (a scan of it takes a few milliseconds).
SUMMARY_SCAN_LIMIT = 64 << 20
#: Over a remote source, an object is read with this much read-ahead (one request for most).
OBJECT_READAHEAD = 64 << 10
# cmph's names (as CmphError reports them) -> field paths of schemas/cmph_chd_ph.ksy
_CMPH_FIELDS = {
    "cs": "compressed_seq",
    "cs.n": "compressed_seq/num_values",
    "cs.rem_r": "compressed_seq/rem_r",
    "cs.total_length": "compressed_seq/total_length",
    "cs.sel_size": "compressed_seq/len_select",
    "cs.sel": "compressed_seq/select",
    "cs.sel.n": "compressed_seq/select/num_ones",
    "cs.sel.m": "compressed_seq/select/num_zeros",
    "cs.sel.bits_vec": "compressed_seq/select/bits_vec",
    "cs.sel.select_table": "compressed_seq/select/select_table",
    "cs.length_rems": "compressed_seq/length_rems",
    "cs.store_table": "compressed_seq/store_table",
    "algo_name": "algo_name",
    "size": "num_keys_total",
    "hl_size": "len_hash_state",
    "hl": "hash_state",
    "hl.name": "hash_state/hash_name",
    "hl.seed": "hash_state/seed",
    "cs_size": "len_compressed_seq",
    "n": "num_keys",
    "nbuckets": "num_buckets",
}


def normalize_key(key: object) -> bytes:
    """A key as 32 bytes: from bytes-like objects, or from 64 hex characters.

    Raises:
        InvalidKeyError: Any other type or length (the message says what was given).
    """
    if type(key) is bytes:
        if len(key) == KEY_LEN:
            return key
    elif isinstance(key, (bytearray, memoryview)):
        data = bytes(key)
        if len(data) == KEY_LEN:
            return data
        key = data
    elif isinstance(key, str):
        text = key.strip()
        if len(text) == 2 * KEY_LEN:
            try:
                return bytes.fromhex(text)
            except ValueError:
                pass
        raise InvalidKeyError(f"SWH keys are {KEY_LEN} bytes or {2 * KEY_LEN} hex digits, got "
                              f"the text {key[:80]!r}")
    else:
        raise InvalidKeyError(f"SWH keys are {KEY_LEN} bytes or {2 * KEY_LEN} hex digits, got "
                              f"{type(key).__name__}")
    raise InvalidKeyError(f"SWH keys are {KEY_LEN} bytes, got {len(key)}")


def _is_key(key: object) -> bool:
    try:
        normalize_key(key)
    except InvalidKeyError:
        return False
    return True


@dataclass(frozen=True)
class SwhHeader:
    """The seven header integers (names as in swh.perfecthash's ``shard_header_t``)."""

    version: int
    objects_count: int
    objects_position: int
    objects_size: int
    index_position: int
    index_size: int
    hash_position: int


@dataclass(frozen=True)
class SwhEntry:
    """A live index entry.

    Attributes:
        slot: Index slot (the key's perfect-hash value).
        key: The 32-byte key.
        offset: Absolute offset of the object's u64 size field.
        size: Length of the object's data (``None`` if not read).
    """

    slot: int
    key: bytes
    offset: int
    size: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON output (key as hex)."""
        return {"slot": self.slot, "key": self.key.hex(), "offset": self.offset,
                "size": self.size}


@dataclass(frozen=True)
class SwhCounts:
    """What the index holds, told apart with the header's ``objects_count``.

    Attributes:
        live: Live entries (objects that can be read).
        deleted: Objects written then deleted (``objects_count - live``).
        unused: Slots of the hash function no object was written to (``slots - objects_count``).
        tombstone_slots: Slots holding a tombstone (zero key, offset 2**64-1).
        empty_slots: Slots holding zeros (zero key, offset 0).
        index_init: How the writer initialised the index: ``"tombstones"`` (swh-shard >= 2:
            unused slots are tombstones), ``"zeros"`` (swh.perfecthash <= 1.3: unused slots
            are empty) or ``"unknown"`` (no unused slot tells).
    """

    live: int
    deleted: int
    unused: int
    tombstone_slots: int
    empty_slots: int
    index_init: str

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON output."""
        return asdict(self)


@dataclass(frozen=True)
class Tombstone:
    """A deleted entry's slot (its key and object are zeroed in the file)."""

    slot: int
    index_offset: int


