meta:
  id: ng_annotation_cell
  title: Neuroglancer precomputed annotation list (spatial index cell, related object id entry)
  license: CC0-1.0
  ks-version: 0.11
  endian: le
  imports:
    - ng_annotation
doc: |
  A list of annotations of a Neuroglancer "precomputed" annotation layer, in the "multiple
  annotation encoding": the value of one cell of a spatial index level (a file named
  `x_y_z` unsharded, the compressed Morton code of the cell sharded), and the value of one
  object id in a relationship index. A u8 count, then `count` records (ng_annotation: geometry,
  properties, padding; relationships are not repeated here), then the `count` annotation ids
  (u8 each) in the same order. Neuroglancer refuses a count of 2**32 or more.

  The record layout comes from the layer's `info` file (rank, annotation_type, properties):
  the root uses the editable default of ng_annotation (set the instances `rank`, `kind` and
  `property_types` of this file for the Web IDE); host code parses `annotations` with its
  own layout.
doc-ref:
  - https://github.com/google/neuroglancer/blob/master/src/datasource/precomputed/annotations.md
seq:
  - id: body
    type: cell(rank, kind, property_types)
instances:
  rank:
    value: 3
    doc: The number of dimensions of the layer (edit for the Web IDE).
  kind:
    value: ng_annotation::annotation_type::point
    doc: The layer's annotation_type (edit for the Web IDE).
  property_types:
    value: '[].as<bytes>'
    doc: The property types in stored order (edit for the Web IDE), see ng_annotation.
types:
  cell:
    params:
      - id: rank
        type: u4
      - id: kind
        type: u1
        enum: ng_annotation::annotation_type
      - id: property_types
        type: bytes
    seq:
      - id: count
        type: u8
      - id: annotations
        type: ng_annotation::record(rank, kind, property_types)
        repeat: expr
        repeat-expr: count
      - id: ids
        type: u8
        repeat: expr
        repeat-expr: count
        doc: The id of each annotation above, in the same order.
