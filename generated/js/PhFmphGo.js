// This is a generated file! Please edit source .ksy file and use kaitai-struct-compiler to rebuild

(function (root, factory) {
  if (typeof define === 'function' && define.amd) {
    define(['exports', 'kaitai-struct/KaitaiStream'], factory);
  } else if (typeof exports === 'object' && exports !== null && typeof exports.nodeType !== 'number') {
    factory(exports, require('kaitai-struct/KaitaiStream'));
  } else {
    factory(root.PhFmphGo || (root.PhFmphGo = {}), root.KaitaiStream);
  }
})(typeof self !== 'undefined' ? self : this, function (PhFmphGo_, KaitaiStream) {
/**
 * A fingerprinting-based minimal perfect hash function with group optimization (FMPH-GO,
 * `ph::fmph::GOFunction` of the `ph` crate 0.10.0) in its default configuration (16-bit groups,
 * 4-bit seeds), as `GOFunction::write` serializes it. MOSAIC files (swh-mosaic) store one in
 * the `Map` element of each index; it maps a key to its rank in the index's `IdxUnrolled`.
 * 
 * The function has levels; level l has `level_sizes[l]` groups of 16 bits. The bits of all
 * levels follow each other in `array` (a level's bits start on a 64-bit word boundary when the
 * crate builds it, as a level has 4 * ceil(keys / 64) groups), and each group has a 4-bit seed
 * in `group_seeds`. The value of a key, computed by host code: for l = 0, 1, ...,
 * h = SipHash-1-3 with the zero key (Rust's std DefaultHasher) of u64le(l) || u64le(key
 * length) || key; g = (groups before level l) + floor(h * level_sizes[l] / 2**64); s = seed of
 * group g; bit b = 16 * g + (mix32((h mod 2**32) xor s) mod 16), where mix32(x) is x ^= x >> 16;
 * x *= 0x21f0aaad; x ^= x >> 15; x *= 0xd35a2d97; x ^= x >> 15 (32-bit arithmetic). If bit b is
 * set, the value is the number of set bits before b (its rank); if no level sets it, the key is
 * not in the set. The number of keys is the number of set bits of `array`. The rank directory
 * the crate uses is rebuilt on load and is not stored.
 * @see {@link https://docs.rs/crate/ph/0.10.0/source/src/fmph/gofunction.rs|GOFunction::write, read_with_hasher, get_stats}
 * @see {@link https://docs.rs/crate/ph/0.10.0/source/src/fmph/goindexing.rs|group_nr, GroupSize::in_group_index}
 * @see {@link https://docs.rs/crate/ph/0.10.0/source/src/seeds.rs|TwoToPowerBitsStatic (write_seed_vec)}
 * @see {@link https://docs.rs/crate/binout/0.3.1/source/src/lib.rs|VByte, AsIs}
 * @see {@link https://doi.org/10.1145/3596453|P. Beling, Fingerprinting-based minimal perfect hashing revisited}
 */

var PhFmphGo = (function() {
  function PhFmphGo(_io, _parent, _root) {
    this._io = _io;
    this._parent = _parent;
    this._root = _root || this;

    this._read();
  }
  PhFmphGo.prototype._read = function() {
    this.bitsPerGroup = this._io.readU1();
    if (!(this.bitsPerGroup == 16)) {
      throw new KaitaiStream.ValidationNotEqualError(16, this.bitsPerGroup, this._io, "/seq/0");
    }
    this.numLevels = new Vbyte(this._io, this, this._root);
    this.levelSizes = [];
    for (var i = 0; i < this.numLevels.value; i++) {
      this.levelSizes.push(new Level(this._io, this, this._root, i));
    }
    this.array = this._io.readBytes(Math.floor((this.numGroups * 16 + 63) / 64) * 8);
    this.bitsPerSeed = this._io.readU1();
    if (!(this.bitsPerSeed == 4)) {
      throw new KaitaiStream.ValidationNotEqualError(4, this.bitsPerSeed, this._io, "/seq/4");
    }
    this.groupSeeds = this._io.readBytes(Math.floor((this.numGroups * 4 + 63) / 64) * 8);
  }

  /**
   * The size of one level and where its groups lie among all groups.
   * @see {@link https://docs.rs/crate/ph/0.10.0/source/src/fmph/gofunction.rs|GOFunction::write}
   */

  var Level = PhFmphGo.Level = (function() {
    function Level(_io, _parent, _root, idx) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;
      this.idx = idx;

      this._read();
    }
    Level.prototype._read = function() {
      this.size = new Vbyte(this._io, this, this._root);
    }

    /**
     * Groups of the levels before this one (its first global group number).
     */
    Object.defineProperty(Level.prototype, 'groupsBefore', {
      get: function() {
        if (this._m_groupsBefore !== undefined)
          return this._m_groupsBefore;
        this._m_groupsBefore = (this.idx == 0 ? 0 : this._parent.levelSizes[this.idx - 1].groupsEnd);
        return this._m_groupsBefore;
      }
    });

    /**
     * Groups of this level and the levels before it.
     */
    Object.defineProperty(Level.prototype, 'groupsEnd', {
      get: function() {
        if (this._m_groupsEnd !== undefined)
          return this._m_groupsEnd;
        this._m_groupsEnd = this.groupsBefore + this.size.value;
        return this._m_groupsEnd;
      }
    });

    /**
     * Number of 16-bit groups of the level (4 * ceil(keys / 64) when the crate builds it).
     */

    /**
     * Level number (also the seed its keys are hashed with).
     */

    return Level;
  })();

  /**
   * binout's VByte (an unsigned LEB128 variant): 7 value bits a byte, least significant
   * first, bit 7 set when another byte follows; after 8 such bytes a 9th byte is read whole
   * (8 value bits), so a u64 takes at most 9 bytes. The reader accepts non-minimal encodings.
   * @see {@link https://docs.rs/crate/binout/0.3.1/source/src/lib.rs|vbyte_read}
   */

  var Vbyte = PhFmphGo.Vbyte = (function() {
    function Vbyte(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    Vbyte.prototype._read = function() {
      this.groups = [];
      var i = 0;
      do {
        var _ = this._io.readU1();
        this.groups.push(_);
        i++;
      } while (!( ((_ < 128) || (i == 7)) ));
      if ( ((this.groups.length == 8) && (this.groups[7] >= 128)) ) {
        this.last = this._io.readU1();
      }
    }

    /**
     * The decoded value (computed with multiplications, so the JavaScript parsers stay
     * exact up to 2**53).
     */
    Object.defineProperty(Vbyte.prototype, 'value', {
      get: function() {
        if (this._m_value !== undefined)
          return this._m_value;
        this._m_value = ((((((((this.groups[0] & 127) + (this.groups.length >= 2 ? (this.groups[1] & 127) * 128 : 0)) + (this.groups.length >= 3 ? (this.groups[2] & 127) * 16384 : 0)) + (this.groups.length >= 4 ? (this.groups[3] & 127) * 2097152 : 0)) + (this.groups.length >= 5 ? (this.groups[4] & 127) * 268435456 : 0)) + (this.groups.length >= 6 ? (this.groups[5] & 127) * 34359738368 : 0)) + (this.groups.length >= 7 ? (this.groups[6] & 127) * 4398046511104 : 0)) + (this.groups.length >= 8 ? (this.groups[7] & 127) * 562949953421312 : 0)) + ( ((this.groups.length == 8) && (this.groups[7] >= 128))  ? this.last * 72057594037927936 : 0);
        return this._m_value;
      }
    });

    /**
     * Bytes with a continuation flag in bit 7 and 7 value bits.
     */

    /**
     * The 9th byte, all 8 bits of value, after 8 bytes that each said another follows.
     */

    return Vbyte;
  })();

  /**
   * Total number of groups of all levels.
   */
  Object.defineProperty(PhFmphGo.prototype, 'numGroups', {
    get: function() {
      if (this._m_numGroups !== undefined)
        return this._m_numGroups;
      this._m_numGroups = (this.numLevels.value == 0 ? 0 : this.levelSizes[this.levelSizes.length - 1].groupsEnd);
      return this._m_numGroups;
    }
  });

  /**
   * Size of a group in bits (TwoToPowerBitsStatic<4>; GOFunction::read refuses others).
   */

  /**
   * Number of levels (the length prefix of the level_sizes array).
   */

  /**
   * Size of each level, in groups.
   */

  /**
   * The fingerprint bits of every level, as little-endian u64 words; bit i is bit i mod 64
   * of word i div 64. The 16 bits of group g are bits 16 * g to 16 * g + 15.
   */

  /**
   * Size of a group seed in bits (TwoToPowerBitsStatic<2>).
   */

  /**
   * The seed of every group, as little-endian u64 words of 16 seeds; the seed of group g is
   * bits 4 * (g mod 16) to 4 * (g mod 16) + 3 of word g div 16.
   */

  return PhFmphGo;
})();
PhFmphGo_.PhFmphGo = PhFmphGo;
});
