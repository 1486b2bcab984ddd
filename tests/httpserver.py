"""A real HTTP server for remote-read tests: static files, Range honoured, requests counted.

It binds 127.0.0.1 on an ephemeral port and runs in a daemon thread. Tests assert how many requests
an operation costs and how many body bytes it moved (``requests``, ``bytes_sent``; ``reset()``
starts a new count). Use it through the ``range_server`` fixture of ``conftest.py``::

    def test_x(range_server):
        srv = range_server(folder)          # serves ``folder``
        reader = shardkit.open(srv.url("a.shard"))
        assert srv.count() <= 3

Faults for error-path tests: ``srv.add_fault(Fault(status=503, count=2))`` answers the next two
GETs with 503, ``Fault(ignore_range=True)`` sends the whole file with 200 whatever the
``Range``, ``Fault(drop=True)`` closes the connection without answering; ``path`` limits a fault
to one file. A file that changes size while it is read is simply rewritten on disk by the test.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import threading
from dataclasses import dataclass
from http import HTTPStatus
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = ["Fault", "RangeServer", "Request"]

_RANGE = re.compile(r"^bytes=(\d+)-(\d*)$")


@dataclass(frozen=True)
class Request:
    """One request the server answered."""

    method: str
    path: str
    range: str | None
    status: int
    body_bytes: int


@dataclass
class Fault:
    """A misbehaviour for matching requests.

    Attributes:
        status: Answer with this status (and an empty body) instead.
        ignore_range: Answer 200 with the whole file, ignoring ``Range``.
        drop: Close the connection without answering.
        count: How many matching requests it applies to (None: all of them).
        path: Only requests for this URL path (``/a.shard``); None: any.
        method: Only requests with this method.
        content_range: Send this ``Content-Range`` header (a 206 or 416 answer) instead of
            the true one.
    """

    status: int | None = None
    ignore_range: bool = False
    drop: bool = False
    count: int | None = None
    path: str | None = None
    method: str = "GET"
    content_range: str | None = None


class _Handler(SimpleHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _log(self, status: int, body: int) -> None:
        with self.server.lock:
            self.server.log.append(Request(self.command, self.path, self.headers.get("Range"),
                                           status, body))

    def _fault(self) -> Fault | None:
        """The first active fault matching this request (its count is used up)."""
        with self.server.lock:
            for fault in self.server.faults:
                if fault.method != self.command or fault.path not in (None, self.path):
                    continue
                if fault.count is not None:
                    if fault.count <= 0:
                        continue
                    fault.count -= 1
                return fault
        return None

    def _apply_fault(self, fault: Fault) -> bool:
        """Act out ``fault``; True when the request is answered (or dropped) by it."""
        if fault.drop:
            self._log(0, 0)
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return True
        if fault.status is not None:
            self._log(fault.status, 0)
            self.send_response(fault.status)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return True
        return False

    def do_HEAD(self) -> None:
        fault = self._fault()
        if fault is not None and self._apply_fault(fault):
            return
        path = self.translate_path(self.path)
        if not os.path.isfile(path):
            self._log(404, 0)
            self.send_error(HTTPStatus.NOT_FOUND)
            return
        self._log(200, 0)
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(os.path.getsize(path)))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()

    def do_GET(self) -> None:
        fault = self._fault()
        if fault is not None and self._apply_fault(fault):
            return
        header = None if fault is not None and fault.ignore_range else self.headers.get("Range")
        path = self.translate_path(self.path)
        if not os.path.isfile(path):
            if os.path.isdir(path):  # directory listing (fsspec's ls over HTTP parses it)
                self._log(200, 0)
                super().do_GET()
                return
            self._log(404, 0)
            self.send_error(HTTPStatus.NOT_FOUND)
            return
        size = os.path.getsize(path)
        if header is None:
            start, end, status = 0, size - 1, HTTPStatus.OK
        else:
            m = _RANGE.match(header.strip())
            if m is None or int(m.group(1)) >= size:
                self._log(416, 0)
                self.send_response(HTTPStatus.REQUESTED_RANGE_NOT_SATISFIABLE)
                self.send_header("Content-Range", fault.content_range
                                 if fault is not None and fault.content_range is not None
                                 else f"bytes */{size}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            start = int(m.group(1))
            end = min(int(m.group(2)) if m.group(2) else size - 1, size - 1)
            status = HTTPStatus.PARTIAL_CONTENT
        with open(path, "rb") as fh:
            fh.seek(start)
            body = fh.read(end - start + 1)
        self._log(int(status), len(body))
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        if status == HTTPStatus.PARTIAL_CONTENT:
            self.send_header("Content-Range", fault.content_range
                             if fault is not None and fault.content_range is not None
                             else f"bytes {start}-{end}/{size}")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    log: list[Request]
    lock: threading.Lock
    faults: list[Fault]


class RangeServer:
    """Serve ``directory`` over HTTP on 127.0.0.1 until :meth:`close`."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

        def handler(*args: Any, **kwargs: Any) -> _Handler:
            return _Handler(*args, directory=str(self.directory), **kwargs)

        self._httpd = _Server(("127.0.0.1", 0), handler)
        self._httpd.log = []
        self._httpd.lock = threading.Lock()
        self._httpd.faults = []
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    @property
    def base(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def url(self, name: str = "") -> str:
        """The URL of ``name`` (a path relative to the served folder)."""
        return f"{self.base}/{str(name).lstrip('/')}"

    @property
    def requests(self) -> list[Request]:
        with self._httpd.lock:
            return list(self._httpd.log)

    def count(self, method: str | None = None) -> int:
        """Requests answered since the last :meth:`reset` (of one method if given)."""
        return sum(1 for r in self.requests if method is None or r.method == method)

    @property
    def bytes_sent(self) -> int:
        """Body bytes sent since the last :meth:`reset`."""
        return sum(r.body_bytes for r in self.requests)

    def add_fault(self, fault: Fault) -> Fault:
        """Misbehave on matching requests from now on (see :class:`Fault`)."""
        with self._httpd.lock:
            self._httpd.faults.append(fault)
        return fault

    def clear_faults(self) -> None:
        """Behave again."""
        with self._httpd.lock:
            self._httpd.faults.clear()

    def reset(self) -> None:
        with self._httpd.lock:
            self._httpd.log.clear()

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=10)
