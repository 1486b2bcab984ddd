// This is a generated file! Please edit source .ksy file and use kaitai-struct-compiler to rebuild

(function (root, factory) {
  if (typeof define === 'function' && define.amd) {
    define(['exports', 'kaitai-struct/KaitaiStream'], factory);
  } else if (typeof exports === 'object' && exports !== null && typeof exports.nodeType !== 'number') {
    factory(exports, require('kaitai-struct/KaitaiStream'));
  } else {
    factory(root.Uleb128 || (root.Uleb128 = {}), root.KaitaiStream);
  }
})(typeof self !== 'undefined' ? self : this, function (Uleb128_, KaitaiStream) {
/**
 * An unsigned integer in base-128 groups, least-significant group first (DWARF "unsigned
 * LEB128", protobuf "varint"). Bit 7 of a byte is set when another byte follows; bits 0-6 hold
 * the value bits.
 * 
 * This variant is the strict one ZSS readers accept: the encoding is minimal (the last byte of
 * a multi-byte encoding is not 0x00, so `80 00` is refused) and it is at most 9 bytes long, so
 * values are below 2**63. Both rules are checked on the byte where they fail (`valid` of
 * `groups/N/b`).
 * 
 * `value` is computed with multiplications rather than shifts, so the JavaScript parsers (Web
 * IDE) stay exact up to 2**53 instead of wrapping at 2**31.
 * 
 * Examples: `00` = 0, `7f` = 127, `80 01` = 128, `ff 20` = 0x107f, `b9 60` = 12345.
 * @see {@link https://en.wikipedia.org/wiki/LEB128|Source}
 * @see FORMAT.md section 1 (ZSS corpus notes; reference reader zss/_zss.pyx at njsmith/zss 8e078ea)
 */

var Uleb128 = (function() {
  function Uleb128(_io, _parent, _root) {
    this._io = _io;
    this._parent = _parent;
    this._root = _root || this;

    this._read();
  }
  Uleb128.prototype._read = function() {
    this.groups = [];
    var i = 0;
    do {
      var _ = new Group(this._io, this, this._root, i);
      this.groups.push(_);
      i++;
    } while (!(!(_.hasNext)));
  }

  /**
   * One byte, the continuation flag in bit 7 and 7 value bits.
   */

  var Group = Uleb128.Group = (function() {
    function Group(_io, _parent, _root, idx) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;
      this.idx = idx;

      this._read();
    }
    Group.prototype._read = function() {
      this.b = this._io.readU1();
      var _ = this.b;
      if (!( (( ((this.idx == 0) || (_ != 0)) ) && ( ((this.idx < 8) || (_ < 128)) )) )) {
        throw new KaitaiStream.ValidationExprError(this.b, this._io, "/types/group/seq/0");
      }
    }

    /**
     * Another byte follows.
     */
    Object.defineProperty(Group.prototype, 'hasNext', {
      get: function() {
        if (this._m_hasNext !== undefined)
          return this._m_hasNext;
        this._m_hasNext = (this.b & 128) != 0;
        return this._m_hasNext;
      }
    });

    /**
     * The 7 value bits of this byte.
     */
    Object.defineProperty(Group.prototype, 'value', {
      get: function() {
        if (this._m_value !== undefined)
          return this._m_value;
        this._m_value = this.b & 127;
        return this._m_value;
      }
    });

    /**
     * The byte. A final byte of 0x00 after earlier bytes (non-minimal) and a 9th byte with
     * the continuation flag set (a 10th byte would be needed) are invalid.
     */

    /**
     * Position of this byte in the encoding (0 = least significant group).
     */

    return Group;
  })();

  /**
   * Length of the encoding in bytes (1 to 9).
   */
  Object.defineProperty(Uleb128.prototype, 'lenBytes', {
    get: function() {
      if (this._m_lenBytes !== undefined)
        return this._m_lenBytes;
      this._m_lenBytes = this.groups.length;
      return this._m_lenBytes;
    }
  });

  /**
   * The decoded value.
   */
  Object.defineProperty(Uleb128.prototype, 'value', {
    get: function() {
      if (this._m_value !== undefined)
        return this._m_value;
      this._m_value = (((((((this.groups[0].value + (this.lenBytes >= 2 ? this.groups[1].value * 128 : 0)) + (this.lenBytes >= 3 ? this.groups[2].value * 16384 : 0)) + (this.lenBytes >= 4 ? this.groups[3].value * 2097152 : 0)) + (this.lenBytes >= 5 ? this.groups[4].value * 268435456 : 0)) + (this.lenBytes >= 6 ? this.groups[5].value * 34359738368 : 0)) + (this.lenBytes >= 7 ? this.groups[6].value * 4398046511104 : 0)) + (this.lenBytes >= 8 ? this.groups[7].value * 562949953421312 : 0)) + (this.lenBytes >= 9 ? this.groups[8].value * 72057594037927936 : 0);
      return this._m_value;
    }
  });

  return Uleb128;
})();
Uleb128_.Uleb128 = Uleb128;
});
