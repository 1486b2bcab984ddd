# This is a generated file! Please edit source .ksy file and use kaitai-struct-compiler to rebuild
# type: ignore

import kaitaistruct
from kaitaistruct import KaitaiStruct, KaitaiStream, BytesIO
from . import ph_fmph_go
from . import ebml_vint
from enum import IntEnum


if getattr(kaitaistruct, 'API_VERSION', (0, 9)) < (0, 11):
    raise Exception("Incompatible Kaitai Struct Python API: 0.11 or later is required, but you have %s" % (kaitaistruct.__version__))

class Mosaic(KaitaiStruct):
    """MOSAIC (MOdular Storage of Archived and Indexed Contents), the object store written by
    swh-mosaic for Software Heritage's winery pools: an EBML document (RFC 8794, the container of
    Matroska) of DocType `mosaic`.
    
    Every element is an ID (a VINT with its marker kept), a size (a VINT) and that many bytes of
    data. Master elements hold elements; the others hold an unsigned big-endian integer (0 to 8
    bytes), a string or bytes. A file is two top-level elements: the EBML header (ID 0x1A45DFA3)
    and the `mosaic` root (0x1C535748) whose size VINT is always 8 bytes long. The root holds, in
    order:
    
    * `container_meta_data` (0x1D535748): a CRC-32 element, then the object count
      (`objects_counter`), their uncompressed total size, `end_of_tiles_offset` (each written on
      8 bytes), `compression_method` (`none`, `zstd`, `zstd.dict`), the dictionary
      (`compression_data`) for `zstd.dict`, and any number of `comment`s;
    * `tile`s (0x1E535748): a CRC-32 element then `object`s (0xF0), each one object's bytes as
      stored (zstd frames when compressed);
    * one `index` (0x1F535748) per key kind: a CRC-32 element, `idx_description` (which key, which
      map), `idx_unrolled`, `idx_unrolled_entry_size`, `map_container` (a CRC-32 element and
      `map`, a serialized FMPH-GO function of the `ph` crate (`ph_fmph_go.ksy`) mapping a key to
      its rank in `idx_unrolled`) and, when a key has several objects, `conflicts`.
    
    `idx_unrolled` is a run of fixed-size entries, `key` (0xA0) then `offset` (0xA1, the absolute
    offset of the `object` element's ID), in the map's rank order. A key of several objects has
    `go_to_conflicts` (0xA2, empty) and a `void` instead of its `offset`, and its offsets are
    listed under `conflicts`. Deleting an object (swh-mosaic's MosaicUpdater) overwrites its
    `object` and its index entries, in place, with `void` elements (0xEC) of the same length.
    
    A CRC-32 element (0xBF) is the first child of its master: the CRC-32 (IEEE, as zlib computes
    it), little-endian, of every byte of the master's data after the CRC-32 element. The
    semantic layer checks it. Unknown IDs
    are kept as raw bytes. A size VINT of all ones, RFC 8794's "unknown size", is the number it
    spells: swh-mosaic writes `ff` for an object of 127 bytes and reads it back as 127.
    
    .. seealso::
       swh-mosaic 0.6.1 schema.ebml.xml (swh.mosaic.EBML_SCHEMA)
    
    
    .. seealso::
       swh-mosaic 0.6.1 lib/src/ebml.rs, lib/src/creator.rs, lib/src/updater.rs
    
    
    .. seealso::
       Source - https://www.rfc-editor.org/rfc/rfc8794.html
    """

    class ElementId(IntEnum):
        key = 160
        offset = 161
        go_to_conflicts = 162
        crc32 = 191
        void = 236
        object = 240
        doc_type = 17026
        doc_type_read_version = 17029
        ebml_version = 17030
        doc_type_version = 17031
        ebml_max_id_length = 17138
        ebml_max_size_length = 17139
        ebml_read_version = 17143
        objects_counter = 20480
        objects_total_size = 20481
        compression_method = 20482
        compression_data = 20483
        comment = 20484
        end_of_tiles_offset = 20633
        idx_description = 24577
        idx_unrolled = 24578
        idx_unrolled_entry_size = 24579
        map_container = 24580
        map = 24581
        conflicts = 24592
        conflict = 24593
        conflicting_key = 24594
        conflicting_offset = 24595
        ebml = 440786851
        mosaic = 475223880
        container_meta_data = 492001096
        tile = 508778312
        index = 525555528
    def __init__(self, _io, _parent=None, _root=None):
        super(Mosaic, self).__init__(_io)
        self._parent = _parent
        self._root = _root or self
        self._read()

    def _read(self):
        self.elements = []
        i = 0
        while not self._io.is_eof():
            self.elements.append(Mosaic.Element(self._io, self, self._root))
            i += 1



    def _fetch_instances(self):
        pass
        for i in range(len(self.elements)):
            pass
            self.elements[i]._fetch_instances()


    class Crc32(KaitaiStruct):
        """EBML CRC-32 element data: the CRC-32 of the rest of the parent's data (from the byte after
        this element to the parent's end), little-endian.
        
        .. seealso::
           Source - https://www.rfc-editor.org/rfc/rfc8794.html#section-11.3.1
        """
        def __init__(self, _io, _parent=None, _root=None):
            super(Mosaic.Crc32, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.value = self._io.read_u4le()


        def _fetch_instances(self):
            pass


    class Element(KaitaiStruct):
        """One EBML element, its data typed by its ID.
        
        .. seealso::
           Source - https://www.rfc-editor.org/rfc/rfc8794.html#section-6
        """
        def __init__(self, _io, _parent=None, _root=None):
            super(Mosaic.Element, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.id_vint = ebml_vint.EbmlVint(self._io)
            self.len_data = ebml_vint.EbmlVint(self._io)
            _on = self.id
            if _on == Mosaic.ElementId.comment:
                pass
                self._raw_data = self._io.read_bytes(self.len_data.value)
                _io__raw_data = KaitaiStream(BytesIO(self._raw_data))
                self.data = Mosaic.Text(_io__raw_data, self, self._root)
            elif _on == Mosaic.ElementId.compression_method:
                pass
                self._raw_data = self._io.read_bytes(self.len_data.value)
                _io__raw_data = KaitaiStream(BytesIO(self._raw_data))
                self.data = Mosaic.Text(_io__raw_data, self, self._root)
            elif _on == Mosaic.ElementId.conflict:
                pass
                self._raw_data = self._io.read_bytes(self.len_data.value)
                _io__raw_data = KaitaiStream(BytesIO(self._raw_data))
                self.data = Mosaic.Elements(_io__raw_data, self, self._root)
            elif _on == Mosaic.ElementId.conflicting_offset:
                pass
                self._raw_data = self._io.read_bytes(self.len_data.value)
                _io__raw_data = KaitaiStream(BytesIO(self._raw_data))
                self.data = Mosaic.Uint(_io__raw_data, self, self._root)
            elif _on == Mosaic.ElementId.conflicts:
                pass
                self._raw_data = self._io.read_bytes(self.len_data.value)
                _io__raw_data = KaitaiStream(BytesIO(self._raw_data))
                self.data = Mosaic.Elements(_io__raw_data, self, self._root)
            elif _on == Mosaic.ElementId.container_meta_data:
                pass
                self._raw_data = self._io.read_bytes(self.len_data.value)
                _io__raw_data = KaitaiStream(BytesIO(self._raw_data))
                self.data = Mosaic.Elements(_io__raw_data, self, self._root)
            elif _on == Mosaic.ElementId.crc32:
                pass
                self._raw_data = self._io.read_bytes(self.len_data.value)
                _io__raw_data = KaitaiStream(BytesIO(self._raw_data))
                self.data = Mosaic.Crc32(_io__raw_data, self, self._root)
            elif _on == Mosaic.ElementId.doc_type:
                pass
                self._raw_data = self._io.read_bytes(self.len_data.value)
                _io__raw_data = KaitaiStream(BytesIO(self._raw_data))
                self.data = Mosaic.Text(_io__raw_data, self, self._root)
            elif _on == Mosaic.ElementId.doc_type_read_version:
                pass
                self._raw_data = self._io.read_bytes(self.len_data.value)
                _io__raw_data = KaitaiStream(BytesIO(self._raw_data))
                self.data = Mosaic.Uint(_io__raw_data, self, self._root)
            elif _on == Mosaic.ElementId.doc_type_version:
                pass
                self._raw_data = self._io.read_bytes(self.len_data.value)
                _io__raw_data = KaitaiStream(BytesIO(self._raw_data))
                self.data = Mosaic.Uint(_io__raw_data, self, self._root)
            elif _on == Mosaic.ElementId.ebml:
                pass
                self._raw_data = self._io.read_bytes(self.len_data.value)
                _io__raw_data = KaitaiStream(BytesIO(self._raw_data))
                self.data = Mosaic.Elements(_io__raw_data, self, self._root)
            elif _on == Mosaic.ElementId.ebml_max_id_length:
                pass
                self._raw_data = self._io.read_bytes(self.len_data.value)
                _io__raw_data = KaitaiStream(BytesIO(self._raw_data))
                self.data = Mosaic.Uint(_io__raw_data, self, self._root)
            elif _on == Mosaic.ElementId.ebml_max_size_length:
                pass
                self._raw_data = self._io.read_bytes(self.len_data.value)
                _io__raw_data = KaitaiStream(BytesIO(self._raw_data))
                self.data = Mosaic.Uint(_io__raw_data, self, self._root)
            elif _on == Mosaic.ElementId.ebml_read_version:
                pass
                self._raw_data = self._io.read_bytes(self.len_data.value)
                _io__raw_data = KaitaiStream(BytesIO(self._raw_data))
                self.data = Mosaic.Uint(_io__raw_data, self, self._root)
            elif _on == Mosaic.ElementId.ebml_version:
                pass
                self._raw_data = self._io.read_bytes(self.len_data.value)
                _io__raw_data = KaitaiStream(BytesIO(self._raw_data))
                self.data = Mosaic.Uint(_io__raw_data, self, self._root)
            elif _on == Mosaic.ElementId.end_of_tiles_offset:
                pass
                self._raw_data = self._io.read_bytes(self.len_data.value)
                _io__raw_data = KaitaiStream(BytesIO(self._raw_data))
                self.data = Mosaic.Uint(_io__raw_data, self, self._root)
            elif _on == Mosaic.ElementId.idx_description:
                pass
                self._raw_data = self._io.read_bytes(self.len_data.value)
                _io__raw_data = KaitaiStream(BytesIO(self._raw_data))
                self.data = Mosaic.Text(_io__raw_data, self, self._root)
            elif _on == Mosaic.ElementId.idx_unrolled:
                pass
                self._raw_data = self._io.read_bytes(self.len_data.value)
                _io__raw_data = KaitaiStream(BytesIO(self._raw_data))
                self.data = Mosaic.Elements(_io__raw_data, self, self._root)
            elif _on == Mosaic.ElementId.idx_unrolled_entry_size:
                pass
                self._raw_data = self._io.read_bytes(self.len_data.value)
                _io__raw_data = KaitaiStream(BytesIO(self._raw_data))
                self.data = Mosaic.Uint(_io__raw_data, self, self._root)
            elif _on == Mosaic.ElementId.index:
                pass
                self._raw_data = self._io.read_bytes(self.len_data.value)
                _io__raw_data = KaitaiStream(BytesIO(self._raw_data))
                self.data = Mosaic.Elements(_io__raw_data, self, self._root)
            elif _on == Mosaic.ElementId.map:
                pass
                self._raw_data = self._io.read_bytes(self.len_data.value)
                _io__raw_data = KaitaiStream(BytesIO(self._raw_data))
                self.data = ph_fmph_go.PhFmphGo(_io__raw_data)
            elif _on == Mosaic.ElementId.map_container:
                pass
                self._raw_data = self._io.read_bytes(self.len_data.value)
                _io__raw_data = KaitaiStream(BytesIO(self._raw_data))
                self.data = Mosaic.Elements(_io__raw_data, self, self._root)
            elif _on == Mosaic.ElementId.mosaic:
                pass
                self._raw_data = self._io.read_bytes(self.len_data.value)
                _io__raw_data = KaitaiStream(BytesIO(self._raw_data))
                self.data = Mosaic.Elements(_io__raw_data, self, self._root)
            elif _on == Mosaic.ElementId.objects_counter:
                pass
                self._raw_data = self._io.read_bytes(self.len_data.value)
                _io__raw_data = KaitaiStream(BytesIO(self._raw_data))
                self.data = Mosaic.Uint(_io__raw_data, self, self._root)
            elif _on == Mosaic.ElementId.objects_total_size:
                pass
                self._raw_data = self._io.read_bytes(self.len_data.value)
                _io__raw_data = KaitaiStream(BytesIO(self._raw_data))
                self.data = Mosaic.Uint(_io__raw_data, self, self._root)
            elif _on == Mosaic.ElementId.offset:
                pass
                self._raw_data = self._io.read_bytes(self.len_data.value)
                _io__raw_data = KaitaiStream(BytesIO(self._raw_data))
                self.data = Mosaic.Uint(_io__raw_data, self, self._root)
            elif _on == Mosaic.ElementId.tile:
                pass
                self._raw_data = self._io.read_bytes(self.len_data.value)
                _io__raw_data = KaitaiStream(BytesIO(self._raw_data))
                self.data = Mosaic.Elements(_io__raw_data, self, self._root)
            else:
                pass
                self.data = self._io.read_bytes(self.len_data.value)


        def _fetch_instances(self):
            pass
            self.id_vint._fetch_instances()
            self.len_data._fetch_instances()
            _on = self.id
            if _on == Mosaic.ElementId.comment:
                pass
                self.data._fetch_instances()
            elif _on == Mosaic.ElementId.compression_method:
                pass
                self.data._fetch_instances()
            elif _on == Mosaic.ElementId.conflict:
                pass
                self.data._fetch_instances()
            elif _on == Mosaic.ElementId.conflicting_offset:
                pass
                self.data._fetch_instances()
            elif _on == Mosaic.ElementId.conflicts:
                pass
                self.data._fetch_instances()
            elif _on == Mosaic.ElementId.container_meta_data:
                pass
                self.data._fetch_instances()
            elif _on == Mosaic.ElementId.crc32:
                pass
                self.data._fetch_instances()
            elif _on == Mosaic.ElementId.doc_type:
                pass
                self.data._fetch_instances()
            elif _on == Mosaic.ElementId.doc_type_read_version:
                pass
                self.data._fetch_instances()
            elif _on == Mosaic.ElementId.doc_type_version:
                pass
                self.data._fetch_instances()
            elif _on == Mosaic.ElementId.ebml:
                pass
                self.data._fetch_instances()
            elif _on == Mosaic.ElementId.ebml_max_id_length:
                pass
                self.data._fetch_instances()
            elif _on == Mosaic.ElementId.ebml_max_size_length:
                pass
                self.data._fetch_instances()
            elif _on == Mosaic.ElementId.ebml_read_version:
                pass
                self.data._fetch_instances()
            elif _on == Mosaic.ElementId.ebml_version:
                pass
                self.data._fetch_instances()
            elif _on == Mosaic.ElementId.end_of_tiles_offset:
                pass
                self.data._fetch_instances()
            elif _on == Mosaic.ElementId.idx_description:
                pass
                self.data._fetch_instances()
            elif _on == Mosaic.ElementId.idx_unrolled:
                pass
                self.data._fetch_instances()
            elif _on == Mosaic.ElementId.idx_unrolled_entry_size:
                pass
                self.data._fetch_instances()
            elif _on == Mosaic.ElementId.index:
                pass
                self.data._fetch_instances()
            elif _on == Mosaic.ElementId.map:
                pass
                self.data._fetch_instances()
            elif _on == Mosaic.ElementId.map_container:
                pass
                self.data._fetch_instances()
            elif _on == Mosaic.ElementId.mosaic:
                pass
                self.data._fetch_instances()
            elif _on == Mosaic.ElementId.objects_counter:
                pass
                self.data._fetch_instances()
            elif _on == Mosaic.ElementId.objects_total_size:
                pass
                self.data._fetch_instances()
            elif _on == Mosaic.ElementId.offset:
                pass
                self.data._fetch_instances()
            elif _on == Mosaic.ElementId.tile:
                pass
                self.data._fetch_instances()
            else:
                pass

        @property
        def id(self):
            """The element ID."""
            if hasattr(self, '_m_id'):
                return self._m_id

            self._m_id = KaitaiStream.resolve_enum(Mosaic.ElementId, self.id_vint.raw_value)
            return getattr(self, '_m_id', None)

        @property
        def ofs_data(self):
            """Offset of `data` from the element's first byte."""
            if hasattr(self, '_m_ofs_data'):
                return self._m_ofs_data

            self._m_ofs_data = self.id_vint.len_bytes + self.len_data.len_bytes
            return getattr(self, '_m_ofs_data', None)


    class Elements(KaitaiStruct):
        """The children of a master element, up to the end of its data."""
        def __init__(self, _io, _parent=None, _root=None):
            super(Mosaic.Elements, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.elements = []
            i = 0
            while not self._io.is_eof():
                self.elements.append(Mosaic.Element(self._io, self, self._root))
                i += 1



        def _fetch_instances(self):
            pass
            for i in range(len(self.elements)):
                pass
                self.elements[i]._fetch_instances()



    class Text(KaitaiStruct):
        """An EBML String or UTF-8 element."""
        def __init__(self, _io, _parent=None, _root=None):
            super(Mosaic.Text, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.value = (self._io.read_bytes_full()).decode(u"UTF-8")


        def _fetch_instances(self):
            pass


    class Uint(KaitaiStruct):
        """An EBML unsigned integer, big-endian, 0 to 8 bytes (0 bytes is the value 0)."""
        def __init__(self, _io, _parent=None, _root=None):
            super(Mosaic.Uint, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.bytes = self._io.read_bytes_full()


        def _fetch_instances(self):
            pass

        @property
        def len_bytes(self):
            if hasattr(self, '_m_len_bytes'):
                return self._m_len_bytes

            self._m_len_bytes = len(self.bytes)
            return getattr(self, '_m_len_bytes', None)

        @property
        def value(self):
            """The integer (exact up to 2**53 in JavaScript)."""
            if hasattr(self, '_m_value'):
                return self._m_value

            self._m_value = (((((((KaitaiStream.byte_array_index(self.bytes, self.len_bytes - 1) if self.len_bytes >= 1 else 0) + (KaitaiStream.byte_array_index(self.bytes, self.len_bytes - 2) * 256 if self.len_bytes >= 2 else 0)) + (KaitaiStream.byte_array_index(self.bytes, self.len_bytes - 3) * 65536 if self.len_bytes >= 3 else 0)) + (KaitaiStream.byte_array_index(self.bytes, self.len_bytes - 4) * 16777216 if self.len_bytes >= 4 else 0)) + (KaitaiStream.byte_array_index(self.bytes, self.len_bytes - 5) * 4294967296 if self.len_bytes >= 5 else 0)) + (KaitaiStream.byte_array_index(self.bytes, self.len_bytes - 6) * 1099511627776 if self.len_bytes >= 6 else 0)) + (KaitaiStream.byte_array_index(self.bytes, self.len_bytes - 7) * 281474976710656 if self.len_bytes >= 7 else 0)) + (KaitaiStream.byte_array_index(self.bytes, self.len_bytes - 8) * 72057594037927936 if self.len_bytes >= 8 else 0)
            return getattr(self, '_m_value', None)



