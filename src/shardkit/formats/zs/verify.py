"""ZS verification: :meth:`ZsFile.verify`, every check ``zs validate`` makes, as problems."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

from ...errors import ChecksumError, Problem, ShardkitError
from .._sorted_set import _escape, _records, check_items_sorted, frames_until_error
from .model import FIRST_EXTENSION_LEVEL, HEADER_AT, BlockInfo, IndexBlock

if TYPE_CHECKING:
    from ...sources import ByteSource


class _Unreferenced(NamedTuple):
    """A block seen in the walk and not yet referenced by an index block."""

    level: int
    first: bytes | None  # first record under it (None: unknown, its body was bad)
    last: bytes | None
    length: int


def _show(key: bytes) -> str:
    return repr(_escape(key[:40]))


class ZsVerify:
    """The ``verify`` method of :class:`~shardkit.formats.zs.ZsFile`."""

    if TYPE_CHECKING:  # what verify uses of the host class, ZsFile
        source: ByteSource
        root: int
        root_length: int
        data_sha256: bytes

        def _frames(self, offset: int | None = None, data_only: bool = False
                    ) -> Iterator[tuple[BlockInfo, bytes]]: ...
        def check_crc(self, info: BlockInfo, raw: bytes) -> None: ...
        def decode_payload(self, info: BlockInfo, raw: bytes) -> bytes: ...
        def records_of(self, info: BlockInfo, body: bytes) -> list[bytes]: ...
        def index_of(self, info: BlockInfo, body: bytes) -> IndexBlock: ...

    def verify(self, progress: Callable[[int, int], None] | None = None) -> list[Problem]:
        """Every check of the reference ``zs validate``, and the framing ones, as problems.

        One pass over the blocks in file order, from the end of the header to the end of the
        file, in memory bounded by the index's shape (not the file's size): framing (minimal
        uleb128 lengths, blocks inside the file, the first block right after the header), each
        block's CRC-64-xz, the codec stream, the payload grammar, at least one record or entry
        per block, records sorted within a block and across data blocks, index keys and child
        offsets sorted, and the SHA-256 of all data payloads against the header. As in the
        reference, a block is kept as *unreferenced* until an index block after it refers to
        it; an index entry is checked against it then: referenced once only (a dangling or
        repeated reference is a problem), exactly one level below, the entry's length equal to
        the block's, the key <= the block's first record and >= the last record before it.
        At the end the root must be the one unreferenced index block (level 1..63, the header's
        length) and every other block referenced. Extension blocks (level 64 and above) have
        their CRC checked and are otherwise skipped.

        Args:
            progress: Called as ``progress(bytes_done, bytes_total)``.
        """
        problems: list[Problem] = []
        total = self.source.size

        def add(check: str, offset: int | None, message: str, field: str | None = None,
                at: int | None = None) -> None:
            where = "" if offset is None else f"block at offset {offset}: "
            problems.append(Problem(check, where + message, offset if at is None else at,
                                    field))

        hasher = hashlib.sha256()
        unref: dict[int, _Unreferenced] = {}
        last_record: bytes | None = None
        frames = self._frames()
        for info, raw in frames_until_error(frames, add):
            v = info.offset
            if progress is not None:
                progress(v, total)
            body = self._zs_body(add, info, raw)
            if body is None:
                continue
            if info.level == 0:
                hasher.update(body)
            decoded = self._zs_items(add, info, body)
            if decoded is None:
                unref[v] = _Unreferenced(info.level, None, None, info.size)
                continue
            items, ib = decoded
            what = "records" if info.level == 0 else "index keys"
            check_items_sorted(add, v, items, what, f"/blocks/@{v}/body/payload")
            if ib is None:
                if last_record is not None and items[0] < last_record:
                    add("order", v, f"first record {_show(items[0])} is below the last record "
                        f"of the previous data block {_show(last_record)}",
                        f"/blocks/@{v}/body/payload")
                last_record = items[-1]
                unref[v] = _Unreferenced(0, items[0], items[-1], info.size)
            else:
                unref[v] = self._check_index(add, unref, info, ib)
        if progress is not None:
            progress(total, total)
        self._zs_check_root(add, unref)
        digest = hasher.digest()
        if digest != self.data_sha256:
            add("sha256", None, f"SHA-256 of the data payloads is {digest.hex()}, the header "
                f"says {self.data_sha256.hex()}",
                "/header/sha256", HEADER_AT["sha256"])
        return problems

    def _zs_body(self, add: Callable[..., None], info: BlockInfo, raw: bytes) -> bytes | None:
        """A block's payload checked (CRC-64-xz) and decoded, or None when a problem stops
        its checks or it is an extension block (whose CRC only is checked)."""
        v = info.offset
        try:
            if info.is_extension:
                self.check_crc(info, raw)
                return None
            return self.decode_payload(info, raw)
        except ChecksumError as exc:
            add("checksum", v, f"CRC-64-xz mismatch: stored {exc.stored:#018x}, computed "
                f"{exc.computed:#018x}", exc.field, exc.offset)
        except ShardkitError as exc:
            add("codec", v, exc.message.split(": ", 1)[-1], exc.field, exc.offset)
        return None

    def _zs_items(self, add: Callable[..., None], info: BlockInfo, body: bytes
                  ) -> tuple[list[bytes], IndexBlock | None] | None:
        """A block's records (data) or index keys (with the index block itself), or None
        when its payload grammar is broken."""
        try:
            # a data block in order needs only its first and last records: checked in C
            # without a Python object per record (else the order check names the fault)
            quick = _records.check_sorted(body) if info.level == 0 and _records else None
            if quick is not None and quick[0] and quick[1] < 0:
                return ([quick[2]] if quick[0] == 1 else [quick[2], quick[3]]), None
            if info.level == 0:
                return self.records_of(info, body), None
            ib = self.index_of(info, body)
            return list(ib.keys), ib
        except ShardkitError as exc:
            add("body", info.offset, exc.message, exc.field, exc.offset)
            return None

    def _zs_check_root(self, add: Callable[..., None], unref: dict[int, _Unreferenced]
                       ) -> None:
        """After the pass: the root the one unreferenced index block, of the header's length;
        every other block referenced."""
        root = self.root
        ref = unref.pop(root, None)
        if ref is None:
            add("root", None, f"root offset {root} is not an unreferenced block (missing, or "
                "referenced by an index block)", "/header/ofs_root_index", HEADER_AT["root"])
        else:
            if not 0 < ref.level < FIRST_EXTENSION_LEVEL:
                add("root", root, f"the root has level {ref.level} (an index level 1..63 is "
                    "required)", "/header/ofs_root_index", HEADER_AT["root"])
            if ref.length != self.root_length:
                add("root", root, f"the header says the root is "
                    f"{self.root_length} bytes, it is {ref.length}",
                    "/header/len_root_index", HEADER_AT["len_root"])
        for v, block in sorted(unref.items()):
            add("unreferenced", v, f"level {block.level} block is not referenced by any index "
                "block")

    @staticmethod
    def _check_index(add: Callable[..., None], unref: dict[int, _Unreferenced], info: Any,
                     ib: Any) -> _Unreferenced:
        """Check an index block's entries against the blocks they refer to (taking them out
        of ``unref``); returns the block's own entry for ``unref``."""
        v = info.offset
        children = ib.children
        if any(children[j] < children[j - 1] for j in range(1, len(children))):
            add("index_order", v, "child offsets are not in increasing order",
                f"/blocks/@{v}/body/payload")
        first: bytes | None = None
        last: bytes | None = None
        for j, (key, child, length) in enumerate(zip(ib.keys, children, ib.lengths,
                                                     strict=True)):
            field = f"/blocks/@{v}/body/payload/entries/{j}"
            ref = unref.pop(child, None)
            if ref is None:
                add("reference", v, f"entry {j} points to offset {child}: no unreferenced "
                    "block starts there before this one (dangling, or a second reference)",
                    field + "/ofs_block")
                continue
            if first is None:
                first = ref.first
            if ref.level != info.level - 1:
                add("level", v, f"entry {j}: a level-{info.level} block refers to a "
                    f"level-{ref.level} block at offset {child}", field + "/ofs_block")
            if last is not None and key < last:
                add("index_key", v, f"entry {j}: key {_show(key)} is below the last record "
                    f"before the block at offset {child} ({_show(last)})", field + "/key")
            if ref.first is not None and ref.first < key:
                add("index_key", v, f"entry {j}: key {_show(key)} is above the first record "
                    f"of the block at offset {child} ({_show(ref.first)})", field + "/key")
            if ref.length != length:
                add("length", v, f"entry {j}: length {length} for the block at offset "
                    f"{child}, which is {ref.length} bytes", field + "/len_block")
            last = ref.last
        return _Unreferenced(info.level, first, last, info.size)
