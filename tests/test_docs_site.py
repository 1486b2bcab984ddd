"""The docs site: what it must hold, and the pictures `make docs` generates.

The build itself (`make docs`: mkdocs build --strict) runs in CI after the tests; these tests
check the parts a build would not notice: a public name without a reference entry or a
docstring, a format page without its pictures, a format without a sample to draw, a README
grown past 12 KB or without its two commands.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import shardkit
from shardkit.formats import FORMATS

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
WRITERS = ["amudai", "mosaic", "neuroglancer", "swh", "xet_mdb", "zs", "zss"]
#: format id -> its page
PAGES = {"swh": "swh", "mdb": "mdb", "zss": "zss", "neuroglancer": "neuroglancer",
         "amudai": "amudai", "zs": "zs", "mosaic": "mosaic"}
HEADINGS = ["## What it is", "## Layout", "## A real file, byte by byte", "## Command line",
            "## Python API", "## What `verify` checks", "## Remote costs", "## Tested against"]
SVG = "{http://www.w3.org/2000/svg}"


def _images() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_images", ROOT / "tools" / "docs_images.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _entries() -> list[str]:
    """Every ``::: dotted.name`` of the API pages."""
    return [m for page in sorted((DOCS / "api").glob("*.md"))
            for m in re.findall(r"^::: ([\w.]+)\s*$", page.read_text(), re.M)]


def _resolve(dotted: str) -> Any:
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for name in parts[i:]:
            obj = getattr(obj, name)
        return obj
    raise ImportError(dotted)


def test_readme_is_short_and_keeps_the_two_commands() -> None:
    readme = (ROOT / "README.md").read_bytes()
    assert len(readme) <= 12 * 1024, f"README.md is {len(readme)} bytes, over 12 KB"
    text = readme.decode()
    assert ("make install demo    # venv + shardkit + pinned Kaitai compiler, then shardkit on "
            "the bundled samples\n") in text
    assert ("make test            # the whole test suite (unit, real-file, reference interop, "
            "remote, Web IDE parity)\n") in text
    for link in re.findall(r"\]\((docs/[^)#]+)", text):
        assert (ROOT / link).exists(), link


def test_every_public_name_has_a_reference_entry() -> None:
    entries = _entries()
    assert len(entries) == len(set(entries)), "an API entry is listed twice"
    documented = [_resolve(e) for e in entries]
    missing = [name for name in shardkit.__all__
               if not any(obj is getattr(shardkit, name) for obj in documented)]
    assert missing == []
    for module in WRITERS:
        assert f"shardkit.writers.{module}" in entries


def test_every_public_name_has_a_docstring() -> None:
    names = [(f"shardkit.{n}", getattr(shardkit, n)) for n in shardkit.__all__]
    for module in WRITERS:
        mod = importlib.import_module(f"shardkit.writers.{module}")
        assert inspect.getdoc(mod), mod.__name__
        names += [(f"{mod.__name__}.{n}", getattr(mod, n)) for n in mod.__all__]
    bare = [name for name, obj in names
            if (inspect.isclass(obj) or inspect.isfunction(obj)) and not inspect.getdoc(obj)]
    # and their public methods and properties, wherever in shardkit they are defined
    for _name, obj in names:
        for klass in getattr(obj, "__mro__", ()) if inspect.isclass(obj) else ():
            if not klass.__module__.startswith("shardkit"):
                continue
            for attr, member in vars(klass).items():
                fn = getattr(member, "__func__", None) or getattr(member, "fget", None) or \
                    getattr(member, "func", None) or member
                if not attr.startswith("_") and inspect.isfunction(fn) and not fn.__doc__:
                    bare.append(f"{klass.__module__}.{klass.__qualname__}.{attr}")
    assert bare == []


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_every_format_has_a_page_with_its_pictures(fmt: str) -> None:
    page = DOCS / "formats" / f"{PAGES[fmt]}.md"
    text = page.read_text()
    positions = [text.find(h) for h in HEADINGS]
    assert -1 not in positions, [h for h, p in zip(HEADINGS, positions, strict=True) if p < 0]
    assert positions == sorted(positions), "the headings are out of order"
    assert f"](../layouts/{fmt}.svg)" in text
    diagrams = re.findall(r"\]\(\.\./diagrams/(\w+)\.svg\)", text)
    assert diagrams, "no schema diagram"
    for schema in diagrams:
        assert (ROOT / "schemas" / f"{schema}.ksy").exists(), schema


def test_every_format_has_a_sample_to_draw() -> None:
    images = _images()
    assert set(FORMATS) <= set(images.SAMPLES)
    for fmt in FORMATS:
        if fmt == "zs" and images.sample(fmt) is None:
            continue  # the ZS samples come with the ZS reader
        assert images.sample(fmt) is not None, fmt


@pytest.mark.parametrize("fmt", ["swh", "amudai"])
def test_layout_picture_draws_what_map_lists(fmt: str) -> None:
    images = _images()
    path = images.sample(fmt)
    sections = images.shardkit_map(path)
    root = ET.fromstring(images.layout_svg(fmt, path, sections))
    bars = [r for r in root.iter(f"{SVG}rect") if r.find(f"{SVG}title") is not None]
    # the whole-file bar has one rectangle per section, titled with its name, placed to scale
    assert [b.find(f"{SVG}title").text for b in bars] == [s["name"] for s in sections]
    size = path.stat().st_size
    for bar, s in zip(bars, sections, strict=True):
        assert float(bar.get("x")) == pytest.approx(310 + 420 * s["start"] / size, abs=0.01)
    if fmt == "swh":
        assert [s["name"] for s in sections][:3] == ["/magic", "/reserved", "/header"]
        assert sum(s["size"] for s in sections) == size  # an SWH shard has no gaps


@pytest.mark.node
def test_schema_diagrams_come_from_the_kaitai_compiler(tmp_path: Path) -> None:
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    subprocess.run(["node", str(ROOT / "tools" / "ksy_graphviz.js"), "--outdir", str(tmp_path)],
                   check=True, capture_output=True)
    schemas = sorted(p.stem for p in (ROOT / "schemas").glob("*.ksy"))
    assert sorted(p.stem for p in tmp_path.glob("*.dot")) == schemas
    dot = (tmp_path / "swh_read_shard.dot").read_text()
    assert dot.startswith("digraph {") and "num_objects" in dot and "ofs_index" in dot
    # every node an edge meets is drawn with a label (ksc leaves an imported type's node out,
    # which Graphviz would draw as a bare `cmph_chd_ph__seq`); the edges from `*__params`
    # nodes are dropped by docs_images (see the next test)
    for path in tmp_path.glob("*.dot"):
        text = path.read_text()
        drawn = set(re.findall(r"^\s*(\w+) \[", text, re.M))
        ends = {n for e in re.findall(r"(\w+)(?::\w+)? -> (\w+)", text) for n in e
                if not n.endswith("__params")}
        assert ends <= drawn, (path.name, sorted(ends - drawn))
    assert 'cmph_chd_ph__seq [label="cmph_chd_ph\\n(drawn in cmph_chd_ph.ksy)"' in dot
    if shutil.which("dot") is None:
        pytest.skip("Graphviz's dot is not installed (make install installs it as root)")
    made = _images().diagrams(tmp_path / "svg")
    assert sorted(p.stem for p in made) == schemas
    svg = ET.parse(made[schemas.index("zss")]).getroot()
    assert svg.tag == f"{SVG}svg"
    assert "len_header" in "".join(svg.itertext())


def _hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mkdocs_hooks",
                                                  ROOT / "tools" / "mkdocs_hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.node
def test_wide_diagrams_open_on_their_top_level_node_with_a_full_size_link(tmp_path: Path) -> None:
    """The MDB and Amudai diagrams are thousands of pt wide: the page's picture carries where
    the root type's seq table is (docs/js/diagrams.js scrolls its box there) and a link to the
    full-size picture; no diagram draws a stray ``*__params`` node."""
    if shutil.which("node") is None or shutil.which("dot") is None:
        pytest.skip("node and Graphviz's dot are needed")
    import markdown

    made = _images().diagrams(tmp_path / "diagrams")
    for svg in made:
        titles = [t.text or "" for t in ET.parse(svg).getroot().iter(f"{SVG}title")]
        assert not [t for t in titles if t.endswith("__params")], svg.name
    hooks = _hooks()
    for page, name in (("mdb.md", "xet_mdb_shard"), ("amudai.md", "amudai_shard")):
        text = (ROOT / "docs" / "formats" / page).read_text(encoding="utf-8")
        html = hooks.diagrams(markdown.markdown(text), tmp_path / "diagrams")
        m = re.search(rf'<img alt="{name}.ksy" src="../diagrams/{name}.svg" '
                      r'data-focus-x="([\d.]+)" data-focus-y="([\d.]+)" />', html)
        assert m is not None, html[:2000]
        root = ET.parse(tmp_path / "diagrams" / f"{name}.svg").getroot()
        width = float(root.get("width", "0pt").removesuffix("pt"))
        assert width > 4000  # the wide ones
        # the focus is the root type's seq table: the point lies on it in the picture
        node = next(g for g in root.iter(f"{SVG}g") if g.findtext(f"{SVG}title") ==
                    f"{name}__seq")
        xs = [float(p.split(",")[0]) for p in node.find(f".//{SVG}polygon").get("points").split()]
        assert min(xs) + 4 == pytest.approx(float(m.group(1)) * width, abs=1)
        assert float(m.group(1)) > 0.1  # not where an unscrolled box opens
        assert re.search(rf'<p class="diagram-full"><a href="../diagrams/{name}.svg">{name}.svg: '
                         rf'the full-size picture \({width:.0f} × \d+ pt\)</a></p>', html)
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert "js/diagrams.js" in config
    assert "data-focus-x" in (ROOT / "docs" / "js" / "diagrams.js").read_text(encoding="utf-8")
