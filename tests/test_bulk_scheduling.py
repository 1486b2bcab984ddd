"""Bulk scheduling: largest shards first, small shards grouped into Dask tasks."""

from __future__ import annotations

from pathlib import Path

from shardkit import bulk
from shardkit.bulk import Target


def test_largest_first_by_size_urls_ahead(tmp_path: Path) -> None:
    names = []
    for name, size in (("a", 10), ("b", 3000), ("c", 0), ("d", 700)):
        (tmp_path / name).write_bytes(bytes(size))
        names.append(str(tmp_path / name))
    jobs = [(0, Target(names[0])), (1, Target("s3://bucket/x.shard")), (2, Target(names[1])),
            (3, Target(names[2])), (4, Target(str(tmp_path / "missing"))),
            (5, Target("other", location=names[3]))]
    ordered, sizes = bulk._largest_first(jobs)
    assert [i for i, _ in ordered] == [1, 4, 2, 5, 0, 3]
    assert sizes == {0: 10, 1: -1, 2: 3000, 3: 0, 4: -1, 5: 700}


def test_largest_first_keeps_the_order_of_urls() -> None:
    jobs = [(i, Target(f"gs://b/{i}.shard")) for i in range(5)]
    assert bulk._largest_first(jobs)[0] == jobs


def test_dask_groups() -> None:
    # one large shard, 200 small ones, one of unknown size; 2 threads: share = total / 16
    jobs = [(0, Target("big"))] + [(i, Target(f"s{i}")) for i in range(1, 201)] \
        + [(201, Target("url"))]
    sizes = {0: 10_000, **{i: 10 for i in range(1, 201)}, 201: -1}
    groups = bulk._groups(jobs, sizes, threads=2)
    share = (10_000 + 2000) / 16
    assert groups[0] == [jobs[0]]  # large: a task of its own
    assert [jobs[-1]] in groups  # unknown size: alone
    small = [g for g in groups[1:] if g != [jobs[-1]]]
    assert [j for g in small for j in g] == jobs[1:201]  # all of them, in order
    assert all(sum(sizes[i] for i, _ in g) <= share and len(g) <= 64 for g in small)
    # 200 shards of 10 bytes: 75 fit a share of 750 bytes, but a group holds at most a
    # 1 / (4 * threads) part of the small shards (25), so each thread gets 4 groups of them
    assert [len(g) for g in small] == [25] * 8


def test_dask_groups_of_few_small_shards_stay_apart() -> None:
    """8 large shards and 8 small ones on 2 threads: the small ones would all fit one share of
    the bytes, but one task of all of them would leave a thread alone with it (a small file
    can cost more than a large one): each is a task of its own."""
    jobs = [(i, Target(f"s{i}")) for i in range(16)]
    sizes = {i: 57_000_000 if i < 8 else 3_000_000 for i in range(16)}
    groups = bulk._groups(jobs, sizes, threads=2)
    assert groups == [[job] for job in jobs]
