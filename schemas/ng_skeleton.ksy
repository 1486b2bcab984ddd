meta:
  id: ng_skeleton
  title: Neuroglancer precomputed skeleton (encoded skeleton data)
  license: CC0-1.0
  ks-version: 0.11
  endian: le
doc: |
  One skeleton of a Neuroglancer "precomputed" skeleton layer: the value stored under a
  segment id, in its own file (unsharded) or in a shard (sharded). Written by cloud-volume,
  kimimaro, igneous, tensorstore users and Neuroglancer's own Python writers.

  The vertex count and edge count come first, then every vertex position (three f4: x, y, z,
  in the layer's coordinates after its `transform`), then every edge (two u4 vertex indices).
  What follows are the vertex attributes the layer's `info` file lists under
  "vertex_attributes", in that order: for attribute k, num_vertices x num_components[k]
  little-endian values of data_type[k] (float32, int8, uint8, int16, uint16, int32 or
  uint32). The file itself does not say which attributes it holds, so the root keeps them as
  bytes (`vertex_attributes`) and host code (src/shardkit/ng/payloads.py) reads them one after
  the other with the parametrised type vertex_attribute(num_vertices, num_components,
  bytes_per_value), taking the list from the `info`.

  The seq keeps positions and edges as byte ranges of the exact size (so a count larger than
  the file fails at once, before anything is allocated); the instances `vertices` and
  `edge_list` show them value by value in the Web IDE.
doc-ref:
  - https://github.com/google/neuroglancer/blob/v2.40.1/src/datasource/precomputed/skeletons.md
seq:
  - id: num_vertices
    type: u4
  - id: num_edges
    type: u4
  - id: vertex_positions
    size: num_vertices * 12
    doc: num_vertices x (x, y, z) f4
  - id: edges
    size: num_edges * 8
    doc: num_edges x (u4 vertex index, u4 vertex index)
  - id: vertex_attributes
    size-eos: true
    doc: The attributes listed in the `info` file, one after the other (see vertex_attribute).
instances:
  vertices:
    pos: 8
    type: vertex
    repeat: expr
    repeat-expr: num_vertices
  edge_list:
    pos: 8 + num_vertices * 12
    type: edge
    repeat: expr
    repeat-expr: num_edges
types:
  vertex:
    seq:
      - id: x
        type: f4
      - id: y
        type: f4
      - id: z
        type: f4
  edge:
    seq:
      - id: vertex_a
        type: u4
      - id: vertex_b
        type: u4
  vertex_attribute:
    doc: |
      One vertex attribute: num_vertices x num_components values of bytes_per_value bytes
      each (the data_type comes from the `info` file).
    params:
      - id: num_vertices
        type: u4
      - id: num_components
        type: u4
      - id: bytes_per_value
        type: u1
    seq:
      - id: values
        size: num_vertices * num_components * bytes_per_value
