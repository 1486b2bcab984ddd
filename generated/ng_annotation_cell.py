# This is a generated file! Please edit source .ksy file and use kaitai-struct-compiler to rebuild
# type: ignore

import kaitaistruct
from kaitaistruct import KaitaiStruct, KaitaiStream, BytesIO
from . import ng_annotation


if getattr(kaitaistruct, 'API_VERSION', (0, 9)) < (0, 11):
    raise Exception("Incompatible Kaitai Struct Python API: 0.11 or later is required, but you have %s" % (kaitaistruct.__version__))

class NgAnnotationCell(KaitaiStruct):
    """A list of annotations of a Neuroglancer "precomputed" annotation layer, in the "multiple
    annotation encoding": the value of one cell of a spatial index level (a file named
    `x_y_z` unsharded, the compressed Morton code of the cell sharded), and the value of one
    object id in a relationship index. A u8 count, then `count` records (ng_annotation: geometry,
    properties, padding; relationships are not repeated here), then the `count` annotation ids
    (u8 each) in the same order. Neuroglancer refuses a count of 2**32 or more.
    
    The record layout comes from the layer's `info` file (rank, annotation_type, properties):
    the root uses the editable default of ng_annotation (set the instances `rank`, `kind` and
    `property_types` of this file for the Web IDE); host code parses `annotations` with its
    own layout.
    
    .. seealso::
       Source - https://github.com/google/neuroglancer/blob/master/src/datasource/precomputed/annotations.md
    """
    def __init__(self, _io, _parent=None, _root=None):
        super(NgAnnotationCell, self).__init__(_io)
        self._parent = _parent
        self._root = _root or self
        self._read()

    def _read(self):
        self.body = NgAnnotationCell.Cell(self.rank, self.kind, self.property_types, self._io, self, self._root)


    def _fetch_instances(self):
        pass
        self.body._fetch_instances()

    class Cell(KaitaiStruct):
        def __init__(self, rank, kind, property_types, _io, _parent=None, _root=None):
            super(NgAnnotationCell.Cell, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self.rank = rank
            self.kind = kind
            self.property_types = property_types
            self._read()

        def _read(self):
            self.count = self._io.read_u8le()
            self.annotations = []
            for i in range(self.count):
                self.annotations.append(ng_annotation.NgAnnotation.Record(self.rank, self.kind, self.property_types, self._io))

            self.ids = []
            for i in range(self.count):
                self.ids.append(self._io.read_u8le())



        def _fetch_instances(self):
            pass
            for i in range(len(self.annotations)):
                pass
                self.annotations[i]._fetch_instances()

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


