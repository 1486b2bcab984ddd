meta:
  id: zs
  title: ZS compressed sorted record file (format 0.10)
  file-extension: zs
  license: CC0-1.0
  ks-version: 0.11
  imports:
    - uleb128
  endian: le
doc: |
  A ZS file (njsmith/zs, `zs` 0.10.0 on PyPI, 2014; the released successor of ZSS) stores a
  sorted multiset of byte strings ("records") in compressed blocks, with a tree of index blocks
  over them, so that a reader finds the records from a given key or with a given prefix by
  reading only the blocks on one path. Public data sets were distributed in it (for example the
  Google Books N-gram corpora).

  Layout: an 8-byte magic, a u8 header length N, the N header bytes, a CRC-64-xz of those N
  bytes, then blocks back to back up to the end of the file. Every position stored in the format
  is an absolute byte offset in the file.

  A block is a uleb128 length L, then L bytes (a level byte and the compressed payload), then a
  u8 CRC-64-xz of those L bytes. Level 0 is a data block, 1..63 an index block, 64 and above an
  extension block that readers skip. Payloads are compressed with the header's codec: `none`
  (stored as is: this schema parses the bodies, `blocks/N/body/payload`), `deflate` (raw RFC
  1951 stream) or `lzma2;dsize=2^20` (raw LZMA2 stream, 1 MiB dictionary). Decompression is left
  to host code on purpose; host code parses the decompressed bodies with `data_block_body` and
  `index_block_body`.

  CRC-64-xz is the CRC of the .xz format (polynomial 0x42f0e1eba9ea3693 reflected, init and xor
  out all ones; check value 0x995dc9bbdf1939fa for "123456789").

  Meaning the schema cannot check (host code does): records are sorted (memcmp order,
  duplicates allowed) within and across data blocks in file order; an index key is <= the first
  record under its child and >= every record before it; a child is exactly one level below its
  parent; an entry's length is its child's whole length; every block but the root is
  referenced exactly once; `len_file` is the file's size; `sha256` is the SHA-256 of the
  decompressed data block payloads in file order.

  An unfinished file begins `ab 5a 53 74 6f 42 65 01` ("ZStoBe") instead; it is refused.
doc-ref:
  - https://github.com/njsmith/zs/blob/v0.10.0/doc/format.rst
  - https://github.com/njsmith/zs/blob/v0.10.0/zs/common.py
seq:
  - id: magic
    contents: [0xab, 0x5a, 0x53, 0x66, 0x69, 0x4c, 0x65, 0x01]
    doc: '0xab, "ZSfiLe", then the format version 1.'
  - id: len_header
    -orig-id: header_data_length
    type: u8
    doc: Length N of the header that follows (the length field and the CRC not included).
  - id: header
    size: len_header
    type: header
  - id: header_crc64xz
    -orig-id: header_crc
    type: u8
    doc: CRC-64-xz of the N header bytes only (`header_crc64xz_input`).
instances:
  ofs_blocks:
    value: 24 + len_header
    doc: Absolute offset of the first block (magic, length, header and CRC come before).
  header_crc64xz_input:
    pos: 16
    size: len_header
    doc: The bytes `header_crc64xz` covers.
  is_none_codec:
    value: header.codec == "none"
    doc: Whether block payloads are stored uncompressed (and are parsed here).
  root:
    pos: header.ofs_root_index
    size: header.len_root_index
    type: block(is_none_codec)
    doc: The root index block, read in one piece of the length the header gives.
  blocks:
    pos: ofs_blocks
    type: block(is_none_codec)
    repeat: eos
    doc: Every block in file order.
types:
  header:
    doc-ref: https://github.com/njsmith/zs/blob/v0.10.0/doc/format.rst#header
    seq:
      - id: ofs_root_index
        -orig-id: root_index_offset
        type: u8
        doc: Absolute offset of the root index block (2**63 - 1 while the file is unfinished).
      - id: len_root_index
        -orig-id: root_index_length
        type: u8
        doc: Bytes of the root index block, its length field and CRC included.
      - id: len_file
        -orig-id: total_file_length
        type: u8
        doc: Size of the whole file in bytes (detects a truncation at a block boundary).
      - id: sha256
        size: 32
        doc: SHA-256 of the decompressed payloads of all data blocks, concatenated in file order.
      - id: codec
        type: strz
        size: 16
        encoding: ASCII
        doc: Codec name, NUL-padded; `none`, `deflate` or `lzma2;dsize=2^20`.
      - id: len_metadata
        -orig-id: metadata_length
        type: u8
      - id: metadata
        type: str
        size: len_metadata
        encoding: UTF-8
        doc: JSON text of an object (the reference writes it with ensure_ascii, so ASCII).
      - id: extensions
        size-eos: true
        doc: Room for later fields, up to the end of the header; readers ignore it.
  block:
    doc: |
      One block: its length, the level byte and the payload (the length counts both), and the
      CRC-64-xz of those bytes as stored (compressed).
    doc-ref: https://github.com/njsmith/zs/blob/v0.10.0/doc/format.rst#blocks
    params:
      - id: is_none_codec
        type: bool
        doc: The file's codec is `none`, so payloads are parsed as bodies.
    seq:
      - id: len_body
        -orig-id: length
        type: uleb128
        doc: Number of bytes of `body` (level byte and payload).
      - id: body
        size: len_body.value
        type: block_body(is_none_codec)
      - id: crc64xz
        type: u8
        doc: CRC-64-xz of `body`.
  block_body:
    doc: The level byte and the payload of a block.
    params:
      - id: is_none_codec
        type: bool
    seq:
      - id: level
        type: u1
        doc: 0 for a data block, 1..63 for an index block, 64 and above for an extension block.
      - id: payload
        size-eos: true
        type:
          switch-on: 'is_none_codec ? (level == 0 ? 0 : (level < 64 ? 1 : 2)) : 2'
          cases:
            0: data_block_body
            1: index_block_body
        doc: The encoded payload (raw bytes for compressed files and for extension blocks).
  data_block_body:
    doc: |
      Decoded payload of a data block: at least one record, back to back, in non-decreasing
      memcmp order, until the payload is used up (no count, no terminator).
    doc-ref: https://github.com/njsmith/zs/blob/v0.10.0/doc/format.rst#data-block-payload
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
      Decoded payload of an index block (level 1..63): at least one entry, keys non-decreasing.
    doc-ref: https://github.com/njsmith/zs/blob/v0.10.0/doc/format.rst#index-block-payload
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
        doc: Lower bound of the child's first record (at least every record before the child).
      - id: ofs_block
        -orig-id: block_offset
        type: uleb128
        doc: Absolute offset of the child block, one level below this block.
      - id: len_block
        -orig-id: block_length
        type: uleb128
        doc: Bytes of the child block, its length field and CRC included.
