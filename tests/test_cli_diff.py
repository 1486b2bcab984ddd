"""``shardkit diff A B``, run as the real command on every format, locally and over HTTP."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from shardkit.cli import main
from shardkit.diff import value_hash

DATA = Path(__file__).parent / "data"
SPEC = {"@type": "neuroglancer_uint64_sharded_v1", "hash": "murmurhash3_x86_128",
        "preshift_bits": 0, "minishard_bits": 1, "shard_bits": 1}


def _run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _zss(path: Path, records: list[bytes], capsys) -> Path:
    src = path.with_suffix(".txt")
    src.write_bytes(b"".join(r + b"\n" for r in records))
    assert main(["create", "--format", "zss", str(path), str(src)]) == 0
    capsys.readouterr()
    return path


def test_zss_records_added_and_removed_streamed_in_order(tmp_path, capsys):
    a = _zss(tmp_path / "a.zss", [b"apple", b"banana", b"cherry"], capsys)
    b = _zss(tmp_path / "b.zss", [b"banana", b"cherry", b"date"], capsys)
    code, out, err = _run(["diff", str(a), str(b)], capsys)
    assert code == 1, err
    lines = out.splitlines()
    # the files differ in size and uuid, then the records
    assert [ln for ln in lines if not ln.startswith("field: ")] == [
        "removed: apple", "added: date", f"{len(lines) - 1} difference(s)"]
    assert "field: header.uuid: " in out and "field: record_bytes_decoded: 20 -> 19" in out
    assert "field: uuid: " not in out  # the header's, said once
    shutil.copy(a, tmp_path / "a2.zss")
    code, out, _ = _run(["diff", str(a), str(tmp_path / "a2.zss")], capsys)
    assert code == 0 and out == f"{a} and {tmp_path / 'a2.zss'}: the same\n"


def test_json_lines_then_a_summary_and_the_limit(tmp_path, capsys):
    a = _zss(tmp_path / "a.zss", [b"%03d" % i for i in range(0, 100, 2)], capsys)
    b = _zss(tmp_path / "b.zss", [b"%03d" % i for i in range(0, 100, 3)], capsys)
    code, out, _ = _run(["diff", str(a), str(b), "--json"], capsys)
    assert code == 1
    rows = [json.loads(ln) for ln in out.splitlines()]
    keys = [r for r in rows[:-1] if r["kind"] in ("added", "removed")]
    assert {r["where"] for r in keys if r["kind"] == "removed"} == \
        {f"{i:03d}" for i in range(0, 100, 2) if i % 3}
    assert {r["where"] for r in keys if r["kind"] == "added"} == \
        {f"{i:03d}" for i in range(0, 100, 3) if i % 2}
    assert rows[-1] == {"summary": {"a": str(a), "b": str(b), "same": False,
                                    "differences": len(rows) - 1}}
    code, out, _ = _run(["diff", str(a), str(b), "--limit", "2"], capsys)
    lines = out.splitlines()
    assert code == 1 and len(lines) == 3
    assert lines[-1] == f"{len(rows) - 1} difference(s) ({len(rows) - 3} not shown: --limit)"


def test_swh_keys_and_header_fields(tmp_path, capsys):
    files = []
    for name, text in (("x", b"one"), ("y", b"two"), ("z", b"three")):
        (tmp_path / name).write_bytes(text)
        files.append(str(tmp_path / name))
    assert main(["create", str(tmp_path / "a.shard"), *files[:2]]) == 0
    assert main(["create", str(tmp_path / "b.shard"), *files[1:]]) == 0
    capsys.readouterr()
    code, out, _ = _run(["diff", str(tmp_path / "a.shard"), str(tmp_path / "b.shard")], capsys)
    assert code == 1
    import hashlib

    assert f"removed: {hashlib.sha256(b'one').hexdigest()}" in out.splitlines()
    assert f"added: {hashlib.sha256(b'three').hexdigest()}" in out.splitlines()
    assert "field: header.objects_size: " in out


def test_neuroglancer_chunks_changed_added_and_per_scale(tmp_path, capsys):
    from shardkit.formats.neuroglancer import ShardingSpec
    from shardkit.writers.neuroglancer import write_sharded_dataset

    spec = ShardingSpec.from_dict(SPEC)
    write_sharded_dataset(tmp_path / "a", {1: b"a", 2: b"bb", 7: b"seven"}, spec)
    write_sharded_dataset(tmp_path / "b", {1: b"a", 2: b"cc", 9: b"nine"}, spec)
    code, out, _ = _run(["diff", str(tmp_path / "a"), str(tmp_path / "b")], capsys)
    assert code == 1
    lines = out.splitlines()
    assert f"changed: 2 (sha256 {value_hash(b'bb')[:16]}... -> {value_hash(b'cc')[:16]}...)" \
        in lines
    assert "removed: 7" in lines and "added: 9" in lines
    assert not any(ln.startswith("changed: 1 ") for ln in lines)
    image = DATA / "neuroglancer" / "ts_image_identity_gzipindex"
    code, out, _ = _run(["diff", str(image), str(image)], capsys)
    assert code == 0


def test_mdb_files_and_xorbs(capsys):
    samples = sorted((DATA / "mdb").rglob("*.mdb"))
    a, b = samples[0], samples[1]
    code, out, _ = _run(["diff", str(a), str(b), "--json"], capsys)
    assert code == 1
    rows = [json.loads(ln) for ln in out.splitlines()[:-1]]
    import shardkit

    with shardkit.open(a) as ra, shardkit.open(b) as rb:
        fa = {str(k) for k in ra.keys()}
        fb = {str(k) for k in rb.keys()}
        xa = {str(x.hash) for x in ra.xorbs}
        xb = {str(x.hash) for x in rb.xorbs}
    got = {(r["kind"], r["where"]) for r in rows if r["kind"] != "field"}
    want = ({("removed", f"file:{h}") for h in fa - fb} | {("added", f"file:{h}") for h in fb - fa}
            | {("removed", f"xorb:{h}") for h in xa - xb}
            | {("added", f"xorb:{h}") for h in xb - xa})
    assert got - {r for r in got if r[0] == "changed"} == want


def test_amudai_same_rows_in_another_layout(capsys):
    a = DATA / "amudai" / "single.amudai.shard"
    b = DATA / "amudai" / "twolevel.amudai.shard"
    code, out, _ = _run(["diff", str(a), str(b)], capsys)
    assert code == 1
    wheres = [ln.split(": ")[1] for ln in out.splitlines()[:-1]]
    assert "record_count" not in wheres and "schema" not in wheres
    assert not any(ln.startswith(("changed: column", "added:", "removed:"))
                   for ln in out.splitlines())


def test_diff_over_http_and_errors(tmp_path, range_server, capsys):
    a = _zss(tmp_path / "a.zss", [b"a", b"b"], capsys)
    _zss(tmp_path / "b.zss", [b"a", b"c"], capsys)
    srv = range_server(tmp_path)
    code, out, err = _run(["diff", srv.url("a.zss"), srv.url("b.zss")], capsys)
    assert code == 1, err
    assert "removed: b" in out.splitlines() and "added: c" in out.splitlines()
    code, _, err = _run(["diff", str(a), str(DATA / "swh" / "tiny.shard")], capsys)
    assert code == 2
    assert err == (f"shardkit: error: {a} is zss and {DATA / 'swh' / 'tiny.shard'} is swh: "
                   "diff compares two shards of the same format\n")
    code, _, err = _run(["diff", str(a), str(tmp_path / "missing.zss")], capsys)
    assert code == 2 and "missing.zss" in err


def test_diff_help_names_the_exit_codes(capsys):
    with pytest.raises(SystemExit):
        main(["diff", "--help"])
    out = capsys.readouterr().out
    assert "exit codes: 0 the same, 1 they differ, 2 usage error or unreadable file" in \
        " ".join(out.split())


def test_amudai_a_changed_column_is_named(tmp_path, capsys):
    from shardkit.writers.amudai import field, write_amudai

    schema = [field("id", "Int64"), field("name", "String")]
    n = 2500  # more than one batch of rows
    write_amudai(tmp_path / "a.amudai.shard", schema,
                 [{"id": list(range(n)), "name": [f"n{k}" for k in range(n)]}])
    names = [f"n{k}" for k in range(n)]
    names[2200] = "changed"
    write_amudai(tmp_path / "b.amudai.shard", schema, [{"id": list(range(n)), "name": names}])
    code, out, _ = _run(["diff", str(tmp_path / "a.amudai.shard"),
                         str(tmp_path / "b.amudai.shard"), "--json"], capsys)
    assert code == 1
    rows = [json.loads(ln) for ln in out.splitlines()[:-1]]
    assert [r["where"] for r in rows if r["kind"] == "changed"] == ["column name"]
    assert not any(r["where"] in ("record_count", "schema") for r in rows)


def test_zs_root_fields_are_said_once(capsys):
    """The root's offset and length are in a ZS summary twice (top level and header): a diff
    names each change once, as the header's."""
    made = sorted((DATA / "zs" / "made").glob("*.zs"))
    a, b = made[0], made[1]
    code, out, _ = _run(["diff", "--json", str(a), str(b)], capsys)
    assert code == 1
    paths = [json.loads(line).get("where") for line in out.splitlines()]
    assert "header.root_index_offset" in paths and "header.root_index_length" in paths
    assert "root_index_offset" not in paths and "root_index_length" not in paths
    assert len(paths) == len(set(paths))


