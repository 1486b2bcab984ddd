// This is a generated file! Please edit source .ksy file and use kaitai-struct-compiler to rebuild

(function (root, factory) {
  if (typeof define === 'function' && define.amd) {
    define(['exports', 'kaitai-struct/KaitaiStream'], factory);
  } else if (typeof exports === 'object' && exports !== null && typeof exports.nodeType !== 'number') {
    factory(exports, require('kaitai-struct/KaitaiStream'));
  } else {
    factory(root.NgCompressedSegmentation || (root.NgCompressedSegmentation = {}), root.KaitaiStream);
  }
})(typeof self !== 'undefined' ? self : this, function (NgCompressedSegmentation_, KaitaiStream) {
/**
 * One chunk of a Neuroglancer "precomputed" volume scale whose `encoding` is
 * "compressed_segmentation" (uint32 or uint64 labels): the value stored under the chunk's
 * compressed Morton code in a shard, or the chunk file of an unsharded scale. Written by
 * tensorstore, cloud-volume (the compressed-segmentation package), igneous and Neuroglancer.
 * 
 * The chunk starts with one u4 per channel: the offset, in 4-byte words from the start of the
 * chunk, of that channel's data. A channel covers the chunk's voxels (edge chunks clipped to
 * the volume), cut into blocks of the scale's `compressed_segmentation_block_size` (bx, by,
 * bz); the chunk is padded at its upper bound to whole blocks. The channel starts with one
 * 8-byte block header per block, blocks in x-fastest order (header of block (x, y, z) at word
 * 2 * (x + gx * (y + gy * z))). A header gives the lookup table's offset (24 bits), the number
 * of bits per encoded value (0, 1, 2, 4, 8, 16 or 32) and the encoded values' offset, both
 * offsets in 4-byte words from the start of the channel. The encoded values are
 * bx * by * bz indices into the lookup table, x-fastest over the whole (padded) block, packed
 * into little-endian u4 words from the least significant bit: index i sits at bit
 * (i * encoded_bits) % 32 of word ofs_encoded_values + (i * encoded_bits) / 32. With 0 bits
 * every voxel has the table's first value. A lookup table holds u4 labels (data_type uint32)
 * or u8 labels (uint64, two words, little-endian); blocks may share a table, and tables and
 * values may lie in any order after the headers. Nothing says where a table ends: it holds at
 * least the largest index any in-chunk voxel of the block uses, plus one.
 * 
 * Neither the channel count, the chunk's shape nor the block size is stored: they come from
 * the `info` file. shardkit therefore reads a chunk with the parametrised types
 * channel_offsets(num_channels) and channel(num_blocks), and unpacks the encoded values
 * itself (src/shardkit/formats/neuroglancer/cseg.py). The root type, for the Kaitai Web IDE,
 * infers both counts from what every encoder writes: channel 0 starts right after the channel
 * offsets (so its offset is the channel count) and block 0's encoded values start right after
 * a channel's block headers (so half their offset is the block count).
 * @see {@link https://github.com/google/neuroglancer/blob/v2.40.1/src/sliceview/compressed_segmentation/README.md|Source}
 * @see {@link https://github.com/google/neuroglancer/blob/v2.40.1/src/datasource/precomputed/volume.md#compressed_segmentation-chunk-encoding|Source}
 */

var NgCompressedSegmentation = (function() {
  function NgCompressedSegmentation(_io, _parent, _root) {
    this._io = _io;
    this._parent = _parent;
    this._root = _root || this;

    this._read();
  }
  NgCompressedSegmentation.prototype._read = function() {
  }

  /**
   * Where one block's lookup table and encoded values lie, and how wide the values are.
   */

  var BlockHeader = NgCompressedSegmentation.BlockHeader = (function() {
    function BlockHeader(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    BlockHeader.prototype._read = function() {
      this.ofsLookupTable = this._io.readBitsIntLe(24);
      this.encodedBits = this._io.readBitsIntLe(8);
      if (!( ((this.encodedBits == 0) || (this.encodedBits == 1) || (this.encodedBits == 2) || (this.encodedBits == 4) || (this.encodedBits == 8) || (this.encodedBits == 16) || (this.encodedBits == 32)) )) {
        throw new KaitaiStream.ValidationNotAnyOfError(this.encodedBits, this._io, "/types/block_header/seq/1");
      }
      this._io.alignToByte();
      this.ofsEncodedValues = this._io.readU4le();
    }

    /**
     * Start of the block's lookup table, in 4-byte words from the channel's start.
     */

    /**
     * Bits per encoded value; 0 means every voxel has the table's first value.
     */

    /**
     * Start of the block's encoded values, in 4-byte words from the channel's start.
     */

    return BlockHeader;
  })();

  /**
   * One channel's data, from its offset to the end of the chunk (tables and encoded values
   * are addressed from the channel's start and may lie anywhere after the headers).
   */

  var Channel = NgCompressedSegmentation.Channel = (function() {
    function Channel(_io, _parent, _root, numBlocks) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;
      this.numBlocks = numBlocks;

      this._read();
    }
    Channel.prototype._read = function() {
      this.blockHeaders = this._io.readBytes(this.numBlocks * 8);
    }
    Object.defineProperty(Channel.prototype, 'blocks', {
      get: function() {
        if (this._m_blocks !== undefined)
          return this._m_blocks;
        var _pos = this._io.pos;
        this._io.seek(0);
        this._m_blocks = [];
        for (var i = 0; i < this.numBlocks; i++) {
          this._m_blocks.push(new BlockHeader(this._io, this, this._root));
        }
        this._io.seek(_pos);
        return this._m_blocks;
      }
    });

    /**
     * num_blocks x block_header, kept as bytes (a count past the end fails at once).
     */

    /**
     * gx * gy * gz, the blocks that cover the (clipped) chunk.
     */

    return Channel;
  })();

  /**
   * The table at the start of the chunk, one entry per channel.
   */

  var ChannelOffsets = NgCompressedSegmentation.ChannelOffsets = (function() {
    function ChannelOffsets(_io, _parent, _root, numChannels) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;
      this.numChannels = numChannels;

      this._read();
    }
    ChannelOffsets.prototype._read = function() {
      this.ofsChannels = [];
      for (var i = 0; i < this.numChannels; i++) {
        this.ofsChannels.push(this._io.readU4le());
      }
    }

    /**
     * Start of each channel's data, in 4-byte words from the start of the chunk.
     */

    /**
     * The `info` file's num_channels.
     */

    return ChannelOffsets;
  })();

  /**
   * Navigation from a channel offset to its block headers (root only).
   */

  var ChannelView = NgCompressedSegmentation.ChannelView = (function() {
    function ChannelView(_io, _parent, _root, idx) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;
      this.idx = idx;

      this._read();
    }
    ChannelView.prototype._read = function() {
    }
    Object.defineProperty(ChannelView.prototype, 'data', {
      get: function() {
        if (this._m_data !== undefined)
          return this._m_data;
        var io = this._root._io;
        var _pos = io.pos;
        io.seek(this.ofsChannel);
        this._raw__m_data = io.readBytes(this._root._io.size - this.ofsChannel);
        var _io__raw__m_data = new KaitaiStream(this._raw__m_data);
        this._m_data = new Channel(_io__raw__m_data, this, this._root, Math.floor(this.firstBlock.ofsEncodedValues / 2));
        io.seek(_pos);
        return this._m_data;
      }
    });

    /**
     * Block 0's header, whose encoded values follow the last header.
     */
    Object.defineProperty(ChannelView.prototype, 'firstBlock', {
      get: function() {
        if (this._m_firstBlock !== undefined)
          return this._m_firstBlock;
        var io = this._root._io;
        var _pos = io.pos;
        io.seek(this.ofsChannel);
        this._m_firstBlock = new BlockHeader(io, this, this._root);
        io.seek(_pos);
        return this._m_firstBlock;
      }
    });

    /**
     * Byte offset of the channel in the chunk.
     */
    Object.defineProperty(ChannelView.prototype, 'ofsChannel', {
      get: function() {
        if (this._m_ofsChannel !== undefined)
          return this._m_ofsChannel;
        this._m_ofsChannel = this._root.channelOffsets.ofsChannels[this.idx] * 4;
        return this._m_ofsChannel;
      }
    });

    return ChannelView;
  })();
  Object.defineProperty(NgCompressedSegmentation.prototype, 'channelOffsets', {
    get: function() {
      if (this._m_channelOffsets !== undefined)
        return this._m_channelOffsets;
      var _pos = this._io.pos;
      this._io.seek(0);
      this._m_channelOffsets = new ChannelOffsets(this._io, this, this._root, this.numChannels);
      this._io.seek(_pos);
      return this._m_channelOffsets;
    }
  });

  /**
   * Each channel's block headers (Web IDE view).
   */
  Object.defineProperty(NgCompressedSegmentation.prototype, 'channels', {
    get: function() {
      if (this._m_channels !== undefined)
        return this._m_channels;
      this._m_channels = [];
      for (var i = 0; i < this.numChannels; i++) {
        this._m_channels.push(new ChannelView(this._io, this, this._root, i));
      }
      return this._m_channels;
    }
  });

  /**
   * Channel 0's offset in words, which every encoder makes the channel count (Web IDE
   * view only; shardkit takes the count from the `info` file).
   */
  Object.defineProperty(NgCompressedSegmentation.prototype, 'numChannels', {
    get: function() {
      if (this._m_numChannels !== undefined)
        return this._m_numChannels;
      var _pos = this._io.pos;
      this._io.seek(0);
      this._m_numChannels = this._io.readU4le();
      this._io.seek(_pos);
      return this._m_numChannels;
    }
  });

  return NgCompressedSegmentation;
})();
NgCompressedSegmentation_.NgCompressedSegmentation = NgCompressedSegmentation;
});
