"""Neuroglancer from the shell: ``ls --scale`` (sorted, ``--coords``), ``cutout`` and
``info``'s dataset totals apart from per-scale values, run as the real commands."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from test_ngconv_convert import _volume, _write_unsharded

import shardkit
from shardkit.cli import main

IMAGE = Path(__file__).parent / "data" / "neuroglancer" / "ts_image_identity_gzipindex"


def _run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_ls_scale_sorted_with_coords(capsys):
    with shardkit.open(IMAGE) as ds:
        scale = ds.scales["8_8_40"]
        ids = sorted(scale.keys())
        positions = {i: scale.position(i) for i in ids}
    assert len(ids) == 126
    code, out, _ = _run(["ls", "--scale", "8_8_40", str(IMAGE)], capsys)
    assert code == 0 and out.splitlines() == [str(i) for i in ids]
    code, out, _ = _run(["ls", "--scale", "0", "--coords", str(IMAGE)], capsys)
    assert code == 0
    assert out.splitlines() == [f"{i}\t{','.join(map(str, positions[i]))}" for i in ids]
    code, out, _ = _run(["ls", "--scale", "8_8_40", "--coords", "--json", str(IMAGE)], capsys)
    assert json.loads(out) == [{"id": i, "position": list(positions[i])} for i in ids]
    # every grid position of the 7x6x3 grid, once
    assert sorted(positions.values()) == [(x, y, z) for x in range(7) for y in range(6)
                                          for z in range(3)]


def test_ls_scale_refusals(capsys):
    code, _, err = _run(["ls", "--scale", "4_4_40", str(IMAGE)], capsys)
    assert code == 2
    assert err == (f"shardkit: error: ls: no sharded scale '4_4_40' in {IMAGE}; scales: "
                   "8_8_40\n")
    zss = Path(__file__).parent / "data" / "zss" / "tiny_zlib.zss"
    code, _, err = _run(["ls", "--coords", str(zss)], capsys)
    assert code == 2 and "is not a Neuroglancer image dataset" in err


@pytest.mark.parametrize("bbox", [((0, 0, 0), (100, 90, 40)), ((5, 17, 3), (37, 20, 33))])
def test_cutout_equals_the_library(tmp_path, capsys, bbox):
    out = tmp_path / "c.npy"
    text = ",".join(str(v) for v in (*bbox[0], *bbox[1]))
    code, stdout, err = _run(["cutout", str(IMAGE), "--scale", "8_8_40", "--bbox", text, "-o",
                              str(out), "--json"], capsys)
    assert code == 0, err
    with shardkit.open(IMAGE) as ds:
        want = ds.cutout("8_8_40", bbox)
    got = np.load(out)
    assert got.dtype == want.dtype and np.array_equal(got, want)
    shape = [hi - lo for lo, hi in zip(*bbox, strict=True)] + [1]
    assert json.loads(stdout) == {"output": str(out), "scale": "8_8_40",
                                  "bbox": [list(bbox[0]), list(bbox[1])], "shape": shape,
                                  "dtype": "uint8", "bytes": int(np.prod(shape))}


def test_cutout_refusals(tmp_path, capsys):
    out = tmp_path / "c.npy"
    code, _, err = _run(["cutout", str(IMAGE), "--scale", "8_8_40", "--bbox", "0,0,0,0,5,5",
                         "-o", str(out)], capsys)
    assert code == 2 and err.startswith("shardkit: error: ") and err.count("\n") == 1
    assert not out.exists()
    with pytest.raises(SystemExit) as exit_:
        main(["cutout", str(IMAGE), "--scale", "8_8_40", "--bbox", "1,2,3", "-o", str(out)])
    assert exit_.value.code == 2
    assert "not x0,y0,z0,x1,y1,z1 (six whole numbers): '1,2,3'" in capsys.readouterr().err


def test_cutout_fill_missing(tmp_path, capsys):
    _write_unsharded(tmp_path / "src", _volume(), skip={(0, 0, 0)})
    assert main(["ng", "shard", str(tmp_path / "src"), str(tmp_path / "ds"), "--jobs", "1"]) == 0
    capsys.readouterr()
    box = "7,-3,100,40,20,110"
    code, _, err = _run(["cutout", str(tmp_path / "ds"), "--scale", "s0", "--bbox", box, "-o",
                         str(tmp_path / "a.npy")], capsys)
    assert err == ("shardkit: error: chunk 0 at (0, 0, 0) of scale s0 is not stored "
                   "(--fill-missing gives zeros)\n")
    code, _, err = _run(["cutout", str(tmp_path / "ds"), "--scale", "s0", "--bbox", box, "-o",
                         str(tmp_path / "a.npy"), "--fill-missing"], capsys)
    assert code == 0, err
    got = np.load(tmp_path / "a.npy")
    want = _volume()[0:33, 0:23, 0:10, :].copy()
    want[0:32, 0:32, 0:8, :] = 0  # chunk (0, 0, 0) is missing: zeros
    assert np.array_equal(got, want[:33, :23, :10, :])


def test_info_keeps_dataset_totals_apart_from_each_scale(tmp_path, capsys):
    _write_unsharded(tmp_path / "src", _volume(), extra_scale=True)
    assert main(["ng", "shard", str(tmp_path / "src"), str(tmp_path / "ds"), "--jobs", "1",
                 "--spec", json.dumps({"@type": "neuroglancer_uint64_sharded_v1",
                                       "hash": "identity", "preshift_bits": 2,
                                       "minishard_bits": 1, "shard_bits": 2})]) == 0
    capsys.readouterr()
    code, out, _ = _run(["info", "--json", str(tmp_path / "ds")], capsys)
    assert code == 0
    info = json.loads(out)
    assert "sharding" not in info  # a per-scale value: only in each scale
    scales = info["scales"]
    assert [s["key"] for s in scales] == ["s0", "s1"] and info["scale_count"] == 2
    assert info["num_shards"] == sum(s["num_shards"] for s in scales) == 8
    assert info["shard_files"] == sum(s["shard_files"] for s in scales)
    assert info["chunk_count"] == sum(s["chunk_count"] for s in scales) == 36
    assert scales[1]["chunk_count"] == 0 and scales[0]["sharding"]["preshift_bits"] == 2
