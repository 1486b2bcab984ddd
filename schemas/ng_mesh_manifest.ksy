meta:
  id: ng_mesh_manifest
  title: Neuroglancer precomputed multi-resolution mesh manifest
  license: CC0-1.0
  ks-version: 0.11
  endian: le
doc: |
  The manifest of one object of a Neuroglancer "precomputed" multi-resolution mesh layer
  ("@type": "neuroglancer_multilod_draco"): the index of the Draco-encoded fragments that
  make up the object's levels of detail. Unsharded, it is the file `<segment id>.index` and
  the fragments are the file `<segment id>`; sharded, it is the value stored under the
  segment id and the fragments lie in the shard immediately before it, so the fragment data
  begins at (manifest start - sum of all fragment sizes). Written by igneous, zmesh users,
  cloud-volume and Neuroglancer's Python tools.

  A header gives the octree geometry (chunk_shape and grid_origin, three f4 each, in the
  layer's coordinates before its `transform`), the number of levels of detail, the scale of
  each level and its vertex offset. Then, for each level, its fragments: positions in the
  level's grid (three arrays of u4: every x, then every y, then every z) and their sizes in
  bytes (u4), in the order the fragment data is stored (level 0 first). Sizes may be 0: such
  a fragment only marks that the octree node exists.

  Every array is a byte range of the exact size its count gives (so a count larger than the
  file fails at once, before anything is allocated), read value by value by its type.
doc-ref:
  - https://github.com/google/neuroglancer/blob/v2.40.1/src/datasource/precomputed/meshes.md
seq:
  - id: chunk_shape
    type: vec3f
  - id: grid_origin
    type: vec3f
  - id: num_lods
    type: u4
  - id: lod_scales
    size: num_lods * 4
    type: f4_array(num_lods)
  - id: vertex_offsets
    size: num_lods * 12
    type: vec3f_array(num_lods)
  - id: num_fragments_per_lod
    size: num_lods * 4
    type: u4_array(num_lods)
  - id: lods
    type: lod(num_fragments_per_lod.values[_index])
    repeat: expr
    repeat-expr: num_lods
types:
  vec3f:
    seq:
      - id: x
        type: f4
      - id: y
        type: f4
      - id: z
        type: f4
  lod:
    params:
      - id: num_fragments
        type: u4
    seq:
      - id: fragment_positions
        size: num_fragments * 12
        type: fragment_positions(num_fragments)
      - id: fragment_sizes
        size: num_fragments * 4
        type: u4_array(num_fragments)
        doc: Bytes of each fragment (the format's `fragment_offsets`).
  fragment_positions:
    params:
      - id: num_fragments
        type: u4
    seq:
      - id: x
        type: u4
        repeat: expr
        repeat-expr: num_fragments
      - id: y
        type: u4
        repeat: expr
        repeat-expr: num_fragments
      - id: z
        type: u4
        repeat: expr
        repeat-expr: num_fragments
  f4_array:
    params:
      - id: num_values
        type: u4
    seq:
      - id: values
        type: f4
        repeat: expr
        repeat-expr: num_values
  vec3f_array:
    params:
      - id: num_values
        type: u4
    seq:
      - id: values
        type: vec3f
        repeat: expr
        repeat-expr: num_values
  u4_array:
    params:
      - id: num_values
        type: u4
    seq:
      - id: values
        type: u4
        repeat: expr
        repeat-expr: num_values
