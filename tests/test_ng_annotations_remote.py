"""Annotation layers over HTTP (the local server of tests/httpserver.py): what a box query and a
get cost in requests, sharded and unsharded."""

from __future__ import annotations

import numpy as np
import pytest
from test_ng_annotations import make_annotations, same, write

import shardkit

BOXES = [([0, 0, 0], [30, 30, 30]), ([10, 10, 10], [90, 90, 90]), ([50, 0, 40], [60, 100, 45])]


def _inside(anns, lo, hi):
    return {a["id"] for a in anns
            if all(lo[d] <= c <= hi[d] for d, c in enumerate(np.float32(a["point"])))}


def test_remote_query_of_a_sharded_layer_is_a_few_requests_per_level(tmp_path, range_server):
    anns = make_annotations("point", 3000)
    info = write(tmp_path / "l", anns, "point", limit=100)
    levels = len(info["spatial"])
    assert levels >= 4 and all("sharding" in s for s in info["spatial"])
    srv = range_server(tmp_path)
    with shardkit.open(srv.url("l")) as layer:
        for i, (lo, hi) in enumerate(BOXES):
            srv.reset()
            found = layer.query(lo, hi)
            assert sorted(a.id for a in found) == sorted(_inside(anns, lo, hi))
            assert all(r.range is not None for r in srv.requests)
            if i == 0:  # per level: the shard index, the minishard index, the cells' bytes
                assert srv.count() <= 3 * levels
            else:  # indices cached: one coalesced read of a level's cells per level
                assert srv.count() <= levels
            cells = sum(len(layer.cells_meeting(li, lo, hi)) for li in range(levels))
            assert cells > levels  # many cells, read in fewer requests


def test_remote_query_of_an_unsharded_layer_is_one_request_per_cell(tmp_path, range_server):
    anns = make_annotations("point", 3000)
    info = write(tmp_path / "l", anns, "point", limit=100, sharded=False)
    levels = len(info["spatial"])
    srv = range_server(tmp_path)
    with shardkit.open(srv.url("l")) as layer:
        for i, (lo, hi) in enumerate(BOXES):
            srv.reset()
            found = layer.query(lo, hi)
            assert sorted(a.id for a in found) == sorted(_inside(anns, lo, hi))
            cells = sum(len(layer.cells_meeting(li, lo, hi)) for li in range(levels))
            if i == 0:  # and, once per level, the listing that decides the cell file names
                assert srv.count() <= cells + 3 * levels
            else:
                assert srv.count() == cells


@pytest.mark.parametrize("sharded", [True, False])
def test_remote_get_after_open(tmp_path, range_server, sharded):
    anns = make_annotations("point", 2000)
    write(tmp_path / "l", anns, "point", limit=100, sharded=sharded)
    srv = range_server(tmp_path)
    with shardkit.open(srv.url("l")) as layer:
        for k, ann in enumerate(anns[:20:3]):
            srv.reset()
            same(layer[ann["id"]], ann)
            if sharded:  # shard index entry, minishard index, value: at most
                assert srv.count() <= 3 and all(r.range is not None for r in srv.requests)
                if k == 0:
                    assert srv.count() == 3
            else:
                assert srv.count() == 1
