// This is a generated file! Please edit source .ksy file and use kaitai-struct-compiler to rebuild

(function (root, factory) {
  if (typeof define === 'function' && define.amd) {
    define(['exports', 'kaitai-struct/KaitaiStream'], factory);
  } else if (typeof exports === 'object' && exports !== null && typeof exports.nodeType !== 'number') {
    factory(exports, require('kaitai-struct/KaitaiStream'));
  } else {
    factory(root.NgSkeleton || (root.NgSkeleton = {}), root.KaitaiStream);
  }
})(typeof self !== 'undefined' ? self : this, function (NgSkeleton_, KaitaiStream) {
/**
 * One skeleton of a Neuroglancer "precomputed" skeleton layer: the value stored under a
 * segment id, in its own file (unsharded) or in a shard (sharded). Written by cloud-volume,
 * kimimaro, igneous, tensorstore users and Neuroglancer's own Python writers.
 * 
 * The vertex count and edge count come first, then every vertex position (three f4: x, y, z,
 * in the layer's coordinates after its `transform`), then every edge (two u4 vertex indices).
 * What follows are the vertex attributes the layer's `info` file lists under
 * "vertex_attributes", in that order: for attribute k, num_vertices x num_components[k]
 * little-endian values of data_type[k] (float32, int8, uint8, int16, uint16, int32 or
 * uint32). The file itself does not say which attributes it holds, so the root keeps them as
 * bytes (`vertex_attributes`) and host code (src/shardkit/ng/payloads.py) reads them one after
 * the other with the parametrised type vertex_attribute(num_vertices, num_components,
 * bytes_per_value), taking the list from the `info`.
 * 
 * The seq keeps positions and edges as byte ranges of the exact size (so a count larger than
 * the file fails at once, before anything is allocated); the instances `vertices` and
 * `edge_list` show them value by value in the Web IDE.
 * @see {@link https://github.com/google/neuroglancer/blob/v2.40.1/src/datasource/precomputed/skeletons.md|Source}
 */

var NgSkeleton = (function() {
  function NgSkeleton(_io, _parent, _root) {
    this._io = _io;
    this._parent = _parent;
    this._root = _root || this;

    this._read();
  }
  NgSkeleton.prototype._read = function() {
    this.numVertices = this._io.readU4le();
    this.numEdges = this._io.readU4le();
    this.vertexPositions = this._io.readBytes(this.numVertices * 12);
    this.edges = this._io.readBytes(this.numEdges * 8);
    this.vertexAttributes = this._io.readBytesFull();
  }

  var Edge = NgSkeleton.Edge = (function() {
    function Edge(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    Edge.prototype._read = function() {
      this.vertexA = this._io.readU4le();
      this.vertexB = this._io.readU4le();
    }

    return Edge;
  })();

  var Vertex = NgSkeleton.Vertex = (function() {
    function Vertex(_io, _parent, _root) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;

      this._read();
    }
    Vertex.prototype._read = function() {
      this.x = this._io.readF4le();
      this.y = this._io.readF4le();
      this.z = this._io.readF4le();
    }

    return Vertex;
  })();

  /**
   * One vertex attribute: num_vertices x num_components values of bytes_per_value bytes
   * each (the data_type comes from the `info` file).
   */

  var VertexAttribute = NgSkeleton.VertexAttribute = (function() {
    function VertexAttribute(_io, _parent, _root, numVertices, numComponents, bytesPerValue) {
      this._io = _io;
      this._parent = _parent;
      this._root = _root;
      this.numVertices = numVertices;
      this.numComponents = numComponents;
      this.bytesPerValue = bytesPerValue;

      this._read();
    }
    VertexAttribute.prototype._read = function() {
      this.values = this._io.readBytes((this.numVertices * this.numComponents) * this.bytesPerValue);
    }

    return VertexAttribute;
  })();
  Object.defineProperty(NgSkeleton.prototype, 'edgeList', {
    get: function() {
      if (this._m_edgeList !== undefined)
        return this._m_edgeList;
      var _pos = this._io.pos;
      this._io.seek(8 + this.numVertices * 12);
      this._m_edgeList = [];
      for (var i = 0; i < this.numEdges; i++) {
        this._m_edgeList.push(new Edge(this._io, this, this._root));
      }
      this._io.seek(_pos);
      return this._m_edgeList;
    }
  });
  Object.defineProperty(NgSkeleton.prototype, 'vertices', {
    get: function() {
      if (this._m_vertices !== undefined)
        return this._m_vertices;
      var _pos = this._io.pos;
      this._io.seek(8);
      this._m_vertices = [];
      for (var i = 0; i < this.numVertices; i++) {
        this._m_vertices.push(new Vertex(this._io, this, this._root));
      }
      this._io.seek(_pos);
      return this._m_vertices;
    }
  });

  /**
   * num_vertices x (x, y, z) f4
   */

  /**
   * num_edges x (u4 vertex index, u4 vertex index)
   */

  /**
   * The attributes listed in the `info` file, one after the other (see vertex_attribute).
   */

  return NgSkeleton;
})();
NgSkeleton_.NgSkeleton = NgSkeleton;
});
