"""Hostile Neuroglancer datasets: paths out of the dataset, out-of-range parameters, gzip
bombs; writers that never leave a partial file; one dataset shared by many threads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import tracemalloc
import zlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import shardkit
from shardkit.errors import LimitExceededError
from shardkit.formats.neuroglancer import (
    DEFAULT_MAX_INDEX_SIZE,
    NgShard,
    ShardingSpec,
    SpecError,
    open_dataset,
)
from shardkit.sources import BytesSource
from shardkit.writers import neuroglancer as writer
from shardkit.writers.neuroglancer import build_shard, write_image_volume, write_sharded_dataset

SPEC = {"@type": "neuroglancer_uint64_sharded_v1", "hash": "identity", "preshift_bits": 0,
        "minishard_bits": 1, "shard_bits": 1, "minishard_index_encoding": "gzip",
        "data_encoding": "gzip"}


# -- where the files of a dataset may be ------------------------------------------------------


_opened: list[str] | None = None


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if (_opened is not None and event in ("open", "os.listdir", "os.scandir") and args
            and isinstance(args[0], (str, bytes, os.PathLike))):
        _opened.append(os.fsdecode(args[0]))


sys.addaudithook(_audit)


@pytest.fixture
def touched() -> Iterator[list[str]]:
    """Every path opened or listed by this process during the test."""
    global _opened
    _opened = []
    try:
        yield _opened
    finally:
        _opened = None


@pytest.fixture
def two_datasets(tmp_path: Path) -> Path:
    """``ds/`` (an image volume) and, beside it, ``outside/`` (a complete one too)."""
    vol = np.arange(16 * 16 * 8, dtype=np.uint8).reshape(16, 16, 8)
    for name in ("ds", "outside"):
        write_image_volume(tmp_path / name, vol, SPEC, chunk_size=(8, 8, 8), scale_key="s0")
    return tmp_path


def set_info(folder: Path, change: Any) -> None:
    info = json.loads((folder / "info").read_text())
    change(info)
    (folder / "info").write_text(json.dumps(info))


HOSTILE_KEYS = ["../outside/s0", "/etc", "s0/../../outside/s0", "http://evil.example/s0",
                "gs://bucket/s0", "file:///etc", "c:/windows", "", "a\\..\\b", "s0\x00"]


@pytest.mark.parametrize("key", HOSTILE_KEYS)
def test_scale_key_outside_is_refused(two_datasets: Path, touched: list[str], key: str) -> None:
    set_info(two_datasets / "ds", lambda info: info["scales"][0].update(key=key))
    with pytest.raises(SpecError) as err:
        shardkit.open(two_datasets / "ds")
    assert err.value.field == "/scales/0/key"
    root = str(two_datasets / "ds")
    assert touched and all(p.startswith(root) for p in touched), touched


def test_scale_key_that_stays_inside_is_followed(two_datasets: Path) -> None:
    set_info(two_datasets / "ds", lambda info: info["scales"][0].update(key="x/../s0"))
    with shardkit.open(two_datasets / "ds") as ds:
        assert ds.read_chunk(0, (1, 1, 0)).shape == (1, 8, 8, 8)


def test_allow_external_follows_parent_paths(two_datasets: Path) -> None:
    set_info(two_datasets / "ds", lambda info: info["scales"][0].update(key="../outside/s0"))
    with open_dataset(two_datasets / "ds", allow_external=True) as ds:
        assert ds.verify() == []
    for key in ("/etc", "http://evil.example/s0"):  # never, even then
        set_info(two_datasets / "ds", lambda info, k=key: info["scales"][0].update(key=k))
        with pytest.raises(SpecError):
            open_dataset(two_datasets / "ds", allow_external=True)


def test_annotation_by_id_key_outside_is_refused(tmp_path: Path, touched: list[str]) -> None:
    (tmp_path / "ann").mkdir()
    (tmp_path / "ann" / "info").write_text(json.dumps({
        "@type": "neuroglancer_annotations_v1",
        "by_id": {"key": "../../secrets", "sharding": SPEC}}))
    with pytest.raises(SpecError) as err:
        shardkit.open(tmp_path / "ann")
    assert err.value.field == "/by_id/key"
    assert all(p.startswith(str(tmp_path / "ann")) for p in touched), touched


def test_remote_scale_key_to_another_host(two_datasets: Path, range_server: Any) -> None:
    for key in ("http://127.0.0.1:9/s0", "../outside/s0", "//evil.example/s0"):
        set_info(two_datasets / "ds", lambda info, k=key: info["scales"][0].update(key=k))
        srv = range_server(two_datasets)
        with pytest.raises(SpecError) as err:
            open_dataset(srv.url("ds"))
        assert err.value.field == "/scales/0/key"
        assert [r.path for r in srv.requests] == ["/ds/info"]


@pytest.mark.parametrize(("change", "field"), [
    (lambda s: s["sharding"].update(shard_bits=40, minishard_bits=30),
     "/scales/0/sharding/shard_bits"),
    (lambda s: s["sharding"].update(preshift_bits=65), "/scales/0/sharding/preshift_bits"),
    (lambda s: s["sharding"].update(minishard_bits=-1), "/scales/0/sharding/minishard_bits"),
    (lambda s: s["sharding"].update(shard_bits=2.5), "/scales/0/sharding/shard_bits"),
    (lambda s: s["sharding"].update(hash="md5"), "/scales/0/sharding/hash"),
    (lambda s: s.update(size=[16, -16, 8]), "/scales/0/size"),
    (lambda s: s.update(size=[2**40, 16, 8]), "/scales/0/size"),
    (lambda s: s.update(chunk_sizes=[[0, 8, 8]]), "/scales/0/chunk_sizes/0"),
    (lambda s: s.update(chunk_sizes=[[4096, 4096, 4096]]), "/scales/0/chunk_sizes/0"),
    (lambda s: s.update(size=[2**32, 2**32, 2**32], chunk_sizes=[[1, 1, 1]]), "/scales/0/size"),
    (lambda s: s.update(voxel_offset=[0, "x", 0]), "/scales/0/voxel_offset"),
])
def test_out_of_range_parameters_are_refused(two_datasets: Path, change: Any,
                                             field: str) -> None:
    set_info(two_datasets / "ds", lambda info: change(info["scales"][0]))
    with pytest.raises(SpecError) as err:
        shardkit.open(two_datasets / "ds")
    assert err.value.field == field
    assert field.rsplit("/", 1)[-1].split("_")[0] in str(err.value)


# -- gzip bombs ---------------------------------------------------------------------------------


def gzip_of_zeros(n: int) -> bytes:
    """A gzip member inflating to ``n`` zero bytes, made without holding them."""
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = bytes(1 << 20)
    out = [c.compress(block) for _ in range(n >> 20)]
    return b"".join([*out, c.compress(bytes(n & ((1 << 20) - 1))), c.flush()])


def shard_with_index(raw_index: bytes, spec: dict[str, Any]) -> bytes:
    """A one-minishard shard whose minishard index is ``raw_index`` (stored as given)."""
    return np.array([0, len(raw_index)], dtype="<u8").tobytes() + raw_index


def test_minishard_index_bomb_is_refused_with_bounded_memory() -> None:
    spec = {**SPEC, "shard_bits": 0, "minishard_bits": 0}
    bomb = gzip_of_zeros(DEFAULT_MAX_INDEX_SIZE + (8 << 20))  # 72 MiB of zeros, ~70 KB
    shard = NgShard(BytesSource(shard_with_index(bomb, spec), "0.shard"), spec)
    tracemalloc.start()
    try:
        with pytest.raises(LimitExceededError) as err:
            shard[5]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert err.value.field == "/minishards/0/index" and err.value.offset == 16
    assert "max_index_size" in str(err.value) or "cap" in str(err.value)
    assert peak < DEFAULT_MAX_INDEX_SIZE + (4 << 20), peak  # the cap, not the bomb
    # verify reports it as a problem, naming the field
    problems = shard.verify()
    assert [(p.check, p.field) for p in problems] == [("minishard_index", "/minishards/0/index")]
    # a smaller cap applies when asked
    small = NgShard(BytesSource(shard_with_index(gzip_of_zeros(2 << 20), spec), "0.shard"), spec,
                    max_index_size=1 << 20)
    with pytest.raises(LimitExceededError, match="1048576-byte cap"):
        small[5]


def test_chunk_data_bomb_is_refused() -> None:
    spec = {**SPEC, "shard_bits": 0, "minishard_bits": 0, "minishard_index_encoding": "raw"}
    good = build_shard({9: b"x" * 10}, spec)
    bomb = gzip_of_zeros(4 << 20)
    # rebuild with the chunk's bytes replaced by the bomb: index = [id 9, offset 0, size]
    index = np.array([9, 0, len(bomb)], dtype="<u8").tobytes()
    data = np.array([len(bomb), len(bomb) + 24], dtype="<u8").tobytes() + bomb + index
    assert build_shard({9: b"x" * 10}, spec)[:16] == good[:16]
    shard = NgShard(BytesSource(data, "0.shard"), spec, max_decoded_size=1 << 20)
    tracemalloc.start()
    try:
        with pytest.raises(LimitExceededError) as err:
            shard[9]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert err.value.field == "/chunks/9" and err.value.offset == 16
    assert peak < 3 << 20, peak
    assert [(p.check, p.field) for p in shard.verify()] == [("gzip", "/chunks/9")]


# -- writers never leave a partial file ----------------------------------------------------------


def test_writer_failure_leaves_no_partial_file(tmp_path: Path, monkeypatch: Any) -> None:
    items = {k: bytes([k]) * 100 for k in range(40)}
    write_sharded_dataset(tmp_path / "ds", items, SPEC)
    before = {p.name: p.read_bytes() for p in (tmp_path / "ds").iterdir()}
    calls = []
    real = os.replace

    def failing_replace(src: Any, dst: Any) -> None:
        calls.append(dst)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        real(src, dst)

    monkeypatch.setattr(writer.os, "replace", failing_replace)
    new = {k: b"new" * k for k in range(40)}
    with pytest.raises(OSError, match="No space"):
        write_sharded_dataset(tmp_path / "ds", new, SPEC)
    after = {p.name: p.read_bytes() for p in (tmp_path / "ds").iterdir()}
    # no temporary file is left, every file is the old or the new one whole, and the info
    # file (written last) was not replaced
    assert set(after) == set(before)
    assert after["info"] == before["info"]
    for name in ("0.shard", "1.shard"):
        shard = NgShard(BytesSource(after[name], name), ShardingSpec.from_dict(SPEC))
        assert shard.verify() == []


def test_writer_on_a_full_disk_leaves_nothing_under_final_names(tmp_path: Path) -> None:
    """A file-size limit makes a write fail midway (as a full disk does)."""
    script = f"""
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (20000, 20000))
from shardkit.writers.neuroglancer import write_sharded_dataset
spec = {SPEC!r}
items = {{k: bytes(range(256)) * 3 for k in range(200)}}
try:
    write_sharded_dataset({str(tmp_path / "ds")!r}, items, spec)
