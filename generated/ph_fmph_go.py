# This is a generated file! Please edit source .ksy file and use kaitai-struct-compiler to rebuild
# type: ignore

import kaitaistruct
from kaitaistruct import KaitaiStruct, KaitaiStream, BytesIO


if getattr(kaitaistruct, 'API_VERSION', (0, 9)) < (0, 11):
    raise Exception("Incompatible Kaitai Struct Python API: 0.11 or later is required, but you have %s" % (kaitaistruct.__version__))

class PhFmphGo(KaitaiStruct):
    """A fingerprinting-based minimal perfect hash function with group optimization (FMPH-GO,
    `ph::fmph::GOFunction` of the `ph` crate 0.10.0) in its default configuration (16-bit groups,
    4-bit seeds), as `GOFunction::write` serializes it. MOSAIC files (swh-mosaic) store one in
    the `Map` element of each index; it maps a key to its rank in the index's `IdxUnrolled`.
    
    The function has levels; level l has `level_sizes[l]` groups of 16 bits. The bits of all
    levels follow each other in `array` (a level's bits start on a 64-bit word boundary when the
    crate builds it, as a level has 4 * ceil(keys / 64) groups), and each group has a 4-bit seed
    in `group_seeds`. The value of a key, computed by host code: for l = 0, 1, ...,
    h = SipHash-1-3 with the zero key (Rust's std DefaultHasher) of u64le(l) || u64le(key
    length) || key; g = (groups before level l) + floor(h * level_sizes[l] / 2**64); s = seed of
    group g; bit b = 16 * g + (mix32((h mod 2**32) xor s) mod 16), where mix32(x) is x ^= x >> 16;
    x *= 0x21f0aaad; x ^= x >> 15; x *= 0xd35a2d97; x ^= x >> 15 (32-bit arithmetic). If bit b is
    set, the value is the number of set bits before b (its rank); if no level sets it, the key is
    not in the set. The number of keys is the number of set bits of `array`. The rank directory
    the crate uses is rebuilt on load and is not stored.
    
    .. seealso::
       GOFunction::write, read_with_hasher, get_stats - https://docs.rs/crate/ph/0.10.0/source/src/fmph/gofunction.rs
    
    
    .. seealso::
       group_nr, GroupSize::in_group_index - https://docs.rs/crate/ph/0.10.0/source/src/fmph/goindexing.rs
    
    
    .. seealso::
       TwoToPowerBitsStatic (write_seed_vec) - https://docs.rs/crate/ph/0.10.0/source/src/seeds.rs
    
    
    .. seealso::
       VByte, AsIs - https://docs.rs/crate/binout/0.3.1/source/src/lib.rs
    
    
    .. seealso::
       P. Beling, Fingerprinting-based minimal perfect hashing revisited - https://doi.org/10.1145/3596453
    """
    def __init__(self, _io, _parent=None, _root=None):
        super(PhFmphGo, self).__init__(_io)
        self._parent = _parent
        self._root = _root or self
        self._read()

    def _read(self):
        self.bits_per_group = self._io.read_u1()
        if not self.bits_per_group == 16:
            raise kaitaistruct.ValidationNotEqualError(16, self.bits_per_group, self._io, u"/seq/0")
        self.num_levels = PhFmphGo.Vbyte(self._io, self, self._root)
        self.level_sizes = []
        for i in range(self.num_levels.value):
            self.level_sizes.append(PhFmphGo.Level(i, self._io, self, self._root))

        self.array = self._io.read_bytes(((self.num_groups * 16 + 63) // 64) * 8)
        self.bits_per_seed = self._io.read_u1()
        if not self.bits_per_seed == 4:
            raise kaitaistruct.ValidationNotEqualError(4, self.bits_per_seed, self._io, u"/seq/4")
        self.group_seeds = self._io.read_bytes(((self.num_groups * 4 + 63) // 64) * 8)


    def _fetch_instances(self):
        pass
        self.num_levels._fetch_instances()
        for i in range(len(self.level_sizes)):
            pass
            self.level_sizes[i]._fetch_instances()


    class Level(KaitaiStruct):
        """The size of one level and where its groups lie among all groups.
        
        .. seealso::
           GOFunction::write - https://docs.rs/crate/ph/0.10.0/source/src/fmph/gofunction.rs
        """
        def __init__(self, idx, _io, _parent=None, _root=None):
            super(PhFmphGo.Level, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self.idx = idx
            self._read()

        def _read(self):
            self.size = PhFmphGo.Vbyte(self._io, self, self._root)


        def _fetch_instances(self):
            pass
            self.size._fetch_instances()

        @property
        def groups_before(self):
            """Groups of the levels before this one (its first global group number)."""
            if hasattr(self, '_m_groups_before'):
                return self._m_groups_before

            self._m_groups_before = (0 if self.idx == 0 else self._parent.level_sizes[self.idx - 1].groups_end)
            return getattr(self, '_m_groups_before', None)

        @property
        def groups_end(self):
            """Groups of this level and the levels before it."""
            if hasattr(self, '_m_groups_end'):
                return self._m_groups_end

            self._m_groups_end = self.groups_before + self.size.value
            return getattr(self, '_m_groups_end', None)


    class Vbyte(KaitaiStruct):
        """binout's VByte (an unsigned LEB128 variant): 7 value bits a byte, least significant
        first, bit 7 set when another byte follows; after 8 such bytes a 9th byte is read whole
        (8 value bits), so a u64 takes at most 9 bytes. The reader accepts non-minimal encodings.
        
        .. seealso::
           vbyte_read - https://docs.rs/crate/binout/0.3.1/source/src/lib.rs
        """
        def __init__(self, _io, _parent=None, _root=None):
            super(PhFmphGo.Vbyte, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.groups = []
            i = 0
            while True:
                _ = self._io.read_u1()
                self.groups.append(_)
                if  ((_ < 128) or (i == 7)) :
                    break
                i += 1
            if  ((len(self.groups) == 8) and (self.groups[7] >= 128)) :
                pass
                self.last = self._io.read_u1()



        def _fetch_instances(self):
            pass
            for i in range(len(self.groups)):
                pass

            if  ((len(self.groups) == 8) and (self.groups[7] >= 128)) :
                pass


        @property
        def value(self):
            """The decoded value (computed with multiplications, so the JavaScript parsers stay
            exact up to 2**53).
            """
            if hasattr(self, '_m_value'):
                return self._m_value

            self._m_value = ((((((((self.groups[0] & 127) + ((self.groups[1] & 127) * 128 if len(self.groups) >= 2 else 0)) + ((self.groups[2] & 127) * 16384 if len(self.groups) >= 3 else 0)) + ((self.groups[3] & 127) * 2097152 if len(self.groups) >= 4 else 0)) + ((self.groups[4] & 127) * 268435456 if len(self.groups) >= 5 else 0)) + ((self.groups[5] & 127) * 34359738368 if len(self.groups) >= 6 else 0)) + ((self.groups[6] & 127) * 4398046511104 if len(self.groups) >= 7 else 0)) + ((self.groups[7] & 127) * 562949953421312 if len(self.groups) >= 8 else 0)) + (self.last * 72057594037927936 if  ((len(self.groups) == 8) and (self.groups[7] >= 128))  else 0)
            return getattr(self, '_m_value', None)


    @property
    def num_groups(self):
        """Total number of groups of all levels."""
        if hasattr(self, '_m_num_groups'):
            return self._m_num_groups

        self._m_num_groups = (0 if self.num_levels.value == 0 else self.level_sizes[-1].groups_end)
        return getattr(self, '_m_num_groups', None)


