"""The command line: every command on every SWH sample, JSON output and exit codes."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SWH_SAMPLES, swh_path

import shardkit
import shardkit.render
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
    assert err.startswith(f"shardkit: error: {bad}: truncated")  # which file, for scripts
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
    assert {r["id"] for r in rows} == {"swh", "mdb", "zss", "zs", "amudai", "neuroglancer",
                                      "mosaic"}


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


DATA = swh_path("tiny").parents[1]


def test_formats_prints_detection_rules_as_text(capsys):
    assert main(["formats"]) == 0
    out = capsys.readouterr().out
    assert out.count("detected by:") == len(shardkit.FORMATS)
    flat = " ".join(out.split())  # the rules are wrapped to the terminal width
    for info in shardkit.FORMATS.values():
        assert f"{info.id} " in out and info.name in out
        assert " ".join(info.describe.split()) in flat


def test_formats_help_lists_only_its_own_options():
    help_text = subprocess.run([sys.executable, "-m", "shardkit", "formats", "--help"],
                               capture_output=True, text=True, check=True).stdout
    assert "--json" in help_text
    assert "--format" not in help_text and "--spec" not in help_text
    info_help = subprocess.run([sys.executable, "-m", "shardkit", "info", "--help"],
                               capture_output=True, text=True, check=True).stdout
    assert "--format" in info_help and "--spec" in info_help


def test_every_verify_option_has_help(capsys):
    with pytest.raises(SystemExit):
        main(["verify", "--help"])
    out = capsys.readouterr().out
    assert "--no-progress  " in out  # argparse pads an option with help text
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if line.strip().startswith("--"):
            opt = line.split()[0]
            # help on the same line, or on the next (indented) one
            assert len(line.split()) > 1 or lines[i + 1].startswith(" " * 8), opt


def test_info_prints_readable_text_without_python_reprs(capsys):
    cases = {
        DATA / "zss" / "metadata_zlib.zss": ["metadata.corpus: zss-corpus-test",
                                             "metadata.nested.list: [1, 2.5, null, true, false]",
                                             "metadata.nested.empty: (none)"],
        DATA / "neuroglancer" / "ts_image_identity_gzipindex": [
            "scales[0].key: 8_8_40", "scales[0].size: 100, 90, 40",
            "scales[0].resolution: 8.0, 8.0, 40.0", "scales[0].sharding.hash: identity",
            "unsharded_scales: (none)"],
        DATA / "amudai" / "single.amudai.shard": [
            "schema:", "  - id: Int64", "  - address.street: String", "stripes[2].record_count: 3",
            "urls: (none)", 'properties.custom.nested.list: [1, "two", null, "03"]'],
    }
    for path, expected in cases.items():
        assert main(["info", str(path)]) == 0
        out = capsys.readouterr().out
        lines = out.splitlines()
        for line in expected:
            assert line in lines, (path, line, out)
        for repr_mark in ("{'", "['", "b'", "None", "True", "False"):
            assert repr_mark not in out, (path, repr_mark)
        assert main(["info", "--json", str(path)]) == 0
        data = json.loads(capsys.readouterr().out)
        with shardkit.open(path) as reader:
            assert data == json.loads(shardkit.render.to_json(reader.summary()))


def test_missing_zss_record_is_shown_once_escaped(capsys):
    path = str(DATA / "zss" / "tiny_none.zss")
    assert main(["get", path, "x\\x00y"]) == 1
    assert capsys.readouterr().err == "shardkit: not found: x\\x00y\n"
    assert main(["get", "--json", path, "hex:00ff"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["message"] == "not found: \\x00\\xff" and out["key"] == "hex:00ff"


def test_zss_ls_json_gives_the_exact_bytes_as_hex(capsys):
    path = DATA / "zss" / "tiny_none.zss"
    assert main(["ls", "--json", str(path)]) == 0
    listed = [bytes.fromhex(h) for h in json.loads(capsys.readouterr().out)]
    with shardkit.open(path) as z:
        assert listed == list(z)
    assert b"apple\x00\xff\n" in listed  # bytes no text encoding could carry
    assert main(["ls", str(path)]) == 0  # text stays escaped, one record a line
    assert "apple\\x00\\xff\\n" in capsys.readouterr().out.splitlines()


def _folded(lines):
    """(PROBLEM lines, the counts of their "... and N more like it" lines)."""
    problem_lines = [line for line in lines if line.startswith("PROBLEM ")]
    counts = [int(line.split("and ")[1].split()[0]) for line in lines if "more like it" in line]
    return problem_lines, counts


def test_repeated_problems_are_grouped(tmp_path, capsys):
    # the root of a two-level Amudai shard without its stripe files: every column of every
    # stripe reports its stripe file missing, in two checks (buffer, values)
    shard = tmp_path / "twolevel.amudai.shard"
    shutil.copy(DATA / "amudai" / "twolevel.amudai.shard", shard)
    assert main(["verify", "--json", str(shard)]) == 1
    problems = json.loads(capsys.readouterr().out)["problems"]
    assert len(problems) > 50
    assert {p["check"] for p in problems} == {"buffer", "values"}
    assert main(["verify", str(shard)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == f"{shard}: {len(problems)} problem(s) found"
    problem_lines, counts = _folded(lines)
    assert [line.split(":")[0] for line in problem_lines] == ["PROBLEM buffer", "PROBLEM values"]
    assert problem_lines[0] == f"PROBLEM {problems[0]['check']}: {problems[0]['message']} " \
        f"(field {problems[0]['field']})"
    assert sum(counts) + len(problem_lines) == len(problems)
    assert all(", at /stripes/" in line for line in lines if "more like it" in line)
    assert main(["verify", "--all", str(shard)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert sum(line.startswith("PROBLEM ") for line in lines) == len(problems)


def test_problems_differing_in_numbers_are_grouped(tmp_path, capsys):
    data = bytearray(swh_path("medium").read_bytes())
    with shardkit.open(swh_path("medium")) as shard:
        index = shard.summary()["header"]["index_position"]
    for slot in range(0, 400, 7):  # damage the keys of 58 slots
        data[index + 40 * slot + 3] ^= 0x55
    bad = tmp_path / "bad.shard"
    bad.write_bytes(bytes(data))
    assert main(["verify", "--json", str(bad)]) == 1
    slot_problems = [p for p in json.loads(capsys.readouterr().out)["problems"]
                     if p["check"] == "slot"]
    assert len(slot_problems) > 40
    assert main(["verify", str(bad)]) == 1
    lines = capsys.readouterr().out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("PROBLEM slot:"))
    assert sum(line.startswith("PROBLEM slot:") for line in lines) == 1
    assert lines[at + 1] == (f"  ... and {len(slot_problems) - 1} more like it, at "
                             + ", ".join(p["field"] for p in slot_problems[1:4]) + ", ...")


def test_extra_argument_prints_the_commands_usage():
    proc = subprocess.run([sys.executable, "-m", "shardkit", "info", "a", "b"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert proc.stderr.startswith("usage: shardkit info ")
    assert "shardkit info: error: unrecognized arguments: b" in proc.stderr


def test_import_shardkit_loads_only_the_error_classes():
    code = ("import sys, shardkit\n"
            "print(sorted(m for m in sys.modules if m.startswith('shardkit')), "
            "'numpy' in sys.modules)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert proc.stdout.split("\n")[-2] == "['shardkit', 'shardkit.errors'] False"


def test_import_and_light_commands_load_no_reader():
    code = ("import sys, shardkit, shardkit.cli\n"
            "shardkit.cli.main(['formats'])\n"
            "heavy = [m for m in sys.modules if m == 'numpy' or m.startswith('google')\n"
            "         or m.startswith('shardkit.formats.') or m.startswith('shardkit.generated')]\n"
            "print(sorted(heavy))\n"
            "print(shardkit.SwhShard.__module__, 'numpy' in sys.modules)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    first, second = proc.stdout.splitlines()[-2:]
    assert first == "[]"
    # the SWH reader imports numpy only when a scan or a batch needs it, not to open a shard
    assert second.startswith("shardkit.formats.swh") and second.endswith("False")


def test_open_accepts_a_reader_class():
    with shardkit.open(DATA / "zss" / "tiny_none.zss", format=shardkit.ZssFile) as z:
        assert isinstance(z, shardkit.ZssFile) and len(z) == 5


def test_demo_fits_one_screen_per_format():
    root = Path(__file__).parents[1]
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    proc = subprocess.run(["bash", str(root / "tools" / "demo.sh")], capture_output=True,
                          text=True, env=env, check=False, cwd=root)
    assert proc.returncode == 0, proc.stderr
    sections = ("\n" + proc.stdout).split("\n== ")[1:]
    # one per format: SWH, MOSAIC, MDB, ZSS, ZS, Neuroglancer, annotation layers, Amudai
    assert len(sections) == 8
    for section in sections:
        lines = section.splitlines()
        assert len(lines) <= 50, lines[0]
        assert sum(line.startswith("$ shardkit ") for line in lines) >= 4, lines[0]
    assert "Traceback" not in proc.stdout + proc.stderr


def test_byte_count_one_parser_for_every_size_option(capsys):
    import argparse

    from shardkit.cli import byte_count

    assert byte_count("65536") == 65536
    assert byte_count("64K") == byte_count("64KiB") == byte_count("64kb") == 65536
    assert byte_count("1.5G") == 3 << 29 and byte_count("2T") == 2 << 40
    assert byte_count("0") == 0 and byte_count("0.5") == 0
    for bad, positive in [("inf", False), ("infK", False), ("-inf", True), ("nan", True),
                          ("1e400", True), ("lots", False), ("", False), ("-3", False),
                          ("0", True), ("0.5", True), ("1e30", True)]:
        with pytest.raises(argparse.ArgumentTypeError):
            byte_count(bad, positive=positive)
    assert byte_count("0.5K", positive=True) == 512
    for argv in (["info", "--cache", "infK", "x"], ["info", "--cache", "-1", "x"],
                 ["info", "--block-size", "0", "x"],
                 ["ng", "spec", "--keys", "10", "--shard-bytes", "inf"],
                 ["ng", "spec", "--keys", "10", "--shard-bytes", "0.5"],
                 ["ng", "spec", "--keys", "10", "--total-bytes", "1e400"],
                 ["ng", "shard", "a", "b", "--minishard-index-bytes", "nan"]):
        with pytest.raises(SystemExit) as info:
            main(argv)
        assert info.value.code == 2, argv
        err = capsys.readouterr().err
        assert "error: argument" in err and "Traceback" not in err, argv
