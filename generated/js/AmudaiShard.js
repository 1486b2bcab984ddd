// This is a generated file! Please edit source .ksy file and use kaitai-struct-compiler to rebuild

(function (root, factory) {
  if (typeof define === 'function' && define.amd) {
    define(['exports', 'kaitai-struct/KaitaiStream'], factory);
  } else if (typeof exports === 'object' && exports !== null && typeof exports.nodeType !== 'number') {
    factory(exports, require('kaitai-struct/KaitaiStream'));
  } else {
    factory(root.AmudaiShard || (root.AmudaiShard = {}), root.KaitaiStream);
  }
})(typeof self !== 'undefined' ? self : this, function (AmudaiShard_, KaitaiStream) {
/**
 * An Amudai shard is a column store: a root file `*.amudai.shard` holding the metadata and, in
 * the single-file layout, every encoded buffer; in the two-level layout each stripe's buffers
 * live in a framed `<id>.amudai.stripe` file beside the root. Both kinds of file start and end
 * with the same 8-byte frame ("amud" + version 0.1.0).
 * 
 * The metadata are protobuf messages (and one FlatBuffers schema), each stored as a
 * length-message-checksum `record`; DataRefs inside them give absolute byte ranges. The root
 * file ends with the shard directory (the ToC): its record, the repeated u4 length, the footer.
 * This schema reads the frame and the directory; protobuf payloads stay bytes (shardkit decodes
 * them with code generated from schemas/amudai/*.proto). The other types (`encoded_block`,
 * `block_map`, `value_dictionary`) describe byte ranges the protobuf metadata point at: host code
 * (or a Web IDE user, selecting the range) applies them to `EncodedBuffer` ranges.
 * 
 * Checksums (`ck`) are XXH3-64 without seed folded to 32 bits, (h >> 32) ^ (h & 0xFFFFFFFF);
 * checking them is left to host code, as is decompression.
 * @see FORMAT_NOTES.md section 1 (container framing), 4 (encoded buffers)
 * @see {@link https://github.com/microsoft/amudai/tree/63c7da35/proto_defs/shard_format|Source}
 */

var AmudaiShard = (function() {
  AmudaiShard.BasicType = Object.freeze({
    UNIT: 0,
    BOOLEAN: 1,
    INT8: 2,
    INT16: 3,
    INT32: 4,
    INT64: 5,
    FLOAT32: 6,
    FLOAT64: 7,
    BINARY: 8,
    FIXED_SIZE_BINARY: 9,
    STRING: 10,
    GUID: 11,
    DATE_TIME: 12,
    LIST: 13,
    FIXED_SIZE_LIST: 14,
    STRUCT: 15,
    MAP: 16,
    UNION: 17,

    0: "UNIT",
    1: "BOOLEAN",
    2: "INT8",
    3: "INT16",
    4: "INT32",
    5: "INT64",
    6: "FLOAT32",
    7: "FLOAT64",
    8: "BINARY",
    9: "FIXED_SIZE_BINARY",
    10: "STRING",
    11: "GUID",
    12: "DATE_TIME",
    13: "LIST",
    14: "FIXED_SIZE_LIST",
    15: "STRUCT",
    16: "MAP",
    17: "UNION",
  });

  AmudaiShard.BlockEncoding = Object.freeze({
    PLAIN: 1,
    FL_BIT_PACK: 2,
    FRAME_OF_REFERENCE: 3,
    FUSED_FRAME_OF_REFERENCE: 4,
    DELTA: 5,
    RUN_LENGTH: 6,
    SINGLE_VALUE: 7,
    TRUNCATE_U8: 8,
    TRUNCATE_U16: 9,
    TRUNCATE_U32: 10,
    TRUNCATE_U64: 11,
    ALP: 12,
    ALP_RD: 13,
    BLOCK_DICTIONARY: 14,
    FSST: 15,
    ZSTD: 16,
    LZ4: 17,
    ZIG_ZAG: 18,
    SPARSE: 19,

    1: "PLAIN",
    2: "FL_BIT_PACK",
    3: "FRAME_OF_REFERENCE",
    4: "FUSED_FRAME_OF_REFERENCE",
    5: "DELTA",
    6: "RUN_LENGTH",
    7: "SINGLE_VALUE",
    8: "TRUNCATE_U8",
    9: "TRUNCATE_U16",
    10: "TRUNCATE_U32",
    11: "TRUNCATE_U64",
    12: "ALP",
    13: "ALP_RD",
    14: "BLOCK_DICTIONARY",
    15: "FSST",
    16: "ZSTD",
    17: "LZ4",
    18: "ZIG_ZAG",
    19: "SPARSE",
  });

  function AmudaiShard(_io, _parent, _root) {
    this._io = _io;
    this._parent = _parent;
    this._root = _root || this;

    this._read();
  }
  AmudaiShard.prototype._read = function() {
    this.header = new Frame(this._io, this, this._root);
  }

  /**
   * The tail of a block-stream buffer: segment records (one per up to segment_size blocks),
   * the n+1 segment logical offsets and record offsets, and a 40-byte footer. Parse it on
   * exactly the map's bytes (EncodedBuffer.block_map).
   * @see FORMAT_NOTES.md section 4.3
   */

  var BlockMap = AmudaiShard.BlockMap = (function() {
    function BlockMap(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    BlockMap.prototype._read = function() {
    }
    Object.defineProperty(BlockMap.prototype, 'footer', {
      get: function() {
        if (this._m_footer !== undefined)
          return this._m_footer;
        var _pos = this._io.pos;
        this._io.seek(this._io.size - 40);
        this._m_footer = new BlockMapFooter(this._io, this, this._root);
        this._io.seek(_pos);
        return this._m_footer;
      }
    });

    /**
     * Byte offset of each segment record from the start of the map; the first is 0.
     */
    Object.defineProperty(BlockMap.prototype, 'ofsSegmentRecords', {
      get: function() {
        if (this._m_ofsSegmentRecords !== undefined)
          return this._m_ofsSegmentRecords;
        var _pos = this._io.pos;
        this._io.seek((this._io.size - 40) - 8 * (this.footer.numSegments + 1));
        this._m_ofsSegmentRecords = [];
        for (var i = 0; i < this.footer.numSegments + 1; i++) {
          this._m_ofsSegmentRecords.push(this._io.readU8le());
        }
        this._io.seek(_pos);
        return this._m_ofsSegmentRecords;
      }
    });

    /**
     * First logical position of each segment; the last entry is value_count.
     */
    Object.defineProperty(BlockMap.prototype, 'segmentLogicalOffsets', {
      get: function() {
        if (this._m_segmentLogicalOffsets !== undefined)
          return this._m_segmentLogicalOffsets;
        var _pos = this._io.pos;
        this._io.seek((this._io.size - 40) - 16 * (this.footer.numSegments + 1));
        this._m_segmentLogicalOffsets = [];
        for (var i = 0; i < this.footer.numSegments + 1; i++) {
          this._m_segmentLogicalOffsets.push(this._io.readU8le());
        }
        this._io.seek(_pos);
        return this._m_segmentLogicalOffsets;
      }
    });
    Object.defineProperty(BlockMap.prototype, 'segments', {
      get: function() {
        if (this._m_segments !== undefined)
          return this._m_segments;
        var _pos = this._io.pos;
        this._io.seek(0);
        this._m_segments = [];
        for (var i = 0; i < this.footer.numSegments; i++) {
          this._m_segments.push(new BlockMapSegment(this._io, this, this._root));
        }
        this._io.seek(_pos);
        return this._m_segments;
      }
    });

    return BlockMap;
  })();

  var BlockMapFooter = AmudaiShard.BlockMapFooter = (function() {
    function BlockMapFooter(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    BlockMapFooter.prototype._read = function() {
      this.numValues = this._io.readU8le();
      this.numBlocks = this._io.readU8le();
      this.numSegments = this._io.readU8le();
      this.segmentSize = this._io.readU8le();
      this.lenData = this._io.readU8le();
    }

    /**
     * Blocks per segment (1024).
     */

    /**
     * Bytes of all blocks together, without the padding to 16 before the map.
     */

    return BlockMapFooter;
  })();

  /**
   * Sizes of up to segment_size consecutive blocks, each stored as (size - minimum) in 8, 16 or
   * 32 bits. Block offsets are relative to the start of the buffer; prefix-sum the sizes from
   * ofs_first_block.
   */

  var BlockMapSegment = AmudaiShard.BlockMapSegment = (function() {
    function BlockMapSegment(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    BlockMapSegment.prototype._read = function() {
      this.firstLogicalPos = this._io.readU8le();
      this.ofsFirstBlock = this._io.readU8le();
      this.minLogicalSize = this._io.readU4le();
      this.minBlockSize = this._io.readU4le();
      this.logicalSizeBits = this._io.readU1();
      if (!( ((this.logicalSizeBits == 8) || (this.logicalSizeBits == 16) || (this.logicalSizeBits == 32)) )) {
        throw new KaitaiStream.ValidationNotAnyOfError(this.logicalSizeBits, this._io, "/types/block_map_segment/seq/4");
      }
      this.blockSizeBits = this._io.readU1();
      if (!( ((this.blockSizeBits == 8) || (this.blockSizeBits == 16) || (this.blockSizeBits == 32)) )) {
        throw new KaitaiStream.ValidationNotAnyOfError(this.blockSizeBits, this._io, "/types/block_map_segment/seq/5");
      }
      this.numBlocks = this._io.readU2le();
      this.logicalSizes = [];
      for (var i = 0; i < this.numBlocks; i++) {
        switch (this.logicalSizeBits) {
        case 16:
          this.logicalSizes.push(this._io.readU2le());
          break;
        case 32:
          this.logicalSizes.push(this._io.readU4le());
          break;
        case 8:
          this.logicalSizes.push(this._io.readU1());
          break;
        }
      }
      this.logicalSizesPadding = this._io.readBytes(KaitaiStream.mod(4 - KaitaiStream.mod(this._io.pos, 4), 4));
      this.blockSizes = [];
      for (var i = 0; i < this.numBlocks; i++) {
        switch (this.blockSizeBits) {
        case 16:
          this.blockSizes.push(this._io.readU2le());
          break;
        case 32:
          this.blockSizes.push(this._io.readU4le());
          break;
        case 8:
          this.blockSizes.push(this._io.readU1());
          break;
        }
      }
      this.blockSizesPadding = this._io.readBytes(KaitaiStream.mod(8 - KaitaiStream.mod(this._io.pos, 8), 8));
    }

    /**
     * Bytes of this segment record, paddings included (the 28-byte head, the logical
     * sizes padded to 4, the block sizes padded to 8): the next record starts this far on.
     */
    Object.defineProperty(BlockMapSegment.prototype, 'lenRecord', {
      get: function() {
        if (this._m_lenRecord !== undefined)
          return this._m_lenRecord;
        this._m_lenRecord = Math.floor(((Math.floor(((28 + Math.floor((this.numBlocks * this.logicalSizeBits) / 8)) + 3) / 4) * 4 + Math.floor((this.numBlocks * this.blockSizeBits) / 8)) + 7) / 8) * 8;
        return this._m_lenRecord;
      }
    });

    return BlockMapSegment;
  })();

  /**
   * u8 payload length, the payload, 64 zero bytes, zero padding so that the bytes before the
   * checksum are 12 mod 16, then u4 ck(payload). The whole section is a multiple of 16 bytes.
   */

  var DictionarySection = AmudaiShard.DictionarySection = (function() {
    function DictionarySection(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    DictionarySection.prototype._read = function() {
      this.lenPayload = this._io.readU8le();
      this.payload = this._io.readBytes(this.lenPayload);
    }

    /**
     * ck of the payload only.
     */
    Object.defineProperty(DictionarySection.prototype, 'checksum', {
      get: function() {
        if (this._m_checksum !== undefined)
          return this._m_checksum;
        var _pos = this._io.pos;
        this._io.seek(this._io.size - 4);
        this._m_checksum = this._io.readU4le();
        this._io.seek(_pos);
        return this._m_checksum;
      }
    });

    return DictionarySection;
  })();

  /**
   * One block of a block-stream buffer, sliced out with the sizes of the block map. The
   * presence section exists only when the buffer has embedded presence; the checksum only
   * when it has block checksums (then it is the last 4 bytes and covers all bytes before it).
   * @see FORMAT_NOTES.md section 4.2
   */

  var EncodedBlock = AmudaiShard.EncodedBlock = (function() {
    function EncodedBlock(_io, _parent, _root, embeddedPresence, hasChecksum) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;
      this.embeddedPresence = embeddedPresence;
      this.hasChecksum = hasChecksum;

      this._read();
    }
    EncodedBlock.prototype._read = function() {
      this.lenPresence = this._io.readU4le();
      this.lenValues = this._io.readU4le();
      if (this.embeddedPresence) {
        this.presence = this._io.readBytes(this.lenPresence);
      }
      if (this.embeddedPresence) {
        this.presencePadding = this._io.readBytes(KaitaiStream.mod(8 - KaitaiStream.mod(8 + this.lenPresence, 8), 8));
      }
      this._raw_values = this._io.readBytes(this.lenValues);
      var _io__raw_values = new KaitaiStream(this._raw_values);
      this.values = new ValuesSection(_io__raw_values, this, this._root);
    }

    /**
     * ck of every byte of the block before it (header, sections and padding).
     */
    Object.defineProperty(EncodedBlock.prototype, 'checksum', {
      get: function() {
        if (this._m_checksum !== undefined)
          return this._m_checksum;
        if (this.hasChecksum) {
          var _pos = this._io.pos;
          this._io.seek(this._io.size - 4);
          this._m_checksum = this._io.readU4le();
          this._io.seek(_pos);
        }
        return this._m_checksum;
      }
    });

    /**
     * 0 (no nulls), or 1 + ... bytes starting with the presence kind (1, 2 or 3).
     */

    /**
     * Empty: no nulls. 01: all null. 02 + one byte per value (1 = present). 03 + u1 negated
     * + a portable RoaringBitmap of present (negated 0) or null (negated 1) positions.
     */

    /**
     * Zero padding to a multiple of 8 (block-relative).
     */

    return EncodedBlock;
  })();

  /**
   * The 8-byte header and footer ("amud", then version patch, minor, major).
   * @see FORMAT_NOTES.md section 1.1
   */

  var Frame = AmudaiShard.Frame = (function() {
    function Frame(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    Frame.prototype._read = function() {
      this.magic = this._io.readBytes(4);
      if (!((KaitaiStream.byteArrayCompare(this.magic, new Uint8Array([97, 109, 117, 100])) == 0))) {
        throw new KaitaiStream.ValidationNotEqualError(new Uint8Array([97, 109, 117, 100]), this.magic, this._io, "/types/frame/seq/0");
      }
      this.versionPatch = this._io.readU1();
      this.versionMinor = this._io.readU2le();
      this.versionMajor = this._io.readU1();
      if (!(this.versionMajor <= 0)) {
        throw new KaitaiStream.ValidationGreaterThanError(0, this.versionMajor, this._io, "/types/frame/seq/3");
      }
    }

    /**
     * Readers reject only a major version above their own (0); minor and patch are ignored.
     */

    return Frame;
  })();

  /**
   * A serialized metadata message: u4 length, the protobuf (or FlatBuffers) bytes, u4 ck of
   * the payload. A DataRef to a message covers the whole record (length + 8 bytes).
   * @see FORMAT_NOTES.md section 1.2
   */

  var Record = AmudaiShard.Record = (function() {
    function Record(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    Record.prototype._read = function() {
      this.lenPayload = this._io.readU4le();
      this.payload = this._io.readBytes(this.lenPayload);
      this.checksum = this._io.readU4le();
    }

    /**
     * ck(payload); the length field is not covered.
     */

    return Record;
  })();

  /**
   * A VALUE_DICTIONARY buffer (no block map): a fixed 128-byte header, then the values, offsets
   * (variable-size values only) and sorted-ids sections, each a `dictionary_section`, at
   * offsets relative to the buffer start. Parse it on exactly the buffer's bytes.
   * @see FORMAT_NOTES.md section 4.6
   */

  var ValueDictionary = AmudaiShard.ValueDictionary = (function() {
    function ValueDictionary(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    ValueDictionary.prototype._read = function() {
      this.header = new ValueDictionaryHeader(this._io, this, this._root);
    }

    /**
     * value_count + 1 u8 byte offsets into the values payload, starting at 0.
     */
    Object.defineProperty(ValueDictionary.prototype, 'offsets', {
      get: function() {
        if (this._m_offsets !== undefined)
          return this._m_offsets;
        if (this.header.ofsOffsetsEnd > this.header.ofsOffsets) {
          var _pos = this._io.pos;
          this._io.seek(this.header.ofsOffsets);
          this._raw__m_offsets = this._io.readBytes(this.header.ofsOffsetsEnd - this.header.ofsOffsets);
          var _io__raw__m_offsets = new KaitaiStream(this._raw__m_offsets);
          this._m_offsets = new DictionarySection(_io__raw__m_offsets, this, this._root);
          this._io.seek(_pos);
        }
        return this._m_offsets;
      }
    });

    /**
     * u4 ids of the non-null entries, sorted by value.
     */
    Object.defineProperty(ValueDictionary.prototype, 'sortedIds', {
      get: function() {
        if (this._m_sortedIds !== undefined)
          return this._m_sortedIds;
        var _pos = this._io.pos;
        this._io.seek(this.header.ofsSortedIds);
        this._raw__m_sortedIds = this._io.readBytes(this.header.ofsSortedIdsEnd - this.header.ofsSortedIds);
        var _io__raw__m_sortedIds = new KaitaiStream(this._raw__m_sortedIds);
        this._m_sortedIds = new DictionarySection(_io__raw__m_sortedIds, this, this._root);
        this._io.seek(_pos);
        return this._m_sortedIds;
      }
    });

    /**
     * All entries concatenated in id order.
     */
    Object.defineProperty(ValueDictionary.prototype, 'values', {
      get: function() {
        if (this._m_values !== undefined)
          return this._m_values;
        var _pos = this._io.pos;
        this._io.seek(this.header.ofsValues);
        this._raw__m_values = this._io.readBytes(this.header.ofsValuesEnd - this.header.ofsValues);
        var _io__raw__m_values = new KaitaiStream(this._raw__m_values);
        this._m_values = new DictionarySection(_io__raw__m_values, this, this._root);
        this._io.seek(_pos);
        return this._m_values;
      }
    });

    return ValueDictionary;
  })();

  var ValueDictionaryHeader = AmudaiShard.ValueDictionaryHeader = (function() {
    function ValueDictionaryHeader(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    ValueDictionaryHeader.prototype._read = function() {
      this.valueType = this._io.readU1();
      this.numValues = this._io.readU4le();
      this.nullEntryPresent = this._io.readU1();
      this.nullId = this._io.readU4le();
      this.fixedValueSize = this._io.readU4le();
      this.ofsValues = this._io.readU8le();
      this.ofsValuesEnd = this._io.readU8le();
      this.ofsOffsets = this._io.readU8le();
      this.ofsOffsetsEnd = this._io.readU8le();
      this.ofsSortedIds = this._io.readU8le();
      this.ofsSortedIdsEnd = this._io.readU8le();
      this.reserved = this._io.readBytes(62);
      this.checksum = this._io.readU4le();
    }

    /**
     * Entries, the null entry included.
     */

    /**
     * Id of the entry standing for null (0 when there is none).
     */

    /**
     * Byte size of every value; 0 for variable-size values.
     */

    /**
     * Equal to ofs_offsets when there is no offsets section.
     */

    /**
     * ck of the header's first 124 bytes.
     */

    return ValueDictionaryHeader;
  })();

  /**
   * The values section of a block; its layout after the code depends on the code.
   * @see FORMAT_NOTES.md section 4.4
   */

  var ValuesSection = AmudaiShard.ValuesSection = (function() {
    function ValuesSection(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    ValuesSection.prototype._read = function() {
      this.encoding = this._io.readU2le();
      this.body = this._io.readBytesFull();
    }

    /**
     * Plain numeric values, or an offset width and offsets for binary Plain blocks, etc.
     */

    return ValuesSection;
  })();

  /**
   * The ShardDirectory protobuf message (amudai.shard.ShardDirectory) as a record.
   */
  Object.defineProperty(AmudaiShard.prototype, 'directory', {
    get: function() {
      if (this._m_directory !== undefined)
        return this._m_directory;
      var _pos = this._io.pos;
      this._io.seek((this._io.size - 12) - (this.lenDirectory + 8));
      this._raw__m_directory = this._io.readBytes(this.lenDirectory + 8);
      var _io__raw__m_directory = new KaitaiStream(this._raw__m_directory);
      this._m_directory = new Record(_io__raw__m_directory, this, this._root);
      this._io.seek(_pos);
      return this._m_directory;
    }
  });

  /**
   * Byte-identical to the header.
   */
  Object.defineProperty(AmudaiShard.prototype, 'footer', {
    get: function() {
      if (this._m_footer !== undefined)
        return this._m_footer;
      var _pos = this._io.pos;
      this._io.seek(this._io.size - 8);
      this._m_footer = new Frame(this._io, this, this._root);
      this._io.seek(_pos);
      return this._m_footer;
    }
  });

  /**
   * Payload length of the directory record, repeated after it so that a reader finds the
   * record from the end. The reference reader refuses 16 MiB or more. Only root files have it.
   */
  Object.defineProperty(AmudaiShard.prototype, 'lenDirectory', {
    get: function() {
      if (this._m_lenDirectory !== undefined)
        return this._m_lenDirectory;
      var _pos = this._io.pos;
      this._io.seek(this._io.size - 12);
      this._m_lenDirectory = this._io.readU4le();
      if (!(this._m_lenDirectory <= 16777215)) {
        throw new KaitaiStream.ValidationGreaterThanError(16777215, this._m_lenDirectory, this._io, "/instances/len_directory");
      }
      this._io.seek(_pos);
      return this._m_lenDirectory;
    }
  });

  return AmudaiShard;
})();
AmudaiShard_.AmudaiShard = AmudaiShard;
});
