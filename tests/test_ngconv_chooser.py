"""The sharding parameter chooser against the choices real tools made.

References:
- igneous, ``test/test_sharding.py`` (seung-lab/igneous): ``test_shard_bits_calculation_for_hashed``
  lists the (shard_bits, minishard_bits, preshift_bits) igneous and cloud-volume choose for
  segment-id layers, and ``SCALES`` three image scales of real datasets it shards.
- google/neuroglancer pull request 522: the pseudocode of the chooser of Google's internal
  annotation pipeline (1000 entries per minishard, 50 MB shards).
- google/tensorstore issue 13: identity hash, ``preshift_bits + minishard_bits`` low Morton
  bits per shard and ``shard_bits`` the rest, so every shard is a chunk-aligned box.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from shardkit.formats.neuroglancer import ShardingSpec, compressed_morton_code
from shardkit.ng.chooser import (
    choose_hashed_spec,
    choose_image_spec,
    image_shard_shape,
    morton_bits,
)

# igneous test/test_sharding.py::test_shard_bits_calculation_for_hashed:
# (num_labels, shard_index_bytes, minishard_index_bytes, min_shards) -> (sb, msb, psb)
IGNEOUS_HASHED = [
    ((10**9, 2**13, 2**15, 1), (11, 9, 0)),
    ((10**6, 2**13, 2**15, 1), (1, 9, 0)),
    ((10**7, 2**13, 2**15, 1), (4, 9, 0)),
    ((1000, 2**13, 2**15, 1), (0, 0, 0)),
    ((1000, 2**13, 2**15, 1000), (10, 0, 0)),
    ((10000, 2**13, 2**15, 1), (0, 3, 0)),
    ((10**9, 2**10, 2**15, 1), (14, 6, 0)),
    ((10**9, 2**13, 2**13, 1), (13, 9, 0)),
]

# igneous test/test_sharding.py::SCALES (real image scales igneous shards), plus its
# test_broken_dataset scale, which needs all 20 Morton bits.
IGNEOUS_SCALES = [
    ([1536, 1408, 2046], [128, 128, 64], "jpeg"),
    ([3072, 2816, 2046], [128, 128, 64], "jpeg"),
    ([40960, 40960, 990], [128, 128, 20], "raw"),
    ([10240, 10240, 990], [128, 128, 20], "jpeg"),
]


@pytest.mark.parametrize(("args", "expected"), IGNEOUS_HASHED)
def test_hashed_matches_igneous(args, expected):
    n, shard_index, minishard_index, min_shards = args
    choice = choose_hashed_spec(n, shard_index_bytes=shard_index,
                                minishard_index_bytes=minishard_index, min_shards=min_shards)
    spec = choice.spec
    assert (spec.shard_bits, spec.minishard_bits, spec.preshift_bits) == expected
    assert spec.hash == "murmurhash3_x86_128"
    assert not choice.warnings


def _pr522(total_count: int, total_bytes: int) -> tuple[int, int, int]:
    """google/neuroglancer PR 522's pseudocode, transcribed: (preshift, minishard, shard)."""
    minishard_target_count, shard_target_size = 1000, 50_000_000
    total_minishard_bits = 0
    while (total_count >> total_minishard_bits) > minishard_target_count:
        total_minishard_bits += 1
    shard_bits = 0
    while (total_bytes >> shard_bits) > shard_target_size:
        shard_bits += 1
    preshift_bits = 0
    while minishard_target_count >> preshift_bits:
        preshift_bits += 1
    return preshift_bits, total_minishard_bits - min(total_minishard_bits, shard_bits), shard_bits


@pytest.mark.parametrize("count", [2, 999, 5000, 123_456, 10**6, 7_777_777, 10**8])
@pytest.mark.parametrize("mean_bytes", [100, 3000, 250_000])
def test_hashed_matches_neuroglancer_pr522(count, mean_bytes):
    total = count * mean_bytes
    choice = choose_hashed_spec(count, total_bytes=total, shard_bytes=50_000_000,
                                minishard_index_bytes=24_000, shard_index_bytes=1 << 40,
                                preshift_bits=10)
    spec = choice.spec
    assert (spec.preshift_bits, spec.minishard_bits, spec.shard_bits) == _pr522(count, total)


