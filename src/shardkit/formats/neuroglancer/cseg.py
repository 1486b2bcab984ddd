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
from typing import TYPE_CHECKING

from kaitaistruct import BytesIO, KaitaiStream

from ..._kaitai import kaitai_errors
from ..._lazy import lazy_module
from ...errors import LayoutError
from ...generated.ng_compressed_segmentation import NgCompressedSegmentation

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_module("numpy")

__all__ = ["BIT_WIDTHS", "LABEL_TYPES", "MAX_PADDED_VOXELS", "decode_compressed_segmentation"]

BIT_WIDTHS = (0, 1, 2, 4, 8, 16, 32)  # the values encoded_bits may take
LABEL_TYPES = ("uint32", "uint64")  # the data types the encoding holds
MAX_PADDED_VOXELS = 1 << 27  # voxels of a chunk padded to whole blocks (1 GiB of indices)


def decode_compressed_segmentation(data: bytes, shape: Sequence[int],
                                   block_size: Sequence[int], dtype: str | np.dtype,
                                   *, field: str = "",
                                   max_padded_voxels: int = MAX_PADDED_VOXELS) -> np.ndarray:
    """Decode one ``compressed_segmentation`` chunk.

    Args:
        data: The chunk's bytes (after the shard's ``data_encoding`` is undone).
        shape: ``(channels, z, y, x)`` of the chunk, edge chunks clipped to the volume.
        block_size: The scale's ``compressed_segmentation_block_size`` ``(x, y, z)``.
        dtype: ``uint32`` or ``uint64``.
        field: Prefix of the field paths in errors (``/chunks/1234``).
        max_padded_voxels: Refuse a chunk that, padded to whole blocks, has more voxels
            (the decoder holds an 8-byte table index for each).

    Returns:
        A C-ordered ``(channels, z, y, x)`` array of little-endian ``dtype`` labels.

    Raises:
        LayoutError: A channel offset, block header, table index or the chunk's length does
            not fit the bytes present (the offset is a byte offset in ``data``).
        ValueError: ``dtype`` is not uint32/uint64, a shape or block size is not positive, or
            the padded chunk has more than ``max_padded_voxels`` voxels.
    """
    dt = np.dtype(dtype)
    if dt.kind != "u" or dt.itemsize not in (4, 8):
        raise ValueError(f"compressed_segmentation holds uint32 or uint64 labels, not {dt}")
    channels, dz, dy, dx = (int(v) for v in shape)
    bx, by, bz = (int(v) for v in block_size)
    if min(channels, dz, dy, dx, bx, by, bz) < 1:
        raise ValueError(f"shape {tuple(shape)} and block size {tuple(block_size)} must be "
                         "positive")
    grid = (-(-dz // bz), -(-dy // by), -(-dx // bx))
    padded = grid[0] * bz * grid[1] * by * grid[2] * bx
    if padded > max_padded_voxels:
        raise ValueError(f"a chunk of {dx} x {dy} x {dz} voxels in blocks of {bx} x {by} x {bz} "
                         f"pads to {padded} voxels, more than {max_padded_voxels}")
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
    channel = words[base:]
    groups = [(b, rows) for b in BIT_WIDTHS[1:] if (rows := np.flatnonzero(bits == b)).size]
    if len(groups) == 1 and len(groups[0][1]) == num_blocks:  # one width for every block
        b, rows = groups[0]
        index = _unpack(channel, ofs_values, rows, b, block_volume).astype(np.int64)
    else:
        index = np.zeros((num_blocks, block_volume), dtype=np.int64)  # 0 bits: index 0
        for b, rows in groups:
            index[rows] = _unpack(channel, ofs_values, rows, b, block_volume)

    # one axis per block grid dimension and per position in the block: (gz, gy, gx, bz, by, bx)
    dz, dy, dx = target.shape
    index6 = index.reshape(gz, gy, gx, bz, by, bx)
    # the padding of edge blocks may hold any index: make it 0, which every table has
    padded = False
    if dz % bz:
        index6[gz - 1, :, :, dz - (gz - 1) * bz:] = 0
        padded = True
    if dy % by:
        index6[:, gy - 1, :, :, dy - (gy - 1) * by:] = 0
        padded = True
    if dx % bx:
        index6[:, :, gx - 1, :, :, dx - (gx - 1) * bx:] = 0
        padded = True
    bad = np.flatnonzero(index.max(axis=1) >= capacity)
    if bad.size:
        i = int(bad[0])
        k = int(np.argmax(index[i] >= capacity[i]))  # the voxel's place in its block
        x = i % gx * bx + k % bx
        y = i // gx % gy * by + k // bx % by
        z = i // (gx * gy) * bz + k // (bx * by)
        word = int(ofs_values[i]) + k * int(bits[i]) // 32
        raise LayoutError(f"block {i}: voxel ({x}, {y}, {z}) has table index "
                          f"{int(index[i, k])}, past the lookup table at word "
                          f"{int(ofs_table[i])} ({int(capacity[i])} values before the end of "
                          "the chunk)", offset=4 * (base + word),
                          field=f"{field}/blocks/{i}/encoded_values")
    if label_words == 2:
        index6 *= 2  # the word of each voxel's label, once the table offset is added
    index6 += ofs_table.reshape(gz, gy, gx, 1, 1, 1)
    if label_words == 2:  # the uint64 starting at each word: one gather per voxel
        table = channel[:-1].astype(np.uint64) | (channel[1:].astype(np.uint64) << np.uint64(32))
    else:
        table = channel
    blocks = table[index6].transpose(0, 3, 1, 4, 2, 5)  # (gz, bz, gy, by, gx, bx)
    if not padded:  # whole blocks: one copy into the output
        target.reshape(blocks.shape)[...] = blocks
    else:
        target[...] = blocks.reshape(gz * bz, gy * by, gx * bx)[:dz, :dy, :dx]

def _unpack(channel: np.ndarray, ofs_values: np.ndarray, rows: np.ndarray, bits: int,
            block_volume: int) -> np.ndarray:
    """The ``block_volume`` table indices of each block in ``rows`` (all ``bits`` wide), as a
    ``(len(rows), block_volume)`` array of unsigned integers of at most ``bits`` bits.

    The values are packed from the least significant bit of little-endian words, and 32 is a
    multiple of every width, so each width is a little-endian view of the words (8, 16, 32
    bits) or a few shifts of their bytes (1, 2, 4 bits).
    """
    n = (bits * block_volume + 31) // 32
    gathered = channel[ofs_values[rows, None] + np.arange(n)]  # (blocks, n) u4 words
    if bits >= 8:
        values = gathered.view({8: "<u1", 16: "<u2", 32: "<u4"}[bits])
    else:
        octets = gathered.view("<u1")
        per_octet = 8 // bits
        values = octets[:, :, None] >> (np.arange(per_octet, dtype=np.uint8) * bits)
        values &= np.uint8((1 << bits) - 1)
        values = values.reshape(len(rows), -1)
    return values[:, :block_volume]
