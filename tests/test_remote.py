"""The remote I/O layer against a real local HTTP server: requests, bytes, cache, faults."""

from __future__ import annotations

import itertools
import threading
from pathlib import Path

import pytest
from httpserver import Fault

import shardkit
from shardkit.remote import RemoteError, RemoteSource
from shardkit.sources import BytesSource, FileSource, read_ranges

DATA = bytes((i * 7 + i // 251) & 0xFF for i in range(1_200_000))
BS = 4096


@pytest.fixture
def served(tmp_path: Path, range_server):
    (tmp_path / "blob.bin").write_bytes(DATA)
    (tmp_path / "small.bin").write_bytes(DATA[:1000])
    (tmp_path / "empty.bin").write_bytes(b"")
    srv = range_server(tmp_path)
    srv.tmp = tmp_path
    return srv


def remote(srv, name: str = "blob.bin", **kw) -> RemoteSource:
    kw.setdefault("block_size", BS)
    kw.setdefault("backoff", 0.01)
    return RemoteSource(srv.url(name), **kw)


def test_first_request_gives_size_and_first_block(served) -> None:
    src = remote(served)
    assert src.size == len(DATA)
    assert [(r.method, r.range) for r in served.requests] == [("GET", f"bytes=0-{BS - 1}")]
    assert src.read_range(10, 100) == DATA[10:100]
    assert served.count() == 1  # from the cache
    small = remote(served, "small.bin")
    assert small.size == 1000 and small.read_range(0, 1000) == DATA[:1000]
    empty = remote(served, "empty.bin")
    assert empty.size == 0 and empty.read_range(0, 0) == b""


def test_batch_coalesces_neighbours_and_reads_once(served) -> None:
    src = remote(served, cache=1 << 20)
    served.reset()
    ranges = [(5 * BS + 10, 5 * BS + 20), (6 * BS, 6 * BS + 8), (7 * BS - 3, 7 * BS + 3),
              (100 * BS, 100 * BS + 1), (200 * BS + 5, 202 * BS)]
    got = src.read_ranges(ranges)
    assert got == [DATA[s:e] for s, e in ranges]
    assert sorted(r.range for r in served.requests) == sorted(
        [f"bytes={5 * BS}-{8 * BS - 1}", f"bytes={100 * BS}-{101 * BS - 1}",
         f"bytes={200 * BS}-{202 * BS - 1}"])
    served.reset()
    assert read_ranges(src, ranges) == got
    assert served.count() == 0
    assert src.stats.cache_hits >= 6


def test_cache_is_bounded_in_bytes(served) -> None:
    src = remote(served, cache=8 * BS)
    for b in range(0, 200, 3):  # scattered: no read-ahead
        src.read_range(b * BS, b * BS + 1)
    assert src._blocks.nbytes <= 8 * BS
    assert len(src._blocks) <= 8
    served.reset()
    src.read_range(198 * BS, 198 * BS + 1)  # recent: still cached
    assert served.count() == 0
    src.read_range(3 * BS, 3 * BS + 1)  # evicted long ago
    assert served.count() == 1


def test_forward_pass_reads_each_byte_once_in_few_requests(served) -> None:
    src = remote(served, cache=4 << 20)
    served.reset()
    pos, step = 0, 1500
    while pos < len(DATA):
        end = min(pos + step, len(DATA))
        assert src.read_range(pos, end) == DATA[pos:end]
        pos = end
    spans = sorted((int(r.range[6:].split("-")[0]), int(r.range.split("-")[1]) + 1)
                   for r in served.requests)
    covered = sum(e - s for s, e in spans)
    assert covered == len(DATA) - BS  # block 0 came with the open; nothing twice
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))
    assert served.count() <= 20  # vs 244 blocks: read-ahead grows


def test_no_cache_still_correct(served) -> None:
    src = remote(served, cache=0)
    assert src.read_range(BS - 5, 3 * BS) == DATA[BS - 5:3 * BS]
    served.reset()
    src.read_range(BS, BS + 1)
    assert served.count() == 1


