// This is a generated file! Please edit source .ksy file and use kaitai-struct-compiler to rebuild

(function (root, factory) {
  if (typeof define === 'function' && define.amd) {
    define(['exports', 'kaitai-struct/KaitaiStream'], factory);
  } else if (typeof exports === 'object' && exports !== null && typeof exports.nodeType !== 'number') {
    factory(exports, require('kaitai-struct/KaitaiStream'));
  } else {
    factory(root.NeuroglancerUint64Sharded || (root.NeuroglancerUint64Sharded = {}), root.KaitaiStream);
  }
})(typeof self !== 'undefined' ? self : this, function (NeuroglancerUint64Sharded_, KaitaiStream) {
/**
 * One shard file of a Neuroglancer "precomputed" sharded dataset, as written by tensorstore
 * and cloud-volume: a key-value store of uint64 chunk ids (segment ids, or compressed Morton
 * codes of image chunks) to byte strings.
 * 
 * The file starts with the shard index: 2**minishard_bits entries of two u8 each, the byte
 * range [start, end) of one minishard index. Every offset in the file (shard index entries
 * and minishard index data offsets) is relative to the END of the shard index, i.e. to
 * 16 * 2**minishard_bits. A minishard index is three arrays of n u8 each: chunk id deltas,
 * data offset deltas and data sizes (see minishard_index). An empty minishard is [0, 0].
 * Nothing else is fixed: tensorstore writes each minishard's data followed by its index,
 * cloud-volume writes all data first and the minishard indices at the end, in any order, so
 * readers must follow the offsets.
 * 
 * minishard_bits is not stored in the file (it comes from the dataset's `info` file), so
 * shardkit parses the shard index with the parametrised types shard_index(num_minishards)
 * and minishard_index(num_chunks). The root type, for the Kaitai Web IDE and the parity
 * tests, infers minishard_bits instead: for the true value b, the file ends exactly where
 * the furthest range of the first 2**b entries ends (16 * 2**b + max(end)), and no smaller
 * candidate can satisfy that. Files with trailing bytes are not recognised by the inference.
 * 
 * Host code (the package src/shardkit/formats/neuroglancer/: decode.py, verify.py) undoes the
 * delta encoding with cumulative sums, decompresses gzip-encoded minishard indices and chunks,
 * and checks the hashes; with "minishard_index_encoding": "gzip" the root's minishards show
 * the compressed bytes only.
 * @see {@link https://github.com/google/neuroglancer/blob/v2.40.1/src/datasource/precomputed/sharded.md|Source}
 * @see {@link https://github.com/google/tensorstore/blob/v0.1.86/tensorstore/kvstore/neuroglancer_uint64_sharded/uint64_sharded_decoder.cc|Source}
 */

var NeuroglancerUint64Sharded = (function() {
  function NeuroglancerUint64Sharded(_io, _parent, _root) {
    this._io = _io;
    this._parent = _parent;
    this._root = _root || this;

    this._read();
  }
  NeuroglancerUint64Sharded.prototype._read = function() {
  }

  /**
   * One chunk of a raw minishard index, with its data located (root only).
   */

  var Chunk = NeuroglancerUint64Sharded.Chunk = (function() {
    function Chunk(_io, _parent, _root, idx, prevOfsDataEnd, prevChunkIdHi, prevChunkIdLo) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;
      this.idx = idx;
      this.prevOfsDataEnd = prevOfsDataEnd;
      this.prevChunkIdHi = prevChunkIdHi;
      this.prevChunkIdLo = prevChunkIdLo;

      this._read();
    }
    Chunk.prototype._read = function() {
    }

    /**
     * The chunk id in decimal, exact: what `shardkit ls` and `shardkit dump` print. The
     * Web IDE's JavaScript runtime reads u8 as a double and shows ids above 2**53 rounded,
     * so the id is summed here in 32-bit halves and printed from base-10**5 parts that stay
     * below 2**53 (2**32 = 42949 * 10**5 + 67296).
     */
    Object.defineProperty(Chunk.prototype, 'chunkIdDec', {
      get: function() {
        if (this._m_chunkIdDec !== undefined)
          return this._m_chunkIdDec;
        this._m_chunkIdDec = (this.chunkIdHi == 0 ? (this.chunkIdLo).toString() : (this.chunkIdHi * 42949 + Math.floor((this.chunkIdHi * 67296 + this.chunkIdLo) / 100000)).toString() + (KaitaiStream.mod(this.chunkIdHi * 67296 + this.chunkIdLo, 100000) + 100000).toString().substring(1, 6));
        return this._m_chunkIdDec;
      }
    });

    /**
     * The chunk id minus the previous chunk's id (the id itself for the first chunk). The
     * Web IDE's JavaScript runtime reads u8 as a double, so above 2**53 this shows rounded
     * there: chunk_id_delta_hi and chunk_id_delta_lo are its exact halves.
     */
    Object.defineProperty(Chunk.prototype, 'chunkIdDelta', {
      get: function() {
        if (this._m_chunkIdDelta !== undefined)
          return this._m_chunkIdDelta;
        this._m_chunkIdDelta = this._parent.index.chunkIdDeltas[this.idx];
        return this._m_chunkIdDelta;
      }
    });

    /**
     * High 32 bits of chunk_id_delta, exact in JavaScript too.
     */
    Object.defineProperty(Chunk.prototype, 'chunkIdDeltaHi', {
      get: function() {
        if (this._m_chunkIdDeltaHi !== undefined)
          return this._m_chunkIdDeltaHi;
        var io = this._parent.index._io;
        var _pos = io.pos;
        io.seek(8 * this.idx + 4);
        this._m_chunkIdDeltaHi = io.readU4le();
        io.seek(_pos);
        return this._m_chunkIdDeltaHi;
      }
    });

    /**
     * Low 32 bits of chunk_id_delta, exact in JavaScript too.
     */
    Object.defineProperty(Chunk.prototype, 'chunkIdDeltaLo', {
      get: function() {
        if (this._m_chunkIdDeltaLo !== undefined)
          return this._m_chunkIdDeltaLo;
        var io = this._parent.index._io;
        var _pos = io.pos;
        io.seek(8 * this.idx);
        this._m_chunkIdDeltaLo = io.readU4le();
        io.seek(_pos);
        return this._m_chunkIdDeltaLo;
      }
    });

    /**
     * High 32 bits of the chunk id; the id is chunk_id_hi * 2**32 + chunk_id_lo.
     */
    Object.defineProperty(Chunk.prototype, 'chunkIdHi', {
      get: function() {
        if (this._m_chunkIdHi !== undefined)
          return this._m_chunkIdHi;
        this._m_chunkIdHi = KaitaiStream.mod((this.prevChunkIdHi + this.chunkIdDeltaHi) + Math.floor((this.prevChunkIdLo + this.chunkIdDeltaLo) / 4294967296), 4294967296);
        return this._m_chunkIdHi;
      }
    });

    /**
     * Low 32 bits of the chunk id (the running sum of the deltas, modulo 2**64).
     */
    Object.defineProperty(Chunk.prototype, 'chunkIdLo', {
      get: function() {
        if (this._m_chunkIdLo !== undefined)
          return this._m_chunkIdLo;
        this._m_chunkIdLo = KaitaiStream.mod(this.prevChunkIdLo + this.chunkIdDeltaLo, 4294967296);
        return this._m_chunkIdLo;
      }
    });

    /**
     * The stored bytes (gzip stream with "data_encoding" gzip).
     */
    Object.defineProperty(Chunk.prototype, 'data', {
      get: function() {
        if (this._m_data !== undefined)
          return this._m_data;
        var io = this._root._io;
        var _pos = io.pos;
        io.seek(this._root.lenShardIndex + this.ofsData);
        this._m_data = io.readBytes(this.lenData);
        io.seek(_pos);
        return this._m_data;
      }
    });
    Object.defineProperty(Chunk.prototype, 'lenData', {
      get: function() {
        if (this._m_lenData !== undefined)
          return this._m_lenData;
        this._m_lenData = this._parent.index.lenData[this.idx];
        return this._m_lenData;
      }
    });

    /**
     * Start of the data, relative to the end of the shard index.
     */
    Object.defineProperty(Chunk.prototype, 'ofsData', {
      get: function() {
        if (this._m_ofsData !== undefined)
          return this._m_ofsData;
        this._m_ofsData = this.prevOfsDataEnd + this._parent.index.ofsDataDeltas[this.idx];
        return this._m_ofsData;
      }
    });
    Object.defineProperty(Chunk.prototype, 'ofsDataEnd', {
      get: function() {
        if (this._m_ofsDataEnd !== undefined)
          return this._m_ofsDataEnd;
        this._m_ofsDataEnd = this.ofsData + this.lenData;
        return this._m_ofsDataEnd;
      }
    });

    /**
     * The end of the previous chunk's data (0 for the first).
     */

    /**
     * High 32 bits of the previous chunk's id (0 for the first).
     */

    /**
     * Low 32 bits of the previous chunk's id (0 for the first).
     */

    return Chunk;
  })();

  /**
   * Navigation from a shard index entry to its minishard index and chunks (root only).
   */

  var Minishard = NeuroglancerUint64Sharded.Minishard = (function() {
    function Minishard(_io, _parent, _root, idx) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;
      this.idx = idx;

      this._read();
    }
    Minishard.prototype._read = function() {
    }

    /**
     * Each chunk takes the running sums (data end, chunk id) from the one before it.
     */
    Object.defineProperty(Minishard.prototype, 'chunks', {
      get: function() {
        if (this._m_chunks !== undefined)
          return this._m_chunks;
        if ( ((!(this.entry.isEmpty)) && (!(this.isGzip)) && (KaitaiStream.mod(this.entry.lenMinishardIndex, 24) == 0)) ) {
          this._m_chunks = [];
          for (var i = 0; i < this.index.numChunks; i++) {
            this._m_chunks.push(new Chunk(this._io, this, this._root, i, (i == 0 ? 0 : this.chunks[i - 1].ofsDataEnd), (i == 0 ? 0 : this.chunks[i - 1].chunkIdHi), (i == 0 ? 0 : this.chunks[i - 1].chunkIdLo)));
          }
        }
        return this._m_chunks;
      }
    });
    Object.defineProperty(Minishard.prototype, 'entry', {
      get: function() {
        if (this._m_entry !== undefined)
          return this._m_entry;
        this._m_entry = this._root.shardIndex.entries[this.idx];
        return this._m_entry;
      }
    });
    Object.defineProperty(Minishard.prototype, 'index', {
      get: function() {
        if (this._m_index !== undefined)
          return this._m_index;
        if ( ((!(this.entry.isEmpty)) && (!(this.isGzip)) && (KaitaiStream.mod(this.entry.lenMinishardIndex, 24) == 0)) ) {
          var io = this._root._io;
          var _pos = io.pos;
          io.seek(this._root.lenShardIndex + this.entry.ofsMinishardIndex);
          this._raw__m_index = io.readBytes(this.entry.lenMinishardIndex);
          var _io__raw__m_index = new KaitaiStream(this._raw__m_index);
          this._m_index = new MinishardIndex(_io__raw__m_index, this, this._root, Math.floor(this.entry.lenMinishardIndex / 24));
          io.seek(_pos);
        }
        return this._m_index;
      }
    });
    Object.defineProperty(Minishard.prototype, 'isGzip', {
      get: function() {
        if (this._m_isGzip !== undefined)
          return this._m_isGzip;
        this._m_isGzip =  ((!(this.entry.isEmpty)) && (this.rawIndex.length >= 2) && (this.rawIndex[0] == 31) && (this.rawIndex[1] == 139)) ;
        return this._m_isGzip;
      }
    });

    /**
     * The stored minishard index (gzip-compressed with "minishard_index_encoding" gzip).
     */
    Object.defineProperty(Minishard.prototype, 'rawIndex', {
      get: function() {
        if (this._m_rawIndex !== undefined)
          return this._m_rawIndex;
        if (!(this.entry.isEmpty)) {
          var io = this._root._io;
          var _pos = io.pos;
          io.seek(this._root.lenShardIndex + this.entry.ofsMinishardIndex);
          this._m_rawIndex = io.readBytes(this.entry.lenMinishardIndex);
          io.seek(_pos);
        }
        return this._m_rawIndex;
      }
    });

    return Minishard;
  })();

  /**
   * One candidate value of minishard_bits for the root's inference.
   */

  var MinishardBitsProbe = NeuroglancerUint64Sharded.MinishardBitsProbe = (function() {
    function MinishardBitsProbe(_io, _parent, _root, bits) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;
      this.bits = bits;

      this._read();
    }
    MinishardBitsProbe.prototype._read = function() {
    }
    Object.defineProperty(MinishardBitsProbe.prototype, 'fits', {
      get: function() {
        if (this._m_fits !== undefined)
          return this._m_fits;
        this._m_fits =  ((16 << this.bits <= this._root._io.size) && ((16 << this.bits) + KaitaiStream.arrayMax(this.rangeBounds) == this._root._io.size)) ;
        return this._m_fits;
      }
    });

    /**
     * No larger candidate fits in the file (26 keeps 16 << bits within 32 bits).
     */
    Object.defineProperty(MinishardBitsProbe.prototype, 'isLast', {
      get: function() {
        if (this._m_isLast !== undefined)
          return this._m_isLast;
        this._m_isLast =  ((16 << this.bits > this._root._io.size) || (32 << this.bits > this._root._io.size) || (this.bits >= 26)) ;
        return this._m_isLast;
      }
    });

    /**
     * The 2**bits candidate entries, read as one flat list of starts and ends.
     */
    Object.defineProperty(MinishardBitsProbe.prototype, 'rangeBounds', {
      get: function() {
        if (this._m_rangeBounds !== undefined)
          return this._m_rangeBounds;
        if (16 << this.bits <= this._root._io.size) {
          var io = this._root._io;
          var _pos = io.pos;
          io.seek(0);
          this._m_rangeBounds = [];
          for (var i = 0; i < 2 << this.bits; i++) {
            this._m_rangeBounds.push(io.readU8le());
          }
          io.seek(_pos);
        }
        return this._m_rangeBounds;
      }
    });

    return MinishardBitsProbe;
  })();

  /**
   * A decoded ("raw") minishard index: three arrays of num_chunks u8, stored one after the
   * other. Chunk i has id sum(chunk_id_deltas[0..i]) and its data starts at
   * sum(ofs_data_deltas[0..i]) + sum(len_data[0..i-1]) bytes after the end of the shard
   * index, and is len_data[i] bytes long: a delta of 0 means "right after the previous chunk".
   * @see {@link https://github.com/google/neuroglancer/blob/v2.40.1/src/datasource/precomputed/sharded.md#minishard-index-format|Source}
   */

  var MinishardIndex = NeuroglancerUint64Sharded.MinishardIndex = (function() {
    function MinishardIndex(_io, _parent, _root, numChunks) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;
      this.numChunks = numChunks;

      this._read();
    }
    MinishardIndex.prototype._read = function() {
      this.chunkIdDeltas = [];
      for (var i = 0; i < this.numChunks; i++) {
        this.chunkIdDeltas.push(this._io.readU8le());
      }
      this.ofsDataDeltas = [];
      for (var i = 0; i < this.numChunks; i++) {
        this.ofsDataDeltas.push(this._io.readU8le());
      }
      this.lenData = [];
      for (var i = 0; i < this.numChunks; i++) {
        this.lenData.push(this._io.readU8le());
      }
    }

    /**
     * Chunk ids, delta-encoded (the first one is absolute).
     */

    /**
     * Data offsets, each relative to the end of the previous chunk's data (the first to the end of the shard index).
     */

    /**
     * Stored (possibly gzip-compressed) size of each chunk's data.
     */

    /**
     * The index's size in bytes divided by 24.
     */

    return MinishardIndex;
  })();

  /**
   * The fixed-size table at the start of the file, one entry per minishard.
   * @see {@link https://github.com/google/neuroglancer/blob/v2.40.1/src/datasource/precomputed/sharded.md#shard-index-format|Source}
   */

  var ShardIndex = NeuroglancerUint64Sharded.ShardIndex = (function() {
    function ShardIndex(_io, _parent, _root, numMinishards) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;
      this.numMinishards = numMinishards;

      this._read();
    }
    ShardIndex.prototype._read = function() {
      this.entries = [];
      for (var i = 0; i < this.numMinishards; i++) {
        this.entries.push(new ShardIndexEntry(this._io, this, this._root));
      }
    }

    /**
     * 2**minishard_bits, from the sharding spec.
     */

    return ShardIndex;
  })();

  /**
   * Where one minishard's index lies; [0, 0] for an empty minishard.
   */

  var ShardIndexEntry = NeuroglancerUint64Sharded.ShardIndexEntry = (function() {
    function ShardIndexEntry(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    ShardIndexEntry.prototype._read = function() {
      this.ofsMinishardIndex = this._io.readU8le();
      this.ofsMinishardIndexEnd = this._io.readU8le();
    }
    Object.defineProperty(ShardIndexEntry.prototype, 'isEmpty', {
      get: function() {
        if (this._m_isEmpty !== undefined)
          return this._m_isEmpty;
        this._m_isEmpty = this.ofsMinishardIndexEnd == this.ofsMinishardIndex;
        return this._m_isEmpty;
      }
    });
    Object.defineProperty(ShardIndexEntry.prototype, 'lenMinishardIndex', {
      get: function() {
        if (this._m_lenMinishardIndex !== undefined)
          return this._m_lenMinishardIndex;
        this._m_lenMinishardIndex = this.ofsMinishardIndexEnd - this.ofsMinishardIndex;
        return this._m_lenMinishardIndex;
      }
    });

    /**
     * Start of the minishard index, relative to the end of the shard index.
     */

    /**
     * One past its last byte, relative to the end of the shard index.
     */

    return ShardIndexEntry;
  })();

  /**
   * Size of the shard index; every offset in the file is relative to its end.
   */
  Object.defineProperty(NeuroglancerUint64Sharded.prototype, 'lenShardIndex', {
    get: function() {
      if (this._m_lenShardIndex !== undefined)
        return this._m_lenShardIndex;
      this._m_lenShardIndex = this.numMinishards * 16;
      return this._m_lenShardIndex;
    }
  });

  /**
   * Inferred number of minishard bits; -1 when no candidate fits.
   */
  Object.defineProperty(NeuroglancerUint64Sharded.prototype, 'minishardBits', {
    get: function() {
      if (this._m_minishardBits !== undefined)
        return this._m_minishardBits;
      this._m_minishardBits = (this.minishardBitsProbes[this.minishardBitsProbes.length - 1].fits ? this.minishardBitsProbes[this.minishardBitsProbes.length - 1].bits : -1);
      return this._m_minishardBits;
    }
  });

  /**
   * Candidates b = 0, 1, ... until one fits the file size (Web IDE only).
   */
  Object.defineProperty(NeuroglancerUint64Sharded.prototype, 'minishardBitsProbes', {
    get: function() {
      if (this._m_minishardBitsProbes !== undefined)
        return this._m_minishardBitsProbes;
      this._m_minishardBitsProbes = [];
      var i = 0;
      do {
        var _ = new MinishardBitsProbe(this._io, this, this._root, i);
        this._m_minishardBitsProbes.push(_);
        i++;
      } while (!( ((_.fits) || (_.isLast)) ));
      return this._m_minishardBitsProbes;
    }
  });

  /**
   * Each minishard's index and chunks, following the shard index (Web IDE view).
   */
  Object.defineProperty(NeuroglancerUint64Sharded.prototype, 'minishards', {
    get: function() {
      if (this._m_minishards !== undefined)
        return this._m_minishards;
      this._m_minishards = [];
      for (var i = 0; i < this.numMinishards; i++) {
        this._m_minishards.push(new Minishard(this._io, this, this._root, i));
      }
      return this._m_minishards;
    }
  });
  Object.defineProperty(NeuroglancerUint64Sharded.prototype, 'numMinishards', {
    get: function() {
      if (this._m_numMinishards !== undefined)
        return this._m_numMinishards;
      this._m_numMinishards = (this.minishardBits >= 0 ? 1 << this.minishardBits : 0);
      return this._m_numMinishards;
    }
  });
  Object.defineProperty(NeuroglancerUint64Sharded.prototype, 'shardIndex', {
    get: function() {
      if (this._m_shardIndex !== undefined)
        return this._m_shardIndex;
      if (this.minishardBits >= 0) {
        var _pos = this._io.pos;
        this._io.seek(0);
        this._raw__m_shardIndex = this._io.readBytes(this.lenShardIndex);
        var _io__raw__m_shardIndex = new KaitaiStream(this._raw__m_shardIndex);
        this._m_shardIndex = new ShardIndex(_io__raw__m_shardIndex, this, this._root, this.numMinishards);
        this._io.seek(_pos);
      }
      return this._m_shardIndex;
    }
  });

  return NeuroglancerUint64Sharded;
})();
NeuroglancerUint64Sharded_.NeuroglancerUint64Sharded = NeuroglancerUint64Sharded;
});
