# This is a generated file! Please edit source .ksy file and use kaitai-struct-compiler to rebuild
# type: ignore

import kaitaistruct
from kaitaistruct import KaitaiStruct, KaitaiStream, BytesIO


if getattr(kaitaistruct, 'API_VERSION', (0, 9)) < (0, 11):
    raise Exception("Incompatible Kaitai Struct Python API: 0.11 or later is required, but you have %s" % (kaitaistruct.__version__))

class NgCompressedSegmentation(KaitaiStruct):
    """One chunk of a Neuroglancer "precomputed" volume scale whose `encoding` is
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
    
    .. seealso::
       Source - https://github.com/google/neuroglancer/blob/v2.40.1/src/sliceview/compressed_segmentation/README.md
    
    
    .. seealso::
       Source - https://github.com/google/neuroglancer/blob/v2.40.1/src/datasource/precomputed/volume.md#compressed_segmentation-chunk-encoding
    """
    def __init__(self, _io, _parent=None, _root=None):
        super(NgCompressedSegmentation, self).__init__(_io)
        self._parent = _parent
        self._root = _root or self
        self._read()

    def _read(self):
        pass


    def _fetch_instances(self):
        pass
        _ = self.channel_offsets
        if hasattr(self, '_m_channel_offsets'):
            pass
            self._m_channel_offsets._fetch_instances()

        _ = self.channels
        if hasattr(self, '_m_channels'):
            pass
            for i in range(len(self._m_channels)):
                pass
                self._m_channels[i]._fetch_instances()


        _ = self.num_channels
        if hasattr(self, '_m_num_channels'):
            pass


    class BlockHeader(KaitaiStruct):
        """Where one block's lookup table and encoded values lie, and how wide the values are."""
        def __init__(self, _io, _parent=None, _root=None):
            super(NgCompressedSegmentation.BlockHeader, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.ofs_lookup_table = self._io.read_bits_int_le(24)
            self.encoded_bits = self._io.read_bits_int_le(8)
            if not  ((self.encoded_bits == 0) or (self.encoded_bits == 1) or (self.encoded_bits == 2) or (self.encoded_bits == 4) or (self.encoded_bits == 8) or (self.encoded_bits == 16) or (self.encoded_bits == 32)) :
                raise kaitaistruct.ValidationNotAnyOfError(self.encoded_bits, self._io, u"/types/block_header/seq/1")
            self.ofs_encoded_values = self._io.read_u4le()


        def _fetch_instances(self):
            pass


    class Channel(KaitaiStruct):
        """One channel's data, from its offset to the end of the chunk (tables and encoded values
        are addressed from the channel's start and may lie anywhere after the headers).
        """
        def __init__(self, num_blocks, _io, _parent=None, _root=None):
            super(NgCompressedSegmentation.Channel, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self.num_blocks = num_blocks
            self._read()

        def _read(self):
            self.block_headers = self._io.read_bytes(self.num_blocks * 8)


        def _fetch_instances(self):
            pass
            _ = self.blocks
            if hasattr(self, '_m_blocks'):
                pass
                for i in range(len(self._m_blocks)):
                    pass
                    self._m_blocks[i]._fetch_instances()



        @property
        def blocks(self):
            if hasattr(self, '_m_blocks'):
                return self._m_blocks

            _pos = self._io.pos()
            self._io.seek(0)
            self._m_blocks = []
            for i in range(self.num_blocks):
                self._m_blocks.append(NgCompressedSegmentation.BlockHeader(self._io, self, self._root))

            self._io.seek(_pos)
            return getattr(self, '_m_blocks', None)


    class ChannelOffsets(KaitaiStruct):
        """The table at the start of the chunk, one entry per channel."""
        def __init__(self, num_channels, _io, _parent=None, _root=None):
            super(NgCompressedSegmentation.ChannelOffsets, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self.num_channels = num_channels
            self._read()

        def _read(self):
            self.ofs_channels = []
            for i in range(self.num_channels):
                self.ofs_channels.append(self._io.read_u4le())



        def _fetch_instances(self):
            pass
            for i in range(len(self.ofs_channels)):
                pass



    class ChannelView(KaitaiStruct):
        """Navigation from a channel offset to its block headers (root only)."""
        def __init__(self, idx, _io, _parent=None, _root=None):
            super(NgCompressedSegmentation.ChannelView, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self.idx = idx
            self._read()

        def _read(self):
            pass


        def _fetch_instances(self):
            pass
            _ = self.data
            if hasattr(self, '_m_data'):
                pass
                self._m_data._fetch_instances()

            _ = self.first_block
            if hasattr(self, '_m_first_block'):
                pass
                self._m_first_block._fetch_instances()


        @property
        def data(self):
            if hasattr(self, '_m_data'):
                return self._m_data

            io = self._root._io
            _pos = io.pos()
            io.seek(self.ofs_channel)
            self._raw__m_data = io.read_bytes(self._root._io.size() - self.ofs_channel)
            _io__raw__m_data = KaitaiStream(BytesIO(self._raw__m_data))
            self._m_data = NgCompressedSegmentation.Channel(self.first_block.ofs_encoded_values // 2, _io__raw__m_data, self, self._root)
            io.seek(_pos)
            return getattr(self, '_m_data', None)

        @property
        def first_block(self):
            """Block 0's header, whose encoded values follow the last header."""
            if hasattr(self, '_m_first_block'):
                return self._m_first_block

            io = self._root._io
            _pos = io.pos()
            io.seek(self.ofs_channel)
            self._m_first_block = NgCompressedSegmentation.BlockHeader(io, self, self._root)
            io.seek(_pos)
            return getattr(self, '_m_first_block', None)

        @property
        def ofs_channel(self):
            """Byte offset of the channel in the chunk."""
            if hasattr(self, '_m_ofs_channel'):
                return self._m_ofs_channel

            self._m_ofs_channel = self._root.channel_offsets.ofs_channels[self.idx] * 4
            return getattr(self, '_m_ofs_channel', None)


    @property
    def channel_offsets(self):
        if hasattr(self, '_m_channel_offsets'):
            return self._m_channel_offsets

        _pos = self._io.pos()
        self._io.seek(0)
        self._m_channel_offsets = NgCompressedSegmentation.ChannelOffsets(self.num_channels, self._io, self, self._root)
        self._io.seek(_pos)
        return getattr(self, '_m_channel_offsets', None)

    @property
    def channels(self):
        """Each channel's block headers (Web IDE view)."""
        if hasattr(self, '_m_channels'):
            return self._m_channels

        self._m_channels = []
        for i in range(self.num_channels):
            self._m_channels.append(NgCompressedSegmentation.ChannelView(i, self._io, self, self._root))

        return getattr(self, '_m_channels', None)

    @property
    def num_channels(self):
        """Channel 0's offset in words, which every encoder makes the channel count (Web IDE
        view only; shardkit takes the count from the `info` file).
        """
        if hasattr(self, '_m_num_channels'):
            return self._m_num_channels

        _pos = self._io.pos()
        self._io.seek(0)
        self._m_num_channels = self._io.read_u4le()
        self._io.seek(_pos)
        return getattr(self, '_m_num_channels', None)


