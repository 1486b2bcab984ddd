# This is a generated file! Please edit source .ksy file and use kaitai-struct-compiler to rebuild
# type: ignore

import kaitaistruct
from kaitaistruct import KaitaiStruct, KaitaiStream, BytesIO
from . import uleb128


if getattr(kaitaistruct, 'API_VERSION', (0, 9)) < (0, 11):
    raise Exception("Incompatible Kaitai Struct Python API: 0.11 or later is required, but you have %s" % (kaitaistruct.__version__))

class Zss(KaitaiStruct):
    """A ZSS file (njsmith/zss, 2013) stores a sorted multiset of byte strings ("records") in
    compressed blocks, with a B-tree-like index of blocks over them, so that a reader can find
    the records from a given key or with a given prefix by reading only the blocks on one path.
    
    Layout: an 8-byte magic, a u4 header length N, the N header bytes, a CRC-32C of those N bytes,
    then blocks back to back up to the end of the file (no footer). Every file position stored in
    the format is a "voffset": a byte offset counted from the first byte after the header CRC
    (`ofs_data`, 16 + N).
    
    A block is a level byte (0 = data block, L >= 1 = index block of height L), a uleb128 payload
    length and the payload, encoded with the file's codec (`header.codec`): `zlib` (one RFC 1950
    stream), `bz2` (one bzip2 stream; the original spec text says `bzip2`) or `none+crc32c` (the
    body followed by its u4 CRC-32C). Decompression is left to host code on purpose: this schema
    parses the body types only for `none+crc32c` files (`blocks/N/payload`); host code parses the
    decompressed bodies of the other codecs with `data_block_body` and `index_block_body`.
    
    Meaning the schema cannot check (host code does): records are sorted (memcmp order, duplicates
    allowed) across all data blocks in voffset order; an index entry's key equals the first record
    under its child; a child is exactly one level below its parent; child voffsets increase; every
    block is reachable from the root exactly once.
    
    An unfinished file begins `53 53 5a 1c 8e 6c 00 01` ("SSZ") instead; it is refused.
    
    .. seealso::
       FORMAT.md sections 2-8 (shardkit ZSS corpus notes, checked byte by byte against the corpus)
    
    
    .. seealso::
       Source - https://github.com/njsmith/zss/blob/8e078ea/doc/format.rst
    
    
    .. seealso::
       Source - https://github.com/njsmith/zss/blob/8e078ea/zss/common.py
    """
    def __init__(self, _io, _parent=None, _root=None):
        super(Zss, self).__init__(_io)
        self._parent = _parent
        self._root = _root or self
        self._read()

    def _read(self):
        self.magic = self._io.read_bytes(8)
        if not self.magic == b"\x5A\x53\x53\x1C\x8E\x6C\x00\x01":
            raise kaitaistruct.ValidationNotEqualError(b"\x5A\x53\x53\x1C\x8E\x6C\x00\x01", self.magic, self._io, u"/seq/0")
        self.len_header = self._io.read_u4le()
        self._raw_header = self._io.read_bytes(self.len_header)
        _io__raw_header = KaitaiStream(BytesIO(self._raw_header))
        self.header = Zss.Header(_io__raw_header, self, self._root)
        self.header_crc32c = self._io.read_u4le()


    def _fetch_instances(self):
        pass
        self.header._fetch_instances()
        _ = self.blocks
        if hasattr(self, '_m_blocks'):
            pass
            for i in range(len(self._m_blocks)):
                pass
                self._m_blocks[i]._fetch_instances()


        _ = self.header_crc32c_input
        if hasattr(self, '_m_header_crc32c_input'):
            pass

        _ = self.root
        if hasattr(self, '_m_root'):
            pass
            self._m_root._fetch_instances()


    class Block(KaitaiStruct):
        """One block: level byte, payload length, payload. The level and the length are covered by
        no checksum; only the codec's own check guards the payload.
        
        .. seealso::
           FORMAT.md section 4
        """
        def __init__(self, is_crc32c_framed, _io, _parent=None, _root=None):
            super(Zss.Block, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self.is_crc32c_framed = is_crc32c_framed
            self._read()

        def _read(self):
            self.level = self._io.read_u1()
            self.len_payload = uleb128.Uleb128(self._io)
            _on = self.is_crc32c_framed
            if _on == True:
                pass
                self._raw_payload = self._io.read_bytes(self.len_payload.value)
                _io__raw_payload = KaitaiStream(BytesIO(self._raw_payload))
                self.payload = Zss.Crc32cPayload(self.level, _io__raw_payload, self, self._root)
            else:
                pass
                self.payload = self._io.read_bytes(self.len_payload.value)


        def _fetch_instances(self):
            pass
            self.len_payload._fetch_instances()
            _on = self.is_crc32c_framed
            if _on == True:
                pass
                self.payload._fetch_instances()
            else:
                pass


    class Crc32cPayload(KaitaiStruct):
        """A `none+crc32c` payload, the body then the CRC-32C of the body.
        
        .. seealso::
           FORMAT.md section 5
        """
        def __init__(self, level, _io, _parent=None, _root=None):
            super(Zss.Crc32cPayload, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self.level = level
            self._read()

        def _read(self):
            _on = self.level
            if _on == 0:
                pass
                self._raw_body = self._io.read_bytes(self._io.size() - 4)
                _io__raw_body = KaitaiStream(BytesIO(self._raw_body))
                self.body = Zss.DataBlockBody(_io__raw_body, self, self._root)
            else:
                pass
                self._raw_body = self._io.read_bytes(self._io.size() - 4)
                _io__raw_body = KaitaiStream(BytesIO(self._raw_body))
                self.body = Zss.IndexBlockBody(_io__raw_body, self, self._root)
            self.body_crc32c = self._io.read_u4le()


        def _fetch_instances(self):
            pass
            _on = self.level
            if _on == 0:
                pass
                self.body._fetch_instances()
            else:
                pass
                self.body._fetch_instances()


    class DataBlockBody(KaitaiStruct):
        """Decoded body of a level-0 block: records back to back, in non-decreasing memcmp order,
        until the body is used up (no count, no terminator).
        
        .. seealso::
           FORMAT.md section 6.1
        """
        def __init__(self, _io, _parent=None, _root=None):
            super(Zss.DataBlockBody, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.records = []
            i = 0
            while not self._io.is_eof():
                self.records.append(Zss.DataRecord(self._io, self, self._root))
                i += 1



        def _fetch_instances(self):
            pass
            for i in range(len(self.records)):
                pass
                self.records[i]._fetch_instances()



    class DataRecord(KaitaiStruct):
        def __init__(self, _io, _parent=None, _root=None):
            super(Zss.DataRecord, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.len_record = uleb128.Uleb128(self._io)
            self.record = self._io.read_bytes(self.len_record.value)


        def _fetch_instances(self):
            pass
            self.len_record._fetch_instances()


    class Header(KaitaiStruct):
        """
        .. seealso::
           FORMAT.md section 2, header fields
        """
        def __init__(self, _io, _parent=None, _root=None):
            super(Zss.Header, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.root_voffset = self._io.read_u8le()
            self.uuid = self._io.read_bytes(16)
            self.codec = (KaitaiStream.bytes_terminate(self._io.read_bytes(16), 0, False)).decode(u"ASCII")
            self.len_metadata = self._io.read_u4le()
            self.metadata = (self._io.read_bytes(self.len_metadata)).decode(u"UTF-8")


        def _fetch_instances(self):
            pass


    class IndexBlockBody(KaitaiStruct):
        """Decoded body of an index block (level L >= 1): one entry per child, keys non-decreasing,
        child voffsets strictly increasing.
        
        .. seealso::
           FORMAT.md section 6.2
        """
        def __init__(self, _io, _parent=None, _root=None):
            super(Zss.IndexBlockBody, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.entries = []
            i = 0
            while not self._io.is_eof():
                self.entries.append(Zss.IndexEntry(self._io, self, self._root))
                i += 1



        def _fetch_instances(self):
            pass
            for i in range(len(self.entries)):
                pass
                self.entries[i]._fetch_instances()



    class IndexEntry(KaitaiStruct):
        def __init__(self, _io, _parent=None, _root=None):
            super(Zss.IndexEntry, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.len_key = uleb128.Uleb128(self._io)
            self.key = self._io.read_bytes(self.len_key.value)
            self.child_voffset = uleb128.Uleb128(self._io)


        def _fetch_instances(self):
            pass
            self.len_key._fetch_instances()
            self.child_voffset._fetch_instances()


    @property
    def blocks(self):
        """Every block in file order (voffset order)."""
        if hasattr(self, '_m_blocks'):
            return self._m_blocks

        _pos = self._io.pos()
        self._io.seek(self.ofs_data)
        self._m_blocks = []
        i = 0
        while not self._io.is_eof():
            self._m_blocks.append(Zss.Block(self.is_crc32c_codec, self._io, self, self._root))
            i += 1

        self._io.seek(_pos)
        return getattr(self, '_m_blocks', None)

    @property
    def header_crc32c_input(self):
        """The bytes `header_crc32c` covers."""
        if hasattr(self, '_m_header_crc32c_input'):
            return self._m_header_crc32c_input

        _pos = self._io.pos()
        self._io.seek(12)
        self._m_header_crc32c_input = self._io.read_bytes(self.len_header)
        self._io.seek(_pos)
        return getattr(self, '_m_header_crc32c_input', None)

    @property
    def is_crc32c_codec(self):
        """Whether block payloads are raw bodies followed by their CRC-32C (parsed here)."""
        if hasattr(self, '_m_is_crc32c_codec'):
            return self._m_is_crc32c_codec

        self._m_is_crc32c_codec = self.header.codec == u"none+crc32c"
        return getattr(self, '_m_is_crc32c_codec', None)

    @property
    def ofs_data(self):
        """Absolute offset of voffset 0, the first block."""
        if hasattr(self, '_m_ofs_data'):
            return self._m_ofs_data

        self._m_ofs_data = 16 + self.len_header
        return getattr(self, '_m_ofs_data', None)

    @property
    def root(self):
        """The root index block (always an index block, in practice the last block of the file)."""
        if hasattr(self, '_m_root'):
            return self._m_root

        _pos = self._io.pos()
        self._io.seek(self.ofs_data + self.header.root_voffset)
        self._m_root = Zss.Block(self.is_crc32c_codec, self._io, self, self._root)
        self._io.seek(_pos)
        return getattr(self, '_m_root', None)


