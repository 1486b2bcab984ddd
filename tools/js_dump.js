#!/usr/bin/env node
// Parses files with a generated JavaScript parser (generated/js/<ClassName>.js, the code the
// Kaitai Web IDE runs) and prints everything it reads as ONE JSON document on stdout:
//   {"<file as given>": <tree>, ...}
// Used by tests/test_webide_parity.py to compare the JavaScript and Python parsers.
//
// usage: node tools/js_dump.js [--modules DIR] [--debug] <ClassName> <file> [<file>...]
//   --modules DIR  load <ClassName>.js from DIR instead of generated/js/
//   --debug        the modules are a debug build (as the Web IDE's object tree runs them):
//                  construct the parser, then call _read(), as the IDE's worker does
//
// The tree of a parsed object is {name: value} over its own non-`_` properties (seq fields) and
// the getters of its prototype chain (instances, which are lazy: reading them forces parsing), in
// the JavaScript spelling of the ksy ids (lowerCamelCase). Values:
//   Uint8Array             -> lowercase hex string
//   number                 -> JSON number; NaN, Infinity, -Infinity -> the strings "NaN",
//                             "Infinity", "-Infinity" (JSON has no such numbers)
//   bigint                 -> string of its exact decimal value. The kaitai-struct 0.11 runtime
//                             never produces one: it reads u8/s8 as a plain Number, so values
//                             beyond 2**53 arrive here already rounded to the nearest double and
//                             are printed as such (JSON.stringify, e.g. 2**64-1 prints as
//                             18446744073709552000). The comparing side must allow for it;
//                             where the exact value matters the schemas add an exact form
//                             (32-bit halves, decimal text or raw bytes, see each `doc`).
//   undefined, null        -> null (e.g. an instance whose `if` is false)
//   arrays, typed arrays   -> JSON arrays
//   a parsed object        -> its tree (see above)
// `_io`, `_parent`, `_root`, `_debug`, `_raw_*`, `_m_*` (everything starting with `_`) are left
// out. An object already on the path from the root prints as {"$cycle": true}; objects nested
// deeper than MAX_DEPTH print as {"$depth": true}. An instance whose getter throws prints as
// {"$error": "<ErrorName>: <message>"}; a file whose top-level parse throws prints as
// {"error": "<ErrorName>: <message>"}, and the run still exits 0.
//
// Exit status: 0 when the JSON document was printed (parse errors included); 2 on a usage error,
// an unreadable file, or a parser module that cannot be loaded (its error goes to stderr).
"use strict";
const fs = require("fs");
const path = require("path");

const MAX_DEPTH = 64;
const root = path.resolve(__dirname, "..");
let jsDir = path.join(root, "generated", "js");

function fail(message) {
  process.stderr.write(`js_dump.js: ${message}\n`);
  process.exit(2);
}

function describeError(e) {
  if (e instanceof Error) return `${e.name}: ${e.message}`;
  return String(e);
}

function isStruct(v) {
  return v !== null && typeof v === "object" && "_io" in v && typeof v._read === "function";
}

// Names of the fields (own properties) and instances (prototype getters) of a parsed object.
function fieldNames(obj) {
  const names = [];
  const seen = new Set();
  const add = (name) => {
    if (typeof name !== "string" || name.startsWith("_") || seen.has(name)) return;
    seen.add(name);
    names.push(name);
  };
  for (const name of Object.keys(obj)) add(name);
  for (
    let proto = Object.getPrototypeOf(obj);
    proto !== null && proto !== Object.prototype;
    proto = Object.getPrototypeOf(proto)
  ) {
    for (const name of Object.getOwnPropertyNames(proto)) {
      const desc = Object.getOwnPropertyDescriptor(proto, name);
      if (desc && typeof desc.get === "function") add(name);
    }
  }
  return names;
}

function hex(bytes) {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex");
}

function dump(value, path, depth) {
  if (value === undefined || value === null) return null;
  switch (typeof value) {
    case "boolean":
    case "string":
      return value;
    case "number":
      return Number.isFinite(value) ? value : String(value);
    case "bigint":
      return value.toString();
    case "object":
      break;
    default:
      return String(value);
  }
  if (value instanceof Uint8Array) return hex(value);
  if (path.has(value)) return { $cycle: true };
  if (depth > MAX_DEPTH) return { $depth: true };
  path.add(value);
  try {
    if (Array.isArray(value) || ArrayBuffer.isView(value)) {
      return Array.from(value, (item) => dump(item, path, depth + 1));
    }
    if (!isStruct(value)) return String(value);
    const tree = {};
    for (const name of fieldNames(value)) {
      let item;
      try {
        item = value[name];
      } catch (e) {
        tree[name] = { $error: describeError(e) };
        continue;
      }
      tree[name] = dump(item, path, depth + 1);
    }
    return tree;
  } finally {
    path.delete(value);
  }
}

function main() {
  const args = process.argv.slice(2);
  let debug = false;
  while (args.length && args[0].startsWith("--")) {
    const opt = args.shift();
    if (opt === "--debug") debug = true;
    else if (opt === "--modules" && args.length) {
      jsDir = path.resolve(args.shift());
      // let modules outside the repository find the kaitai-struct runtime in its node_modules
      process.env.NODE_PATH = path.join(root, "node_modules");
      require("module")._initPaths();
    } else fail(`unknown option ${opt}`);
  }
  const [className, ...files] = args;
  if (!className || files.length === 0) {
    fail("usage: node tools/js_dump.js [--modules DIR] [--debug] <ClassName> <file> [<file>...]");
  }
  if (!/^[A-Za-z_$][\w$]*$/.test(className)) fail(`not a class name: ${className}`);

  // The generated modules require("kaitai-struct/KaitaiStream"); node resolves that from their
  // own directory upwards, i.e. to the repository's node_modules. Resolve it from the repository
  // root too, so that this script and the parsers share the one runtime.
  let KaitaiStream;
  try {
    KaitaiStream = require(require.resolve("kaitai-struct/KaitaiStream", { paths: [root] }));
  } catch (e) {
    fail(`cannot load the kaitai-struct runtime from ${root}/node_modules: ${describeError(e)}`);
  }
  const modulePath = path.join(jsDir, `${className}.js`);
  let Parser;
  try {
    Parser = require(modulePath)[className];
  } catch (e) {
    fail(`cannot load ${path.relative(root, modulePath)}: ${describeError(e)}`);
  }
  if (typeof Parser !== "function") {
    fail(`${path.relative(root, modulePath)} does not export a class ${className}`);
  }

  const out = {};
  for (const file of files) {
    let data;
    try {
      data = fs.readFileSync(file);
    } catch (e) {
      fail(`cannot read ${file}: ${describeError(e)}`);
    }
    // A fresh ArrayBuffer holding exactly the file (a Buffer may be a view into a shared pool).
    const buffer = data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength);
    let parsed;
    try {
      parsed = new Parser(new KaitaiStream(buffer));
      if (debug) parsed._read();
    } catch (e) {
      out[file] = { error: describeError(e) };
      continue;
    }
    out[file] = dump(parsed, new Set(), 0);
  }
  // Not process.exit(): stdout may be a pipe, and exiting could cut a large document short.
  process.stdout.write(JSON.stringify(out) + "\n");
  process.exitCode = 0;
}

main();
