"""``shardkit create --format amudai OUT INPUT...``, run as the real command."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import shardkit
from shardkit.cli import main

REF = Path(__file__).parent / "data" / "amudai" / "reference"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "shardkit", "create", "--format", "amudai",
                           *args], capture_output=True, text=True, check=False, timeout=300)


def test_create_amudai_csv_with_schema_twolevel(tmp_path: Path) -> None:
    src = tmp_path / "p.csv"
    g = uuid.UUID(int=7)
    src.write_text(f"id,name,at,g\n1,a,2024-01-02 03:04:05,{g}\n2,,,\n3,\"c, d\",,\n")
    out = tmp_path / "p.amudai.shard"
    proc = _run(str(out), str(src), "--schema", "(id: long, name: string, at: datetime, g: guid)",
                "--layout", "twolevel", "--json")
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    assert info["records"] == 3 and info["stripes"] == 1 and info["layout"] == "twolevel"
    assert info["fields"] == ["id", "name", "at", "g"] and len(info["files"]) == 2
    with shardkit.open(out) as s:
        assert s.read_column("name") == ["a", None, "c, d"]
        assert s.read_column("g") == [g.bytes, None, None]
        assert len(s.urls) == 1
        assert s.verify() == []


def test_create_amudai_ndjson_inferred_and_schema_file(tmp_path: Path) -> None:
    out = tmp_path / "n.amudai.shard"
    proc = _run(str(out), str(REF / "nested-1.ndjson"), str(REF / "nested-2.ndjson"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"{out}: 650 records in 2 stripe(s), 7 fields (single, ")
    with shardkit.open(out) as s:
        assert [st.record_count for st in s.stripes] == [400, 250]
        assert s.field("user.geo.lat").type == "Float64"
    out2 = tmp_path / "t.amudai.shard"
    proc = _run(str(out2), str(REF / "types-3.ndjson"), "--schema-file",
                str(REF / "types.schema.json"))
    assert proc.returncode == 0, proc.stderr
    with shardkit.open(out2) as s:
        assert s.field("u64").signed is False and s.record_count == 7


def test_create_amudai_refusals_are_one_line_and_leave_nothing(tmp_path: Path, capsys) -> None:
    src = tmp_path / "r.ndjson"
    src.write_text('{"a": 1}\n{"a": "x"}\n')
    out = tmp_path / "o.amudai.shard"
    cases = [
        (["--schema", "(a: long)"], f"shardkit: error: {src}:2:a: 'x' is not a Int64 value"),
        (["--schema", "(a: float)"], "shardkit: error: unsupported type 'float' for 'a'"),
        (["--schema", "(a: long)", "--schema-file", str(src)],
         "shardkit: error: create --format amudai: give --schema or --schema-file, not both"),
        (["--codec", "zlib"], "shardkit: error: create --format amudai: --codec not supported"),
        (["--schema-file", str(tmp_path / "missing")], "shardkit: error: --schema-file "),
    ]
    for extra, message in cases:
        assert main(["create", "--format", "amudai", str(out), str(src), *extra]) == 2
        err = capsys.readouterr().err
        assert err.startswith(message), err
        assert err.count("\n") == 1
        assert sorted(p.name for p in tmp_path.iterdir()) == ["r.ndjson"]
    (tmp_path / "x.txt").write_text("a")
    assert main(["create", "--format", "amudai", str(out), str(tmp_path / "x.txt")]) == 2
    assert "only .csv, .json" in capsys.readouterr().err


def test_create_amudai_existing_out_needs_yes(tmp_path: Path) -> None:
    src = tmp_path / "r.ndjson"
    src.write_text('{"a": 1}\n')
    out = tmp_path / "o.amudai.shard"
    assert _run(str(out), str(src)).returncode == 0
    proc = _run(str(out), str(src))
    assert proc.returncode == 2 and "pass --yes" in proc.stderr
    src.write_text('{"a": 2}\n')
    assert _run(str(out), str(src), "--yes").returncode == 0
    with shardkit.open(out) as s:
        assert s.read_column("a") == [2]


def test_the_write_page_names_every_field_diff_finds(tmp_path: Path, capsys) -> None:
    """docs/tasks/write.md runs create on people.csv, then diff against amudai-cmd's shard,
    and says which fields differ: the command's answer, field for field."""
    import re
    import shlex

    page = (Path(__file__).parents[1] / "docs" / "tasks" / "write.md").read_text("utf-8")
    block = page[page.index("shardkit create --format amudai --yes \\"):]
    create = shlex.split(block[:block.index("\n    people.amudai.shard")].replace("\\\n", "")
                         .rstrip(" \\"))
    out = tmp_path / "people.amudai.shard"
    assert main([*create[1:], str(out), str(REF / "people.csv")]) == 0
    capsys.readouterr()
    assert main(["diff", str(out), str(REF / "people.amudai.shard"), "--json"]) == 1
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()[:-1]]
    found = {r["where"] for r in rows}
    assert all(r["kind"] == "field" for r in rows) and "raw_data_size" in found
    said = block[block.index("# the same columns and values"):].split("```")[0]
    named = set(re.findall(r"\b([a-z]+(?:_[a-z]+)+|urls)\b", said))
    assert found <= named, found - named
