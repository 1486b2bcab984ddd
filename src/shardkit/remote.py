"""Remote files: ranged reads coalesced, fetched concurrently, cached, retried.

:class:`RemoteSource` is the :class:`~shardkit.sources.ByteSource` that
:func:`shardkit.open` uses for every URL (``http(s)://``, ``s3://``, ``gs://``, ``memory://``...).
A file is seen as a row of aligned blocks of ``block_size`` bytes. A read (one range, or a batch
through :meth:`RemoteSource.read_ranges`) finds the blocks it touches that are not cached yet,
joins neighbours into runs, and fetches the runs of one batch concurrently (at most
``concurrency`` requests in flight): one request per run. The blocks go into an LRU cache
bounded by ``cache`` bytes (0 keeps nothing), so a footer read again, or the block a lookup
shares with the previous one, costs no request. Reads that go forward through the file (a
``verify`` pass) are recognised and fetch further ahead each time (up to ``max_readahead``
bytes per request), so a sequential pass costs far fewer than ``size / block_size`` requests
and reads every byte once.

HTTP(S) is spoken directly (aiohttp, on fsspec's event loop and session, so fsspec's
``storage_options`` such as headers still apply): the first request ``GET``s the first block
and learns the size from ``Content-Range``, so opening a file costs no separate ``HEAD``, and
every answer is checked before its body is read. A file whose size changes while it is read
is reported, and a 404, 403 or 416 names the URL. Other filesystems go through fsspec's
``cat_ranges``.

A server that ignores ``Range`` (``python -m http.server``: 200 with the whole body; on another
filesystem, an answer longer than asked) is handled in one place for every source: the file is
read whole when it is at most ``max_whole_read`` bytes (16 MiB by default; kept apart from the
cache, and every later read is served from it: :attr:`RemoteSource.read_whole`;
:func:`shardkit.open` says so with a :class:`WholeFileReadWarning`) and refused above that with
:func:`ignored_range_error`, whose message says what to do.

Transient failures (connection reset or refused, timeouts, 408, 429, 5xx, an ``OSError`` of
another filesystem) are retried ``retries`` times with exponential backoff; then they, and
every other I/O failure, raise :class:`RemoteError` (a :class:`~shardkit.errors.ShardkitError`),
which names the URL; a missing file raises :class:`RemoteNotFoundError`, which is also a
``FileNotFoundError``. An exception that is no I/O error (:func:`io_errors`: a bug in a
filesystem) propagates as itself.

With ``exact=True`` a source fetches every range exactly as asked (one request per range, the
ranges of one batch concurrently), caches nothing and asks nothing when it is made: its size is
learned from the first answer, or asked for when first needed. The shards of a Neuroglancer
dataset are read so (a lookup costs exactly its range requests), and
:class:`~shardkit.sources.FsspecSource` is such a source. Everything else (answers checked,
servers ignoring ``Range``, retries, errors) is the same in both modes.

A source is thread-safe: the cache (a :class:`~shardkit._lru.ByteLRU`) is shared, the counters
are kept under a lock, and fetches run outside it.
"""

from __future__ import annotations

import functools
import re
import threading
import time
import warnings
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._lru import ByteLRU
from .errors import ShardkitError, TruncatedError, WholeFileReadWarning

__all__ = [
    "DEFAULT_BLOCK_SIZE",
    "DEFAULT_CACHE",
    "DEFAULT_CONCURRENCY",
    "DEFAULT_MAX_WHOLE_READ",
    "DEFAULT_RETRIES",
    "RemoteError",
    "RemoteNotFoundError",
    "RemoteSource",
    "RemoteStats",
    "WholeFileReadWarning",
    "ignored_range_error",
    "io_errors",
    "whole_read_notice",
]

DEFAULT_BLOCK_SIZE = 64 * 1024
DEFAULT_CACHE = 32 * 1024 * 1024
DEFAULT_CONCURRENCY = 8
DEFAULT_RETRIES = 3
DEFAULT_BACKOFF = 0.2
DEFAULT_MAX_READAHEAD = 4 * 1024 * 1024
#: A server that ignores ``Range`` (``python -m http.server``) is tolerated for files up to
#: this size: the whole body is then the file, kept in memory; above it the reader refuses.
DEFAULT_MAX_WHOLE_READ = 16 * 1024 * 1024
_TRANSIENT_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
# at most 19 digits a number (more is no real file, and int() refuses over 4300 digits)
_CONTENT_RANGE = re.compile(r"^bytes (?:(\d{1,19})-(\d{1,19})|\*)/(\d{1,19}|\*)$")


