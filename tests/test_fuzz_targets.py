"""The fuzz targets and mutators of ``fuzz/``; every saved finding replayed as a regression test.

A finding is an input that once made a reader raise something other than a ``ShardkitError``; once
fixed, it must only ever raise ``ShardkitError`` (which the targets swallow) or nothing.
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest

import shardkit
from shardkit.errors import ShardkitError

FUZZ = Path(__file__).resolve().parent.parent / "fuzz"
sys.path.insert(0, str(FUZZ))

import mutators  # noqa: E402
import targets  # noqa: E402

FINDINGS = [(fmt, p) for fmt in sorted(targets.TARGETS) for p in targets.findings(fmt)]


#: libFuzzer's own findings: a hang (``timeout-``) or an RSS over the limit (``oom-``). They are
#: replayed in a child process under the campaign's limits, so a regression cannot stall the suite.
LIMIT_SECONDS = 10
LIMIT_EXTRA_RSS_MB = 256

_REPLAY = """
import resource, sys, time
sys.path.insert(0, sys.argv[1])
import targets
data = open(sys.argv[3], "rb").read()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
targets.TARGETS[sys.argv[2]](data)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print('{"seconds": %f, "extra_rss_mb": %f}' % (time.perf_counter() - start,
                                               (after - before) / 1024))
"""


@pytest.mark.parametrize(("fmt", "path"), FINDINGS,
                         ids=[f"{f}/{p.name}" for f, p in FINDINGS])
def test_saved_finding_only_raises_shardkit_errors(fmt: str, path: Path) -> None:
    if not path.name.startswith(("timeout-", "oom-")):
        targets.TARGETS[fmt](path.read_bytes())
        return
    try:
        done = subprocess.run([sys.executable, "-c", _REPLAY, str(FUZZ), fmt, str(path)],
                              capture_output=True, text=True, timeout=2 * LIMIT_SECONDS)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{path.name} still runs for over {2 * LIMIT_SECONDS} s")
    assert done.returncode == 0, done.stderr[-2000:]
    used = json.loads(done.stdout.splitlines()[-1])
    assert used["seconds"] < LIMIT_SECONDS
    assert used["extra_rss_mb"] < LIMIT_EXTRA_RSS_MB + path.stat().st_size / (1 << 20)


SMALL_SEEDS = [(fmt, name, data) for fmt in sorted(targets.TARGETS)
               for name, data in targets.seeds(fmt) if len(data) <= 64 << 10]


def _problems_of_seed(fmt: str, data: bytes) -> list[object]:
    """What a seed gives outside its target: ``verify()``'s problems (a chunk: its decoded
    size checked); a ``ShardkitError`` propagates."""
    fmt = targets.SAME_INPUTS.get(fmt, fmt)
    if fmt == "cseg":
        from shardkit.formats.neuroglancer import decode_compressed_segmentation

        head = data[0]
        x, y, z = targets.CSEG_SHAPES[head >> 5 & 7]
        shape = (2 if head & 2 else 1, z, y, x)
        out = decode_compressed_segmentation(data[1:], shape, targets.CSEG_BLOCKS[head >> 2 & 7],
                                             "uint64" if head & 1 else "uint32", field="/chunk")
        return [] if out.shape == shape else [f"decoded shape {out.shape}"]
    if fmt == "neuroglancer":
        spec = targets.NG_SPECS[data[0] % len(targets.NG_SPECS)]
        with shardkit.open(data[1:], format="neuroglancer", spec=spec) as s:
            for key in s.keys():
                s[key]  # every chunk reads
            return list(s.verify())
    with shardkit.open(data, format=fmt) as s:
        return list(s.verify())


@pytest.mark.parametrize(("fmt", "name", "data"), SMALL_SEEDS,
                         ids=[f"{f}/{n}" for f, n, _ in SMALL_SEEDS])
def test_seed_runs_through_its_target(fmt: str, name: str, data: bytes,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A seed that opens and verifies clean goes through every call of its target without
    any error (no ShardkitError swallowed); one with an error or a problem (the damaged
    reference samples) gives only ShardkitErrors there."""
    try:
        sound = _problems_of_seed(fmt, data) == []
    except ShardkitError:
        sound = False
    if sound:
        monkeypatch.setattr(targets, "_guard", lambda body: body())
    targets.TARGETS[fmt](data)


def test_every_format_has_seeds() -> None:
    assert {fmt for fmt, _, _ in SMALL_SEEDS} == set(targets.TARGETS)


def _identity(data: bytes, max_size: int) -> bytes:
    return data[:max_size]


def _flip_first(data: bytes, max_size: int) -> bytes:
    return (bytes([data[0] ^ 0x01]) + data[1:])[:max_size] if data else data


@pytest.mark.parametrize("name", ["tiny_none", "tiny_zlib", "tiny_bz2", "metadata_zlib"])
def test_zss_mutator_reseals_blocks(name: str) -> None:
    data = (Path(__file__).parent / "data" / "zss" / f"{name}.zss").read_bytes()
    data_offset, blocks = mutators.zss_blocks(data)
    assert blocks[0][0] == data_offset and blocks[-1][2] == len(data)
    for seed in range(20):
        out = mutators.mutate_zss(data, len(data) * 2, seed, _identity)
        with shardkit.open(out, format="zss") as z:  # re-encoded, still sound and equal
            assert z.verify() == []
            assert list(z) == list(shardkit.open(data, format="zss"))
    # A mutated body behind a re-sealed codec: no CRC or codec complaint, but what the body says.
    changed = [mutators.mutate_zss(data, len(data) * 2, seed, _flip_first) for seed in range(20)]
    assert any(c != data for c in changed)
    for out in changed:
        try:
            problems = shardkit.open(out, format="zss").verify()
        except ShardkitError:
            continue
        assert not any("crc" in p.message.lower() for p in problems)


