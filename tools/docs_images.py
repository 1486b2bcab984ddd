"""Make the docs' pictures: schema diagrams and the byte layouts of real samples.

``make docs`` runs this through the mkdocs hook (``tools/mkdocs_hooks.py``); it can also be run
alone: ``python tools/docs_images.py --outdir DIR``. Nothing it makes is committed.

- ``diagrams/<schema id>.svg`` for every ``schemas/*.ksy``: the Kaitai compiler's own graphviz
  output (``tools/ksy_graphviz.js``, the npm compiler in node_modules) rendered by Graphviz's
  ``dot``, top to bottom.
- ``layouts/<format id>.svg`` for every format with a sample in ``tests/data``: the sections that
  ``shardkit map --json`` lists, drawn to scale on one bar and one row each.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

#: format id -> (sample files in order of preference, relative to the repo root; globs allowed).
#: The first that exists is drawn; a format with none (a format being added) is skipped.
SAMPLES: dict[str, list[str]] = {
    "swh": ["tests/data/swh/deleted.shard"],
    "mdb": ["tests/data/mdb/real/session/"
            "b04ac8152506ea5af6b90a7378a3d35c46cbef373a597241937795e323cea8f1.mdb"],
    "zss": ["tests/data/zss/tiny_zlib.zss"],
    "zs": ["tests/data/zs/reference/letters-none.zs"],
    "neuroglancer": ["tests/data/neuroglancer/cv_identity_raw/0.shard"],
    "amudai": ["tests/data/amudai/single.amudai.shard"],
    "mosaic": ["tests/data/mosaic/tiles.mosaic"],
}

MAX_ROWS = 22
PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1",
           "#ff9da7", "#9c755f", "#bab0ac", "#a0cbe8", "#ffbe7d", "#8cd17d", "#ff9d9a",
           "#499894", "#f1ce63", "#d4a6c8", "#fabfd2", "#d7b5a6", "#79706e"]  # Tableau 20


class ImageError(RuntimeError):
    """A picture could not be made (a tool is missing or failed)."""


def _run(cmd: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, **kw)
    except FileNotFoundError as e:
        raise ImageError(f"{cmd[0]} is not installed ({e})") from e
    if done.returncode:
        raise ImageError(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr.strip()}")
    return done


#: An edge from a type's parameters (``chunk__params:idx_type -> ...``): the compiler draws the
#: edge but never the ``*__params`` node, so dot would draw a stray bare node of that name.
_PARAMS_EDGE = re.compile(r"^\s*(\w+__params)(?::\w+)?\s*->.*\n", re.M)


def _without_params(dot: str) -> str:
    """``dot`` without the edges from ``*__params`` nodes it does not define."""
    defined = set(re.findall(r"^\s*(\w+)\s*\[", dot, re.M))
    return _PARAMS_EDGE.sub(lambda m: "" if m.group(1) not in defined else m.group(0), dot)


def diagram_focus(svg: Path) -> dict[str, float] | None:
    """Where a schema diagram's top-level node (the root type's ``seq`` table) is: ``x`` and
    ``y`` of its top-left corner as fractions of the picture, ``width`` and ``height`` of the
    picture in pt; None when the picture has no such node."""
    text = svg.read_text(encoding="utf-8")
    size = re.search(r'<svg width="([\d.]+)pt" height="([\d.]+)pt"', text)
    shift = re.search(r'transform="scale\(1 1\) rotate\(0\) translate\(([-\d.]+) ([-\d.]+)\)"',
                      text)
    at = text.find(f"<title>{svg.stem}__seq</title>")
    corners = re.search(r'points="([^"]+)"', text[at:]) if at >= 0 else None
    if not (size and shift and corners):
        return None
    width, height = float(size.group(1)), float(size.group(2))
    xs, ys = zip(*((float(a), float(b)) for a, b in
                   (p.split(",") for p in corners.group(1).split())), strict=True)
    return {"x": (min(xs) + float(shift.group(1))) / width,
            "y": (min(ys) + float(shift.group(2))) / height,
            "width": width, "height": height}


def diagrams(outdir: Path) -> list[Path]:
    """Render every schema's Kaitai graphviz diagram to ``outdir/<id>.svg``."""
    if shutil.which("dot") is None:
        raise ImageError("Graphviz's dot is missing (Debian: apt-get install graphviz; "
                         "`make install` installs it when run as root)")
    dotdir = outdir / "dot"
    _run(["node", str(ROOT / "tools" / "ksy_graphviz.js"), "--outdir", str(dotdir)])
    made = []
    for dot in sorted(dotdir.glob("*.dot")):
        svg = outdir / f"{dot.stem}.svg"
        # The compiler's graph as it is, laid out top to bottom: its left-to-right layout puts
        # every type of a format side by side (up to 10,000 pt wide), unreadable on a page.
        text = dot.read_text(encoding="utf-8")
        if "\trankdir=LR;" not in text:
            raise ImageError(f"{dot.name}: the compiler's graph no longer sets rankdir=LR")
        text = _without_params(text.replace("\trankdir=LR;", "\trankdir=TB;", 1))
        dot.write_text(text, encoding="utf-8")
        # dot warns about ports the compiler names but does not draw; the picture is whole
        _run(["dot", "-Tsvg", str(dot), "-o", str(svg)])
        made.append(svg)
    shutil.rmtree(dotdir)
    return made