def test_local_sources_batch_too(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(DATA[:5000])
    ranges = [(0, 4), (4000, 5000), (7, 7)]
    for src in (FileSource(tmp_path / "f"), BytesSource(DATA[:5000])):
        assert read_ranges(src, ranges) == [DATA[0:4], DATA[4000:5000], b""]
        with pytest.raises(shardkit.TruncatedError):
            read_ranges(src, [(4990, 5001)])
        src.close()


def test_truncated_past_end(served) -> None:
    src = remote(served)
    with pytest.raises(shardkit.TruncatedError) as info:
        src.read_range(len(DATA) - 4, len(DATA) + 4)
    assert info.value.offset == len(DATA) - 4


# -- faults ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("status", "words"), [(404, "not found"), (403, "access denied"),
                                               (401, "access denied")])
def test_missing_or_forbidden_names_the_url(served, status: int, words: str) -> None:
    served.add_fault(Fault(status=status, path="/blob.bin"))
    with pytest.raises(RemoteError) as info:
        remote(served)
    assert served.url("blob.bin") in str(info.value) and words in str(info.value)
    assert info.value.status == status and not info.value.transient
    assert served.count() == 1  # not retried
    assert isinstance(info.value, shardkit.ShardkitError)


def test_transient_errors_are_retried_with_backoff(served) -> None:
    served.add_fault(Fault(status=503, count=2))
    src = remote(served)
    assert src.read_range(0, 10) == DATA[:10]
    assert served.count() == 3 and src.stats.retries == 2
    served.reset()
    served.add_fault(Fault(drop=True, count=1))
    assert src.read_range(50 * BS, 50 * BS + 10) == DATA[50 * BS:50 * BS + 10]
    assert [r.status for r in served.requests] == [0, 206]  # dropped, then answered


def test_retries_are_bounded(served) -> None:
    src = remote(served, retries=2)
    served.reset()
    served.add_fault(Fault(status=500))
    with pytest.raises(RemoteError) as info:
        src.read_range(9 * BS, 9 * BS + 1)
    assert served.count() == 3 and info.value.transient and info.value.status == 500
    assert "after 3 attempts" in str(info.value)
    served.clear_faults()
    served.add_fault(Fault(drop=True))
    with pytest.raises(RemoteError, match="connection"):
        src.read_range(19 * BS, 19 * BS + 1)


def test_server_ignoring_range(served) -> None:
    served.add_fault(Fault(ignore_range=True))
    with pytest.raises(RemoteError, match="ignores Range") as info:
        remote(served, max_whole_read=1 << 20)  # above the limit: refused, no more read
    assert info.value.status == 200
    assert "raise the limit to read it into memory (shardkit COMMAND " in str(info.value)
    assert " --max-whole-read 2M: the option goes after the command" in str(info.value)
    # a small file sent whole is simply the file
    small = remote(served, "small.bin")
    assert small.size == 1000 and small.read_range(990, 1000) == DATA[990:1000]
    # up to max_whole_read (16 MiB by default) the whole body is the file, kept apart from
    # the cache: later reads cost no request, wherever they are
    served.reset()
    whole = remote(served, cache=0)
    assert whole.read_whole and whole.size == len(DATA)
    assert whole.read_ranges([(5, 9), (len(DATA) - 3, len(DATA))]) == [DATA[5:9], DATA[-3:]]
    assert whole.read_range(700_000, 700_100) == DATA[700_000:700_100]
    assert served.count() == 1


def test_file_changing_size_while_read(served) -> None:
    src = remote(served)
    (served.tmp / "blob.bin").write_bytes(DATA[:500_000])
    with pytest.raises(RemoteError, match="changed size") as info:
        src.read_range(10 * BS, 10 * BS + 1)
    assert served.url("blob.bin") in str(info.value)
    (served.tmp / "blob.bin").write_bytes(DATA + b"more")
    with pytest.raises(RemoteError, match="changed size"):
        src.read_range(20 * BS, 20 * BS + 1)


