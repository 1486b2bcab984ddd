meta:
  id: xet_mdb_shard
  title: Hugging Face Xet MDB shard (header v2, footer v1)
  file-extension: mdb
  license: CC0-1.0
  ks-version: 0.11
  endian: le
doc: |
  The metadata shard ("Merkle DataBase") of the Hugging Face Xet storage protocol, written by
  xet-core / hf-xet: which xorbs (content-addressed containers of chunks) make up which files,
  and which chunks each xorb holds. All integers are little-endian; every record of the two
  record sections is 48 bytes.

  Layout: a 48-byte header; the File Info section (file blocks until a bookend record); the
  Xorb Info section (xorb blocks until a bookend); then, in full on-disk shards only, three
  optional lookup tables (file, xorb, chunk) and a 200-byte footer at the end of the file.
  The footer-less upload body (header len_footer 0) ends at the xorb bookend.

  Hashes are 32 stored bytes. Their display hex (Hub, URLs, file names) reverses each 8-byte
  group before hex-encoding; so does the sha256 of a metadata_ext record, whose display hex is
  the usual hexdigest. Those conversions, hashing and all consistency checks are host code
  (shardkit.formats.xet_mdb).

  The public spec calls footer bytes 24..72 and 120..192 "reserved" and the chunk entry bytes
  40..48 "unused"; they hold the lookup-table offsets and counts, the HMAC key, timestamps,
  totals and the chunk flags, as read here. The header's len_footer cannot be trusted on its
  own: upload bodies once carried 200 with no footer, so the footer is only read when the file
  is long enough to hold one after the xorb bookend.
doc-ref:
  - FORMAT_NOTES.md (shardkit shared corpus, mdb) sections 1-6 and 9
  - https://github.com/huggingface/xet-core/blob/af1a3ff9/xet_core_structures/src/metadata_shard/shard_format.rs
  - https://github.com/huggingface/xet-core/blob/af1a3ff9/xet_core_structures/src/metadata_shard/file_structs.rs
  - https://github.com/huggingface/xet-core/blob/af1a3ff9/xet_core_structures/src/metadata_shard/xorb_structs.rs
  - https://github.com/huggingface/hub-docs/blob/main/docs/xet/shard.md
seq:
  - id: header
    type: header
instances:
  file_info:
    pos: 48
    type: file_info_section
    doc: The File Info section, right after the header (footer ofs_file_info is always 48).
  ofs_xorb_info:
    value: file_info.blocks.last.ofs_block + 48
    doc: Start of the Xorb Info section, the byte after the file bookend.
  xorb_info:
    pos: ofs_xorb_info
    type: xorb_info_section
  ofs_xorb_info_end:
    value: xorb_info.blocks.last.ofs_block + 48
    doc: The byte after the xorb bookend; the upload body ends here.
  has_footer:
    value: header.len_footer == 200 and _io.size >= ofs_xorb_info_end + 200
    doc: |
      Whether a footer is read: the header announces one and the file holds 200 bytes after
      the xorb bookend (FORMAT_NOTES section 11: len_footer 200 with no footer exists).
  footer:
    pos: _io.size - header.len_footer
    type: footer
    if: has_footer
    doc: The footer, read at the end of the file minus len_footer.
  file_lookup:
    pos: footer.ofs_file_lookup
    size: 12 * footer.num_file_lookup
    type: file_lookup_table
    if: has_footer
    doc: Truncated file hash -> record index of its file block; in file-section order.
  xorb_lookup:
    pos: footer.ofs_xorb_lookup
    size: 12 * footer.num_xorb_lookup
    type: xorb_lookup_table
    if: has_footer
    doc: Truncated xorb hash -> record index of its xorb block; in xorb-section order.
  chunk_lookup:
    pos: footer.ofs_chunk_lookup
    size: 16 * footer.num_chunk_lookup
    type: chunk_lookup_table
    if: has_footer
    doc: Truncated (stored, possibly keyed) chunk hash -> xorb and chunk; sorted by key.
