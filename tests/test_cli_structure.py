"""The command line is the package ``shardkit.cli``; the library never imports from it."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import shardkit
import shardkit.cli

SRC = Path(shardkit.__file__).parent


def _imports(path: Path) -> list[str]:
    """Every module name ``path`` imports, relative imports resolved."""
    package = ".".join(("shardkit", *path.relative_to(SRC).with_suffix("").parts))
    if path.name != "__init__.py":
        package = package.rpartition(".")[0]
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            mod = (f"{base}.{node.module}" if node.module else base) if node.level else \
                node.module or ""
            names.append(mod)
            names += [f"{mod}.{a.name}" for a in node.names]
    return names


def test_nothing_outside_the_cli_package_imports_from_it():
    # python -m shardkit: the command line's own entry point, the one exception
    assert "shardkit.cli.main" in _imports(SRC / "__main__.py")
    library = [p for p in SRC.rglob("*.py")
               if "cli" not in p.relative_to(SRC).parts and p.name != "__main__.py"]
    assert len(library) > 30  # the whole library is looked at
    offenders = {(str(p.relative_to(SRC)), n) for p in library for n in _imports(p)
                 if n == "shardkit.cli" or n.startswith("shardkit.cli.")}
    assert offenders == set()
    # the old modules are gone
    assert not (SRC / "cli.py").exists() and not (SRC / "cli_swh.py").exists()
    assert not (SRC / "ng" / "cli.py").exists()


def test_library_modules_load_without_the_cli():
    mods = [m.name for m in pkgutil.walk_packages([str(SRC)], "shardkit.")
            if not m.name.startswith(("shardkit.cli", "shardkit.__main__"))]
    assert {"shardkit.bulk", "shardkit.ng.convert", "shardkit.schema_files"} <= set(mods)
    code = ("import importlib, sys\n"
            f"for m in {mods!r}: importlib.import_module(m)\n"
            "print(sorted(m for m in sys.modules if m.startswith('shardkit.cli')))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert proc.stdout.splitlines()[-1] == "[]"


def test_every_command_module_registers_through_add_parser():
    assert shardkit.cli.MODULES == ["read", "verify", "diff", "schema", "ng", "create", "view"]
    for name in shardkit.cli.MODULES:
        assert callable(importlib.import_module(f"shardkit.cli.{name}").add_parser)
    sub = next(a for a in shardkit.cli.build_parser()._actions
               if a.dest == "command")
    assert sorted(sub.choices) == ["create", "cutout", "delete", "diff", "dump", "formats", "get",
                                   "head", "info", "ls", "map", "ng", "schema", "truncate",
                                   "verify", "view"]


def test_python_dash_m_and_the_entry_point_run_the_package():
    proc = subprocess.run([sys.executable, "-m", "shardkit", "formats", "--json"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and '"id": "swh"' in proc.stdout
    pyproject = (SRC.parents[1] / "pyproject.toml").read_text(encoding="utf-8")
    assert 'shardkit = "shardkit.cli:main"' in pyproject
    assert '"shardkit.cli",' in pyproject


def test_the_command_reference_covers_every_command_and_option():
    page = (SRC.parents[1] / "docs" / "cli.md").read_text(encoding="utf-8")
    parser = shardkit.cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name, p in sub.choices.items():
        assert f"`shardkit {name}" in page or f"shardkit {name} " in page, name
        _covers(page, name, p)


def _covers(page: str, name: str, parser) -> None:
    """Every option of ``parser`` is in ``page``; a subcommand's (``ng spec``) in its own
    section, ``### `shardkit NAME ...``, down to the next heading (``--json`` and ``--debug``,
    which every command takes, said once above)."""
    shared = ("--help", "--version", "--json", "--debug") if " " in name else ("--help",
                                                                               "--version")
    for action in parser._actions:
        for flag in action.option_strings:
            if flag.startswith("--") and flag not in shared:
                assert f"`{flag}" in page or f"{flag} " in page or f"{flag}`" in page, \
                    (name, flag)
        choices = getattr(action, "choices", None)
        for sub_name, sub_parser in (choices.items() if isinstance(choices, dict) else ()):
            if not isinstance(sub_parser, type(parser)):
                continue
            title = f"### `shardkit {name} {sub_name}"
            assert title in page, title
            section = page.split(title, 1)[1].split("\n#", 1)[0]
            _covers(section, f"{name} {sub_name}", sub_parser)


def _help(*argv: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "shardkit", *argv, "--help"],
                          capture_output=True, text=True, check=False,
                          env={**__import__("os").environ, "COLUMNS": "2000"})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_the_top_level_help_gives_every_exit_code():
    line = next(ln for ln in _help().splitlines() if ln.startswith("exit codes:"))
    for said in ("verify", "get", "diff", "delete", "2 usage error", "130 interrupted"):
        assert said in line, said


def test_ls_help_says_zs_where_its_options_work_on_zs(tmp_path):
    text = _help("ls")
    for flag in ("--hex", "--prefix", "--start", "--stop"):
        line = next(ln for ln in text.splitlines() if ln.strip().startswith(flag))
        assert "ZSS, ZS" in line, line
    # and they do work on ZS
    from shardkit.writers.zs import write_zs

    write_zs(tmp_path / "r.zs", [b"apple", b"banana", b"cherry"], codec="none")
    proc = subprocess.run([sys.executable, "-m", "shardkit", "ls", str(tmp_path / "r.zs"),
                           "--hex", "--prefix", "b"], capture_output=True, text=True,
                          check=False)
    assert (proc.returncode, proc.stdout) == (0, b"banana".hex() + "\n")
    assert "ZSS and ZS records" in _help("info")
