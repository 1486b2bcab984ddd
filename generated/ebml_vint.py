# This is a generated file! Please edit source .ksy file and use kaitai-struct-compiler to rebuild
# type: ignore

import kaitaistruct
from kaitaistruct import KaitaiStruct, KaitaiStream, BytesIO


if getattr(kaitaistruct, 'API_VERSION', (0, 9)) < (0, 11):
    raise Exception("Incompatible Kaitai Struct Python API: 0.11 or later is required, but you have %s" % (kaitaistruct.__version__))

class EbmlVint(KaitaiStruct):
    """An EBML variable-size integer: the number of leading zero bits of the first byte, plus one,
    is the length in bytes (1 to 8; a first byte of 0x00 would need a 9th byte and is refused).
    The first 1 bit (VINT_MARKER) is not part of the value; the remaining bits, big-endian, are
    (VINT_DATA).
    
    The same encoding serves element sizes (`value`, marker removed) and element IDs
    (`raw_value`, marker kept, as IDs are written: `1a 45 df a3` is the ID 0x1A45DFA3). A size
    whose VINT_DATA bits are all ones is the reserved "unknown size" (`is_unknown`).
    
    `value` is computed with multiplications rather than shifts, so the JavaScript parsers (Web
    IDE) stay exact up to 2**53.
    
    Examples: `81` = 1, `40 c8` = 200, `10 00 00 36` = 54 (4 bytes), `ff` = unknown (1 byte).
    
    .. seealso::
       Source - https://www.rfc-editor.org/rfc/rfc8794.html#section-4
    """
    def __init__(self, _io, _parent=None, _root=None):
        super(EbmlVint, self).__init__(_io)
        self._parent = _parent
        self._root = _root or self
        self._read()

    def _read(self):
        self.b0 = self._io.read_u1()
        _ = self.b0
        if not _ != 0:
            raise kaitaistruct.ValidationExprError(self.b0, self._io, u"/seq/0")
        self.rest = self._io.read_bytes(self.len_bytes - 1)


    def _fetch_instances(self):
        pass

    @property
    def is_unknown(self):
        """All VINT_DATA bits are ones, RFC 8794's reserved "unknown size". `value` still gives the
        number the bits spell, which is how swh-mosaic writes and reads a size of 2**(7n)-1.
        """
        if hasattr(self, '_m_is_unknown'):
            return self._m_is_unknown

        self._m_is_unknown = self.value == self.marker * self.scale - 1
        return getattr(self, '_m_is_unknown', None)

    @property
    def len_bytes(self):
        """Length of the encoding in bytes (1 to 8)."""
        if hasattr(self, '_m_len_bytes'):
            return self._m_len_bytes

        self._m_len_bytes = (1 if self.b0 >= 128 else (2 if self.b0 >= 64 else (3 if self.b0 >= 32 else (4 if self.b0 >= 16 else (5 if self.b0 >= 8 else (6 if self.b0 >= 4 else (7 if self.b0 >= 2 else 8)))))))
        return getattr(self, '_m_len_bytes', None)

    @property
    def marker(self):
        """The VINT_MARKER bit of the first byte."""
        if hasattr(self, '_m_marker'):
            return self._m_marker

        self._m_marker = (128 if self.len_bytes == 1 else (64 if self.len_bytes == 2 else (32 if self.len_bytes == 3 else (16 if self.len_bytes == 4 else (8 if self.len_bytes == 5 else (4 if self.len_bytes == 6 else (2 if self.len_bytes == 7 else 1)))))))
        return getattr(self, '_m_marker', None)

    @property
    def raw_value(self):
        """The whole encoding as a big-endian integer, marker kept (an element's ID)."""
        if hasattr(self, '_m_raw_value'):
            return self._m_raw_value

        self._m_raw_value = self.b0 * self.scale + self.rest_value
        return getattr(self, '_m_raw_value', None)

    @property
    def rest_value(self):
        """The bytes after the first, as a big-endian integer."""
        if hasattr(self, '_m_rest_value'):
            return self._m_rest_value

        self._m_rest_value = ((((((KaitaiStream.byte_array_index(self.rest, self.len_bytes - 2) if self.len_bytes >= 2 else 0) + (KaitaiStream.byte_array_index(self.rest, self.len_bytes - 3) * 256 if self.len_bytes >= 3 else 0)) + (KaitaiStream.byte_array_index(self.rest, self.len_bytes - 4) * 65536 if self.len_bytes >= 4 else 0)) + (KaitaiStream.byte_array_index(self.rest, self.len_bytes - 5) * 16777216 if self.len_bytes >= 5 else 0)) + (KaitaiStream.byte_array_index(self.rest, self.len_bytes - 6) * 4294967296 if self.len_bytes >= 6 else 0)) + (KaitaiStream.byte_array_index(self.rest, self.len_bytes - 7) * 1099511627776 if self.len_bytes >= 7 else 0)) + (KaitaiStream.byte_array_index(self.rest, self.len_bytes - 8) * 281474976710656 if self.len_bytes >= 8 else 0)
        return getattr(self, '_m_rest_value', None)

    @property
    def scale(self):
        """The weight of the first byte's bits in the value."""
        if hasattr(self, '_m_scale'):
            return self._m_scale

        self._m_scale = (1 if self.len_bytes == 1 else (256 if self.len_bytes == 2 else (65536 if self.len_bytes == 3 else (16777216 if self.len_bytes == 4 else (4294967296 if self.len_bytes == 5 else (1099511627776 if self.len_bytes == 6 else (281474976710656 if self.len_bytes == 7 else 72057594037927936)))))))
        return getattr(self, '_m_scale', None)

    @property
    def value(self):
        """VINT_DATA, the integer (an element's size)."""
        if hasattr(self, '_m_value'):
            return self._m_value

        self._m_value = (self.b0 - self.marker) * self.scale + self.rest_value
        return getattr(self, '_m_value', None)


