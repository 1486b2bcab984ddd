"""``reader.to_dict()`` is JSON-ready for every bundled sample of every format, as ``shardkit
dump`` prints it: plain ``json.dumps`` takes it, with no ``default=`` hook."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import shardkit
from shardkit.cli import main

DATA = Path(__file__).parent / "data"
SAMPLES = sorted(
    [p for p in (DATA / "swh").glob("*.shard")]
    + [p for p in (DATA / "zss").glob("*.zss") if not p.name.startswith(("corrupt", "incomplete"))]
    + list((DATA / "mdb").rglob("*.mdb"))
    + [p for p in (DATA / "amudai").glob("*.amudai.shard")]
    + [p.parent for p in (DATA / "neuroglancer").glob("*/info")]
)


def test_every_format_has_samples() -> None:
    kinds = {p.suffix or "dataset" for p in SAMPLES}
    assert {".shard", ".zss", ".mdb", "dataset"} <= kinds
    assert any(p.name.endswith(".amudai.shard") for p in SAMPLES)


@pytest.mark.parametrize("path", SAMPLES, ids=[str(p.relative_to(DATA)) for p in SAMPLES])
def test_to_dict_is_json_ready(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with shardkit.open(path) as reader:
        tree = reader.to_dict()
    text = json.dumps(tree)  # no default=: bytes, hashes, numpy values are already plain
    assert json.loads(text) == tree
    assert main(["dump", str(path), "--compact"]) == 0
    assert json.loads(capsys.readouterr().out) == tree  # one rule for bytes: the CLI's