except OSError as exc:
    print("failed", exc.errno)
    sys.exit(0)
print("written")
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout.split()[0] == "failed", out
    left = sorted(p.name for p in (tmp_path / "ds").iterdir())
    assert "info" not in left  # the dataset was never declared complete
    for name in left:  # whatever got its final name is whole
        assert not name.startswith("."), left
        shard = NgShard(BytesSource((tmp_path / "ds" / name).read_bytes(), name),
                        ShardingSpec.from_dict(SPEC))
        assert shard.verify() == []


# -- threads ------------------------------------------------------------------------------------


@pytest.mark.parametrize("cache_bytes", [1 << 26, 20_000])  # roomy, and constantly evicting
def test_eight_threads_see_what_one_sees(tmp_path: Path, cache_bytes: int) -> None:
    rng = np.random.default_rng(12)
    spec = {**SPEC, "hash": "murmurhash3_x86_128", "shard_bits": 2, "minishard_bits": 3}
    items = {int(k): rng.bytes(int(rng.integers(0, 300)))
             for k in rng.integers(0, 2**64, 3000, dtype=np.uint64)}
    write_sharded_dataset(tmp_path / "kv", items, spec)
    vol = rng.integers(0, 255, (40, 40, 20), dtype=np.uint8)
    write_image_volume(tmp_path / "img", vol, spec, chunk_size=(8, 8, 8))
    keys = sorted(items)

    def work(seed: int, ds: Any, img: Any) -> tuple[Any, ...]:
        order = list(np.random.default_rng(seed).permutation(len(keys)))
        got = [ds[keys[i]] for i in order[:800]]
        many = ds.get_many([keys[i] for i in order[800:1600]])
        listed = sorted(ds.keys())
        problems = ds.verify()
        cut = img.cutout(0, ((3, 5, 1), (37, 33, 19)))
        return got, many, listed, problems, cut.tobytes()

    with open_dataset(tmp_path / "kv", cache_bytes=cache_bytes) as ds, \
            open_dataset(tmp_path / "img", cache_bytes=cache_bytes) as img:
        alone = [work(seed, ds, img) for seed in range(8)]
    with open_dataset(tmp_path / "kv", cache_bytes=cache_bytes) as ds, \
            open_dataset(tmp_path / "img", cache_bytes=cache_bytes) as img:
        start = threading.Barrier(8)

        def run(seed: int) -> tuple[Any, ...]:
            start.wait()
            return work(seed, ds, img)

        with ThreadPoolExecutor(8) as pool:
            together = list(pool.map(run, range(8)))
        assert ds.kv.cache.nbytes <= cache_bytes
    assert together == alone
    assert alone[0][0][0] == items[keys[int(np.random.default_rng(0).permutation(3000)[0])]]
    assert alone[0][2] == keys and alone[0][3] == []
    assert alone[0][4] == np.ascontiguousarray(
        vol[3:37, 5:33, 1:19, np.newaxis].transpose(3, 2, 1, 0)).transpose(3, 2, 1, 0).tobytes()