class RemoteError(ShardkitError, OSError):
    """A remote file could not be read: not found, forbidden, a broken connection, a server
    ignoring ``Range``, or a file that changed while it was read.

    Attributes:
        url: The URL.
        status: The HTTP status, when there was one.
        transient: Whether retrying later may help (what was retried, and failed every time).
    """

    def __init__(self, url: str, message: str, *, status: int | None = None,
                 transient: bool = False, offset: int | None = None) -> None:
        self.url = url
        self.status = status
        self.transient = transient
        ShardkitError.__init__(self, f"{url}: {message}", offset=offset)

    def __str__(self) -> str:
        return ShardkitError.__str__(self)


class RemoteNotFoundError(RemoteError, FileNotFoundError):
    """The remote file does not exist (HTTP 404, or the filesystem's ``FileNotFoundError``)."""


@functools.cache
def io_errors() -> tuple[type[BaseException], ...]:
    """What a filesystem raises when a read fails: ``OSError`` (local files, timeouts,
    fsspec's not-found), ``ValueError`` (bad paths and arguments) and, when fsspec's HTTP
    filesystem is there, aiohttp's ``ClientError`` (an HTTP status, a broken connection).
    Anything else (a bug) propagates as itself. Found once (every read asks)."""
    errors: list[type[BaseException]] = [OSError, ValueError]
    try:
        import aiohttp

        errors.append(aiohttp.ClientError)
    except ImportError:  # pragma: no cover - without aiohttp there is no HTTP filesystem
        pass
    return tuple(errors)


def _mib(n: int) -> str:
    return f"{n / (1 << 20):g} MiB" if n >= 1 << 20 else f"{n} bytes"


def whole_read_notice(url: str, size: int, cap: int) -> WholeFileReadWarning:
    """The warning for a file read whole because its server ignores ``Range``."""
    return WholeFileReadWarning(
        f"{url}: the server ignores Range requests, so files up to {_mib(cap)} "
        f"(max_whole_read) are read whole ({size} bytes here)")