def test_cli_reports_network_errors(served, capsys) -> None:
    from shardkit.cli import main

    assert main(["info", served.url("nothere.zss")]) == 2
    err = capsys.readouterr().err
    assert "nothere.zss" in err and "not found" in err and "Traceback" not in err


# -- open(): options and the dataset-or-file decision ---------------------------------------------


def test_open_passes_io_options(served) -> None:
    zss = Path(__file__).parent / "data" / "zss" / "medium_zlib.zss"
    (served.tmp / "m.zss").write_bytes(zss.read_bytes())
    with shardkit.open(served.url("m.zss"), block_size=8192, cache=1 << 20, concurrency=2,
                       retries=1) as z:
        assert isinstance(z.source, RemoteSource)
        assert (z.source.block_size, z.source.cache_bytes, z.source.concurrency,
                z.source.retries) == (8192, 1 << 20, 2, 1)
        assert served.requests[0].range == "bytes=0-8191"


@pytest.mark.parametrize("name", ["m.zss", "noext"])
def test_a_file_url_never_asks_for_info(served, name: str) -> None:
    zss = Path(__file__).parent / "data" / "zss" / "tiny_zlib.zss"
    (served.tmp / name).write_bytes(zss.read_bytes())
    with shardkit.open(served.url(name)) as z:
        assert z.format_id == "zss"
    assert not any(r.path.endswith("/info") for r in served.requests)
    assert served.count() == 1


def test_unknown_bytes_then_info_lookup(served) -> None:
    (served.tmp / "junk").write_bytes(b"not a shard at all")
    with pytest.raises(shardkit.UnknownFormatError):
        shardkit.open(served.url("junk"))
    assert [r.path for r in served.requests] == ["/junk", "/junk/info"]


def test_one_source_shared_by_threads(served) -> None:
    src = remote(served, cache=64 * BS)
    offsets = [(i * 7919) % (len(DATA) - 3000) for i in range(400)]
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for o in offsets[k::8]:
                assert src.read_range(o, o + 3000) == DATA[o:o + 3000]
            got = src.read_ranges([(o, o + 100) for o in offsets[k:k + 20]])
            assert got == [DATA[o:o + 100] for o in offsets[k:k + 20]]
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert src._blocks.nbytes <= 64 * BS


def test_cli_remote_options_and_counts(served, capsys) -> None:
    import json

    from shardkit.cli import main

    zss = Path(__file__).parent / "data" / "zss" / "medium_zlib.zss"
    (served.tmp / "m.zss").write_bytes(zss.read_bytes())
    served.reset()
    assert main(["info", "--json", "--block-size", "8K", "--cache", "1M", "--concurrency", "2",
                 "--retries", "0", served.url("m.zss")]) == 0
    info = json.loads(capsys.readouterr().out)
    assert "record_count" not in info and info["levels"] >= 2
    assert served.requests[0].range == "bytes=0-8191" and served.count() <= 3
    assert main(["info", "--json", "--counts", served.url("m.zss")]) == 0
    assert json.loads(capsys.readouterr().out)["record_count"] > 1000
    with pytest.raises(SystemExit) as usage:
        main(["info", "--block-size", "lots", served.url("m.zss")])
    assert usage.value.code == 2
    assert "not a size" in capsys.readouterr().err
    served.add_fault(Fault(status=503))
    assert main(["verify", "--retries", "1", served.url("m.zss")]) == 2
    err = capsys.readouterr().err
    assert "HTTP 503" in err and "after 2 attempts" in err and served.url("m.zss") in err


def test_counting_source_passes_batches_on(served) -> None:
    from shardkit.sources import CountingSource

    counted = CountingSource(remote(served))
    served.reset()
    ranges = [(10 * BS, 10 * BS + 5), (11 * BS, 11 * BS + 5), (40 * BS, 40 * BS + 1)]
    assert read_ranges(counted, ranges) == [DATA[s:e] for s, e in ranges]
    assert counted.stats.reads == 3 and served.count() == 2  # one batch, two runs