def test_whole_gzipped_shards_in_memory_count_against_the_budget(tmp_path: Path) -> None:
    """``N.shard.gz`` files are held decompressed: they are let go to stay within budget."""
    import gzip

    rng = np.random.default_rng(2)
    spec = {**SPEC, "shard_bits": 2, "minishard_bits": 1}
    items = {k: rng.bytes(2000) for k in range(64)}
    write_sharded_dataset(tmp_path / "ds", items, spec)
    sizes = []
    for shard in sorted((tmp_path / "ds").glob("*.shard")):
        data = shard.read_bytes()
        sizes.append(len(data))
        shard.with_name(shard.name + ".gz").write_bytes(gzip.compress(data))
        shard.unlink()
    budget = max(sizes) + 1000  # room for one whole shard, not two
    with open_dataset(tmp_path / "ds", cache_bytes=budget) as ds:
        for k in sorted(items, key=lambda k: (k * 7) % 64):
            assert ds[k] == items[k]
            held = ds.kv._held
            assert held <= budget, held
        assert sum(r is not None for r in ds.kv._shards.values()) == 1
        assert ds.verify() == []


def test_a_minishard_index_evicted_mid_batch_is_read_again() -> None:
    """Another thread may evict a cached minishard index between the batch's two looks at
    the cache (seen as a KeyError in the eight-thread test): the batch keeps what it saw."""
    root = Path(__file__).parent / "data" / "neuroglancer" / "cv_identity_raw"
    spec = json.loads((root / "info").read_text())["sharding"]
    with shardkit.open(root / "2.shard", spec=spec) as shard:
        expect = sorted(shard.keys())
        assert expect
    with shardkit.open(root / "2.shard", spec=spec) as shard:
        shard[expect[0]]  # caches the minishard index of the first key
        real_get, seen = shard.cache.get, set()

        def get_then_evict(key: Any) -> Any:
            if key[1] >= 0 and key in seen:
                return None  # evicted by another thread since the last look
            seen.add(key)
            return real_get(key)

        shard.cache.get = get_then_evict  # type: ignore[method-assign]
        assert sorted(shard.keys()) == expect
