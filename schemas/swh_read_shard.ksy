meta:
  id: swh_read_shard
  title: Software Heritage read shard
  file-extension: shard
  license: CC0-1.0
  ks-version: 0.11
  imports:
    - cmph_chd_ph
  endian: be
doc: |
  A read-only object store written by swh.perfecthash (Software Heritage's "winery" object
  storage): objects addressed by 32-byte keys, found in O(1) through a minimal perfect hash
  function. All integers of the header, the object size fields and the index are big-endian;
  the hash function at the end is a cmph dump in native (little-endian) byte order.

  Layout: magic and header in the first 512 bytes, then the objects (each a u8 size followed by
  its bytes, in write order), then the index (one 40-byte entry per slot of the hash function),
  then the hash function: a cmph dump, which a pre-allocated file follows with zero bytes up
  to the end of the file (the hash_function instance spans both; the dump's own fields say
  where it ends).

  Structurally an index slot holds a live entry (key, absolute offset of the object's size
  field), an empty slot (offset 0, zero key) or a tombstone (offset 2**64-1, zero key). What an
  empty slot or a tombstone means (a slot no object used, or a deleted object) depends on the
  writer's generation and on the header's counts; the semantic layer reading the file decides,
  not this schema.
doc-ref:
  - https://gitlab.softwareheritage.org/swh/devel/swh-perfecthash/-/blob/v1.3.2/swh/perfecthash/hash.h
  - https://gitlab.softwareheritage.org/swh/devel/swh-perfecthash/-/blob/v1.3.2/swh/perfecthash/hash.c
seq:
  - id: magic
    -orig-id: SHARD_MAGIC
    contents: ["SWHShard", 0]
  - id: reserved
    size: 23
    doc: Zero padding up to SHARD_OFFSET_MAGIC (32).
  - id: header
    type: header
instances:
  index:
    pos: header.ofs_index
    size: header.len_index
    type: index
    doc: The hash table; slot i is the i-th entry.
  hash_function:
    pos: header.ofs_hash
    size: _io.size - header.ofs_hash
    type: cmph_chd_ph
    doc: |
      The minimal perfect hash function mapping a key to its index slot, and the zero bytes
      that follow it in a pre-allocated file.
types:
  header:
    doc-ref: https://gitlab.softwareheritage.org/swh/devel/swh-perfecthash/-/blob/v1.3.2/swh/perfecthash/hash.h shard_header_t
    seq:
      - id: version
        type: u8
        valid: 1
        doc: SHARD_VERSION; only version 1 exists.
      - id: num_objects
        -orig-id: objects_count
        type: u8
        doc: Objects written; deletions do not decrement it.
      - id: ofs_objects
        -orig-id: objects_position
        type: u8
        doc: Absolute offset of the first object (512, SHARD_OFFSET_HEADER).
      - id: len_objects
        -orig-id: objects_size
        type: u8
        doc: Size in bytes of the objects section.
      - id: ofs_index
        -orig-id: index_position
        type: u8
        doc: Absolute offset of the index; equals ofs_objects + len_objects.
      - id: len_index
        -orig-id: index_size
        type: u8
        doc: Size in bytes of the index, 40 bytes per slot.
      - id: ofs_hash
        -orig-id: hash_position
        type: u8
        doc: Absolute offset of the cmph dump; equals ofs_index + len_index.
  index:
    seq:
      - id: entries
        type: index_entry
        repeat: eos
  index_entry:
    doc-ref: https://gitlab.softwareheritage.org/swh/devel/swh-perfecthash/-/blob/v1.3.2/swh/perfecthash/hash.h shard_index_t
    seq:
      - id: key
        size: 32
        doc: The object's key; all zeros in empty slots and tombstones.
      - id: ofs_object
        -orig-id: object_offset
        type: u8
        doc: |
          Absolute offset of the object's size field; 0 in an empty slot, 2**64-1 in a
          tombstone.
    instances:
      is_empty:
        value: ofs_object == 0
      is_tombstone:
        value: ofs_object == 0xffff_ffff_ffff_ffff
      object:
        io: _root._io
        pos: ofs_object
        type: shard_object
        if: not is_empty and not is_tombstone
  shard_object:
    seq:
      - id: len_data
        -orig-id: object_size
        type: u8
      - id: data
        size: len_data
