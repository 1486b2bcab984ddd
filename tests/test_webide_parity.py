"""Web IDE parity: the JavaScript parsers (what the Kaitai Web IDE runs) read what Python reads.

Every schema is compiled to Python (generated/*.py) and JavaScript (generated/js/*.js). A .ksy
that only works in Python does not count, so for every format in FORMATS this test parses the
sample files with both, forces every lazy instance, and compares the two trees field by field.
tools/js_dump.js builds the JavaScript tree; py_tree() below builds the same tree from the Python
parser, spelling field names the way the compiler does for JavaScript (lowerCamelCase).

Numbers: the kaitai-struct JS runtime reads u8/s8 as a double, so integers beyond 2**53 arrive
rounded (2**64-1 as 18446744073709552000); those are compared after rounding the Python value to
a double too (or exactly, should the runtime ever hand out a BigInt, printed as a string).
"""

from __future__ import annotations

import enum
import importlib
import json
import math
import shutil
import subprocess
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from kaitaistruct import KaitaiStruct, ValidationNotEqualError

ROOT = Path(__file__).parents[1]
JS_DUMP = ROOT / "tools" / "js_dump.js"
JS_RUNTIME = ROOT / "node_modules" / "kaitai-struct"
MAX_SAFE_INT = 2**53
MAX_DEPTH = 64  # as in tools/js_dump.js
MAX_DIFFS = 20

pytestmark = pytest.mark.node


@dataclass(frozen=True)
class Format:
    js_class: str  # generated/js/<js_class>.js
    py_module: str
    py_class: str
    samples: str  # glob, relative to the repository root
    # Paths ("a/b/*/c", `*` = some element of a list) that must exist in both trees, so that a
    # walker that silently misses a part of the format cannot pass as "equal".
    required: tuple[str, ...] = ()

    def files(self) -> list[Path]:
        return sorted(ROOT.glob(self.samples))


FORMATS = [
    Format(
        "SwhReadShard",
        "shardkit.generated.swh_read_shard",
        "SwhReadShard",
        "tests/data/swh/*.shard",
        required=(
            "magic",
            *(
                f"header/{f}"
                for f in (
                    "version",
                    "numObjects",
                    "ofsObjects",
                    "lenObjects",
                    "ofsIndex",
                    "lenIndex",
                    "ofsHash",
                )
            ),
            "index/entries/*/key",
            "index/entries/*/ofsObject",
            "index/entries/*/isEmpty",
            "index/entries/*/isTombstone",
            "index/entries/*/object/lenData",
            "index/entries/*/object/data",
            "hashFunction/algoName",
            "hashFunction/hashState/seed",
            "hashFunction/compressedSeq/select/selectTable",
            "hashFunction/compressedSeq/storeTable",
            "hashFunction/numBuckets",
        ),
    ),
    Format(  # ZSS: only the none+crc32c samples, whose bodies the schema itself parses
        "Zss",
        "shardkit.generated.zss",
        "Zss",
        "tests/data/zss/*_none.zss",
        required=(
            "magic",
            "lenHeader",
            "header/rootVoffset",
            "header/uuid",
            "header/codec",
            "header/metadata",
            "headerCrc32c",
            "headerCrc32cInput",
            "root/level",
            "root/lenPayload/value",
            "root/payload/body/entries/*/childVoffset/value",
            "blocks/*/payload/body/records/*/record",
            "blocks/*/payload/body/records/*/lenRecord/lenBytes",
            "blocks/*/payload/bodyCrc32c",
        ),
    ),
    Format(  # Neuroglancer: the root infers minishard_bits from the file (Web IDE path)
        "NeuroglancerUint64Sharded",
        "shardkit.generated.neuroglancer_uint64_sharded",
        "NeuroglancerUint64Sharded",
        "tests/data/neuroglancer/*/*.shard",  # raw-index samples (the image scale is deeper)
        required=(
            "minishardBits",
            "minishardBitsProbes/*/fits",
            "shardIndex/entries/*/ofsMinishardIndex",
            "shardIndex/entries/*/ofsMinishardIndexEnd",
            "minishards/*/rawIndex",
            "minishards/*/index/chunkIdDeltas",
            "minishards/*/index/ofsDataDeltas",
            "minishards/*/index/lenData",
            "minishards/*/chunks/*/chunkIdDelta",
            "minishards/*/chunks/*/data",
        ),
    ),
    Format(
        "XetMdbShard",
        "shardkit.generated.xet_mdb_shard",
        "XetMdbShard",
        # names ending "db" (.mdb) or "rd" (.shard): every real shard, no manifest or notes;
        # required: what all variants hold (upload bodies have no footer, some no xorbs)
        "tests/data/mdb/**/*[dr][bd]",
        required=(
            "header/tag",
            "header/version",
            "header/lenFooter",
            "fileInfo/blocks/*/fileHash",
            "fileInfo/blocks/*/ofsBlock",
            "fileInfo/blocks/*/numRecords",
            "xorbInfo/blocks/*/xorbHash",
            "xorbInfo/blocks/*/isBookend",
            "ofsXorbInfoEnd",
            "hasFooter",
        ),
    ),
    Format(
        "AmudaiShard",
        "shardkit.generated.amudai_shard",
        "AmudaiShard",
        "tests/data/amudai/*.amudai.shard",  # root files (writer-made, see PROVENANCE.md)
        required=(
            "header/magic",
            "header/versionMinor",
            "header/versionMajor",
            "footer/magic",
            "lenDirectory",
            "directory/lenPayload",
            "directory/payload",
            "directory/checksum",
        ),
    ),
]