@pytest.mark.parametrize("n", [3, 1500, 50_000, 750_000, 3 * 10**6, 2 * 10**7, 5 * 10**8])
def test_hashed_meets_its_targets(n):
    """Every target holds: minishards within 32 KiB, shard index within 8 KiB, shards <= 1 GiB."""
    total = n * 4000
    choice = choose_hashed_spec(n, total_bytes=total)
    spec = choice.spec
    assert spec.shard_index_size <= 1 << 13
    per_minishard = n / (1 << (spec.shard_bits + spec.minishard_bits))
    assert per_minishard * 24 <= 1 << 15
    assert total / spec.num_shards <= 1 << 30
    # and no bit is wasted: one bit fewer would break a target
    if spec.shard_bits + spec.minishard_bits:
        assert per_minishard * 2 * 24 > 1 << 15 or total / spec.num_shards * 2 > 1 << 30
    assert choice.estimates["minishard_index_bytes"] == int(per_minishard * 24)


@pytest.mark.interop
@pytest.mark.parametrize("n", [10_000, 400_000, 750_000, 10**6, 3 * 10**6, 10**7, 3 * 10**8])
def test_hashed_against_cloudvolume(n):
    """Equal to cloud-volume's choice, or better by the minishard target cloud-volume misses.

    cloud-volume drops a shard bit when shards would be at most 55% full, which can push
    minishard indices past its own 32 KiB target (750k ids: 1465 entries, 35 KiB).
    """
    sharding = pytest.importorskip("cloudvolume.datasource.precomputed.sharding")
    sb, msb, psb = sharding.compute_shard_params_for_hashed(n)
    spec = choose_hashed_spec(n).spec
    ours = (spec.shard_bits, spec.minishard_bits, spec.preshift_bits)
    theirs_entries = n / 2 ** (sb + msb)
    if ours != (sb, msb, psb):
        assert theirs_entries * 24 > 2**15
        assert sb + 1 == spec.shard_bits and msb == spec.minishard_bits
    assert n / 2 ** (spec.shard_bits + spec.minishard_bits) * 24 <= 2**15


def _shard_boxes(spec: ShardingSpec, grid: list[int]) -> dict[int, list[tuple[int, ...]]]:
    boxes: dict[int, list[tuple[int, ...]]] = {}
    for x in range(grid[0]):
        for y in range(grid[1]):
            for z in range(grid[2]):
                code = compressed_morton_code((x, y, z), grid)
                boxes.setdefault(spec.locate(code).shard, []).append((x, y, z))
    return boxes


