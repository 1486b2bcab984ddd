"""The Neuroglancer API is typed: a user's script using it passes ``mypy --strict``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

USER_SCRIPT = '''
from __future__ import annotations

import numpy as np

from shardkit.errors import EntryNotFoundError
from shardkit.formats.neuroglancer import (
    ByteLRU,
    NgImageDataset,
    NgShard,
    ShardingSpec,
    open_dataset,
)
from shardkit.sources import FileSource
from shardkit.writers.neuroglancer import build_shard, write_image_volume, write_sharded_dataset


def main(folder: str) -> dict[str, int]:
    spec = ShardingSpec.from_dict({"@type": "neuroglancer_uint64_sharded_v1",
                                   "hash": "murmurhash3_x86_128", "preshift_bits": 0,
                                   "minishard_bits": 2, "shard_bits": 1})
    names: list[str] = write_sharded_dataset(folder + "/kv", {1: b"a", 2: b"bb"}, spec)
    ds = open_dataset(folder + "/kv", cache_bytes=1 << 20)
    value: bytes = ds[2]
    values: list[bytes | None] = ds.get_many([1, 2, 3], None)
    keys: list[int] = sorted(ds.keys())
    ok: bool = not ds.verify()
    shard = NgShard(FileSource(folder + "/kv/" + spec.shard_name(spec.locate(1).shard)), spec,
                    cache=ByteLRU(1 << 20))
    where: tuple[int, int] = spec.shard_and_minishard(1)
    missing = False
    try:
        shard[12345]
    except EntryNotFoundError:
        missing = True
    raw: bytes = build_shard({5: b"x"}, spec)
    info = write_image_volume(folder + "/img", np.ones((8, 8, 8), np.uint8), spec,
                              chunk_size=(4, 4, 4))
    img = open_dataset(folder + "/img")
    assert isinstance(img, NgImageDataset)
    box: np.ndarray = img.cutout(0, ((0, 0, 0), (5, 5, 5)))
    plane: np.ndarray = img.volume(0)[:, :, 2]
    lo, hi = img.bounds(0)
    return {"names": len(names), "value": len(value), "found": sum(v is not None for v in values),
            "keys": sum(keys), "ok": int(ok), "shard": where[0], "missing": int(missing),
            "raw": len(raw), "scales": len(info["scales"]), "box": int(box.sum()),
            "plane": plane.size, "extent": hi[0] - lo[0]}
'''


def test_user_script_passes_mypy_strict(tmp_path: Path) -> None:
    pytest.importorskip("mypy", reason="mypy is in the dev extra")
    script = tmp_path / "user.py"
    script.write_text(USER_SCRIPT)
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent",
         "--cache-dir", str(tmp_path / "cache"), str(script)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
        env={"MYPYPATH": str(SRC), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Success" in out.stdout




def test_user_script_runs(tmp_path: Path) -> None:
    """The script type-checked above also runs (so it checks the real API, not a guess)."""
    from shardkit.formats.neuroglancer import ShardingSpec

    namespace: dict[str, object] = {}
    exec(compile(USER_SCRIPT, "user.py", "exec"), namespace)
    main = namespace["main"]
    assert callable(main)
    spec = ShardingSpec.from_dict({"@type": "neuroglancer_uint64_sharded_v1",
                                   "hash": "murmurhash3_x86_128", "preshift_bits": 0,
                                   "minishard_bits": 2, "shard_bits": 1})
    shards = {spec.locate(1).shard, spec.locate(2).shard}
    assert main(str(tmp_path)) == {
        "names": 1 + len(shards), "value": 2, "found": 2, "keys": 3, "ok": 1,
        "shard": spec.locate(1).shard, "missing": 1, "raw": 16 * 4 + 1 + 24, "scales": 1,
        "box": 125, "plane": 8 * 8, "extent": 8}
