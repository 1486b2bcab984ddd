meta:
  id: amudai_shard
  title: Microsoft Amudai shard (root file or stripe data file)
  file-extension:
    - shard
    - stripe
  license: CC0-1.0
  ks-version: 0.11
  endian: le
doc: |
  An Amudai shard is a column store: a root file `*.amudai.shard` holding the metadata and, in
  the single-file layout, every encoded buffer; in the two-level layout each stripe's buffers
  live in a framed `<id>.amudai.stripe` file beside the root. Both kinds of file start and end
  with the same 8-byte frame ("amud" + version 0.1.0).

  The metadata are protobuf messages (and one FlatBuffers schema), each stored as a
  length-message-checksum `record`; DataRefs inside them give absolute byte ranges. The root
  file ends with the shard directory (the ToC): its record, the repeated u4 length, the footer.
  This schema reads the frame and the directory; protobuf payloads stay bytes (shardkit decodes
  them with code generated from schemas/amudai/*.proto). The other types (`encoded_block`,
  `block_map`, `value_dictionary`) describe byte ranges the protobuf metadata point at: host code
  (or a Web IDE user, selecting the range) applies them to `EncodedBuffer` ranges.

  Checksums (`ck`) are XXH3-64 without seed folded to 32 bits, (h >> 32) ^ (h & 0xFFFFFFFF);
  checking them is left to host code, as is decompression.
doc-ref:
  - FORMAT_NOTES.md section 1 (container framing), 4 (encoded buffers)
  - https://github.com/microsoft/amudai/tree/63c7da35/proto_defs/shard_format
seq:
  - id: header
    type: frame
instances:
  footer:
    pos: _io.size - 8
    type: frame
    doc: Byte-identical to the header.
  len_directory:
    -orig-id: L
    pos: _io.size - 12
    type: u4
    valid:
      max: 16777215
    doc: |
      Payload length of the directory record, repeated after it so that a reader finds the
      record from the end. The reference reader refuses 16 MiB or more. Only root files have it.
  directory:
    pos: _io.size - 12 - (len_directory + 8)
    size: len_directory + 8
    type: record
    doc: The ShardDirectory protobuf message (amudai.shard.ShardDirectory) as a record.
types:
  frame:
    doc: The 8-byte header and footer ("amud", then version patch, minor, major).
    doc-ref: FORMAT_NOTES.md section 1.1
    seq:
      - id: magic
        contents: amud
      - id: version_patch
        type: u1
      - id: version_minor
        type: u2
      - id: version_major
        type: u1
        valid:
          max: 0
        doc: Readers reject only a major version above their own (0); minor and patch are ignored.
  record:
    doc: |
      A serialized metadata message: u4 length, the protobuf (or FlatBuffers) bytes, u4 ck of
      the payload. A DataRef to a message covers the whole record (length + 8 bytes).
    doc-ref: FORMAT_NOTES.md section 1.2
    seq:
      - id: len_payload
        -orig-id: len
        type: u4
      - id: payload
        size: len_payload
      - id: checksum
        type: u4
        doc: ck(payload); the length field is not covered.
  encoded_block:
    doc: |
      One block of a block-stream buffer, sliced out with the sizes of the block map. The
      presence section exists only when the buffer has embedded presence; the checksum only
      when it has block checksums (then it is the last 4 bytes and covers all bytes before it).
    doc-ref: FORMAT_NOTES.md section 4.2
    params:
      - id: embedded_presence
        type: bool
      - id: has_checksum
        type: bool
    seq:
      - id: len_presence
        -orig-id: presence_size
        type: u4
        doc: 0 (no nulls), or 1 + ... bytes starting with the presence kind (1, 2 or 3).
      - id: len_values
        -orig-id: values_size
        type: u4
      - id: presence
        size: len_presence
        if: embedded_presence
        doc: |
          Empty: no nulls. 01: all null. 02 + one byte per value (1 = present). 03 + u1 negated
          + a portable RoaringBitmap of present (negated 0) or null (negated 1) positions.
      - id: presence_padding
        size: (8 - (8 + len_presence) % 8) % 8
        if: embedded_presence
        doc: Zero padding to a multiple of 8 (block-relative).
      - id: values
        size: len_values
        type: values_section
    instances:
      checksum:
        pos: _io.size - 4
        type: u4
        if: has_checksum
        doc: ck of every byte of the block before it (header, sections and padding).
  values_section:
    doc: The values section of a block; its layout after the code depends on the code.
    doc-ref: FORMAT_NOTES.md section 4.4
    seq:
      - id: encoding
        type: u2
        enum: block_encoding
      - id: body
        size-eos: true
        doc: Plain numeric values, or an offset width and offsets for binary Plain blocks, etc.
  block_map:
    doc: |
      The tail of a block-stream buffer: segment records (one per up to segment_size blocks),
      the n+1 segment logical offsets and record offsets, and a 40-byte footer. Parse it on
      exactly the map's bytes (EncodedBuffer.block_map).
    doc-ref: FORMAT_NOTES.md section 4.3
    instances:
      footer:
        pos: _io.size - 40
        type: block_map_footer
      segment_logical_offsets:
        pos: _io.size - 40 - 16 * (footer.num_segments + 1)
        type: u8
        repeat: expr
        repeat-expr: footer.num_segments + 1
        doc: First logical position of each segment; the last entry is value_count.
      ofs_segment_records:
        -orig-id: segment_record_offsets
        pos: _io.size - 40 - 8 * (footer.num_segments + 1)
        type: u8
        repeat: expr
        repeat-expr: footer.num_segments + 1
        doc: Byte offset of each segment record from the start of the map; the first is 0.
      segments:
        pos: 0
        type: block_map_segment
        repeat: expr
        repeat-expr: footer.num_segments
  block_map_footer:
    seq:
      - id: num_values
        -orig-id: value_count
        type: u8
      - id: num_blocks
        -orig-id: block_count
        type: u8
      - id: num_segments
        -orig-id: segment_count
        type: u8
      - id: segment_size
        type: u8
        doc: Blocks per segment (1024).
      - id: len_data
        -orig-id: data_size
        type: u8
        doc: Bytes of all blocks together, without the padding to 16 before the map.
  block_map_segment:
    doc: |
      Sizes of up to segment_size consecutive blocks, each stored as (size - minimum) in 8, 16 or
      32 bits. Block offsets are relative to the start of the buffer; prefix-sum the sizes from
      ofs_first_block.
    seq:
      - id: first_logical_pos
        type: u8
      - id: ofs_first_block
        -orig-id: first_block_offset
        type: u8
      - id: min_logical_size
        type: u4
      - id: min_block_size
        type: u4
      - id: logical_size_bits
        type: u1
        valid:
          any-of: [8, 16, 32]
      - id: block_size_bits
        type: u1
        valid:
          any-of: [8, 16, 32]
      - id: num_blocks
        -orig-id: block_count_in_segment
        type: u2
      - id: logical_sizes
        type:
          switch-on: logical_size_bits
          cases:
            8: u1
            16: u2
            32: u4
        repeat: expr
        repeat-expr: num_blocks
      - id: logical_sizes_padding
        size: (4 - _io.pos % 4) % 4
      - id: block_sizes
        type:
          switch-on: block_size_bits
          cases:
            8: u1
            16: u2
            32: u4
        repeat: expr
        repeat-expr: num_blocks
      - id: block_sizes_padding
        size: (8 - _io.pos % 8) % 8
    instances:
      len_record:
        value: >-
          ((28 + num_blocks * logical_size_bits / 8 + 3) / 4 * 4
          + num_blocks * block_size_bits / 8 + 7) / 8 * 8
        doc: |
          Bytes of this segment record, paddings included (the 28-byte head, the logical
          sizes padded to 4, the block sizes padded to 8): the next record starts this far on.
  value_dictionary:
    doc: |
      A VALUE_DICTIONARY buffer (no block map): a fixed 128-byte header, then the values, offsets
      (variable-size values only) and sorted-ids sections, each a `dictionary_section`, at
      offsets relative to the buffer start. Parse it on exactly the buffer's bytes.
    doc-ref: FORMAT_NOTES.md section 4.6
    seq:
      - id: header
        type: value_dictionary_header
    instances:
      values:
        pos: header.ofs_values
        size: header.ofs_values_end - header.ofs_values
        type: dictionary_section
        doc: All entries concatenated in id order.
      offsets:
        pos: header.ofs_offsets
        size: header.ofs_offsets_end - header.ofs_offsets
        type: dictionary_section
        if: header.ofs_offsets_end > header.ofs_offsets
        doc: value_count + 1 u8 byte offsets into the values payload, starting at 0.
      sorted_ids:
        pos: header.ofs_sorted_ids
        size: header.ofs_sorted_ids_end - header.ofs_sorted_ids
        type: dictionary_section
        doc: u4 ids of the non-null entries, sorted by value.
  value_dictionary_header:
    seq:
      - id: value_type
        type: u1
        enum: basic_type
      - id: num_values
        -orig-id: value_count
        type: u4
        doc: Entries, the null entry included.
      - id: null_entry_present
        type: u1
      - id: null_id
        type: u4
        doc: Id of the entry standing for null (0 when there is none).
      - id: fixed_value_size
        type: u4
        doc: Byte size of every value; 0 for variable-size values.
      - id: ofs_values
        -orig-id: values_start
        type: u8
      - id: ofs_values_end
        -orig-id: values_end
        type: u8
      - id: ofs_offsets
        -orig-id: offsets_start
        type: u8
      - id: ofs_offsets_end
        -orig-id: offsets_end
        type: u8
        doc: Equal to ofs_offsets when there is no offsets section.
      - id: ofs_sorted_ids
        -orig-id: sorted_ids_start
        type: u8
      - id: ofs_sorted_ids_end
        -orig-id: sorted_ids_end
        type: u8
      - id: reserved
        size: 62
      - id: checksum
        type: u4
        doc: ck of the header's first 124 bytes.
  dictionary_section:
    doc: |
      u8 payload length, the payload, 64 zero bytes, zero padding so that the bytes before the
      checksum are 12 mod 16, then u4 ck(payload). The whole section is a multiple of 16 bytes.
    seq:
      - id: len_payload
        -orig-id: payload_len
        type: u8
      - id: payload
        size: len_payload
    instances:
      checksum:
        pos: _io.size - 4
        type: u4
        doc: ck of the payload only.
enums:
  block_encoding:
    1: plain
    2: fl_bit_pack
    3: frame_of_reference
    4: fused_frame_of_reference
    5: delta
    6: run_length
    7: single_value
    8: truncate_u8
    9: truncate_u16
    10: truncate_u32
    11: truncate_u64
    12: alp
    13: alp_rd
    14: block_dictionary
    15: fsst
    16: zstd
    17: lz4
    18: zig_zag
    19: sparse
  basic_type:
    0: unit
    1: boolean
    2: int8
    3: int16
    4: int32
    5: int64
    6: float32
    7: float64
    8: binary
    9: fixed_size_binary
    10: string
    11: guid
    12: date_time
    13: list
    14: fixed_size_list
    15: struct
    16: map
    17: union