# --- the Python side of tools/js_dump.js ---------------------------------------------------


def lower_camel(name: str) -> str:
    """The compiler's JavaScript spelling of a ksy id (Utils.lowerCamelCase)."""
    if name.startswith("_"):
        return "_" + lower_camel(name[1:])
    first, *rest = name.split("_")
    return first + "".join(word[:1].upper() + word[1:] for word in rest)


def describe(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


def field_names(obj: KaitaiStruct) -> list[str]:
    """Seq fields (attributes) then instances (properties) of a parsed object, minus `_*`."""
    names = [name for name in vars(obj) if not name.startswith("_")]
    for cls in type(obj).__mro__:
        if not issubclass(cls, KaitaiStruct) or cls is KaitaiStruct:
            continue
        for name, attr in vars(cls).items():
            if isinstance(attr, property) and not name.startswith("_") and name not in names:
                names.append(name)
    return names


def py_tree(value: Any, path: set[int] | None = None, depth: int = 0) -> Any:
    """The tree tools/js_dump.js prints, built from a Python-parsed value."""
    path = set() if path is None else path
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, enum.Enum):
        return py_tree(value.value, path, depth)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        return value if math.isfinite(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, bytes | bytearray):
        return value.hex()
    if id(value) in path:
        return {"$cycle": True}
    if depth > MAX_DEPTH:
        return {"$depth": True}
    path.add(id(value))
    try:
        if isinstance(value, list | tuple):
            return [py_tree(item, path, depth + 1) for item in value]
        if not isinstance(value, KaitaiStruct):
            return str(value)
        tree = {}
        for name in field_names(value):
            try:
                item = getattr(value, name)
            except Exception as e:  # noqa: BLE001 - mirrors js_dump.js: any failure is reported
                tree[lower_camel(name)] = {"$error": describe(e)}
                continue
            tree[lower_camel(name)] = py_tree(item, path, depth + 1)
        return tree
    finally:
        path.discard(id(value))


def py_dump(fmt: Format, file: Path) -> Any:
    cls = getattr(importlib.import_module(fmt.py_module), fmt.py_class)
    try:
        parsed = cls.from_bytes(file.read_bytes())
    except Exception as e:  # noqa: BLE001 - as js_dump.js: a parse error becomes the tree
        return {"error": describe(e)}
    return py_tree(parsed)


# --- comparison ------------------------------------------------------------------------------


def same_scalar(py: Any, js: Any) -> bool:
    if isinstance(py, bool) or isinstance(js, bool):
        return type(py) is type(js) and py == js
    if isinstance(py, int) and abs(py) > MAX_SAFE_INT:
        if isinstance(js, str):  # a BigInt, printed exactly
            return js == str(py)
        # A double from the JS runtime: equal to the Python value rounded to a double.
        return isinstance(js, int | float) and float(py) == float(js)
    if isinstance(py, int | float) and isinstance(js, int | float):
        return py == js
    return type(py) is type(js) and py == js


