"""Bulk runs: a few hundred shards of every format on local processes, Dask and over HTTP.

The corpus (``bulk_corpus.py``) says how each file was made; every report is checked against
that, against verifying each file on its own in this process, and against the other engines.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import bulk_tasks
import pytest
from bulk_corpus import NG_SPEC, build_corpus

import shardkit
from shardkit import bulk
from shardkit.cli import main
from shardkit.render import to_json
from shardkit.sources import CountingSource, open_source


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("bulk") / "c"
    made = build_corpus(root)
    extra = {str(root / "no-such.shard"): "unreadable",     # from a list: missing
             str(root / "junk"): "unreadable"}               # a folder without an info file
    made.update(extra)
    (root / "targets.txt").write_text(
        "# the corpus, a missing file and a plain folder\n" + f"{root}/*/*\n\n"
        + "".join(f"{name}\n" for name in extra))
    return root, made


def _targets(root: Path) -> list[str]:
    return bulk.read_target_list(root / "targets.txt")


def direct_status(target: bulk.Target) -> str:
    """Verify one target in this process, without shardkit.bulk."""
    kwargs = {"spec": target.spec} if target.spec else {}
    try:
        with shardkit.open(target.name, format=target.format, **kwargs) as reader:
            return "unsound" if reader.verify() else "sound"
    except (shardkit.ShardkitError, OSError):
        return "unreadable"


def normal(results: list[dict[str, Any]], root: str | None = None) -> dict[str, Any]:
    """Results by target, without timings (and with ``root`` cut from names if given)."""
    out = {}
    for r in results:
        name = r["target"]
        if root is not None:
            name = name.removeprefix(root)
        err = r["error"]
        out[name] = (r["format"], r["ok"], r["status"],
                     json.dumps(r["problems"], sort_keys=True), r["bytes_read"],
                     None if err is None else (err["type"], err["offset"], err["field"]))
    return out


def only(rows: dict[str, Any], *parts: str) -> dict[str, Any]:
    """The rows whose target name contains one of ``parts``."""
    return {k: v for k, v in rows.items() if any(p in k for p in parts)}


def read_report(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def local_report(corpus, tmp_path_factory) -> tuple[bulk.BulkSummary, Path]:
    root, _ = corpus
    report = tmp_path_factory.mktemp("reports") / "local.jsonl"
    summary = bulk.run(_targets(root), jobs=2, report=report)
    return summary, report


@pytest.fixture(scope="module")
def dask_client():
    distributed = pytest.importorskip("distributed")
    import cloudpickle

    cloudpickle.register_pickle_by_value(bulk_tasks)  # the workers need not import tests/
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        yield client


def test_local_report_is_complete_and_matches_how_files_were_made(corpus, local_report):
    root, made = corpus
    summary, report = local_report
    lines = read_report(report)
    names = [r["target"] for r in lines]
    assert len(names) == len(set(names)) == len(made) >= 250
    assert set(names) == set(made)
    by_name = {r["target"]: r for r in lines}
    for name, how in made.items():
        status = by_name[name]["status"]
        if how == "sound":
            assert status == "sound", by_name[name]
        elif how == "damaged":
            assert status in ("unsound", "unreadable"), by_name[name]
        else:
            assert status == "unreadable" and by_name[name]["error"]["type"], by_name[name]
    formats = {r["format"] for r in lines if r["status"] == "sound"}
    assert formats == {"swh", "mdb", "zss", "neuroglancer", "amudai"}
    # every status is what verifying that file alone in this process says
    for t in bulk.expand_targets(_targets(root)):
        if t.error is None:
            assert by_name[t.name]["status"] == direct_status(t), t.name
    # what was read is counted; problems and errors carry offsets
    assert all(r["bytes_read"] > 0 for r in lines if r["status"] != "unreadable")
    assert all(r["problems"] and r["problems"][0]["message"] for r in lines
               if r["status"] == "unsound")
    assert "No such file" in by_name[str(root / "no-such.shard")]["error"]["message"]
    assert by_name[str(root / "junk")]["error"]["type"] == "IsADirectoryError"
    assert by_name[str(root / "zss" / "bad0.zss")]["problems"][0]["field"].endswith(
        "body_crc32c")
    counts = {s: sum(r["status"] == s for r in lines) for s in bulk.STATUSES}
    assert (summary.sound, summary.unsound, summary.unreadable) == (
        counts["sound"], counts["unsound"], counts["unreadable"])
    assert summary.exit_code == 2
    assert summary.bytes_read == sum(r["bytes_read"] for r in lines)


def test_neuroglancer_datasets_expand_to_their_shards_with_the_spec(corpus, tmp_path):
    root, _ = corpus
    found = bulk.expand_targets([str(root / "ng" / "ds3")])
    assert [Path(t.name).name for t in found] == [f"{i}.shard" for i in range(8)]
    assert all(t.spec == NG_SPEC and t.format == "neuroglancer" for t in found)
    image = bulk.expand_targets([str(Path(__file__).parent / "data" / "neuroglancer" /
                                     "ts_image_identity_gzipindex")])
    assert [t.name.rsplit("/", 2)[-2] for t in image] == ["8_8_40"] * 4
    # a scale key may not leave the dataset
    evil = tmp_path / "evil"
    evil.mkdir()
    (evil / "info").write_text(json.dumps({"scales": [{"key": "../c", "sharding": NG_SPEC}]}))
    (bad,) = bulk.expand_targets([str(evil)])
    assert bad.error is not None and "inside the dataset" in bad.error["message"]
    (none,) = bulk.expand_targets([str(tmp_path / "*.nothing")])
    assert none.error["type"] == "NoMatch"
    assert bulk.run_one(none)["status"] == "unreadable"


def test_dask_report_equals_the_local_one(corpus, local_report, dask_client, tmp_path):
    root, _ = corpus
    report = tmp_path / "dask.jsonl"
    summary = bulk.run(_targets(root), client=dask_client, report=report)
    assert summary.engine.startswith("dask:tcp://")
    lines = read_report(report)
    assert len(lines) == len({r["target"] for r in lines})
    assert normal(lines) == normal(read_report(local_report[1]))
    assert summary.exit_code == 2


def _kill_once(tmp_path: Path, victim: str) -> Any:
    return functools.partial(bulk_tasks.kill_once, str(tmp_path / "killed"), victim)


@pytest.mark.parametrize("engine", ["local", "dask"])
def test_a_worker_killed_mid_run_costs_nothing(engine, corpus, local_report, tmp_path,
                                               request):
    root, _ = corpus
    client = request.getfixturevalue("dask_client") if engine == "dask" else None
    victim = "swh/tiny-007.shard"
    targets = [str(root / "swh" / "*"), str(root / "ng" / "*"), str(root / "zss" / "bad*")]
    summary = bulk.run(targets, _kill_once(tmp_path, victim), jobs=2, client=client,
                       report=tmp_path / "r.jsonl")
    assert (tmp_path / "killed").exists()  # a worker really was killed on the victim
    got = normal(read_report(tmp_path / "r.jsonl"))
    assert got == only(normal(read_report(local_report[1])), "/swh/", "/ng/", "/zss/bad")
    assert summary.targets == len(got) >= 90


def test_a_shard_that_always_kills_its_worker_is_recorded(corpus, local_report, tmp_path):
    root, _ = corpus
    victim = "mdb/" + sorted(p.name for p in (root / "mdb").glob("00-00-*.mdb"))[0]
    task = functools.partial(bulk_tasks.always_kill, victim)
    summary = bulk.run([str(root / "mdb" / "*")], task, jobs=2, retries=1,
                       report=tmp_path / "r.jsonl")
    got = normal(read_report(tmp_path / "r.jsonl"))
    want = {k: v for k, v in normal(read_report(local_report[1])).items() if "/mdb/" in k}
    name = str(root / victim)
    assert got.pop(name)[-1] == ("WorkerCrashed", None, None)
    want.pop(name)
    assert got == want
    (rec,) = [r for r in summary.results if r["target"] == name]
    assert "SIGKILL" in rec["error"]["message"] and "2 time(s)" in rec["error"]["message"]


@pytest.mark.parametrize("engine", ["local", "dask"])
def test_a_shard_that_hangs_times_out_and_the_run_goes_on(engine, corpus, tmp_path, request):
    root, made = corpus
    client = request.getfixturevalue("dask_client") if engine == "dask" else None
    targets = [str(root / "zss" / "*.zss"), str(root / "swh" / "tiny-00*.shard")]
    task = functools.partial(bulk_tasks.sleep_on, "zss/r004.zss", 30)
    t0 = time.monotonic()
    summary = bulk.run(targets, task, jobs=2, client=client, timeout=1.5)
    assert time.monotonic() - t0 < 15
    by_name = {r["target"]: r for r in summary.results}
    assert len(by_name) == len(summary.results) == len(bulk.expand_targets(targets))
    hung = by_name.pop(str(root / "zss" / "r004.zss"))
    assert hung["status"] == "unreadable" and hung["error"]["type"] == "Timeout"
    for name, r in by_name.items():
        assert (r["status"] == "sound") == (made[name] == "sound"), r


def test_resume_redoes_only_what_is_missing_or_not_sound(corpus, local_report, tmp_path):
    root, _ = corpus
    lines = read_report(local_report[1])
    dropped = {r["target"] for r in lines[10:50]}
    flipped = {r["target"] for r in lines[60:65] if r["status"] == "sound"}
    unsound = {r["target"] for r in lines if r["status"] != "sound"}
    report = tmp_path / "r.jsonl"
    with report.open("w") as fh:
        for r in lines[:10] + lines[50:]:
            if r["target"] in flipped:
                r = {**r, "ok": False, "status": "unsound"}
            fh.write(json.dumps(r) + "\n")
        fh.write('{"target": "cut short')  # the last line of a run that was killed
    seen: list[str] = []
    summary = bulk.run(_targets(root), jobs=2, resume=report,
                       on_result=lambda r: seen.append(r["target"]))
    assert sorted(seen) == sorted(dropped | flipped | unsound)
    assert summary.resumed == len(lines) - len(dropped | flipped | unsound)
    final = read_report(report)
    assert normal(final) == normal(lines)
    assert len(final) == len(lines)
    # nothing left to do: a second resume runs only the shards that are not sound
    seen.clear()
    again = bulk.run(_targets(root), jobs=2, resume=report, report=tmp_path / "again.jsonl",
                     on_result=lambda r: seen.append(r["target"]))
    assert sorted(seen) == sorted(unsound)
    assert normal(read_report(tmp_path / "again.jsonl")) == normal(lines)
    assert again.exit_code == 2


@pytest.mark.parametrize("engine", ["local", "dask"])
def test_over_http_the_report_matches_the_local_files(engine, corpus, local_report,
                                                      range_server, request, tmp_path):
    """URL globs and dataset URLs, with a worker killed mid-run: same report as local files."""
    root, _ = corpus
    client = request.getfixturevalue("dask_client") if engine == "dask" else None
    srv = range_server(root)
    targets = [srv.url("swh/tiny-*.shard"), srv.url("zss/r00*.zss"), srv.url("zss/bad*.zss"),
               srv.url("mdb/00-*.mdb"), srv.url("mdb/cut-*.mdb"), srv.url("amudai/t00*.shard"),
               srv.url("amudai/bad*.shard"), srv.url("ng/ds0"), srv.url("ng/ds1/"),
               srv.url("junk/*")]
    summary = bulk.run(targets, _kill_once(tmp_path, "swh/tiny-003.shard"), jobs=2,
                       client=client)
    assert (tmp_path / "killed").exists()
    got = normal(summary.results, srv.url(""))
    local = normal(read_report(local_report[1]), str(root) + "/")
    assert len(got) == len(summary.results) >= 90
    for name, row in got.items():
        # same statuses, problems, error kinds and bytes read as from the local files
        assert row == local[name], name
    assert srv.count("GET") > 0


def test_info_and_keys_tasks(corpus):
    root, _ = corpus
    targets = [str(root / "zss" / "r00[0-3].zss"), str(root / "mdb" / "00-0[0-3]*.mdb"),
               str(root / "ng" / "ds2"), str(root / "amudai" / "t00[0-3]*.shard"),
               str(root / "swh" / "single-00[0-3].shard")]
    keys = bulk.run(targets, "keys", jobs=1)
    info = bulk.run(targets, "info", jobs=1)
    assert keys.exit_code == info.exit_code == 0
    infos = {r["target"]: r["summary"] for r in info.results}
    for r in keys.results:
        t = bulk.Target(r["target"], spec=NG_SPEC if "/ng/" in r["target"] else None)
        # bulk reads through a CountingSource (bytes read are reported), so compare with the
        # same kind of source: MDB, for one, summarises such a source from its lookup tables
        source = CountingSource(open_source(t.name))
        with shardkit.open(source, **({"spec": t.spec} if t.spec else {})) as reader:
            summary = json.loads(to_json(reader.summary()))  # first, as the info task does
            want = [reader.format_key(k) for k in reader.keys()]
        assert r["keys"] == want and r["key_count"] == len(want)
        assert infos[r["target"]] == summary


def test_cli_many_targets(corpus, local_report, tmp_path, capsys):
    root, made = corpus
    report = tmp_path / "cli.jsonl"
    listing = tmp_path / "list.txt"
    listing.write_text(f"# some of the corpus\n{root}/mdb/*\n{root}/ng/ds1\n\n"
                       f"{root}/no-such.shard\n{root}/junk\n")
    rc = main(["verify", "--from-file", str(listing), "--json", "-j", "2",
               "--report", str(report), "--no-progress"])
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rc == 2
    local = normal(read_report(local_report[1]))
    want = {**only(local, "/mdb/", "/ng/ds1/", "no-such"), str(root / "junk"):
            local[str(root / "junk")]}
    assert out[-1]["summary"]["targets"] == len(want) == len(out) - 1 > 60
    assert normal(out[:-1]) == normal(read_report(report)) == want
    # exit codes: all sound 0, some unsound 1
    assert main(["verify", str(root / "zss" / "r00*.zss"), "--no-progress", "-j", "1"]) == 0
    text = capsys.readouterr().out
    assert text.count("\nOK ") + text.startswith("OK ") == 10
    assert "10 shard(s): 10 sound, 0 unsound, 0 unreadable" in text
    assert main(["verify", str(root / "zss" / "bad0.zss"), str(root / "zss" / "r001.zss"),
                 "--content-hash", "sha256", "-j", "1"]) == 1
    assert "UNSOUND " in capsys.readouterr().out
    # --resume: only the SWH shards the full local report does not call sound run again
    shutil.copyfile(local_report[1], tmp_path / "again.jsonl")
    rc = main(["verify", str(root / "swh" / "*.shard"), "--resume", str(tmp_path / "again.jsonl"),
               "--json", "-j", "1"])
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rc == 2  # the truncated SWH shards are still unreadable
    assert {r["target"] for r in out[:-1]} == {
        name for name, how in made.items() if "/swh/" in name and how != "sound"}
    assert out[-1]["summary"]["resumed"] == sum(
        1 for name, how in made.items() if "/swh/" in name and how == "sound")


def test_cli_one_target_keeps_its_output(capsys):
    sample = str(Path(__file__).parent / "data" / "swh" / "tiny.shard")
    assert main(["verify", sample]) == 0
    assert capsys.readouterr().out == f"{sample}: OK (Software Heritage read shard)\n"
    assert main(["verify", sample, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"file": sample, "format": "swh", "ok": True,
                                                    "problems": []}


def test_cli_usage_errors(tmp_path, capsys):
    assert main(["verify"]) == 2
    assert "no targets" in capsys.readouterr().err
    assert main(["verify", "--from-file", str(tmp_path / "missing.txt")]) == 2
    assert "--from-file" in capsys.readouterr().err
    assert main(["verify", "a", "b", "--jobs", "0"]) == 2
    with pytest.raises(SystemExit) as exc:
        main(["verify", "a", "--timeout", "soon"])
    assert exc.value.code == 2


def test_cli_many_targets_take_the_remote_options_and_all(range_server, tmp_path, capsys):
    """verify --help offers --block-size, --cache, --concurrency, --retries and --all; with
    several targets they were ignored, and --block-size 0 was accepted."""
    from httpserver import Fault

    data = Path(__file__).parent / "data" / "amudai"
    srv = range_server(data)
    urls = [srv.url("lz4.amudai.shard"), srv.url("single.amudai.shard")]
    assert main(["verify", *urls, "--block-size", "1K", "--cache", "0", "--concurrency", "1",
                 "-j", "1", "--no-progress"]) == 0
    starts = [int(r.range.removeprefix("bytes=").split("-")[0]) for r in srv.requests]
    assert srv.requests[0].range == "bytes=0-1023" and all(s % 1024 == 0 for s in starts)
    srv.reset()
    srv.add_fault(Fault(status=503))
    assert main(["verify", *urls, "--retries", "0", "-j", "1", "--no-progress"]) == 2
    assert srv.count() == 2  # one attempt per target: --retries 0 reached the workers
    assert capsys.readouterr().out.count("ERROR ") == 2
    for bad in (["--block-size", "0"], ["--cache", "-1"], ["--concurrency", "0"],
                ["--retries", "-1"]):
        try:
            code = main(["verify", *urls, *bad])
        except SystemExit as exc:  # the size options are refused by their argparse type
            code = exc.code
        assert code == 2
        err = capsys.readouterr().err
        assert bad[0] in err and "must be at least" in err and "Traceback" not in err
    with pytest.raises(shardkit.ShardkitError, match="--block-size must be at least 1"):
        bulk.run(urls, io_options={"block_size": 0})
    # --all: every problem of an unsound shard, not just the first
    raw = bytearray((data / "single.amudai.shard").read_bytes())
    with shardkit.open(bytes(raw)) as s:
        start = next(sec.start for sec in s.sections() if sec.name == "/stripes/0/fields/id/data")
    raw[start + 1] ^= 0x40
    (tmp_path / "bad.amudai.shard").write_bytes(bytes(raw))
    with shardkit.open(tmp_path / "bad.amudai.shard") as s:
        problems = [str(p) for p in s.verify()]
    assert len(problems) >= 2
    targets = [str(tmp_path / "bad.amudai.shard"), str(data / "lz4.amudai.shard")]
    assert main(["verify", *targets, "-j", "1", "--no-progress"]) == 1
    assert "PROBLEM" not in capsys.readouterr().out
    assert main(["verify", *targets, "-j", "1", "--no-progress", "--all"]) == 1
    out = capsys.readouterr().out
    assert [line.strip().removeprefix("PROBLEM ") for line in out.splitlines()
            if line.strip().startswith("PROBLEM ")] == problems


def test_a_run_never_reports_a_target_twice(tmp_path):
    sample = Path(__file__).parent / "data" / "swh" / "tiny.shard"
    summary = bulk.run([str(sample), str(sample), str(sample.parent / "tiny.*")], jobs=1,
                       report=tmp_path / "r.jsonl")
    assert [r["target"] for r in summary.results] == [str(sample)]
    assert len(read_report(tmp_path / "r.jsonl")) == 1
    assert os.path.getsize(tmp_path / "r.jsonl") > 0


def test_progress_bar_shows_counts_and_is_off_by_default_when_not_a_terminal(corpus, capsys):
    root, _ = corpus
    targets = [str(root / "zss" / "bad0.zss"), str(root / "zss" / "r00[0-2].zss")]
    bulk.run(targets, jobs=1, progress=True)
    err = capsys.readouterr().err
    assert "4/4" in err and "sound=3" in err and "unsound=1" in err and "shard/s" in err
    bulk.run(targets, jobs=1)  # stderr is not a terminal here
    assert capsys.readouterr().err == ""


def test_cli_http_glob_local_and_dask_reports_are_identical(corpus, dask_client, range_server,
                                                            tmp_path, capsys):
    root, made = corpus
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    picks = [*sorted((root / "swh").glob("*"))[:8], *sorted((root / "mdb").glob("*"))[-8:],
             *sorted((root / "zss").glob("*"))[:8], *sorted((root / "amudai").glob("*"))[:8],
             *sorted((root / "junk").glob("*")), root / "ng" / "ds0" / "0.shard"]
    for i, src in enumerate(picks):
        shutil.copyfile(src, mixed / f"{i:03d}.shard")
    srv = range_server(tmp_path)
    reports = []
    for engine in (["--jobs", "2"], ["--dask", dask_client.scheduler.address]):
        report = tmp_path / f"{engine[0][2:]}.jsonl"
        rc = main(["verify", srv.url("mixed/*.shard"), *engine, "--report", str(report)])
        assert rc == 2
        assert f"{len(picks)} shard(s)" in capsys.readouterr().out
        reports.append(normal(read_report(report)))
    assert reports[0] == reports[1]
    assert len(reports[0]) == len(picks)
    statuses = [row[2] for _, row in sorted(reports[0].items())]
    for src, status in zip(picks, statuses, strict=True):
        how = made.get(str(src))
        if how == "sound" and "/ng/" not in str(src):
            assert status == "sound", src
        else:  # damaged, junk, and a bare Neuroglancer shard without its spec
            assert status != "sound", src


def test_resume_from_a_report_that_does_not_exist_starts_it(tmp_path):
    data = Path(__file__).parent / "data"
    targets = [str(data / "swh" / "tiny.shard"), str(data / "zss" / "corrupt_medium_none.zss")]
    report = tmp_path / "new.jsonl"
    first = bulk.run(targets, jobs=1, resume=report)
    assert (first.resumed, first.sound, first.unsound, first.exit_code) == (0, 1, 1, 1)
    assert {r["target"]: r["status"] for r in read_report(report)} == {
        targets[0]: "sound", targets[1]: "unsound"}
    second = bulk.run(targets, jobs=1, resume=report)
    assert (second.resumed, second.unsound) == (1, 1)
    assert [r["target"] for r in second.results] == targets  # carried first, then re-run
    assert len(read_report(report)) == 2


def test_content_hash_reaches_the_formats_that_take_it(tmp_path):
    data = bytearray((Path(__file__).parent / "data" / "swh" / "tiny.shard").read_bytes())
    data[560] ^= 0xFF  # inside an object's value: the layout stays sound
    (tmp_path / "a.shard").write_bytes(bytes(data))
    shutil.copyfile(Path(__file__).parent / "data" / "zss" / "tiny_zlib.zss", tmp_path / "b.zss")
    targets = [str(tmp_path / "*")]
    plain = bulk.run(targets, jobs=1)
    hashed = bulk.run(targets, jobs=1, content_hash="sha256")
    assert (plain.sound, plain.exit_code) == (2, 0)
    assert (hashed.sound, hashed.unsound, hashed.exit_code) == (1, 1, 1)
    (bad,) = [r for r in hashed.results if r["status"] == "unsound"]
    assert bad["target"].endswith("a.shard") and "sha256(value)" in bad["problems"][0]["message"]


def test_relative_paths_reach_dask_workers_and_reports_name_them_as_given(
        corpus, dask_client, monkeypatch):
    root, _ = corpus
    monkeypatch.chdir(root)
    targets = ["zss/bad*.zss", "zss/r00[0-1].zss", "junk/*", "swh/tiny-cut-0.shard"]
    local = bulk.run(targets, jobs=1)
    remote = bulk.run(targets, client=dask_client)
    assert normal(remote.results) == normal(local.results)
    assert len(local.results) == 11
    assert all(not r["target"].startswith("/") for r in remote.results)
    for r in remote.results:  # messages name the target as given, not the absolute path
        texts = [r["error"]["message"]] if r["error"] else []
        texts += [p["message"] for p in r["problems"]]
        assert not any(str(root) in t for t in texts), r
    assert any(r["error"] and "junk/" in r["error"]["message"] for r in remote.results)
