// This is a generated file! Please edit source .ksy file and use kaitai-struct-compiler to rebuild

(function (root, factory) {
  if (typeof define === 'function' && define.amd) {
    define(['exports', 'kaitai-struct/KaitaiStream', './NgAnnotation'], factory);
  } else if (typeof exports === 'object' && exports !== null && typeof exports.nodeType !== 'number') {
    factory(exports, require('kaitai-struct/KaitaiStream'), require('./NgAnnotation'));
  } else {
    factory(root.NgAnnotationById || (root.NgAnnotationById = {}), root.KaitaiStream, root.NgAnnotation || (root.NgAnnotation = {}));
  }
})(typeof self !== 'undefined' ? self : this, function (NgAnnotationById_, KaitaiStream, NgAnnotation_) {
/**
 * The value of one annotation id in the `by_id` index of a Neuroglancer "precomputed"
 * annotation layer (a file named by the decimal id unsharded, the id itself as the key
 * sharded): the annotation's record (ng_annotation: geometry, properties, padding), then,
 * for each relationship the `info` file lists, in its order, a u4 count and that many related
 * object ids (u8). Only this index holds the full relationship lists; the id is not stored.
 * 
 * The record layout and the number of relationships come from the `info` file: the root uses
 * the editable defaults below (set `rank`, `kind`, `property_types` and
 * `num_relationships` for the Web IDE); host code parses `entry` with its own layout.
 * @see {@link https://github.com/google/neuroglancer/blob/master/src/datasource/precomputed/annotations.md|Source}
 */

var NgAnnotationById = (function() {
  function NgAnnotationById(_io, _parent, _root) {
    this._io = _io;
    this._parent = _parent;
    this._root = _root || this;

    this._read();
  }
  NgAnnotationById.prototype._read = function() {
    this.body = new Entry(this._io, this, this._root, this.rank, this.kind, this.propertyTypes, this.numRelationships);
  }

  var Entry = NgAnnotationById.Entry = (function() {
    function Entry(_io, _parent, _root, rank, kind, propertyTypes, numRelationships) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;
      this.rank = rank;
      this.kind = kind;
      this.propertyTypes = propertyTypes;
      this.numRelationships = numRelationships;

      this._read();
    }
    Entry.prototype._read = function() {
      this.annotation = new NgAnnotation_.NgAnnotation.Record(this._io, null, null, this.rank, this.kind, this.propertyTypes);
      this.relationships = [];
      for (var i = 0; i < this.numRelationships; i++) {
        this.relationships.push(new RelatedIds(this._io, this, this._root));
      }
    }

    return Entry;
  })();

  var RelatedIds = NgAnnotationById.RelatedIds = (function() {
    function RelatedIds(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    RelatedIds.prototype._read = function() {
      this.count = this._io.readU4le();
      this.ids = [];
      for (var i = 0; i < this.count; i++) {
        this.ids.push(this._io.readU8le());
      }
    }

    return RelatedIds;
  })();

  /**
   * The layer's annotation_type (edit for the Web IDE).
   */
  Object.defineProperty(NgAnnotationById.prototype, 'kind', {
    get: function() {
      if (this._m_kind !== undefined)
        return this._m_kind;
      this._m_kind = NgAnnotation_.NgAnnotation.AnnotationType.POINT;
      return this._m_kind;
    }
  });

  /**
   * How many relationships the `info` file lists (edit for the Web IDE).
   */
  Object.defineProperty(NgAnnotationById.prototype, 'numRelationships', {
    get: function() {
      if (this._m_numRelationships !== undefined)
        return this._m_numRelationships;
      this._m_numRelationships = 0;
      return this._m_numRelationships;
    }
  });

  /**
   * The property types in stored order (edit for the Web IDE), see ng_annotation.
   */
  Object.defineProperty(NgAnnotationById.prototype, 'propertyTypes', {
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
  Object.defineProperty(NgAnnotationById.prototype, 'rank', {
    get: function() {
      if (this._m_rank !== undefined)
        return this._m_rank;
      this._m_rank = 3;
      return this._m_rank;
    }
  });

  return NgAnnotationById;
})();
NgAnnotationById_.NgAnnotationById = NgAnnotationById;
});
