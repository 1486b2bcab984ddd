// This is a generated file! Please edit source .ksy file and use kaitai-struct-compiler to rebuild

(function (root, factory) {
  if (typeof define === 'function' && define.amd) {
    define(['exports', 'kaitai-struct/KaitaiStream'], factory);
  } else if (typeof exports === 'object' && exports !== null && typeof exports.nodeType !== 'number') {
    factory(exports, require('kaitai-struct/KaitaiStream'));
  } else {
    factory(root.NgMeshManifest || (root.NgMeshManifest = {}), root.KaitaiStream);
  }
})(typeof self !== 'undefined' ? self : this, function (NgMeshManifest_, KaitaiStream) {
/**
 * The manifest of one object of a Neuroglancer "precomputed" multi-resolution mesh layer
 * ("@type": "neuroglancer_multilod_draco"): the index of the Draco-encoded fragments that
 * make up the object's levels of detail. Unsharded, it is the file `<segment id>.index` and
 * the fragments are the file `<segment id>`; sharded, it is the value stored under the
 * segment id and the fragments lie in the shard immediately before it, so the fragment data
 * begins at (manifest start - sum of all fragment sizes). Written by igneous, zmesh users,
 * cloud-volume and Neuroglancer's Python tools.
 * 
 * A header gives the octree geometry (chunk_shape and grid_origin, three f4 each, in the
 * layer's coordinates before its `transform`), the number of levels of detail, the scale of
 * each level and its vertex offset. Then, for each level, its fragments: positions in the
 * level's grid (three arrays of u4: every x, then every y, then every z) and their sizes in
 * bytes (u4), in the order the fragment data is stored (level 0 first). Sizes may be 0: such
 * a fragment only marks that the octree node exists.
 * 
 * Every array is a byte range of the exact size its count gives (so a count larger than the
 * file fails at once, before anything is allocated), read value by value by its type.
 * @see {@link https://github.com/google/neuroglancer/blob/v2.40.1/src/datasource/precomputed/meshes.md|Source}
 */

var NgMeshManifest = (function() {
  function NgMeshManifest(_io, _parent, _root) {
    this._io = _io;
    this._parent = _parent;
    this._root = _root || this;

    this._read();
  }
  NgMeshManifest.prototype._read = function() {
    this.chunkShape = new Vec3f(this._io, this, this._root);
    this.gridOrigin = new Vec3f(this._io, this, this._root);
    this.numLods = this._io.readU4le();
    this._raw_lodScales = this._io.readBytes(this.numLods * 4);
    var _io__raw_lodScales = new KaitaiStream(this._raw_lodScales);
    this.lodScales = new F4Array(_io__raw_lodScales, this, this._root, this.numLods);
    this._raw_vertexOffsets = this._io.readBytes(this.numLods * 12);
    var _io__raw_vertexOffsets = new KaitaiStream(this._raw_vertexOffsets);
    this.vertexOffsets = new Vec3fArray(_io__raw_vertexOffsets, this, this._root, this.numLods);
    this._raw_numFragmentsPerLod = this._io.readBytes(this.numLods * 4);
    var _io__raw_numFragmentsPerLod = new KaitaiStream(this._raw_numFragmentsPerLod);
    this.numFragmentsPerLod = new U4Array(_io__raw_numFragmentsPerLod, this, this._root, this.numLods);
    this.lods = [];
    for (var i = 0; i < this.numLods; i++) {
      this.lods.push(new Lod(this._io, this, this._root, this.numFragmentsPerLod.values[i]));
    }
  }

  var F4Array = NgMeshManifest.F4Array = (function() {
    function F4Array(_io, _parent, _root, numValues) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;
      this.numValues = numValues;

      this._read();
    }
    F4Array.prototype._read = function() {
      this.values = [];
      for (var i = 0; i < this.numValues; i++) {
        this.values.push(this._io.readF4le());
      }
    }

    return F4Array;
  })();

  var FragmentPositions = NgMeshManifest.FragmentPositions = (function() {
    function FragmentPositions(_io, _parent, _root, numFragments) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;
      this.numFragments = numFragments;

      this._read();
    }
    FragmentPositions.prototype._read = function() {
      this.x = [];
      for (var i = 0; i < this.numFragments; i++) {
        this.x.push(this._io.readU4le());
      }
      this.y = [];
      for (var i = 0; i < this.numFragments; i++) {
        this.y.push(this._io.readU4le());
      }
      this.z = [];
      for (var i = 0; i < this.numFragments; i++) {
        this.z.push(this._io.readU4le());
      }
    }

    return FragmentPositions;
  })();

  var Lod = NgMeshManifest.Lod = (function() {
    function Lod(_io, _parent, _root, numFragments) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;
      this.numFragments = numFragments;

      this._read();
    }
    Lod.prototype._read = function() {
      this._raw_fragmentPositions = this._io.readBytes(this.numFragments * 12);
      var _io__raw_fragmentPositions = new KaitaiStream(this._raw_fragmentPositions);
      this.fragmentPositions = new FragmentPositions(_io__raw_fragmentPositions, this, this._root, this.numFragments);
      this._raw_fragmentSizes = this._io.readBytes(this.numFragments * 4);
      var _io__raw_fragmentSizes = new KaitaiStream(this._raw_fragmentSizes);
      this.fragmentSizes = new U4Array(_io__raw_fragmentSizes, this, this._root, this.numFragments);
    }

    /**
     * Bytes of each fragment (the format's `fragment_offsets`).
     */

    return Lod;
  })();

  var U4Array = NgMeshManifest.U4Array = (function() {
    function U4Array(_io, _parent, _root, numValues) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;
      this.numValues = numValues;

      this._read();
    }
    U4Array.prototype._read = function() {
      this.values = [];
      for (var i = 0; i < this.numValues; i++) {
        this.values.push(this._io.readU4le());
      }
    }

    return U4Array;
  })();

  var Vec3f = NgMeshManifest.Vec3f = (function() {
    function Vec3f(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    Vec3f.prototype._read = function() {
      this.x = this._io.readF4le();
      this.y = this._io.readF4le();
      this.z = this._io.readF4le();
    }

    return Vec3f;
  })();

  var Vec3fArray = NgMeshManifest.Vec3fArray = (function() {
    function Vec3fArray(_io, _parent, _root, numValues) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;
      this.numValues = numValues;

      this._read();
    }
    Vec3fArray.prototype._read = function() {
      this.values = [];
      for (var i = 0; i < this.numValues; i++) {
        this.values.push(new Vec3f(this._io, this, this._root));
      }
    }

    return Vec3fArray;
  })();

  return NgMeshManifest;
})();
NgMeshManifest_.NgMeshManifest = NgMeshManifest;
});
