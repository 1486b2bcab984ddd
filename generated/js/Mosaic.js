// This is a generated file! Please edit source .ksy file and use kaitai-struct-compiler to rebuild

(function (root, factory) {
  if (typeof define === 'function' && define.amd) {
    define(['exports', 'kaitai-struct/KaitaiStream', './PhFmphGo', './EbmlVint'], factory);
  } else if (typeof exports === 'object' && exports !== null && typeof exports.nodeType !== 'number') {
    factory(exports, require('kaitai-struct/KaitaiStream'), require('./PhFmphGo'), require('./EbmlVint'));
  } else {
    factory(root.Mosaic || (root.Mosaic = {}), root.KaitaiStream, root.PhFmphGo || (root.PhFmphGo = {}), root.EbmlVint || (root.EbmlVint = {}));
  }
})(typeof self !== 'undefined' ? self : this, function (Mosaic_, KaitaiStream, PhFmphGo_, EbmlVint_) {
/**
 * MOSAIC (MOdular Storage of Archived and Indexed Contents), the object store written by
 * swh-mosaic for Software Heritage's winery pools: an EBML document (RFC 8794, the container of
 * Matroska) of DocType `mosaic`.
 * 
 * Every element is an ID (a VINT with its marker kept), a size (a VINT) and that many bytes of
 * data. Master elements hold elements; the others hold an unsigned big-endian integer (0 to 8
 * bytes), a string or bytes. A file is two top-level elements: the EBML header (ID 0x1A45DFA3)
 * and the `mosaic` root (0x1C535748) whose size VINT is always 8 bytes long. The root holds, in
 * order:
 * 
 * * `container_meta_data` (0x1D535748): a CRC-32 element, then the object count
 *   (`objects_counter`), their uncompressed total size, `end_of_tiles_offset` (each written on
 *   8 bytes), `compression_method` (`none`, `zstd`, `zstd.dict`), the dictionary
 *   (`compression_data`) for `zstd.dict`, and any number of `comment`s;
 * * `tile`s (0x1E535748): a CRC-32 element then `object`s (0xF0), each one object's bytes as
 *   stored (zstd frames when compressed);
 * * one `index` (0x1F535748) per key kind: a CRC-32 element, `idx_description` (which key, which
 *   map), `idx_unrolled`, `idx_unrolled_entry_size`, `map_container` (a CRC-32 element and
 *   `map`, a serialized FMPH-GO function of the `ph` crate (`ph_fmph_go.ksy`) mapping a key to
 *   its rank in `idx_unrolled`) and, when a key has several objects, `conflicts`.
 * 
 * `idx_unrolled` is a run of fixed-size entries, `key` (0xA0) then `offset` (0xA1, the absolute
 * offset of the `object` element's ID), in the map's rank order. A key of several objects has
 * `go_to_conflicts` (0xA2, empty) and a `void` instead of its `offset`, and its offsets are
 * listed under `conflicts`. Deleting an object (swh-mosaic's MosaicUpdater) overwrites its
 * `object` and its index entries, in place, with `void` elements (0xEC) of the same length.
 * 
 * A CRC-32 element (0xBF) is the first child of its master: the CRC-32 (IEEE, as zlib computes
 * it), little-endian, of every byte of the master's data after the CRC-32 element. The
 * semantic layer checks it. Unknown IDs
 * are kept as raw bytes. A size VINT of all ones, RFC 8794's "unknown size", is the number it
 * spells: swh-mosaic writes `ff` for an object of 127 bytes and reads it back as 127.
 * @see swh-mosaic 0.6.1 schema.ebml.xml (swh.mosaic.EBML_SCHEMA)
 * @see swh-mosaic 0.6.1 lib/src/ebml.rs, lib/src/creator.rs, lib/src/updater.rs
 * @see {@link https://www.rfc-editor.org/rfc/rfc8794.html|Source}
 */

var Mosaic = (function() {
  Mosaic.ElementId = Object.freeze({
    KEY: 160,
    OFFSET: 161,
    GO_TO_CONFLICTS: 162,
    CRC32: 191,
    VOID: 236,
    OBJECT: 240,
    DOC_TYPE: 17026,
    DOC_TYPE_READ_VERSION: 17029,
    EBML_VERSION: 17030,
    DOC_TYPE_VERSION: 17031,
    EBML_MAX_ID_LENGTH: 17138,
    EBML_MAX_SIZE_LENGTH: 17139,
    EBML_READ_VERSION: 17143,
    OBJECTS_COUNTER: 20480,
    OBJECTS_TOTAL_SIZE: 20481,
    COMPRESSION_METHOD: 20482,
    COMPRESSION_DATA: 20483,
    COMMENT: 20484,
    END_OF_TILES_OFFSET: 20633,
    IDX_DESCRIPTION: 24577,
    IDX_UNROLLED: 24578,
    IDX_UNROLLED_ENTRY_SIZE: 24579,
    MAP_CONTAINER: 24580,
    MAP: 24581,
    CONFLICTS: 24592,
    CONFLICT: 24593,
    CONFLICTING_KEY: 24594,
    CONFLICTING_OFFSET: 24595,
    EBML: 440786851,
    MOSAIC: 475223880,
    CONTAINER_META_DATA: 492001096,
    TILE: 508778312,
    INDEX: 525555528,

    160: "KEY",
    161: "OFFSET",
    162: "GO_TO_CONFLICTS",
    191: "CRC32",
    236: "VOID",
    240: "OBJECT",
    17026: "DOC_TYPE",
    17029: "DOC_TYPE_READ_VERSION",
    17030: "EBML_VERSION",
    17031: "DOC_TYPE_VERSION",
    17138: "EBML_MAX_ID_LENGTH",
    17139: "EBML_MAX_SIZE_LENGTH",
    17143: "EBML_READ_VERSION",
    20480: "OBJECTS_COUNTER",
    20481: "OBJECTS_TOTAL_SIZE",
    20482: "COMPRESSION_METHOD",
    20483: "COMPRESSION_DATA",
    20484: "COMMENT",
    20633: "END_OF_TILES_OFFSET",
    24577: "IDX_DESCRIPTION",
    24578: "IDX_UNROLLED",
    24579: "IDX_UNROLLED_ENTRY_SIZE",
    24580: "MAP_CONTAINER",
    24581: "MAP",
    24592: "CONFLICTS",
    24593: "CONFLICT",
    24594: "CONFLICTING_KEY",
    24595: "CONFLICTING_OFFSET",
    440786851: "EBML",
    475223880: "MOSAIC",
    492001096: "CONTAINER_META_DATA",
    508778312: "TILE",
    525555528: "INDEX",
  });

  function Mosaic(_io, _parent, _root) {
    this._io = _io;
    this._parent = _parent;
    this._root = _root || this;

    this._read();
  }
  Mosaic.prototype._read = function() {
    this.elements = [];
    var i = 0;
    while (!this._io.isEof()) {
      this.elements.push(new Element(this._io, this, this._root));
      i++;
    }
  }

  /**
   * EBML CRC-32 element data: the CRC-32 of the rest of the parent's data (from the byte after
   * this element to the parent's end), little-endian.
   * @see {@link https://www.rfc-editor.org/rfc/rfc8794.html#section-11.3.1|Source}
   */

  var Crc32 = Mosaic.Crc32 = (function() {
    function Crc32(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    Crc32.prototype._read = function() {
      this.value = this._io.readU4le();
    }

    return Crc32;
  })();

  /**
   * One EBML element, its data typed by its ID.
   * @see {@link https://www.rfc-editor.org/rfc/rfc8794.html#section-6|Source}
   */

  var Element = Mosaic.Element = (function() {
    function Element(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    Element.prototype._read = function() {
      this.idVint = new EbmlVint_.EbmlVint(this._io, null, null);
      this.lenData = new EbmlVint_.EbmlVint(this._io, null, null);
      switch (this.id) {
      case Mosaic.ElementId.COMMENT:
        this._raw_data = this._io.readBytes(this.lenData.value);
        var _io__raw_data = new KaitaiStream(this._raw_data);
        this.data = new Text(_io__raw_data, this, this._root);
        break;
      case Mosaic.ElementId.COMPRESSION_METHOD:
        this._raw_data = this._io.readBytes(this.lenData.value);
        var _io__raw_data = new KaitaiStream(this._raw_data);
        this.data = new Text(_io__raw_data, this, this._root);
        break;
      case Mosaic.ElementId.CONFLICT:
        this._raw_data = this._io.readBytes(this.lenData.value);
        var _io__raw_data = new KaitaiStream(this._raw_data);
        this.data = new Elements(_io__raw_data, this, this._root);
        break;
      case Mosaic.ElementId.CONFLICTING_OFFSET:
        this._raw_data = this._io.readBytes(this.lenData.value);
        var _io__raw_data = new KaitaiStream(this._raw_data);
        this.data = new Uint(_io__raw_data, this, this._root);
        break;
      case Mosaic.ElementId.CONFLICTS:
        this._raw_data = this._io.readBytes(this.lenData.value);
        var _io__raw_data = new KaitaiStream(this._raw_data);
        this.data = new Elements(_io__raw_data, this, this._root);
        break;
      case Mosaic.ElementId.CONTAINER_META_DATA:
        this._raw_data = this._io.readBytes(this.lenData.value);
        var _io__raw_data = new KaitaiStream(this._raw_data);
        this.data = new Elements(_io__raw_data, this, this._root);
        break;
      case Mosaic.ElementId.CRC32:
        this._raw_data = this._io.readBytes(this.lenData.value);
        var _io__raw_data = new KaitaiStream(this._raw_data);
        this.data = new Crc32(_io__raw_data, this, this._root);
        break;
      case Mosaic.ElementId.DOC_TYPE:
        this._raw_data = this._io.readBytes(this.lenData.value);
        var _io__raw_data = new KaitaiStream(this._raw_data);
        this.data = new Text(_io__raw_data, this, this._root);
        break;
      case Mosaic.ElementId.DOC_TYPE_READ_VERSION:
        this._raw_data = this._io.readBytes(this.lenData.value);
        var _io__raw_data = new KaitaiStream(this._raw_data);
        this.data = new Uint(_io__raw_data, this, this._root);
        break;
      case Mosaic.ElementId.DOC_TYPE_VERSION:
        this._raw_data = this._io.readBytes(this.lenData.value);
        var _io__raw_data = new KaitaiStream(this._raw_data);
        this.data = new Uint(_io__raw_data, this, this._root);
        break;
      case Mosaic.ElementId.EBML:
        this._raw_data = this._io.readBytes(this.lenData.value);
        var _io__raw_data = new KaitaiStream(this._raw_data);
        this.data = new Elements(_io__raw_data, this, this._root);
        break;
      case Mosaic.ElementId.EBML_MAX_ID_LENGTH:
        this._raw_data = this._io.readBytes(this.lenData.value);
        var _io__raw_data = new KaitaiStream(this._raw_data);
        this.data = new Uint(_io__raw_data, this, this._root);
        break;
      case Mosaic.ElementId.EBML_MAX_SIZE_LENGTH:
        this._raw_data = this._io.readBytes(this.lenData.value);
        var _io__raw_data = new KaitaiStream(this._raw_data);
        this.data = new Uint(_io__raw_data, this, this._root);
        break;
      case Mosaic.ElementId.EBML_READ_VERSION:
        this._raw_data = this._io.readBytes(this.lenData.value);
        var _io__raw_data = new KaitaiStream(this._raw_data);
        this.data = new Uint(_io__raw_data, this, this._root);
        break;
      case Mosaic.ElementId.EBML_VERSION:
        this._raw_data = this._io.readBytes(this.lenData.value);
        var _io__raw_data = new KaitaiStream(this._raw_data);
        this.data = new Uint(_io__raw_data, this, this._root);
        break;
      case Mosaic.ElementId.END_OF_TILES_OFFSET:
        this._raw_data = this._io.readBytes(this.lenData.value);
        var _io__raw_data = new KaitaiStream(this._raw_data);
        this.data = new Uint(_io__raw_data, this, this._root);
        break;
      case Mosaic.ElementId.IDX_DESCRIPTION:
        this._raw_data = this._io.readBytes(this.lenData.value);
        var _io__raw_data = new KaitaiStream(this._raw_data);
        this.data = new Text(_io__raw_data, this, this._root);
        break;
      case Mosaic.ElementId.IDX_UNROLLED:
        this._raw_data = this._io.readBytes(this.lenData.value);
        var _io__raw_data = new KaitaiStream(this._raw_data);
        this.data = new Elements(_io__raw_data, this, this._root);
        break;
      case Mosaic.ElementId.IDX_UNROLLED_ENTRY_SIZE:
        this._raw_data = this._io.readBytes(this.lenData.value);
        var _io__raw_data = new KaitaiStream(this._raw_data);
        this.data = new Uint(_io__raw_data, this, this._root);
        break;
      case Mosaic.ElementId.INDEX:
        this._raw_data = this._io.readBytes(this.lenData.value);
        var _io__raw_data = new KaitaiStream(this._raw_data);
        this.data = new Elements(_io__raw_data, this, this._root);
        break;
      case Mosaic.ElementId.MAP:
        this._raw_data = this._io.readBytes(this.lenData.value);
        var _io__raw_data = new KaitaiStream(this._raw_data);
        this.data = new PhFmphGo_.PhFmphGo(_io__raw_data, null, null);
        break;
      case Mosaic.ElementId.MAP_CONTAINER:
        this._raw_data = this._io.readBytes(this.lenData.value);
        var _io__raw_data = new KaitaiStream(this._raw_data);
        this.data = new Elements(_io__raw_data, this, this._root);
        break;
      case Mosaic.ElementId.MOSAIC:
        this._raw_data = this._io.readBytes(this.lenData.value);
        var _io__raw_data = new KaitaiStream(this._raw_data);
        this.data = new Elements(_io__raw_data, this, this._root);
        break;
      case Mosaic.ElementId.OBJECTS_COUNTER:
        this._raw_data = this._io.readBytes(this.lenData.value);
        var _io__raw_data = new KaitaiStream(this._raw_data);
        this.data = new Uint(_io__raw_data, this, this._root);
        break;
      case Mosaic.ElementId.OBJECTS_TOTAL_SIZE:
        this._raw_data = this._io.readBytes(this.lenData.value);
        var _io__raw_data = new KaitaiStream(this._raw_data);
        this.data = new Uint(_io__raw_data, this, this._root);
        break;
      case Mosaic.ElementId.OFFSET:
        this._raw_data = this._io.readBytes(this.lenData.value);
        var _io__raw_data = new KaitaiStream(this._raw_data);
        this.data = new Uint(_io__raw_data, this, this._root);
        break;
      case Mosaic.ElementId.TILE:
        this._raw_data = this._io.readBytes(this.lenData.value);
        var _io__raw_data = new KaitaiStream(this._raw_data);
        this.data = new Elements(_io__raw_data, this, this._root);
        break;
      default:
        this.data = this._io.readBytes(this.lenData.value);
        break;
      }
    }

    /**
     * The element ID.
     */
    Object.defineProperty(Element.prototype, 'id', {
      get: function() {
        if (this._m_id !== undefined)
          return this._m_id;
        this._m_id = this.idVint.rawValue;
        return this._m_id;
      }
    });

    /**
     * Offset of `data` from the element's first byte.
     */
    Object.defineProperty(Element.prototype, 'ofsData', {
      get: function() {
        if (this._m_ofsData !== undefined)
          return this._m_ofsData;
        this._m_ofsData = this.idVint.lenBytes + this.lenData.lenBytes;
        return this._m_ofsData;
      }
    });

    /**
     * The element ID, marker kept (1 to 4 bytes in MOSAIC).
     */

    /**
     * Size of `data` in bytes.
     */

    /**
     * The element's data: child elements, an integer, a string, the FMPH-GO function of a
     * `map`, or raw bytes (`object`, `key`, `compression_data`, `conflicting_key`, `void`,
     * unknown IDs).
     */

    return Element;
  })();

  /**
   * The children of a master element, up to the end of its data.
   */

  var Elements = Mosaic.Elements = (function() {
    function Elements(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    Elements.prototype._read = function() {
      this.elements = [];
      var i = 0;
      while (!this._io.isEof()) {
        this.elements.push(new Element(this._io, this, this._root));
        i++;
      }
    }

    return Elements;
  })();

  /**
   * An EBML String or UTF-8 element.
   */

  var Text = Mosaic.Text = (function() {
    function Text(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    Text.prototype._read = function() {
      this.value = KaitaiStream.bytesToStr(this._io.readBytesFull(), "UTF-8");
    }

    return Text;
  })();

  /**
   * An EBML unsigned integer, big-endian, 0 to 8 bytes (0 bytes is the value 0).
   */

  var Uint = Mosaic.Uint = (function() {
    function Uint(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    Uint.prototype._read = function() {
      this.bytes = this._io.readBytesFull();
    }
    Object.defineProperty(Uint.prototype, 'lenBytes', {
      get: function() {
        if (this._m_lenBytes !== undefined)
          return this._m_lenBytes;
        this._m_lenBytes = this.bytes.length;
        return this._m_lenBytes;
      }
    });

    /**
     * The integer (exact up to 2**53 in JavaScript).
     */
    Object.defineProperty(Uint.prototype, 'value', {
      get: function() {
        if (this._m_value !== undefined)
          return this._m_value;
        this._m_value = (((((((this.lenBytes >= 1 ? this.bytes[this.lenBytes - 1] : 0) + (this.lenBytes >= 2 ? this.bytes[this.lenBytes - 2] * 256 : 0)) + (this.lenBytes >= 3 ? this.bytes[this.lenBytes - 3] * 65536 : 0)) + (this.lenBytes >= 4 ? this.bytes[this.lenBytes - 4] * 16777216 : 0)) + (this.lenBytes >= 5 ? this.bytes[this.lenBytes - 5] * 4294967296 : 0)) + (this.lenBytes >= 6 ? this.bytes[this.lenBytes - 6] * 1099511627776 : 0)) + (this.lenBytes >= 7 ? this.bytes[this.lenBytes - 7] * 281474976710656 : 0)) + (this.lenBytes >= 8 ? this.bytes[this.lenBytes - 8] * 72057594037927936 : 0);
        return this._m_value;
      }
    });

    return Uint;
  })();

  /**
   * The EBML header, then the `mosaic` root element.
   */

  return Mosaic;
})();
Mosaic_.Mosaic = Mosaic;
});
