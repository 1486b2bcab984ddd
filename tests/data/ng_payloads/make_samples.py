"""Writes the payload samples of this folder with cloud-volume 12.15.2 and DracoPy 2.2.0.

    python tests/data/ng_payloads/make_samples.py

- ``skeletons/``: an unsharded skeleton layer written by cloud-volume (``info`` with the
  ``radius`` and ``vertex_types`` attributes, and three skeletons ``Skeleton.to_precomputed``
  encodes; cloud-volume stores them locally as ``<id>.gz``).
- ``mesh/``: one object of a multi-resolution mesh layer: ``777.index``, the manifest
  cloud-volume's ``MultiLevelPrecomputedMeshManifest.to_binary`` writes (two levels of detail,
  one empty fragment), and ``777``, the Draco fragments DracoPy encodes, in manifest order.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import DracoPy
import numpy as np
from cloudvolume import CloudVolume, Skeleton
from cloudvolume.datasource.precomputed.mesh.multilod import MultiLevelPrecomputedMeshManifest

HERE = Path(__file__).parent


def skeletons() -> None:
    root = HERE / "layer"
    shutil.rmtree(root, ignore_errors=True)
    info = CloudVolume.create_new_info(
        num_channels=1, layer_type="segmentation", data_type="uint64", encoding="raw",
        resolution=[8, 8, 40], voxel_offset=[0, 0, 0], volume_size=[64, 64, 64],
        chunk_size=[64, 64, 64])
    info["skeletons"] = "skeletons"
    cv = CloudVolume(f"file://{root}", info=info, progress=False)
    cv.commit_info()
    cv.skeleton.meta.commit_info()
    rng = np.random.default_rng(2024)
    for seg, n in ((5, 1), (1099511627776, 17), (23, 240)):
        vertices = (rng.random((n, 3)) * 5000).astype(np.float32)
        edges = np.stack([np.arange(n - 1), np.arange(1, n)], axis=1).astype(np.uint32)
        skel = Skeleton(vertices, edges, radii=rng.random(n).astype(np.float32) * 50,
                        vertex_types=rng.integers(0, 8, n).astype(np.uint8), segid=seg)
        cv.skeleton.upload(skel)
    shutil.rmtree(HERE / "skeletons", ignore_errors=True)
    shutil.move(root / "skeletons", HERE / "skeletons")
    shutil.rmtree(root)


def mesh() -> None:
    out = HERE / "mesh"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    rng = np.random.default_rng(7)
    fragments, sizes = [], []
    for count in (12, 30, 0, 20):  # lod 0: three fragments (one empty), lod 1: one
        if count == 0:
            fragments.append(b"")
            sizes.append(0)
            continue
        points = rng.integers(0, 1023, size=(count, 3)).astype(np.float32)
        faces = rng.integers(0, count, size=(count, 3)).astype(np.uint32)
        data = DracoPy.encode(points, faces, quantization_bits=10)
        fragments.append(data)
        sizes.append(len(data))
    manifest = MultiLevelPrecomputedMeshManifest(
        segment_id=777, chunk_shape=[64.0, 64.0, 40.0], grid_origin=[128.0, 256.0, 80.0],
        num_lods=2, lod_scales=[1.0, 2.0], vertex_offsets=[[0, 0, 0], [0.5, 0.5, 0.5]],
        num_fragments_per_lod=[3, 1],
        fragment_positions=[[[0, 0, 0], [1, 0, 0], [1, 1, 2]], [[0, 0, 1]]],
        fragment_offsets=sizes)  # to_binary takes every level's sizes in one list
    (out / "777.index").write_bytes(manifest.to_binary())
    (out / "777").write_bytes(b"".join(fragments))
    (out / "info").write_text(json.dumps({
        "@type": "neuroglancer_multilod_draco", "vertex_quantization_bits": 10,
        "transform": [8, 0, 0, 0, 0, 8, 0, 0, 0, 0, 40, 0], "lod_scale_multiplier": 1.0}))


if __name__ == "__main__":
    skeletons()
    mesh()
