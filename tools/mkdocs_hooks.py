"""mkdocs hook: the docs' pictures are made at build time, never committed.

``mkdocs.yml`` names this file under ``hooks:``. Before the pages are read, it runs
``tools/docs_images.py`` into ``.docs-build/`` (gitignored) and adds what it made to the site as
``diagrams/<schema id>.svg`` and ``layouts/<format id>.svg``, so pages link to them like any file
and ``mkdocs build --strict`` fails on a link to a picture that was not made.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / ".docs-build"
# Sphinx roles in the docstrings (:class:`~a.b.C`), as mkdocstrings renders them
ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|data|attr|exc|obj):<code>(~?)([^<]+)</code>")


def _docs_images() -> Any:
    spec = importlib.util.spec_from_file_location("docs_images", ROOT / "tools" / "docs_images.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Make the pictures and add them to the site's files."""
    images = _docs_images()
    try:
        made = images.build(OUT)
    except images.ImageError as e:
        raise PluginError(f"docs pictures: {e}") from e
    for path in made:
        uri = path.relative_to(OUT).as_posix()
        files.append(File.generated(config, uri, abs_src_path=str(path)))
    return files


def on_page_content(html: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    """Docstrings are written for Sphinx too: show ``:class:`~a.B``` as ``B`` and end an
    ``Example::`` paragraph with one colon. Schema diagrams open on their top-level node, with
    a link to the full-size picture (:func:`diagrams`)."""
    html = ROLE.sub(lambda m: f"<code>{m.group(2).rsplit('.', 1)[-1] if m.group(1) else m.group(2)}"
                    "</code>", html)
    return diagrams(html.replace("::</p>", ":</p>"), OUT / "diagrams")


#: A schema diagram as a page shows it: ``[![x.ksy](../diagrams/x.svg)](../diagrams/x.svg)``.
DIAGRAM = re.compile(r'<p><a href="([^"]*diagrams/(\w+)\.svg)"><img ([^>]*?)\s*/?></a></p>')


def diagrams(html: str, made: Path) -> str:
    """Each schema diagram in ``html``: ``data-focus-x``/``-y`` on its picture (where its
    top-level node is, for ``docs/js/diagrams.js`` to scroll its box there) and, under the box,
    a link to the full-size picture with its size."""
    images = _docs_images()

    def one(m: re.Match[str]) -> str:
        href, name, attrs = m.group(1), m.group(2), m.group(3)
        svg = made / f"{name}.svg"
        focus = images.diagram_focus(svg) if svg.is_file() else None
        if focus is None:
            return m.group(0)
        return (f'<p><a href="{href}"><img {attrs} data-focus-x="{focus["x"]:.4f}" '
                f'data-focus-y="{focus["y"]:.4f}" /></a></p>\n'
                f'<p class="diagram-full"><a href="{href}">{name}.svg: the full-size picture '
                f'({focus["width"]:.0f} × {focus["height"]:.0f} pt)</a></p>')

    return DIAGRAM.sub(one, html)
