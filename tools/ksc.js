#!/usr/bin/env node
// Compiles every schemas/*.ksy with the pinned kaitai-struct-compiler (npm, 0.11.0) into
//   <outdir>/*.py      Python parsers, imported by shardkit as the package `shardkit.generated`
//   <outdir>/js/*.js   JavaScript parsers, the same code the Kaitai Web IDE produces
// `imports:` are resolved against schemas/ (absolute "/common/x" and relative "x" forms).
// The compiler's JS build cannot set a Python package, so the one rewrite this script makes is
// `import x` -> `from . import x` for modules it generated itself. Any message the compiler
// prints (warnings included) fails the run: the pipeline keeps zero warnings.
//
// usage: node tools/ksc.js [--outdir DIR] [--only ID ...]
//   --only ID   compile just schemas/ID.ksy (and what it imports) and leave the other modules
//               in the output folder alone; without it the folder is rebuilt from scratch.
"use strict";
const fs = require("fs");
const path = require("path");
const compiler = require("kaitai-struct-compiler");
const yaml = require("js-yaml");

const root = path.resolve(__dirname, "..");
const schemaDir = path.join(root, "schemas");
let outDir = path.join(root, "generated");
const only = [];
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === "--outdir") outDir = path.resolve(argv[++i]);
  else if (argv[i] === "--only") only.push(argv[++i]);
  else {
    console.error(`ksc.js: unknown argument ${argv[i]}`);
    process.exit(2);
  }
}

function loadKsy(file) {
  return yaml.load(fs.readFileSync(file, "utf8"), { filename: file });
}

function importerFor(fromFile) {
  return {
    importYaml(name, mode) {
      const base = mode === "abs" ? schemaDir : path.dirname(fromFile);
      const file = path.join(base, name.replace(/^\//, "") + ".ksy");
      return Promise.resolve(loadKsy(file));
    },
  };
}

async function compileQuiet(lang, spec, importer) {
  // Capture anything the compiler prints; treat it as a warning.
  const said = [];
  const saved = {};
  for (const k of ["log", "warn", "error", "info"]) {
    saved[k] = console[k];
    console[k] = (...a) => said.push(a.join(" "));
  }
  try {
    return { files: await compiler.compile(lang, spec, importer, false), said };
  } finally {
    Object.assign(console, saved);
  }
}

function writeIfChanged(file, text) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
}

async function main() {
  const sources = fs
    .readdirSync(schemaDir)
    .filter((f) => f.endsWith(".ksy"))
    .filter((f) => !only.length || only.includes(f.replace(/\.ksy$/, "")))
    .sort();
  if (only.length && sources.length !== only.length) {
    console.error(`ksc.js: no schema for some of: ${only.join(", ")}`);
    process.exit(2);
  }
  const py = new Map();
  const js = new Map();
  let failed = false;
  for (const name of sources) {
    const file = path.join(schemaDir, name);
    const spec = loadKsy(file);
    if (!spec.meta || spec.meta.id + ".ksy" !== name) {
      console.error(`${name}: meta.id must equal the file name`);
      failed = true;
      continue;
    }
    for (const [lang, into] of [["python", py], ["javascript", js]]) {
      let result;
      try {
        result = await compileQuiet(lang, spec, importerFor(file));
      } catch (e) {
        console.error(`${name} (${lang}): ${e && e.message ? e.message : e}`);
        failed = true;
        continue;
      }
      if (result.said.length) {
        console.error(`${name} (${lang}): compiler said:\n  ${result.said.join("\n  ")}`);
        failed = true;
      }
      for (const [out, text] of Object.entries(result.files)) into.set(out, text);
    }
  }
  if (failed) process.exit(1);

  const modules = new Set([...py.keys()].map((f) => f.replace(/\.py$/, "")));
  if (!only.length) fs.rmSync(outDir, { recursive: true, force: true });
  for (const [out, text] of py) {
    const fixed = text.replace(/^import (\w+)$/gm, (line, mod) =>
      modules.has(mod) ? `from . import ${mod}` : line,
    );
    writeIfChanged(path.join(outDir, out), fixed);
  }
  for (const [out, text] of js) writeIfChanged(path.join(outDir, "js", out), text);
  writeIfChanged(
    path.join(outDir, "__init__.py"),
    '"""Parsers generated from schemas/*.ksy by tools/ksc.js. Do not edit: run `make generate`."""\n',
  );
  // A type name that shadows a JavaScript global (e.g. `object` -> `Object`) compiles without a
  // word but breaks the Web IDE; loading every module here catches that at generate time.
  process.env.NODE_PATH = path.join(root, "node_modules");
  require("module")._initPaths(); // let modules written outside the repo find kaitai-struct
  for (const out of js.keys()) {
    try {
      require(path.join(outDir, "js", out));
    } catch (e) {
      console.error(`generated/js/${out} does not load in node: ${e && e.message ? e.message : e}`);
      process.exit(1);
    }
  }
  console.log(`ksc.js: ${sources.length} schema(s) -> ${py.size} Python, ${js.size} JavaScript module(s) in ${path.relative(root, outDir) || outDir}`);
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : e);
  process.exit(1);
});
