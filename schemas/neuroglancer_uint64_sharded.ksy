meta:
  id: neuroglancer_uint64_sharded
  title: Neuroglancer precomputed shard file (neuroglancer_uint64_sharded_v1)
  file-extension: shard
  xref:
    wikidata: Q60752209
  license: CC0-1.0
  ks-version: 0.11
  endian: le
doc: |
  One shard file of a Neuroglancer "precomputed" sharded dataset, as written by tensorstore
  and cloud-volume: a key-value store of uint64 chunk ids (segment ids, or compressed Morton
  codes of image chunks) to byte strings.

  The file starts with the shard index: 2**minishard_bits entries of two u8 each, the byte
  range [start, end) of one minishard index. Every offset in the file (shard index entries
  and minishard index data offsets) is relative to the END of the shard index, i.e. to
  16 * 2**minishard_bits. A minishard index is three arrays of n u8 each: chunk id deltas,
  data offset deltas and data sizes (see minishard_index). An empty minishard is [0, 0].
  Nothing else is fixed: tensorstore writes each minishard's data followed by its index,
  cloud-volume writes all data first and the minishard indices at the end, in any order, so
  readers must follow the offsets.

  minishard_bits is not stored in the file (it comes from the dataset's `info` file), so
  shardkit parses the shard index with the parametrised types shard_index(num_minishards)
  and minishard_index(num_chunks). The root type, for the Kaitai Web IDE and the parity
  tests, infers minishard_bits instead: for the true value b, the file ends exactly where
  the furthest range of the first 2**b entries ends (16 * 2**b + max(end)), and no smaller
  candidate can satisfy that. Files with trailing bytes are not recognised by the inference.

  Host code (the package src/shardkit/formats/neuroglancer/: decode.py, verify.py) undoes the
  delta encoding with cumulative sums, decompresses gzip-encoded minishard indices and chunks,
  and checks the hashes; with "minishard_index_encoding": "gzip" the root's minishards show
  the compressed bytes only.
doc-ref:
  - https://github.com/google/neuroglancer/blob/v2.40.1/src/datasource/precomputed/sharded.md
  - https://github.com/google/tensorstore/blob/v0.1.86/tensorstore/kvstore/neuroglancer_uint64_sharded/uint64_sharded_decoder.cc
seq: []
instances:
  minishard_bits_probes:
    type: minishard_bits_probe(_index)
    repeat: until
    repeat-until: _.fits or _.is_last
    doc: Candidates b = 0, 1, ... until one fits the file size (Web IDE only).
  minishard_bits:
    -orig-id: minishard_bits
    value: 'minishard_bits_probes.last.fits ? minishard_bits_probes.last.bits : -1'
    doc: Inferred number of minishard bits; -1 when no candidate fits.
  num_minishards:
    value: 'minishard_bits >= 0 ? 1 << minishard_bits : 0'
  len_shard_index:
    value: num_minishards * 16
    doc: Size of the shard index; every offset in the file is relative to its end.
  shard_index:
    pos: 0
    size: len_shard_index
    type: shard_index(num_minishards)
    if: minishard_bits >= 0
  minishards:
    type: minishard(_index)
    repeat: expr
    repeat-expr: num_minishards
    doc: Each minishard's index and chunks, following the shard index (Web IDE view).
types:
  minishard_bits_probe:
    doc: One candidate value of minishard_bits for the root's inference.
    params:
      - id: bits
        type: u1
    instances:
      range_bounds:
        io: _root._io
        pos: 0
        type: u8
        repeat: expr
        repeat-expr: 2 << bits
        if: (16 << bits) <= _root._io.size
        doc: The 2**bits candidate entries, read as one flat list of starts and ends.
      is_last:
        value: (16 << bits) > _root._io.size or (32 << bits) > _root._io.size or bits >= 26
        doc: No larger candidate fits in the file (26 keeps 16 << bits within 32 bits).
      fits:
        value: (16 << bits) <= _root._io.size and (16 << bits) + range_bounds.max == _root._io.size
  shard_index:
    doc: The fixed-size table at the start of the file, one entry per minishard.
    doc-ref: https://github.com/google/neuroglancer/blob/v2.40.1/src/datasource/precomputed/sharded.md#shard-index-format
    params:
      - id: num_minishards
        type: u8
        doc: 2**minishard_bits, from the sharding spec.
    seq:
      - id: entries
        type: shard_index_entry
        repeat: expr
        repeat-expr: num_minishards
  shard_index_entry:
    doc: Where one minishard's index lies; [0, 0] for an empty minishard.
    seq:
      - id: ofs_minishard_index
        -orig-id: start_offset
        type: u8
        doc: Start of the minishard index, relative to the end of the shard index.
      - id: ofs_minishard_index_end
        -orig-id: end_offset
        type: u8
        doc: One past its last byte, relative to the end of the shard index.
    instances:
      len_minishard_index:
        value: ofs_minishard_index_end - ofs_minishard_index
      is_empty:
        value: ofs_minishard_index_end == ofs_minishard_index
  minishard_index:
    doc: |
      A decoded ("raw") minishard index: three arrays of num_chunks u8, stored one after the
      other. Chunk i has id sum(chunk_id_deltas[0..i]) and its data starts at
      sum(ofs_data_deltas[0..i]) + sum(len_data[0..i-1]) bytes after the end of the shard
      index, and is len_data[i] bytes long: a delta of 0 means "right after the previous chunk".
    doc-ref: https://github.com/google/neuroglancer/blob/v2.40.1/src/datasource/precomputed/sharded.md#minishard-index-format
    params:
      - id: num_chunks
        type: u8
        doc: The index's size in bytes divided by 24.
    seq:
      - id: chunk_id_deltas
        -orig-id: chunk_id
        type: u8
        repeat: expr
        repeat-expr: num_chunks
        doc: Chunk ids, delta-encoded (the first one is absolute).
      - id: ofs_data_deltas
        -orig-id: offset
        type: u8
        repeat: expr
        repeat-expr: num_chunks
        doc: Data offsets, each relative to the end of the previous chunk's data (the first to
          the end of the shard index).
      - id: len_data
        -orig-id: size
        type: u8
        repeat: expr
        repeat-expr: num_chunks
        doc: Stored (possibly gzip-compressed) size of each chunk's data.
  minishard:
    doc: Navigation from a shard index entry to its minishard index and chunks (root only).
    params:
      - id: idx
        type: u8
    instances:
      entry:
        value: _root.shard_index.entries[idx]
      raw_index:
        io: _root._io
        pos: _root.len_shard_index + entry.ofs_minishard_index
        size: entry.len_minishard_index
        if: not entry.is_empty
        doc: The stored minishard index (gzip-compressed with "minishard_index_encoding" gzip).
      is_gzip:
        value: not entry.is_empty and raw_index.size >= 2 and raw_index[0] == 0x1f and raw_index[1] == 0x8b
      index:
        io: _root._io
        pos: _root.len_shard_index + entry.ofs_minishard_index
        size: entry.len_minishard_index
        type: minishard_index(entry.len_minishard_index / 24)
        if: not entry.is_empty and not is_gzip and entry.len_minishard_index % 24 == 0
      chunks:
        type: |
          chunk(_index, _index == 0 ? 0 : chunks[_index - 1].ofs_data_end,
            _index == 0 ? 0 : chunks[_index - 1].chunk_id_hi,
            _index == 0 ? 0 : chunks[_index - 1].chunk_id_lo)
        repeat: expr
        repeat-expr: index.num_chunks
        if: not entry.is_empty and not is_gzip and entry.len_minishard_index % 24 == 0
        doc: Each chunk takes the running sums (data end, chunk id) from the one before it.
  chunk:
    doc: One chunk of a raw minishard index, with its data located (root only).
    params:
      - id: idx
        type: u8
      - id: prev_ofs_data_end
        type: u8
        doc: The end of the previous chunk's data (0 for the first).
      - id: prev_chunk_id_hi
        type: u4
        doc: High 32 bits of the previous chunk's id (0 for the first).
      - id: prev_chunk_id_lo
        type: u4
        doc: Low 32 bits of the previous chunk's id (0 for the first).
    instances:
      chunk_id_delta:
        value: _parent.index.chunk_id_deltas[idx]
        doc: |
          The chunk id minus the previous chunk's id (the id itself for the first chunk). The
          Web IDE's JavaScript runtime reads u8 as a double, so above 2**53 this shows rounded
          there: chunk_id_delta_hi and chunk_id_delta_lo are its exact halves.
      chunk_id_delta_lo:
        io: _parent.index._io
        pos: 8 * idx
        type: u4
        doc: Low 32 bits of chunk_id_delta, exact in JavaScript too.
      chunk_id_delta_hi:
        io: _parent.index._io
        pos: 8 * idx + 4
        type: u4
        doc: High 32 bits of chunk_id_delta, exact in JavaScript too.
      chunk_id_lo:
        value: (prev_chunk_id_lo + chunk_id_delta_lo) % 4294967296
        doc: Low 32 bits of the chunk id (the running sum of the deltas, modulo 2**64).
      chunk_id_hi:
        value: |
          (prev_chunk_id_hi + chunk_id_delta_hi
            + (prev_chunk_id_lo + chunk_id_delta_lo) / 4294967296) % 4294967296
        doc: High 32 bits of the chunk id; the id is chunk_id_hi * 2**32 + chunk_id_lo.
      chunk_id_dec:
        value: |
          chunk_id_hi == 0 ? chunk_id_lo.to_s
            : (chunk_id_hi * 42949 + (chunk_id_hi * 67296 + chunk_id_lo) / 100000).to_s
              + ((chunk_id_hi * 67296 + chunk_id_lo) % 100000 + 100000).to_s.substring(1, 6)
        doc: |
          The chunk id in decimal, exact: what `shardkit ls` and `shardkit dump` print. The
          Web IDE's JavaScript runtime reads u8 as a double and shows ids above 2**53 rounded,
          so the id is summed here in 32-bit halves and printed from base-10**5 parts that stay
          below 2**53 (2**32 = 42949 * 10**5 + 67296).
      ofs_data:
        value: prev_ofs_data_end + _parent.index.ofs_data_deltas[idx]
        doc: Start of the data, relative to the end of the shard index.
      len_data:
        value: _parent.index.len_data[idx]
      ofs_data_end:
        value: ofs_data + len_data
      data:
        io: _root._io
        pos: _root.len_shard_index + ofs_data
        size: len_data
        doc: The stored bytes (gzip stream with "data_encoding" gzip).
