"""SWH over HTTP (a real local server honouring Range, counting requests) and shared by threads.

Budgets: open + ``info`` at most 3 requests and only the bytes the summary needs (the index
scan for live/deleted/unused counts only when asked); one cold lookup at most 3 requests (the
hash function, the index entry, the object); ``verify`` reads every byte about once in
ceil(size / block) + a few requests.
"""

from __future__ import annotations

import hashlib
import math
import random
import threading
from pathlib import Path

import pytest
from swh_impl import swh_impl  # noqa: F401 - the fixture, used by pytestmark

import shardkit
from shardkit.formats.swh import VERIFY_BLOCK
from shardkit.remote import DEFAULT_BLOCK_SIZE
from shardkit.writers.swh import write_swh

pytestmark = pytest.mark.usefixtures("swh_impl")


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> tuple[Path, dict[bytes, bytes]]:
    rng = random.Random(12)
    values: dict[bytes, bytes] = {}
    while len(values) < 20000:
        v = rng.randbytes(rng.randint(0, 1200))
        values[hashlib.sha256(v).digest()] = v
    folder = tmp_path_factory.mktemp("remote")
    write_swh(folder / "big.shard", values.items())
    return folder / "big.shard", values


def test_info_lookup_verify_budgets(big, range_server) -> None:
    path, values = big
    srv = range_server(path.parent)
    size = path.stat().st_size
    with shardkit.open(srv.url(path.name)) as s:
        summary = s.summary()
        assert "live" not in summary  # the index scan is only done when asked
        # a HEAD for the size (the source's), then the magic, the header and the dump's layout
        assert srv.count("GET") <= 3, srv.requests
        assert srv.count() <= 4, srv.requests
        # the remote layer reads aligned blocks: the header's and the dump prefix's, whatever
        # the shard's size (here the index alone is about 800 KB)
        assert srv.bytes_sent <= 2 * DEFAULT_BLOCK_SIZE
        srv.reset()
        key = next(iter(values))
        assert s[key] == values[key]
        assert srv.count() <= 3, srv.requests
        srv.reset()
        other = list(values)[1]
        assert s[other.hex()] == values[other]
        assert srv.count() <= 2  # the hash function is kept: entry + object
        srv.reset()
        assert s.verify(content_hash="sha256") == []
        assert srv.count() <= math.ceil(size / VERIFY_BLOCK) + 4, srv.requests
        assert srv.bytes_sent <= size + 4096  # every byte once (and the dump's layout prefix)
        srv.reset()
        counts = s.summary(counts=True)
        assert (counts["live"], counts["deleted"]) == (len(values), 0)


def test_threads_share_one_reader(big) -> None:
    path, values = big
    keys = list(values)
    with shardkit.open(path) as s:
        expected_keys = sorted(s.keys())
        results: dict[int, object] = {}

        def work(i: int) -> None:
            rng = random.Random(i)
            sample = rng.sample(keys, 2000)
            ok = all(s[k] == values[k] for k in sample)
            ok &= s.get_many(sample[:500]) == [values[k] for k in sample[:500]]
            ok &= sorted(s.keys()) == expected_keys
            problems = s.verify() if i % 4 == 0 else []
            results[i] = (ok, problems)

        with shardkit.open(path) as fresh:  # the lazy blocks are decoded concurrently too
            s = fresh
            threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
    assert results == {i: (True, []) for i in range(8)}


def test_cli_info_counts_only_when_asked(big, range_server, capsys) -> None:
    import json

    from shardkit.cli import main as cli_main

    path, values = big
    srv = range_server(path.parent)
    assert cli_main(["info", "--json", srv.url(path.name)]) == 0
    info = json.loads(capsys.readouterr().out)
    assert "live" not in info and info["objects_count"] == len(values)
    assert srv.count("GET") <= 3
    srv.reset()
    assert cli_main(["info", "--counts", "--json", srv.url(path.name)]) == 0
    info = json.loads(capsys.readouterr().out)
    assert (info["live"], info["deleted"], info["unused"]) == (
        len(values), 0, info["slots"] - len(values))
    # a local file of modest size gets the counts by default
    assert cli_main(["info", "--json", str(path)]) == 0
    assert json.loads(capsys.readouterr().out)["live"] == len(values)
