# This is a generated file! Please edit source .ksy file and use kaitai-struct-compiler to rebuild
# type: ignore

import kaitaistruct
from kaitaistruct import KaitaiStruct, KaitaiStream, BytesIO


if getattr(kaitaistruct, 'API_VERSION', (0, 9)) < (0, 11):
    raise Exception("Incompatible Kaitai Struct Python API: 0.11 or later is required, but you have %s" % (kaitaistruct.__version__))

class NeuroglancerUint64Sharded(KaitaiStruct):
    """One shard file of a Neuroglancer "precomputed" sharded dataset, as written by tensorstore
    and cloud-volume: a key-value store of uint64 chunk ids (segment ids, or compressed Morton
    codes of image chunks) to byte strings.
    
    The file starts with the shard index: 2**minishard_bits entries of two u8 each, the byte
    range [start, end) of one minishard index. Every offset in the file (shard index entries
    and minishard index data offsets) is relative to the END of the shard index, i.e. to
    16 * 2**minishard_bits. A minishard index is three arrays of n u8 each: chunk id deltas,
    data offset deltas and data sizes (see minishard_index). An empty minishard is [0, 0].
    Nothing else is fixed: tensorstore writes each minishard's data followed by its index,
    cloud-volume writes all data first and the minishard indices at the end, in any order, so
    readers must follow the offsets.
    
    minishard_bits is not stored in the file (it comes from the dataset's `info` file), so
    shardkit parses the shard index with the parametrised types shard_index(num_minishards)
    and minishard_index(num_chunks). The root type, for the Kaitai Web IDE and the parity
    tests, infers minishard_bits instead: for the true value b, the file ends exactly where
    the furthest range of the first 2**b entries ends (16 * 2**b + max(end)), and no smaller
    candidate can satisfy that. Files with trailing bytes are not recognised by the inference.
    
    Host code (the package src/shardkit/formats/neuroglancer/: decode.py, verify.py) undoes the
    delta encoding with cumulative sums, decompresses gzip-encoded minishard indices and chunks,
    and checks the hashes; with "minishard_index_encoding": "gzip" the root's minishards show
    the compressed bytes only.
    
    .. seealso::
       Source - https://github.com/google/neuroglancer/blob/v2.40.1/src/datasource/precomputed/sharded.md
    
    
    .. seealso::
       Source - https://github.com/google/tensorstore/blob/v0.1.86/tensorstore/kvstore/neuroglancer_uint64_sharded/uint64_sharded_decoder.cc
    """
    def __init__(self, _io, _parent=None, _root=None):
        super(NeuroglancerUint64Sharded, self).__init__(_io)
        self._parent = _parent
        self._root = _root or self
        self._read()

    def _read(self):
        pass


    def _fetch_instances(self):
        pass
        _ = self.minishard_bits_probes
        if hasattr(self, '_m_minishard_bits_probes'):
            pass
            for i in range(len(self._m_minishard_bits_probes)):
                pass
                self._m_minishard_bits_probes[i]._fetch_instances()


        _ = self.minishards
        if hasattr(self, '_m_minishards'):
            pass
            for i in range(len(self._m_minishards)):
                pass
                self._m_minishards[i]._fetch_instances()


        _ = self.shard_index
        if hasattr(self, '_m_shard_index'):
            pass
            self._m_shard_index._fetch_instances()


    class Chunk(KaitaiStruct):
        """One chunk of a raw minishard index, with its data located (root only)."""
        def __init__(self, idx, prev_ofs_data_end, prev_chunk_id_hi, prev_chunk_id_lo, _io, _parent=None, _root=None):
            super(NeuroglancerUint64Sharded.Chunk, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self.idx = idx
            self.prev_ofs_data_end = prev_ofs_data_end
            self.prev_chunk_id_hi = prev_chunk_id_hi
            self.prev_chunk_id_lo = prev_chunk_id_lo
            self._read()

        def _read(self):
            pass


        def _fetch_instances(self):
            pass
            _ = self.chunk_id_delta_hi
            if hasattr(self, '_m_chunk_id_delta_hi'):
                pass

            _ = self.chunk_id_delta_lo
            if hasattr(self, '_m_chunk_id_delta_lo'):
                pass

            _ = self.data
            if hasattr(self, '_m_data'):
                pass


        @property
        def chunk_id_dec(self):
            """The chunk id in decimal, exact: what `shardkit ls` and `shardkit dump` print. The
            Web IDE's JavaScript runtime reads u8 as a double and shows ids above 2**53 rounded,
            so the id is summed here in 32-bit halves and printed from base-10**5 parts that stay
            below 2**53 (2**32 = 42949 * 10**5 + 67296).
            """
            if hasattr(self, '_m_chunk_id_dec'):
                return self._m_chunk_id_dec

            self._m_chunk_id_dec = (str(self.chunk_id_lo) if self.chunk_id_hi == 0 else str(self.chunk_id_hi * 42949 + (self.chunk_id_hi * 67296 + self.chunk_id_lo) // 100000) + str((self.chunk_id_hi * 67296 + self.chunk_id_lo) % 100000 + 100000)[1:6])
            return getattr(self, '_m_chunk_id_dec', None)

        @property
        def chunk_id_delta(self):
            """The chunk id minus the previous chunk's id (the id itself for the first chunk). The
            Web IDE's JavaScript runtime reads u8 as a double, so above 2**53 this shows rounded
            there: chunk_id_delta_hi and chunk_id_delta_lo are its exact halves.
            """
            if hasattr(self, '_m_chunk_id_delta'):
                return self._m_chunk_id_delta

            self._m_chunk_id_delta = self._parent.index.chunk_id_deltas[self.idx]
            return getattr(self, '_m_chunk_id_delta', None)

        @property
        def chunk_id_delta_hi(self):
            """High 32 bits of chunk_id_delta, exact in JavaScript too."""
            if hasattr(self, '_m_chunk_id_delta_hi'):
                return self._m_chunk_id_delta_hi

            io = self._parent.index._io
            _pos = io.pos()
            io.seek(8 * self.idx + 4)
            self._m_chunk_id_delta_hi = io.read_u4le()
            io.seek(_pos)
            return getattr(self, '_m_chunk_id_delta_hi', None)

        @property
        def chunk_id_delta_lo(self):
            """Low 32 bits of chunk_id_delta, exact in JavaScript too."""
            if hasattr(self, '_m_chunk_id_delta_lo'):
                return self._m_chunk_id_delta_lo

            io = self._parent.index._io
            _pos = io.pos()
            io.seek(8 * self.idx)
            self._m_chunk_id_delta_lo = io.read_u4le()
            io.seek(_pos)
            return getattr(self, '_m_chunk_id_delta_lo', None)

        @property
        def chunk_id_hi(self):
            """High 32 bits of the chunk id; the id is chunk_id_hi * 2**32 + chunk_id_lo."""
            if hasattr(self, '_m_chunk_id_hi'):
                return self._m_chunk_id_hi

            self._m_chunk_id_hi = ((self.prev_chunk_id_hi + self.chunk_id_delta_hi) + (self.prev_chunk_id_lo + self.chunk_id_delta_lo) // 4294967296) % 4294967296
            return getattr(self, '_m_chunk_id_hi', None)

        @property
        def chunk_id_lo(self):
            """Low 32 bits of the chunk id (the running sum of the deltas, modulo 2**64)."""
            if hasattr(self, '_m_chunk_id_lo'):
                return self._m_chunk_id_lo

            self._m_chunk_id_lo = (self.prev_chunk_id_lo + self.chunk_id_delta_lo) % 4294967296
            return getattr(self, '_m_chunk_id_lo', None)

        @property
        def data(self):
            """The stored bytes (gzip stream with "data_encoding" gzip)."""
            if hasattr(self, '_m_data'):
                return self._m_data

            io = self._root._io
            _pos = io.pos()
            io.seek(self._root.len_shard_index + self.ofs_data)
            self._m_data = io.read_bytes(self.len_data)
            io.seek(_pos)
            return getattr(self, '_m_data', None)

        @property
        def len_data(self):
            if hasattr(self, '_m_len_data'):
                return self._m_len_data

            self._m_len_data = self._parent.index.len_data[self.idx]
            return getattr(self, '_m_len_data', None)

        @property
        def ofs_data(self):
            """Start of the data, relative to the end of the shard index."""
            if hasattr(self, '_m_ofs_data'):
                return self._m_ofs_data

            self._m_ofs_data = self.prev_ofs_data_end + self._parent.index.ofs_data_deltas[self.idx]
            return getattr(self, '_m_ofs_data', None)

        @property
        def ofs_data_end(self):
            if hasattr(self, '_m_ofs_data_end'):
                return self._m_ofs_data_end

            self._m_ofs_data_end = self.ofs_data + self.len_data
            return getattr(self, '_m_ofs_data_end', None)


    class Minishard(KaitaiStruct):
        """Navigation from a shard index entry to its minishard index and chunks (root only)."""
        def __init__(self, idx, _io, _parent=None, _root=None):
            super(NeuroglancerUint64Sharded.Minishard, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self.idx = idx
            self._read()

        def _read(self):
            pass


        def _fetch_instances(self):
            pass
            _ = self.chunks
            if hasattr(self, '_m_chunks'):
                pass
                for i in range(len(self._m_chunks)):
                    pass
                    self._m_chunks[i]._fetch_instances()


            _ = self.index
            if hasattr(self, '_m_index'):
                pass
                self._m_index._fetch_instances()

            _ = self.raw_index
            if hasattr(self, '_m_raw_index'):
                pass


        @property
        def chunks(self):
            """Each chunk takes the running sums (data end, chunk id) from the one before it."""
            if hasattr(self, '_m_chunks'):
                return self._m_chunks

            if  (((not (self.entry.is_empty))) and ((not (self.is_gzip))) and (self.entry.len_minishard_index % 24 == 0)) :
                pass
                self._m_chunks = []
                for i in range(self.index.num_chunks):
                    self._m_chunks.append(NeuroglancerUint64Sharded.Chunk(i, (0 if i == 0 else self.chunks[i - 1].ofs_data_end), (0 if i == 0 else self.chunks[i - 1].chunk_id_hi), (0 if i == 0 else self.chunks[i - 1].chunk_id_lo), self._io, self, self._root))


            return getattr(self, '_m_chunks', None)

        @property
        def entry(self):
            if hasattr(self, '_m_entry'):
                return self._m_entry

            self._m_entry = self._root.shard_index.entries[self.idx]
            return getattr(self, '_m_entry', None)

        @property
        def index(self):
            if hasattr(self, '_m_index'):
                return self._m_index

            if  (((not (self.entry.is_empty))) and ((not (self.is_gzip))) and (self.entry.len_minishard_index % 24 == 0)) :
                pass
                io = self._root._io
                _pos = io.pos()
                io.seek(self._root.len_shard_index + self.entry.ofs_minishard_index)
                self._raw__m_index = io.read_bytes(self.entry.len_minishard_index)
                _io__raw__m_index = KaitaiStream(BytesIO(self._raw__m_index))
                self._m_index = NeuroglancerUint64Sharded.MinishardIndex(self.entry.len_minishard_index // 24, _io__raw__m_index, self, self._root)
                io.seek(_pos)

            return getattr(self, '_m_index', None)

        @property
        def is_gzip(self):
            if hasattr(self, '_m_is_gzip'):
                return self._m_is_gzip

            self._m_is_gzip =  (((not (self.entry.is_empty))) and (len(self.raw_index) >= 2) and (KaitaiStream.byte_array_index(self.raw_index, 0) == 31) and (KaitaiStream.byte_array_index(self.raw_index, 1) == 139)) 
            return getattr(self, '_m_is_gzip', None)

        @property
        def raw_index(self):
            """The stored minishard index (gzip-compressed with "minishard_index_encoding" gzip)."""
            if hasattr(self, '_m_raw_index'):
                return self._m_raw_index

            if (not (self.entry.is_empty)):
                pass
                io = self._root._io
                _pos = io.pos()
                io.seek(self._root.len_shard_index + self.entry.ofs_minishard_index)
                self._m_raw_index = io.read_bytes(self.entry.len_minishard_index)
                io.seek(_pos)

            return getattr(self, '_m_raw_index', None)


    class MinishardBitsProbe(KaitaiStruct):
        """One candidate value of minishard_bits for the root's inference."""
        def __init__(self, bits, _io, _parent=None, _root=None):
            super(NeuroglancerUint64Sharded.MinishardBitsProbe, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self.bits = bits
            self._read()

        def _read(self):
            pass


        def _fetch_instances(self):
            pass
            _ = self.range_bounds
            if hasattr(self, '_m_range_bounds'):
                pass
                for i in range(len(self._m_range_bounds)):
                    pass



        @property
        def fits(self):
            if hasattr(self, '_m_fits'):
                return self._m_fits

            self._m_fits =  ((16 << self.bits <= self._root._io.size()) and ((16 << self.bits) + max(self.range_bounds) == self._root._io.size())) 
            return getattr(self, '_m_fits', None)

        @property
        def is_last(self):
            """No larger candidate fits in the file (26 keeps 16 << bits within 32 bits)."""
            if hasattr(self, '_m_is_last'):
                return self._m_is_last

            self._m_is_last =  ((16 << self.bits > self._root._io.size()) or (32 << self.bits > self._root._io.size()) or (self.bits >= 26)) 
            return getattr(self, '_m_is_last', None)

        @property
        def range_bounds(self):
            """The 2**bits candidate entries, read as one flat list of starts and ends."""
            if hasattr(self, '_m_range_bounds'):
                return self._m_range_bounds

            if 16 << self.bits <= self._root._io.size():
                pass
                io = self._root._io
                _pos = io.pos()
                io.seek(0)
                self._m_range_bounds = []
                for i in range(2 << self.bits):
                    self._m_range_bounds.append(io.read_u8le())

                io.seek(_pos)

            return getattr(self, '_m_range_bounds', None)


    class MinishardIndex(KaitaiStruct):
        """A decoded ("raw") minishard index: three arrays of num_chunks u8, stored one after the
        other. Chunk i has id sum(chunk_id_deltas[0..i]) and its data starts at
        sum(ofs_data_deltas[0..i]) + sum(len_data[0..i-1]) bytes after the end of the shard
        index, and is len_data[i] bytes long: a delta of 0 means "right after the previous chunk".
        
        .. seealso::
           Source - https://github.com/google/neuroglancer/blob/v2.40.1/src/datasource/precomputed/sharded.md#minishard-index-format
        """
        def __init__(self, num_chunks, _io, _parent=None, _root=None):
            super(NeuroglancerUint64Sharded.MinishardIndex, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self.num_chunks = num_chunks
            self._read()

        def _read(self):
            self.chunk_id_deltas = []
            for i in range(self.num_chunks):
                self.chunk_id_deltas.append(self._io.read_u8le())

            self.ofs_data_deltas = []
            for i in range(self.num_chunks):
                self.ofs_data_deltas.append(self._io.read_u8le())

            self.len_data = []
            for i in range(self.num_chunks):
                self.len_data.append(self._io.read_u8le())



        def _fetch_instances(self):
            pass
            for i in range(len(self.chunk_id_deltas)):
                pass

            for i in range(len(self.ofs_data_deltas)):
                pass

            for i in range(len(self.len_data)):
                pass



    class ShardIndex(KaitaiStruct):
        """The fixed-size table at the start of the file, one entry per minishard.
        
        .. seealso::
           Source - https://github.com/google/neuroglancer/blob/v2.40.1/src/datasource/precomputed/sharded.md#shard-index-format
        """
        def __init__(self, num_minishards, _io, _parent=None, _root=None):
            super(NeuroglancerUint64Sharded.ShardIndex, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self.num_minishards = num_minishards
            self._read()

        def _read(self):
            self.entries = []
            for i in range(self.num_minishards):
                self.entries.append(NeuroglancerUint64Sharded.ShardIndexEntry(self._io, self, self._root))



        def _fetch_instances(self):
            pass
            for i in range(len(self.entries)):
                pass
                self.entries[i]._fetch_instances()



    class ShardIndexEntry(KaitaiStruct):
        """Where one minishard's index lies; [0, 0] for an empty minishard."""
        def __init__(self, _io, _parent=None, _root=None):
            super(NeuroglancerUint64Sharded.ShardIndexEntry, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.ofs_minishard_index = self._io.read_u8le()
            self.ofs_minishard_index_end = self._io.read_u8le()


        def _fetch_instances(self):
            pass

        @property
        def is_empty(self):
            if hasattr(self, '_m_is_empty'):
                return self._m_is_empty

            self._m_is_empty = self.ofs_minishard_index_end == self.ofs_minishard_index
            return getattr(self, '_m_is_empty', None)

        @property
        def len_minishard_index(self):
            if hasattr(self, '_m_len_minishard_index'):
                return self._m_len_minishard_index

            self._m_len_minishard_index = self.ofs_minishard_index_end - self.ofs_minishard_index
            return getattr(self, '_m_len_minishard_index', None)


    @property
    def len_shard_index(self):
        """Size of the shard index; every offset in the file is relative to its end."""
        if hasattr(self, '_m_len_shard_index'):
            return self._m_len_shard_index

        self._m_len_shard_index = self.num_minishards * 16
        return getattr(self, '_m_len_shard_index', None)

    @property
    def minishard_bits(self):
        """Inferred number of minishard bits; -1 when no candidate fits."""
        if hasattr(self, '_m_minishard_bits'):
            return self._m_minishard_bits

        self._m_minishard_bits = (self.minishard_bits_probes[-1].bits if self.minishard_bits_probes[-1].fits else -1)
        return getattr(self, '_m_minishard_bits', None)

    @property
    def minishard_bits_probes(self):
        """Candidates b = 0, 1, ... until one fits the file size (Web IDE only)."""
        if hasattr(self, '_m_minishard_bits_probes'):
            return self._m_minishard_bits_probes

        self._m_minishard_bits_probes = []
        i = 0
        while True:
            _ = NeuroglancerUint64Sharded.MinishardBitsProbe(i, self._io, self, self._root)
            self._m_minishard_bits_probes.append(_)
            if  ((_.fits) or (_.is_last)) :
                break
            i += 1
        return getattr(self, '_m_minishard_bits_probes', None)

    @property
    def minishards(self):
        """Each minishard's index and chunks, following the shard index (Web IDE view)."""
        if hasattr(self, '_m_minishards'):
            return self._m_minishards

        self._m_minishards = []
        for i in range(self.num_minishards):
            self._m_minishards.append(NeuroglancerUint64Sharded.Minishard(i, self._io, self, self._root))

        return getattr(self, '_m_minishards', None)

    @property
    def num_minishards(self):
        if hasattr(self, '_m_num_minishards'):
            return self._m_num_minishards

        self._m_num_minishards = (1 << self.minishard_bits if self.minishard_bits >= 0 else 0)
        return getattr(self, '_m_num_minishards', None)

    @property
    def shard_index(self):
        if hasattr(self, '_m_shard_index'):
            return self._m_shard_index

        if self.minishard_bits >= 0:
            pass
            _pos = self._io.pos()
            self._io.seek(0)
            self._raw__m_shard_index = self._io.read_bytes(self.len_shard_index)
            _io__raw__m_shard_index = KaitaiStream(BytesIO(self._raw__m_shard_index))
            self._m_shard_index = NeuroglancerUint64Sharded.ShardIndex(self.num_minishards, _io__raw__m_shard_index, self, self._root)
            self._io.seek(_pos)

        return getattr(self, '_m_shard_index', None)


