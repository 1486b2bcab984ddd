# This is a generated file! Please edit source .ksy file and use kaitai-struct-compiler to rebuild
# type: ignore

import kaitaistruct
from kaitaistruct import KaitaiStruct, KaitaiStream, BytesIO


if getattr(kaitaistruct, 'API_VERSION', (0, 9)) < (0, 11):
    raise Exception("Incompatible Kaitai Struct Python API: 0.11 or later is required, but you have %s" % (kaitaistruct.__version__))

class NgMeshManifest(KaitaiStruct):
    """The manifest of one object of a Neuroglancer "precomputed" multi-resolution mesh layer
    ("@type": "neuroglancer_multilod_draco"): the index of the Draco-encoded fragments that
    make up the object's levels of detail. Unsharded, it is the file `<segment id>.index` and
    the fragments are the file `<segment id>`; sharded, it is the value stored under the
    segment id and the fragments lie in the shard immediately before it, so the fragment data
    begins at (manifest start - sum of all fragment sizes). Written by igneous, zmesh users,
    cloud-volume and Neuroglancer's Python tools.
    
    A header gives the octree geometry (chunk_shape and grid_origin, three f4 each, in the
    layer's coordinates before its `transform`), the number of levels of detail, the scale of
    each level and its vertex offset. Then, for each level, its fragments: positions in the
    level's grid (three arrays of u4: every x, then every y, then every z) and their sizes in
    bytes (u4), in the order the fragment data is stored (level 0 first). Sizes may be 0: such
    a fragment only marks that the octree node exists.
    
    Every array is a byte range of the exact size its count gives (so a count larger than the
    file fails at once, before anything is allocated), read value by value by its type.
    
    .. seealso::
       Source - https://github.com/google/neuroglancer/blob/v2.40.1/src/datasource/precomputed/meshes.md
    """
    def __init__(self, _io, _parent=None, _root=None):
        super(NgMeshManifest, self).__init__(_io)
        self._parent = _parent
        self._root = _root or self
        self._read()

    def _read(self):
        self.chunk_shape = NgMeshManifest.Vec3f(self._io, self, self._root)
        self.grid_origin = NgMeshManifest.Vec3f(self._io, self, self._root)
        self.num_lods = self._io.read_u4le()
        self._raw_lod_scales = self._io.read_bytes(self.num_lods * 4)
        _io__raw_lod_scales = KaitaiStream(BytesIO(self._raw_lod_scales))
        self.lod_scales = NgMeshManifest.F4Array(self.num_lods, _io__raw_lod_scales, self, self._root)
        self._raw_vertex_offsets = self._io.read_bytes(self.num_lods * 12)
        _io__raw_vertex_offsets = KaitaiStream(BytesIO(self._raw_vertex_offsets))
        self.vertex_offsets = NgMeshManifest.Vec3fArray(self.num_lods, _io__raw_vertex_offsets, self, self._root)
        self._raw_num_fragments_per_lod = self._io.read_bytes(self.num_lods * 4)
        _io__raw_num_fragments_per_lod = KaitaiStream(BytesIO(self._raw_num_fragments_per_lod))
        self.num_fragments_per_lod = NgMeshManifest.U4Array(self.num_lods, _io__raw_num_fragments_per_lod, self, self._root)
        self.lods = []
        for i in range(self.num_lods):
            self.lods.append(NgMeshManifest.Lod(self.num_fragments_per_lod.values[i], self._io, self, self._root))



    def _fetch_instances(self):
        pass
        self.chunk_shape._fetch_instances()
        self.grid_origin._fetch_instances()
        self.lod_scales._fetch_instances()
        self.vertex_offsets._fetch_instances()
        self.num_fragments_per_lod._fetch_instances()
        for i in range(len(self.lods)):
            pass
            self.lods[i]._fetch_instances()


    class F4Array(KaitaiStruct):
        def __init__(self, num_values, _io, _parent=None, _root=None):
            super(NgMeshManifest.F4Array, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self.num_values = num_values
            self._read()

        def _read(self):
            self.values = []
            for i in range(self.num_values):
                self.values.append(self._io.read_f4le())



        def _fetch_instances(self):
            pass
            for i in range(len(self.values)):
                pass



    class FragmentPositions(KaitaiStruct):
        def __init__(self, num_fragments, _io, _parent=None, _root=None):
            super(NgMeshManifest.FragmentPositions, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self.num_fragments = num_fragments
            self._read()

        def _read(self):
            self.x = []
            for i in range(self.num_fragments):
                self.x.append(self._io.read_u4le())

            self.y = []
            for i in range(self.num_fragments):
                self.y.append(self._io.read_u4le())

            self.z = []
            for i in range(self.num_fragments):
                self.z.append(self._io.read_u4le())



        def _fetch_instances(self):
            pass
            for i in range(len(self.x)):
                pass

            for i in range(len(self.y)):
                pass

            for i in range(len(self.z)):
                pass



    class Lod(KaitaiStruct):
        def __init__(self, num_fragments, _io, _parent=None, _root=None):
            super(NgMeshManifest.Lod, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self.num_fragments = num_fragments
            self._read()

        def _read(self):
            self._raw_fragment_positions = self._io.read_bytes(self.num_fragments * 12)
            _io__raw_fragment_positions = KaitaiStream(BytesIO(self._raw_fragment_positions))
            self.fragment_positions = NgMeshManifest.FragmentPositions(self.num_fragments, _io__raw_fragment_positions, self, self._root)
            self._raw_fragment_sizes = self._io.read_bytes(self.num_fragments * 4)
            _io__raw_fragment_sizes = KaitaiStream(BytesIO(self._raw_fragment_sizes))
            self.fragment_sizes = NgMeshManifest.U4Array(self.num_fragments, _io__raw_fragment_sizes, self, self._root)


        def _fetch_instances(self):
            pass
            self.fragment_positions._fetch_instances()
            self.fragment_sizes._fetch_instances()


    class U4Array(KaitaiStruct):
        def __init__(self, num_values, _io, _parent=None, _root=None):
            super(NgMeshManifest.U4Array, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self.num_values = num_values
            self._read()

        def _read(self):
            self.values = []
            for i in range(self.num_values):
                self.values.append(self._io.read_u4le())



        def _fetch_instances(self):
            pass
            for i in range(len(self.values)):
                pass



    class Vec3f(KaitaiStruct):
        def __init__(self, _io, _parent=None, _root=None):
            super(NgMeshManifest.Vec3f, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.x = self._io.read_f4le()
            self.y = self._io.read_f4le()
            self.z = self._io.read_f4le()


        def _fetch_instances(self):
            pass


    class Vec3fArray(KaitaiStruct):
        def __init__(self, num_values, _io, _parent=None, _root=None):
            super(NgMeshManifest.Vec3fArray, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self.num_values = num_values
            self._read()

        def _read(self):
            self.values = []
            for i in range(self.num_values):
                self.values.append(NgMeshManifest.Vec3f(self._io, self, self._root))



        def _fetch_instances(self):
            pass
            for i in range(len(self.values)):
                pass
                self.values[i]._fetch_instances()




