"""Let mypy see shardkit in the dev venv (``make install`` runs this).

The editable install (``pip install -e .``) imports shardkit through an import hook that maps
``shardkit`` to ``src/shardkit`` and ``shardkit.generated`` to ``generated/``; mypy does not run
import hooks, so a user's script checked with ``mypy --strict`` in the dev venv finds no
shardkit. This writes, in the venv's site-packages, a ``shardkit-stubs`` folder (the PEP 561
name mypy looks for, which Python never imports) of links to the sources: each entry of
``src/shardkit`` and ``generated/`` as ``generated``. The links point at the working tree, so
edits are seen at once; a new module directly under ``src/shardkit`` needs ``make install``
again (or this script).
"""

from __future__ import annotations

import shutil
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    src = ROOT / "src" / "shardkit"
    tree = Path(sysconfig.get_paths()["purelib"]) / "shardkit-stubs"
    if tree.is_symlink() or tree.is_file():
        tree.unlink()
    shutil.rmtree(tree, ignore_errors=True)
    tree.mkdir(parents=True)
    for entry in sorted(src.iterdir()):
        if entry.name != "__pycache__":
            (tree / entry.name).symlink_to(entry)
    (tree / "__init__.pyi").symlink_to(src / "__init__.py")  # mypy: a stub package's top
    (tree / "generated").symlink_to(ROOT / "generated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
