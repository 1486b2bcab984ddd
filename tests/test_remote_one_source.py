"""The three ways shardkit reads a URL share one implementation, :class:`RemoteSource`.

``shardkit.open`` (a block-cached RemoteSource), :class:`~shardkit.sources.FsspecSource` (one
request per read) and a Neuroglancer dataset's shards (``_Store.open``: an exact RemoteSource)
once had three ways of handling a server that ignores ``Range``; they now answer alike: the
same fallback (the file read whole up to ``max_whole_read``, later reads free), the same
error and hint above it, the same missing-file error. Tested against the real HTTP server of
``tests/httpserver.py``, which counts requests.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from httpserver import Fault

import shardkit
from shardkit.errors import WholeFileReadWarning
from shardkit.formats.neuroglancer.store import _Store
from shardkit.remote import (
    RemoteError,
    RemoteNotFoundError,
    RemoteSource,
    ignored_range_error,
)
from shardkit.sources import FsspecSource

DATA = bytes((i * 13 + i // 97) & 0xFF for i in range(100_000))
BLOCK = 64 * 1024

ENTRY_POINTS: dict[str, Callable[..., Any]] = {
    "RemoteSource": lambda srv, name, **kw: RemoteSource(srv.url(name), backoff=0.01, **kw),
    "FsspecSource": lambda srv, name, **kw: FsspecSource(srv.url(name), **kw),
    "neuroglancer store": lambda srv, name, **kw: _Store(
        srv.url("").rstrip("/"), **kw).open(name),
}


@pytest.fixture
def served(tmp_path: Path, range_server: Any) -> Any:
    (tmp_path / "blob.bin").write_bytes(DATA)
    return range_server(tmp_path)


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_all_are_one_implementation(served: Any, entry: str) -> None:
    src = ENTRY_POINTS[entry](served, "blob.bin")
    assert isinstance(src, RemoteSource)
    assert type(src).read_ranges is RemoteSource.read_ranges
    assert type(src)._take_whole is RemoteSource._take_whole


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_ignored_range_below_the_cap_reads_whole_once(served: Any, entry: str) -> None:
    """The whole body is the file: kept, and every later read costs no request."""
    served.add_fault(Fault(ignore_range=True))
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        src = ENTRY_POINTS[entry](served, "blob.bin")
        assert src.read_range(10, 20) == DATA[10:20]
        assert src.read_whole and src.size == len(DATA)
        assert src.read_ranges([(5, 9), (len(DATA) - 3, len(DATA))]) == [DATA[5:9], DATA[-3:]]
        assert src.read_range(70_000, 70_100) == DATA[70_000:70_100]
        with pytest.raises(shardkit.TruncatedError) as info:
            src.read_range(len(DATA) - 4, len(DATA) + 4)
    assert str(info.value) == (f"truncated: needs bytes up to {len(DATA) + 4}, the file has "
                               f"{len(DATA)} (at byte {len(DATA) - 4})")
    assert [(r.method, r.status, r.body_bytes) for r in served.requests] == [
        ("GET", 200, len(DATA))]
    notes = [w for w in said if issubclass(w.category, WholeFileReadWarning)]
    # a dataset's shards say so themselves; shardkit.open says so for the others
    assert len(notes) == (1 if entry == "neuroglancer store" else 0)


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_ignored_range_above_the_cap_is_one_error(served: Any, entry: str) -> None:
    """The same RemoteError, word for word (the hint included), whichever entry point."""
    served.add_fault(Fault(ignore_range=True))
    cap = 50_000
    with pytest.raises(RemoteError) as info:
        src = ENTRY_POINTS[entry](served, "blob.bin", max_whole_read=cap)
        src.read_range(0, BLOCK)  # what a block-cached source asks for when it opens
    expected = ignored_range_error(served.url("blob.bin"), 0, BLOCK, len(DATA), cap)
    assert type(info.value) is RemoteError
    assert str(info.value) == str(expected)
    assert "--max-whole-read 1M: the option goes after the command" in str(info.value)
    assert (info.value.status, info.value.offset, info.value.transient) == (200, 0, False)
    assert served.count() == 1  # refused on its headers: not retried


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_a_missing_file_is_one_error(served: Any, entry: str) -> None:
    with pytest.raises(RemoteNotFoundError) as info:
        src = ENTRY_POINTS[entry](served, "nothere.bin")
        src.read_range(0, 10)
    assert isinstance(info.value, FileNotFoundError)  # what the Neuroglancer readers catch
    assert str(info.value) == f"{served.url('nothere.bin')}: not found (HTTP 404)"
    assert served.count() == 1  # not retried


def test_exact_sources_cost_exactly_their_ranges(served: Any) -> None:
    """FsspecSource and a dataset's shards: nothing on construction, one request per range
    (a batch's concurrently), no byte cached, the size learned from the first answer."""
    for src in (FsspecSource(served.url("blob.bin")),
                _Store(served.url("").rstrip("/")).open("blob.bin")):
        assert served.count() == 0
        assert src.read_ranges([(0, 16), (5000, 5100), (7, 7)]) == [DATA[:16],
                                                                    DATA[5000:5100], b""]
        assert sorted(r.range for r in served.requests) == ["bytes=0-15", "bytes=5000-5099"]
        assert src.size == len(DATA)  # from Content-Range: no HEAD
        assert src.read_range(0, 16) == DATA[:16]
        assert served.count() == 3 and served.count("HEAD") == 0
        with pytest.raises(shardkit.TruncatedError):
            src.read_range(len(DATA) - 1, len(DATA) + 1)
        assert served.count() == 3
        served.reset()


def test_exact_past_the_end_before_the_size_is_known(served: Any) -> None:
    src = _Store(served.url("").rstrip("/")).open("blob.bin")
    with pytest.raises(shardkit.TruncatedError) as info:
        src.read_range(len(DATA) - 4, len(DATA) + 4)  # the answer is short: the end
    assert (info.value.offset, info.value.needed, info.value.available) == (
        len(DATA) - 4, 8, 4)
    src = _Store(served.url("").rstrip("/")).open("blob.bin")
    with pytest.raises(shardkit.TruncatedError):
        src.read_range(len(DATA) + 10, len(DATA) + 20)  # 416: past the end
    assert src.size == len(DATA)  # learned from the 416's Content-Range
    assert served.count("HEAD") == 0


def test_read_prefix_of_a_short_file_and_after_a_bare_416(served: Any, tmp_path: Path) -> None:
    (tmp_path / "empty.bin").write_bytes(b"")
    store = _Store(served.url("").rstrip("/"))
    src = store.open("blob.bin")
    assert src.read_prefix(1 << 20) == DATA and src.size == len(DATA)
    assert served.count() == 1
    served.reset()
    empty = store.open("empty.bin")
    assert empty.read_prefix(100) == b"" and empty.size == 0
    assert served.count() == 1
    # a 416 that does not say the size: asked for (HEAD), then read
    served.reset()
    served.add_fault(Fault(status=416, count=1))
    src = store.open("blob.bin")
    assert src.read_prefix(40) == DATA[:40]
    assert [r.method for r in served.requests] == ["GET", "HEAD", "GET"]
