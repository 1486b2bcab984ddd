meta:
  id: ebml_vint
  title: EBML variable-size integer (RFC 8794 VINT), at most 8 bytes
  license: CC0-1.0
  ks-version: 0.11
doc: |
  An EBML variable-size integer: the number of leading zero bits of the first byte, plus one,
  is the length in bytes (1 to 8; a first byte of 0x00 would need a 9th byte and is refused).
  The first 1 bit (VINT_MARKER) is not part of the value; the remaining bits, big-endian, are
  (VINT_DATA).

  The same encoding serves element sizes (`value`, marker removed) and element IDs
  (`raw_value`, marker kept, as IDs are written: `1a 45 df a3` is the ID 0x1A45DFA3). A size
  whose VINT_DATA bits are all ones is the reserved "unknown size" (`is_unknown`).

  `value` is computed with multiplications rather than shifts, so the JavaScript parsers (Web
  IDE) stay exact up to 2**53.

  Examples: `81` = 1, `40 c8` = 200, `10 00 00 36` = 54 (4 bytes), `ff` = unknown (1 byte).
doc-ref:
  - https://www.rfc-editor.org/rfc/rfc8794.html#section-4
seq:
  - id: b0
    type: u1
    valid:
      expr: _ != 0
    doc: First byte; its leading zero bits give the length.
  - id: rest
    size: len_bytes - 1
    doc: The remaining bytes, big-endian.
instances:
  len_bytes:
    value: >-
      b0 >= 0x80 ? 1 : b0 >= 0x40 ? 2 : b0 >= 0x20 ? 3 : b0 >= 0x10 ? 4
      : b0 >= 0x08 ? 5 : b0 >= 0x04 ? 6 : b0 >= 0x02 ? 7 : 8
    doc: Length of the encoding in bytes (1 to 8).
  marker:
    value: >-
      len_bytes == 1 ? 0x80 : len_bytes == 2 ? 0x40 : len_bytes == 3 ? 0x20
      : len_bytes == 4 ? 0x10 : len_bytes == 5 ? 0x08 : len_bytes == 6 ? 0x04
      : len_bytes == 7 ? 0x02 : 0x01
    doc: The VINT_MARKER bit of the first byte.
  rest_value:
    value: >-
      (len_bytes >= 2 ? rest[len_bytes - 2] : 0)
      + (len_bytes >= 3 ? rest[len_bytes - 3] * 0x100 : 0)
      + (len_bytes >= 4 ? rest[len_bytes - 4] * 0x1_0000 : 0)
      + (len_bytes >= 5 ? rest[len_bytes - 5] * 0x100_0000 : 0)
      + (len_bytes >= 6 ? rest[len_bytes - 6] * 0x1_0000_0000 : 0)
      + (len_bytes >= 7 ? rest[len_bytes - 7] * 0x100_0000_0000 : 0)
      + (len_bytes >= 8 ? rest[len_bytes - 8] * 0x1_0000_0000_0000 : 0)
    doc: The bytes after the first, as a big-endian integer.
  scale:
    value: >-
      len_bytes == 1 ? 1 : len_bytes == 2 ? 0x100 : len_bytes == 3 ? 0x1_0000
      : len_bytes == 4 ? 0x100_0000 : len_bytes == 5 ? 0x1_0000_0000
      : len_bytes == 6 ? 0x100_0000_0000 : len_bytes == 7 ? 0x1_0000_0000_0000
      : 0x100_0000_0000_0000
    doc: The weight of the first byte's bits in the value.
  value:
    value: (b0 - marker) * scale + rest_value
    doc: VINT_DATA, the integer (an element's size).
  raw_value:
    value: b0 * scale + rest_value
    doc: The whole encoding as a big-endian integer, marker kept (an element's ID).
  is_unknown:
    value: value == marker * scale - 1
    doc: |
      All VINT_DATA bits are ones, RFC 8794's reserved "unknown size". `value` still gives the
      number the bits spell, which is how swh-mosaic writes and reads a size of 2**(7n)-1.