def ignored_range_error(url: str, start: int, end: int, length: int | None, cap: int,
                        status: int | None = 200) -> RemoteError:
    """The error for a server that ignores ``Range`` on a file above ``max_whole_read``."""
    what = "file" if length is None else f"{length}-byte file"
    need = -(-max(cap + 1, length or 0) // (1 << 20))  # whole MiB that would do
    return RemoteError(
        url, f"the server ignores Range requests (it answered bytes [{start}, {end}) with the "
        f"whole {what}), and reading it whole is allowed up to {_mib(cap)} (max_whole_read): "
        f"raise the limit to read it into memory (shardkit COMMAND {url} --max-whole-read "
        f"{need}M: the option goes after the command; in Python io_options max_whole_read), "
        "or serve it from a server that honours Range requests", status=status, offset=start)


class _Transient(Exception):
    """Internal: one attempt failed in a way a retry may cure."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class RemoteStats:
    """What a :class:`RemoteSource` did: requests sent, body bytes received, cache use.

    ``ranges`` lists every fetched ``(start, end)`` in order, so tests and benchmarks can check
    that an operation read each byte at most once.
    """

    requests: int = 0
    bytes_read: int = 0
    cache_hits: int = 0
    retries: int = 0
    ranges: list[tuple[int, int]] = field(default_factory=list)



class RemoteSource:
    """A file behind a URL, read with few, large, coalesced, concurrent range requests.

    Args:
        url: Any fsspec URL (with ``fs``: the name that messages give the file).
        block_size: Alignment and smallest fetch, in bytes.
        cache: Bytes of blocks kept (LRU); 0 caches nothing between reads.
        concurrency: Requests in flight at once for one batch of runs.
        retries: Further attempts after a transient failure (0: none).
        backoff: Seconds before the first retry; doubled for each further one.
        max_readahead: Largest fetch a forward-moving read pattern grows to.
        max_whole_read: Largest file read whole from a server that ignores ``Range``
            (default 16 MiB; 0: never).
        storage_options: Passed to fsspec (credentials, headers...).
        size: The file's size when the caller knows it (saves nothing over HTTP, where the
            first block's answer carries it; elsewhere it saves a metadata request).
        exact: Fetch every range exactly as asked (one request per range, nothing cached, no
            read-ahead, no request on construction); ``block_size`` and ``cache`` are unused.
        fs: An fsspec filesystem already made (with ``path``); ``storage_options`` unused.
        path: The file's path in ``fs``.
        warn_whole: Warn (:class:`WholeFileReadWarning`) when the file is read whole; off by
            default, since :func:`shardkit.open` says so itself.
    """

    def __init__(self, url: str, *, block_size: int = DEFAULT_BLOCK_SIZE,
                 cache: int = DEFAULT_CACHE, concurrency: int = DEFAULT_CONCURRENCY,
                 retries: int = DEFAULT_RETRIES, backoff: float = DEFAULT_BACKOFF,
                 max_readahead: int = DEFAULT_MAX_READAHEAD,
                 max_whole_read: int = DEFAULT_MAX_WHOLE_READ,
                 storage_options: dict[str, Any] | None = None,
                 size: int | None = None, exact: bool = False, fs: Any = None,
                 path: str | None = None, warn_whole: bool = False) -> None:
        if block_size < 1 or cache < 0 or concurrency < 1 or retries < 0 or backoff < 0 \
                or max_whole_read < 0:
            raise ShardkitError(f"{url}: invalid I/O options (block_size {block_size}, cache "
                                f"{cache}, concurrency {concurrency}, retries {retries}, "
                                f"max_whole_read {max_whole_read})")
        self.name = url
        self.url = url
        self.exact = bool(exact)
        self.block_size = int(block_size)
        self.cache_bytes = 0 if self.exact else int(cache)
        self.concurrency = int(concurrency)
        self.retries = int(retries)
        self.backoff = float(backoff)
        self.max_readahead = max(int(max_readahead), self.block_size)
        self.max_whole_read = int(max_whole_read)
        self.warn_whole = bool(warn_whole)
        self._whole: bytes | None = None  # the file, when its server ignored Range
        self.stats = RemoteStats()
        self._lock = threading.Lock()
        self._blocks: ByteLRU[int, bytes] = ByteLRU(self.cache_bytes)
        self._next_block = -1  # first block after the last fetched run (forward detection)
        self._ahead = 0  # readahead blocks granted to the next forward run
        self._streak = 0  # forward runs in a row
        if fs is not None:
            self.fs, self.path = fs, url if path is None else path
        else:
            import fsspec  # lazily: local files never need it

            try:
                self.fs, self.path = fsspec.core.url_to_fs(url, **dict(storage_options or {}))
            except (ValueError, ImportError, OSError) as exc:
                raise RemoteError(url, f"cannot open: {exc}") from exc
        self._http = type(self.fs).__name__ == "HTTPFileSystem"
        self._size: int | None = size
        if self._size is None and not self.exact:
            if self._http:
                self._fetch_runs([(0, self.block_size)], first=True)
                self._next_block = 1
            else:
                self._size = self._stat()

    @property
    def read_whole(self) -> bool:
        """True when the server ignored ``Range`` and the file was read whole."""
        return self._whole is not None

    # -- ByteSource ------------------------------------------------------------------------------

    @property
    def size(self) -> int:
        """Total bytes (learnt from the first answer, or from the filesystem's metadata)."""
        if self._size is None:
            size = self._stat()
            with self._lock:
                if self._size is None:
                    self._size = size
        return self._size

    def read_range(self, start: int, end: int) -> bytes:
        """Bytes ``[start, end)``; :class:`TruncatedError` past the end."""
        if self._whole is not None:
            return self._from_whole([(start, end)])[0]
        if self.exact:
            return self._read_exact([(start, end)])[0]
        bs = self.block_size
        b = start // bs
        if 0 <= start < end <= (self._size or 0) and (end - 1) // bs == b:
            data = self._blocks.get(b)  # fast path: inside one cached block
            if data is not None:
                with self._lock:
                    self.stats.cache_hits += 1
                return data[start - b * bs:end - b * bs]
        return self.read_ranges([(start, end)])[0]

    def read_ranges(self, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
        """Bytes of every ``(start, end)`` in ``ranges``, fetched as one batch.

        The blocks that are not cached are grouped in runs of neighbours, and the runs are
        fetched concurrently: one request per run, whatever the number of ranges (an
        ``exact`` source: one request per non-empty range, concurrently).
        """
        if self._whole is not None:
            return self._from_whole(ranges)
        if self.exact:
            return self._read_exact(ranges)
        size = self.size
        bs = self.block_size
        want: set[int] = set()
        for start, end in ranges:
            self._check(start, end, size)
            if end > start:
                want.update(range(start // bs, (end - 1) // bs + 1))
        have: dict[int, bytes] = {}
        for b in want:
            data = self._blocks.get(b)
            if data is not None:
                have[b] = data
        with self._lock:
            self.stats.cache_hits += len(have)
        missing = sorted(want - have.keys())
        if missing:
            runs = self._plan(missing)
            for lo, data in self._fetch_runs([(lo * bs, min(hi * bs, size)) for lo, hi in runs]):
                for i in range(0, len(data), bs):
                    have[lo + i // bs] = data[i:i + bs]
        out = []
        for start, end in ranges:
            if start == end:
                out.append(b"")
                continue
            first, last = start // bs, (end - 1) // bs
            if first == last:
                out.append(have[first][start - first * bs:end - first * bs])
            else:
                parts = [have[b] for b in range(first, last + 1)]
                parts[0] = parts[0][start - first * bs:]
                parts[-1] = parts[-1][:end - last * bs]
                out.append(b"".join(parts))
        return out

    def read_head(self, n: int) -> bytes:
        """Up to ``n`` bytes from the start in one request; all of a shorter file, whose size
        is then known (so a small file costs one request and no ``HEAD``)."""
        if self._whole is not None or self._size is not None or not self.exact:
            return self.read_range(0, min(n, self.size))
        if n <= 0:
            return b""
        try:
            data = self._fetch([(0, n)], first=True)[0]
        except RemoteError as exc:
            if exc.status != 416:
                raise
            try:  # past the end, and the answer did not say where the end is: ask
                return self.read_range(0, min(n, self.size))
            except ShardkitError as again:
                raise again from exc  # the first failure stays in the chain
        if len(data) < n:
            with self._lock:
                if self._size is None:
                    self._size = len(data)
        return data

    def _check(self, start: int, end: int, size: int | None) -> None:
        if start < 0 or end < start:
            raise ShardkitError(f"invalid byte range [{start}, {end}) of {self.name}")
        if size is not None and end > size:
            raise self._truncated(start, end, size)

    @staticmethod
    def _truncated(start: int, end: int, size: int) -> TruncatedError:
        return TruncatedError(f"truncated: needs bytes up to {end}, the file has {size}",
                              needed=end - start, available=max(0, size - start), offset=start)

    def _read_exact(self, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
        """Each non-empty range is one request (a batch's concurrently), nothing cached."""
        size = self._size
        for start, end in ranges:
            self._check(start, end, size)
        wanted = [(s, e) for s, e in ranges if e > s]
        got = iter(self._fetch(wanted, first=size is None) if wanted else ())
        out = []
        for start, end in ranges:
            if start == end:
                out.append(b"")
                continue
            data = next(got)
            if len(data) != end - start:  # past the end of a file whose size was not known
                known = self._size
                raise self._truncated(start, end, start + len(data) if known is None else known)
            out.append(data)
        return out

    def _from_whole(self, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
        """Ranges of the file read whole (its server ignores Range): no request."""
        whole = self._whole
        assert whole is not None
        for start, end in ranges:
            self._check(start, end, len(whole))
        with self._lock:
            self.stats.cache_hits += len(ranges)
        return [whole[s:e] for s, e in ranges]

    def close(self) -> None:
        """Drop the cache."""
        self._blocks.clear()

    # -- planning --------------------------------------------------------------------------------

    def _plan(self, missing: list[int]) -> list[tuple[int, int]]:
        """Runs ``[lo, hi)`` of neighbouring missing blocks; a forward pattern reads ahead."""
        runs: list[tuple[int, int]] = []
        for b in missing:
            if runs and runs[-1][1] == b:
                runs[-1] = (runs[-1][0], b + 1)
            else:
                runs.append((b, b + 1))
        nblocks = -(-self.size // self.block_size)
        with self._lock:
            lo, hi = runs[-1]
            if lo <= self._next_block < hi and self.cache_bytes >= 2 * self.block_size:
                # the reads move forward: fetch further ahead, up to max_readahead
                # (the first step forward may be a lookup's next block: no read-ahead yet)
                limit = min(self.max_readahead, max(self.cache_bytes // 2, self.block_size))
                top = max(1, limit // self.block_size)
                self._streak += 1
                self._ahead = 0 if self._streak < 2 else min(top, max(2 * self._ahead, 1))
                ahead = hi + self._ahead
                nxt = next((b for b in range(hi, min(ahead, nblocks)) if b in self._blocks),
                           None)
                runs[-1] = (lo, min(ahead, nblocks) if nxt is None else nxt)
            else:
                self._ahead = self._streak = 0
            self._next_block = runs[-1][1]
        return runs

    def _keep(self, lo: int, data: bytes) -> None:
        if not self.cache_bytes:
            return
        bs = self.block_size
        for i in range(0, len(data), bs):
            self._blocks.put(lo + i // bs, data[i:i + bs])

    # -- fetching --------------------------------------------------------------------------------

    def _fetch_runs(self, spans: list[tuple[int, int]], first: bool = False
                    ) -> list[tuple[int, bytes]]:
        """Fetch byte spans ``[start, end)`` (block-aligned starts); ``(first block, data)``."""
        out = []
        bs = self.block_size
        for (start, _), data in zip(spans, self._fetch(spans, first), strict=True):
            if self._whole is None:
                self._keep(start // bs, data)
            out.append((start // bs, data))
        return out

    def _fetch(self, spans: list[tuple[int, int]], first: bool = False) -> list[bytes]:
        """The bytes of each span ``[start, end)``, one request each, concurrently; shorter
        only past the end of a file whose size was not known (``first``)."""
        was_whole = self._whole is not None
        if self._http:
            results: list[bytes] = self._run(self._http_many(spans, first))
        else:
            results = self._fsspec_many(spans)
        if self.warn_whole and not was_whole and self._whole is not None:
            warnings.warn(whole_read_notice(self.name, len(self._whole), self.max_whole_read),
                          stacklevel=4)
        return results

    def _take_whole(self, body: bytes, start: int, end: int, status: int | None) -> bytes:
        """An answer that is the whole file (its server ignores Range): kept, when it is at
        most ``max_whole_read`` bytes, and every later read is served from it; refused above
        that. Returns bytes ``[start, end)`` of it (fewer past its end)."""
        if len(body) > self.max_whole_read:
            raise ignored_range_error(self.url, start, end, len(body), self.max_whole_read,
                                      status=status)
        with self._lock:
            if self._size is not None and len(body) != self._size:
                raise RemoteError(self.url, f"the file changed size while it was read: "
                                  f"{self._size} bytes, now {len(body)}", status=status)
            self._size = len(body)
            self._whole = body
        self._blocks.clear()
        return body[start:min(end, len(body))]

    def _run(self, coro: Any) -> Any:
        from fsspec.asyn import sync

        return sync(self.fs.loop, lambda: coro)

    async def _http_many(self, spans: list[tuple[int, int]], first: bool) -> list[bytes]:
        import asyncio

        session = await self.fs.set_session()
        gate = asyncio.Semaphore(self.concurrency)

        async def one(start: int, end: int) -> bytes:
            async with gate:
                return await self._retrying(lambda: self._http_get(session, start, end, first),
                                            start)

        return list(await asyncio.gather(*(one(s, e) for s, e in spans)))

    async def _retrying(self, attempt: Callable[[], Awaitable[bytes]], start: int) -> bytes:
        import asyncio

        delay = self.backoff
        for n in range(self.retries + 1):
            try:
                return await attempt()
            except _Transient as exc:
                if n == self.retries:
                    tries = f" (after {n + 1} attempts)" if n else ""
                    raise RemoteError(self.url, f"{exc}{tries}", status=exc.status,
                                      transient=True, offset=start) from None
                with self._lock:
                    self.stats.retries += 1
                await asyncio.sleep(delay)
                delay *= 2
        raise AssertionError("unreachable")  # pragma: no cover

    async def _http_get(self, session: Any, start: int, end: int, first: bool) -> bytes:
        import aiohttp

        kw = dict(self.fs.kwargs)
        headers = dict(kw.pop("headers", None) or {})
        headers["Range"] = f"bytes={start}-{end - 1}"
        headers.setdefault("Accept-Encoding", "identity")
        try:
            async with session.get(self.fs.encode_url(self.path), headers=headers,
                                   **kw) as r:
                status = r.status
                total = self._check_status(r, start, end, first)
                if status == 200:  # the whole file: read no more than the limit allows
                    parts, got = [], 0
                    async for part in r.content.iter_chunked(1 << 20):
                        got += len(part)
                        if got > self.max_whole_read:
                            raise ignored_range_error(self.url, start, end, r.content_length,
                                                      self.max_whole_read)
                        parts.append(part)
                    body = b"".join(parts)
                elif status == 416:  # past the end of a file whose size was not known
                    body = b""
                else:
                    body = await r.read()
        except (TimeoutError, ConnectionError, aiohttp.ClientConnectionError,
                aiohttp.ClientPayloadError) as exc:
            raise _Transient(f"connection failed while reading bytes [{start}, {end}): "
                             f"{type(exc).__name__}: {exc}".rstrip(": ")) from None
        except aiohttp.ClientError as exc:
            raise RemoteError(self.url, f"request failed: {exc}", offset=start) from None
        with self._lock:
            self.stats.requests += 1
            self.stats.bytes_read += len(body)
            self.stats.ranges.append((start, start + len(body)))
        if status == 200:  # the whole file (within max_whole_read): checked by _check_status
            return self._take_whole(body, start, end, status)
        with self._lock:
            if total is not None and self._size is None:
                self._size = total
            size = self._size
        want = max(0, min(end, size if size is not None else end) - start)
        if len(body) != want:
            raise RemoteError(self.url, f"short answer: {len(body)} of {want} bytes for "
                              f"[{start}, {start + want}): the file changed while it was read, "
                              "or the connection was cut", offset=start)
        return body

    def _check_status(self, r: Any, start: int, end: int, first: bool) -> int | None:
        """Check an answer's status and headers before its body is read; the total size."""
        status = r.status
        if status == 206:
            m = _CONTENT_RANGE.match(r.headers.get("Content-Range", "").strip())
            total = int(m.group(3)) if m and m.group(3) != "*" else None
            if m is None or m.group(1) is None or int(m.group(1)) != start:
                raise RemoteError(self.url, f"answer to bytes [{start}, {end}) has Content-"
                                  f"Range {r.headers.get('Content-Range')!r}", status=status,
                                  offset=start)
            if total is not None and self._size is not None and total != self._size:
                raise RemoteError(self.url, f"the file changed size while it was read: "
                                  f"{self._size} bytes, now {total}", status=status,
                                  offset=start)
            return total
        if status == 200:
            length: int | None = r.content_length
            if self._size is not None and length is not None and length != self._size:
                raise RemoteError(self.url, f"the file changed size while it was read: "
                                  f"{self._size} bytes, now {length}", status=status)
            if length is None or length <= self.max_whole_read:
                return length  # read whole (the body is read up to the limit, then checked)
            raise ignored_range_error(self.url, start, end, length, self.max_whole_read)
        if status == 416:
            m = _CONTENT_RANGE.match(r.headers.get("Content-Range", "").strip())
            if m and m.group(3) not in (None, "*"):
                total = int(m.group(3))
                if self._size is not None and total != self._size:
                    raise RemoteError(self.url, f"the file changed size while it was read: "
                                      f"{self._size} bytes, now {total}", status=status)
                if first:  # asked before the size was known: the answer says it
                    return total
            raise RemoteError(self.url, f"bytes [{start}, {end}) are past the end of the file "
                              "(HTTP 416)", status=status, offset=start)
        if status in (401, 403):
            raise RemoteError(self.url, f"access denied (HTTP {status})", status=status)
        if status == 404:
            raise RemoteNotFoundError(self.url, "not found (HTTP 404)", status=status)
        if status in _TRANSIENT_STATUS:
            raise _Transient(f"server error (HTTP {status} {r.reason or ''})".rstrip(),
                             status=status)
        raise RemoteError(self.url, f"unexpected answer HTTP {status} {r.reason or ''}".rstrip(),
                          status=status, offset=start)

    def _fsspec_many(self, spans: list[tuple[int, int]]) -> list[bytes]:
        """Other filesystems: ``cat_ranges`` (concurrent where fsspec is async), retried."""
        paths = [self.path] * len(spans)
        starts = [s for s, _ in spans]
        ends = [e for _, e in spans]
        pending = list(range(len(spans)))
        results: list[bytes | None] = [None] * len(spans)
        delay = self.backoff
        failures = io_errors()
        for n in range(self.retries + 1):
            try:
                if len(pending) == 1:  # one range, on any filesystem: cat_file (cat_ranges
                    # would batch one request, at a cost; errors raise and are caught below)
                    i = pending[0]
                    got = [self.fs.cat_file(paths[i], start=starts[i], end=ends[i])]
                elif getattr(self.fs, "async_impl", False):
                    got = self.fs.cat_ranges([paths[i] for i in pending],
                                             [starts[i] for i in pending],
                                             [ends[i] for i in pending],
                                             batch_size=self.concurrency, on_error="return")
                else:
                    got = self.fs.cat_ranges([paths[i] for i in pending],
                                             [starts[i] for i in pending],
                                             [ends[i] for i in pending], on_error="return")
            except failures as exc:
                got = [exc] * len(pending)
            again = []
            for i, data in zip(pending, got, strict=True):
                start, end = starts[i], ends[i]
                if isinstance(data, FileNotFoundError):
                    raise RemoteNotFoundError(self.url, "not found", offset=start) from data
                if isinstance(data, PermissionError):
                    raise RemoteError(self.url, f"access denied: {data}",
                                      offset=start) from data
                if isinstance(data, BaseException):
                    if not isinstance(data, failures):
                        raise data  # no I/O error: a bug, as itself
                    if n == self.retries:
                        raise RemoteError(self.url, f"cannot read bytes [{start}, {end}): "
                                          f"{type(data).__name__}: {data}", transient=True,
                                          offset=start) from data
                    again.append(i)
                    continue
                data = bytes(data)
                with self._lock:
                    self.stats.requests += 1
                    self.stats.bytes_read += len(data)
                    self.stats.ranges.append((start, start + len(data)))
                if len(data) > end - start:  # the whole file: the filesystem ignores ranges
                    data = self._take_whole(data, start, end, None)
                elif len(data) < end - start and self._size is not None:
                    # (with the size not known yet, a short answer is the end of the file)
                    raise RemoteError(self.url, f"short answer: {len(data)} of {end - start} "
                                      f"bytes for [{start}, {end}): the file changed while "
                                      "it was read", offset=start)
                results[i] = data
            if not again:
                break
            with self._lock:
                self.stats.retries += len(again)
            time.sleep(delay)
            delay *= 2
            pending = again
        return [r if r is not None else b"" for r in results]

    def _stat(self) -> int:
        try:
            info = self.fs.info(self.path)
            if info.get("type") == "directory":
                raise RemoteError(self.url, "is a folder, not a file", status=None)
            return int(info["size"])
        except FileNotFoundError as exc:
            raise RemoteNotFoundError(self.url, "not found") from exc
        except PermissionError as exc:
            raise RemoteError(self.url, f"access denied: {exc}") from None
        except RemoteError:
            raise
        except (TypeError, KeyError) as exc:  # metadata without a usable size
            raise RemoteError(self.url, f"cannot stat: {exc}") from exc
        except io_errors() as exc:
            raise RemoteError(self.url, f"cannot stat: {exc}") from exc

    def __repr__(self) -> str:
        mode = "exact" if self.exact else f"block_size={self.block_size} cache={self.cache_bytes}"
        return f"<RemoteSource {self.url!r} size={self._size} {mode}>"
