"""A user's script using the Xet MDB API passes ``mypy --strict`` (reader, values, verify
report, writer), and the types it relies on are what the objects are at run time."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "tests" / "data" / "mdb" / "real" / "session" / (
    "b04ac8152506ea5af6b90a7378a3d35c46cbef373a597241937795e323cea8f1.mdb")

USER_SCRIPT = '''
from __future__ import annotations

import sys
from collections.abc import Sequence

from shardkit.errors import Problem
from shardkit.formats.xet_mdb import (
    ChunkEntry, ChunkRef, FileInfo, MdbFooter, MdbShard, Term, VerifyReport, XetHash, XorbInfo,
    open_mdb,
)
from shardkit.sources import FileSource
from shardkit.writers.xet_mdb import build, write_mdb


def sizes(path: str) -> dict[str, int]:
    with MdbShard(FileSource(path)) as shard:
        assert isinstance(shard, MdbShard)
        files: Sequence[FileInfo] = shard.files
        out: dict[str, int] = {str(f.hash): f.size for f in files}
        first: FileInfo | None = shard.file(files[0].hash)
        if first is not None:
            terms: tuple[Term, ...] = first.terms
            sha: XetHash | None = first.sha256
            out["terms"] = len(terms) + (0 if sha is None else 1)
        x: XorbInfo = shard.xorbs[0]
        c: ChunkEntry = x.chunks[0]
        ref: ChunkRef | None = shard.find_chunk(c.hash)
        if ref is not None:
            out["chunk"] = ref.chunk_index
        footer: MdbFooter | None = shard.footer
        if footer is not None and not footer.expired():
            out["ts"] = footer.creation_timestamp
        report: VerifyReport = shard.verify(strict=False)
        problems: list[Problem] = list(report) + report.notes
        out["problems"] = len(problems)
        data: bytes = build(shard)
        out["bytes"] = len(data) + write_mdb(sys.argv[0] + ".out", files, shard.xorbs)
        h: XetHash = XetHash(str(x.hash))
        out["same"] = int(h == x.hash)
    with open_mdb(path) as again:
        out["n"] = len(again)
    return out
'''


def test_user_script_passes_mypy_strict(tmp_path: Path) -> None:
    pytest.importorskip("mypy", reason="mypy is in the dev extra")
    script = tmp_path / "mdb_user.py"
    script.write_text(USER_SCRIPT)
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent",
         "--cache-dir", str(tmp_path / "cache"), str(script)],
        capture_output=True, text=True, timeout=300,
        env={"MYPYPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"}, cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "no issues found" in out.stdout


def test_the_user_script_runs(tmp_path: Path) -> None:
    namespace: dict[str, object] = {}
    exec(compile(USER_SCRIPT, "mdb_user.py", "exec"), namespace)
    argv = sys.argv
    sys.argv = [str(tmp_path / "run")]
    try:
        out = namespace["sizes"](str(SAMPLE))  # type: ignore[operator]
    finally:
        sys.argv = argv
    assert out["problems"] == 0 and out["same"] == 1 and out["n"] > 0
    assert (tmp_path / "run.out").stat().st_size == SAMPLE.stat().st_size
