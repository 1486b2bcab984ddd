// This is a generated file! Please edit source .ksy file and use kaitai-struct-compiler to rebuild

(function (root, factory) {
  if (typeof define === 'function' && define.amd) {
    define(['exports', 'kaitai-struct/KaitaiStream', './CmphChdPh'], factory);
  } else if (typeof exports === 'object' && exports !== null && typeof exports.nodeType !== 'number') {
    factory(exports, require('kaitai-struct/KaitaiStream'), require('./CmphChdPh'));
  } else {
    factory(root.SwhReadShard || (root.SwhReadShard = {}), root.KaitaiStream, root.CmphChdPh || (root.CmphChdPh = {}));
  }
})(typeof self !== 'undefined' ? self : this, function (SwhReadShard_, KaitaiStream, CmphChdPh_) {
/**
 * A read-only object store written by swh.perfecthash (Software Heritage's "winery" object
 * storage): objects addressed by 32-byte keys, found in O(1) through a minimal perfect hash
 * function. All integers of the header, the object size fields and the index are big-endian;
 * the hash function at the end is a cmph dump in native (little-endian) byte order.
 * 
 * Layout: magic and header in the first 512 bytes, then the objects (each a u8 size followed by
 * its bytes, in write order), then the index (one 40-byte entry per slot of the hash function),
 * then the hash function: a cmph dump, which a pre-allocated file follows with zero bytes up
 * to the end of the file (the hash_function instance spans both; the dump's own fields say
 * where it ends).
 * 
 * Structurally an index slot holds a live entry (key, absolute offset of the object's size
 * field), an empty slot (offset 0, zero key) or a tombstone (offset 2**64-1, zero key). What an
 * empty slot or a tombstone means (a slot no object used, or a deleted object) depends on the
 * writer's generation and on the header's counts; the semantic layer reading the file decides,
 * not this schema.
 * @see {@link https://gitlab.softwareheritage.org/swh/devel/swh-perfecthash/-/blob/v1.3.2/swh/perfecthash/hash.h|Source}
 * @see {@link https://gitlab.softwareheritage.org/swh/devel/swh-perfecthash/-/blob/v1.3.2/swh/perfecthash/hash.c|Source}
 */

var SwhReadShard = (function() {
  function SwhReadShard(_io, _parent, _root) {
    this._io = _io;
    this._parent = _parent;
    this._root = _root || this;

    this._read();
  }
  SwhReadShard.prototype._read = function() {
    this.magic = this._io.readBytes(9);
    if (!((KaitaiStream.byteArrayCompare(this.magic, new Uint8Array([83, 87, 72, 83, 104, 97, 114, 100, 0])) == 0))) {
      throw new KaitaiStream.ValidationNotEqualError(new Uint8Array([83, 87, 72, 83, 104, 97, 114, 100, 0]), this.magic, this._io, "/seq/0");
    }
    this.reserved = this._io.readBytes(23);
    this.header = new Header(this._io, this, this._root);
  }

  /**
   * @see {@link https://gitlab.softwareheritage.org/swh/devel/swh-perfecthash/-/blob/v1.3.2/swh/perfecthash/hash.h|shard_header_t}
   */

  var Header = SwhReadShard.Header = (function() {
    function Header(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    Header.prototype._read = function() {
      this.version = this._io.readU8be();
      if (!(this.version == 1)) {
        throw new KaitaiStream.ValidationNotEqualError(1, this.version, this._io, "/types/header/seq/0");
      }
      this.numObjects = this._io.readU8be();
      this.ofsObjects = this._io.readU8be();
      this.lenObjects = this._io.readU8be();
      this.ofsIndex = this._io.readU8be();
      this.lenIndex = this._io.readU8be();
      this.ofsHash = this._io.readU8be();
    }

    /**
     * SHARD_VERSION; only version 1 exists.
     */

    /**
     * Objects written; deletions do not decrement it.
     */

    /**
     * Absolute offset of the first object (512, SHARD_OFFSET_HEADER).
     */

    /**
     * Size in bytes of the objects section.
     */

    /**
     * Absolute offset of the index; equals ofs_objects + len_objects.
     */

    /**
     * Size in bytes of the index, 40 bytes per slot.
     */

    /**
     * Absolute offset of the cmph dump; equals ofs_index + len_index.
     */

    return Header;
  })();

  var Index = SwhReadShard.Index = (function() {
    function Index(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    Index.prototype._read = function() {
      this.entries = [];
      var i = 0;
      while (!this._io.isEof()) {
        this.entries.push(new IndexEntry(this._io, this, this._root));
        i++;
      }
    }

    return Index;
  })();

  /**
   * @see {@link https://gitlab.softwareheritage.org/swh/devel/swh-perfecthash/-/blob/v1.3.2/swh/perfecthash/hash.h|shard_index_t}
   */

  var IndexEntry = SwhReadShard.IndexEntry = (function() {
    function IndexEntry(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    IndexEntry.prototype._read = function() {
      this.key = this._io.readBytes(32);
      this.ofsObject = this._io.readU8be();
    }
    Object.defineProperty(IndexEntry.prototype, 'isEmpty', {
      get: function() {
        if (this._m_isEmpty !== undefined)
          return this._m_isEmpty;
        this._m_isEmpty = this.ofsObject == 0;
        return this._m_isEmpty;
      }
    });
    Object.defineProperty(IndexEntry.prototype, 'isTombstone', {
      get: function() {
        if (this._m_isTombstone !== undefined)
          return this._m_isTombstone;
        this._m_isTombstone = this.ofsObject == 18446744073709551615;
        return this._m_isTombstone;
      }
    });
    Object.defineProperty(IndexEntry.prototype, 'object', {
      get: function() {
        if (this._m_object !== undefined)
          return this._m_object;
        if ( ((!(this.isEmpty)) && (!(this.isTombstone))) ) {
          var io = this._root._io;
          var _pos = io.pos;
          io.seek(this.ofsObject);
          this._m_object = new ShardObject(io, this, this._root);
          io.seek(_pos);
        }
        return this._m_object;
      }
    });

    /**
     * The object's key; all zeros in empty slots and tombstones.
     */

    /**
     * Absolute offset of the object's size field; 0 in an empty slot, 2**64-1 in a
     * tombstone.
     */

    return IndexEntry;
  })();

  var ShardObject = SwhReadShard.ShardObject = (function() {
    function ShardObject(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    ShardObject.prototype._read = function() {
      this.lenData = this._io.readU8be();
      this.data = this._io.readBytes(this.lenData);
    }

    return ShardObject;
  })();

  /**
   * The minimal perfect hash function mapping a key to its index slot, and the zero bytes
   * that follow it in a pre-allocated file.
   */
  Object.defineProperty(SwhReadShard.prototype, 'hashFunction', {
    get: function() {
      if (this._m_hashFunction !== undefined)
        return this._m_hashFunction;
      var _pos = this._io.pos;
      this._io.seek(this.header.ofsHash);
      this._raw__m_hashFunction = this._io.readBytes(this._io.size - this.header.ofsHash);
      var _io__raw__m_hashFunction = new KaitaiStream(this._raw__m_hashFunction);
      this._m_hashFunction = new CmphChdPh_.CmphChdPh(_io__raw__m_hashFunction, null, null);
      this._io.seek(_pos);
      return this._m_hashFunction;
    }
  });

  /**
   * The hash table; slot i is the i-th entry.
   */
  Object.defineProperty(SwhReadShard.prototype, 'index', {
    get: function() {
      if (this._m_index !== undefined)
        return this._m_index;
      var _pos = this._io.pos;
      this._io.seek(this.header.ofsIndex);
      this._raw__m_index = this._io.readBytes(this.header.lenIndex);
      var _io__raw__m_index = new KaitaiStream(this._raw__m_index);
      this._m_index = new Index(_io__raw__m_index, this, this._root);
      this._io.seek(_pos);
      return this._m_index;
    }
  });

  /**
   * Zero padding up to SHARD_OFFSET_MAGIC (32).
   */

  return SwhReadShard;
})();
SwhReadShard_.SwhReadShard = SwhReadShard;
});
