"""Segmentation volumes for the ``compressed_segmentation`` tests, written by tensorstore.

``labels()`` makes a label volume whose blocks hold chosen numbers of distinct labels (so that
the encoder picks every bit width), ``write_tensorstore()`` writes it as a sharded
``neuroglancer_precomputed`` scale. Run as a script, it rewrites the committed sample
``tests/data/neuroglancer/ts_seg_cseg_uint64`` and prints its manifest (see PROVENANCE.md there).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

DATA = Path(__file__).parent / "data" / "neuroglancer"

# distinct labels per block, cycled over the blocks: encoded_bits 0, 1, 2, 4, 8, 16, 32
DISTINCT = (1, 2, 3, 5, 17, 300, 70000)

SPEC = {"@type": "neuroglancer_uint64_sharded_v1", "hash": "identity", "preshift_bits": 1,
        "minishard_bits": 1, "shard_bits": 1, "minishard_index_encoding": "raw",
        "data_encoding": "raw"}

# the committed sample: uint64, 2 channels, edge chunks clipped in x, y and z
SAMPLE = {"name": "ts_seg_cseg_uint64", "dtype": "uint64", "channels": 2, "size": [21, 18, 9],
          "chunk": [16, 16, 8], "block": [8, 4, 4], "voxel_offset": [5, -3, 100], "seed": 7,
          "distinct": [1, 2, 3, 5, 17], "sharding": SPEC}


def labels(size: list[int], block: list[int], channels: int, dtype: str, seed: int,
           distinct: tuple[int, ...] | list[int] = DISTINCT) -> np.ndarray:
    """An ``(x, y, z, c)`` label volume: block ``k`` (over the volume's block grid, x fastest,
    channel by channel) holds ``distinct[k % len(distinct)]`` labels (as many as fit)."""
    rng = np.random.default_rng(seed)
    high = np.iinfo(dtype).max
    vol = np.zeros((*size, channels), dtype=dtype)
    grid = [range(0, n, b) for n, b in zip(size, block, strict=True)]
    k = 0
    for c in range(channels):
        for z0, y0, x0 in itertools.product(grid[2], grid[1], grid[0]):
            view = vol[x0:x0 + block[0], y0:y0 + block[1], z0:z0 + block[2], c]
            n = min(distinct[k % len(distinct)], view.size)
            k += 1
            pool = rng.integers(1, high, n, dtype=dtype, endpoint=True)
            cells = np.resize(np.arange(n), view.size)  # every label used at least once
            view[...] = pool[rng.permutation(cells)].reshape(view.shape)
    return vol


def write_tensorstore(root: Path, vol: np.ndarray, chunk: list[int], block: list[int],
                      sharding: dict[str, Any] | None = SPEC,
                      voxel_offset: tuple[int, ...] | list[int] = (0, 0, 0)) -> Any:
    """Write ``vol`` (x, y, z, c) as a compressed_segmentation scale; the open TensorStore."""
    import tensorstore as ts

    scale: dict[str, Any] = {"size": list(vol.shape[:3]), "chunk_size": chunk,
                             "resolution": [8, 8, 40], "encoding": "compressed_segmentation",
                             "compressed_segmentation_block_size": block,
                             "voxel_offset": list(voxel_offset)}
    if sharding is not None:
        scale["sharding"] = sharding
    store = ts.open({"driver": "neuroglancer_precomputed", "kvstore": f"file://{root}/",
                     "create": True, "scale_metadata": scale,
                     "multiscale_metadata": {"type": "segmentation",
                                             "data_type": str(vol.dtype),
                                             "num_channels": vol.shape[3]}}).result()
    store[...] = vol
    return store


def sample_volume() -> np.ndarray:
    """The committed sample's volume (x, y, z, c)."""
    s = SAMPLE
    return labels(s["size"], s["block"], s["channels"], s["dtype"], s["seed"], s["distinct"])


def main(argv: list[str]) -> int:
    """Rewrite the committed sample (into ``argv[0]`` if given) and print its manifest."""
    import tensorstore as ts

    out = Path(argv[0]) if argv else DATA / SAMPLE["name"]
    vol = sample_volume()
    write_tensorstore(out, vol, SAMPLE["chunk"], SAMPLE["block"], SAMPLE["sharding"],
                      SAMPLE["voxel_offset"])
    files = {str(p.relative_to(out)): {"size": p.stat().st_size,
                                       "sha256": hashlib.sha256(p.read_bytes()).hexdigest()}
             for p in sorted(out.rglob("*")) if p.is_file()}
    manifest = {
        "generator": {"package": "tensorstore", "version": _version(ts),
                      "api": "ts.open({'driver': 'neuroglancer_precomputed', 'create': True, "
                             "scale_metadata with encoding compressed_segmentation and "
                             "sharding}); store[...] = volume",
                      "script": "tests/ng_cseg_samples.py", "params": SAMPLE},
        "volume_sha256": hashlib.sha256(np.ascontiguousarray(vol).tobytes()).hexdigest(),
        "volume_sha256_definition": "sha256 of the whole volume as a C-ordered (x, y, z, "
                                    "channel) little-endian uint64 array",
        "files": files,
    }
    print(json.dumps(manifest, indent=1))
    return 0


def _version(module: Any) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(module.__name__)
    except PackageNotFoundError:  # pragma: no cover - not installed as a distribution
        return "unknown"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
