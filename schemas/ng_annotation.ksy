meta:
  id: ng_annotation
  title: Neuroglancer precomputed annotation (single annotation encoding)
  license: CC0-1.0
  ks-version: 0.11
  endian: le
doc: |
  One annotation of a Neuroglancer "precomputed" annotation layer
  ("@type": "neuroglancer_annotations_v1"), encoded as every index of the layer stores it:
  its geometry as f4 values, its property values, then zero padding to a multiple of 4 bytes.
  The layer's `info` file, not the record, says what the record holds: the rank (the number of
  "dimensions"), the "annotation_type" and the "properties". The parametrised type `record`
  takes them:

  - geometry, by annotation type: POINT, the position (rank f4); LINE and
    AXIS_ALIGNED_BOUNDING_BOX, two positions; ELLIPSOID, the center then the radii; POLYLINE,
    a u4 point count then that many positions.
  - properties, ordered by size, not as `info` lists them: first every 4-byte property
    (uint32, int32, float32) in `info` order, then every 2-byte one (uint16, int16), then every
    1-byte one (uint8, int8, rgb, rgba: rgba is 4 bytes with 1-byte alignment). `property_types`
    is one byte per property in that stored order, with the values of enum `property_type`.
  - padding: 0 to 3 zero bytes, up to a multiple of 4 from the start of the record (every
    record starts at a multiple of 4 in every index, so the position in the stream is used).

  The root parses one record with an editable default layout, for the Kaitai Web IDE: set the
  instances `rank`, `kind` and `property_types` to the layer's values. A by-id entry
  (ng_annotation_by_id) and a spatial or relationship cell (ng_annotation_cell) hold records.
doc-ref:
  - https://github.com/google/neuroglancer/blob/master/src/datasource/precomputed/annotations.md
seq:
  - id: annotation
    type: record(rank, kind, property_types)
instances:
  rank:
    value: 3
    doc: The number of dimensions of the layer (edit for the Web IDE).
  kind:
    value: annotation_type::point
    doc: The layer's annotation_type (edit for the Web IDE).
  property_types:
    value: '[].as<bytes>'
    doc: The property types in stored order (edit for the Web IDE), e.g. [5, 1].
enums:
  annotation_type:
    0: point
    1: line
    2: axis_aligned_bounding_box
    3: ellipsoid
    4: polyline
  property_type:
    1: uint8
    2: int8
    3: uint16
    4: int16
    5: uint32
    6: int32
    7: float32
    8: rgb
    9: rgba
types:
  record:
    params:
      - id: rank
        type: u4
      - id: kind
        type: u1
        enum: annotation_type
      - id: property_types
        type: bytes
    seq:
      - id: num_points
        type: u4
        if: kind == annotation_type::polyline
        doc: "POLYLINE only: how many positions follow."
      - id: positions
        type: position(rank)
        repeat: expr
        repeat-expr: 'kind == annotation_type::point ? 1 : kind == annotation_type::polyline ? num_points : 2'
        doc: |
          POINT: the point; LINE, AXIS_ALIGNED_BOUNDING_BOX: the two corners or end points;
          ELLIPSOID: the center, then the radii; POLYLINE: every point.
      - id: properties
        type: property_value(property_types[_index])
        repeat: expr
        repeat-expr: property_types.size
      - id: padding
        size: (4 - _io.pos % 4) % 4
  position:
    params:
      - id: rank
        type: u4
    seq:
      - id: coords
        type: f4
        repeat: expr
        repeat-expr: rank
  property_value:
    params:
      - id: kind
        type: u1
        doc: A value of enum property_type.
    seq:
      - id: value
        type:
          switch-on: kind
          cases:
            1: u1
            2: s1
            3: u2
            4: s2
            5: u4
            6: s4
            7: f4
            8: rgb
            9: rgba
  rgb:
    seq:
      - id: r
        type: u1
      - id: g
        type: u1
      - id: b
        type: u1
  rgba:
    seq:
      - id: r
        type: u1
      - id: g
        type: u1
      - id: b
        type: u1
      - id: a
        type: u1
