// This is a generated file! Please edit source .ksy file and use kaitai-struct-compiler to rebuild

(function (root, factory) {
  if (typeof define === 'function' && define.amd) {
    define(['exports', 'kaitai-struct/KaitaiStream'], factory);
  } else if (typeof exports === 'object' && exports !== null && typeof exports.nodeType !== 'number') {
    factory(exports, require('kaitai-struct/KaitaiStream'));
  } else {
    factory(root.EbmlVint || (root.EbmlVint = {}), root.KaitaiStream);
  }
})(typeof self !== 'undefined' ? self : this, function (EbmlVint_, KaitaiStream) {
/**
 * An EBML variable-size integer: the number of leading zero bits of the first byte, plus one,
 * is the length in bytes (1 to 8; a first byte of 0x00 would need a 9th byte and is refused).
 * The first 1 bit (VINT_MARKER) is not part of the value; the remaining bits, big-endian, are
 * (VINT_DATA).
 * 
 * The same encoding serves element sizes (`value`, marker removed) and element IDs
 * (`raw_value`, marker kept, as IDs are written: `1a 45 df a3` is the ID 0x1A45DFA3). A size
 * whose VINT_DATA bits are all ones is the reserved "unknown size" (`is_unknown`).
 * 
 * `value` is computed with multiplications rather than shifts, so the JavaScript parsers (Web
 * IDE) stay exact up to 2**53.
 * 
 * Examples: `81` = 1, `40 c8` = 200, `10 00 00 36` = 54 (4 bytes), `ff` = unknown (1 byte).
 * @see {@link https://www.rfc-editor.org/rfc/rfc8794.html#section-4|Source}
 */

var EbmlVint = (function() {
  function EbmlVint(_io, _parent, _root) {
    this._io = _io;
    this._parent = _parent;
    this._root = _root || this;

    this._read();
  }
  EbmlVint.prototype._read = function() {
    this.b0 = this._io.readU1();
    var _ = this.b0;
    if (!(_ != 0)) {
      throw new KaitaiStream.ValidationExprError(this.b0, this._io, "/seq/0");
    }
    this.rest = this._io.readBytes(this.lenBytes - 1);
  }

  /**
   * All VINT_DATA bits are ones, RFC 8794's reserved "unknown size". `value` still gives the
   * number the bits spell, which is how swh-mosaic writes and reads a size of 2**(7n)-1.
   */
  Object.defineProperty(EbmlVint.prototype, 'isUnknown', {
    get: function() {
      if (this._m_isUnknown !== undefined)
        return this._m_isUnknown;
      this._m_isUnknown = this.value == this.marker * this.scale - 1;
      return this._m_isUnknown;
    }
  });

  /**
   * Length of the encoding in bytes (1 to 8).
   */
  Object.defineProperty(EbmlVint.prototype, 'lenBytes', {
    get: function() {
      if (this._m_lenBytes !== undefined)
        return this._m_lenBytes;
      this._m_lenBytes = (this.b0 >= 128 ? 1 : (this.b0 >= 64 ? 2 : (this.b0 >= 32 ? 3 : (this.b0 >= 16 ? 4 : (this.b0 >= 8 ? 5 : (this.b0 >= 4 ? 6 : (this.b0 >= 2 ? 7 : 8)))))));
      return this._m_lenBytes;
    }
  });

  /**
   * The VINT_MARKER bit of the first byte.
   */
  Object.defineProperty(EbmlVint.prototype, 'marker', {
    get: function() {
      if (this._m_marker !== undefined)
        return this._m_marker;
      this._m_marker = (this.lenBytes == 1 ? 128 : (this.lenBytes == 2 ? 64 : (this.lenBytes == 3 ? 32 : (this.lenBytes == 4 ? 16 : (this.lenBytes == 5 ? 8 : (this.lenBytes == 6 ? 4 : (this.lenBytes == 7 ? 2 : 1)))))));
      return this._m_marker;
    }
  });

  /**
   * The whole encoding as a big-endian integer, marker kept (an element's ID).
   */
  Object.defineProperty(EbmlVint.prototype, 'rawValue', {
    get: function() {
      if (this._m_rawValue !== undefined)
        return this._m_rawValue;
      this._m_rawValue = this.b0 * this.scale + this.restValue;
      return this._m_rawValue;
    }
  });

  /**
   * The bytes after the first, as a big-endian integer.
   */
  Object.defineProperty(EbmlVint.prototype, 'restValue', {
    get: function() {
      if (this._m_restValue !== undefined)
        return this._m_restValue;
      this._m_restValue = ((((((this.lenBytes >= 2 ? this.rest[this.lenBytes - 2] : 0) + (this.lenBytes >= 3 ? this.rest[this.lenBytes - 3] * 256 : 0)) + (this.lenBytes >= 4 ? this.rest[this.lenBytes - 4] * 65536 : 0)) + (this.lenBytes >= 5 ? this.rest[this.lenBytes - 5] * 16777216 : 0)) + (this.lenBytes >= 6 ? this.rest[this.lenBytes - 6] * 4294967296 : 0)) + (this.lenBytes >= 7 ? this.rest[this.lenBytes - 7] * 1099511627776 : 0)) + (this.lenBytes >= 8 ? this.rest[this.lenBytes - 8] * 281474976710656 : 0);
      return this._m_restValue;
    }
  });

  /**
   * The weight of the first byte's bits in the value.
   */
  Object.defineProperty(EbmlVint.prototype, 'scale', {
    get: function() {
      if (this._m_scale !== undefined)
        return this._m_scale;
      this._m_scale = (this.lenBytes == 1 ? 1 : (this.lenBytes == 2 ? 256 : (this.lenBytes == 3 ? 65536 : (this.lenBytes == 4 ? 16777216 : (this.lenBytes == 5 ? 4294967296 : (this.lenBytes == 6 ? 1099511627776 : (this.lenBytes == 7 ? 281474976710656 : 72057594037927936)))))));
      return this._m_scale;
    }
  });

  /**
   * VINT_DATA, the integer (an element's size).
   */
  Object.defineProperty(EbmlVint.prototype, 'value', {
    get: function() {
      if (this._m_value !== undefined)
        return this._m_value;
      this._m_value = (this.b0 - this.marker) * this.scale + this.restValue;
      return this._m_value;
    }
  });

  /**
   * First byte; its leading zero bits give the length.
   */

  /**
   * The remaining bytes, big-endian.
   */

  return EbmlVint;
})();
EbmlVint_.EbmlVint = EbmlVint;
});
