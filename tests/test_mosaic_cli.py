"""MOSAIC in the format-generic commands: info, ls, get, dump, map, diff, view, bulk verify."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from shardkit.bulk import run_one
from shardkit.cli import main

DATA = Path(__file__).parent / "data" / "mosaic"


def _json(capsys: pytest.CaptureFixture[str], argv: list[str], code: int = 0) -> object:
    assert main([*argv, "--json"]) == code
    return json.loads(capsys.readouterr().out)


def test_info_ls_get_dump_map(capsys: pytest.CaptureFixture[str]) -> None:
    f = str(DATA / "all_indexes.mosaic")
    info = _json(capsys, ["info", f])
    assert info["format"] == "mosaic" and info["objects_count"] == 12
    assert [i["name"] for i in info["indexes"]] == ["sha1", "sha1_git", "sha256", "blake2s256"]
    assert info["comments"][1] == "second comment: \u00e9t\u00e9"
    assert info["compression"] == "none"
    keys = _json(capsys, ["ls", f])
    assert len(keys) == 12 and all(len(k) == 40 for k in keys)  # the first index: sha1
    single = str(DATA / "single.mosaic")
    key = hashlib.sha256(b"hello world\n").hexdigest()
    got = _json(capsys, ["get", single, key])
    assert got["key"] == key and got["size"] == 12
    assert main(["get", single, "00" * 32]) == 1
    capsys.readouterr()
    assert main(["get", single, "abcd"]) == 2
    capsys.readouterr()
    dump = _json(capsys, ["dump", single])
    assert dump["entries"]["sha256"][0]["key"] == key
    sections = _json(capsys, ["map", str(DATA / "conflict.mosaic")])
    names = [s["name"] for s in sections]
    assert names[:3] == ["/EBML", "/Mosaic/ContainerMetaData", "/Mosaic/Tile[0]"]
    assert "/Mosaic/Index[0]/Conflicts" in names
    assert all(s["start"] <= s["end"] for s in sections)


def test_diff(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    a = str(DATA / "deleted.mosaic")
    assert main(["diff", a, a]) == 0
    capsys.readouterr()
    assert main(["diff", str(DATA / "sha256.mosaic"), a, "--json"]) == 1
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    kinds = [d.get("kind") for d in lines]  # the last line is the count
    # the 8 objects of deleted.mosaic are 8 of the 20 of sha256.mosaic
    assert (kinds.count("removed"), kinds.count("added"), kinds.count("changed")) == (12, 0, 0)


def test_bulk_verify(tmp_path: Path) -> None:
    good = run_one(str(DATA / "zstd_dict.mosaic"))
    assert good["status"] == "sound" and good["format"] == "mosaic"
    bad = run_one(str(DATA / "broken" / "bad_content.mosaic"))
    assert bad["status"] == "unsound"
    assert [p["check"] for p in bad["problems"]] == ["content_hash"]
    cut = run_one(str(DATA / "broken" / "truncated.mosaic"))
    assert cut["status"] == "unreadable" and cut["error"]["type"] == "TruncatedError"
    for name in ("sha1.mosaic", "tiles.mosaic"):
        shutil.copy(DATA / name, tmp_path / name)
    assert main(["verify", str(tmp_path / "*.mosaic"), "--jobs", "2"]) == 0


def test_view_tree() -> None:
    import shardkit
    from shardkit.view.model import build_root

    with shardkit.open(DATA / "tiles.mosaic") as r:
        root = build_root(r)
        kids = root.kids()
        names = [n.label() for n in kids.nodes(0, len(kids))]
        assert any("summary" in n for n in names) and any("layout" in n for n in names)
        layout = next(n for n in kids.nodes(0, len(kids)) if n.label().startswith("layout"))
        parts = layout.kids()
        top = {n.label().split(":")[0].split()[0]: n for n in parts.nodes(0, len(parts))}
        assert set(top) == {"EBML", "Mosaic"}
        inner = top["Mosaic"].kids()
        labels = " ".join(n.label() for n in inner.nodes(0, len(inner)))
        assert "Index[1]" in labels and "ContainerMetaData" in labels and "Tile" in labels


def test_index_option(capsys: pytest.CaptureFixture[str]) -> None:
    f = str(DATA / "all_indexes.mosaic")
    sha256 = _json(capsys, ["ls", f, "--index", "sha256"])
    sha1 = _json(capsys, ["ls", f])  # the file's first index
    assert {len(k) for k in sha256} == {64} and {len(k) for k in sha1} == {40}
    git = _json(capsys, ["ls", f, "--index", "sha1_git"])
    got = _json(capsys, ["get", f, git[0], "--index", "sha1_git"])
    assert got["key"] == git[0]
    assert main(["get", f, git[0]]) == 2  # a 20-byte key: sha1 or sha1_git?
    assert "pass index=" in capsys.readouterr().err
    assert main(["ls", str(DATA / "sha1.mosaic"), "--index", "sha256"]) == 2
    assert "no sha256 index (this file has: sha1)" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["swh", "mosaic"])
@pytest.mark.parametrize("keys", [["zz"], ["ab" * 32, "ab" * 32]])
def test_delete_with_a_bad_key_names_the_file(capsys: pytest.CaptureFixture[str],
                                              tmp_path: Path, kind: str,
                                              keys: list[str]) -> None:
    """A key that cannot be one, or a key given twice, is refused before anything changes,
    with the file named (a script deleting from many files says which one)."""
    source = next((Path(__file__).parent / "data" / kind).glob(
        "*.mosaic" if kind == "mosaic" else "*.shard"))
    path = tmp_path / source.name
    shutil.copy(source, path)
    before = path.read_bytes()
    assert main(["delete", "--yes", str(path), *keys]) == 2
    err = capsys.readouterr().err
    assert f"delete {path}: " in err
    assert ("duplicate keys" in err) == (len(keys) == 2)
    assert path.read_bytes() == before