def diff(py: Any, js: Any, where: str = "", out: list[str] | None = None) -> list[str]:
    """Where the Python tree and the JS tree differ (at most MAX_DIFFS places)."""
    out = [] if out is None else out
    if len(out) >= MAX_DIFFS:
        return out
    here = where or "/"
    if isinstance(py, dict) and isinstance(js, dict):
        if "$error" in py and "$error" in js:
            return out  # both runtimes failed on this instance; their messages differ
        only_py, only_js = py.keys() - js.keys(), js.keys() - py.keys()
        if only_py or only_js:
            out.append(f"{here}: only in Python {sorted(only_py)}, only in JS {sorted(only_js)}")
        for key in py.keys() & js.keys():
            diff(py[key], js[key], f"{where}/{key}", out)
    elif isinstance(py, list) and isinstance(js, list):
        if len(py) != len(js):
            out.append(f"{here}: {len(py)} elements in Python, {len(js)} in JS")
        for i, (a, b) in enumerate(zip(py, js, strict=False)):
            diff(a, b, f"{where}/{i}", out)
    elif not same_scalar(py, js):
        out.append(f"{here}: Python {short(py)} != JS {short(js)}")
    return out


def short(value: Any, limit: int = 120) -> str:
    text = json.dumps(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def covers(tree: Any, parts: list[str]) -> bool:
    if not parts:
        return True
    part, rest = parts[0], parts[1:]
    if part == "*":
        return isinstance(tree, list) and any(covers(item, rest) for item in tree)
    return isinstance(tree, dict) and part in tree and covers(tree[part], rest)


# --- running node ------------------------------------------------------------------------------


@cache
def _node_js_dump(js_class: str, files: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["node", str(JS_DUMP), js_class, *files],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def run_js_dump(js_class: str, files: list[Path]) -> dict[str, Any]:
    """{str(file): tree} from one `node tools/js_dump.js` run over all the files (cached)."""
    proc = _node_js_dump(js_class, tuple(map(str, files)))
    if proc.returncode != 0:
        pytest.fail(f"tools/js_dump.js {js_class} exited {proc.returncode}:\n{proc.stderr}")
    return json.loads(proc.stdout)


def parse_error(tree: Any) -> str | None:
    """The message of a file-level parse error ({"error": message}), else None."""
    if isinstance(tree, dict) and set(tree) == {"error"} and isinstance(tree["error"], str):
        return tree["error"]
    return None


@pytest.fixture(scope="session")
def node() -> None:
    if shutil.which("node") is None:
        pytest.skip("node is not on PATH: cannot run the JavaScript (Web IDE) parsers")
    if not JS_RUNTIME.is_dir():
        pytest.skip(f"{JS_RUNTIME.relative_to(ROOT)} is missing: run `npm ci` in {ROOT}")


def js_trees(fmt: Format) -> dict[str, Any]:
    """Node runs once per format, over all its sample files."""
    return run_js_dump(fmt.js_class, fmt.files())


CASES = [
    pytest.param(fmt, file, id=f"{fmt.js_class}-{file.name}")
    for fmt in FORMATS
    for file in fmt.files()
]


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda fmt: fmt.js_class)
def test_format_has_samples(fmt: Format) -> None:
    assert fmt.files(), f"no sample files match {fmt.samples}"


@pytest.mark.parametrize(("fmt", "file"), CASES)
def test_js_parser_reads_what_python_reads(node: None, fmt: Format, file: Path) -> None:
    py = py_dump(fmt, file)
    js = js_trees(fmt)[str(file)]
    assert parse_error(py) is None, f"Python cannot parse {file.name}: {parse_error(py)}"
    assert parse_error(js) is None, f"JavaScript cannot parse {file.name}: {parse_error(js)}"
    for required in fmt.required:
        assert covers(py, required.split("/")), f"{required} is not in the Python tree"
    differences = diff(py, js)
    assert not differences, f"{file.name}: JS and Python trees differ:\n" + "\n".join(differences)


def test_bad_magic_fails_in_both(node: None, tmp_path: Path) -> None:
    fmt = FORMATS[0]
    data = bytearray((ROOT / "tests" / "data" / "swh" / "tiny.shard").read_bytes())
    data[0:9] = b"XWHShard\0"
    bad = tmp_path / "bad_magic.shard"
    bad.write_bytes(bytes(data))

    cls = getattr(importlib.import_module(fmt.py_module), fmt.py_class)
    with pytest.raises(ValidationNotEqualError):
        cls.from_bytes(bytes(data))
    py = py_dump(fmt, bad)
    js = run_js_dump(fmt.js_class, [bad])[str(bad)]
    assert (parse_error(py) or "").startswith("ValidationNotEqualError"), py
    assert (parse_error(js) or "").startswith("ValidationNotEqualError"), js
