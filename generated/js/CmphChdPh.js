// This is a generated file! Please edit source .ksy file and use kaitai-struct-compiler to rebuild

(function (root, factory) {
  if (typeof define === 'function' && define.amd) {
    define(['exports', 'kaitai-struct/KaitaiStream'], factory);
  } else if (typeof exports === 'object' && exports !== null && typeof exports.nodeType !== 'number') {
    factory(exports, require('kaitai-struct/KaitaiStream'));
  } else {
    factory(root.CmphChdPh || (root.CmphChdPh = {}), root.KaitaiStream);
  }
})(typeof self !== 'undefined' ? self : this, function (CmphChdPh_, KaitaiStream) {
/**
 * A CHD_PH ("compress, hash and displace") minimal perfect hash function as written by
 * cmph_dump() of the cmph library (https://cmph.sourceforge.net/). The dump is a raw memory
 * image in the writer's native byte order; every producer seen in practice is little-endian
 * (x86_64, aarch64).
 * 
 * A key's slot is computed by host code from these fields: the Jenkins hash of the key with
 * `hash_state.seed` gives (h0, h1, h2); bucket g = h0 mod num_buckets, f = h1 mod num_keys,
 * h = h2 mod (num_keys - 1) + 1; disp = compressed_seq[g]; the slot is
 * (f + h * (disp mod num_keys) + disp div num_keys) mod num_keys.
 * @see {@link https://github.com/bonitao/cmph/blob/master/src/chd_ph.c|chd_ph_dump, chd_ph_search}
 * @see {@link https://github.com/bonitao/cmph/blob/master/src/compressed_seq.c|compressed_seq_dump}
 * @see {@link https://github.com/bonitao/cmph/blob/master/src/select.c|select_dump}
 */

var CmphChdPh = (function() {
  function CmphChdPh(_io, _parent, _root) {
    this._io = _io;
    this._parent = _parent;
    this._root = _root || this;

    this._read();
  }
  CmphChdPh.prototype._read = function() {
    this.algoName = KaitaiStream.bytesToStr(this._io.readBytesTerm(0, false, true, true), "ASCII");
    if (!(this.algoName == "chd_ph")) {
      throw new KaitaiStream.ValidationNotEqualError("chd_ph", this.algoName, this._io, "/seq/0");
    }
    this.numKeysTotal = this._io.readU4le();
    this.lenHashState = this._io.readU4le();
    this._raw_hashState = this._io.readBytes(this.lenHashState);
    var _io__raw_hashState = new KaitaiStream(this._raw_hashState);
    this.hashState = new HashState(_io__raw_hashState, this, this._root);
    this.lenCompressedSeq = this._io.readU4le();
    this._raw_compressedSeq = this._io.readBytes(this.lenCompressedSeq);
    var _io__raw_compressedSeq = new KaitaiStream(this._raw_compressedSeq);
    this.compressedSeq = new CompressedSeq(_io__raw_compressedSeq, this, this._root);
    this.numKeys = this._io.readU4le();
    this.numBuckets = this._io.readU4le();
  }

  /**
   * A sequence of `num_values` unsigned integers. Value i is stored as its bit length
   * (an Elias-Fano-style `select` structure over the lengths) plus its low bits: the
   * `rem_r` low bits of each cumulative length go to `length_rems`, the value bits to
   * `store_table`.
   * @see {@link https://github.com/bonitao/cmph/blob/master/src/compressed_seq.c|compressed_seq_dump}
   */

  var CompressedSeq = CmphChdPh.CompressedSeq = (function() {
    function CompressedSeq(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    CompressedSeq.prototype._read = function() {
      this.numValues = this._io.readU4le();
      this.remR = this._io.readU4le();
      this.totalLength = this._io.readU4le();
      this.lenSelect = this._io.readU4le();
      this._raw_select = this._io.readBytes(this.lenSelect);
      var _io__raw_select = new KaitaiStream(this._raw_select);
      this.select = new Select(_io__raw_select, this, this._root);
      this.lengthRems = this._io.readBytes(Math.floor((this.numValues * this.remR + 31) / 32) * 4);
      this.storeTable = this._io.readBytes(Math.floor((this.totalLength + 31) / 32) * 4);
    }

    /**
     * Number of low bits of each cumulative length kept in length_rems (0 to 31).
     */

    /**
     * Total number of value bits in store_table.
     */

    /**
     * Packed rem_r-bit fields, in little-endian u4 words (BITS_TABLE_SIZE).
     */

    /**
     * The value bits, packed in little-endian u4 words.
     */

    return CompressedSeq;
  })();

  /**
   * Dump of a cmph hash_state_t; only Jenkins hashing is used by CHD_PH writers.
   * @see {@link https://github.com/bonitao/cmph/blob/master/src/hash.c|hash_state_dump}
   */

  var HashState = CmphChdPh.HashState = (function() {
    function HashState(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    HashState.prototype._read = function() {
      this.hashName = KaitaiStream.bytesToStr(this._io.readBytesTerm(0, false, true, true), "ASCII");
      this.seed = this._io.readU4le();
    }

    /**
     * Name of the hash function, e.g. "jenkins".
     */

    /**
     * Seed of the Jenkins hash (jenkins_state_dump).
     */

    return HashState;
  })();

  /**
   * A select structure over a bit vector holding `num_ones` ones and `num_zeros` zeros; the
   * table stores the position of every 128th one (NBITS_STEP_SELECT_TABLE = 7).
   * @see {@link https://github.com/bonitao/cmph/blob/master/src/select.c|select_dump}
   */

  var Select = CmphChdPh.Select = (function() {
    function Select(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    Select.prototype._read = function() {
      this.numOnes = this._io.readU4le();
      this.numZeros = this._io.readU4le();
      this.bitsVec = this._io.readBytes(Math.floor(((this.numOnes + this.numZeros) + 31) / 32) * 4);
      this.selectTable = this._io.readBytes((Math.floor(this.numOnes / 128) + 1) * 4);
    }

    /**
     * The bit vector, in little-endian u4 words.
     */

    /**
     * Positions of every 128th one, u4 each.
     */

    return Select;
  })();

  /**
   * Name of the cmph algorithm, NUL-terminated.
   */

  /**
   * Number of slots of the function (the range of slot numbers is 0 to this minus 1).
   */

  /**
   * The displacement of every bucket, stored as a compressed integer sequence.
   */

  /**
   * Number of slots; equals num_keys_total.
   */

  return CmphChdPh;
})();
CmphChdPh_.CmphChdPh = CmphChdPh;
});
