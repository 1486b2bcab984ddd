// This is a generated file! Please edit source .ksy file and use kaitai-struct-compiler to rebuild

(function (root, factory) {
  if (typeof define === 'function' && define.amd) {
    define(['exports', 'kaitai-struct/KaitaiStream', './Uleb128'], factory);
  } else if (typeof exports === 'object' && exports !== null && typeof exports.nodeType !== 'number') {
    factory(exports, require('kaitai-struct/KaitaiStream'), require('./Uleb128'));
  } else {
    factory(root.Zss || (root.Zss = {}), root.KaitaiStream, root.Uleb128 || (root.Uleb128 = {}));
  }
})(typeof self !== 'undefined' ? self : this, function (Zss_, KaitaiStream, Uleb128_) {
/**
 * A ZSS file (njsmith/zss, 2013) stores a sorted multiset of byte strings ("records") in
 * compressed blocks, with a B-tree-like index of blocks over them, so that a reader can find
 * the records from a given key or with a given prefix by reading only the blocks on one path.
 * 
 * Layout: an 8-byte magic, a u4 header length N, the N header bytes, a CRC-32C of those N bytes,
 * then blocks back to back up to the end of the file (no footer). Every file position stored in
 * the format is a "voffset": a byte offset counted from the first byte after the header CRC
 * (`ofs_data`, 16 + N).
 * 
 * A block is a level byte (0 = data block, L >= 1 = index block of height L), a uleb128 payload
 * length and the payload, encoded with the file's codec (`header.codec`): `zlib` (one RFC 1950
 * stream), `bz2` (one bzip2 stream; the original spec text says `bzip2`) or `none+crc32c` (the
 * body followed by its u4 CRC-32C). Decompression is left to host code on purpose: this schema
 * parses the body types only for `none+crc32c` files (`blocks/N/payload`); host code parses the
 * decompressed bodies of the other codecs with `data_block_body` and `index_block_body`.
 * 
 * Meaning the schema cannot check (host code does): records are sorted (memcmp order, duplicates
 * allowed) across all data blocks in voffset order; an index entry's key equals the first record
 * under its child; a child is exactly one level below its parent; child voffsets increase; every
 * block is reachable from the root exactly once.
 * 
 * An unfinished file begins `53 53 5a 1c 8e 6c 00 01` ("SSZ") instead; it is refused.
 * @see FORMAT.md sections 2-8 (shardkit ZSS corpus notes, checked byte by byte against the corpus)
 * @see {@link https://github.com/njsmith/zss/blob/8e078ea/doc/format.rst|Source}
 * @see {@link https://github.com/njsmith/zss/blob/8e078ea/zss/common.py|Source}
 */

var Zss = (function() {
  function Zss(_io, _parent, _root) {
    this._io = _io;
    this._parent = _parent;
    this._root = _root || this;

    this._read();
  }
  Zss.prototype._read = function() {
    this.magic = this._io.readBytes(8);
    if (!((KaitaiStream.byteArrayCompare(this.magic, new Uint8Array([90, 83, 83, 28, 142, 108, 0, 1])) == 0))) {
      throw new KaitaiStream.ValidationNotEqualError(new Uint8Array([90, 83, 83, 28, 142, 108, 0, 1]), this.magic, this._io, "/seq/0");
    }
    this.lenHeader = this._io.readU4le();
    this._raw_header = this._io.readBytes(this.lenHeader);
    var _io__raw_header = new KaitaiStream(this._raw_header);
    this.header = new Header(_io__raw_header, this, this._root);
    this.headerCrc32c = this._io.readU4le();
  }

  /**
   * One block: level byte, payload length, payload. The level and the length are covered by
   * no checksum; only the codec's own check guards the payload.
   * @see FORMAT.md section 4
   */

  var Block = Zss.Block = (function() {
    function Block(_io, _parent, _root, isCrc32cFramed) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;
      this.isCrc32cFramed = isCrc32cFramed;

      this._read();
    }
    Block.prototype._read = function() {
      this.level = this._io.readU1();
      this.lenPayload = new Uleb128_.Uleb128(this._io, null, null);
      switch (this.isCrc32cFramed) {
      case true:
        this._raw_payload = this._io.readBytes(this.lenPayload.value);
        var _io__raw_payload = new KaitaiStream(this._raw_payload);
        this.payload = new Crc32cPayload(_io__raw_payload, this, this._root, this.level);
        break;
      default:
        this.payload = this._io.readBytes(this.lenPayload.value);
        break;
      }
    }

    /**
     * 0 for a data block, L >= 1 for an index block whose children are at level L - 1.
     */

    /**
     * Number of payload bytes that follow.
     */

    /**
     * The encoded body (raw bytes for `zlib` and `bz2` files).
     */

    /**
     * The file's codec is `none+crc32c`, so the payload is parsed as body + CRC-32C.
     */

    return Block;
  })();

  /**
   * A `none+crc32c` payload, the body then the CRC-32C of the body.
   * @see FORMAT.md section 5
   */

  var Crc32cPayload = Zss.Crc32cPayload = (function() {
    function Crc32cPayload(_io, _parent, _root, level) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;
      this.level = level;

      this._read();
    }
    Crc32cPayload.prototype._read = function() {
      switch (this.level) {
      case 0:
        this._raw_body = this._io.readBytes(this._io.size - 4);
        var _io__raw_body = new KaitaiStream(this._raw_body);
        this.body = new DataBlockBody(_io__raw_body, this, this._root);
        break;
      default:
        this._raw_body = this._io.readBytes(this._io.size - 4);
        var _io__raw_body = new KaitaiStream(this._raw_body);
        this.body = new IndexBlockBody(_io__raw_body, this, this._root);
        break;
      }
      this.bodyCrc32c = this._io.readU4le();
    }

    /**
     * CRC-32C of `body`.
     */

    /**
     * Level of the enclosing block (picks the body type).
     */

    return Crc32cPayload;
  })();

  /**
   * Decoded body of a level-0 block: records back to back, in non-decreasing memcmp order,
   * until the body is used up (no count, no terminator).
   * @see FORMAT.md section 6.1
   */

  var DataBlockBody = Zss.DataBlockBody = (function() {
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

  var DataRecord = Zss.DataRecord = (function() {
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
   * @see FORMAT.md section 2, header fields
   */

  var Header = Zss.Header = (function() {
    function Header(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    Header.prototype._read = function() {
      this.rootVoffset = this._io.readU8le();
      this.uuid = this._io.readBytes(16);
      this.codec = KaitaiStream.bytesToStr(KaitaiStream.bytesTerminate(this._io.readBytes(16), 0, false), "ASCII");
      this.lenMetadata = this._io.readU4le();
      this.metadata = KaitaiStream.bytesToStr(this._io.readBytes(this.lenMetadata), "UTF-8");
    }

    /**
     * voffset of the root index block (0x7fff_ffff_ffff_ffff while the file is unfinished).
     */

    /**
     * Random identifier of the file, raw bytes.
     */

    /**
     * Codec name, NUL-padded; `zlib`, `bz2` (or `bzip2`) or `none+crc32c`.
     */

    /**
     * JSON text of an object (written with ensure_ascii, so ASCII). Bytes after it, up to
     * the end of the header, are ignored (the reference writer writes none).
     */

    return Header;
  })();

  /**
   * Decoded body of an index block (level L >= 1): one entry per child, keys non-decreasing,
   * child voffsets strictly increasing.
   * @see FORMAT.md section 6.2
   */

  var IndexBlockBody = Zss.IndexBlockBody = (function() {
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

  var IndexEntry = Zss.IndexEntry = (function() {
    function IndexEntry(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    IndexEntry.prototype._read = function() {
      this.lenKey = new Uleb128_.Uleb128(this._io, null, null);
      this.key = this._io.readBytes(this.lenKey.value);
      this.childVoffset = new Uleb128_.Uleb128(this._io, null, null);
    }

    /**
     * The first record of the child's subtree (stored whole).
     */

    /**
     * voffset of the child block, whose level is exactly this block's level - 1.
     */

    return IndexEntry;
  })();

  /**
   * Every block in file order (voffset order).
   */
  Object.defineProperty(Zss.prototype, 'blocks', {
    get: function() {
      if (this._m_blocks !== undefined)
        return this._m_blocks;
      var _pos = this._io.pos;
      this._io.seek(this.ofsData);
      this._m_blocks = [];
      var i = 0;
      while (!this._io.isEof()) {
        this._m_blocks.push(new Block(this._io, this, this._root, this.isCrc32cCodec));
        i++;
      }
      this._io.seek(_pos);
      return this._m_blocks;
    }
  });

  /**
   * The bytes `header_crc32c` covers.
   */
  Object.defineProperty(Zss.prototype, 'headerCrc32cInput', {
    get: function() {
      if (this._m_headerCrc32cInput !== undefined)
        return this._m_headerCrc32cInput;
      var _pos = this._io.pos;
      this._io.seek(12);
      this._m_headerCrc32cInput = this._io.readBytes(this.lenHeader);
      this._io.seek(_pos);
      return this._m_headerCrc32cInput;
    }
  });

  /**
   * Whether block payloads are raw bodies followed by their CRC-32C (parsed here).
   */
  Object.defineProperty(Zss.prototype, 'isCrc32cCodec', {
    get: function() {
      if (this._m_isCrc32cCodec !== undefined)
        return this._m_isCrc32cCodec;
      this._m_isCrc32cCodec = this.header.codec == "none+crc32c";
      return this._m_isCrc32cCodec;
    }
  });

  /**
   * Absolute offset of voffset 0, the first block.
   */
  Object.defineProperty(Zss.prototype, 'ofsData', {
    get: function() {
      if (this._m_ofsData !== undefined)
        return this._m_ofsData;
      this._m_ofsData = 16 + this.lenHeader;
      return this._m_ofsData;
    }
  });

  /**
   * The root index block (always an index block, in practice the last block of the file).
   */
  Object.defineProperty(Zss.prototype, 'root', {
    get: function() {
      if (this._m_root !== undefined)
        return this._m_root;
      var _pos = this._io.pos;
      this._io.seek(this.ofsData + this.header.rootVoffset);
      this._m_root = new Block(this._io, this, this._root, this.isCrc32cCodec);
      this._io.seek(_pos);
      return this._m_root;
    }
  });

  /**
   * "ZSS", three fixed bytes, then the big-endian format version 1.
   */

  /**
   * Length N of the header that follows (44 + metadata length in every known file).
   */

  /**
   * CRC-32C (Castagnoli, as crcmod's `crc-32c`) of the N header bytes only
   * (`header_crc32c_input`); the magic and the length field are not covered.
   */

  return Zss;
})();
Zss_.Zss = Zss;
});
