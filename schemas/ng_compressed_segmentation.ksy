meta:
  id: ng_compressed_segmentation
  title: Neuroglancer precomputed compressed_segmentation chunk
  license: CC0-1.0
  ks-version: 0.11
  endian: le
  bit-endian: le
doc: |
  One chunk of a Neuroglancer "precomputed" volume scale whose `encoding` is
  "compressed_segmentation" (uint32 or uint64 labels): the value stored under the chunk's
  compressed Morton code in a shard, or the chunk file of an unsharded scale. Written by
  tensorstore, cloud-volume (the compressed-segmentation package), igneous and Neuroglancer.

  The chunk starts with one u4 per channel: the offset, in 4-byte words from the start of the
  chunk, of that channel's data. A channel covers the chunk's voxels (edge chunks clipped to
  the volume), cut into blocks of the scale's `compressed_segmentation_block_size` (bx, by,
  bz); the chunk is padded at its upper bound to whole blocks. The channel starts with one
  8-byte block header per block, blocks in x-fastest order (header of block (x, y, z) at word
  2 * (x + gx * (y + gy * z))). A header gives the lookup table's offset (24 bits), the number
  of bits per encoded value (0, 1, 2, 4, 8, 16 or 32) and the encoded values' offset, both
  offsets in 4-byte words from the start of the channel. The encoded values are
  bx * by * bz indices into the lookup table, x-fastest over the whole (padded) block, packed
  into little-endian u4 words from the least significant bit: index i sits at bit
  (i * encoded_bits) % 32 of word ofs_encoded_values + (i * encoded_bits) / 32. With 0 bits
  every voxel has the table's first value. A lookup table holds u4 labels (data_type uint32)
  or u8 labels (uint64, two words, little-endian); blocks may share a table, and tables and
  values may lie in any order after the headers. Nothing says where a table ends: it holds at
  least the largest index any in-chunk voxel of the block uses, plus one.

  Neither the channel count, the chunk's shape nor the block size is stored: they come from
  the `info` file. shardkit therefore reads a chunk with the parametrised types
  channel_offsets(num_channels) and channel(num_blocks), and unpacks the encoded values
  itself (src/shardkit/formats/neuroglancer/cseg.py). The root type, for the Kaitai Web IDE,
  infers both counts from what every encoder writes: channel 0 starts right after the channel
  offsets (so its offset is the channel count) and block 0's encoded values start right after
  a channel's block headers (so half their offset is the block count).
doc-ref:
  - https://github.com/google/neuroglancer/blob/v2.40.1/src/sliceview/compressed_segmentation/README.md
  - https://github.com/google/neuroglancer/blob/v2.40.1/src/datasource/precomputed/volume.md#compressed_segmentation-chunk-encoding
seq: []
instances:
  num_channels:
    pos: 0
    type: u4
    doc: |
      Channel 0's offset in words, which every encoder makes the channel count (Web IDE
      view only; shardkit takes the count from the `info` file).
  channel_offsets:
    pos: 0
    type: channel_offsets(num_channels)
  channels:
    type: channel_view(_index)
    repeat: expr
    repeat-expr: num_channels
    doc: Each channel's block headers (Web IDE view).
types:
  channel_offsets:
    doc: The table at the start of the chunk, one entry per channel.
    params:
      - id: num_channels
        type: u4
        doc: The `info` file's num_channels.
    seq:
      - id: ofs_channels
        type: u4
        repeat: expr
        repeat-expr: num_channels
        doc: Start of each channel's data, in 4-byte words from the start of the chunk.
  channel:
    doc: |
      One channel's data, from its offset to the end of the chunk (tables and encoded values
      are addressed from the channel's start and may lie anywhere after the headers).
    params:
      - id: num_blocks
        type: u4
        doc: gx * gy * gz, the blocks that cover the (clipped) chunk.
    seq:
      - id: block_headers
        size: num_blocks * 8
        doc: num_blocks x block_header, kept as bytes (a count past the end fails at once).
    instances:
      blocks:
        pos: 0
        type: block_header
        repeat: expr
        repeat-expr: num_blocks
  block_header:
    doc: Where one block's lookup table and encoded values lie, and how wide the values are.
    seq:
      - id: ofs_lookup_table
        -orig-id: lookupTableOffset
        type: b24
        doc: Start of the block's lookup table, in 4-byte words from the channel's start.
      - id: encoded_bits
        -orig-id: encodedBits
        type: b8
        valid:
          any-of: [0, 1, 2, 4, 8, 16, 32]
        doc: Bits per encoded value; 0 means every voxel has the table's first value.
      - id: ofs_encoded_values
        -orig-id: encodedValuesOffset
        type: u4
        doc: Start of the block's encoded values, in 4-byte words from the channel's start.
  channel_view:
    doc: Navigation from a channel offset to its block headers (root only).
    params:
      - id: idx
        type: u4
    instances:
      ofs_channel:
        value: _root.channel_offsets.ofs_channels[idx] * 4
        doc: Byte offset of the channel in the chunk.
      first_block:
        io: _root._io
        pos: ofs_channel
        type: block_header
        doc: Block 0's header, whose encoded values follow the last header.
      data:
        io: _root._io
        pos: ofs_channel
        size: _root._io.size - ofs_channel
        type: channel(first_block.ofs_encoded_values / 2)