def test_dataset_urls_cost_no_wasted_request(range_server) -> None:
    data = Path(__file__).parent / "data" / "neuroglancer"
    srv = range_server(data)
    with shardkit.open(srv.url("cv_identity_raw/")) as ds:  # a folder: straight to its info
        assert ds.spec is not None
    assert srv.requests[0].path == "/cv_identity_raw/info"
    assert all(r.path.endswith(("/info", ".shard")) for r in srv.requests)
    srv.reset()
    with shardkit.open(srv.url("cv_identity_raw")) as ds:  # a name: its bytes decide first
        assert ds.spec is not None
    paths = [r.path for r in srv.requests]
    first_info = paths.index("/cv_identity_raw/info")
    assert set(paths[:first_info]) <= {"/cv_identity_raw", "/cv_identity_raw/"}  # the listing


# -- verify: a network failure makes a shard unreadable, never unsound --------------------------


def test_amudai_verify_lets_network_failures_through(range_server, capsys) -> None:
    from shardkit.cli import main

    data = Path(__file__).parent / "data" / "amudai"
    srv = range_server(data)
    url = srv.url("twolevel.amudai.shard")
    stripes = [f"/{p.name}" for p in data.glob("*.amudai.stripe")]

    def fail_stripes() -> None:
        srv.clear_faults()
        for path in stripes:
            srv.add_fault(Fault(status=503, path=path))

    with shardkit.open(url, retries=0) as s:  # stripe files failing when first opened
        s.schema  # noqa: B018
        fail_stripes()
        with pytest.raises(RemoteError, match="503"):
            s.verify()
    srv.clear_faults()
    with shardkit.open(url, retries=0, cache=0) as s:  # failing once open
        assert s.verify() == []
        fail_stripes()
        with pytest.raises(RemoteError, match="503"):
            s.verify()
    assert main(["verify", "--retries", "0", url]) == 2
    assert "HTTP 503" in capsys.readouterr().err
    srv.clear_faults()
    srv.add_fault(Fault(status=404, path=stripes[0]))  # a missing stripe file: unsound
    with shardkit.open(url, retries=0) as s:
        assert any("cannot open DataRef url" in p.message for p in s.verify())


def test_amudai_stripe_files_behind_a_wrapped_remote_root(range_server) -> None:
    """bulk wraps the root in a CountingSource, whose block_size 0 once went to the stripe
    files as an I/O option: every stripe of a remote two-level shard failed to open."""
    from shardkit import bulk
    from shardkit.sources import CountingSource

    data = Path(__file__).parent / "data" / "amudai"
    srv = range_server(data)
    url = srv.url("twolevel.amudai.shard")
    with shardkit.open(CountingSource(RemoteSource(url, block_size=8192, retries=0))) as s:
        assert s.verify() == []
        assert {(src.block_size, src.retries) for src in s._blobs.opened.values()} == {(8192, 0)}
    result = bulk.run_one(url, "verify")
    assert result["status"] == "sound", result
    for p in data.glob("*.amudai.stripe"):
        srv.add_fault(Fault(status=503, path=f"/{p.name}"))
    result = bulk.run_one(url, "verify")
    assert result["status"] == "unreadable" and result["problems"] == []
    assert result["error"]["type"] == "RemoteError"


@pytest.mark.parametrize("header", [
    "bytes 0-4095/" + "9" * 5000,  # more digits than int() takes
    "bytes " + "9" * 5000 + "-4095/1200000",
    "bytes 0-4095/-5",
    "bytes 0-4095/12x",
    "",
    "bytes 0-4095/1000",  # says less than the body it came with
], ids=["huge-total", "huge-start", "negative", "not-a-number", "empty", "too-small"])
def test_malformed_content_range_is_a_remote_error(served, header) -> None:
    served.add_fault(Fault(content_range=header))
    with pytest.raises(RemoteError):
        remote(served, retries=0)
    served.clear_faults()
    src = remote(served, retries=0)
    served.add_fault(Fault(content_range=header))
    with pytest.raises(RemoteError):
        src.read_range(600_000, 600_010)
