#!/usr/bin/env node
// Compiles every schemas/*.ksy with the pinned kaitai-struct-compiler (npm, 0.11.0) into
//   <outdir>/*.py           Python parsers, imported by shardkit as the package `shardkit.generated`
//   <outdir>/js/*.js        JavaScript parsers, the same code the Kaitai Web IDE produces
//   <outdir>/schemas.json   for each schema: its title and the files a Web IDE user uploads for
//                           it (the schema, then everything it imports), read by `shardkit schema`
//
// Imports are resolved exactly as the Kaitai Web IDE resolves them (kaitai_struct_webide,
// src/v1/KaitaiServices.ts, class JsImporter; its upload button, src/v1/app.ts addNewFiles,
// stores every file under its base name only):
//   - a relative import (`- uleb128`) is looked up among the uploaded files by base name. The
//     set of uploaded files is flat, so a relative name holding a "/" (`../x`, `sub/x`) is
//     never found. Here the uploaded set is schemas/*.ksy, which is why schemas/ is flat; the
//     command-line compiler resolves a relative import against the importing file's folder,
//     which for a flat folder is the same thing.
//   - an absolute import (`- /common/x`) is always loaded from the IDE's built-in gallery
//     (`formats/common/x.ksy` on its own server), never from the uploaded files. It resolves
//     only when the path is in the gallery list given with --gallery (and the file itself is
//     given with --gallery-dir); without a list every absolute import fails, as it would for a
//     file the gallery does not have.
// YAML is read with js-yaml's CORE schema, as the IDE reads it. The compiler's JS build cannot
// set a Python package, so the one rewrite this script makes is `import x` -> `from . import x`
// for modules it generated itself. Any message the compiler prints (warnings included) fails the
// run: the pipeline keeps zero warnings. Each schema is also compiled in debug mode, the build
// the IDE's object tree runs, so a schema that only compiles in release mode fails here.
//
// usage: node tools/ksc.js [--outdir DIR] [--only ID ...]
//        node tools/ksc.js --ide-check DIR [--gallery PATH ...] [--gallery-dir GDIR] [--outdir OUT]
//                          [--debug]
//   --only ID        compile just schemas/ID.ksy (and what it imports) and leave the other
//                    modules in the output folder alone; without it the folder is rebuilt.
//   --ide-check DIR  treat DIR/*.ksy as the files a user uploaded to the Web IDE and compile
//                    each of them to JavaScript (release and debug) as the IDE would; with
//                    --outdir, write the release modules to OUT (with --debug, the debug
//                    modules the IDE's object tree runs). Exit 1 when any fails.
//   --gallery PATH   a file of the IDE's gallery, e.g. common/vlq_base128_le (repeatable)
//   --gallery-dir D  where the gallery files named by --gallery are read from (D/PATH.ksy)
"use strict";
const fs = require("fs");
const path = require("path");
const compiler = require("kaitai-struct-compiler");
const yaml = require("js-yaml");

const root = path.resolve(__dirname, "..");
let schemaDir = path.join(root, "schemas");
let outDir = path.join(root, "generated");
let ideCheck = false;
let writeDebug = false;
let outDirGiven = false;
let galleryDir = null;
const gallery = new Set();
const only = [];
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const value = () => {
    if (i + 1 >= argv.length) usage(`${argv[i]} needs a value`);
    return argv[++i];
  };
  if (argv[i] === "--outdir") {
    outDir = path.resolve(value());
    outDirGiven = true;
  } else if (argv[i] === "--only") only.push(value());
  else if (argv[i] === "--ide-check") {
    schemaDir = path.resolve(value());
    ideCheck = true;
  } else if (argv[i] === "--gallery") gallery.add(value().replace(/^\/+/, "").replace(/\.ksy$/, ""));
  else if (argv[i] === "--gallery-dir") galleryDir = path.resolve(value());
  else if (argv[i] === "--debug") writeDebug = true;
  else usage(`unknown argument ${argv[i]}`);
}

function usage(message) {
  console.error(`ksc.js: ${message}`);
  process.exit(2);
}

function loadKsy(file) {
  return yaml.load(fs.readFileSync(file, "utf8"), { schema: yaml.CORE_SCHEMA, filename: file });
}

// The uploaded files: base name -> path. Only the top level counts (uploads are flat).
function uploadedFiles(dir) {
  const files = new Map();
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (entry.isFile() && entry.name.endsWith(".ksy")) files.set(entry.name, path.join(dir, entry.name));
  }
  return files;
}

// Schemas hidden in sub-folders would be silently left out of the flat set: refuse them.
function nestedKsy(dir) {
  return fs
    .readdirSync(dir, { recursive: true })
    .map(String)
    .filter((f) => f.endsWith(".ksy") && path.dirname(f) !== ".")
    .sort();
}

class ImportError extends Error {
  // The compiler prefixes its own "error: "; print the message alone, as the IDE does.
  toString() {
    return this.message;
  }
}

// The IDE's JsImporter over `uploaded` and the gallery; records what each schema imported.
function ideImporter(uploaded, imported) {
  return {
    importYaml(name, mode) {
      if (mode === "abs") {
        const fn = `formats/${name}.ksy`;
        if (!gallery.has(name)) {
          return Promise.reject(new ImportError(
            `failed to import spec ${fn} from kaitai.io: not in the Web IDE's gallery ` +
              `(an absolute import is served only from there; import your own types by bare name)`,
          ));
        }
        if (!galleryDir) {
          return Promise.reject(new ImportError(`${fn} is in the gallery list but no --gallery-dir holds it`));
        }
        imported.push({ mode, name });
        return Promise.resolve(loadKsy(path.join(galleryDir, `${name}.ksy`)));
      }
      const fn = `${name}.ksy`;
      if (name.includes("/") || !uploaded.has(fn)) {
        return Promise.reject(new ImportError(
          `failed to import spec ${fn} from local storage: not among the uploaded files ` +
            `(${[...uploaded.keys()].sort().join(", ")}); uploads are flat, by base name`,
        ));
      }
      imported.push({ mode, name });
      return Promise.resolve(loadKsy(uploaded.get(fn)));
    },
  };
}

