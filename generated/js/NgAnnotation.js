// This is a generated file! Please edit source .ksy file and use kaitai-struct-compiler to rebuild

(function (root, factory) {
  if (typeof define === 'function' && define.amd) {
    define(['exports', 'kaitai-struct/KaitaiStream'], factory);
  } else if (typeof exports === 'object' && exports !== null && typeof exports.nodeType !== 'number') {
    factory(exports, require('kaitai-struct/KaitaiStream'));
  } else {
    factory(root.NgAnnotation || (root.NgAnnotation = {}), root.KaitaiStream);
  }
})(typeof self !== 'undefined' ? self : this, function (NgAnnotation_, KaitaiStream) {
/**
 * One annotation of a Neuroglancer "precomputed" annotation layer
 * ("@type": "neuroglancer_annotations_v1"), encoded as every index of the layer stores it:
 * its geometry as f4 values, its property values, then zero padding to a multiple of 4 bytes.
 * The layer's `info` file, not the record, says what the record holds: the rank (the number of
 * "dimensions"), the "annotation_type" and the "properties". The parametrised type `record`
 * takes them:
 * 
 * - geometry, by annotation type: POINT, the position (rank f4); LINE and
 *   AXIS_ALIGNED_BOUNDING_BOX, two positions; ELLIPSOID, the center then the radii; POLYLINE,
 *   a u4 point count then that many positions.
 * - properties, ordered by size, not as `info` lists them: first every 4-byte property
 *   (uint32, int32, float32) in `info` order, then every 2-byte one (uint16, int16), then every
 *   1-byte one (uint8, int8, rgb, rgba: rgba is 4 bytes with 1-byte alignment). `property_types`
 *   is one byte per property in that stored order, with the values of enum `property_type`.
 * - padding: 0 to 3 zero bytes, up to a multiple of 4 from the start of the record (every
 *   record starts at a multiple of 4 in every index, so the position in the stream is used).
 * 
 * The root parses one record with an editable default layout, for the Kaitai Web IDE: set the
 * instances `rank`, `kind` and `property_types` to the layer's values. A by-id entry
 * (ng_annotation_by_id) and a spatial or relationship cell (ng_annotation_cell) hold records.
 * @see {@link https://github.com/google/neuroglancer/blob/master/src/datasource/precomputed/annotations.md|Source}
 */

var NgAnnotation = (function() {
  NgAnnotation.AnnotationType = Object.freeze({
    POINT: 0,
    LINE: 1,
    AXIS_ALIGNED_BOUNDING_BOX: 2,
    ELLIPSOID: 3,
    POLYLINE: 4,

    0: "POINT",
    1: "LINE",
    2: "AXIS_ALIGNED_BOUNDING_BOX",
    3: "ELLIPSOID",
    4: "POLYLINE",
  });

  NgAnnotation.PropertyType = Object.freeze({
    UINT8: 1,
    INT8: 2,
    UINT16: 3,
    INT16: 4,
    UINT32: 5,
    INT32: 6,
    FLOAT32: 7,
    RGB: 8,
    RGBA: 9,

    1: "UINT8",
    2: "INT8",
    3: "UINT16",
    4: "INT16",
    5: "UINT32",
    6: "INT32",
    7: "FLOAT32",
    8: "RGB",
    9: "RGBA",
  });

  function NgAnnotation(_io, _parent, _root) {
    this._io = _io;
    this._parent = _parent;
    this._root = _root || this;

    this._read();
  }
  NgAnnotation.prototype._read = function() {
    this.annotation = new Record(this._io, this, this._root, this.rank, this.kind, this.propertyTypes);
  }

  var Position = NgAnnotation.Position = (function() {
    function Position(_io, _parent, _root, rank) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;
      this.rank = rank;

      this._read();
    }
    Position.prototype._read = function() {
      this.coords = [];
      for (var i = 0; i < this.rank; i++) {
        this.coords.push(this._io.readF4le());
      }
    }

    return Position;
  })();

  var PropertyValue = NgAnnotation.PropertyValue = (function() {
    function PropertyValue(_io, _parent, _root, kind) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;
      this.kind = kind;

      this._read();
    }
    PropertyValue.prototype._read = function() {
      switch (this.kind) {
      case 1:
        this.value = this._io.readU1();
        break;
      case 2:
        this.value = this._io.readS1();
        break;
      case 3:
        this.value = this._io.readU2le();
        break;
      case 4:
        this.value = this._io.readS2le();
        break;
      case 5:
        this.value = this._io.readU4le();
        break;
      case 6:
        this.value = this._io.readS4le();
        break;
      case 7:
        this.value = this._io.readF4le();
        break;
      case 8:
        this.value = new Rgb(this._io, this, this._root);
        break;
      case 9:
        this.value = new Rgba(this._io, this, this._root);
        break;
      }
    }

    /**
     * A value of enum property_type.
     */

    return PropertyValue;
  })();

  var Record = NgAnnotation.Record = (function() {
    function Record(_io, _parent, _root, rank, kind, propertyTypes) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;
      this.rank = rank;
      this.kind = kind;
      this.propertyTypes = propertyTypes;

      this._read();
    }
    Record.prototype._read = function() {
      if (this.kind == NgAnnotation.AnnotationType.POLYLINE) {
        this.numPoints = this._io.readU4le();
      }
      this.positions = [];
      for (var i = 0; i < (this.kind == NgAnnotation.AnnotationType.POINT ? 1 : (this.kind == NgAnnotation.AnnotationType.POLYLINE ? this.numPoints : 2)); i++) {
        this.positions.push(new Position(this._io, this, this._root, this.rank));
      }
      this.properties = [];
      for (var i = 0; i < this.propertyTypes.length; i++) {
        this.properties.push(new PropertyValue(this._io, this, this._root, this.propertyTypes[i]));
      }
      this.padding = this._io.readBytes(KaitaiStream.mod(4 - KaitaiStream.mod(this._io.pos, 4), 4));
    }

    /**
     * POLYLINE only: how many positions follow.
     */

    /**
     * POINT: the point; LINE, AXIS_ALIGNED_BOUNDING_BOX: the two corners or end points;
     * ELLIPSOID: the center, then the radii; POLYLINE: every point.
     */

    return Record;
  })();

  var Rgb = NgAnnotation.Rgb = (function() {
    function Rgb(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    Rgb.prototype._read = function() {
      this.r = this._io.readU1();
      this.g = this._io.readU1();
      this.b = this._io.readU1();
    }

    return Rgb;
  })();

  var Rgba = NgAnnotation.Rgba = (function() {
    function Rgba(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    Rgba.prototype._read = function() {
      this.r = this._io.readU1();
      this.g = this._io.readU1();
      this.b = this._io.readU1();
      this.a = this._io.readU1();
    }

    return Rgba;
  })();

  /**
   * The layer's annotation_type (edit for the Web IDE).
   */
  Object.defineProperty(NgAnnotation.prototype, 'kind', {
    get: function() {
      if (this._m_kind !== undefined)
        return this._m_kind;
      this._m_kind = NgAnnotation.AnnotationType.POINT;
      return this._m_kind;
    }
  });

  /**
   * The property types in stored order (edit for the Web IDE), e.g. [5, 1].
   */
  Object.defineProperty(NgAnnotation.prototype, 'propertyTypes', {
    get: function() {
      if (this._m_propertyTypes !== undefined)
        return this._m_propertyTypes;
      this._m_propertyTypes = new Uint8Array([]);
      return this._m_propertyTypes;
    }
  });

  /**
   * The number of dimensions of the layer (edit for the Web IDE).
   */
  Object.defineProperty(NgAnnotation.prototype, 'rank', {
    get: function() {
      if (this._m_rank !== undefined)
        return this._m_rank;
      this._m_rank = 3;
      return this._m_rank;
    }
  });

  return NgAnnotation;
})();
NgAnnotation_.NgAnnotation = NgAnnotation;
});
