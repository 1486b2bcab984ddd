meta:
  id: mosaic
  title: Software Heritage MOSAIC file (EBML DocType "mosaic", version 1)
  file-extension: mosaic
  license: CC0-1.0
  ks-version: 0.11
  imports:
    - ebml_vint
    - ph_fmph_go
  endian: be
doc: |
  MOSAIC (MOdular Storage of Archived and Indexed Contents), the object store written by
  swh-mosaic for Software Heritage's winery pools: an EBML document (RFC 8794, the container of
  Matroska) of DocType `mosaic`.

  Every element is an ID (a VINT with its marker kept), a size (a VINT) and that many bytes of
  data. Master elements hold elements; the others hold an unsigned big-endian integer (0 to 8
  bytes), a string or bytes. A file is two top-level elements: the EBML header (ID 0x1A45DFA3)
  and the `mosaic` root (0x1C535748) whose size VINT is always 8 bytes long. The root holds, in
  order:

  * `container_meta_data` (0x1D535748): a CRC-32 element, then the object count
    (`objects_counter`), their uncompressed total size, `end_of_tiles_offset` (each written on
    8 bytes), `compression_method` (`none`, `zstd`, `zstd.dict`), the dictionary
    (`compression_data`) for `zstd.dict`, and any number of `comment`s;
  * `tile`s (0x1E535748): a CRC-32 element then `object`s (0xF0), each one object's bytes as
    stored (zstd frames when compressed);
  * one `index` (0x1F535748) per key kind: a CRC-32 element, `idx_description` (which key, which
    map), `idx_unrolled`, `idx_unrolled_entry_size`, `map_container` (a CRC-32 element and
    `map`, a serialized FMPH-GO function of the `ph` crate (`ph_fmph_go.ksy`) mapping a key to
    its rank in `idx_unrolled`) and, when a key has several objects, `conflicts`.

  `idx_unrolled` is a run of fixed-size entries, `key` (0xA0) then `offset` (0xA1, the absolute
  offset of the `object` element's ID), in the map's rank order. A key of several objects has
  `go_to_conflicts` (0xA2, empty) and a `void` instead of its `offset`, and its offsets are
  listed under `conflicts`. Deleting an object (swh-mosaic's MosaicUpdater) overwrites its
  `object` and its index entries, in place, with `void` elements (0xEC) of the same length.

  A CRC-32 element (0xBF) is the first child of its master: the CRC-32 (IEEE, as zlib computes
  it), little-endian, of every byte of the master's data after the CRC-32 element. The
  semantic layer checks it. Unknown IDs
  are kept as raw bytes. A size VINT of all ones, RFC 8794's "unknown size", is the number it
  spells: swh-mosaic writes `ff` for an object of 127 bytes and reads it back as 127.
doc-ref:
  - swh-mosaic 0.6.1 schema.ebml.xml (swh.mosaic.EBML_SCHEMA)
  - swh-mosaic 0.6.1 lib/src/ebml.rs, lib/src/creator.rs, lib/src/updater.rs
  - https://www.rfc-editor.org/rfc/rfc8794.html
seq:
  - id: elements
    type: element
    repeat: eos
    doc: The EBML header, then the `mosaic` root element.
types:
  element:
    doc: One EBML element, its data typed by its ID.
    doc-ref: https://www.rfc-editor.org/rfc/rfc8794.html#section-6
    seq:
      - id: id_vint
        type: ebml_vint
        doc: The element ID, marker kept (1 to 4 bytes in MOSAIC).
      - id: len_data
        type: ebml_vint
        doc: Size of `data` in bytes.
      - id: data
        size: len_data.value
        type:
          switch-on: id
          cases:
            'element_id::ebml': elements
            'element_id::mosaic': elements
            'element_id::container_meta_data': elements
            'element_id::tile': elements
            'element_id::index': elements
            'element_id::idx_unrolled': elements
            'element_id::map_container': elements
            'element_id::conflicts': elements
            'element_id::conflict': elements
            'element_id::crc32': crc32
            'element_id::ebml_version': uint
            'element_id::ebml_read_version': uint
            'element_id::ebml_max_id_length': uint
            'element_id::ebml_max_size_length': uint
            'element_id::doc_type_version': uint
            'element_id::doc_type_read_version': uint
            'element_id::objects_counter': uint
            'element_id::objects_total_size': uint
            'element_id::end_of_tiles_offset': uint
            'element_id::offset': uint
            'element_id::idx_unrolled_entry_size': uint
            'element_id::conflicting_offset': uint
            'element_id::doc_type': text
            'element_id::compression_method': text
            'element_id::comment': text
            'element_id::idx_description': text
            'element_id::map': ph_fmph_go
        doc: |
          The element's data: child elements, an integer, a string, the FMPH-GO function of a
          `map`, or raw bytes (`object`, `key`, `compression_data`, `conflicting_key`, `void`,
          unknown IDs).
    instances:
      id:
        value: id_vint.raw_value
        enum: element_id
        doc: The element ID.
      ofs_data:
        value: id_vint.len_bytes + len_data.len_bytes
        doc: Offset of `data` from the element's first byte.
  elements:
    doc: The children of a master element, up to the end of its data.
    seq:
      - id: elements
        type: element
        repeat: eos
  crc32:
    doc: |
      EBML CRC-32 element data: the CRC-32 of the rest of the parent's data (from the byte after
      this element to the parent's end), little-endian.
    doc-ref: https://www.rfc-editor.org/rfc/rfc8794.html#section-11.3.1
    seq:
      - id: value
        type: u4le
  uint:
    doc: An EBML unsigned integer, big-endian, 0 to 8 bytes (0 bytes is the value 0).
    seq:
      - id: bytes
        size-eos: true
    instances:
      len_bytes:
        value: bytes.size
      value:
        value: >-
          (len_bytes >= 1 ? bytes[len_bytes - 1] : 0)
          + (len_bytes >= 2 ? bytes[len_bytes - 2] * 0x100 : 0)
          + (len_bytes >= 3 ? bytes[len_bytes - 3] * 0x1_0000 : 0)
          + (len_bytes >= 4 ? bytes[len_bytes - 4] * 0x100_0000 : 0)
          + (len_bytes >= 5 ? bytes[len_bytes - 5] * 0x1_0000_0000 : 0)
          + (len_bytes >= 6 ? bytes[len_bytes - 6] * 0x100_0000_0000 : 0)
          + (len_bytes >= 7 ? bytes[len_bytes - 7] * 0x1_0000_0000_0000 : 0)
          + (len_bytes >= 8 ? bytes[len_bytes - 8] * 0x100_0000_0000_0000 : 0)
        doc: The integer (exact up to 2**53 in JavaScript).
  text:
    doc: An EBML String or UTF-8 element.
    seq:
      - id: value
        type: str
        size-eos: true
        encoding: UTF-8
enums:
  element_id:
    0x1a45dfa3: ebml
    0x4286: ebml_version
    0x42f7: ebml_read_version
    0x42f2: ebml_max_id_length
    0x42f3: ebml_max_size_length
    0x4282: doc_type
    0x4287: doc_type_version
    0x4285: doc_type_read_version
    0xbf: crc32
    0xec: void
    0x1c535748: mosaic
    0x1d535748: container_meta_data
    0x5000: objects_counter
    0x5001: objects_total_size
    0x5002: compression_method
    0x5003: compression_data
    0x5004: comment
    0x5099: end_of_tiles_offset
    0x1e535748: tile
    0xf0: object
    0x1f535748: index
    0x6001: idx_description
    0x6002: idx_unrolled
    0xa0: key
    0xa1: offset
    0xa2: go_to_conflicts
    0x6003: idx_unrolled_entry_size
    0x6004: map_container
    0x6005: map
    0x6010: conflicts
    0x6011: conflict
    0x6012: conflicting_key
    0x6013: conflicting_offset
