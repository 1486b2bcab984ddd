# This is a generated file! Please edit source .ksy file and use kaitai-struct-compiler to rebuild
# type: ignore

import kaitaistruct
from kaitaistruct import KaitaiStruct, KaitaiStream, BytesIO
from enum import IntEnum


if getattr(kaitaistruct, 'API_VERSION', (0, 9)) < (0, 11):
    raise Exception("Incompatible Kaitai Struct Python API: 0.11 or later is required, but you have %s" % (kaitaistruct.__version__))

class NgAnnotation(KaitaiStruct):
    """One annotation of a Neuroglancer "precomputed" annotation layer
    ("@type": "neuroglancer_annotations_v1"), encoded as every index of the layer stores it:
    its geometry as f4 values, its property values, then zero padding to a multiple of 4 bytes.
    The layer's `info` file, not the record, says what the record holds: the rank (the number of
    "dimensions"), the "annotation_type" and the "properties". The parametrised type `record`
    takes them:
    
    - geometry, by annotation type: POINT, the position (rank f4); LINE and
      AXIS_ALIGNED_BOUNDING_BOX, two positions; ELLIPSOID, the center then the radii; POLYLINE,
      a u4 point count then that many positions.
    - properties, ordered by size, not as `info` lists them: first every 4-byte property
      (uint32, int32, float32) in `info` order, then every 2-byte one (uint16, int16), then every
      1-byte one (uint8, int8, rgb, rgba: rgba is 4 bytes with 1-byte alignment). `property_types`
      is one byte per property in that stored order, with the values of enum `property_type`.
    - padding: 0 to 3 zero bytes, up to a multiple of 4 from the start of the record (every
      record starts at a multiple of 4 in every index, so the position in the stream is used).
    
    The root parses one record with an editable default layout, for the Kaitai Web IDE: set the
    instances `rank`, `kind` and `property_types` to the layer's values. A by-id entry
    (ng_annotation_by_id) and a spatial or relationship cell (ng_annotation_cell) hold records.
    
    .. seealso::
       Source - https://github.com/google/neuroglancer/blob/master/src/datasource/precomputed/annotations.md
    """

    class AnnotationType(IntEnum):
        point = 0
        line = 1
        axis_aligned_bounding_box = 2
        ellipsoid = 3
        polyline = 4

    class PropertyType(IntEnum):
        uint8 = 1
        int8 = 2
        uint16 = 3
        int16 = 4
        uint32 = 5
        int32 = 6
        float32 = 7
        rgb = 8
        rgba = 9
    def __init__(self, _io, _parent=None, _root=None):
        super(NgAnnotation, self).__init__(_io)
        self._parent = _parent
        self._root = _root or self
        self._read()

    def _read(self):
        self.annotation = NgAnnotation.Record(self.rank, self.kind, self.property_types, self._io, self, self._root)


    def _fetch_instances(self):
        pass
        self.annotation._fetch_instances()

    class Position(KaitaiStruct):
        def __init__(self, rank, _io, _parent=None, _root=None):
            super(NgAnnotation.Position, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self.rank = rank
            self._read()

        def _read(self):
            self.coords = []
            for i in range(self.rank):
                self.coords.append(self._io.read_f4le())



        def _fetch_instances(self):
            pass
            for i in range(len(self.coords)):
                pass



    class PropertyValue(KaitaiStruct):
        def __init__(self, kind, _io, _parent=None, _root=None):
            super(NgAnnotation.PropertyValue, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self.kind = kind
            self._read()

        def _read(self):
            _on = self.kind
            if _on == 1:
                pass
                self.value = self._io.read_u1()
            elif _on == 2:
                pass
                self.value = self._io.read_s1()
            elif _on == 3:
                pass
                self.value = self._io.read_u2le()
            elif _on == 4:
                pass
                self.value = self._io.read_s2le()
            elif _on == 5:
                pass
                self.value = self._io.read_u4le()
            elif _on == 6:
                pass
                self.value = self._io.read_s4le()
            elif _on == 7:
                pass
                self.value = self._io.read_f4le()
            elif _on == 8:
                pass
                self.value = NgAnnotation.Rgb(self._io, self, self._root)
            elif _on == 9:
                pass
                self.value = NgAnnotation.Rgba(self._io, self, self._root)


        def _fetch_instances(self):
            pass
            _on = self.kind
            if _on == 1:
                pass
            elif _on == 2:
                pass
            elif _on == 3:
                pass
            elif _on == 4:
                pass
            elif _on == 5:
                pass
            elif _on == 6:
                pass
            elif _on == 7:
                pass
            elif _on == 8:
                pass
                self.value._fetch_instances()
            elif _on == 9:
                pass
                self.value._fetch_instances()


    class Record(KaitaiStruct):
        def __init__(self, rank, kind, property_types, _io, _parent=None, _root=None):
            super(NgAnnotation.Record, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self.rank = rank
            self.kind = kind
            self.property_types = property_types
            self._read()

        def _read(self):
            if self.kind == NgAnnotation.AnnotationType.polyline:
                pass
                self.num_points = self._io.read_u4le()

            self.positions = []
            for i in range((1 if self.kind == NgAnnotation.AnnotationType.point else (self.num_points if self.kind == NgAnnotation.AnnotationType.polyline else 2))):
                self.positions.append(NgAnnotation.Position(self.rank, self._io, self, self._root))

            self.properties = []
            for i in range(len(self.property_types)):
                self.properties.append(NgAnnotation.PropertyValue(KaitaiStream.byte_array_index(self.property_types, i), self._io, self, self._root))

            self.padding = self._io.read_bytes((4 - self._io.pos() % 4) % 4)


        def _fetch_instances(self):
            pass
            if self.kind == NgAnnotation.AnnotationType.polyline:
                pass

            for i in range(len(self.positions)):
                pass
                self.positions[i]._fetch_instances()

            for i in range(len(self.properties)):
                pass
                self.properties[i]._fetch_instances()



    class Rgb(KaitaiStruct):
        def __init__(self, _io, _parent=None, _root=None):
            super(NgAnnotation.Rgb, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.r = self._io.read_u1()
            self.g = self._io.read_u1()
            self.b = self._io.read_u1()


        def _fetch_instances(self):
            pass


    class Rgba(KaitaiStruct):
        def __init__(self, _io, _parent=None, _root=None):
            super(NgAnnotation.Rgba, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.r = self._io.read_u1()
            self.g = self._io.read_u1()
            self.b = self._io.read_u1()
            self.a = self._io.read_u1()


        def _fetch_instances(self):
            pass


    @property
    def kind(self):
        """The layer's annotation_type (edit for the Web IDE)."""
        if hasattr(self, '_m_kind'):
            return self._m_kind

        self._m_kind = NgAnnotation.AnnotationType.point
        return getattr(self, '_m_kind', None)

    @property
    def property_types(self):
        """The property types in stored order (edit for the Web IDE), e.g. [5, 1]."""
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


