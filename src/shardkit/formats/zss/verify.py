"""ZSS fsck: :meth:`ZssFile.verify`, every check of the reference ``fsck()`` and more."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from ...errors import (
    ChecksumError,
    Problem,
    ShardkitError,
)
from .._sorted_set import _records, check_items_sorted, frames_until_error
from .model import BlockInfo, IndexBlock, _escape


class ZssVerify:
    """The ``verify`` method of :class:`~shardkit.formats.zss.ZssFile`."""

    if TYPE_CHECKING:  # what verify uses of the host class, ZssFile
        data_offset: int
        data_size: int
        root: int

        def _where(self, voffset: int) -> str: ...
        def _frames(self, voffset: int = 0, data_only: bool = False
                    ) -> Iterator[tuple[BlockInfo, bytes]]: ...
        def decode_payload(self, info: BlockInfo, payload: bytes) -> bytes: ...
        def records_of(self, info: BlockInfo, body: bytes) -> list[bytes]: ...
        def index_of(self, info: BlockInfo, body: bytes) -> IndexBlock: ...

    # -- verification --------------------------------------------------------------------------

    def verify(self, progress: Callable[[int, int], None] | None = None) -> list[Problem]:
        """fsck: every check of the reference ``fsck()`` and more; returns the problems found.

        One pass reads every block from voffset 0 to the end of the file: framing (minimal
        uleb128, payload inside the file), the codec stream or CRC-32C, the body grammar
        (minimal uleb128s, no overrun), records sorted within and across data blocks, index
        keys sorted and child voffsets strictly increasing, and at each level a block's first
        item not below the previous block's last. The tree is checked in the same pass: a
        block is kept as *unreferenced* (its level and first item) until the index block that
        refers to it (writers put children first; a child after its parent is checked when it
        is reached); every child must be the start of a block, one level below its parent,
        referenced once, and its entry's key must equal the first record of its subtree. At
        the end the root must be the one unreferenced index block; any other unreferenced
        block is unreachable. Memory is bounded by the index's shape, not the file's size.

        Args:
            progress: Called as ``progress(bytes_done, bytes_total)`` during the pass.
        """
        problems: list[Problem] = []
        total = self.data_size

        def add(check: str, voffset: int | None, message: str, field: str | None = None,
                offset: int | None = None) -> None:
            where = "" if voffset is None else f"block at {self._where(voffset)}: "
            if offset is None and voffset is not None:
                offset = self.data_offset + voffset
            problems.append(Problem(check, where + message, offset, field))

        # blocks not referenced yet: v -> (level, first item or None when undecodable)
        pending: dict[int, tuple[int, bytes | None]] = {}
        # entries that point past their own block: child v -> [(parent v, entry, key, level)]
        ahead: dict[int, list[tuple[int, int, bytes, int]]] = {}
        last_at_level: dict[int, bytes] = {}
        frames = self._frames(0)
        for info, payload in frames_until_error(frames, add):
            v = info.voffset
            if progress is not None:
                progress(v, total)
            waiting = ahead.pop(v, None)  # entries before it that point here
            if waiting is None:
                pending[v] = (info.level, None)
            else:
                self._zss_arrive(add, v, info.level, waiting)
            decoded = self._zss_items(add, info, payload)
            if decoded is None:
                continue
            items, ib = decoded
            if not items:
                if not (info.level and v == self.root):  # an empty set: a root with no entries
                    add("empty_block", v, f"level {info.level} block with no "
                        f"{'records' if info.level == 0 else 'entries'}")
                continue
            self._zss_check_order(add, v, info.level, items, last_at_level)
            if waiting is None:
                pending[v] = (info.level, items[0])
            else:
                self._zss_check_waiting_key(add, v, info.level, items[0], waiting)
            if ib is not None:
                self._zss_refer(add, pending, ahead, v, info.level, ib)
        if progress is not None:
            progress(total, total)
        self._zss_check_tree_end(add, pending, ahead)
        return problems

    def _zss_items(self, add: Callable[..., None], info: BlockInfo, payload: bytes
                   ) -> tuple[list[bytes], IndexBlock | None] | None:
        """Decode one block (codec or CRC-32C, then the body grammar): its records or index
        keys (with the index block itself), or None when a problem stops its checks."""
        v = info.voffset
        try:
            body = self.decode_payload(info, payload)
        except ChecksumError as exc:
            add("checksum", v, f"body CRC-32C mismatch: stored {exc.stored:#010x}, "
                f"computed {exc.computed:#010x}", exc.field, exc.offset)
            return None
        except ShardkitError as exc:
            add("codec", v, exc.message.split(": ", 1)[-1], exc.field, exc.offset)
            return None
        try:
            # a data block in order needs only its count and its first and last records:
            # checked in C without a Python object per record (else the order check names
            # the first record out of order)
            quick = _records.check_sorted(body) if info.level == 0 and _records else None
            if quick is not None and quick[1] < 0:
                return [] if not quick[0] else [quick[2]] if quick[0] == 1 else \
                    [quick[2], quick[3]], None
            if info.level == 0:
                return self.records_of(info, body), None
            ib = self.index_of(info, body)
        except ShardkitError as exc:
            add("body", v, exc.message, exc.field, exc.offset)
            return None
        ch = ib.children
        for j in range(1, len(ch)):
            if ch[j] <= ch[j - 1]:
                add("index_order", v, f"child voffsets not strictly increasing at "
                    f"entry {j}: {ch[j - 1]} then {ch[j]}",
                    f"/blocks/@{v}/payload/body/entries/{j}/child_voffset")
                break
        return list(ib.keys), ib

    @staticmethod
    def _zss_check_order(add: Callable[..., None], v: int, level: int, items: list[bytes],
                         last_at_level: dict[int, bytes]) -> None:
        """A block's items sorted, its first not below the last of the previous block of its
        level."""
        what = "records" if level == 0 else "index keys"
        check_items_sorted(add, v, items, what, f"/blocks/@{v}/payload/body")
        prev = last_at_level.get(level)
        if prev is not None and items[0] < prev:
            add("order", v, f"first {what[:-1]} {_escape(items[0][:40])!r} is below the "
                f"last one of the previous level-{level} block "
                f"{_escape(prev[:40])!r}", f"/blocks/@{v}/payload/body")
        last_at_level[level] = items[-1]

    @staticmethod
    def _zss_check_waiting_key(add: Callable[..., None], v: int, level: int, first: bytes,
                               refs: list[tuple[int, int, bytes, int]]) -> None:
        """The key of the entry before it that points to the block at ``v`` is its first
        record (when that entry's level fits)."""
        parent, j, key, plevel = refs[0]
        if level == plevel - 1 and key != first:
            add("index_key", parent, f"entry {j}: key {_escape(key[:40])!r} is not the "
                f"first record under child {v} ({_escape(first[:40])!r})",
                f"/blocks/@{parent}/payload/body/entries/{j}/key")

    def _zss_check_tree_end(self, add: Callable[..., None],
                            pending: dict[int, tuple[int, bytes | None]],
                            ahead: dict[int, list[tuple[int, int, bytes, int]]]) -> None:
        """After the pass: entries that point to no block, the root the one unreferenced
        index block, every other block reachable."""
        for child, refs in ahead.items():
            for parent, j, _, _ in refs:
                add("child", parent, f"entry {j} points to voffset {child}, which is not the "
                    "start of a block", f"/blocks/@{parent}/payload/body/entries/{j}"
                    "/child_voffset")
        root = pending.pop(self.root, None)
        if root is None:
            add("root", None, f"root voffset {self.root} is not the start of an unreferenced "
                "block", "/header/root_voffset", 12)
        elif root[0] == 0:
            add("root", self.root, "the root is a data block (it must be an index block)",
                "/header/root_voffset", 12)
        for v, (level, _) in sorted(pending.items()):
            add("unreachable", v, f"level {level} block is not reachable from the root")

    @staticmethod
    def _zss_arrive(add: Callable[..., None], v: int, level: int,
                    refs: list[tuple[int, int, bytes, int]]) -> None:
        """A block that entries before it point to is reached: one reference only, one level
        below its parent (its key is checked once the block is decoded)."""
        for other, k, _, _ in refs[1:]:
            add("child", other, f"entry {k}: block at voffset {v} is referenced more than once",
                f"/blocks/@{other}/payload/body/entries/{k}/child_voffset")
        parent, j, _, plevel = refs[0]
        if level != plevel - 1:
            add("level", parent, f"entry {j}: child at voffset {v} has level {level}, expected "
                f"{plevel - 1}", f"/blocks/@{parent}/payload/body/entries/{j}/child_voffset")

    @staticmethod
    def _zss_refer(add: Callable[..., None], pending: dict[int, tuple[int, bytes | None]],
                   ahead: dict[int, list[tuple[int, int, bytes, int]]], v: int, level: int,
                   ib: IndexBlock) -> None:
        """Check the entries of the index block at ``v`` against the blocks they refer to."""
        for j, (key, child) in enumerate(zip(ib.keys, ib.children, strict=True)):
            field = f"/blocks/@{v}/payload/body/entries/{j}"
            if child >= v:  # not reached yet (or itself): checked when it is
                ahead.setdefault(child, []).append((v, j, key, level))
                continue
            ref = pending.pop(child, None)
            if ref is None:
                add("child", v, f"entry {j} points to voffset {child}: not the start of a "
                    "block, or a block referenced more than once", field + "/child_voffset")
                continue
            clevel, cfirst = ref
            if clevel != level - 1:
                add("level", v, f"entry {j}: child at voffset {child} has level {clevel}, "
                    f"expected {level - 1}", field + "/child_voffset")
                continue
            if cfirst is not None and key != cfirst:
                add("index_key", v, f"entry {j}: key {_escape(key[:40])!r} is not the first "
                    f"record under child {child} ({_escape(cfirst[:40])!r})", field + "/key")