types:
  header:
    doc-ref: FORMAT_NOTES.md section 4; shard_format.rs MDBShardFileHeader
    seq:
      - id: tag
        -orig-id: tag
        contents: [0x48, 0x46, 0x52, 0x65, 0x70, 0x6f, 0x4d, 0x65, 0x74, 0x61, 0x44, 0x61,
                   0x74, 0x61, 0x00, 0x55, 0x69, 0x67, 0x45, 0x6a, 0x7b, 0x81, 0x57, 0x83,
                   0xa5, 0xbd, 0xd9, 0x5c, 0xcd, 0xd1, 0x4a, 0xa9]
        doc: ASCII "HFRepoMetaData", a NUL byte, then 17 fixed bytes (MDB_SHARD_HEADER_TAG).
      - id: version
        type: u8
        valid: 2
        doc: MDB_SHARD_HEADER_VERSION; version 1 (Oct 2024) had another section order.
      - id: len_footer
        -orig-id: footer_size
        type: u8
        valid:
          any-of: [0, 200]
        doc: 200 when a footer follows the lookup tables, 0 in the footer-less upload body.
  file_info_section:
    doc-ref: FORMAT_NOTES.md section 5 (File Info section)
    seq:
      - id: blocks
        type: file_block(_io.pos)
        repeat: until
        repeat-until: _.is_bookend
        doc: The file blocks, in file-hash order; the last element is the bookend record.
  file_block:
    doc: |
      One file: a FileDataSequenceHeader record, num_terms term records, then (flag bit 31)
      num_terms verification records and (flag bit 30) one metadata_ext record. The section's
      bookend is a record whose hash is 32 0xff bytes (then 16 zero bytes).
    doc-ref: FORMAT_NOTES.md section 5; file_structs.rs FileDataSequenceHeader
    params:
      - id: ofs_block
        type: u8
        doc: Absolute offset of the block's first record (for record indexes and bounds).
    seq:
      - id: file_hash
        size: 32
        doc: The file hash ("Xet backed hash"); 32 zero bytes for an empty file.
      - id: flags
        -orig-id: file_flags
        type: u4
        doc: Bit 31 verification records follow; bit 30 a metadata_ext record follows.
      - id: num_terms
        -orig-id: num_entries
        type: u4
        doc: Number of reconstruction terms (may be 0).
      - id: reserved
        -orig-id: _unused
        type: u8
        doc: 0 in production shards; xet-core's unit tests write a marker, so not checked.
      - id: terms
        type: file_term
        repeat: expr
        repeat-expr: num_terms
        if: not is_bookend
      - id: verification_entries
        type: verification_entry
        repeat: expr
        repeat-expr: num_terms
        if: not is_bookend and has_verification
        doc: Entry i holds the range hash of term i.
      - id: metadata_ext
        type: metadata_ext
        if: not is_bookend and has_metadata_ext
    instances:
      is_bookend:
        value: >-
          file_hash == [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
          0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
          0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]
      has_verification:
        value: (flags & 0x80000000) != 0
      has_metadata_ext:
        value: (flags & 0x40000000) != 0
      num_records:
        value: >-
          is_bookend ? 1 : 1 + num_terms + (has_verification ? num_terms : 0)
          + (has_metadata_ext ? 1 : 0)
        doc: Records (48 bytes each) the block takes.
  file_term:
    doc: One reconstruction term, chunks [chunk_index_start, chunk_index_end) of a xorb.
    doc-ref: FORMAT_NOTES.md section 5; file_structs.rs FileDataSequenceEntry
    seq:
      - id: xorb_hash
        -orig-id: cas_hash
        size: 32
      - id: flags
        -orig-id: cas_flags
        type: u4
        doc: Copied from the xorb header flags; 0.
      - id: len_unpacked
        -orig-id: unpacked_segment_bytes
        type: u4
        doc: Uncompressed bytes of the term, the sum of its chunks' sizes.
      - id: chunk_index_start
        type: u4
        doc: First chunk of the term, counted within the xorb.
      - id: chunk_index_end
        type: u4
        doc: One past the last chunk of the term.
  verification_entry:
    doc-ref: FORMAT_NOTES.md sections 5 and 7.5; file_structs.rs FileVerificationEntry
    seq:
      - id: range_hash
        size: 32
        doc: blake3_keyed(VERIFICATION_KEY, the term's plain chunk hashes concatenated).
      - id: reserved
        -orig-id: _unused
        size: 16
  metadata_ext:
    doc-ref: FORMAT_NOTES.md section 5; file_structs.rs FileMetadataExt
    seq:
      - id: sha256
        size: 32
        doc: |
          SHA-256 of the file with each 8-byte group byte-reversed, so its display hex is the
          usual hexdigest; 32 zero bytes for an empty file.
      - id: reserved
        -orig-id: _unused
        size: 16
  xorb_info_section:
    doc-ref: FORMAT_NOTES.md section 5 (Xorb Info section)
    seq:
      - id: blocks
        type: xorb_block(_io.pos)
        repeat: until
        repeat-until: _.is_bookend
        doc: The xorb blocks, in xorb-hash order; the last element is the bookend record.
  xorb_block:
    doc: A XorbChunkSequenceHeader record then one record per chunk.
    doc-ref: FORMAT_NOTES.md section 5; xorb_structs.rs XorbChunkSequenceHeader
    params:
      - id: ofs_block
        type: u8
        doc: Absolute offset of the block's first record.
    seq:
      - id: xorb_hash
        -orig-id: cas_hash
        size: 32
        doc: Merkle aggregation of the xorb's plain chunk hashes.
      - id: flags
        -orig-id: cas_flags
        type: u4
      - id: num_chunks
        -orig-id: num_entries
        type: u4
      - id: len_unpacked
        -orig-id: num_bytes_in_xorb
        type: u4
        doc: Sum of the uncompressed chunk sizes.
      - id: len_on_disk
        -orig-id: num_bytes_on_disk
        type: u4
        doc: Serialized (compressed) xorb length; never filled in by xet-core (0).
      - id: chunks
        type: chunk_entry
        repeat: expr
        repeat-expr: num_chunks
        if: not is_bookend
    instances:
      is_bookend:
        value: >-
          xorb_hash == [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
          0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
          0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]
  chunk_entry:
    doc-ref: FORMAT_NOTES.md section 5; xorb_structs.rs XorbChunkSequenceEntry
    seq:
      - id: chunk_hash
        size: 32
        doc: The chunk hash, HMAC-keyed when the footer's chunk_hash_hmac_key is not zero.
      - id: ofs_unpacked
        -orig-id: chunk_byte_range_start
        type: u4
        doc: Offset of the chunk in the xorb's concatenated uncompressed data.
      - id: len_unpacked
        -orig-id: unpacked_segment_bytes
        type: u4
        doc: Uncompressed size of the chunk.
      - id: flags
        type: u4
        doc: Bit 31 global-dedup eligible (the spec's "unused" bytes 40..44).
      - id: reserved
        -orig-id: _unused
        type: u4
  footer:
    doc-ref: FORMAT_NOTES.md section 6; shard_format.rs MDBShardFileFooter
    seq:
      - id: version
        type: u8
        valid: 1
        doc: MDB_SHARD_FOOTER_VERSION.
      - id: ofs_file_info
        -orig-id: file_info_offset
        type: u8
        doc: Start of the File Info section; always 48.
      - id: ofs_xorb_info
        -orig-id: cas_info_offset
        type: u8
        doc: Start of the Xorb Info section, right after the file bookend.
      - id: ofs_file_lookup
        -orig-id: file_lookup_offset
        type: u8
        doc: |
          Start of the file lookup table, right after the xorb bookend. An absent table has
          count 0 and this offset where it would start (huggingface.js writes 0).
      - id: num_file_lookup
        -orig-id: file_lookup_num_entry
        type: u8
      - id: ofs_xorb_lookup
        -orig-id: cas_lookup_offset
        type: u8
      - id: num_xorb_lookup
        -orig-id: cas_lookup_num_entry
        type: u8
      - id: ofs_chunk_lookup
        -orig-id: chunk_lookup_offset
        type: u8
      - id: num_chunk_lookup
        -orig-id: chunk_lookup_num_entry
        type: u8
      - id: chunk_hash_hmac_key
        size: 32
        doc: Key of the stored chunk hashes (global-dedup responses); all zero when unkeyed.
      - id: creation_timestamp
        -orig-id: shard_creation_timestamp
        type: u8
        doc: Unix seconds; 0 in session and local-CAS shards.
      - id: key_expiry
        -orig-id: shard_key_expiry
        type: u8
        doc: Unix seconds after which the shard is not used for dedup; 2**64-1 means never.
      - id: reserved
        -orig-id: _buffer
        size: 48
        doc: Six zero u64 words.
      - id: len_stored_on_disk
        -orig-id: stored_bytes_on_disk
        type: u8
        doc: Sum of the xorbs' len_on_disk.
      - id: len_materialized
        -orig-id: materialized_bytes
        type: u8
        doc: Sum of len_unpacked over all file terms.
      - id: len_stored
        -orig-id: stored_bytes
        type: u8
        doc: Sum of the xorbs' len_unpacked.
      - id: ofs_footer
        -orig-id: footer_offset
        type: u8
        doc: Where the footer starts, the file length minus 200.
  file_lookup_table:
    seq:
      - id: entries
        type: lookup_entry
        size: 12
        repeat: eos
  xorb_lookup_table:
    seq:
      - id: entries
        type: lookup_entry
        size: 12
        repeat: eos
  lookup_entry:
    doc-ref: FORMAT_NOTES.md section 6.1
    seq:
      - id: truncated_hash
        type: u8
        doc: Bytes 0..8 of the stored hash as a u64 (the first 16 display-hex digits).
      - id: idx_record
        -orig-id: index
        type: u4
        doc: Record index of the block header, counted in 48-byte records from the section start.
    instances:
      truncated_hash_raw:
        pos: 0
        size: 8
        doc: |
          The 8 bytes of truncated_hash as stored: bytes 0..8 of the stored file or xorb
          hash, so they read the same as the start of that hash in the tree. truncated_hash is
          derived from a BLAKE3 hash and almost always above 2**53, which the Web IDE's
          JavaScript runtime shows rounded; these bytes are exact.
  chunk_lookup_table:
    seq:
      - id: entries
        type: chunk_lookup_entry
        size: 16
        repeat: eos
  chunk_lookup_entry:
    doc-ref: FORMAT_NOTES.md section 6.1
    seq:
      - id: truncated_hash
        type: u8
        doc: Bytes 0..8 of the stored (keyed, if the shard is keyed) chunk hash as a u64.
      - id: idx_xorb_record
        -orig-id: xorb_index
        type: u4
        doc: Record index of the xorb block header, as in the xorb lookup table.
      - id: idx_chunk
        -orig-id: chunk_offset
        type: u4
        doc: 0-based chunk number within that xorb.
    instances:
      truncated_hash_raw:
        pos: 0
        size: 8
        doc: |
          The 8 bytes of truncated_hash as stored: bytes 0..8 of the stored (keyed, if the
          shard is keyed) chunk hash, so they read the same as the start of that hash in the
          tree. truncated_hash is derived from a BLAKE3 hash and almost always above 2**53,
          which the Web IDE's JavaScript runtime shows rounded; these bytes are exact.