def _cut_half(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


@pytest.mark.parametrize("bad_first", [False, True])
def test_an_unreadable_side_is_the_one_named(tmp_path, capsys, bad_first):
    good = tmp_path / "tiny.shard"
    shutil.copy(DATA / "swh" / "tiny.shard", good)
    bad = tmp_path / "truncated.shard"
    shutil.copy(good, bad)
    _cut_half(bad)
    pair = [str(bad), str(good)] if bad_first else [str(good), str(bad)]
    code, _, err = _run(["diff", *pair], capsys)
    assert code == 2
    assert err.startswith(f"shardkit: error: {bad}: truncated: "), err
    assert err.count(str(good)) == 0


@pytest.mark.parametrize("bad_first", [False, True])
def test_a_damaged_shard_file_of_a_dataset_is_the_one_named(tmp_path, capsys, bad_first):
    good = tmp_path / "good"
    shutil.copytree(DATA / "neuroglancer" / "cv_identity_raw", good)
    bad = tmp_path / "bad"
    shutil.copytree(good, bad)
    _cut_half(bad / "0.shard")
    pair = [str(bad), str(good)] if bad_first else [str(good), str(bad)]
    code, out, err = _run(["diff", *pair], capsys)
    assert code == 2
    assert "field: chunk_count: " in out  # the summaries differ first
    assert err.startswith(f"shardkit: error: {bad / '0.shard'}: "), err
    assert f"{good}:" not in err and f"{good}/" not in err
