meta:
  id: ph_fmph_go
  title: FMPH-GO minimal perfect hash function (ph crate GOFunction::write layout)
  license: CC0-1.0
  ks-version: 0.11
  endian: le
doc: |
  A fingerprinting-based minimal perfect hash function with group optimization (FMPH-GO,
  `ph::fmph::GOFunction` of the `ph` crate 0.10.0) in its default configuration (16-bit groups,
  4-bit seeds), as `GOFunction::write` serializes it. MOSAIC files (swh-mosaic) store one in
  the `Map` element of each index; it maps a key to its rank in the index's `IdxUnrolled`.

  The function has levels; level l has `level_sizes[l]` groups of 16 bits. The bits of all
  levels follow each other in `array` (a level's bits start on a 64-bit word boundary when the
  crate builds it, as a level has 4 * ceil(keys / 64) groups), and each group has a 4-bit seed
  in `group_seeds`. The value of a key, computed by host code: for l = 0, 1, ...,
  h = SipHash-1-3 with the zero key (Rust's std DefaultHasher) of u64le(l) || u64le(key
  length) || key; g = (groups before level l) + floor(h * level_sizes[l] / 2**64); s = seed of
  group g; bit b = 16 * g + (mix32((h mod 2**32) xor s) mod 16), where mix32(x) is x ^= x >> 16;
  x *= 0x21f0aaad; x ^= x >> 15; x *= 0xd35a2d97; x ^= x >> 15 (32-bit arithmetic). If bit b is
  set, the value is the number of set bits before b (its rank); if no level sets it, the key is
  not in the set. The number of keys is the number of set bits of `array`. The rank directory
  the crate uses is rebuilt on load and is not stored.
doc-ref:
  - https://docs.rs/crate/ph/0.10.0/source/src/fmph/gofunction.rs GOFunction::write, read_with_hasher, get_stats
  - https://docs.rs/crate/ph/0.10.0/source/src/fmph/goindexing.rs group_nr, GroupSize::in_group_index
  - https://docs.rs/crate/ph/0.10.0/source/src/seeds.rs TwoToPowerBitsStatic (write_seed_vec)
  - https://docs.rs/crate/binout/0.3.1/source/src/lib.rs VByte, AsIs
  - https://doi.org/10.1145/3596453 P. Beling, Fingerprinting-based minimal perfect hashing revisited
seq:
  - id: bits_per_group
    -orig-id: conf.bits_per_group
    type: u1
    valid: 16
    doc: Size of a group in bits (TwoToPowerBitsStatic<4>; GOFunction::read refuses others).
  - id: num_levels
    type: vbyte
    doc: Number of levels (the length prefix of the level_sizes array).
  - id: level_sizes
    -orig-id: level_sizes
    type: level(_index)
    repeat: expr
    repeat-expr: num_levels.value
    doc: Size of each level, in groups.
  - id: array
    -orig-id: array.content
    size: (num_groups * 16 + 63) / 64 * 8
    doc: |
      The fingerprint bits of every level, as little-endian u64 words; bit i is bit i mod 64
      of word i div 64. The 16 bits of group g are bits 16 * g to 16 * g + 15.
  - id: bits_per_seed
    type: u1
    valid: 4
    doc: Size of a group seed in bits (TwoToPowerBitsStatic<2>).
  - id: group_seeds
    -orig-id: group_seeds
    size: (num_groups * 4 + 63) / 64 * 8
    doc: |
      The seed of every group, as little-endian u64 words of 16 seeds; the seed of group g is
      bits 4 * (g mod 16) to 4 * (g mod 16) + 3 of word g div 16.
instances:
  num_groups:
    value: 'num_levels.value == 0 ? 0 : level_sizes.last.groups_end'
    doc: Total number of groups of all levels.
types:
  level:
    doc: The size of one level and where its groups lie among all groups.
    doc-ref: https://docs.rs/crate/ph/0.10.0/source/src/fmph/gofunction.rs GOFunction::write
    params:
      - id: idx
        type: u4
        doc: Level number (also the seed its keys are hashed with).
    seq:
      - id: size
        type: vbyte
        doc: Number of 16-bit groups of the level (4 * ceil(keys / 64) when the crate builds it).
    instances:
      groups_before:
        value: 'idx == 0 ? 0 : _parent.level_sizes[idx - 1].groups_end.as<u8>'
        doc: Groups of the levels before this one (its first global group number).
      groups_end:
        value: groups_before + size.value
        doc: Groups of this level and the levels before it.
  vbyte:
    doc: |
      binout's VByte (an unsigned LEB128 variant): 7 value bits a byte, least significant
      first, bit 7 set when another byte follows; after 8 such bytes a 9th byte is read whole
      (8 value bits), so a u64 takes at most 9 bytes. The reader accepts non-minimal encodings.
    doc-ref: https://docs.rs/crate/binout/0.3.1/source/src/lib.rs vbyte_read
    seq:
      - id: groups
        type: u1
        repeat: until
        repeat-until: _ < 0x80 or _index == 7
        doc: Bytes with a continuation flag in bit 7 and 7 value bits.
      - id: last
        type: u1
        if: groups.size == 8 and groups[7] >= 0x80
        doc: The 9th byte, all 8 bits of value, after 8 bytes that each said another follows.
    instances:
      value:
        value: >-
          (groups[0] & 0x7f)
          + (groups.size >= 2 ? (groups[1] & 0x7f) * 0x80 : 0)
          + (groups.size >= 3 ? (groups[2] & 0x7f) * 0x4000 : 0)
          + (groups.size >= 4 ? (groups[3] & 0x7f) * 0x20_0000 : 0)
          + (groups.size >= 5 ? (groups[4] & 0x7f) * 0x1000_0000 : 0)
          + (groups.size >= 6 ? (groups[5] & 0x7f) * 0x8_0000_0000 : 0)
          + (groups.size >= 7 ? (groups[6] & 0x7f) * 0x400_0000_0000 : 0)
          + (groups.size >= 8 ? (groups[7] & 0x7f) * 0x2_0000_0000_0000 : 0)
          + (groups.size == 8 and groups[7] >= 0x80 ? last * 0x100_0000_0000_0000 : 0)
        doc: |
          The decoded value (computed with multiplications, so the JavaScript parsers stay
          exact up to 2**53).
