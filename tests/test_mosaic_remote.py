"""MOSAIC over HTTP (the local server honouring Range and counting requests).

Budget: open + one lookup at most 6 requests (the size, the head with ContainerMetaData, the
index's description, its map, the entry, the object); a second lookup 2 (entry, object);
``get_many`` one batch of entries and one of objects; ``verify`` reads every byte about once.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

import shardkit
from shardkit.formats.mosaic import content_key
from shardkit.formats.mosaic.verify import BLOCK
from shardkit.writers.mosaic import write_mosaic


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> tuple[Path, list[bytes]]:
    rng = random.Random(4)
    objs = list({rng.randbytes(rng.randint(0, 3000)) for _ in range(6000)})
    folder = tmp_path_factory.mktemp("mosaic_remote")
    # 16 MB: larger than the remote layer's blocks, so that reads show
    write_mosaic(folder / "big.mosaic", objs + [rng.randbytes(4 << 20) for _ in range(2)],
                 ["sha256", "sha1"], tile_threshold=1 << 20)
    return folder / "big.mosaic", objs


def test_open_and_lookups(big, range_server) -> None:
    path, objs = big
    srv = range_server(path.parent)
    with shardkit.open(srv.url(path.name)) as r:
        obj = objs[1234]
        assert r.get(content_key("sha1", obj), index="sha1") == obj
        assert srv.count() <= 6, srv.requests
        srv.reset()
        other = objs[4321]
        assert r.get(content_key("sha1", other), index="sha1") == other
        assert srv.count() <= 2, srv.requests
        srv.reset()
        some = objs[:200:3]
        assert r.get_many([content_key("sha1", o) for o in some], index="sha1") == some
        assert srv.count() <= 2 * 8, srv.requests  # two batches, coalesced into runs
        srv.reset()
        assert r.get(b"\0" * 20, index="sha1") is None
        assert srv.count() <= 1


def test_verify_reads_each_byte_about_once(big, range_server) -> None:
    path, _ = big
    size = path.stat().st_size
    srv = range_server(path.parent)
    with shardkit.open(srv.url(path.name)) as r:
        srv.reset()
        assert r.verify() == []  # content hashes included: no second read of the objects
        assert srv.bytes_sent <= 2 * size, srv.bytes_sent
        assert srv.count() <= 2 * math.ceil(size / BLOCK) + 40, srv.count()
