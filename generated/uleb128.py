# This is a generated file! Please edit source .ksy file and use kaitai-struct-compiler to rebuild
# type: ignore

import kaitaistruct
from kaitaistruct import KaitaiStruct, KaitaiStream, BytesIO


if getattr(kaitaistruct, 'API_VERSION', (0, 9)) < (0, 11):
    raise Exception("Incompatible Kaitai Struct Python API: 0.11 or later is required, but you have %s" % (kaitaistruct.__version__))

class Uleb128(KaitaiStruct):
    """An unsigned integer in base-128 groups, least-significant group first (DWARF "unsigned
    LEB128", protobuf "varint"). Bit 7 of a byte is set when another byte follows; bits 0-6 hold
    the value bits.
    
    This variant is the strict one ZSS readers accept: the encoding is minimal (the last byte of
    a multi-byte encoding is not 0x00, so `80 00` is refused) and it is at most 9 bytes long, so
    values are below 2**63. Both rules are checked on the byte where they fail (`valid` of
    `groups/N/b`).
    
    `value` is computed with multiplications rather than shifts, so the JavaScript parsers (Web
    IDE) stay exact up to 2**53 instead of wrapping at 2**31.
    
    Examples: `00` = 0, `7f` = 127, `80 01` = 128, `ff 20` = 0x107f, `b9 60` = 12345.
    
    .. seealso::
       Source - https://en.wikipedia.org/wiki/LEB128
    
    
    .. seealso::
       FORMAT.md section 1 (ZSS corpus notes; reference reader zss/_zss.pyx at njsmith/zss 8e078ea)
    """
    def __init__(self, _io, _parent=None, _root=None):
        super(Uleb128, self).__init__(_io)
        self._parent = _parent
        self._root = _root or self
        self._read()

    def _read(self):
        self.groups = []
        i = 0
        while True:
            _ = Uleb128.Group(i, self._io, self, self._root)
            self.groups.append(_)
            if (not (_.has_next)):
                break
            i += 1


    def _fetch_instances(self):
        pass
        for i in range(len(self.groups)):
            pass
            self.groups[i]._fetch_instances()


    class Group(KaitaiStruct):
        """One byte, the continuation flag in bit 7 and 7 value bits."""
        def __init__(self, idx, _io, _parent=None, _root=None):
            super(Uleb128.Group, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self.idx = idx
            self._read()

        def _read(self):
            self.b = self._io.read_u1()
            _ = self.b
            if not  (( ((self.idx == 0) or (_ != 0)) ) and ( ((self.idx < 8) or (_ < 128)) )) :
                raise kaitaistruct.ValidationExprError(self.b, self._io, u"/types/group/seq/0")


        def _fetch_instances(self):
            pass

        @property
        def has_next(self):
            """Another byte follows."""
            if hasattr(self, '_m_has_next'):
                return self._m_has_next

            self._m_has_next = self.b & 128 != 0
            return getattr(self, '_m_has_next', None)

        @property
        def value(self):
            """The 7 value bits of this byte."""
            if hasattr(self, '_m_value'):
                return self._m_value

            self._m_value = self.b & 127
            return getattr(self, '_m_value', None)


    @property
    def len_bytes(self):
        """Length of the encoding in bytes (1 to 9)."""
        if hasattr(self, '_m_len_bytes'):
            return self._m_len_bytes

        self._m_len_bytes = len(self.groups)
        return getattr(self, '_m_len_bytes', None)

    @property
    def value(self):
        """The decoded value."""
        if hasattr(self, '_m_value'):
            return self._m_value

        self._m_value = (((((((self.groups[0].value + (self.groups[1].value * 128 if self.len_bytes >= 2 else 0)) + (self.groups[2].value * 16384 if self.len_bytes >= 3 else 0)) + (self.groups[3].value * 2097152 if self.len_bytes >= 4 else 0)) + (self.groups[4].value * 268435456 if self.len_bytes >= 5 else 0)) + (self.groups[5].value * 34359738368 if self.len_bytes >= 6 else 0)) + (self.groups[6].value * 4398046511104 if self.len_bytes >= 7 else 0)) + (self.groups[7].value * 562949953421312 if self.len_bytes >= 8 else 0)) + (self.groups[8].value * 72057594037927936 if self.len_bytes >= 9 else 0)
        return getattr(self, '_m_value', None)


