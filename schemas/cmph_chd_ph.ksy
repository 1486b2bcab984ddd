meta:
  id: cmph_chd_ph
  title: cmph CHD_PH minimal perfect hash function (cmph_dump layout)
  license: CC0-1.0
  ks-version: 0.11
  endian: le
doc: |
  A CHD_PH ("compress, hash and displace") minimal perfect hash function as written by
  cmph_dump() of the cmph library (https://cmph.sourceforge.net/). The dump is a raw memory
  image in the writer's native byte order; every producer seen in practice is little-endian
  (x86_64, aarch64).

  A key's slot is computed by host code from these fields: the Jenkins hash of the key with
  `hash_state.seed` gives (h0, h1, h2); bucket g = h0 mod num_buckets, f = h1 mod num_keys,
  h = h2 mod (num_keys - 1) + 1; disp = compressed_seq[g]; the slot is
  (f + h * (disp mod num_keys) + disp div num_keys) mod num_keys.
doc-ref:
  - https://github.com/bonitao/cmph/blob/master/src/chd_ph.c chd_ph_dump, chd_ph_search
  - https://github.com/bonitao/cmph/blob/master/src/compressed_seq.c compressed_seq_dump
  - https://github.com/bonitao/cmph/blob/master/src/select.c select_dump
seq:
  - id: algo_name
    -orig-id: cmph_names[mphf->algo]
    type: strz
    encoding: ASCII
    valid: '"chd_ph"'
    doc: Name of the cmph algorithm, NUL-terminated.
  - id: num_keys_total
    -orig-id: mphf->size
    type: u4
    doc: Number of slots of the function (the range of slot numbers is 0 to this minus 1).
  - id: len_hash_state
    -orig-id: hl_size
    type: u4
  - id: hash_state
    -orig-id: hl
    size: len_hash_state
    type: hash_state
  - id: len_compressed_seq
    -orig-id: cs_size
    type: u4
  - id: compressed_seq
    -orig-id: cs
    size: len_compressed_seq
    type: compressed_seq
    doc: The displacement of every bucket, stored as a compressed integer sequence.
  - id: num_keys
    -orig-id: n
    type: u4
    doc: Number of slots; equals num_keys_total.
  - id: num_buckets
    -orig-id: nbuckets
    type: u4
types:
  hash_state:
    doc: Dump of a cmph hash_state_t; only Jenkins hashing is used by CHD_PH writers.
    doc-ref: https://github.com/bonitao/cmph/blob/master/src/hash.c hash_state_dump
    seq:
      - id: hash_name
        type: strz
        encoding: ASCII
        doc: Name of the hash function, e.g. "jenkins".
      - id: seed
        type: u4
        doc: Seed of the Jenkins hash (jenkins_state_dump).
  compressed_seq:
    doc: |
      A sequence of `num_values` unsigned integers. Value i is stored as its bit length
      (an Elias-Fano-style `select` structure over the lengths) plus its low bits: the
      `rem_r` low bits of each cumulative length go to `length_rems`, the value bits to
      `store_table`.
    doc-ref: https://github.com/bonitao/cmph/blob/master/src/compressed_seq.c compressed_seq_dump
    seq:
      - id: num_values
        -orig-id: n
        type: u4
      - id: rem_r
        type: u4
        doc: Number of low bits of each cumulative length kept in length_rems (0 to 31).
      - id: total_length
        type: u4
        doc: Total number of value bits in store_table.
      - id: len_select
        -orig-id: buflen_sel
        type: u4
      - id: select
        size: len_select
        type: select
      - id: length_rems
        size: (num_values * rem_r + 31) / 32 * 4
        doc: Packed rem_r-bit fields, in little-endian u4 words (BITS_TABLE_SIZE).
      - id: store_table
        size: (total_length + 31) / 32 * 4
        doc: The value bits, packed in little-endian u4 words.
  select:
    doc: |
      A select structure over a bit vector holding `num_ones` ones and `num_zeros` zeros; the
      table stores the position of every 128th one (NBITS_STEP_SELECT_TABLE = 7).
    doc-ref: https://github.com/bonitao/cmph/blob/master/src/select.c select_dump
    seq:
      - id: num_ones
        -orig-id: n
        type: u4
      - id: num_zeros
        -orig-id: m
        type: u4
      - id: bits_vec
        size: (num_ones + num_zeros + 31) / 32 * 4
        doc: The bit vector, in little-endian u4 words.
      - id: select_table
        size: (num_ones / 128 + 1) * 4
        doc: Positions of every 128th one, u4 each.
