"""``shardkit head`` (Amudai rows, as a table or JSON lines), run as the real command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import shardkit
from shardkit.cli import main
from shardkit.render import to_json

DATA = Path(__file__).parent / "data" / "amudai"


def _run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("name", ["single.amudai.shard", "twolevel.amudai.shard"])
def test_head_json_lines_are_the_rows(capsys, name):
    with shardkit.open(DATA / name) as shard:
        want = shard.rows(0, 5, columns=["id", "name", "tags", "when"])
        every = shard.rows(0, None)
    code, out, _ = _run(["head", str(DATA / name), "-n", "5", "--columns", "id,name,tags,when",
                         "--json"], capsys)
    assert code == 0
    assert [json.loads(ln) for ln in out.splitlines()] == json.loads(to_json(want))
    assert list(json.loads(out.splitlines()[0])) == ["id", "name", "tags", "when"]
    code, out, _ = _run(["head", str(DATA / name), "-n", "1000", "--json"], capsys)
    assert code == 0 and len(out.splitlines()) == len(every) == 68


def test_head_table(capsys):
    code, out, _ = _run(["head", str(DATA / "single.amudai.shard"), "-n", "3", "--columns",
                         "id,address,blob,when"], capsys)
    assert code == 0
    assert out == (
        "id    address                                blob    when\n"
        '-5    {"street": "0 Main St", "zip": 10000}  ""      2024-01-01T00:00:00\n'
        '995   {"street": "1 Main St", "zip": 10001}  "01"    2024-01-02T01:00:00.000001\n'
        '1995  {"street": "2 Main St", "zip": 10002}  "0202"  2024-01-03T02:00:00.000002\n')
    code, out, _ = _run(["head", str(DATA / "single.amudai.shard")], capsys)
    lines = out.splitlines()
    assert code == 0 and len(lines) == 11  # header + the default 10 rows
    assert lines[0].split()[:3] == ["id", "small", "u16"]
    code, out, _ = _run(["head", str(DATA / "single.amudai.shard"), "-n", "0"], capsys)
    assert code == 0 and out == ""


def test_head_refusals(capsys):
    code, _, err = _run(["head", str(DATA / "single.amudai.shard"), "--columns", "id,nope"],
                        capsys)
    assert code == 2 and err.startswith("shardkit: error: head: no top-level column 'nope'; "
                                        "columns: address, attrs, blob, ")
    zss = Path(__file__).parent / "data" / "zss" / "tiny_zlib.zss"
    code, _, err = _run(["head", str(zss)], capsys)
    assert code == 2
    assert err == (f"shardkit: error: head: {zss} is a ZSS compressed sorted set, not a table "
                   "(head shows the rows of an Amudai shard)\n")
    code, _, err = _run(["head", str(DATA / "single.amudai.shard"), "-n", "-1"], capsys)
    assert code == 2 and "-n must be 0 or more" in err


def test_head_column_named_twice_is_shown_once(capsys):
    """``--columns id,id`` is one column in the table, as in ``--json``."""
    code, out, _ = _run(["head", str(DATA / "single.amudai.shard"), "-n", "2", "--columns",
                         "id,when,id"], capsys)
    assert code == 0
    assert out.splitlines() == ["id   when", "-5   2024-01-01T00:00:00",
                                "995  2024-01-02T01:00:00.000001"]
    code, out, _ = _run(["head", str(DATA / "single.amudai.shard"), "-n", "1", "--json",
                         "--columns", "id,when,id"], capsys)
    assert code == 0 and list(json.loads(out)) == ["id", "when"]
