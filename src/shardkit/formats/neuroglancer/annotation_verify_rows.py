"""Row helpers of the annotation layer checks (:mod:`.annotation_verify`): batches of values
merged for one Python step per batch, and the exact comparison of ``(segment, id)`` pairs."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import ShardkitError
from .annotation_spill import mix64

_BATCH = 65536
_BATCH_BYTES = 8 << 20  # values held at once by a walk (before they are parsed)


def _gather(arr: np.ndarray, pos: np.ndarray, width: int) -> np.ndarray:
    """Bytes ``pos[i] : pos[i] + width`` of each row ``i`` of ``arr`` (uint8, 2-D)."""
    rows = np.arange(len(arr))[:, None]
    return arr[rows, pos[:, None] + np.arange(width)[None, :]]


class _Merger:
    """Consecutive ``(ids, block, starts, ends)`` merged into batches of at least ``values``
    values or :data:`_BATCH_BYTES` bytes (one Python step per batch, not per minishard)."""

    def __init__(self, values: int = _BATCH) -> None:
        self.values = values
        self.held: list[tuple[np.ndarray, bytes, np.ndarray, np.ndarray]] = []
        self.count = self.size = 0

    def add(self, item: tuple[np.ndarray, bytes, np.ndarray, np.ndarray]
            ) -> tuple[np.ndarray, bytes, np.ndarray, np.ndarray] | None:
        self.held.append(item)
        self.count += len(item[0])
        self.size += len(item[1])
        if self.count >= self.values or self.size >= _BATCH_BYTES:
            return self.flush()
        return None

    def flush(self) -> tuple[np.ndarray, bytes, np.ndarray, np.ndarray] | None:
        held = self.held
        self.held, self.count, self.size = [], 0, 0
        if len(held) <= 1:
            return held[0] if held else None
        shift = np.cumsum([0] + [len(b) for _, b, _, _ in held[:-1]]).astype(np.uint64)
        return (np.concatenate([h[0] for h in held]), b"".join(h[1] for h in held),
                np.concatenate([h[2] + d for h, d in zip(held, shift, strict=True)]),
                np.concatenate([h[3] + d for h, d in zip(held, shift, strict=True)]))


def _merged_blocks(blocks: Any) -> Any:
    """:class:`_Merger` over an iterator of blocks (what was read before an error is
    yielded before the error)."""
    merger = _Merger()
    try:
        for item in blocks:
            got = merger.add(item)
            if got is not None:
                yield got
    except ShardkitError:
        got = merger.flush()
        if got is not None:
            yield got
        raise
    got = merger.flush()
    if got is not None:
        yield got


def _distinct_ints(values: np.ndarray) -> list[int]:
    s = np.sort(values)
    return s[np.concatenate(([True], s[1:] != s[:-1]))].tolist() if len(s) else []


def _pair_differences(a: np.ndarray, b: np.ndarray
                      ) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """``(seg, id)`` pairs only in ``a`` and only in ``b``, sorted (sorting two uint64
    columns, not structured records: much faster). Equal sets are recognised first by their
    sorted 64-bit pair hashes; any difference is then found exactly."""
    if len(a) and len(b):  # the usual case, equal sets: compared by sorted 64-bit hashes
        def hashed(p: np.ndarray) -> np.ndarray:
            with np.errstate(over="ignore"):
                h = np.sort(mix64(p["seg"]) ^ mix64(p["id"] ^ np.uint64(0x5BD1E995)))
            return h[np.concatenate(([True], h[1:] != h[:-1]))]

        ha, hb = hashed(a), hashed(b)
        if len(ha) == len(hb) and bool(np.all(ha == hb)):
            return [], []
    seg = np.concatenate([a["seg"], b["seg"]])
    ident = np.concatenate([a["id"], b["id"]])
    tag = np.concatenate([np.zeros(len(a), np.int8), np.ones(len(b), np.int8)])
    if not len(seg):
        return [], []
    order = np.lexsort((tag, ident, seg))
    seg, ident, tag = seg[order], ident[order], tag[order]
    new_run = np.concatenate(([True], (seg[1:] != seg[:-1]) | (ident[1:] != ident[:-1])))
    run = np.cumsum(new_run) - 1
    has_a = np.bincount(run, weights=(tag == 0)) > 0
    has_b = np.bincount(run, weights=(tag == 1)) > 0
    first = np.flatnonzero(new_run)
    pick_a, pick_b = first[has_a & ~has_b], first[has_b & ~has_a]
    return (list(zip(seg[pick_a].tolist(), ident[pick_a].tolist(), strict=True)),
            list(zip(seg[pick_b].tolist(), ident[pick_b].tolist(), strict=True)))


def _pairs(segs: np.ndarray, ids: np.ndarray) -> np.ndarray:
    out = np.empty(len(segs), dtype=[("seg", "<u8"), ("id", "<u8")])
    out["seg"] = segs
    out["id"] = ids
    return out
