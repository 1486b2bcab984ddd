# This is a generated file! Please edit source .ksy file and use kaitai-struct-compiler to rebuild
# type: ignore

import kaitaistruct
from kaitaistruct import KaitaiStruct, KaitaiStream, BytesIO
from . import ng_annotation


if getattr(kaitaistruct, 'API_VERSION', (0, 9)) < (0, 11):
    raise Exception("Incompatible Kaitai Struct Python API: 0.11 or later is required, but you have %s" % (kaitaistruct.__version__))

class NgAnnotationById(KaitaiStruct):
    """The value of one annotation id in the `by_id` index of a Neuroglancer "precomputed"
    annotation layer (a file named by the decimal id unsharded, the id itself as the key
    sharded): the annotation's record (ng_annotation: geometry, properties, padding), then,
    for each relationship the `info` file lists, in its order, a u4 count and that many related
    object ids (u8). Only this index holds the full relationship lists; the id is not stored.
    
    The record layout and the number of relationships come from the `info` file: the root uses
    the editable defaults below (set `rank`, `kind`, `property_types` and
    `num_relationships` for the Web IDE); host code parses `entry` with its own layout.
    
    .. seealso::
       Source - https://github.com/google/neuroglancer/blob/master/src/datasource/precomputed/annotations.md
    """
    def __init__(self, _io, _parent=None, _root=None):
        super(NgAnnotationById, self).__init__(_io)
        self._parent = _parent
        self._root = _root or self
        self._read()

    def _read(self):
        self.body = NgAnnotationById.Entry(self.rank, self.kind, self.property_types, self.num_relationships, self._io, self, self._root)


    def _fetch_instances(self):
        pass
        self.body._fetch_instances()

    class Entry(KaitaiStruct):
        def __init__(self, rank, kind, property_types, num_relationships, _io, _parent=None, _root=None):
            super(NgAnnotationById.Entry, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self.rank = rank
            self.kind = kind
            self.property_types = property_types
            self.num_relationships = num_relationships
            self._read()

        def _read(self):
            self.annotation = ng_annotation.NgAnnotation.Record(self.rank, self.kind, self.property_types, self._io)
            self.relationships = []
            for i in range(self.num_relationships):
                self.relationships.append(NgAnnotationById.RelatedIds(self._io, self, self._root))



        def _fetch_instances(self):
            pass
            self.annotation._fetch_instances()
            for i in range(len(self.relationships)):
                pass
                self.relationships[i]._fetch_instances()



    class RelatedIds(KaitaiStruct):
        def __init__(self, _io, _parent=None, _root=None):
            super(NgAnnotationById.RelatedIds, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.count = self._io.read_u4le()
            self.ids = []
            for i in range(self.count):
                self.ids.append(self._io.read_u8le())



        def _fetch_instances(self):
            pass
            for i in range(len(self.ids)):
                pass



    @property
    def kind(self):
        """The layer's annotation_type (edit for the Web IDE)."""
        if hasattr(self, '_m_kind'):
            return self._m_kind

        self._m_kind = ng_annotation.NgAnnotation.AnnotationType.point
        return getattr(self, '_m_kind', None)

    @property
    def num_relationships(self):
        """How many relationships the `info` file lists (edit for the Web IDE)."""
        if hasattr(self, '_m_num_relationships'):
            return self._m_num_relationships

        self._m_num_relationships = 0
        return getattr(self, '_m_num_relationships', None)

    @property
    def property_types(self):
        """The property types in stored order (edit for the Web IDE), see ng_annotation."""
        if hasattr(self, '_m_property_types'):
            return self._m_property_types

        self._m_property_types = b""
        return getattr(self, '_m_property_types', None)

    @property
    def rank(self):
        """The number of dimensions of the layer (edit for the Web IDE)."""
        if hasattr(self, '_m_rank'):
            return self._m_rank

        self._m_rank = 3
        return getattr(self, '_m_rank', None)


