meta:
  id: uleb128
  title: Unsigned LEB128 variable-length integer (minimal, at most 9 bytes)
  license: CC0-1.0
  ks-version: 0.11
doc: |
  An unsigned integer in base-128 groups, least-significant group first (DWARF "unsigned
  LEB128", protobuf "varint"). Bit 7 of a byte is set when another byte follows; bits 0-6 hold
  the value bits.

  This variant is the strict one ZSS readers accept: the encoding is minimal (the last byte of
  a multi-byte encoding is not 0x00, so `80 00` is refused) and it is at most 9 bytes long, so
  values are below 2**63. Both rules are checked on the byte where they fail (`valid` of
  `groups/N/b`).

  `value` is computed with multiplications rather than shifts, so the JavaScript parsers (Web
  IDE) stay exact up to 2**53 instead of wrapping at 2**31.

  Examples: `00` = 0, `7f` = 127, `80 01` = 128, `ff 20` = 0x107f, `b9 60` = 12345.
doc-ref:
  - https://en.wikipedia.org/wiki/LEB128
  - FORMAT.md section 1 (ZSS corpus notes; reference reader zss/_zss.pyx at njsmith/zss 8e078ea)
seq:
  - id: groups
    type: group(_index)
    repeat: until
    repeat-until: not _.has_next
types:
  group:
    doc: One byte, the continuation flag in bit 7 and 7 value bits.
    params:
      - id: idx
        type: u1
        doc: Position of this byte in the encoding (0 = least significant group).
    seq:
      - id: b
        type: u1
        valid:
          expr: (idx == 0 or _ != 0) and (idx < 8 or _ < 0x80)
        doc: |
          The byte. A final byte of 0x00 after earlier bytes (non-minimal) and a 9th byte with
          the continuation flag set (a 10th byte would be needed) are invalid.
    instances:
      has_next:
        value: (b & 0x80) != 0
        doc: Another byte follows.
      value:
        value: b & 0x7f
        doc: The 7 value bits of this byte.
instances:
  len_bytes:
    value: groups.size
    doc: Length of the encoding in bytes (1 to 9).
  value:
    value: >-
      groups[0].value
      + (len_bytes >= 2 ? groups[1].value * 0x80 : 0)
      + (len_bytes >= 3 ? groups[2].value * 0x4000 : 0)
      + (len_bytes >= 4 ? groups[3].value * 0x20_0000 : 0)
      + (len_bytes >= 5 ? groups[4].value * 0x1000_0000 : 0)
      + (len_bytes >= 6 ? groups[5].value * 0x8_0000_0000 : 0)
      + (len_bytes >= 7 ? groups[6].value * 0x400_0000_0000 : 0)
      + (len_bytes >= 8 ? groups[7].value * 0x2_0000_0000_0000 : 0)
      + (len_bytes >= 9 ? groups[8].value * 0x100_0000_0000_0000 : 0)
    doc: The decoded value.
