# This is a generated file! Please edit source .ksy file and use kaitai-struct-compiler to rebuild
# type: ignore

import kaitaistruct
from kaitaistruct import KaitaiStruct, KaitaiStream, BytesIO
from . import cmph_chd_ph


if getattr(kaitaistruct, 'API_VERSION', (0, 9)) < (0, 11):
    raise Exception("Incompatible Kaitai Struct Python API: 0.11 or later is required, but you have %s" % (kaitaistruct.__version__))

class SwhReadShard(KaitaiStruct):
    """A read-only object store written by swh.perfecthash (Software Heritage's "winery" object
    storage): objects addressed by 32-byte keys, found in O(1) through a minimal perfect hash
    function. All integers of the header, the object size fields and the index are big-endian;
    the hash function at the end is a cmph dump in native (little-endian) byte order.
    
    Layout: magic and header in the first 512 bytes, then the objects (each a u8 size followed by
    its bytes, in write order), then the index (one 40-byte entry per slot of the hash function),
    then the hash function: a cmph dump, which a pre-allocated file follows with zero bytes up
    to the end of the file (the hash_function instance spans both; the dump's own fields say
    where it ends).
    
    Structurally an index slot holds a live entry (key, absolute offset of the object's size
    field), an empty slot (offset 0, zero key) or a tombstone (offset 2**64-1, zero key). What an
    empty slot or a tombstone means (a slot no object used, or a deleted object) depends on the
    writer's generation and on the header's counts; the semantic layer reading the file decides,
    not this schema.
    
    .. seealso::
       Source - https://gitlab.softwareheritage.org/swh/devel/swh-perfecthash/-/blob/v1.3.2/swh/perfecthash/hash.h
    
    
    .. seealso::
       Source - https://gitlab.softwareheritage.org/swh/devel/swh-perfecthash/-/blob/v1.3.2/swh/perfecthash/hash.c
    """
    def __init__(self, _io, _parent=None, _root=None):
        super(SwhReadShard, self).__init__(_io)
        self._parent = _parent
        self._root = _root or self
        self._read()

    def _read(self):
        self.magic = self._io.read_bytes(9)
        if not self.magic == b"\x53\x57\x48\x53\x68\x61\x72\x64\x00":
            raise kaitaistruct.ValidationNotEqualError(b"\x53\x57\x48\x53\x68\x61\x72\x64\x00", self.magic, self._io, u"/seq/0")
        self.reserved = self._io.read_bytes(23)
        self.header = SwhReadShard.Header(self._io, self, self._root)


    def _fetch_instances(self):
        pass
        self.header._fetch_instances()
        _ = self.hash_function
        if hasattr(self, '_m_hash_function'):
            pass
            self._m_hash_function._fetch_instances()

        _ = self.index
        if hasattr(self, '_m_index'):
            pass
            self._m_index._fetch_instances()


    class Header(KaitaiStruct):
        """
        .. seealso::
           shard_header_t - https://gitlab.softwareheritage.org/swh/devel/swh-perfecthash/-/blob/v1.3.2/swh/perfecthash/hash.h
        """
        def __init__(self, _io, _parent=None, _root=None):
            super(SwhReadShard.Header, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.version = self._io.read_u8be()
            if not self.version == 1:
                raise kaitaistruct.ValidationNotEqualError(1, self.version, self._io, u"/types/header/seq/0")
            self.num_objects = self._io.read_u8be()
            self.ofs_objects = self._io.read_u8be()
            self.len_objects = self._io.read_u8be()
            self.ofs_index = self._io.read_u8be()
            self.len_index = self._io.read_u8be()
            self.ofs_hash = self._io.read_u8be()


        def _fetch_instances(self):
            pass


    class Index(KaitaiStruct):
        def __init__(self, _io, _parent=None, _root=None):
            super(SwhReadShard.Index, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.entries = []
            i = 0
            while not self._io.is_eof():
                self.entries.append(SwhReadShard.IndexEntry(self._io, self, self._root))
                i += 1



        def _fetch_instances(self):
            pass
            for i in range(len(self.entries)):
                pass
                self.entries[i]._fetch_instances()



    class IndexEntry(KaitaiStruct):
        """
        .. seealso::
           shard_index_t - https://gitlab.softwareheritage.org/swh/devel/swh-perfecthash/-/blob/v1.3.2/swh/perfecthash/hash.h
        """
        def __init__(self, _io, _parent=None, _root=None):
            super(SwhReadShard.IndexEntry, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.key = self._io.read_bytes(32)
            self.ofs_object = self._io.read_u8be()


        def _fetch_instances(self):
            pass
            _ = self.object
            if hasattr(self, '_m_object'):
                pass
                self._m_object._fetch_instances()


        @property
        def is_empty(self):
            if hasattr(self, '_m_is_empty'):
                return self._m_is_empty

            self._m_is_empty = self.ofs_object == 0
            return getattr(self, '_m_is_empty', None)

        @property
        def is_tombstone(self):
            if hasattr(self, '_m_is_tombstone'):
                return self._m_is_tombstone

            self._m_is_tombstone = self.ofs_object == 18446744073709551615
            return getattr(self, '_m_is_tombstone', None)

        @property
        def object(self):
            if hasattr(self, '_m_object'):
                return self._m_object

            if  (((not (self.is_empty))) and ((not (self.is_tombstone)))) :
                pass
                io = self._root._io
                _pos = io.pos()
                io.seek(self.ofs_object)
                self._m_object = SwhReadShard.ShardObject(io, self, self._root)
                io.seek(_pos)

            return getattr(self, '_m_object', None)


    class ShardObject(KaitaiStruct):
        def __init__(self, _io, _parent=None, _root=None):
            super(SwhReadShard.ShardObject, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.len_data = self._io.read_u8be()
            self.data = self._io.read_bytes(self.len_data)


        def _fetch_instances(self):
            pass


    @property
    def hash_function(self):
        """The minimal perfect hash function mapping a key to its index slot, and the zero bytes
        that follow it in a pre-allocated file.
        """
        if hasattr(self, '_m_hash_function'):
            return self._m_hash_function

        _pos = self._io.pos()
        self._io.seek(self.header.ofs_hash)
        self._raw__m_hash_function = self._io.read_bytes(self._io.size() - self.header.ofs_hash)
        _io__raw__m_hash_function = KaitaiStream(BytesIO(self._raw__m_hash_function))
        self._m_hash_function = cmph_chd_ph.CmphChdPh(_io__raw__m_hash_function)
        self._io.seek(_pos)
        return getattr(self, '_m_hash_function', None)

    @property
    def index(self):
        """The hash table; slot i is the i-th entry."""
        if hasattr(self, '_m_index'):
            return self._m_index

        _pos = self._io.pos()
        self._io.seek(self.header.ofs_index)
        self._raw__m_index = self._io.read_bytes(self.header.len_index)
        _io__raw__m_index = KaitaiStream(BytesIO(self._raw__m_index))
        self._m_index = SwhReadShard.Index(_io__raw__m_index, self, self._root)
        self._io.seek(_pos)
        return getattr(self, '_m_index', None)