@pytest.mark.parametrize(("size", "chunk", "shard_bytes"), [
    ((1000, 700, 300), (64, 64, 64), 64 * 64 * 64 * 8),      # 8 chunks per shard: 2x2x2
    ((1000, 700, 300), (64, 64, 64), 64 * 64 * 64 * 16),     # 16 chunks: 4x2x2 (x first)
    ((4096, 4096, 10), (128, 128, 10), 128 * 128 * 10 * 64),  # a z-slab: 8x8x1
])
def test_image_shards_are_aligned_boxes(size, chunk, shard_bytes):
    choice = choose_image_spec(size, chunk, shard_bytes=shard_bytes,
                               minishard_index_bytes=24 * 2)
    spec = choice.spec
    grid = [-(-s // c) for s, c in zip(size, chunk, strict=True)]
    assert spec.hash == "identity"
    assert spec.preshift_bits + spec.minishard_bits + spec.shard_bits == sum(morton_bits(grid))
    box = image_shard_shape(spec, size, chunk)
    assert math.prod(box) * math.prod(chunk) == shard_bytes
    boxes = _shard_boxes(spec, grid)
    assert len(boxes) == choice.estimates["shards"]
    for positions in boxes.values():
        arr = np.array(positions)
        lo = arr.min(axis=0)
        assert all(lo % np.array(box) == 0)  # aligned to the box grid
        hi = np.minimum(lo + np.array(box), grid)
        assert len(positions) == math.prod(hi - lo)  # and fills it
    # minishard index target of 2 entries: as many minishards as that takes
    assert spec.preshift_bits == 1


@pytest.mark.parametrize(("size", "chunk", "encoding"), IGNEOUS_SCALES)
def test_image_targets_and_encodings(size, chunk, encoding):
    choice = choose_image_spec(size, chunk, encoding=encoding, shard_bytes=int(3.5e9),
                               shard_index_bytes=8192, minishard_index_bytes=40_000)
    spec = choice.spec
    grid = [-(-s // c) for s, c in zip(size, chunk, strict=True)]
    assert spec.preshift_bits + spec.minishard_bits + spec.shard_bits == sum(morton_bits(grid))
    assert (1 << spec.preshift_bits) * 24 <= 40_000
    assert spec.shard_index_size <= 8192
    assert (1 << (spec.preshift_bits + spec.minishard_bits)) * math.prod(chunk) <= 3.5e9
    assert spec.data_encoding == ("raw" if encoding == "jpeg" else "gzip")
    assert spec.minishard_index_encoding == "gzip"
    assert not choice.warnings


@pytest.mark.interop
@pytest.mark.parametrize(("size", "chunk", "encoding"), IGNEOUS_SCALES)
def test_image_against_cloudvolume(size, chunk, encoding):
    """Same shards as cloud-volume (same box: same preshift + minishard and shard bits).

    cloud-volume stops adding minishards once ``minishard_bits > preshift_bits`` is false,
    leaving 2048-entry minishard indices (48 KiB) over its own 40,000-byte limit; ours keep
    within it with one more minishard bit.
    """
    sharding = pytest.importorskip("cloudvolume.datasource.precomputed.sharding")
    theirs = sharding.compute_shard_params_for_image(size, chunk, encoding, np.uint8)
    ours = choose_image_spec(size, chunk, encoding=encoding, shard_bytes=int(3.5e9),
                             shard_index_bytes=8192, minishard_index_bytes=40_000).spec
    assert ours.shard_bits == int(theirs.shard_bits)
    assert ours.preshift_bits + ours.minishard_bits == int(theirs.preshift_bits
                                                           + theirs.minishard_bits)
    assert ours.data_encoding == theirs.data_encoding
    assert (1 << ours.preshift_bits) * 24 <= 40_000 < (1 << int(theirs.preshift_bits)) * 24
    shape = sharding.image_shard_shape_from_spec(theirs.to_dict(), size, chunk)
    assert [int(v) for v in shape] == [b * c for b, c in
                                       zip(image_shard_shape(ours, size, chunk), chunk,
                                           strict=True)]


def test_small_volume_is_one_shard():
    choice = choose_image_spec((100, 100, 10), (64, 64, 8))
    assert choice.spec.shard_bits == 0
    assert choice.spec.preshift_bits + choice.spec.minishard_bits == 3
    assert choice.estimates["shards"] == 1
    assert choice.estimates["chunks"] == 8


def test_explain_names_the_numbers():
    choice = choose_image_spec((40960, 40960, 990), (128, 128, 20), shard_bytes=1 << 30)
    text = choice.explain()
    spec = choice.spec
    assert f"shard_bits={spec.shard_bits}" in text
    assert "320x320x50 chunks" in text
    assert "9+9+6 = 24 bits" in text
    assert "tensorstore issue 13" in text
    box = image_shard_shape(spec, (40960, 40960, 990), (128, 128, 20))
    assert "shard_shape_chunks=" + "x".join(map(str, box)) in text
    assert choice.to_dict()["sharding"] == spec.to_dict()


def test_oversized_chunk_warns():
    choice = choose_image_spec((512, 512, 512), (512, 512, 512), data_type="uint64",
                               shard_bytes=1 << 20)
    assert choice.spec.shard_bits == 0 and choice.spec.preshift_bits == 0
    assert choice.warnings and "larger than the shard target" in choice.warnings[0]


@pytest.mark.parametrize("bad", [
    dict(size=(0, 1, 1), chunk_size=(1, 1, 1)),
    dict(size=(10, 10), chunk_size=(1, 1, 1)),
    dict(size=(10, 10, 10), chunk_size=(1, 1, 1), shard_bytes=0),
    dict(size=(2**30, 2**30, 2**30), chunk_size=(1, 1, 1)),
])
def test_image_rejects_bad_input(bad):
    with pytest.raises(ValueError):
        choose_image_spec(**bad)


def test_hashed_rejects_bad_input():
    with pytest.raises(ValueError):
        choose_hashed_spec(-1)
    with pytest.raises(ValueError):
        choose_hashed_spec(10, min_shards=0)
