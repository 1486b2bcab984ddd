"""Bounding-box reads of sharded image volumes: ``cutout`` and ``volume()[...]`` slicing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import shardkit
from shardkit.errors import EntryNotFoundError, InvalidKeyError, UnsupportedVersionError
from shardkit.writers.neuroglancer import write_image_volume

SPEC = {"@type": "neuroglancer_uint64_sharded_v1", "hash": "identity", "preshift_bits": 1,
        "minishard_bits": 2, "shard_bits": 2, "minishard_index_encoding": "gzip",
        "data_encoding": "gzip"}
OFFSET = (-7, 3, 1000)


@pytest.fixture(scope="module")
def volume(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    rng = np.random.default_rng(8)
    vol = rng.integers(1, 2**31, (37, 29, 21, 3), dtype=np.int32)
    vol[:16, :8, :8] = 0  # one all-zero chunk, left out by the writer
    root = tmp_path_factory.mktemp("ng-volume") / "vol"
    write_image_volume(root, vol, SPEC, chunk_size=(16, 8, 8), voxel_offset=OFFSET,
                       skip_zero_chunks=True)
    return root, vol


def box(lo: tuple[int, ...], hi: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """A box given relative to the volume's origin, in absolute coordinates."""
    return (tuple(a + o for a, o in zip(lo, OFFSET, strict=True)),
            tuple(b + o for b, o in zip(hi, OFFSET, strict=True)))


@pytest.mark.parametrize(("lo", "hi"), [
    ((0, 0, 0), (37, 29, 21)),
    ((5, 3, 2), (33, 28, 19)),
    ((32, 24, 16), (37, 29, 21)),  # the clipped corner chunk
    ((20, 10, 9), (21, 11, 10)),
    ((0, 8, 0), (37, 9, 21)),  # one y plane across every x and z chunk
])
def test_cutout_matches_the_array(volume: Any, lo: tuple[int, ...], hi: tuple[int, ...]) -> None:
    root, vol = volume
    with shardkit.open(root) as ds:
        want = vol[lo[0]:hi[0], lo[1]:hi[1], lo[2]:hi[2]]
        got = ds.cutout(0, box(lo, hi), fill_missing=True)
        assert got.dtype == np.dtype("<i4") and got.shape == want.shape
        assert np.array_equal(got, want)
        czyx = ds.cutout(0, box(lo, hi), fill_missing=True, order="czyx")
        assert czyx.flags.c_contiguous and np.array_equal(czyx, want.transpose(3, 2, 1, 0))


def test_volume_slicing(volume: Any) -> None:
    root, vol = volume
    with shardkit.open(root) as ds:
        view = ds.volume(fill_missing=True)
        assert view.shape == (37, 29, 21, 3) and view.bounds == box((0, 0, 0), (37, 29, 21))
        x0, _, z0 = OFFSET
        assert np.array_equal(view[x0 + 2 : x0 + 30, :, z0 + 4], vol[2:30, :, 4:5])
        assert np.array_equal(view[:, :, :], vol)


def test_missing_chunks_and_bad_boxes(volume: Any) -> None:
    root, _ = volume
    with shardkit.open(root) as ds:
        with pytest.raises(EntryNotFoundError, match="not stored"):
            ds.cutout(0, box((0, 0, 0), (20, 10, 10)))  # covers the chunk left out
        assert ds.cutout(0, box((16, 0, 0), (20, 8, 8))).shape == (4, 8, 8, 3)  # stored one
        for bad in [box((0, 0, 0), (38, 29, 21)), box((-1, 0, 0), (5, 5, 5)),
                    box((5, 5, 5), (5, 6, 6)), ((0, 0), (1, 1)), "nonsense"]:
            with pytest.raises(InvalidKeyError):
                ds.cutout(0, bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidKeyError):
            ds.volume()[0:5:2]
        with pytest.raises(EntryNotFoundError):
            ds.cutout("no-such-scale", box((0, 0, 0), (1, 1, 1)))


def test_cutout_of_encoded_chunks_is_refused(tmp_path: Path) -> None:
    import json

    vol = np.ones((8, 8, 8), dtype=np.uint8)
    write_image_volume(tmp_path / "v", vol, SPEC, chunk_size=(8, 8, 8))
    info = json.loads((tmp_path / "v" / "info").read_text())
    info["scales"][0]["encoding"] = "jpeg"
    (tmp_path / "v" / "info").write_text(json.dumps(info))
    with shardkit.open(tmp_path / "v") as ds, pytest.raises(UnsupportedVersionError,
                                                            match="jpeg"):
        ds.cutout(0, ((0, 0, 0), (8, 8, 8)))


def test_remote_cutout_coalesces(volume: Any, range_server: Any) -> None:
    root, vol = volume
    srv = range_server(root.parent)
    ds = shardkit.formats.neuroglancer.open_dataset(srv.url(root.name))
    srv.reset()
    got = ds.cutout(0, box((0, 0, 0), (37, 29, 21)), fill_missing=True)
    assert np.array_equal(got, vol)
    # 3 x 4 x 3 chunks in 4 shards: per shard its index entries, minishard indices and data
    assert srv.count() <= 3 * 4 and srv.count("HEAD") == 0
    ds.close()
