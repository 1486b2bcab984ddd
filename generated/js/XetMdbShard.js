// This is a generated file! Please edit source .ksy file and use kaitai-struct-compiler to rebuild

(function (root, factory) {
  if (typeof define === 'function' && define.amd) {
    define(['exports', 'kaitai-struct/KaitaiStream'], factory);
  } else if (typeof exports === 'object' && exports !== null && typeof exports.nodeType !== 'number') {
    factory(exports, require('kaitai-struct/KaitaiStream'));
  } else {
    factory(root.XetMdbShard || (root.XetMdbShard = {}), root.KaitaiStream);
  }
})(typeof self !== 'undefined' ? self : this, function (XetMdbShard_, KaitaiStream) {
/**
 * The metadata shard ("Merkle DataBase") of the Hugging Face Xet storage protocol, written by
 * xet-core / hf-xet: which xorbs (content-addressed containers of chunks) make up which files,
 * and which chunks each xorb holds. All integers are little-endian; every record of the two
 * record sections is 48 bytes.
 * 
 * Layout: a 48-byte header; the File Info section (file blocks until a bookend record); the
 * Xorb Info section (xorb blocks until a bookend); then, in full on-disk shards only, three
 * optional lookup tables (file, xorb, chunk) and a 200-byte footer at the end of the file.
 * The footer-less upload body (header len_footer 0) ends at the xorb bookend.
 * 
 * Hashes are 32 stored bytes. Their display hex (Hub, URLs, file names) reverses each 8-byte
 * group before hex-encoding; so does the sha256 of a metadata_ext record, whose display hex is
 * the usual hexdigest. Those conversions, hashing and all consistency checks are host code
 * (shardkit.formats.xet_mdb).
 * 
 * The public spec calls footer bytes 24..72 and 120..192 "reserved" and the chunk entry bytes
 * 40..48 "unused"; they hold the lookup-table offsets and counts, the HMAC key, timestamps,
 * totals and the chunk flags, as read here. The header's len_footer cannot be trusted on its
 * own: upload bodies once carried 200 with no footer, so the footer is only read when the file
 * is long enough to hold one after the xorb bookend.
 * @see FORMAT_NOTES.md (shardkit shared corpus, mdb) sections 1-6 and 9
 * @see {@link https://github.com/huggingface/xet-core/blob/af1a3ff9/xet_core_structures/src/metadata_shard/shard_format.rs|Source}
 * @see {@link https://github.com/huggingface/xet-core/blob/af1a3ff9/xet_core_structures/src/metadata_shard/file_structs.rs|Source}
 * @see {@link https://github.com/huggingface/xet-core/blob/af1a3ff9/xet_core_structures/src/metadata_shard/xorb_structs.rs|Source}
 * @see {@link https://github.com/huggingface/hub-docs/blob/main/docs/xet/shard.md|Source}
 */

var XetMdbShard = (function() {
  function XetMdbShard(_io, _parent, _root) {
    this._io = _io;
    this._parent = _parent;
    this._root = _root || this;

    this._read();
  }
  XetMdbShard.prototype._read = function() {
    this.header = new Header(this._io, this, this._root);
  }

  /**
   * @see FORMAT_NOTES.md section 5; xorb_structs.rs XorbChunkSequenceEntry
   */

  var ChunkEntry = XetMdbShard.ChunkEntry = (function() {
    function ChunkEntry(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    ChunkEntry.prototype._read = function() {
      this.chunkHash = this._io.readBytes(32);
      this.ofsUnpacked = this._io.readU4le();
      this.lenUnpacked = this._io.readU4le();
      this.flags = this._io.readU4le();
      this.reserved = this._io.readU4le();
    }

    /**
     * The chunk hash, HMAC-keyed when the footer's chunk_hash_hmac_key is not zero.
     */

    /**
     * Offset of the chunk in the xorb's concatenated uncompressed data.
     */

    /**
     * Uncompressed size of the chunk.
     */

    /**
     * Bit 31 global-dedup eligible (the spec's "unused" bytes 40..44).
     */

    return ChunkEntry;
  })();

  /**
   * @see FORMAT_NOTES.md section 6.1
   */

  var ChunkLookupEntry = XetMdbShard.ChunkLookupEntry = (function() {
    function ChunkLookupEntry(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    ChunkLookupEntry.prototype._read = function() {
      this.truncatedHash = this._io.readU8le();
      this.idxXorbRecord = this._io.readU4le();
      this.idxChunk = this._io.readU4le();
    }

    /**
     * The 8 bytes of truncated_hash as stored: bytes 0..8 of the stored (keyed, if the
     * shard is keyed) chunk hash, so they read the same as the start of that hash in the
     * tree. truncated_hash is derived from a BLAKE3 hash and almost always above 2**53,
     * which the Web IDE's JavaScript runtime shows rounded; these bytes are exact.
     */
    Object.defineProperty(ChunkLookupEntry.prototype, 'truncatedHashRaw', {
      get: function() {
        if (this._m_truncatedHashRaw !== undefined)
          return this._m_truncatedHashRaw;
        var _pos = this._io.pos;
        this._io.seek(0);
        this._m_truncatedHashRaw = this._io.readBytes(8);
        this._io.seek(_pos);
        return this._m_truncatedHashRaw;
      }
    });

    /**
     * Bytes 0..8 of the stored (keyed, if the shard is keyed) chunk hash as a u64.
     */

    /**
     * Record index of the xorb block header, as in the xorb lookup table.
     */

    /**
     * 0-based chunk number within that xorb.
     */

    return ChunkLookupEntry;
  })();

  var ChunkLookupTable = XetMdbShard.ChunkLookupTable = (function() {
    function ChunkLookupTable(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    ChunkLookupTable.prototype._read = function() {
      this._raw_entries = [];
      this.entries = [];
      var i = 0;
      while (!this._io.isEof()) {
        this._raw_entries.push(this._io.readBytes(16));
        var _io__raw_entries = new KaitaiStream(this._raw_entries[this._raw_entries.length - 1]);
        this.entries.push(new ChunkLookupEntry(_io__raw_entries, this, this._root));
        i++;
      }
    }

    return ChunkLookupTable;
  })();

  /**
   * One file: a FileDataSequenceHeader record, num_terms term records, then (flag bit 31)
   * num_terms verification records and (flag bit 30) one metadata_ext record. The section's
   * bookend is a record whose hash is 32 0xff bytes (then 16 zero bytes).
   * @see FORMAT_NOTES.md section 5; file_structs.rs FileDataSequenceHeader
   */

  var FileBlock = XetMdbShard.FileBlock = (function() {
    function FileBlock(_io, _parent, _root, ofsBlock) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;
      this.ofsBlock = ofsBlock;

      this._read();
    }
    FileBlock.prototype._read = function() {
      this.fileHash = this._io.readBytes(32);
      this.flags = this._io.readU4le();
      this.numTerms = this._io.readU4le();
      this.reserved = this._io.readU8le();
      if (!(this.isBookend)) {
        this.terms = [];
        for (var i = 0; i < this.numTerms; i++) {
          this.terms.push(new FileTerm(this._io, this, this._root));
        }
      }
      if ( ((!(this.isBookend)) && (this.hasVerification)) ) {
        this.verificationEntries = [];
        for (var i = 0; i < this.numTerms; i++) {
          this.verificationEntries.push(new VerificationEntry(this._io, this, this._root));
        }
      }
      if ( ((!(this.isBookend)) && (this.hasMetadataExt)) ) {
        this.metadataExt = new MetadataExt(this._io, this, this._root);
      }
    }
    Object.defineProperty(FileBlock.prototype, 'hasMetadataExt', {
      get: function() {
        if (this._m_hasMetadataExt !== undefined)
          return this._m_hasMetadataExt;
        this._m_hasMetadataExt = (this.flags & 1073741824) != 0;
        return this._m_hasMetadataExt;
      }
    });
    Object.defineProperty(FileBlock.prototype, 'hasVerification', {
      get: function() {
        if (this._m_hasVerification !== undefined)
          return this._m_hasVerification;
        this._m_hasVerification = (this.flags & 2147483648) != 0;
        return this._m_hasVerification;
      }
    });
    Object.defineProperty(FileBlock.prototype, 'isBookend', {
      get: function() {
        if (this._m_isBookend !== undefined)
          return this._m_isBookend;
        this._m_isBookend = (KaitaiStream.byteArrayCompare(this.fileHash, new Uint8Array([255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255])) == 0);
        return this._m_isBookend;
      }
    });

    /**
     * Records (48 bytes each) the block takes.
     */
    Object.defineProperty(FileBlock.prototype, 'numRecords', {
      get: function() {
        if (this._m_numRecords !== undefined)
          return this._m_numRecords;
        this._m_numRecords = (this.isBookend ? 1 : ((1 + this.numTerms) + (this.hasVerification ? this.numTerms : 0)) + (this.hasMetadataExt ? 1 : 0));
        return this._m_numRecords;
      }
    });

    /**
     * The file hash ("Xet backed hash"); 32 zero bytes for an empty file.
     */

    /**
     * Bit 31 verification records follow; bit 30 a metadata_ext record follows.
     */

    /**
     * Number of reconstruction terms (may be 0).
     */

    /**
     * 0 in production shards; xet-core's unit tests write a marker, so not checked.
     */

    /**
     * Entry i holds the range hash of term i.
     */

    /**
     * Absolute offset of the block's first record (for record indexes and bounds).
     */

    return FileBlock;
  })();

  /**
   * @see FORMAT_NOTES.md section 5 (File Info section)
   */

  var FileInfoSection = XetMdbShard.FileInfoSection = (function() {
    function FileInfoSection(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    FileInfoSection.prototype._read = function() {
      this.blocks = [];
      var i = 0;
      do {
        var _ = new FileBlock(this._io, this, this._root, this._io.pos);
        this.blocks.push(_);
        i++;
      } while (!(_.isBookend));
    }

    /**
     * The file blocks, in file-hash order; the last element is the bookend record.
     */

    return FileInfoSection;
  })();

  var FileLookupTable = XetMdbShard.FileLookupTable = (function() {
    function FileLookupTable(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    FileLookupTable.prototype._read = function() {
      this._raw_entries = [];
      this.entries = [];
      var i = 0;
      while (!this._io.isEof()) {
        this._raw_entries.push(this._io.readBytes(12));
        var _io__raw_entries = new KaitaiStream(this._raw_entries[this._raw_entries.length - 1]);
        this.entries.push(new LookupEntry(_io__raw_entries, this, this._root));
        i++;
      }
    }

    return FileLookupTable;
  })();

  /**
   * One reconstruction term, chunks [chunk_index_start, chunk_index_end) of a xorb.
   * @see FORMAT_NOTES.md section 5; file_structs.rs FileDataSequenceEntry
   */

  var FileTerm = XetMdbShard.FileTerm = (function() {
    function FileTerm(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    FileTerm.prototype._read = function() {
      this.xorbHash = this._io.readBytes(32);
      this.flags = this._io.readU4le();
      this.lenUnpacked = this._io.readU4le();
      this.chunkIndexStart = this._io.readU4le();
      this.chunkIndexEnd = this._io.readU4le();
    }

    /**
     * Copied from the xorb header flags; 0.
     */

    /**
     * Uncompressed bytes of the term, the sum of its chunks' sizes.
     */

    /**
     * First chunk of the term, counted within the xorb.
     */

    /**
     * One past the last chunk of the term.
     */

    return FileTerm;
  })();

  /**
   * @see FORMAT_NOTES.md section 6; shard_format.rs MDBShardFileFooter
   */

  var Footer = XetMdbShard.Footer = (function() {
    function Footer(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    Footer.prototype._read = function() {
      this.version = this._io.readU8le();
      if (!(this.version == 1)) {
        throw new KaitaiStream.ValidationNotEqualError(1, this.version, this._io, "/types/footer/seq/0");
      }
      this.ofsFileInfo = this._io.readU8le();
      this.ofsXorbInfo = this._io.readU8le();
      this.ofsFileLookup = this._io.readU8le();
      this.numFileLookup = this._io.readU8le();
      this.ofsXorbLookup = this._io.readU8le();
      this.numXorbLookup = this._io.readU8le();
      this.ofsChunkLookup = this._io.readU8le();
      this.numChunkLookup = this._io.readU8le();
      this.chunkHashHmacKey = this._io.readBytes(32);
      this.creationTimestamp = this._io.readU8le();
      this.keyExpiry = this._io.readU8le();
      this.reserved = this._io.readBytes(48);
      this.lenStoredOnDisk = this._io.readU8le();
      this.lenMaterialized = this._io.readU8le();
      this.lenStored = this._io.readU8le();
      this.ofsFooter = this._io.readU8le();
    }

    /**
     * MDB_SHARD_FOOTER_VERSION.
     */

    /**
     * Start of the File Info section; always 48.
     */

    /**
     * Start of the Xorb Info section, right after the file bookend.
     */

    /**
     * Start of the file lookup table, right after the xorb bookend. An absent table has
     * count 0 and this offset where it would start (huggingface.js writes 0).
     */

    /**
     * Key of the stored chunk hashes (global-dedup responses); all zero when unkeyed.
     */

    /**
     * Unix seconds; 0 in session and local-CAS shards.
     */

    /**
     * Unix seconds after which the shard is not used for dedup; 2**64-1 means never.
     */

    /**
     * Six zero u64 words.
     */

    /**
     * Sum of the xorbs' len_on_disk.
     */

    /**
     * Sum of len_unpacked over all file terms.
     */

    /**
     * Sum of the xorbs' len_unpacked.
     */

    /**
     * Where the footer starts, the file length minus 200.
     */

    return Footer;
  })();

  /**
   * @see FORMAT_NOTES.md section 4; shard_format.rs MDBShardFileHeader
   */

  var Header = XetMdbShard.Header = (function() {
    function Header(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    Header.prototype._read = function() {
      this.tag = this._io.readBytes(32);
      if (!((KaitaiStream.byteArrayCompare(this.tag, new Uint8Array([72, 70, 82, 101, 112, 111, 77, 101, 116, 97, 68, 97, 116, 97, 0, 85, 105, 103, 69, 106, 123, 129, 87, 131, 165, 189, 217, 92, 205, 209, 74, 169])) == 0))) {
        throw new KaitaiStream.ValidationNotEqualError(new Uint8Array([72, 70, 82, 101, 112, 111, 77, 101, 116, 97, 68, 97, 116, 97, 0, 85, 105, 103, 69, 106, 123, 129, 87, 131, 165, 189, 217, 92, 205, 209, 74, 169]), this.tag, this._io, "/types/header/seq/0");
      }
      this.version = this._io.readU8le();
      if (!(this.version == 2)) {
        throw new KaitaiStream.ValidationNotEqualError(2, this.version, this._io, "/types/header/seq/1");
      }
      this.lenFooter = this._io.readU8le();
      if (!( ((this.lenFooter == 0) || (this.lenFooter == 200)) )) {
        throw new KaitaiStream.ValidationNotAnyOfError(this.lenFooter, this._io, "/types/header/seq/2");
      }
    }

    /**
     * ASCII "HFRepoMetaData", a NUL byte, then 17 fixed bytes (MDB_SHARD_HEADER_TAG).
     */

    /**
     * MDB_SHARD_HEADER_VERSION; version 1 (Oct 2024) had another section order.
     */

    /**
     * 200 when a footer follows the lookup tables, 0 in the footer-less upload body.
     */

    return Header;
  })();

  /**
   * @see FORMAT_NOTES.md section 6.1
   */

  var LookupEntry = XetMdbShard.LookupEntry = (function() {
    function LookupEntry(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    LookupEntry.prototype._read = function() {
      this.truncatedHash = this._io.readU8le();
      this.idxRecord = this._io.readU4le();
    }

    /**
     * The 8 bytes of truncated_hash as stored: bytes 0..8 of the stored file or xorb
     * hash, so they read the same as the start of that hash in the tree. truncated_hash is
     * derived from a BLAKE3 hash and almost always above 2**53, which the Web IDE's
     * JavaScript runtime shows rounded; these bytes are exact.
     */
    Object.defineProperty(LookupEntry.prototype, 'truncatedHashRaw', {
      get: function() {
        if (this._m_truncatedHashRaw !== undefined)
          return this._m_truncatedHashRaw;
        var _pos = this._io.pos;
        this._io.seek(0);
        this._m_truncatedHashRaw = this._io.readBytes(8);
        this._io.seek(_pos);
        return this._m_truncatedHashRaw;
      }
    });

    /**
     * Bytes 0..8 of the stored hash as a u64 (the first 16 display-hex digits).
     */

    /**
     * Record index of the block header, counted in 48-byte records from the section start.
     */

    return LookupEntry;
  })();

  /**
   * @see FORMAT_NOTES.md section 5; file_structs.rs FileMetadataExt
   */

  var MetadataExt = XetMdbShard.MetadataExt = (function() {
    function MetadataExt(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    MetadataExt.prototype._read = function() {
      this.sha256 = this._io.readBytes(32);
      this.reserved = this._io.readBytes(16);
    }

    /**
     * SHA-256 of the file with each 8-byte group byte-reversed, so its display hex is the
     * usual hexdigest; 32 zero bytes for an empty file.
     */

    return MetadataExt;
  })();

  /**
   * @see FORMAT_NOTES.md sections 5 and 7.5; file_structs.rs FileVerificationEntry
   */

  var VerificationEntry = XetMdbShard.VerificationEntry = (function() {
    function VerificationEntry(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    VerificationEntry.prototype._read = function() {
      this.rangeHash = this._io.readBytes(32);
      this.reserved = this._io.readBytes(16);
    }

    /**
     * blake3_keyed(VERIFICATION_KEY, the term's plain chunk hashes concatenated).
     */

    return VerificationEntry;
  })();

  /**
   * A XorbChunkSequenceHeader record then one record per chunk.
   * @see FORMAT_NOTES.md section 5; xorb_structs.rs XorbChunkSequenceHeader
   */

  var XorbBlock = XetMdbShard.XorbBlock = (function() {
    function XorbBlock(_io, _parent, _root, ofsBlock) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;
      this.ofsBlock = ofsBlock;

      this._read();
    }
    XorbBlock.prototype._read = function() {
      this.xorbHash = this._io.readBytes(32);
      this.flags = this._io.readU4le();
      this.numChunks = this._io.readU4le();
      this.lenUnpacked = this._io.readU4le();
      this.lenOnDisk = this._io.readU4le();
      if (!(this.isBookend)) {
        this.chunks = [];
        for (var i = 0; i < this.numChunks; i++) {
          this.chunks.push(new ChunkEntry(this._io, this, this._root));
        }
      }
    }
    Object.defineProperty(XorbBlock.prototype, 'isBookend', {
      get: function() {
        if (this._m_isBookend !== undefined)
          return this._m_isBookend;
        this._m_isBookend = (KaitaiStream.byteArrayCompare(this.xorbHash, new Uint8Array([255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255])) == 0);
        return this._m_isBookend;
      }
    });

    /**
     * Merkle aggregation of the xorb's plain chunk hashes.
     */

    /**
     * Sum of the uncompressed chunk sizes.
     */

    /**
     * Serialized (compressed) xorb length; never filled in by xet-core (0).
     */

    /**
     * Absolute offset of the block's first record.
     */

    return XorbBlock;
  })();

  /**
   * @see FORMAT_NOTES.md section 5 (Xorb Info section)
   */

  var XorbInfoSection = XetMdbShard.XorbInfoSection = (function() {
    function XorbInfoSection(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    XorbInfoSection.prototype._read = function() {
      this.blocks = [];
      var i = 0;
      do {
        var _ = new XorbBlock(this._io, this, this._root, this._io.pos);
        this.blocks.push(_);
        i++;
      } while (!(_.isBookend));
    }

    /**
     * The xorb blocks, in xorb-hash order; the last element is the bookend record.
     */

    return XorbInfoSection;
  })();

  var XorbLookupTable = XetMdbShard.XorbLookupTable = (function() {
    function XorbLookupTable(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    XorbLookupTable.prototype._read = function() {
      this._raw_entries = [];
      this.entries = [];
      var i = 0;
      while (!this._io.isEof()) {
        this._raw_entries.push(this._io.readBytes(12));
        var _io__raw_entries = new KaitaiStream(this._raw_entries[this._raw_entries.length - 1]);
        this.entries.push(new LookupEntry(_io__raw_entries, this, this._root));
        i++;
      }
    }

    return XorbLookupTable;
  })();

  /**
   * Truncated (stored, possibly keyed) chunk hash -> xorb and chunk; sorted by key.
   */
  Object.defineProperty(XetMdbShard.prototype, 'chunkLookup', {
    get: function() {
      if (this._m_chunkLookup !== undefined)
        return this._m_chunkLookup;
      if (this.hasFooter) {
        var _pos = this._io.pos;
        this._io.seek(this.footer.ofsChunkLookup);
        this._raw__m_chunkLookup = this._io.readBytes(16 * this.footer.numChunkLookup);
        var _io__raw__m_chunkLookup = new KaitaiStream(this._raw__m_chunkLookup);
        this._m_chunkLookup = new ChunkLookupTable(_io__raw__m_chunkLookup, this, this._root);
        this._io.seek(_pos);
      }
      return this._m_chunkLookup;
    }
  });

  /**
   * The File Info section, right after the header (footer ofs_file_info is always 48).
   */
  Object.defineProperty(XetMdbShard.prototype, 'fileInfo', {
    get: function() {
      if (this._m_fileInfo !== undefined)
        return this._m_fileInfo;
      var _pos = this._io.pos;
      this._io.seek(48);
      this._m_fileInfo = new FileInfoSection(this._io, this, this._root);
      this._io.seek(_pos);
      return this._m_fileInfo;
    }
  });

  /**
   * Truncated file hash -> record index of its file block; in file-section order.
   */
  Object.defineProperty(XetMdbShard.prototype, 'fileLookup', {
    get: function() {
      if (this._m_fileLookup !== undefined)
        return this._m_fileLookup;
      if (this.hasFooter) {
        var _pos = this._io.pos;
        this._io.seek(this.footer.ofsFileLookup);
        this._raw__m_fileLookup = this._io.readBytes(12 * this.footer.numFileLookup);
        var _io__raw__m_fileLookup = new KaitaiStream(this._raw__m_fileLookup);
        this._m_fileLookup = new FileLookupTable(_io__raw__m_fileLookup, this, this._root);
        this._io.seek(_pos);
      }
      return this._m_fileLookup;
    }
  });

  /**
   * The footer, read at the end of the file minus len_footer.
   */
  Object.defineProperty(XetMdbShard.prototype, 'footer', {
    get: function() {
      if (this._m_footer !== undefined)
        return this._m_footer;
      if (this.hasFooter) {
        var _pos = this._io.pos;
        this._io.seek(this._io.size - this.header.lenFooter);
        this._m_footer = new Footer(this._io, this, this._root);
        this._io.seek(_pos);
      }
      return this._m_footer;
    }
  });

  /**
   * Whether a footer is read: the header announces one and the file holds 200 bytes after
   * the xorb bookend (FORMAT_NOTES section 11: len_footer 200 with no footer exists).
   */
  Object.defineProperty(XetMdbShard.prototype, 'hasFooter', {
    get: function() {
      if (this._m_hasFooter !== undefined)
        return this._m_hasFooter;
      this._m_hasFooter =  ((this.header.lenFooter == 200) && (this._io.size >= this.ofsXorbInfoEnd + 200)) ;
      return this._m_hasFooter;
    }
  });

  /**
   * Start of the Xorb Info section, the byte after the file bookend.
   */
  Object.defineProperty(XetMdbShard.prototype, 'ofsXorbInfo', {
    get: function() {
      if (this._m_ofsXorbInfo !== undefined)
        return this._m_ofsXorbInfo;
      this._m_ofsXorbInfo = this.fileInfo.blocks[this.fileInfo.blocks.length - 1].ofsBlock + 48;
      return this._m_ofsXorbInfo;
    }
  });

  /**
   * The byte after the xorb bookend; the upload body ends here.
   */
  Object.defineProperty(XetMdbShard.prototype, 'ofsXorbInfoEnd', {
    get: function() {
      if (this._m_ofsXorbInfoEnd !== undefined)
        return this._m_ofsXorbInfoEnd;
      this._m_ofsXorbInfoEnd = this.xorbInfo.blocks[this.xorbInfo.blocks.length - 1].ofsBlock + 48;
      return this._m_ofsXorbInfoEnd;
    }
  });
  Object.defineProperty(XetMdbShard.prototype, 'xorbInfo', {
    get: function() {
      if (this._m_xorbInfo !== undefined)
        return this._m_xorbInfo;
      var _pos = this._io.pos;
      this._io.seek(this.ofsXorbInfo);
      this._m_xorbInfo = new XorbInfoSection(this._io, this, this._root);
      this._io.seek(_pos);
      return this._m_xorbInfo;
    }
  });

  /**
   * Truncated xorb hash -> record index of its xorb block; in xorb-section order.
   */
  Object.defineProperty(XetMdbShard.prototype, 'xorbLookup', {
    get: function() {
      if (this._m_xorbLookup !== undefined)
        return this._m_xorbLookup;
      if (this.hasFooter) {
        var _pos = this._io.pos;
        this._io.seek(this.footer.ofsXorbLookup);
        this._raw__m_xorbLookup = this._io.readBytes(12 * this.footer.numXorbLookup);
        var _io__raw__m_xorbLookup = new KaitaiStream(this._raw__m_xorbLookup);
        this._m_xorbLookup = new XorbLookupTable(_io__raw__m_xorbLookup, this, this._root);
        this._io.seek(_pos);
      }
      return this._m_xorbLookup;
    }
  });

  return XetMdbShard;
})();
XetMdbShard_.XetMdbShard = XetMdbShard;
});
