"""Which encodings a shard's blocks use: shardkit's own block walk.

:func:`block_encodings` decodes every block of every block-stream buffer (DATA, OFFSETS,
PRESENCE) and names the cascade of encodings each one used, as ``amudai-cmd inspect -vvv``
does: ``"Delta[FLBitPack]"`` is a Delta block whose deltas are bit-packed,
``"RunLength[Plain, FLBitPack]"`` one whose run values are plain and run lengths bit-packed.
Bit buffers (Boolean data, presence) are streams of u8 and are named as such.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from ...generated import amudai_shard_pb2 as spb
from ._deps import np
from .blocks import TRACE, decode_binary_values, decode_numeric_values
from .model import _BYTES_TYPES, BUFFER_KINDS, _dtype_of

if TYPE_CHECKING:
    from .reader import AmudaiShard

__all__ = ["block_encodings", "cascade"]


def cascade(trace: list[tuple[int, str]]) -> str:
    """A block's trace as text: ``[(0, "RunLength"), (1, "Plain"), (1, "FLBitPack")]`` is
    ``"RunLength[Plain, FLBitPack]"``."""
    def walk(i: int, depth: int) -> tuple[str, int]:
        name = trace[i][1]
        i += 1
        kids = []
        while i < len(trace) and trace[i][0] > depth:
            kid, i = walk(i, trace[i][0])
            kids.append(kid)
        return name + (f"[{', '.join(kids)}]" if kids else ""), i

    parts = []
    i = 0
    while i < len(trace):
        part, i = walk(i, trace[i][0])
        parts.append(part)
    return ", ".join(parts)


def block_encodings(shard: AmudaiShard) -> dict[tuple[int, int, str], Counter[str]]:
    """``(stripe, schema id, buffer kind) -> Counter(cascade -> blocks)`` for every
    block-stream buffer of the shard (value dictionaries and range indexes are not block
    streams of values and are left out)."""
    out: dict[tuple[int, int, str], Counter[str]] = {}
    for k in range(len(shard.stripes)):
        for node in shard.iter_fields():
            sfd = shard.stripe_field(k, node.schema_id)
            if sfd is None or sfd.field.HasField("constant_value"):
                continue
            field = f"/stripes/{k}/fields/{node.path}"
            bufs = shard._buffers(sfd, field)
            for kind, buf in bufs.items():
                if kind not in (spb.DATA, spb.OFFSETS, spb.PRESENCE) or \
                        not buf.HasField("block_map"):
                    continue
                if kind == spb.OFFSETS:
                    dtype: np.dtype | None = np.dtype("<u8")
                elif kind == spb.PRESENCE or node.type == "Boolean":
                    dtype = np.dtype(np.uint8)
                elif spb.VALUE_DICTIONARY in bufs:
                    dtype = np.dtype("<u4")
                else:
                    dtype = _dtype_of(node)
                name = BUFFER_KINDS.get(kind, str(kind))
                seen: Counter[str] = out.setdefault((k, node.schema_id, name), Counter())
                for n, parts, _, base, where in shard._block_parts(buf, f"{field}/{name}"):
                    trace: list[tuple[int, str]] = []
                    token = TRACE.set(trace)
                    try:
                        if dtype is not None:
                            decode_numeric_values(parts.values, n, dtype,
                                                  base=base + parts.values_offset, field=where)
                        elif node.type in _BYTES_TYPES:
                            fixed = node.fixed_size if node.type in ("FixedSizeBinary",
                                                                     "Guid") else 0
                            decode_binary_values(parts.values, n, fixed or
                                                 (16 if node.type == "Guid" else 0),
                                                 base=base + parts.values_offset, field=where)
                    finally:
                        TRACE.reset(token)
                    seen[cascade(trace)] += 1
    return out
