# This is a generated file! Please edit source .ksy file and use kaitai-struct-compiler to rebuild
# type: ignore

import kaitaistruct
from kaitaistruct import KaitaiStruct, KaitaiStream, BytesIO
from enum import IntEnum


if getattr(kaitaistruct, 'API_VERSION', (0, 9)) < (0, 11):
    raise Exception("Incompatible Kaitai Struct Python API: 0.11 or later is required, but you have %s" % (kaitaistruct.__version__))

class AmudaiShard(KaitaiStruct):
    """An Amudai shard is a column store: a root file `*.amudai.shard` holding the metadata and, in
    the single-file layout, every encoded buffer; in the two-level layout each stripe's buffers
    live in a framed `<id>.amudai.stripe` file beside the root. Both kinds of file start and end
    with the same 8-byte frame ("amud" + version 0.1.0).
    
    The metadata are protobuf messages (and one FlatBuffers schema), each stored as a
    length-message-checksum `record`; DataRefs inside them give absolute byte ranges. The root
    file ends with the shard directory (the ToC): its record, the repeated u4 length, the footer.
    This schema reads the frame and the directory; protobuf payloads stay bytes (shardkit decodes
    them with code generated from schemas/amudai/*.proto). The other types (`encoded_block`,
    `block_map`, `value_dictionary`) describe byte ranges the protobuf metadata point at: host code
    (or a Web IDE user, selecting the range) applies them to `EncodedBuffer` ranges.
    
    Checksums (`ck`) are XXH3-64 without seed folded to 32 bits, (h >> 32) ^ (h & 0xFFFFFFFF);
    checking them is left to host code, as is decompression.
    
    .. seealso::
       FORMAT_NOTES.md section 1 (container framing), 4 (encoded buffers)
    
    
    .. seealso::
       Source - https://github.com/microsoft/amudai/tree/63c7da35/proto_defs/shard_format
    """

    class BasicType(IntEnum):
        unit = 0
        boolean = 1
        int8 = 2
        int16 = 3
        int32 = 4
        int64 = 5
        float32 = 6
        float64 = 7
        binary = 8
        fixed_size_binary = 9
        string = 10
        guid = 11
        date_time = 12
        list = 13
        fixed_size_list = 14
        struct = 15
        map = 16
        union = 17

    class BlockEncoding(IntEnum):
        plain = 1
        fl_bit_pack = 2
        frame_of_reference = 3
        fused_frame_of_reference = 4
        delta = 5
        run_length = 6
        single_value = 7
        truncate_u8 = 8
        truncate_u16 = 9
        truncate_u32 = 10
        truncate_u64 = 11
        alp = 12
        alp_rd = 13
        block_dictionary = 14
        fsst = 15
        zstd = 16
        lz4 = 17
        zig_zag = 18
        sparse = 19
    def __init__(self, _io, _parent=None, _root=None):
        super(AmudaiShard, self).__init__(_io)
        self._parent = _parent
        self._root = _root or self
        self._read()

    def _read(self):
        self.header = AmudaiShard.Frame(self._io, self, self._root)


    def _fetch_instances(self):
        pass
        self.header._fetch_instances()
        _ = self.directory
        if hasattr(self, '_m_directory'):
            pass
            self._m_directory._fetch_instances()

        _ = self.footer
        if hasattr(self, '_m_footer'):
            pass
            self._m_footer._fetch_instances()

        _ = self.len_directory
        if hasattr(self, '_m_len_directory'):
            pass


    class BlockMap(KaitaiStruct):
        """The tail of a block-stream buffer: segment records (one per up to segment_size blocks),
        the n+1 segment logical offsets and record offsets, and a 40-byte footer. Parse it on
        exactly the map's bytes (EncodedBuffer.block_map).
        
        .. seealso::
           FORMAT_NOTES.md section 4.3
        """
        def __init__(self, _io, _parent=None, _root=None):
            super(AmudaiShard.BlockMap, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            pass


        def _fetch_instances(self):
            pass
            _ = self.footer
            if hasattr(self, '_m_footer'):
                pass
                self._m_footer._fetch_instances()

            _ = self.ofs_segment_records
            if hasattr(self, '_m_ofs_segment_records'):
                pass
                for i in range(len(self._m_ofs_segment_records)):
                    pass


            _ = self.segment_logical_offsets
            if hasattr(self, '_m_segment_logical_offsets'):
                pass
                for i in range(len(self._m_segment_logical_offsets)):
                    pass


            _ = self.segments
            if hasattr(self, '_m_segments'):
                pass
                for i in range(len(self._m_segments)):
                    pass
                    self._m_segments[i]._fetch_instances()



        @property
        def footer(self):
            if hasattr(self, '_m_footer'):
                return self._m_footer

            _pos = self._io.pos()
            self._io.seek(self._io.size() - 40)
            self._m_footer = AmudaiShard.BlockMapFooter(self._io, self, self._root)
            self._io.seek(_pos)
            return getattr(self, '_m_footer', None)

        @property
        def ofs_segment_records(self):
            """Byte offset of each segment record from the start of the map; the first is 0."""
            if hasattr(self, '_m_ofs_segment_records'):
                return self._m_ofs_segment_records

            _pos = self._io.pos()
            self._io.seek((self._io.size() - 40) - 8 * (self.footer.num_segments + 1))
            self._m_ofs_segment_records = []
            for i in range(self.footer.num_segments + 1):
                self._m_ofs_segment_records.append(self._io.read_u8le())

            self._io.seek(_pos)
            return getattr(self, '_m_ofs_segment_records', None)

        @property
        def segment_logical_offsets(self):
            """First logical position of each segment; the last entry is value_count."""
            if hasattr(self, '_m_segment_logical_offsets'):
                return self._m_segment_logical_offsets

            _pos = self._io.pos()
            self._io.seek((self._io.size() - 40) - 16 * (self.footer.num_segments + 1))
            self._m_segment_logical_offsets = []
            for i in range(self.footer.num_segments + 1):
                self._m_segment_logical_offsets.append(self._io.read_u8le())

            self._io.seek(_pos)
            return getattr(self, '_m_segment_logical_offsets', None)

        @property
        def segments(self):
            if hasattr(self, '_m_segments'):
                return self._m_segments

            _pos = self._io.pos()
            self._io.seek(0)
            self._m_segments = []
            for i in range(self.footer.num_segments):
                self._m_segments.append(AmudaiShard.BlockMapSegment(self._io, self, self._root))

            self._io.seek(_pos)
            return getattr(self, '_m_segments', None)


    class BlockMapFooter(KaitaiStruct):
        def __init__(self, _io, _parent=None, _root=None):
            super(AmudaiShard.BlockMapFooter, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.num_values = self._io.read_u8le()
            self.num_blocks = self._io.read_u8le()
            self.num_segments = self._io.read_u8le()
            self.segment_size = self._io.read_u8le()
            self.len_data = self._io.read_u8le()


        def _fetch_instances(self):
            pass


    class BlockMapSegment(KaitaiStruct):
        """Sizes of up to segment_size consecutive blocks, each stored as (size - minimum) in 8, 16 or
        32 bits. Block offsets are relative to the start of the buffer; prefix-sum the sizes from
        ofs_first_block.
        """
        def __init__(self, _io, _parent=None, _root=None):
            super(AmudaiShard.BlockMapSegment, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.first_logical_pos = self._io.read_u8le()
            self.ofs_first_block = self._io.read_u8le()
            self.min_logical_size = self._io.read_u4le()
            self.min_block_size = self._io.read_u4le()
            self.logical_size_bits = self._io.read_u1()
            if not  ((self.logical_size_bits == 8) or (self.logical_size_bits == 16) or (self.logical_size_bits == 32)) :
                raise kaitaistruct.ValidationNotAnyOfError(self.logical_size_bits, self._io, u"/types/block_map_segment/seq/4")
            self.block_size_bits = self._io.read_u1()
            if not  ((self.block_size_bits == 8) or (self.block_size_bits == 16) or (self.block_size_bits == 32)) :
                raise kaitaistruct.ValidationNotAnyOfError(self.block_size_bits, self._io, u"/types/block_map_segment/seq/5")
            self.num_blocks = self._io.read_u2le()
            self.logical_sizes = []
            for i in range(self.num_blocks):
                _on = self.logical_size_bits
                if _on == 16:
                    pass
                    self.logical_sizes.append(self._io.read_u2le())
                elif _on == 32:
                    pass
                    self.logical_sizes.append(self._io.read_u4le())
                elif _on == 8:
                    pass
                    self.logical_sizes.append(self._io.read_u1())

            self.logical_sizes_padding = self._io.read_bytes((4 - self._io.pos() % 4) % 4)
            self.block_sizes = []
            for i in range(self.num_blocks):
                _on = self.block_size_bits
                if _on == 16:
                    pass
                    self.block_sizes.append(self._io.read_u2le())
                elif _on == 32:
                    pass
                    self.block_sizes.append(self._io.read_u4le())
                elif _on == 8:
                    pass
                    self.block_sizes.append(self._io.read_u1())

            self.block_sizes_padding = self._io.read_bytes((8 - self._io.pos() % 8) % 8)


        def _fetch_instances(self):
            pass
            for i in range(len(self.logical_sizes)):
                pass
                _on = self.logical_size_bits
                if _on == 16:
                    pass
                elif _on == 32:
                    pass
                elif _on == 8:
                    pass

            for i in range(len(self.block_sizes)):
                pass
                _on = self.block_size_bits
                if _on == 16:
                    pass
                elif _on == 32:
                    pass
                elif _on == 8:
                    pass


        @property
        def len_record(self):
            """Bytes of this segment record, paddings included (the 28-byte head, the logical
            sizes padded to 4, the block sizes padded to 8): the next record starts this far on.
            """
            if hasattr(self, '_m_len_record'):
                return self._m_len_record

            self._m_len_record = ((((((28 + (self.num_blocks * self.logical_size_bits) // 8) + 3) // 4) * 4 + (self.num_blocks * self.block_size_bits) // 8) + 7) // 8) * 8
            return getattr(self, '_m_len_record', None)


    class DictionarySection(KaitaiStruct):
        """u8 payload length, the payload, 64 zero bytes, zero padding so that the bytes before the
        checksum are 12 mod 16, then u4 ck(payload). The whole section is a multiple of 16 bytes.
        """
        def __init__(self, _io, _parent=None, _root=None):
            super(AmudaiShard.DictionarySection, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.len_payload = self._io.read_u8le()
            self.payload = self._io.read_bytes(self.len_payload)


        def _fetch_instances(self):
            pass
            _ = self.checksum
            if hasattr(self, '_m_checksum'):
                pass


        @property
        def checksum(self):
            """ck of the payload only."""
            if hasattr(self, '_m_checksum'):
                return self._m_checksum

            _pos = self._io.pos()
            self._io.seek(self._io.size() - 4)
            self._m_checksum = self._io.read_u4le()
            self._io.seek(_pos)
            return getattr(self, '_m_checksum', None)


    class EncodedBlock(KaitaiStruct):
        """One block of a block-stream buffer, sliced out with the sizes of the block map. The
        presence section exists only when the buffer has embedded presence; the checksum only
        when it has block checksums (then it is the last 4 bytes and covers all bytes before it).
        
        .. seealso::
           FORMAT_NOTES.md section 4.2
        """
        def __init__(self, embedded_presence, has_checksum, _io, _parent=None, _root=None):
            super(AmudaiShard.EncodedBlock, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self.embedded_presence = embedded_presence
            self.has_checksum = has_checksum
            self._read()

        def _read(self):
            self.len_presence = self._io.read_u4le()
            self.len_values = self._io.read_u4le()
            if self.embedded_presence:
                pass
                self.presence = self._io.read_bytes(self.len_presence)

            if self.embedded_presence:
                pass
                self.presence_padding = self._io.read_bytes((8 - (8 + self.len_presence) % 8) % 8)

            self._raw_values = self._io.read_bytes(self.len_values)
            _io__raw_values = KaitaiStream(BytesIO(self._raw_values))
            self.values = AmudaiShard.ValuesSection(_io__raw_values, self, self._root)


        def _fetch_instances(self):
            pass
            if self.embedded_presence:
                pass

            if self.embedded_presence:
                pass

            self.values._fetch_instances()
            _ = self.checksum
            if hasattr(self, '_m_checksum'):
                pass


        @property
        def checksum(self):
            """ck of every byte of the block before it (header, sections and padding)."""
            if hasattr(self, '_m_checksum'):
                return self._m_checksum

            if self.has_checksum:
                pass
                _pos = self._io.pos()
                self._io.seek(self._io.size() - 4)
                self._m_checksum = self._io.read_u4le()
                self._io.seek(_pos)

            return getattr(self, '_m_checksum', None)


    class Frame(KaitaiStruct):
        """The 8-byte header and footer ("amud", then version patch, minor, major).
        
        .. seealso::
           FORMAT_NOTES.md section 1.1
        """
        def __init__(self, _io, _parent=None, _root=None):
            super(AmudaiShard.Frame, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.magic = self._io.read_bytes(4)
            if not self.magic == b"\x61\x6D\x75\x64":
                raise kaitaistruct.ValidationNotEqualError(b"\x61\x6D\x75\x64", self.magic, self._io, u"/types/frame/seq/0")
            self.version_patch = self._io.read_u1()
            self.version_minor = self._io.read_u2le()
            self.version_major = self._io.read_u1()
            if not self.version_major <= 0:
                raise kaitaistruct.ValidationGreaterThanError(0, self.version_major, self._io, u"/types/frame/seq/3")


        def _fetch_instances(self):
            pass


    class Record(KaitaiStruct):
        """A serialized metadata message: u4 length, the protobuf (or FlatBuffers) bytes, u4 ck of
        the payload. A DataRef to a message covers the whole record (length + 8 bytes).
        
        .. seealso::
           FORMAT_NOTES.md section 1.2
        """
        def __init__(self, _io, _parent=None, _root=None):
            super(AmudaiShard.Record, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.len_payload = self._io.read_u4le()
            self.payload = self._io.read_bytes(self.len_payload)
            self.checksum = self._io.read_u4le()


        def _fetch_instances(self):
            pass


    class ValueDictionary(KaitaiStruct):
        """A VALUE_DICTIONARY buffer (no block map): a fixed 128-byte header, then the values, offsets
        (variable-size values only) and sorted-ids sections, each a `dictionary_section`, at
        offsets relative to the buffer start. Parse it on exactly the buffer's bytes.
        
        .. seealso::
           FORMAT_NOTES.md section 4.6
        """
        def __init__(self, _io, _parent=None, _root=None):
            super(AmudaiShard.ValueDictionary, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.header = AmudaiShard.ValueDictionaryHeader(self._io, self, self._root)


        def _fetch_instances(self):
            pass
            self.header._fetch_instances()
            _ = self.offsets
            if hasattr(self, '_m_offsets'):
                pass
                self._m_offsets._fetch_instances()

            _ = self.sorted_ids
            if hasattr(self, '_m_sorted_ids'):
                pass
                self._m_sorted_ids._fetch_instances()

            _ = self.values
            if hasattr(self, '_m_values'):
                pass
                self._m_values._fetch_instances()


        @property
        def offsets(self):
            """value_count + 1 u8 byte offsets into the values payload, starting at 0."""
            if hasattr(self, '_m_offsets'):
                return self._m_offsets

            if self.header.ofs_offsets_end > self.header.ofs_offsets:
                pass
                _pos = self._io.pos()
                self._io.seek(self.header.ofs_offsets)
                self._raw__m_offsets = self._io.read_bytes(self.header.ofs_offsets_end - self.header.ofs_offsets)
                _io__raw__m_offsets = KaitaiStream(BytesIO(self._raw__m_offsets))
                self._m_offsets = AmudaiShard.DictionarySection(_io__raw__m_offsets, self, self._root)
                self._io.seek(_pos)

            return getattr(self, '_m_offsets', None)

        @property
        def sorted_ids(self):
            """u4 ids of the non-null entries, sorted by value."""
            if hasattr(self, '_m_sorted_ids'):
                return self._m_sorted_ids

            _pos = self._io.pos()
            self._io.seek(self.header.ofs_sorted_ids)
            self._raw__m_sorted_ids = self._io.read_bytes(self.header.ofs_sorted_ids_end - self.header.ofs_sorted_ids)
            _io__raw__m_sorted_ids = KaitaiStream(BytesIO(self._raw__m_sorted_ids))
            self._m_sorted_ids = AmudaiShard.DictionarySection(_io__raw__m_sorted_ids, self, self._root)
            self._io.seek(_pos)
            return getattr(self, '_m_sorted_ids', None)

        @property
        def values(self):
            """All entries concatenated in id order."""
            if hasattr(self, '_m_values'):
                return self._m_values

            _pos = self._io.pos()
            self._io.seek(self.header.ofs_values)
            self._raw__m_values = self._io.read_bytes(self.header.ofs_values_end - self.header.ofs_values)
            _io__raw__m_values = KaitaiStream(BytesIO(self._raw__m_values))
            self._m_values = AmudaiShard.DictionarySection(_io__raw__m_values, self, self._root)
            self._io.seek(_pos)
            return getattr(self, '_m_values', None)


    class ValueDictionaryHeader(KaitaiStruct):
        def __init__(self, _io, _parent=None, _root=None):
            super(AmudaiShard.ValueDictionaryHeader, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.value_type = KaitaiStream.resolve_enum(AmudaiShard.BasicType, self._io.read_u1())
            self.num_values = self._io.read_u4le()
            self.null_entry_present = self._io.read_u1()
            self.null_id = self._io.read_u4le()
            self.fixed_value_size = self._io.read_u4le()
            self.ofs_values = self._io.read_u8le()
            self.ofs_values_end = self._io.read_u8le()
            self.ofs_offsets = self._io.read_u8le()
            self.ofs_offsets_end = self._io.read_u8le()
            self.ofs_sorted_ids = self._io.read_u8le()
            self.ofs_sorted_ids_end = self._io.read_u8le()
            self.reserved = self._io.read_bytes(62)
            self.checksum = self._io.read_u4le()


        def _fetch_instances(self):
            pass


    class ValuesSection(KaitaiStruct):
        """The values section of a block; its layout after the code depends on the code.
        
        .. seealso::
           FORMAT_NOTES.md section 4.4
        """
        def __init__(self, _io, _parent=None, _root=None):
            super(AmudaiShard.ValuesSection, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.encoding = KaitaiStream.resolve_enum(AmudaiShard.BlockEncoding, self._io.read_u2le())
            self.body = self._io.read_bytes_full()


        def _fetch_instances(self):
            pass


    @property
    def directory(self):
        """The ShardDirectory protobuf message (amudai.shard.ShardDirectory) as a record."""
        if hasattr(self, '_m_directory'):
            return self._m_directory

        _pos = self._io.pos()
        self._io.seek((self._io.size() - 12) - (self.len_directory + 8))
        self._raw__m_directory = self._io.read_bytes(self.len_directory + 8)
        _io__raw__m_directory = KaitaiStream(BytesIO(self._raw__m_directory))
        self._m_directory = AmudaiShard.Record(_io__raw__m_directory, self, self._root)
        self._io.seek(_pos)
        return getattr(self, '_m_directory', None)

    @property
    def footer(self):
        """Byte-identical to the header."""
        if hasattr(self, '_m_footer'):
            return self._m_footer

        _pos = self._io.pos()
        self._io.seek(self._io.size() - 8)
        self._m_footer = AmudaiShard.Frame(self._io, self, self._root)
        self._io.seek(_pos)
        return getattr(self, '_m_footer', None)

    @property
    def len_directory(self):
        """Payload length of the directory record, repeated after it so that a reader finds the
        record from the end. The reference reader refuses 16 MiB or more. Only root files have it.
        """
        if hasattr(self, '_m_len_directory'):
            return self._m_len_directory

        _pos = self._io.pos()
        self._io.seek(self._io.size() - 12)
        self._m_len_directory = self._io.read_u4le()
        if not self._m_len_directory <= 16777215:
            raise kaitaistruct.ValidationGreaterThanError(16777215, self._m_len_directory, self._io, u"/instances/len_directory")
        self._io.seek(_pos)
        return getattr(self, '_m_len_directory', None)


