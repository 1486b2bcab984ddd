meta:
  id: zss
  title: ZSS v1 compressed sorted set
  file-extension: zss
  license: CC0-1.0
  ks-version: 0.11
  imports:
    - uleb128
  endian: le
doc: |
  A ZSS file (njsmith/zss, 2013) stores a sorted multiset of byte strings ("records") in
  compressed blocks, with a B-tree-like index of blocks over them, so that a reader can find
  the records from a given key or with a given prefix by reading only the blocks on one path.

  Layout: an 8-byte magic, a u4 header length N, the N header bytes, a CRC-32C of those N bytes,
  then blocks back to back up to the end of the file (no footer). Every file position stored in
  the format is a "voffset": a byte offset counted from the first byte after the header CRC
  (`ofs_data`, 16 + N).

  A block is a level byte (0 = data block, L >= 1 = index block of height L), a uleb128 payload
  length and the payload, encoded with the file's codec (`header.codec`): `zlib` (one RFC 1950
  stream), `bz2` (one bzip2 stream; the original spec text says `bzip2`) or `none+crc32c` (the
  body followed by its u4 CRC-32C). Decompression is left to host code on purpose: this schema
  parses the body types only for `none+crc32c` files (`blocks/N/payload`); host code parses the
  decompressed bodies of the other codecs with `data_block_body` and `index_block_body`.

  Meaning the schema cannot check (host code does): records are sorted (memcmp order, duplicates
  allowed) across all data blocks in voffset order; an index entry's key equals the first record
  under its child; a child is exactly one level below its parent; child voffsets increase; every
  block is reachable from the root exactly once.

  An unfinished file begins `53 53 5a 1c 8e 6c 00 01` ("SSZ") instead; it is refused.
doc-ref:
  - FORMAT.md sections 2-8 (shardkit ZSS corpus notes, checked byte by byte against the corpus)
  - https://github.com/njsmith/zss/blob/8e078ea/doc/format.rst
  - https://github.com/njsmith/zss/blob/8e078ea/zss/common.py
seq:
  - id: magic
    contents: [0x5a, 0x53, 0x53, 0x1c, 0x8e, 0x6c, 0x00, 0x01]
    doc: '"ZSS", three fixed bytes, then the big-endian format version 1.'
  - id: len_header
    -orig-id: header_length
    type: u4
    doc: Length N of the header that follows (44 + metadata length in every known file).
  - id: header
    size: len_header
    type: header
  - id: header_crc32c
    -orig-id: header_crc
    type: u4
    doc: |
      CRC-32C (Castagnoli, as crcmod's `crc-32c`) of the N header bytes only
      (`header_crc32c_input`); the magic and the length field are not covered.
instances:
  ofs_data:
    value: 16 + len_header
    doc: Absolute offset of voffset 0, the first block.
  header_crc32c_input:
    pos: 12
    size: len_header
    doc: The bytes `header_crc32c` covers.
  is_crc32c_codec:
    value: header.codec == "none+crc32c"
    doc: Whether block payloads are raw bodies followed by their CRC-32C (parsed here).
  root:
    pos: ofs_data + header.root_voffset
    type: block(is_crc32c_codec)
    doc: The root index block (always an index block, in practice the last block of the file).
  blocks:
    pos: ofs_data
    type: block(is_crc32c_codec)
    repeat: eos
    doc: Every block in file order (voffset order).
types:
  header:
    doc-ref: FORMAT.md section 2, header fields
    seq:
      - id: root_voffset
        -orig-id: root_index_offset
        type: u8
        doc: voffset of the root index block (0x7fff_ffff_ffff_ffff while the file is unfinished).
      - id: uuid
        size: 16
        doc: Random identifier of the file, raw bytes.
      - id: codec
        type: strz
        size: 16
        encoding: ASCII
        doc: Codec name, NUL-padded; `zlib`, `bz2` (or `bzip2`) or `none+crc32c`.
      - id: len_metadata
        -orig-id: metadata_length
        type: u4
      - id: metadata
        type: str
        size: len_metadata
        encoding: UTF-8
        doc: |
          JSON text of an object (written with ensure_ascii, so ASCII). Bytes after it, up to
          the end of the header, are ignored (the reference writer writes none).
  block:
    doc: |
      One block: level byte, payload length, payload. The level and the length are covered by
      no checksum; only the codec's own check guards the payload.
    doc-ref: FORMAT.md section 4
    params:
      - id: is_crc32c_framed
        type: bool
        doc: The file's codec is `none+crc32c`, so the payload is parsed as body + CRC-32C.
    seq:
      - id: level
        type: u1
        doc: 0 for a data block, L >= 1 for an index block whose children are at level L - 1.
      - id: len_payload
        -orig-id: length
        type: uleb128
        doc: Number of payload bytes that follow.
      - id: payload
        size: len_payload.value
        type:
          switch-on: is_crc32c_framed
          cases:
            true: crc32c_payload(level)
        doc: The encoded body (raw bytes for `zlib` and `bz2` files).
  crc32c_payload:
    doc: A `none+crc32c` payload, the body then the CRC-32C of the body.
    doc-ref: FORMAT.md section 5
    params:
      - id: level
        type: u1
        doc: Level of the enclosing block (picks the body type).
    seq:
      - id: body
        size: _io.size - 4
        type:
          switch-on: level
          cases:
            0: data_block_body
            _: index_block_body
      - id: body_crc32c
        type: u4
        doc: CRC-32C of `body`.
  data_block_body:
    doc: |
      Decoded body of a level-0 block: records back to back, in non-decreasing memcmp order,
      until the body is used up (no count, no terminator).
    doc-ref: FORMAT.md section 6.1
    seq:
      - id: records
        type: data_record
        repeat: eos
  data_record:
    seq:
      - id: len_record
        -orig-id: record_length
        type: uleb128
      - id: record
        size: len_record.value
        doc: The record (any bytes, possibly empty).
  index_block_body:
    doc: |
      Decoded body of an index block (level L >= 1): one entry per child, keys non-decreasing,
      child voffsets strictly increasing.
    doc-ref: FORMAT.md section 6.2
    seq:
      - id: entries
        type: index_entry
        repeat: eos
  index_entry:
    seq:
      - id: len_key
        -orig-id: key_length
        type: uleb128
      - id: key
        size: len_key.value
        doc: The first record of the child's subtree (stored whole).
      - id: child_voffset
        type: uleb128
        doc: voffset of the child block, whose level is exactly this block's level - 1.
