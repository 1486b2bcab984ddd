"""Decoding Neuroglancer ``compressed_segmentation`` chunks into label arrays.

Layout: ``schemas/ng_compressed_segmentation.ksy`` (generated :class:`NgCompressedSegmentation`:
``ChannelOffsets(num_channels)`` is the table at the chunk's start, ``Channel(num_blocks)`` a
channel's block headers). What the schema cannot say is done here with numpy, for every
block of a channel at once: the header fields are read from the headers' bytes as one
``(num_blocks, 2)`` array of u4 words (word 0: ``ofs_lookup_table`` in its low 24 bits,
``encoded_bits`` in its high 8; word 1: ``ofs_encoded_values``, exactly ``block_header``), the
blocks are grouped by bit width, their words gathered and shifted apart, and the indices looked
up in the tables.

Every offset, bit width and table index is checked against the bytes present before it is
used, and nothing is allocated beyond what the chunk's shape (already capped by the dataset's
``max_decoded_size``) needs: a bad chunk raises :class:`~shardkit.errors.LayoutError` with the
byte offset in the (decoded) chunk and the field path, e.g.
``/chunks/1234/channels/0/blocks/5/encoded_bits``.

Offsets are read as the format's README gives them (``encodedValuesOffset`` a full 32-bit
word); tensorstore's decoder keeps only its low 24 bits, which differs only for channels over
64 MiB. An index is checked only at the voxels inside the chunk: the padding of edge blocks
may hold anything.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from kaitaistruct import BytesIO, KaitaiStream

from ..._kaitai import kaitai_errors
from ...errors import LayoutError
from ...generated.ng_compressed_segmentation import NgCompressedSegmentation

__all__ = ["BIT_WIDTHS", "LABEL_TYPES", "decode_compressed_segmentation"]

BIT_WIDTHS = (0, 1, 2, 4, 8, 16, 32)  # the values encoded_bits may take
LABEL_TYPES = ("uint32", "uint64")  # the data types the encoding holds


def decode_compressed_segmentation(data: bytes, shape: Sequence[int],
                                   block_size: Sequence[int], dtype: str | np.dtype,
                                   *, field: str = "") -> np.ndarray:
    """Decode one ``compressed_segmentation`` chunk.

    Args:
        data: The chunk's bytes (after the shard's ``data_encoding`` is undone).
        shape: ``(channels, z, y, x)`` of the chunk, edge chunks clipped to the volume.
        block_size: The scale's ``compressed_segmentation_block_size`` ``(x, y, z)``.
        dtype: ``uint32`` or ``uint64``.
        field: Prefix of the field paths in errors (``/chunks/1234``).

    Returns:
        A C-ordered ``(channels, z, y, x)`` array of little-endian ``dtype`` labels.

    Raises:
        LayoutError: A channel offset, block header, table index or the chunk's length does
            not fit the bytes present (the offset is a byte offset in ``data``).
        ValueError: ``dtype`` is not uint32/uint64, or a shape or block size is not positive.
    """
    dt = np.dtype(dtype)
    if dt.kind != "u" or dt.itemsize not in (4, 8):
        raise ValueError(f"compressed_segmentation holds uint32 or uint64 labels, not {dt}")
    channels, dz, dy, dx = (int(v) for v in shape)
    bx, by, bz = (int(v) for v in block_size)
    if min(channels, dz, dy, dx, bx, by, bz) < 1:
        raise ValueError(f"shape {tuple(shape)} and block size {tuple(block_size)} must be "
                         "positive")
    data = bytes(data)
    if len(data) % 4:
        raise LayoutError(f"compressed_segmentation chunk of {len(data)} bytes is not a whole "
                          "number of 4-byte words", offset=len(data) - len(data) % 4,
                          field=field or None)
    words = np.frombuffer(data, dtype="<u4")
    if len(words) < channels:
        raise LayoutError(f"compressed_segmentation chunk of {len(data)} bytes is too short "
                          f"for {channels} channel offsets", offset=len(data),
                          field=f"{field}/ofs_channels/{len(words)}")
    with kaitai_errors(prefix=field):
        table = NgCompressedSegmentation.ChannelOffsets(channels, KaitaiStream(BytesIO(data)))
    grid = (-(-dz // bz), -(-dy // by), -(-dx // bx))
    out = np.empty((channels, dz, dy, dx), dtype=dt.newbyteorder("<"))
    for c, ofs in enumerate(table.ofs_channels):
        if ofs > len(words):
            raise LayoutError(f"channel {c} starts at word {ofs}, past the chunk's "
                              f"{len(words)} words", offset=4 * c,
                              field=f"{field}/ofs_channels/{c}")
        _decode_channel(data, words, ofs, grid, (bz, by, bx), out[c], f"{field}/channels/{c}")
    return out


def _decode_channel(data: bytes, words: np.ndarray, base: int, grid: tuple[int, int, int],
                    block: tuple[int, int, int], target: np.ndarray, field: str) -> None:
    """Decode the channel starting at word ``base`` of ``data`` (``words``, the same bytes as
    u4) into ``target``, a ``(z, y, x)`` array of the label type."""
    gz, gy, gx = grid
    bz, by, bx = block
    num_blocks = gz * gy * gx
    avail = len(words) - base  # words from the channel's start to the end of the chunk
    if 2 * num_blocks > avail:
        raise LayoutError(f"{num_blocks} block headers need {8 * num_blocks} bytes, the "
                          f"channel has {4 * avail}", offset=4 * len(words),
                          field=f"{field}/block_headers")
    stream = KaitaiStream(BytesIO(data))
    stream.seek(4 * base)
    with kaitai_errors(prefix=field):
        ks = NgCompressedSegmentation.Channel(num_blocks, stream)
    headers = np.frombuffer(ks.block_headers, dtype="<u4").reshape(num_blocks, 2)
    ofs_table = (headers[:, 0] & 0xFFFFFF).astype(np.int64)
    bits = (headers[:, 0] >> 24).astype(np.int64)
    ofs_values = headers[:, 1].astype(np.int64)

    def header_error(i: int, name: str, within: int, message: str) -> LayoutError:
        return LayoutError(f"block {i}: {message}", offset=4 * (base + 2 * i) + within,
                           field=f"{field}/blocks/{i}/{name}")

    bad = np.flatnonzero(~np.isin(bits, BIT_WIDTHS))
    if bad.size:
        i = int(bad[0])
        raise header_error(i, "encoded_bits", 3, f"encoded_bits {int(bits[i])} is not one of "
                           f"{', '.join(map(str, BIT_WIDTHS))}")
    block_volume = bz * by * bx
    num_words = (bits * block_volume + 31) // 32
    bad = np.flatnonzero(ofs_values + num_words > avail)
    if bad.size:
        i = int(bad[0])
        raise header_error(i, "ofs_encoded_values", 4,
                           f"{int(num_words[i])} words of {int(bits[i])}-bit values at word "
                           f"{int(ofs_values[i])} end past the channel's {avail} words")
    label_words = target.dtype.itemsize // 4
    capacity = (avail - ofs_table) // label_words  # table entries before the chunk's end
    bad = np.flatnonzero(capacity < 1)
    if bad.size:
        i = int(bad[0])
        raise header_error(i, "ofs_lookup_table", 0,
                           f"the lookup table at word {int(ofs_table[i])} leaves no room for "
                           f"a value in the channel's {avail} words")

    # the indices of every voxel of every (padded) block, x-fastest within the block
    index = np.zeros((num_blocks, block_volume), dtype=np.int64)
    channel = words[base:]
    for b in BIT_WIDTHS[1:]:
        rows = np.flatnonzero(bits == b)
        if not rows.size:
            continue
        n = int(num_words[rows[0]])
        gathered = channel[ofs_values[rows, None] + np.arange(n)]  # (blocks, n) u4 words
        per_word = 32 // b
        shifts = (np.arange(per_word, dtype=np.uint32) * b).astype(np.uint32)
        mask = np.uint32((1 << b) - 1) if b < 32 else np.uint32(0xFFFFFFFF)
        values = (gathered[:, :, None] >> shifts) & mask  # (blocks, n, per_word)
        index[rows] = values.reshape(len(rows), n * per_word)[:, :block_volume]

    # one axis per block grid dimension and per position in the block: (gz, gy, gx, bz, by, bx)
    dz, dy, dx = target.shape
    index6 = index.reshape(gz, gy, gx, bz, by, bx)
    inside = None  # the voxels inside the chunk, where edge blocks are padded
    if dz % bz or dy % by or dx % bx:
        iz, iy, ix = ((np.arange(g)[:, None] * b + np.arange(b)) < d
                      for g, b, d in ((gz, bz, dz), (gy, by, dy), (gx, bx, dx)))
        inside = (iz[:, None, None, :, None, None] & iy[None, :, None, None, :, None]
                  & ix[None, None, :, None, None, :])
    over = index6 >= capacity.reshape(gz, gy, gx, 1, 1, 1)
    if inside is not None:
        over &= inside
    if over.any():
        zi, yi, xi, z, y, x = (int(v[0]) for v in np.nonzero(over))
        i = xi + gx * (yi + gy * zi)
        k = x + bx * (y + by * z)  # the voxel's place in its block
        word = int(ofs_values[i]) + k * int(bits[i]) // 32
        raise LayoutError(f"block {i}: voxel ({xi * bx + x}, {yi * by + y}, {zi * bz + z}) "
                          f"has table index {int(index6[zi, yi, xi, z, y, x])}, past the lookup "
                          f"table at word {int(ofs_table[i])} ({int(capacity[i])} values before "
                          "the end of the chunk)", offset=4 * (base + word),
                          field=f"{field}/blocks/{i}/encoded_values")
    if inside is not None:
        index6[~inside] = 0  # padding: any in-range entry (every table has one)
    index6 *= label_words  # the word of each voxel's label
    index6 += ofs_table.reshape(gz, gy, gx, 1, 1, 1)
    if label_words == 2:  # the uint64 starting at each word: one gather per voxel
        pairs = channel[:-1].astype(np.uint64) | (channel[1:].astype(np.uint64) << np.uint64(32))
        labels = pairs[index6]
    else:
        labels = channel[index6]
    blocks = labels.transpose(0, 3, 1, 4, 2, 5)  # (gz, bz, gy, by, gx, bx)
    if inside is None:  # whole blocks: one copy into the output
        target.reshape(gz, bz, gy, by, gx, bx)[...] = blocks
    else:
        target[...] = blocks.reshape(gz * bz, gy * by, gx * bx)[:dz, :dy, :dx]
