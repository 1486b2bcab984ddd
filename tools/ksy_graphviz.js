#!/usr/bin/env node
// Draws every schemas/*.ksy as a Graphviz graph with the pinned kaitai-struct-compiler's own
// `graphviz` target (the diagram the Kaitai Web IDE and `ksc -t graphviz` give), for the docs:
//   <outdir>/<meta.id>.dot   one graph per schema (its imported types are drawn in their own)
// `make docs` renders them to SVG with Graphviz's `dot` (tools/docs_images.py). Imports are
// resolved by bare name among schemas/*.ksy, as tools/ksc.js and the Web IDE resolve them.
//
// usage: node tools/ksy_graphviz.js --outdir DIR [--schemas DIR]
"use strict";
const fs = require("fs");
const path = require("path");
const compiler = require("kaitai-struct-compiler");
const yaml = require("js-yaml");

const root = path.resolve(__dirname, "..");
let schemaDir = path.join(root, "schemas");
let outDir = null;
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === "--outdir" && i + 1 < argv.length) outDir = path.resolve(argv[++i]);
  else if (argv[i] === "--schemas" && i + 1 < argv.length) schemaDir = path.resolve(argv[++i]);
  else {
    console.error(`ksy_graphviz.js: unknown argument ${argv[i]}\nusage: node tools/ksy_graphviz.js --outdir DIR [--schemas DIR]`);
    process.exit(2);
  }
}
if (!outDir) {
  console.error("ksy_graphviz.js: --outdir is required");
  process.exit(2);
}

const load = (file) => yaml.load(fs.readFileSync(file, "utf8"), { schema: yaml.CORE_SCHEMA, filename: file });

const importer = {
  importYaml(name, mode) {
    const file = path.join(schemaDir, `${name}.ksy`);
    if (mode !== "rel" || name.includes("/") || !fs.existsSync(file)) {
      return Promise.reject(new Error(`cannot import ${name} (${mode}): our schemas import each other by bare name`));
    }
    return Promise.resolve(load(file));
  },
};

// ksc draws edges to nodes it does not draw: an imported type's `<type>__seq` or instance
// `<type>__inst__<name>`, and a type's `<type>__params` (whose edges tools/docs_images.py drops).
// Graphviz would show each as a bare ellipse named e.g. `uleb128__seq`; give the others a label
// that says what they are and, for an imported type, which schema draws it.
function labelUndrawn(dot, id) {
  const defined = new Set();
  for (const m of dot.matchAll(/^\s*(\w+) \[/gm)) defined.add(m[1]);
  const missing = new Set();
  for (const m of dot.matchAll(/(\w+)(?::\w+)? -> (\w+)(?::\w+)?/g)) {
    for (const name of [m[1], m[2]]) {
      if (!defined.has(name) && !name.endsWith("__params")) missing.add(name);
    }
  }
  if (!missing.size) return dot;
  const nodes = [...missing].sort().map((name) => {
    const m = name.match(/^(\w+?)__(seq|inst__(\w+))$/);
    const type = m ? m[1] : name;
    const imported = type !== id && fs.existsSync(path.join(schemaDir, `${type}.ksy`));
    let label = type;
    if (m && m[3]) label = `${type}.${m[3]}`;
    if (imported) label += `\\n(drawn in ${type}.ksy)`;
    return `\t${name} [label="${label}" shape=box style="dashed,rounded"];\n`;
  });
  const end = dot.lastIndexOf("}");
  return dot.slice(0, end) + nodes.join("") + dot.slice(end);
}

async function main() {
  const names = fs.readdirSync(schemaDir).filter((f) => f.endsWith(".ksy")).sort();
  if (!names.length) throw new Error(`no .ksy files in ${schemaDir}`);
  fs.mkdirSync(outDir, { recursive: true });
  for (const name of names) {
    const id = name.replace(/\.ksy$/, "");
    const files = await compiler.compile("graphviz", load(path.join(schemaDir, name)), importer, false);
    const dot = files[`${id}.dot`];
    if (!dot) throw new Error(`${name}: the compiler gave no ${id}.dot (it gave ${Object.keys(files).join(", ")})`);
    fs.writeFileSync(path.join(outDir, `${id}.dot`), labelUndrawn(dot, id));
  }
  console.log(`ksy_graphviz.js: ${names.length} schema(s) -> ${path.relative(root, outDir) || outDir}/*.dot`);
}

main().catch((e) => {
  console.error(`ksy_graphviz.js: ${e && e.message ? e.message : e}`);
  process.exit(1);
});