def test_amudai_mutator_reseals_records() -> None:
    data = (Path(__file__).parent / "data" / "amudai" / "single.amudai.shard").read_bytes()
    regions = mutators.amudai_regions(data)
    assert len(regions) > 10
    size = len(data)
    directory_len = struct.unpack_from("<I", data, size - 12)[0]
    assert (size - 12 - directory_len - 4, size - 12 - 4, size - 12 - 4) in regions
    for start, end, at in regions:
        assert struct.unpack_from("<I", data, at)[0] == mutators.ck(data[start:end])
    touched = 0
    for seed in range(40):
        out = mutators.mutate_amudai(data, size, seed, _flip_first)
        assert len(out) == size
        if out == data:
            continue
        touched += 1
        assert mutators.amudai_regions(out), "re-sealed records are found again"
        try:
            problems = shardkit.open(out, format="amudai").verify()
        except ShardkitError as exc:
            assert "checksum" not in str(exc).lower()
            continue
        assert not any("checksum" in p.message.lower() for p in problems)
    assert touched > 20


def test_seed_files_are_what_make_seeds_writes() -> None:
    import make_seeds

    for fmt, make in make_seeds.MAKERS.items():
        want = dict(make())
        have = {p.name: p.read_bytes() for p in (FUZZ / "seeds" / fmt).iterdir()}
        assert have == want, f"fuzz/seeds/{fmt} is stale: run python fuzz/make_seeds.py"
        assert max(map(len, want.values())) <= 8192, "seeds stay small: that is their point"


#: Seeds written on purpose with a footer a reader must question (huggingface.js-style zeroed
#: table offsets); every other seed is a sound file.
UNSOUND_SEEDS = {("mdb", "zero-table-offsets.mdb")}


@pytest.mark.parametrize("fmt", ["amudai", "zss", "mdb", "neuroglancer"])
def test_writer_seeds_open_and_verify_clean(fmt: str) -> None:
    for path in sorted((FUZZ / "seeds" / fmt).iterdir()):
        data = path.read_bytes()
        if fmt == "neuroglancer":
            reader = shardkit.open(data[1:], format=fmt, spec=targets.NG_SPECS[data[0]])
        else:
            reader = shardkit.open(data, format=fmt)
        with reader:
            problems = reader.verify()
            assert bool(problems) == ((fmt, path.name) in UNSOUND_SEEDS), (path.name, problems)
            if fmt == "amudai":
                rows = reader.summary()["record_count"]
                assert rows == (0 if path.name == "empty.amudai.shard" else
                                9 if path.name.startswith("stripes3") else 5)
                for f in reader.iter_fields():
                    path_ = getattr(f, "path", None) or f.name
                    if "." not in path_:
                        assert len(reader.read_column(path_)) == rows, path_
            elif fmt == "zss":
                records = list(reader)
                assert records == sorted(records)
            elif fmt == "neuroglancer":
                assert all(reader[k] == bytes([k % 256]) * (1 + k % 9) or reader[k] in
                           (b"chunk", b"") for k in reader.keys())


def test_amudai_seeds_cover_every_writer_type_and_option() -> None:
    import make_seeds

    names = {p.name for p in (FUZZ / "seeds" / "amudai").iterdir()}
    for kind in make_seeds._amudai_columns(1):
        assert f"{kind}.amudai.shard" in names
    for option in ("lz4-", "zstd-", "nochecksum-", "roaring-", "auto-presence-", "stripes3-"):
        assert any(n.startswith(option) for n in names), option


def test_numpy_comparisons_bypass_the_native_hook() -> None:
    pytest.importorskip("atheris")
    import importlib.util

    import numpy as np

    spec = importlib.util.spec_from_file_location("fuzz_runner", FUZZ / "fuzz.py")
    runner = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runner)
    got = runner._trace_cmp(np.arange(4), np.int64(2), 0, 0, False)  # op 0 is "<"
    assert got.tolist() == [True, True, False, False]
    assert runner._trace_cmp(np.uint8(7), 7, 2, 0, False)  # "=="
    assert runner._trace_cmp(b"SWH", b"SWH", 2, 1, False) is True
    assert runner._trace_cmp(3, 4, 5, 2, False) is False  # ">="


def test_keep_going_saves_each_signature_once_and_memory_jumps(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    pytest.importorskip("atheris")
    import hashlib
    import importlib.util
    import types

    spec = importlib.util.spec_from_file_location("fuzz_runner", FUZZ / "fuzz.py")
    runner = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runner)
    # ru_maxrss (KiB) at start, then after each input below
    peaks = iter(x << 10 for x in [100, 100, 120, 130, 500, 520])
    monkeypatch.setattr(runner, "resource", types.SimpleNamespace(
        RUSAGE_SELF=0, getrusage=lambda _: types.SimpleNamespace(ru_maxrss=next(peaks))))

    def target(data: bytes) -> None:
        if data.startswith((b"old", b"boom")):
            raise ValueError(data)
        if data == b"key":
            raise KeyError(data)

    (tmp_path / "crash-old").write_bytes(b"old")
    run = runner._keep_going(target, tmp_path)
    for data in (b"fine", b"boom1", b"key", b"big", b"fine again"):
        run(data)  # never raises: findings are recorded
    saved = sorted(p.name for p in tmp_path.iterdir())
    assert saved == sorted(["crash-old", f"crash-{hashlib.sha1(b'key').hexdigest()[:16]}",
                            f"oom-{hashlib.sha1(b'big').hexdigest()}"])
