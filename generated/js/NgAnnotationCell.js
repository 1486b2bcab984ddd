// This is a generated file! Please edit source .ksy file and use kaitai-struct-compiler to rebuild

(function (root, factory) {
  if (typeof define === 'function' && define.amd) {
    define(['exports', 'kaitai-struct/KaitaiStream', './NgAnnotation'], factory);
  } else if (typeof exports === 'object' && exports !== null && typeof exports.nodeType !== 'number') {
    factory(exports, require('kaitai-struct/KaitaiStream'), require('./NgAnnotation'));
  } else {
    factory(root.NgAnnotationCell || (root.NgAnnotationCell = {}), root.KaitaiStream, root.NgAnnotation || (root.NgAnnotation = {}));
  }
})(typeof self !== 'undefined' ? self : this, function (NgAnnotationCell_, KaitaiStream, NgAnnotation_) {
/**
 * A list of annotations of a Neuroglancer "precomputed" annotation layer, in the "multiple
 * annotation encoding": the value of one cell of a spatial index level (a file named
 * `x_y_z` unsharded, the compressed Morton code of the cell sharded), and the value of one
 * object id in a relationship index. A u8 count, then `count` records (ng_annotation: geometry,
 * properties, padding; relationships are not repeated here), then the `count` annotation ids
 * (u8 each) in the same order. Neuroglancer refuses a count of 2**32 or more.
 * 
 * The record layout comes from the layer's `info` file (rank, annotation_type, properties):
 * the root uses the editable default of ng_annotation (set the instances `rank`, `kind` and
 * `property_types` of this file for the Web IDE); host code parses `annotations` with its
 * own layout.
 * @see {@link https://github.com/google/neuroglancer/blob/master/src/datasource/precomputed/annotations.md|Source}
 */

var NgAnnotationCell = (function() {
  function NgAnnotationCell(_io, _parent, _root) {
    this._io = _io;
    this._parent = _parent;
    this._root = _root || this;

    this._read();
  }
  NgAnnotationCell.prototype._read = function() {
    this.body = new Cell(this._io, this, this._root, this.rank, this.kind, this.propertyTypes);
  }

  var Cell = NgAnnotationCell.Cell = (function() {
    function Cell(_io, _parent, _root, rank, kind, propertyTypes) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;
      this.rank = rank;
      this.kind = kind;
      this.propertyTypes = propertyTypes;

      this._read();
    }
    Cell.prototype._read = function() {
      this.count = this._io.readU8le();
      this.annotations = [];
      for (var i = 0; i < this.count; i++) {
        this.annotations.push(new NgAnnotation_.NgAnnotation.Record(this._io, null, null, this.rank, this.kind, this.propertyTypes));
      }
      this.ids = [];
      for (var i = 0; i < this.count; i++) {
        this.ids.push(this._io.readU8le());
      }
    }

    /**
     * The id of each annotation above, in the same order.
     */

    return Cell;
  })();

  /**
   * The layer's annotation_type (edit for the Web IDE).
   */
  Object.defineProperty(NgAnnotationCell.prototype, 'kind', {
    get: function() {
      if (this._m_kind !== undefined)
        return this._m_kind;
      this._m_kind = NgAnnotation_.NgAnnotation.AnnotationType.POINT;
      return this._m_kind;
    }
  });

  /**
   * The property types in stored order (edit for the Web IDE), see ng_annotation.
   */
  Object.defineProperty(NgAnnotationCell.prototype, 'propertyTypes', {
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
  Object.defineProperty(NgAnnotationCell.prototype, 'rank', {
    get: function() {
      if (this._m_rank !== undefined)
        return this._m_rank;
      this._m_rank = 3;
      return this._m_rank;
    }
  });

  return NgAnnotationCell;
})();
NgAnnotationCell_.NgAnnotationCell = NgAnnotationCell;
});
