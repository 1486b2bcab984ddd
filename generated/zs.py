# This is a generated file! Please edit source .ksy file and use kaitai-struct-compiler to rebuild
# type: ignore

import kaitaistruct
from kaitaistruct import KaitaiStruct, KaitaiStream, BytesIO
from . import uleb128


if getattr(kaitaistruct, 'API_VERSION', (0, 9)) < (0, 11):
    raise Exception("Incompatible Kaitai Struct Python API: 0.11 or later is required, but you have %s" % (kaitaistruct.__version__))

class Zs(KaitaiStruct):
    """A ZS file (njsmith/zs, `zs` 0.10.0 on PyPI, 2014; the released successor of ZSS) stores a
    sorted multiset of byte strings ("records") in compressed blocks, with a tree of index blocks
    over them, so that a reader finds the records from a given key or with a given prefix by
    reading only the blocks on one path. Public data sets were distributed in it (for example the
    Google Books N-gram corpora).
    
    Layout: an 8-byte magic, a u8 header length N, the N header bytes, a CRC-64-xz of those N
    bytes, then blocks back to back up to the end of the file. Every position stored in the format
    is an absolute byte offset in the file.
    
    A block is a uleb128 length L, then L bytes (a level byte and the compressed payload), then a
    u8 CRC-64-xz of those L bytes. Level 0 is a data block, 1..63 an index block, 64 and above an
    extension block that readers skip. Payloads are compressed with the header's codec: `none`
    (stored as is: this schema parses the bodies, `blocks/N/body/payload`), `deflate` (raw RFC
    1951 stream) or `lzma2;dsize=2^20` (raw LZMA2 stream, 1 MiB dictionary). Decompression is left
    to host code on purpose; host code parses the decompressed bodies with `data_block_body` and
    `index_block_body`.
    
    CRC-64-xz is the CRC of the .xz format (polynomial 0x42f0e1eba9ea3693 reflected, init and xor
    out all ones; check value 0x995dc9bbdf1939fa for "123456789").
    
    Meaning the schema cannot check (host code does): records are sorted (memcmp order,
    duplicates allowed) within and across data blocks in file order; an index key is <= the first
    record under its child and >= every record before it; a child is exactly one level below its
    parent; an entry's length is its child's whole length; every block but the root is
    referenced exactly once; `len_file` is the file's size; `sha256` is the SHA-256 of the
    decompressed data block payloads in file order.
    
    An unfinished file begins `ab 5a 53 74 6f 42 65 01` ("ZStoBe") instead; it is refused.
    
    .. seealso::
       Source - https://github.com/njsmith/zs/blob/v0.10.0/doc/format.rst
    
    
    .. seealso::
       Source - https://github.com/njsmith/zs/blob/v0.10.0/zs/common.py
    """
    def __init__(self, _io, _parent=None, _root=None):
        super(Zs, self).__init__(_io)
        self._parent = _parent
        self._root = _root or self
        self._read()

    def _read(self):
        self.magic = self._io.read_bytes(8)
        if not self.magic == b"\xAB\x5A\x53\x66\x69\x4C\x65\x01":
            raise kaitaistruct.ValidationNotEqualError(b"\xAB\x5A\x53\x66\x69\x4C\x65\x01", self.magic, self._io, u"/seq/0")
        self.len_header = self._io.read_u8le()
        self._raw_header = self._io.read_bytes(self.len_header)
        _io__raw_header = KaitaiStream(BytesIO(self._raw_header))
        self.header = Zs.Header(_io__raw_header, self, self._root)
        self.header_crc64xz = self._io.read_u8le()


    def _fetch_instances(self):
        pass
        self.header._fetch_instances()
        _ = self.blocks
        if hasattr(self, '_m_blocks'):
            pass
            for i in range(len(self._m_blocks)):
                pass
                self._m_blocks[i]._fetch_instances()


        _ = self.header_crc64xz_input
        if hasattr(self, '_m_header_crc64xz_input'):
            pass

        _ = self.root
        if hasattr(self, '_m_root'):
            pass
            self._m_root._fetch_instances()


    class Block(KaitaiStruct):
        """One block: its length, the level byte and the payload (the length counts both), and the
        CRC-64-xz of those bytes as stored (compressed).
        
        .. seealso::
           Source - https://github.com/njsmith/zs/blob/v0.10.0/doc/format.rst#blocks
        """
        def __init__(self, is_none_codec, _io, _parent=None, _root=None):
            super(Zs.Block, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self.is_none_codec = is_none_codec
            self._read()

        def _read(self):
            self.len_body = uleb128.Uleb128(self._io)
            self._raw_body = self._io.read_bytes(self.len_body.value)
            _io__raw_body = KaitaiStream(BytesIO(self._raw_body))
            self.body = Zs.BlockBody(self.is_none_codec, _io__raw_body, self, self._root)
            self.crc64xz = self._io.read_u8le()


        def _fetch_instances(self):
            pass
            self.len_body._fetch_instances()
            self.body._fetch_instances()


    class BlockBody(KaitaiStruct):
        """The level byte and the payload of a block."""
        def __init__(self, is_none_codec, _io, _parent=None, _root=None):
            super(Zs.BlockBody, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self.is_none_codec = is_none_codec
            self._read()

        def _read(self):
            self.level = self._io.read_u1()
            _on = ((0 if self.level == 0 else (1 if self.level < 64 else 2)) if self.is_none_codec else 2)
            if _on == 0:
                pass
                self._raw_payload = self._io.read_bytes_full()
                _io__raw_payload = KaitaiStream(BytesIO(self._raw_payload))
                self.payload = Zs.DataBlockBody(_io__raw_payload, self, self._root)
            elif _on == 1:
                pass
                self._raw_payload = self._io.read_bytes_full()
                _io__raw_payload = KaitaiStream(BytesIO(self._raw_payload))
                self.payload = Zs.IndexBlockBody(_io__raw_payload, self, self._root)
            else:
                pass
                self.payload = self._io.read_bytes_full()


        def _fetch_instances(self):
            pass
            _on = ((0 if self.level == 0 else (1 if self.level < 64 else 2)) if self.is_none_codec else 2)
            if _on == 0:
                pass
                self.payload._fetch_instances()
            elif _on == 1:
                pass
                self.payload._fetch_instances()
            else:
                pass


    class DataBlockBody(KaitaiStruct):
        """Decoded payload of a data block: at least one record, back to back, in non-decreasing
        memcmp order, until the payload is used up (no count, no terminator).
        
        .. seealso::
           Source - https://github.com/njsmith/zs/blob/v0.10.0/doc/format.rst#data-block-payload
        """
        def __init__(self, _io, _parent=None, _root=None):
            super(Zs.DataBlockBody, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.records = []
            i = 0
            while not self._io.is_eof():
                self.records.append(Zs.DataRecord(self._io, self, self._root))
                i += 1



        def _fetch_instances(self):
            pass
            for i in range(len(self.records)):
                pass
                self.records[i]._fetch_instances()



    class DataRecord(KaitaiStruct):
        def __init__(self, _io, _parent=None, _root=None):
            super(Zs.DataRecord, self).__init__(_io)
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
           Source - https://github.com/njsmith/zs/blob/v0.10.0/doc/format.rst#header
        """
        def __init__(self, _io, _parent=None, _root=None):
            super(Zs.Header, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.ofs_root_index = self._io.read_u8le()
            self.len_root_index = self._io.read_u8le()
            self.len_file = self._io.read_u8le()
            self.sha256 = self._io.read_bytes(32)
            self.codec = (KaitaiStream.bytes_terminate(self._io.read_bytes(16), 0, False)).decode(u"ASCII")
            self.len_metadata = self._io.read_u8le()
            self.metadata = (self._io.read_bytes(self.len_metadata)).decode(u"UTF-8")
            self.extensions = self._io.read_bytes_full()


        def _fetch_instances(self):
            pass


    class IndexBlockBody(KaitaiStruct):
        """Decoded payload of an index block (level 1..63): at least one entry, keys non-decreasing.
        
        .. seealso::
           Source - https://github.com/njsmith/zs/blob/v0.10.0/doc/format.rst#index-block-payload
        """
        def __init__(self, _io, _parent=None, _root=None):
            super(Zs.IndexBlockBody, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.entries = []
            i = 0
            while not self._io.is_eof():
                self.entries.append(Zs.IndexEntry(self._io, self, self._root))
                i += 1



        def _fetch_instances(self):
            pass
            for i in range(len(self.entries)):
                pass
                self.entries[i]._fetch_instances()



    class IndexEntry(KaitaiStruct):
        def __init__(self, _io, _parent=None, _root=None):
            super(Zs.IndexEntry, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.len_key = uleb128.Uleb128(self._io)
            self.key = self._io.read_bytes(self.len_key.value)
            self.ofs_block = uleb128.Uleb128(self._io)
            self.len_block = uleb128.Uleb128(self._io)


        def _fetch_instances(self):
            pass
            self.len_key._fetch_instances()
            self.ofs_block._fetch_instances()
            self.len_block._fetch_instances()


    @property
    def blocks(self):
        """Every block in file order."""
        if hasattr(self, '_m_blocks'):
            return self._m_blocks

        _pos = self._io.pos()
        self._io.seek(self.ofs_blocks)
        self._m_blocks = []
        i = 0
        while not self._io.is_eof():
            self._m_blocks.append(Zs.Block(self.is_none_codec, self._io, self, self._root))
            i += 1

        self._io.seek(_pos)
        return getattr(self, '_m_blocks', None)

    @property
    def header_crc64xz_input(self):
        """The bytes `header_crc64xz` covers."""
        if hasattr(self, '_m_header_crc64xz_input'):
            return self._m_header_crc64xz_input

        _pos = self._io.pos()
        self._io.seek(16)
        self._m_header_crc64xz_input = self._io.read_bytes(self.len_header)
        self._io.seek(_pos)
        return getattr(self, '_m_header_crc64xz_input', None)

    @property
    def is_none_codec(self):
        """Whether block payloads are stored uncompressed (and are parsed here)."""
        if hasattr(self, '_m_is_none_codec'):
            return self._m_is_none_codec

        self._m_is_none_codec = self.header.codec == u"none"
        return getattr(self, '_m_is_none_codec', None)

    @property
    def ofs_blocks(self):
        """Absolute offset of the first block (magic, length, header and CRC come before)."""
        if hasattr(self, '_m_ofs_blocks'):
            return self._m_ofs_blocks

        self._m_ofs_blocks = 24 + self.len_header
        return getattr(self, '_m_ofs_blocks', None)

    @property
    def root(self):
        """The root index block, read in one piece of the length the header gives."""
        if hasattr(self, '_m_root'):
            return self._m_root

        _pos = self._io.pos()
        self._io.seek(self.header.ofs_root_index)
        self._raw__m_root = self._io.read_bytes(self.header.len_root_index)
        _io__raw__m_root = KaitaiStream(BytesIO(self._raw__m_root))
        self._m_root = Zs.Block(self.is_none_codec, _io__raw__m_root, self, self._root)
        self._io.seek(_pos)
        return getattr(self, '_m_root', None)


