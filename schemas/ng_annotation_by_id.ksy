meta:
  id: ng_annotation_by_id
  title: Neuroglancer precomputed annotation by id (annotation, then its relationships)
  license: CC0-1.0
  ks-version: 0.11
  endian: le
  imports:
    - ng_annotation
doc: |
  The value of one annotation id in the `by_id` index of a Neuroglancer "precomputed"
  annotation layer (a file named by the decimal id unsharded, the id itself as the key
  sharded): the annotation's record (ng_annotation: geometry, properties, padding), then,
  for each relationship the `info` file lists, in its order, a u4 count and that many related
  object ids (u8). Only this index holds the full relationship lists; the id is not stored.

  The record layout and the number of relationships come from the `info` file: the root uses
  the editable defaults below (set `rank`, `kind`, `property_types` and
  `num_relationships` for the Web IDE); host code parses `entry` with its own layout.
doc-ref:
  - https://github.com/google/neuroglancer/blob/master/src/datasource/precomputed/annotations.md
seq:
  - id: body
    type: entry(rank, kind, property_types, num_relationships)
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
  num_relationships:
    value: 0
    doc: How many relationships the `info` file lists (edit for the Web IDE).
types:
  entry:
    params:
      - id: rank
        type: u4
      - id: kind
        type: u1
        enum: ng_annotation::annotation_type
      - id: property_types
        type: bytes
      - id: num_relationships
        type: u4
    seq:
      - id: annotation
        type: ng_annotation::record(rank, kind, property_types)
      - id: relationships
        type: related_ids
        repeat: expr
        repeat-expr: num_relationships
  related_ids:
    seq:
      - id: count
        type: u4
      - id: ids
        type: u8
        repeat: expr
        repeat-expr: count
