// This is a generated file! Please edit source .ksy file and use kaitai-struct-compiler to rebuild

(function (root, factory) {
  if (typeof define === 'function' && define.amd) {
    define(['exports', 'kaitai-struct/KaitaiStream', './Uleb128'], factory);
  } else if (typeof exports === 'object' && exports !== null && typeof exports.nodeType !== 'number') {
    factory(exports, require('kaitai-struct/KaitaiStream'), require('./Uleb128'));
  } else {
    factory(root.Zs || (root.Zs = {}), root.KaitaiStream, root.Uleb128 || (root.Uleb128 = {}));
  }
})(typeof self !== 'undefined' ? self : this, function (Zs_, KaitaiStream, Uleb128_) {
/**
 * A ZS file (njsmith/zs, `zs` 0.10.0 on PyPI, 2014; the released successor of ZSS) stores a
 * sorted multiset of byte strings ("records") in compressed blocks, with a tree of index blocks
 * over them, so that a reader finds the records from a given key or with a given prefix by
 * reading only the blocks on one path. Public data sets were distributed in it (for example the
 * Google Books N-gram corpora).
 * 
 * Layout: an 8-byte magic, a u8 header length N, the N header bytes, a CRC-64-xz of those N
 * bytes, then blocks back to back up to the end of the file. Every position stored in the format
 * is an absolute byte offset in the file.
 * 
 * A block is a uleb128 length L, then L bytes (a level byte and the compressed payload), then a
 * u8 CRC-64-xz of those L bytes. Level 0 is a data block, 1..63 an index block, 64 and above an
 * extension block that readers skip. Payloads are compressed with the header's codec: `none`
 * (stored as is: this schema parses the bodies, `blocks/N/body/payload`), `deflate` (raw RFC
 * 1951 stream) or `lzma2;dsize=2^20` (raw LZMA2 stream, 1 MiB dictionary). Decompression is left
 * to host code on purpose; host code parses the decompressed bodies with `data_block_body` and
 * `index_block_body`.
 * 
 * CRC-64-xz is the CRC of the .xz format (polynomial 0x42f0e1eba9ea3693 reflected, init and xor
 * out all ones; check value 0x995dc9bbdf1939fa for "123456789").
 * 
 * Meaning the schema cannot check (host code does): records are sorted (memcmp order,
 * duplicates allowed) within and across data blocks in file order; an index key is <= the first
 * record under its child and >= every record before it; a child is exactly one level below its
 * parent; an entry's length is its child's whole length; every block but the root is
 * referenced exactly once; `len_file` is the file's size; `sha256` is the SHA-256 of the
 * decompressed data block payloads in file order.
 * 
 * An unfinished file begins `ab 5a 53 74 6f 42 65 01` ("ZStoBe") instead; it is refused.
 * @see {@link https://github.com/njsmith/zs/blob/v0.10.0/doc/format.rst|Source}
 * @see {@link https://github.com/njsmith/zs/blob/v0.10.0/zs/common.py|Source}
 */

var Zs = (function() {
  function Zs(_io, _parent, _root) {
    this._io = _io;
    this._parent = _parent;
    this._root = _root || this;

    this._read();
  }
  Zs.prototype._read = function() {
    this.magic = this._io.readBytes(8);
    if (!((KaitaiStream.byteArrayCompare(this.magic, new Uint8Array([171, 90, 83, 102, 105, 76, 101, 1])) == 0))) {
      throw new KaitaiStream.ValidationNotEqualError(new Uint8Array([171, 90, 83, 102, 105, 76, 101, 1]), this.magic, this._io, "/seq/0");
    }
    this.lenHeader = this._io.readU8le();
    this._raw_header = this._io.readBytes(this.lenHeader);
    var _io__raw_header = new KaitaiStream(this._raw_header);
    this.header = new Header(_io__raw_header, this, this._root);
    this.headerCrc64xz = this._io.readU8le();
  }

  /**
   * One block: its length, the level byte and the payload (the length counts both), and the
   * CRC-64-xz of those bytes as stored (compressed).
   * @see {@link https://github.com/njsmith/zs/blob/v0.10.0/doc/format.rst#blocks|Source}
   */

  var Block = Zs.Block = (function() {
    function Block(_io, _parent, _root, isNoneCodec) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;
      this.isNoneCodec = isNoneCodec;

      this._read();
    }
    Block.prototype._read = function() {
      this.lenBody = new Uleb128_.Uleb128(this._io, null, null);
      this._raw_body = this._io.readBytes(this.lenBody.value);
      var _io__raw_body = new KaitaiStream(this._raw_body);
      this.body = new BlockBody(_io__raw_body, this, this._root, this.isNoneCodec);
      this.crc64xz = this._io.readU8le();
    }

    /**
     * Number of bytes of `body` (level byte and payload).
     */

    /**
     * CRC-64-xz of `body`.
     */

    /**
     * The file's codec is `none`, so payloads are parsed as bodies.
     */

    return Block;
  })();

  /**
   * The level byte and the payload of a block.
   */

  var BlockBody = Zs.BlockBody = (function() {
    function BlockBody(_io, _parent, _root, isNoneCodec) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;
      this.isNoneCodec = isNoneCodec;

      this._read();
    }
    BlockBody.prototype._read = function() {
      this.level = this._io.readU1();
      switch ((this.isNoneCodec ? (this.level == 0 ? 0 : (this.level < 64 ? 1 : 2)) : 2)) {
      case 0:
        this._raw_payload = this._io.readBytesFull();
        var _io__raw_payload = new KaitaiStream(this._raw_payload);
        this.payload = new DataBlockBody(_io__raw_payload, this, this._root);
        break;
      case 1:
        this._raw_payload = this._io.readBytesFull();
        var _io__raw_payload = new KaitaiStream(this._raw_payload);
        this.payload = new IndexBlockBody(_io__raw_payload, this, this._root);
        break;
      default:
        this.payload = this._io.readBytesFull();
        break;
      }
    }

    /**
     * 0 for a data block, 1..63 for an index block, 64 and above for an extension block.
     */

    /**
     * The encoded payload (raw bytes for compressed files and for extension blocks).
     */

    return BlockBody;
  })();

  /**
   * Decoded payload of a data block: at least one record, back to back, in non-decreasing
   * memcmp order, until the payload is used up (no count, no terminator).
   * @see {@link https://github.com/njsmith/zs/blob/v0.10.0/doc/format.rst#data-block-payload|Source}
   */

  var DataBlockBody = Zs.DataBlockBody = (function() {
    function DataBlockBody(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    DataBlockBody.prototype._read = function() {
      this.records = [];
      var i = 0;
      while (!this._io.isEof()) {
        this.records.push(new DataRecord(this._io, this, this._root));
        i++;
      }
    }

    return DataBlockBody;
  })();

  var DataRecord = Zs.DataRecord = (function() {
    function DataRecord(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    DataRecord.prototype._read = function() {
      this.lenRecord = new Uleb128_.Uleb128(this._io, null, null);
      this.record = this._io.readBytes(this.lenRecord.value);
    }

    /**
     * The record (any bytes, possibly empty).
     */

    return DataRecord;
  })();

  /**
   * @see {@link https://github.com/njsmith/zs/blob/v0.10.0/doc/format.rst#header|Source}
   */

  var Header = Zs.Header = (function() {
    function Header(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    Header.prototype._read = function() {
      this.ofsRootIndex = this._io.readU8le();
      this.lenRootIndex = this._io.readU8le();
      this.lenFile = this._io.readU8le();
      this.sha256 = this._io.readBytes(32);
      this.codec = KaitaiStream.bytesToStr(KaitaiStream.bytesTerminate(this._io.readBytes(16), 0, false), "ASCII");
      this.lenMetadata = this._io.readU8le();
      this.metadata = KaitaiStream.bytesToStr(this._io.readBytes(this.lenMetadata), "UTF-8");
      this.extensions = this._io.readBytesFull();
    }

    /**
     * Absolute offset of the root index block (2**63 - 1 while the file is unfinished).
     */

    /**
     * Bytes of the root index block, its length field and CRC included.
     */

    /**
     * Size of the whole file in bytes (detects a truncation at a block boundary).
     */

    /**
     * SHA-256 of the decompressed payloads of all data blocks, concatenated in file order.
     */

    /**
     * Codec name, NUL-padded; `none`, `deflate` or `lzma2;dsize=2^20`.
     */

    /**
     * JSON text of an object (the reference writes it with ensure_ascii, so ASCII).
     */

    /**
     * Room for later fields, up to the end of the header; readers ignore it.
     */

    return Header;
  })();

  /**
   * Decoded payload of an index block (level 1..63): at least one entry, keys non-decreasing.
   * @see {@link https://github.com/njsmith/zs/blob/v0.10.0/doc/format.rst#index-block-payload|Source}
   */

  var IndexBlockBody = Zs.IndexBlockBody = (function() {
    function IndexBlockBody(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    IndexBlockBody.prototype._read = function() {
      this.entries = [];
      var i = 0;
      while (!this._io.isEof()) {
        this.entries.push(new IndexEntry(this._io, this, this._root));
        i++;
      }
    }

    return IndexBlockBody;
  })();

  var IndexEntry = Zs.IndexEntry = (function() {
    function IndexEntry(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    IndexEntry.prototype._read = function() {
      this.lenKey = new Uleb128_.Uleb128(this._io, null, null);
      this.key = this._io.readBytes(this.lenKey.value);
      this.ofsBlock = new Uleb128_.Uleb128(this._io, null, null);
      this.lenBlock = new Uleb128_.Uleb128(this._io, null, null);
    }

    /**
     * Lower bound of the child's first record (at least every record before the child).
     */

    /**
     * Absolute offset of the child block, one level below this block.
     */

    /**
     * Bytes of the child block, its length field and CRC included.
     */

    return IndexEntry;
  })();

  /**
   * Every block in file order.
   */
  Object.defineProperty(Zs.prototype, 'blocks', {
    get: function() {
      if (this._m_blocks !== undefined)
        return this._m_blocks;
      var _pos = this._io.pos;
      this._io.seek(this.ofsBlocks);
      this._m_blocks = [];
      var i = 0;
      while (!this._io.isEof()) {
        this._m_blocks.push(new Block(this._io, this, this._root, this.isNoneCodec));
        i++;
      }
      this._io.seek(_pos);
      return this._m_blocks;
    }
  });

  /**
   * The bytes `header_crc64xz` covers.
   */
  Object.defineProperty(Zs.prototype, 'headerCrc64xzInput', {
    get: function() {
      if (this._m_headerCrc64xzInput !== undefined)
        return this._m_headerCrc64xzInput;
      var _pos = this._io.pos;
      this._io.seek(16);
      this._m_headerCrc64xzInput = this._io.readBytes(this.lenHeader);
      this._io.seek(_pos);
      return this._m_headerCrc64xzInput;
    }
  });

  /**
   * Whether block payloads are stored uncompressed (and are parsed here).
   */
  Object.defineProperty(Zs.prototype, 'isNoneCodec', {
    get: function() {
      if (this._m_isNoneCodec !== undefined)
        return this._m_isNoneCodec;
      this._m_isNoneCodec = this.header.codec == "none";
      return this._m_isNoneCodec;
    }
  });

  /**
   * Absolute offset of the first block (magic, length, header and CRC come before).
   */
  Object.defineProperty(Zs.prototype, 'ofsBlocks', {
    get: function() {
      if (this._m_ofsBlocks !== undefined)
        return this._m_ofsBlocks;
      this._m_ofsBlocks = 24 + this.lenHeader;
      return this._m_ofsBlocks;
    }
  });

  /**
   * The root index block, read in one piece of the length the header gives.
   */
  Object.defineProperty(Zs.prototype, 'root', {
    get: function() {
      if (this._m_root !== undefined)
        return this._m_root;
      var _pos = this._io.pos;
      this._io.seek(this.header.ofsRootIndex);
      this._raw__m_root = this._io.readBytes(this.header.lenRootIndex);
      var _io__raw__m_root = new KaitaiStream(this._raw__m_root);
      this._m_root = new Block(_io__raw__m_root, this, this._root, this.isNoneCodec);
      this._io.seek(_pos);
      return this._m_root;
    }
  });

  /**
   * 0xab, "ZSfiLe", then the format version 1.
   */

  /**
   * Length N of the header that follows (the length field and the CRC not included).
   */

  /**
   * CRC-64-xz of the N header bytes only (`header_crc64xz_input`).
   */

  return Zs;
})();
Zs_.Zs = Zs;
});
