# This is a generated file! Please edit source .ksy file and use kaitai-struct-compiler to rebuild
# type: ignore

import kaitaistruct
from kaitaistruct import KaitaiStruct, KaitaiStream, BytesIO


if getattr(kaitaistruct, 'API_VERSION', (0, 9)) < (0, 11):
    raise Exception("Incompatible Kaitai Struct Python API: 0.11 or later is required, but you have %s" % (kaitaistruct.__version__))

class CmphChdPh(KaitaiStruct):
    """A CHD_PH ("compress, hash and displace") minimal perfect hash function as written by
    cmph_dump() of the cmph library (https://cmph.sourceforge.net/). The dump is a raw memory
    image in the writer's native byte order; every producer seen in practice is little-endian
    (x86_64, aarch64).
    
    A key's slot is computed by host code from these fields: the Jenkins hash of the key with
    `hash_state.seed` gives (h0, h1, h2); bucket g = h0 mod num_buckets, f = h1 mod num_keys,
    h = h2 mod (num_keys - 1) + 1; disp = compressed_seq[g]; the slot is
    (f + h * (disp mod num_keys) + disp div num_keys) mod num_keys.
    
    .. seealso::
       chd_ph_dump, chd_ph_search - https://github.com/bonitao/cmph/blob/master/src/chd_ph.c
    
    
    .. seealso::
       compressed_seq_dump - https://github.com/bonitao/cmph/blob/master/src/compressed_seq.c
    
    
    .. seealso::
       select_dump - https://github.com/bonitao/cmph/blob/master/src/select.c
    """
    def __init__(self, _io, _parent=None, _root=None):
        super(CmphChdPh, self).__init__(_io)
        self._parent = _parent
        self._root = _root or self
        self._read()

    def _read(self):
        self.algo_name = (self._io.read_bytes_term(0, False, True, True)).decode(u"ASCII")
        if not self.algo_name == u"chd_ph":
            raise kaitaistruct.ValidationNotEqualError(u"chd_ph", self.algo_name, self._io, u"/seq/0")
        self.num_keys_total = self._io.read_u4le()
        self.len_hash_state = self._io.read_u4le()
        self._raw_hash_state = self._io.read_bytes(self.len_hash_state)
        _io__raw_hash_state = KaitaiStream(BytesIO(self._raw_hash_state))
        self.hash_state = CmphChdPh.HashState(_io__raw_hash_state, self, self._root)
        self.len_compressed_seq = self._io.read_u4le()
        self._raw_compressed_seq = self._io.read_bytes(self.len_compressed_seq)
        _io__raw_compressed_seq = KaitaiStream(BytesIO(self._raw_compressed_seq))
        self.compressed_seq = CmphChdPh.CompressedSeq(_io__raw_compressed_seq, self, self._root)
        self.num_keys = self._io.read_u4le()
        self.num_buckets = self._io.read_u4le()


    def _fetch_instances(self):
        pass
        self.hash_state._fetch_instances()
        self.compressed_seq._fetch_instances()

    class CompressedSeq(KaitaiStruct):
        """A sequence of `num_values` unsigned integers. Value i is stored as its bit length
        (an Elias-Fano-style `select` structure over the lengths) plus its low bits: the
        `rem_r` low bits of each cumulative length go to `length_rems`, the value bits to
        `store_table`.
        
        .. seealso::
           compressed_seq_dump - https://github.com/bonitao/cmph/blob/master/src/compressed_seq.c
        """
        def __init__(self, _io, _parent=None, _root=None):
            super(CmphChdPh.CompressedSeq, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.num_values = self._io.read_u4le()
            self.rem_r = self._io.read_u4le()
            self.total_length = self._io.read_u4le()
            self.len_select = self._io.read_u4le()
            self._raw_select = self._io.read_bytes(self.len_select)
            _io__raw_select = KaitaiStream(BytesIO(self._raw_select))
            self.select = CmphChdPh.Select(_io__raw_select, self, self._root)
            self.length_rems = self._io.read_bytes(((self.num_values * self.rem_r + 31) // 32) * 4)
            self.store_table = self._io.read_bytes(((self.total_length + 31) // 32) * 4)


        def _fetch_instances(self):
            pass
            self.select._fetch_instances()


    class HashState(KaitaiStruct):
        """Dump of a cmph hash_state_t; only Jenkins hashing is used by CHD_PH writers.
        
        .. seealso::
           hash_state_dump - https://github.com/bonitao/cmph/blob/master/src/hash.c
        """
        def __init__(self, _io, _parent=None, _root=None):
            super(CmphChdPh.HashState, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.hash_name = (self._io.read_bytes_term(0, False, True, True)).decode(u"ASCII")
            self.seed = self._io.read_u4le()


        def _fetch_instances(self):
            pass


    class Select(KaitaiStruct):
        """A select structure over a bit vector holding `num_ones` ones and `num_zeros` zeros; the
        table stores the position of every 128th one (NBITS_STEP_SELECT_TABLE = 7).
        
        .. seealso::
           select_dump - https://github.com/bonitao/cmph/blob/master/src/select.c
        """
        def __init__(self, _io, _parent=None, _root=None):
            super(CmphChdPh.Select, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.num_ones = self._io.read_u4le()
            self.num_zeros = self._io.read_u4le()
            self.bits_vec = self._io.read_bytes((((self.num_ones + self.num_zeros) + 31) // 32) * 4)
            self.select_table = self._io.read_bytes((self.num_ones // 128 + 1) * 4)


        def _fetch_instances(self):
            pass



