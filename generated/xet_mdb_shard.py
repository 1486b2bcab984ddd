# This is a generated file! Please edit source .ksy file and use kaitai-struct-compiler to rebuild
# type: ignore

import kaitaistruct
from kaitaistruct import KaitaiStruct, KaitaiStream, BytesIO


if getattr(kaitaistruct, 'API_VERSION', (0, 9)) < (0, 11):
    raise Exception("Incompatible Kaitai Struct Python API: 0.11 or later is required, but you have %s" % (kaitaistruct.__version__))

class XetMdbShard(KaitaiStruct):
    """The metadata shard ("Merkle DataBase") of the Hugging Face Xet storage protocol, written by
    xet-core / hf-xet: which xorbs (content-addressed containers of chunks) make up which files,
    and which chunks each xorb holds. All integers are little-endian; every record of the two
    record sections is 48 bytes.
    
    Layout: a 48-byte header; the File Info section (file blocks until a bookend record); the
    Xorb Info section (xorb blocks until a bookend); then, in full on-disk shards only, three
    optional lookup tables (file, xorb, chunk) and a 200-byte footer at the end of the file.
    The footer-less upload body (header len_footer 0) ends at the xorb bookend.
    
    Hashes are 32 stored bytes. Their display hex (Hub, URLs, file names) reverses each 8-byte
    group before hex-encoding; so does the sha256 of a metadata_ext record, whose display hex is
    the usual hexdigest. Those conversions, hashing and all consistency checks are host code
    (shardkit.formats.xet_mdb).
    
    The public spec calls footer bytes 24..72 and 120..192 "reserved" and the chunk entry bytes
    40..48 "unused"; they hold the lookup-table offsets and counts, the HMAC key, timestamps,
    totals and the chunk flags, as read here. The header's len_footer cannot be trusted on its
    own: upload bodies once carried 200 with no footer, so the footer is only read when the file
    is long enough to hold one after the xorb bookend.
    
    .. seealso::
       FORMAT_NOTES.md (shardkit shared corpus, mdb) sections 1-6 and 9
    
    
    .. seealso::
       Source - https://github.com/huggingface/xet-core/blob/af1a3ff9/xet_core_structures/src/metadata_shard/shard_format.rs
    
    
    .. seealso::
       Source - https://github.com/huggingface/xet-core/blob/af1a3ff9/xet_core_structures/src/metadata_shard/file_structs.rs
    
    
    .. seealso::
       Source - https://github.com/huggingface/xet-core/blob/af1a3ff9/xet_core_structures/src/metadata_shard/xorb_structs.rs
    
    
    .. seealso::
       Source - https://github.com/huggingface/hub-docs/blob/main/docs/xet/shard.md
    """
    def __init__(self, _io, _parent=None, _root=None):
        super(XetMdbShard, self).__init__(_io)
        self._parent = _parent
        self._root = _root or self
        self._read()

    def _read(self):
        self.header = XetMdbShard.Header(self._io, self, self._root)


    def _fetch_instances(self):
        pass
        self.header._fetch_instances()
        _ = self.chunk_lookup
        if hasattr(self, '_m_chunk_lookup'):
            pass
            self._m_chunk_lookup._fetch_instances()

        _ = self.file_info
        if hasattr(self, '_m_file_info'):
            pass
            self._m_file_info._fetch_instances()

        _ = self.file_lookup
        if hasattr(self, '_m_file_lookup'):
            pass
            self._m_file_lookup._fetch_instances()

        _ = self.footer
        if hasattr(self, '_m_footer'):
            pass
            self._m_footer._fetch_instances()

        _ = self.xorb_info
        if hasattr(self, '_m_xorb_info'):
            pass
            self._m_xorb_info._fetch_instances()

        _ = self.xorb_lookup
        if hasattr(self, '_m_xorb_lookup'):
            pass
            self._m_xorb_lookup._fetch_instances()


    class ChunkEntry(KaitaiStruct):
        """
        .. seealso::
           FORMAT_NOTES.md section 5; xorb_structs.rs XorbChunkSequenceEntry
        """
        def __init__(self, _io, _parent=None, _root=None):
            super(XetMdbShard.ChunkEntry, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.chunk_hash = self._io.read_bytes(32)
            self.ofs_unpacked = self._io.read_u4le()
            self.len_unpacked = self._io.read_u4le()
            self.flags = self._io.read_u4le()
            self.reserved = self._io.read_u4le()


        def _fetch_instances(self):
            pass


    class ChunkLookupEntry(KaitaiStruct):
        """
        .. seealso::
           FORMAT_NOTES.md section 6.1
        """
        def __init__(self, _io, _parent=None, _root=None):
            super(XetMdbShard.ChunkLookupEntry, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.truncated_hash = self._io.read_u8le()
            self.idx_xorb_record = self._io.read_u4le()
            self.idx_chunk = self._io.read_u4le()


        def _fetch_instances(self):
            pass
            _ = self.truncated_hash_raw
            if hasattr(self, '_m_truncated_hash_raw'):
                pass


        @property
        def truncated_hash_raw(self):
            """The 8 bytes of truncated_hash as stored: bytes 0..8 of the stored (keyed, if the
            shard is keyed) chunk hash, so they read the same as the start of that hash in the
            tree. truncated_hash is derived from a BLAKE3 hash and almost always above 2**53,
            which the Web IDE's JavaScript runtime shows rounded; these bytes are exact.
            """
            if hasattr(self, '_m_truncated_hash_raw'):
                return self._m_truncated_hash_raw

            _pos = self._io.pos()
            self._io.seek(0)
            self._m_truncated_hash_raw = self._io.read_bytes(8)
            self._io.seek(_pos)
            return getattr(self, '_m_truncated_hash_raw', None)


    class ChunkLookupTable(KaitaiStruct):
        def __init__(self, _io, _parent=None, _root=None):
            super(XetMdbShard.ChunkLookupTable, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self._raw_entries = []
            self.entries = []
            i = 0
            while not self._io.is_eof():
                self._raw_entries.append(self._io.read_bytes(16))
                _io__raw_entries = KaitaiStream(BytesIO(self._raw_entries[-1]))
                self.entries.append(XetMdbShard.ChunkLookupEntry(_io__raw_entries, self, self._root))
                i += 1



        def _fetch_instances(self):
            pass
            for i in range(len(self.entries)):
                pass
                self.entries[i]._fetch_instances()



    class FileBlock(KaitaiStruct):
        """One file: a FileDataSequenceHeader record, num_terms term records, then (flag bit 31)
        num_terms verification records and (flag bit 30) one metadata_ext record. The section's
        bookend is a record whose hash is 32 0xff bytes (then 16 zero bytes).
        
        .. seealso::
           FORMAT_NOTES.md section 5; file_structs.rs FileDataSequenceHeader
        """
        def __init__(self, ofs_block, _io, _parent=None, _root=None):
            super(XetMdbShard.FileBlock, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self.ofs_block = ofs_block
            self._read()

        def _read(self):
            self.file_hash = self._io.read_bytes(32)
            self.flags = self._io.read_u4le()
            self.num_terms = self._io.read_u4le()
            self.reserved = self._io.read_u8le()
            if (not (self.is_bookend)):
                pass
                self.terms = []
                for i in range(self.num_terms):
                    self.terms.append(XetMdbShard.FileTerm(self._io, self, self._root))


            if  (((not (self.is_bookend))) and (self.has_verification)) :
                pass
                self.verification_entries = []
                for i in range(self.num_terms):
                    self.verification_entries.append(XetMdbShard.VerificationEntry(self._io, self, self._root))


            if  (((not (self.is_bookend))) and (self.has_metadata_ext)) :
                pass
                self.metadata_ext = XetMdbShard.MetadataExt(self._io, self, self._root)



        def _fetch_instances(self):
            pass
            if (not (self.is_bookend)):
                pass
                for i in range(len(self.terms)):
                    pass
                    self.terms[i]._fetch_instances()


            if  (((not (self.is_bookend))) and (self.has_verification)) :
                pass
                for i in range(len(self.verification_entries)):
                    pass
                    self.verification_entries[i]._fetch_instances()


            if  (((not (self.is_bookend))) and (self.has_metadata_ext)) :
                pass
                self.metadata_ext._fetch_instances()


        @property
        def has_metadata_ext(self):
            if hasattr(self, '_m_has_metadata_ext'):
                return self._m_has_metadata_ext

            self._m_has_metadata_ext = self.flags & 1073741824 != 0
            return getattr(self, '_m_has_metadata_ext', None)

        @property
        def has_verification(self):
            if hasattr(self, '_m_has_verification'):
                return self._m_has_verification

            self._m_has_verification = self.flags & 2147483648 != 0
            return getattr(self, '_m_has_verification', None)

        @property
        def is_bookend(self):
            if hasattr(self, '_m_is_bookend'):
                return self._m_is_bookend

            self._m_is_bookend = self.file_hash == b"\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF"
            return getattr(self, '_m_is_bookend', None)

        @property
        def num_records(self):
            """Records (48 bytes each) the block takes."""
            if hasattr(self, '_m_num_records'):
                return self._m_num_records

            self._m_num_records = (1 if self.is_bookend else ((1 + self.num_terms) + (self.num_terms if self.has_verification else 0)) + (1 if self.has_metadata_ext else 0))
            return getattr(self, '_m_num_records', None)


    class FileInfoSection(KaitaiStruct):
        """
        .. seealso::
           FORMAT_NOTES.md section 5 (File Info section)
        """
        def __init__(self, _io, _parent=None, _root=None):
            super(XetMdbShard.FileInfoSection, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.blocks = []
            i = 0
            while True:
                _ = XetMdbShard.FileBlock(self._io.pos(), self._io, self, self._root)
                self.blocks.append(_)
                if _.is_bookend:
                    break
                i += 1


        def _fetch_instances(self):
            pass
            for i in range(len(self.blocks)):
                pass
                self.blocks[i]._fetch_instances()



    class FileLookupTable(KaitaiStruct):
        def __init__(self, _io, _parent=None, _root=None):
            super(XetMdbShard.FileLookupTable, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self._raw_entries = []
            self.entries = []
            i = 0
            while not self._io.is_eof():
                self._raw_entries.append(self._io.read_bytes(12))
                _io__raw_entries = KaitaiStream(BytesIO(self._raw_entries[-1]))
                self.entries.append(XetMdbShard.LookupEntry(_io__raw_entries, self, self._root))
                i += 1



        def _fetch_instances(self):
            pass
            for i in range(len(self.entries)):
                pass
                self.entries[i]._fetch_instances()



    class FileTerm(KaitaiStruct):
        """One reconstruction term, chunks [chunk_index_start, chunk_index_end) of a xorb.
        
        .. seealso::
           FORMAT_NOTES.md section 5; file_structs.rs FileDataSequenceEntry
        """
        def __init__(self, _io, _parent=None, _root=None):
            super(XetMdbShard.FileTerm, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.xorb_hash = self._io.read_bytes(32)
            self.flags = self._io.read_u4le()
            self.len_unpacked = self._io.read_u4le()
            self.chunk_index_start = self._io.read_u4le()
            self.chunk_index_end = self._io.read_u4le()


        def _fetch_instances(self):
            pass


    class Footer(KaitaiStruct):
        """
        .. seealso::
           FORMAT_NOTES.md section 6; shard_format.rs MDBShardFileFooter
        """
        def __init__(self, _io, _parent=None, _root=None):
            super(XetMdbShard.Footer, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.version = self._io.read_u8le()
            if not self.version == 1:
                raise kaitaistruct.ValidationNotEqualError(1, self.version, self._io, u"/types/footer/seq/0")
            self.ofs_file_info = self._io.read_u8le()
            self.ofs_xorb_info = self._io.read_u8le()
            self.ofs_file_lookup = self._io.read_u8le()
            self.num_file_lookup = self._io.read_u8le()
            self.ofs_xorb_lookup = self._io.read_u8le()
            self.num_xorb_lookup = self._io.read_u8le()
            self.ofs_chunk_lookup = self._io.read_u8le()
            self.num_chunk_lookup = self._io.read_u8le()
            self.chunk_hash_hmac_key = self._io.read_bytes(32)
            self.creation_timestamp = self._io.read_u8le()
            self.key_expiry = self._io.read_u8le()
            self.reserved = self._io.read_bytes(48)
            self.len_stored_on_disk = self._io.read_u8le()
            self.len_materialized = self._io.read_u8le()
            self.len_stored = self._io.read_u8le()
            self.ofs_footer = self._io.read_u8le()


        def _fetch_instances(self):
            pass


    class Header(KaitaiStruct):
        """
        .. seealso::
           FORMAT_NOTES.md section 4; shard_format.rs MDBShardFileHeader
        """
        def __init__(self, _io, _parent=None, _root=None):
            super(XetMdbShard.Header, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.tag = self._io.read_bytes(32)
            if not self.tag == b"\x48\x46\x52\x65\x70\x6F\x4D\x65\x74\x61\x44\x61\x74\x61\x00\x55\x69\x67\x45\x6A\x7B\x81\x57\x83\xA5\xBD\xD9\x5C\xCD\xD1\x4A\xA9":
                raise kaitaistruct.ValidationNotEqualError(b"\x48\x46\x52\x65\x70\x6F\x4D\x65\x74\x61\x44\x61\x74\x61\x00\x55\x69\x67\x45\x6A\x7B\x81\x57\x83\xA5\xBD\xD9\x5C\xCD\xD1\x4A\xA9", self.tag, self._io, u"/types/header/seq/0")
            self.version = self._io.read_u8le()
            if not self.version == 2:
                raise kaitaistruct.ValidationNotEqualError(2, self.version, self._io, u"/types/header/seq/1")
            self.len_footer = self._io.read_u8le()
            if not  ((self.len_footer == 0) or (self.len_footer == 200)) :
                raise kaitaistruct.ValidationNotAnyOfError(self.len_footer, self._io, u"/types/header/seq/2")


        def _fetch_instances(self):
            pass


    class LookupEntry(KaitaiStruct):
        """
        .. seealso::
           FORMAT_NOTES.md section 6.1
        """
        def __init__(self, _io, _parent=None, _root=None):
            super(XetMdbShard.LookupEntry, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.truncated_hash = self._io.read_u8le()
            self.idx_record = self._io.read_u4le()


        def _fetch_instances(self):
            pass
            _ = self.truncated_hash_raw
            if hasattr(self, '_m_truncated_hash_raw'):
                pass


        @property
        def truncated_hash_raw(self):
            """The 8 bytes of truncated_hash as stored: bytes 0..8 of the stored file or xorb
            hash, so they read the same as the start of that hash in the tree. truncated_hash is
            derived from a BLAKE3 hash and almost always above 2**53, which the Web IDE's
            JavaScript runtime shows rounded; these bytes are exact.
            """
            if hasattr(self, '_m_truncated_hash_raw'):
                return self._m_truncated_hash_raw

            _pos = self._io.pos()
            self._io.seek(0)
            self._m_truncated_hash_raw = self._io.read_bytes(8)
            self._io.seek(_pos)
            return getattr(self, '_m_truncated_hash_raw', None)


    class MetadataExt(KaitaiStruct):
        """
        .. seealso::
           FORMAT_NOTES.md section 5; file_structs.rs FileMetadataExt
        """
        def __init__(self, _io, _parent=None, _root=None):
            super(XetMdbShard.MetadataExt, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.sha256 = self._io.read_bytes(32)
            self.reserved = self._io.read_bytes(16)


        def _fetch_instances(self):
            pass


    class VerificationEntry(KaitaiStruct):
        """
        .. seealso::
           FORMAT_NOTES.md sections 5 and 7.5; file_structs.rs FileVerificationEntry
        """
        def __init__(self, _io, _parent=None, _root=None):
            super(XetMdbShard.VerificationEntry, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.range_hash = self._io.read_bytes(32)
            self.reserved = self._io.read_bytes(16)


        def _fetch_instances(self):
            pass


    class XorbBlock(KaitaiStruct):
        """A XorbChunkSequenceHeader record then one record per chunk.
        
        .. seealso::
           FORMAT_NOTES.md section 5; xorb_structs.rs XorbChunkSequenceHeader
        """
        def __init__(self, ofs_block, _io, _parent=None, _root=None):
            super(XetMdbShard.XorbBlock, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self.ofs_block = ofs_block
            self._read()

        def _read(self):
            self.xorb_hash = self._io.read_bytes(32)
            self.flags = self._io.read_u4le()
            self.num_chunks = self._io.read_u4le()
            self.len_unpacked = self._io.read_u4le()
            self.len_on_disk = self._io.read_u4le()
            if (not (self.is_bookend)):
                pass
                self.chunks = []
                for i in range(self.num_chunks):
                    self.chunks.append(XetMdbShard.ChunkEntry(self._io, self, self._root))




        def _fetch_instances(self):
            pass
            if (not (self.is_bookend)):
                pass
                for i in range(len(self.chunks)):
                    pass
                    self.chunks[i]._fetch_instances()



        @property
        def is_bookend(self):
            if hasattr(self, '_m_is_bookend'):
                return self._m_is_bookend

            self._m_is_bookend = self.xorb_hash == b"\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF"
            return getattr(self, '_m_is_bookend', None)


    class XorbInfoSection(KaitaiStruct):
        """
        .. seealso::
           FORMAT_NOTES.md section 5 (Xorb Info section)
        """
        def __init__(self, _io, _parent=None, _root=None):
            super(XetMdbShard.XorbInfoSection, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.blocks = []
            i = 0
            while True:
                _ = XetMdbShard.XorbBlock(self._io.pos(), self._io, self, self._root)
                self.blocks.append(_)
                if _.is_bookend:
                    break
                i += 1


        def _fetch_instances(self):
            pass
            for i in range(len(self.blocks)):
                pass
                self.blocks[i]._fetch_instances()



    class XorbLookupTable(KaitaiStruct):
        def __init__(self, _io, _parent=None, _root=None):
            super(XetMdbShard.XorbLookupTable, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self._raw_entries = []
            self.entries = []
            i = 0
            while not self._io.is_eof():
                self._raw_entries.append(self._io.read_bytes(12))
                _io__raw_entries = KaitaiStream(BytesIO(self._raw_entries[-1]))
                self.entries.append(XetMdbShard.LookupEntry(_io__raw_entries, self, self._root))
                i += 1



        def _fetch_instances(self):
            pass
            for i in range(len(self.entries)):
                pass
                self.entries[i]._fetch_instances()



    @property
    def chunk_lookup(self):
        """Truncated (stored, possibly keyed) chunk hash -> xorb and chunk; sorted by key."""
        if hasattr(self, '_m_chunk_lookup'):
            return self._m_chunk_lookup

        if self.has_footer:
            pass
            _pos = self._io.pos()
            self._io.seek(self.footer.ofs_chunk_lookup)
            self._raw__m_chunk_lookup = self._io.read_bytes(16 * self.footer.num_chunk_lookup)
            _io__raw__m_chunk_lookup = KaitaiStream(BytesIO(self._raw__m_chunk_lookup))
            self._m_chunk_lookup = XetMdbShard.ChunkLookupTable(_io__raw__m_chunk_lookup, self, self._root)
            self._io.seek(_pos)

        return getattr(self, '_m_chunk_lookup', None)

    @property
    def file_info(self):
        """The File Info section, right after the header (footer ofs_file_info is always 48)."""
        if hasattr(self, '_m_file_info'):
            return self._m_file_info

        _pos = self._io.pos()
        self._io.seek(48)
        self._m_file_info = XetMdbShard.FileInfoSection(self._io, self, self._root)
        self._io.seek(_pos)
        return getattr(self, '_m_file_info', None)

    @property
    def file_lookup(self):
        """Truncated file hash -> record index of its file block; in file-section order."""
        if hasattr(self, '_m_file_lookup'):
            return self._m_file_lookup

        if self.has_footer:
            pass
            _pos = self._io.pos()
            self._io.seek(self.footer.ofs_file_lookup)
            self._raw__m_file_lookup = self._io.read_bytes(12 * self.footer.num_file_lookup)
            _io__raw__m_file_lookup = KaitaiStream(BytesIO(self._raw__m_file_lookup))
            self._m_file_lookup = XetMdbShard.FileLookupTable(_io__raw__m_file_lookup, self, self._root)
            self._io.seek(_pos)

        return getattr(self, '_m_file_lookup', None)

    @property
    def footer(self):
        """The footer, read at the end of the file minus len_footer."""
        if hasattr(self, '_m_footer'):
            return self._m_footer

        if self.has_footer:
            pass
            _pos = self._io.pos()
            self._io.seek(self._io.size() - self.header.len_footer)
            self._m_footer = XetMdbShard.Footer(self._io, self, self._root)
            self._io.seek(_pos)

        return getattr(self, '_m_footer', None)

    @property
    def has_footer(self):
        """Whether a footer is read: the header announces one and the file holds 200 bytes after
        the xorb bookend (FORMAT_NOTES section 11: len_footer 200 with no footer exists).
        """
        if hasattr(self, '_m_has_footer'):
            return self._m_has_footer

        self._m_has_footer =  ((self.header.len_footer == 200) and (self._io.size() >= self.ofs_xorb_info_end + 200)) 
        return getattr(self, '_m_has_footer', None)

    @property
    def ofs_xorb_info(self):
        """Start of the Xorb Info section, the byte after the file bookend."""
        if hasattr(self, '_m_ofs_xorb_info'):
            return self._m_ofs_xorb_info

        self._m_ofs_xorb_info = self.file_info.blocks[-1].ofs_block + 48
        return getattr(self, '_m_ofs_xorb_info', None)

    @property
    def ofs_xorb_info_end(self):
        """The byte after the xorb bookend; the upload body ends here."""
        if hasattr(self, '_m_ofs_xorb_info_end'):
            return self._m_ofs_xorb_info_end

        self._m_ofs_xorb_info_end = self.xorb_info.blocks[-1].ofs_block + 48
        return getattr(self, '_m_ofs_xorb_info_end', None)

    @property
    def xorb_info(self):
        if hasattr(self, '_m_xorb_info'):
            return self._m_xorb_info

        _pos = self._io.pos()
        self._io.seek(self.ofs_xorb_info)
        self._m_xorb_info = XetMdbShard.XorbInfoSection(self._io, self, self._root)
        self._io.seek(_pos)
        return getattr(self, '_m_xorb_info', None)

    @property
    def xorb_lookup(self):
        """Truncated xorb hash -> record index of its xorb block; in xorb-section order."""
        if hasattr(self, '_m_xorb_lookup'):
            return self._m_xorb_lookup

        if self.has_footer:
            pass
            _pos = self._io.pos()
            self._io.seek(self.footer.ofs_xorb_lookup)
            self._raw__m_xorb_lookup = self._io.read_bytes(12 * self.footer.num_xorb_lookup)
            _io__raw__m_xorb_lookup = KaitaiStream(BytesIO(self._raw__m_xorb_lookup))
            self._m_xorb_lookup = XetMdbShard.XorbLookupTable(_io__raw__m_xorb_lookup, self, self._root)
            self._io.seek(_pos)

        return getattr(self, '_m_xorb_lookup', None)


