"""The command line: every command on every SWH sample, JSON output and exit codes."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys

import pytest
from conftest import SWH_SAMPLES, swh_path

import shardkit
from shardkit.cli import main


@pytest.mark.parametrize("name", SWH_SAMPLES)
def test_info_json(name, swh_manifest, capsys):
    assert main(["info", "--json", str(swh_path(name))]) == 0
    info = json.loads(capsys.readouterr().out)
    expected = swh_manifest[f"{name}.shard"]
    assert info["format"] == "swh"
    assert info["header"] == expected["header"]
    assert info["live"] == expected["live_count"]
    assert info["deleted"] == expected["deleted_count"]


@pytest.mark.parametrize("name", SWH_SAMPLES)
def test_ls(name, swh_manifest, capsys):
    assert main(["ls", str(swh_path(name))]) == 0
    keys = capsys.readouterr().out.split()
    assert sorted(keys) == sorted(swh_manifest[f"{name}.shard"]["objects"])
    assert main(["ls", "--json", str(swh_path(name))]) == 0
    assert sorted(json.loads(capsys.readouterr().out)) == sorted(keys)


def test_get_stdout_and_file(swh_manifest, capfdbinary, tmp_path):
    key = "a948904f2f0f479b8f8197694b30184b0d2ed1c1cd2a1ec0fb85d299a192a447"
    assert main(["get", str(swh_path("tiny")), key]) == 0
    assert capfdbinary.readouterr().out == b"hello world\n"
    out = tmp_path / "value"
    assert main(["get", str(swh_path("tiny")), key, "-o", str(out)]) == 0
    assert out.read_bytes() == b"hello world\n"
    assert main(["get", "--json", str(swh_path("tiny")), key]) == 0
    data = json.loads(capfdbinary.readouterr().out)
    assert data["size"] == 12
    assert data["sha256"] == key


def test_get_missing_and_deleted(swh_manifest, capsys):
    deleted = swh_manifest["deleted.shard"]["deleted_keys"][0]
    assert main(["get", str(swh_path("deleted")), deleted]) == 1
    assert "deleted" in capsys.readouterr().err
    assert main(["get", str(swh_path("tiny")), "00" * 32]) == 1
    assert main(["get", str(swh_path("tiny")), "xyz"]) == 2
    assert "not a hex key" in capsys.readouterr().err


@pytest.mark.parametrize("name", SWH_SAMPLES)
def test_verify_ok(name, capsys):
    assert main(["verify", "--json", "--content-hash", "sha256", str(swh_path(name))]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report == {"file": str(swh_path(name)), "format": "swh", "ok": True, "problems": []}


def test_verify_finds_problems(tmp_path, capsys):
    data = bytearray(swh_path("tiny").read_bytes())
    data[0x205] ^= 0xFF  # inside the first object's size field: claims a huge object
    bad = tmp_path / "bad.shard"
    bad.write_bytes(bytes(data))
    assert main(["verify", "--json", str(bad)]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False
    assert {p["check"] for p in report["problems"]} & {"object_bounds", "unreferenced_data"}


def test_verify_progress_on_stderr(capsys):
    assert main(["verify", "--progress", str(swh_path("medium"))]) == 0
    err = capsys.readouterr().err
    assert "verify:" in err and "1000/1000" in err


@pytest.mark.parametrize("name", SWH_SAMPLES)
def test_dump_and_map(name, swh_manifest, capsys):
    assert main(["dump", str(swh_path(name))]) == 0
    tree = json.loads(capsys.readouterr().out)
    assert len(tree["entries"]) == swh_manifest[f"{name}.shard"]["live_count"]
    assert main(["map", "--json", str(swh_path(name))]) == 0
    sections = json.loads(capsys.readouterr().out)
    assert sections[-1]["end"] == swh_manifest[f"{name}.shard"]["file_size"]
    assert sum(s["size"] for s in sections) == swh_manifest[f"{name}.shard"]["file_size"]


def test_unreadable_file_exit_2(tmp_path, capsys):
    bad = tmp_path / "x.shard"
    bad.write_bytes(b"SWHShard\x00" + bytes(30))
    assert main(["info", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("shardkit: error: truncated")
    assert "field /header" in err
    assert main(["info", "--json", str(bad)]) == 2
    assert json.loads(capsys.readouterr().out)["error"] == "TruncatedError"


def test_usage_error_exit_2(capsys):
    with pytest.raises(SystemExit) as info:
        main(["frobnicate"])
    assert info.value.code == 2


def test_formats(capsys):
    assert main(["formats", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["id"] for r in rows} == {"swh", "mdb", "zss", "amudai", "neuroglancer"}


def test_console_script_runs_as_module():
    proc = subprocess.run([sys.executable, "-m", "shardkit", "get", str(swh_path("single")),
                           "bbc5d3f9f66c9ac101e66f6ac438a2d4bc2db4834190054af570954fed6b1506"],
                          capture_output=True, check=True)
    assert hashlib.sha256(proc.stdout).hexdigest() == (
        "bbc5d3f9f66c9ac101e66f6ac438a2d4bc2db4834190054af570954fed6b1506")
    help_text = subprocess.run([sys.executable, "-m", "shardkit", "--help"], capture_output=True,
                               text=True, check=True).stdout
    assert "exit codes" in help_text


def test_get_json_reports_missing_key(swh_manifest, capsys):
    deleted = swh_manifest["deleted.shard"]["deleted_keys"][0]
    assert main(["get", "--json", str(swh_path("deleted")), deleted]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["error"] == "DeletedEntryError"
    assert out["key"] == deleted


def test_missing_column_exits_1_and_bad_key_exits_2(capsys):
    amudai = swh_path("tiny").parents[1] / "amudai" / "single.amudai.shard"
    assert main(["get", str(amudai), "no.such.column"]) == 1
    assert main(["get", str(swh_path("tiny")), "abc"]) == 2
    assert "hex" in capsys.readouterr().err


def test_bare_neuroglancer_shard_needs_a_spec(capsys):
    shard = swh_path("tiny").parents[1] / "neuroglancer" / "cv_identity_raw" / "0.shard"
    assert main(["info", "--format", "neuroglancer", str(shard)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("shardkit: error:") and "--spec" in err
    assert main(["info", "--spec", str(shard.parent / "info"), str(shard)]) == 0


def test_output_write_error_names_the_output(tmp_path, capsys):
    key = "a948904f2f0f479b8f8197694b30184b0d2ed1c1cd2a1ec0fb85d299a192a447"
    out = tmp_path / "missing-dir" / "value"
    assert main(["get", str(swh_path("tiny")), key, "-o", str(out)]) == 2
    assert str(out) in capsys.readouterr().err


def test_every_reader_get_is_mapping_style():
    data = swh_path("tiny").parents[1]
    mdb = next((data / "mdb" / "real" / "session").glob("*.mdb"))
    cases = [(mdb, "ff" * 32), (data / "zss" / "tiny_none.zss", b"no such record"),
             (data / "amudai" / "single.amudai.shard", "no.such.column"),
             (swh_path("tiny"), bytes(32))]
    for path, key in cases:
        with shardkit.open(path) as reader:
            assert reader.get(key) is None, path
            assert reader.get(key, "dflt") == "dflt", path


def test_structured_get_json_with_output_reports_the_file(tmp_path, capsys):
    amudai = swh_path("tiny").parents[1] / "amudai" / "single.amudai.shard"
    out = tmp_path / "col.json"
    assert main(["get", "--json", "-o", str(out), str(amudai), "id"]) == 0
    assert json.loads(capsys.readouterr().out) == {"key": "id", "written_to": str(out)}
    assert isinstance(json.loads(out.read_text()), list)


def test_neuroglancer_bad_key_is_a_usage_error(capsys):
    ds = swh_path("tiny").parents[1] / "neuroglancer" / "cv_identity_raw"
    assert main(["get", "--json", str(ds), "not-a-number"]) == 2
    assert json.loads(capsys.readouterr().out)["error"] == "InvalidKeyError"


def test_neuroglancer_verify_reports_a_bad_gzipped_shard(tmp_path, capsys):
    src = swh_path("tiny").parents[1] / "neuroglancer" / "cv_identity_raw"
    ds = tmp_path / "ds"
    shutil.copytree(src, ds)
    (ds / "1.shard").unlink()
    (ds / "1.shard.gz").write_bytes(b"garbage")
    assert main(["verify", "--json", str(ds)]) == 1
    problems = json.loads(capsys.readouterr().out)["problems"]
    assert any(p["check"] == "read" and "1.shard" in p["message"] for p in problems)
