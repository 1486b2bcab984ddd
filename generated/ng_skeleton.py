# This is a generated file! Please edit source .ksy file and use kaitai-struct-compiler to rebuild
# type: ignore

import kaitaistruct
from kaitaistruct import KaitaiStruct, KaitaiStream, BytesIO


if getattr(kaitaistruct, 'API_VERSION', (0, 9)) < (0, 11):
    raise Exception("Incompatible Kaitai Struct Python API: 0.11 or later is required, but you have %s" % (kaitaistruct.__version__))

class NgSkeleton(KaitaiStruct):
    """One skeleton of a Neuroglancer "precomputed" skeleton layer: the value stored under a
    segment id, in its own file (unsharded) or in a shard (sharded). Written by cloud-volume,
    kimimaro, igneous, tensorstore users and Neuroglancer's own Python writers.
    
    The vertex count and edge count come first, then every vertex position (three f4: x, y, z,
    in the layer's coordinates after its `transform`), then every edge (two u4 vertex indices).
    What follows are the vertex attributes the layer's `info` file lists under
    "vertex_attributes", in that order: for attribute k, num_vertices x num_components[k]
    little-endian values of data_type[k] (float32, int8, uint8, int16, uint16, int32 or
    uint32). The file itself does not say which attributes it holds, so the root keeps them as
    bytes (`vertex_attributes`) and host code (src/shardkit/ng/payloads.py) reads them one after
    the other with the parametrised type vertex_attribute(num_vertices, num_components,
    bytes_per_value), taking the list from the `info`.
    
    The seq keeps positions and edges as byte ranges of the exact size (so a count larger than
    the file fails at once, before anything is allocated); the instances `vertices` and
    `edge_list` show them value by value in the Web IDE.
    
    .. seealso::
       Source - https://github.com/google/neuroglancer/blob/v2.40.1/src/datasource/precomputed/skeletons.md
    """
    def __init__(self, _io, _parent=None, _root=None):
        super(NgSkeleton, self).__init__(_io)
        self._parent = _parent
        self._root = _root or self
        self._read()

    def _read(self):
        self.num_vertices = self._io.read_u4le()
        self.num_edges = self._io.read_u4le()
        self.vertex_positions = self._io.read_bytes(self.num_vertices * 12)
        self.edges = self._io.read_bytes(self.num_edges * 8)
        self.vertex_attributes = self._io.read_bytes_full()


    def _fetch_instances(self):
        pass
        _ = self.edge_list
        if hasattr(self, '_m_edge_list'):
            pass
            for i in range(len(self._m_edge_list)):
                pass
                self._m_edge_list[i]._fetch_instances()


        _ = self.vertices
        if hasattr(self, '_m_vertices'):
            pass
            for i in range(len(self._m_vertices)):
                pass
                self._m_vertices[i]._fetch_instances()



    class Edge(KaitaiStruct):
        def __init__(self, _io, _parent=None, _root=None):
            super(NgSkeleton.Edge, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.vertex_a = self._io.read_u4le()
            self.vertex_b = self._io.read_u4le()


        def _fetch_instances(self):
            pass


    class Vertex(KaitaiStruct):
        def __init__(self, _io, _parent=None, _root=None):
            super(NgSkeleton.Vertex, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.x = self._io.read_f4le()
            self.y = self._io.read_f4le()
            self.z = self._io.read_f4le()


        def _fetch_instances(self):
            pass


    class VertexAttribute(KaitaiStruct):
        """One vertex attribute: num_vertices x num_components values of bytes_per_value bytes
        each (the data_type comes from the `info` file).
        """
        def __init__(self, num_vertices, num_components, bytes_per_value, _io, _parent=None, _root=None):
            super(NgSkeleton.VertexAttribute, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self.num_vertices = num_vertices
            self.num_components = num_components
            self.bytes_per_value = bytes_per_value
            self._read()

        def _read(self):
            self.values = self._io.read_bytes((self.num_vertices * self.num_components) * self.bytes_per_value)


        def _fetch_instances(self):
            pass


    @property
    def edge_list(self):
        if hasattr(self, '_m_edge_list'):
            return self._m_edge_list

        _pos = self._io.pos()
        self._io.seek(8 + self.num_vertices * 12)
        self._m_edge_list = []
        for i in range(self.num_edges):
            self._m_edge_list.append(NgSkeleton.Edge(self._io, self, self._root))

        self._io.seek(_pos)
        return getattr(self, '_m_edge_list', None)

    @property
    def vertices(self):
        if hasattr(self, '_m_vertices'):
            return self._m_vertices

        _pos = self._io.pos()
        self._io.seek(8)
        self._m_vertices = []
        for i in range(self.num_vertices):
            self._m_vertices.append(NgSkeleton.Vertex(self._io, self, self._root))

        self._io.seek(_pos)
        return getattr(self, '_m_vertices', None)