def sample(fmt: str) -> Path | None:
    """The first existing sample file of ``fmt`` (see :data:`SAMPLES`), or None."""
    for pattern in SAMPLES.get(fmt, []):
        hits = sorted(ROOT.glob(pattern))
        if hits:
            return hits[0]
    return None


def shardkit_map(path: Path) -> list[dict[str, Any]]:
    """``shardkit map --json PATH``, run as a user would run it."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    out = _run([sys.executable, "-m", "shardkit", "map", "--json", str(path)], env=env).stdout
    sections = json.loads(out)
    if not isinstance(sections, list) or not sections:
        raise ImageError(f"shardkit map --json {path}: no sections")
    return sections


def _rows(sections: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """Group sections by path prefix, as deep as keeps the rows within MAX_ROWS."""
    parts = [s["name"].strip("/").split("/") for s in sections]
    depth = max(len(p) for p in parts)
    while True:
        rows: list[tuple[str, list[dict[str, Any]]]] = []
        for s, p in zip(sections, parts, strict=True):
            key = "/" + "/".join(p[:depth])
            if rows and rows[-1][0] == key:
                rows[-1][1].append(s)
            else:
                rows.append((key, [s]))
        if len(rows) <= MAX_ROWS or depth == 1:
            return rows[:MAX_ROWS] if len(rows) > MAX_ROWS else rows
        depth -= 1


def _size(n: int) -> str:
    return f"{n:,} B" if n < 10_000 else f"{n / 1024:,.1f} KiB"


def layout_svg(fmt: str, path: Path, sections: list[dict[str, Any]]) -> str:
    """An SVG of ``sections`` (``shardkit map --json``) over the file ``path``, to scale."""
    size = max(max(s["end"] for s in sections), path.stat().st_size)
    rows = _rows(sections)
    def kind(s: dict[str, Any]) -> str:
        """Sections of one kind share a colour: the first and the last named part of the path
        (``/minishards/6/chunks/422`` -> minishards/chunks, ``/minishards/6/index`` ->
        minishards/index), numbers and ``@offsets`` left out."""
        named = [p for p in s["name"].strip("/").split("/") if not p.isdigit()
                 and not p.startswith("@")] or [s["name"]]
        return named[0] if len(named) == 1 else f"{named[0]}/{named[-1]}"

    kinds = list(dict.fromkeys(kind(s) for s in sections))
    colour = {k: PALETTE[i % len(PALETTE)] for i, k in enumerate(kinds)}

    def col(s: dict[str, Any]) -> str:
        return colour[kind(s)]

    label_w, bar_x, bar_w, row_h = 300, 310, 420, 22
    width = bar_x + bar_w + 170
    top = 78
    per_line = 4
    legend_y = top + row_h * len(rows) + 34
    height = legend_y + 20 * ((len(kinds) + per_line - 1) // per_line) + 24

    def x(offset: int) -> float:
        return bar_x + bar_w * offset / size

    def w(s: dict[str, Any]) -> float:
        return max(bar_w * (s["end"] - s["start"]) / size, 1.0)

    esc = html.escape
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="DejaVu Sans, Arial, sans-serif" '
        f'font-size="12">',
        f'<title>{esc(fmt)}: byte layout of {esc(path.name)}</title>',
        '<rect width="100%" height="100%" fill="#ffffff"/>',
        f'<text x="10" y="20" font-size="14" font-weight="bold">{esc(path.name)}: '
        f'{size:,} bytes, {len(sections)} sections (shardkit map --json)</text>',
        f'<text x="10" y="{top - 30}" fill="#555">whole file</text>',
        f'<rect x="{bar_x}" y="{top - 44}" width="{bar_w}" height="20" fill="#eeeeee" '
        f'stroke="#999"/>',
    ]
    for s in sections:
        out.append(f'<rect x="{x(s["start"]):.2f}" y="{top - 44}" width="{w(s):.2f}" '
                   f'height="20" fill="{col(s)}"><title>{esc(s["name"])}</title></rect>')
    out.append(f'<text x="{bar_x}" y="{top - 10}" fill="#555" font-size="10">0</text>')
    out.append(f'<text x="{bar_x + bar_w}" y="{top - 10}" fill="#555" font-size="10" '
               f'text-anchor="end">{size:,}</text>')
    for i, (name, members) in enumerate(rows):
        y = top + i * row_h
        start, end = members[0]["start"], max(m["end"] for m in members)
        label = name if len(members) == 1 else f"{name} ({len(members)} sections)"
        if len(label) > 44:
            label = "…" + label[-43:]
        note = members[0].get("note", "") if len(members) == 1 else ""
        tip = esc(f"{name}: [{start}, {end}) {note}".strip())
        out.append(f'<g><title>{tip}</title>')
        if i % 2:
            out.append(f'<rect x="0" y="{y}" width="{width}" height="{row_h}" fill="#f6f6f6"/>')
        out.append(f'<text x="{label_w}" y="{y + 15}" text-anchor="end">{esc(label)}</text>')
        out.append(f'<rect x="{bar_x}" y="{y + 5}" width="{bar_w}" height="12" fill="none" '
                   f'stroke="#dddddd"/>')
        for m in members:
            out.append(f'<rect x="{x(m["start"]):.2f}" y="{y + 5}" width="{w(m):.2f}" '
                       f'height="12" fill="{col(m)}"/>')
        span = sum(m["end"] - m["start"] for m in members)
        out.append(f'<text x="{bar_x + bar_w + 8}" y="{y + 15}" fill="#333">@{start:,}  '
                   f'{_size(span)}</text></g>')
    shown = sum(len(m) for _, m in rows)
    if shown < len(sections):
        out.append(f'<text x="10" y="{legend_y - 12}" fill="#555">… and {len(sections) - shown} '
                   'more sections (shardkit map lists them all)</text>')
    for i, k in enumerate(kinds):  # the legend: one swatch per kind of section
        lx, ly = 10 + (i % per_line) * (width - 20) // per_line, legend_y + 20 * (i // per_line)
        out.append(f'<rect x="{lx}" y="{ly}" width="12" height="12" fill="{colour[k]}"/>'
                   f'<text x="{lx + 18}" y="{ly + 11}" font-size="11">{esc(k)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def layouts(outdir: Path) -> list[Path]:
    """Draw ``outdir/<format>.svg`` for every format with a sample (see :data:`SAMPLES`)."""
    outdir.mkdir(parents=True, exist_ok=True)
    made = []
    for fmt in SAMPLES:
        path = sample(fmt)
        if path is None:
            continue
        svg = outdir / f"{fmt}.svg"
        svg.write_text(layout_svg(fmt, path, shardkit_map(path)), encoding="utf-8")
        made.append(svg)
    return made


def build(outdir: Path) -> list[Path]:
    """Make every picture under ``outdir`` (``diagrams/`` and ``layouts/``); return the files."""
    if outdir.exists():
        shutil.rmtree(outdir)
    (outdir / "diagrams").mkdir(parents=True)
    return diagrams(outdir / "diagrams") + layouts(outdir / "layouts")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--outdir", type=Path, required=True, help="folder to (re)create")
    args = parser.parse_args(argv)
    try:
        made = build(args.outdir)
    except ImageError as e:
        print(f"docs_images.py: {e}", file=sys.stderr)
        return 1
    print(f"docs_images.py: {len(made)} picture(s) in {args.outdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
