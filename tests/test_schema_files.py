"""The shipped schemas and `shardkit schema`: a flat folder, unique base names, exact copies."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from shardkit.cli import main
from shardkit.errors import ShardkitError
from shardkit.schema_files import SCHEMA_OF_FORMAT, resolve, schema_bytes, schemas

ROOT = Path(__file__).parents[1]
SCHEMAS = ROOT / "schemas"
FORMATS = ["swh", "mdb", "zss", "zs", "neuroglancer", "amudai", "mosaic"]


def meta_id(text: str) -> str:
    match = re.search(r"^meta:\n(?:  .*\n)*?  id: (\S+)$", text, re.M)
    assert match, "no meta/id"
    return match.group(1)


def imports_of(text: str) -> list[str]:
    """meta/imports of a .ksy (block list form, as every schema here writes it)."""
    match = re.search(r"^  imports:\n((?:    - .*\n)+)", text, re.M)
    return [] if not match else [line.split("- ", 1)[1].strip()
                                 for line in match.group(1).splitlines()]


def test_schemas_are_flat_with_unique_base_names() -> None:
    every = sorted(SCHEMAS.rglob("*.ksy"))
    assert len(every) >= 7
    assert [p for p in every if p.parent != SCHEMAS] == []
    stems = [p.stem for p in every]
    assert len(stems) == len(set(stems))
    for path in every:
        assert meta_id(path.read_text()) == path.stem, path.name


def test_imports_are_bare_names_of_schemas_beside_them() -> None:
    """What the Web IDE and the command-line compiler both resolve the same way."""
    seen = 0
    for path in SCHEMAS.glob("*.ksy"):
        for name in imports_of(path.read_text()):
            seen += 1
            assert "/" not in name, f"{path.name}: import {name} is not a bare name"
            assert (SCHEMAS / f"{name}.ksy").is_file(), f"{path.name}: no {name}.ksy"
    assert seen >= 2  # swh imports cmph_chd_ph, zss imports uleb128


def closure(name: str) -> list[str]:
    out, todo = [], [name]
    while todo:
        sid = todo.pop(0)
        if f"{sid}.ksy" in out:
            continue
        out.append(f"{sid}.ksy")
        todo += imports_of((SCHEMAS / f"{sid}.ksy").read_text())
    return out


def test_index_lists_every_schema_with_its_imports() -> None:
    index = schemas()
    assert sorted(index) == sorted(p.stem for p in SCHEMAS.glob("*.ksy"))
    for sid, info in index.items():
        assert info.upload == tuple(closure(sid)), sid
    assert index["swh_read_shard"].upload == ("swh_read_shard.ksy", "cmph_chd_ph.ksy")
    assert index["zss"].upload == ("zss.ksy", "uleb128.ksy")
    assert {info.format for info in index.values()} - {None} == set(FORMATS)
    assert [info.format for info in index.values()] == [*sorted(FORMATS),
                                                       *[None] * (len(index) - len(FORMATS))]
    # shared types imported by a format's schema, and payloads stored inside Neuroglancer shards
    assert sorted(sid for sid, info in index.items() if info.format is None) == [
        "cmph_chd_ph", "ebml_vint", "ng_annotation", "ng_annotation_by_id", "ng_annotation_cell",
        "ng_compressed_segmentation", "ng_mesh_manifest", "ng_skeleton", "ph_fmph_go", "uleb128"]


@pytest.mark.parametrize("name", ["zss", "zss.ksy", "uleb128", "neuroglancer",
                                  "neuroglancer_uint64_sharded.ksy"])
def test_resolve_names(name: str) -> None:
    info = resolve(name)
    assert (SCHEMAS / info.filename).is_file()
    assert info.id in name or SCHEMA_OF_FORMAT[name] == info.id


def test_resolve_unknown_and_bad_file_names() -> None:
    with pytest.raises(ShardkitError, match="known: swh, mdb"):
        resolve("png")
    with pytest.raises(ShardkitError, match="not a schema file name"):
        schema_bytes("../README.md")


@pytest.mark.parametrize("fmt", FORMATS)
def test_cli_writes_exactly_the_upload_files(fmt: str, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "ide"
    assert main(["schema", fmt, "-o", str(out)]) == 0
    std = capsys.readouterr()
    files = sorted(p.name for p in out.iterdir())
    assert files == sorted(closure(SCHEMA_OF_FORMAT[fmt]))
    for name in files:
        assert (out / name).read_bytes() == (SCHEMAS / name).read_bytes(), name
    assert std.out.splitlines() == [str(out / n) for n in closure(SCHEMA_OF_FORMAT[fmt])]
    assert std.err.startswith("next: open https://ide.kaitai.io, upload ")
    assert len(std.err.splitlines()) == 1


def test_cli_json_and_overwrite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "ide"
    out.mkdir()
    (out / "cmph_chd_ph.ksy").write_text("stale")
    assert main(["schema", "swh", "-o", str(out), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "swh_read_shard" and doc["format"] == "swh"
    assert doc["files"] == [str(out / "swh_read_shard.ksy"), str(out / "cmph_chd_ph.ksy")]
    assert "swh_read_shard.ksy and cmph_chd_ph.ksy" in doc["hint"]
    assert (out / "cmph_chd_ph.ksy").read_bytes() == (SCHEMAS / "cmph_chd_ph.ksy").read_bytes()
    assert sorted(p.name for p in out.iterdir()) == ["cmph_chd_ph.ksy", "swh_read_shard.ksy"]


def test_cli_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    kinds = [line.split()[0] for line in lines]
    assert kinds[:len(FORMATS)] == FORMATS_SORTED
    # the Neuroglancer payloads (mosaic imports ph_fmph_go)
    assert kinds[len(FORMATS):].count("(payload)") == 5
    assert set(kinds[len(FORMATS):]) == {"(imported)", "(payload)"}
    assert "(+ cmph_chd_ph.ksy)" in next(line for line in lines if line.startswith("swh "))
    assert main(["schema", "--list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["file"] for r in rows} == {p.name for p in SCHEMAS.glob("*.ksy")}


FORMATS_SORTED = sorted(FORMATS)


@pytest.mark.parametrize(("argv", "message"), [
    (["schema", "png", "-o", "x"], "no schema 'png'"),
    (["schema", "swh"], "give FORMAT and -o DIR"),
    (["schema"], "give FORMAT and -o DIR"),
])
def test_cli_errors_exit_2(argv: list[str], message: str, tmp_path: Path,
                           monkeypatch: pytest.MonkeyPatch,
                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    assert message in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
    assert main([*argv, "--json"]) == 2
    assert message in json.loads(capsys.readouterr().out)["message"]


def test_cli_unwritable_folder_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["schema", "zss", "-o", str(blocker / "sub")]) == 2
    assert "cannot create" in capsys.readouterr().err


def test_webide_upload_table_matches_the_index() -> None:
    """The Web IDE page's table names, per format, the files `shardkit schema` writes, and
    sample files that exist."""
    readme = (ROOT / "docs" / "tasks" / "webide.md").read_text()
    rows = re.findall(r"^\| (SWH|Xet MDB|ZSS|ZS|Neuroglancer|Amudai|MOSAIC) \| (.+?) \| (.+?) \|",
                      readme, re.M)
    fmt_of = {"SWH": "swh", "Xet MDB": "mdb", "ZSS": "zss", "ZS": "zs",
              "Neuroglancer": "neuroglancer", "Amudai": "amudai",
              "MOSAIC": "mosaic"}
    assert sorted(fmt_of[name] for name, _, _ in rows) == sorted(FORMATS)
    for name, upload, sample in rows:
        assert tuple(re.findall(r"`([^`]+\.ksy)`", upload)) == resolve(fmt_of[name]).upload
        for path in re.findall(r"`(tests/data/[^`]+)`", sample):
            assert (ROOT / path).exists(), path