async function compileQuiet(lang, spec, importer, debug) {
  // Capture anything the compiler prints; treat it as a warning.
  const said = [];
  const saved = {};
  for (const k of ["log", "warn", "error", "info"]) {
    saved[k] = console[k];
    console[k] = (...a) => said.push(a.join(" "));
  }
  try {
    return { files: await compiler.compile(lang, spec, importer, debug), said };
  } finally {
    Object.assign(console, saved);
  }
}

function writeFile(file, text) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
}

function describe(e) {
  return e && e.message ? e.message : String(e);
}

async function main() {
  const uploaded = uploadedFiles(schemaDir);
  const nested = nestedKsy(schemaDir);
  if (nested.length) {
    console.error(
      `ksc.js: ${nested.join(", ")}: schemas must sit directly in ${path.relative(root, schemaDir) || schemaDir}/ ` +
        "(the Web IDE's uploads are flat; imports name files by base name)",
    );
    process.exit(1);
  }
  const sources = [...uploaded.keys()]
    .filter((f) => !only.length || only.includes(f.replace(/\.ksy$/, "")))
    .sort();
  if (only.length && sources.length !== only.length) usage(`no schema for some of: ${only.join(", ")}`);
  if (!sources.length) usage(`no .ksy files in ${schemaDir}`);

  const langs = ideCheck ? ["javascript"] : ["python", "javascript"];
  if (writeDebug && !ideCheck) usage("--debug goes with --ide-check");
  const py = new Map();
  const js = new Map();
  const jsDebug = new Map();
  const index = {};
  let failed = false;
  for (const name of sources) {
    const file = uploaded.get(name);
    let spec;
    try {
      spec = loadKsy(file);
    } catch (e) {
      console.error(`${name}: not valid YAML: ${describe(e)}`);
      failed = true;
      continue;
    }
    if (!spec || !spec.meta || spec.meta.id + ".ksy" !== name) {
      console.error(`${name}: meta.id must equal the file name`);
      failed = true;
      continue;
    }
    let imported = [];
    for (const lang of langs) {
      for (const debug of lang === "javascript" ? [false, true] : [false]) {
        imported = [];
        let result;
        try {
          // a fresh copy of the spec each time: the compiler may annotate what it is given
          result = await compileQuiet(lang, loadKsy(file), ideImporter(uploaded, imported), debug);
        } catch (e) {
          console.error(`${name} (${lang}${debug ? ", debug" : ""}): ${describe(e)}`);
          failed = true;
          continue;
        }
        if (result.said.length) {
          console.error(`${name} (${lang}${debug ? ", debug" : ""}): compiler said:\n  ${result.said.join("\n  ")}`);
          failed = true;
        }
        const into = debug ? jsDebug : lang === "python" ? py : js;
        for (const [out, text] of Object.entries(result.files)) into.set(out, text);
      }
    }
    const upload = [name];
    for (const imp of imported) {
      if (imp.mode === "rel" && !upload.includes(`${imp.name}.ksy`)) upload.push(`${imp.name}.ksy`);
    }
    index[spec.meta.id] = {
      title: spec.meta.title || "",
      upload,
      gallery_imports: imported.filter((i) => i.mode === "abs").map((i) => `/${i.name}`),
    };
  }
  if (failed) process.exit(1);

  if (ideCheck) {
    if (outDirGiven) for (const [out, text] of writeDebug ? jsDebug : js) writeFile(path.join(outDir, out), text);
    console.log(`ksc.js: ${sources.length} uploaded schema(s) compile in the Web IDE's way: ${sources.join(", ")}`);
    return;
  }

  const modules = new Set([...py.keys()].map((f) => f.replace(/\.py$/, "")));
  if (!only.length) fs.rmSync(outDir, { recursive: true, force: true });
  for (const [out, text] of py) {
    const fixed = text.replace(/^import (\w+)$/gm, (line, mod) =>
      modules.has(mod) ? `from . import ${mod}` : line,
    );
    writeFile(path.join(outDir, out), fixed);
  }
  for (const [out, text] of js) writeFile(path.join(outDir, "js", out), text);
  writeFile(
    path.join(outDir, "__init__.py"),
    '"""Parsers generated from schemas/*.ksy by tools/ksc.js. Do not edit: run `make generate`."""\n',
  );
  if (!only.length) writeFile(path.join(outDir, "schemas.json"), JSON.stringify(index, null, 2) + "\n");
  // A type name that shadows a JavaScript global (e.g. `object` -> `Object`) compiles without a
  // word but breaks the Web IDE; loading every module here catches that at generate time.
  process.env.NODE_PATH = path.join(root, "node_modules");
  require("module")._initPaths(); // let modules written outside the repo find kaitai-struct
  for (const out of js.keys()) {
    try {
      require(path.join(outDir, "js", out));
    } catch (e) {
      console.error(`generated/js/${out} does not load in node: ${describe(e)}`);
      process.exit(1);
    }
  }
  console.log(`ksc.js: ${sources.length} schema(s) -> ${py.size} Python, ${js.size} JavaScript module(s) in ${path.relative(root, outDir) || outDir}`);
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : e);
  process.exit(1);
});
