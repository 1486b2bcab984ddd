"""ZSS fsck: :meth:`ZssFile.verify`, every check of the reference ``fsck()`` and more."""

from __future__ import annotations

from collections.abc import Callable

from ...errors import (
    ChecksumError,
    Problem,
    ShardkitError,
)
from .model import IndexBlock, _escape


class ZssVerify:
    """The ``verify`` method of :class:`~shardkit.formats.zss.ZssFile`."""

    # -- verification --------------------------------------------------------------------------

    def verify(self, progress: Callable[[int, int], None] | None = None) -> list[Problem]:
        """fsck: every check of the reference ``fsck()`` and more; returns the problems found.

        Pass 1 reads every block from voffset 0 to the end of the file: framing (minimal
        uleb128, payload inside the file), the codec stream or CRC-32C, the body grammar
        (minimal uleb128s, no overrun), records sorted within and across data blocks, index
        keys sorted and child voffsets strictly increasing, and at each level a block's first
        item not below the previous block's last. Pass 2 walks the tree from the root: every
        child is the start of a block, one level below its parent, referenced once, and its
        entry's key equals the first record of its subtree. Pass 3: every block is reachable.

        Args:
            progress: Called as ``progress(bytes_done, bytes_total)`` during pass 1.
        """
        problems: list[Problem] = []
        total = self.data_size

        def add(check: str, voffset: int | None, message: str, field: str | None = None,
                offset: int | None = None) -> None:
            where = "" if voffset is None else f"block at {self._where(voffset)}: "
            if offset is None and voffset is not None:
                offset = self.data_offset + voffset
            problems.append(Problem(check, where + message, offset, field))

        blocks: dict[int, tuple[int, bytes | None, bytes | None]] = {}  # v -> level, first, last
        index: dict[int, IndexBlock] = {}
        last_at_level: dict[int, bytes] = {}
        frames = self._frames(0)
        while True:
            try:
                item = next(frames, None)
            except ShardkitError as exc:
                add("framing", None, exc.message, exc.field, exc.offset)
                break
            if item is None:
                break
            info, payload = item
            v = info.voffset
            if progress is not None:
                progress(v, total)
            blocks[v] = (info.level, None, None)
            try:
                body = self.decode_payload(info, payload)
            except ChecksumError as exc:
                add("checksum", v, f"body CRC-32C mismatch: stored {exc.stored:#010x}, "
                    f"computed {exc.computed:#010x}", exc.field, exc.offset)
                continue
            except ShardkitError as exc:
                add("codec", v, exc.message.split(": ", 1)[-1], exc.field, exc.offset)
                continue
            try:
                if info.level == 0:
                    items = self.records_of(info, body)
                else:
                    ib = self.index_of(info, body)
                    index[v] = ib
                    items = list(ib.keys)
                    ch = ib.children
                    for j in range(1, len(ch)):
                        if ch[j] <= ch[j - 1]:
                            add("index_order", v, f"child voffsets not strictly increasing at "
                                f"entry {j}: {ch[j - 1]} then {ch[j]}",
                                f"/blocks/@{v}/payload/body/entries/{j}/child_voffset")
                            break
            except ShardkitError as exc:
                add("body", v, exc.message, exc.field, exc.offset)
                continue
            if not items:
                if info.level and v == self.root:
                    continue  # an empty set: the root index has no entries
                add("empty_block", v, f"level {info.level} block with no "
                    f"{'records' if info.level == 0 else 'entries'}")
                continue
            what = "records" if info.level == 0 else "index keys"
            for j in range(1, len(items)):
                if items[j] < items[j - 1]:
                    add("order", v, f"{what} out of order at item {j}: "
                        f"{_escape(items[j - 1][:40])!r} then {_escape(items[j][:40])!r}",
                        f"/blocks/@{v}/payload/body")
                    break
            prev = last_at_level.get(info.level)
            if prev is not None and items[0] < prev:
                add("order", v, f"first {what[:-1]} {_escape(items[0][:40])!r} is below the "
                    f"last one of the previous level-{info.level} block "
                    f"{_escape(prev[:40])!r}", f"/blocks/@{v}/payload/body")
            last_at_level[info.level] = items[-1]
            blocks[v] = (info.level, items[0], items[-1])
        if progress is not None:
            progress(total, total)

        # pass 2: the tree
        seen: set[int] = set()
        if self.root not in blocks:
            add("root", None, f"root voffset {self.root} is not the start of a block",
                "/header/root_voffset", 12)
        elif blocks[self.root][0] == 0:
            add("root", self.root, "the root is a data block (it must be an index block)",
                "/header/root_voffset", 12)
        else:
            seen.add(self.root)
            stack = [self.root]
            while stack:
                v = stack.pop()
                ib = index.get(v)
                if ib is None:
                    continue  # undecodable, already reported
                level = blocks[v][0]
                for j, (key, child) in enumerate(zip(ib.keys, ib.children, strict=True)):
                    field = f"/blocks/@{v}/payload/body/entries/{j}"
                    if child not in blocks:
                        add("child", v, f"entry {j} points to voffset {child}, which is not "
                            "the start of a block", field + "/child_voffset")
                        continue
                    if child in seen:
                        add("child", v, f"entry {j}: block at voffset {child} is referenced "
                            "more than once", field + "/child_voffset")
                        continue
                    seen.add(child)
                    clevel, cfirst, _ = blocks[child]
                    if clevel != level - 1:
                        add("level", v, f"entry {j}: child at voffset {child} has level "
                            f"{clevel}, expected {level - 1}", field + "/child_voffset")
                        continue
                    if cfirst is not None and key != cfirst:
                        add("index_key", v, f"entry {j}: key {_escape(key[:40])!r} is not the "
                            f"first record under child {child} ({_escape(cfirst[:40])!r})",
                            field + "/key")
                    if clevel > 0:
                        stack.append(child)
        # pass 3: reachability
        for v, (level, _, _) in blocks.items():
            if v not in seen:
                add("unreachable", v, f"level {level} block is not reachable from the root")
        return problems
