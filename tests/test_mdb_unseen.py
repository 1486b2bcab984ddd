"""Varied real shards from hf-xet (PyPI, offline): every kind, read, verified and rebuilt.

hf-xet runs in subprocesses (it reads its settings from the environment), one per scenario,
against its ``local://`` CAS in a temporary folder, or against a loopback HTTP server that
captures the footer-less upload body and the xorbs (RECIPE.md). The scenarios cover:

* ``c1``: ~200 files in one commit: empty (twice), 1 byte, sizes around the chunker's 8 KiB /
  64 KiB / 128 KiB limits, 1 MiB of zeros, text, the same text twice, a prefix of it, a 70 MiB
  random file (more than one 64 MiB xorb, so it spans xorbs), a slice of it (deduplicated against
  it inside the commit), 180 tiny files, a caller-given sha256; files, bytes, sha256 on and off;
* ``c2`` / ``c3``: more commits of the same session that deduplicate against ``c1`` through the
  shard cache (``c3`` is fully known content: no xorb at all);
* ``g``: a fresh client (shard cache emptied) whose file starts like an earlier one: global-dedup
  hit, the CAS-stored shard imported into the cache;
* ``x``: the xorb-metadata staging shard (flush after every xorb);
* ``k``: default concurrency (chunk order not reproducible), streams, metadata flush;
* ``h``: an ``http://`` endpoint: session, cache and the captured upload body;
* ``zero``: a commit with no files, which writes no shard at all.

For every shard: open, summary, to_dict, verify (name check on ``<hash>.mdb``; and against the
CAS-stored shards for cross-shard terms), the hashes hf-xet reported, every file rebuilt from
the xorb objects (sha256 and file hash recomputed), byte-exact rebuilds with both writer engines
and the kaitai reader, the default writer, lookups and the CLI.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import shardkit
from shardkit.cli import main
from shardkit.formats.xet_mdb import MdbShard
from shardkit.hashing import xet as xh
from shardkit.sources import open_source
from shardkit.writers.xet_mdb import build, build_mdb

pytestmark = pytest.mark.interop

SEEDS = [int(x) for x in os.environ.get("SHARDKIT_MDB_SEEDS", "5,23").split(",")]
BIG = 70 << 20  # more than one 64 MiB xorb

SCRIPT = r'''
import glob, hashlib, json, os, random, shutil, sys, threading
phase, work, seed, big_size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
import hf_xet

rnd = random.Random(seed)
SHA = [hf_xet.SKIP_SHA256, hf_xet.COMPUTE_SHA256]
out = os.path.join(work, "shards")
src = os.path.join(work, "src")
os.makedirs(src, exist_ok=True)
report = {"files": [], "metrics": []}
seen = set()


def rb(n):
    return rnd.randbytes(n)


def grab(cas, tag):
    pats = (("session", "xet/shard-session/.tmp*/*.mdb"), ("cache", "xet/shard-cache/*.mdb"),
            ("cas", "xet/xorbs/shards/*.mdb"), ("xmeta", "xet/shard-session/xorb_metadata/*.mdb"))
    for kind, pat in pats:
        for p in glob.glob(os.path.join(cas, pat)):
            if (kind, os.path.basename(p)) in seen:
                continue
            seen.add((kind, os.path.basename(p)))
            d = os.path.join(out, f"{tag}-{kind}")
            os.makedirs(d, exist_ok=True)
            shutil.copy(p, d)


def done(tag, rep):
    m = rep.dedup_metrics
    report["metrics"].append({"tag": tag, **{k: getattr(m, k) for k in (
        "new_chunks", "deduped_chunks", "deduped_chunks_by_global_dedup", "shard_bytes_uploaded",
        "total_bytes")}})


def upload(commit, tag, items):
    hs = []
    for i, (name, data, mode) in enumerate(items):
        sha = SHA[i % 2] if mode is None else mode
        if i % 3 == 2:
            h = commit.start_upload_bytes(data, sha256=sha, name=name)
        else:
            p = os.path.join(src, f"{tag}-{i}")
            with open(p, "wb") as fh:
                fh.write(data)
            h = commit.start_upload_file(p, sha256=sha)
        hs.append((name, data, sha, h))
    return hs


def record(tag, hs):
    for name, data, sha, h in hs:
        res = h if hasattr(h, "xet_info") else h.result()
        report["files"].append({
            "tag": tag, "name": name, "hash": res.xet_info.hash, "size": len(data),
            "sha256": None if sha is hf_xet.SKIP_SHA256 else hashlib.sha256(data).hexdigest()})


def local(sub):
    cas = os.path.join(work, sub)
    return cas, hf_xet.XetSession(), "local://" + cas


if phase == "main":
    cas, session, ep = local("cas")
    big = rb(big_size)
    text = b"".join(rnd.choice([b"river ", b"stone\n", b"maple ", b"x" * 50])
                    for _ in range(60000))
    with open(os.path.join(work, "text.bin"), "wb") as fh:
        fh.write(text)
    items = [("empty", b"", None), ("empty2", b"", hf_xet.COMPUTE_SHA256), ("one", b"a", None)]
    for n in (100, 8191, 8192, 8193, 65535, 65536, 65537, 131071, 131072, 131073, 262144):
        items.append((f"sz{n}", rb(n), None))
    items += [("zeros", bytes(1 << 20), None), ("text", text, None), ("text_dup", text, None),
              ("text_half", text[: len(text) // 2], None), ("big", big, None),
              ("big_mid", big[3 << 20: 6 << 20], hf_xet.COMPUTE_SHA256)]
    items += [(f"tiny{i}", rb(rnd.randint(1, 3000)), None) for i in range(180)]
    items.append(("given", b"given sha\n", hashlib.sha256(b"given sha\n").hexdigest()))
    commits = []
    for tag, its in (
            ("c1", items),
            ("c2", [("re_text", text, None), ("re_big_head", big[: 5 << 20], SHA[1]),
                    ("mix", text[:200000] + rb(300000), None), ("fresh", rb(500000), None),
                    ("re_one", b"a", None)]),
            ("c3", [("known_text", text, None), ("known_empty", b"", None)])):
        commit = session.new_upload_commit(endpoint=ep)
        hs = upload(commit, tag, its)
        done(tag, commit.wait_to_finish())
        record(tag, hs)
        grab(cas, tag)
        commits.append(commit)  # the session shard lives as long as the commit
    del commits
elif phase == "fresh":
    cas, session, ep = local("cas")
    for p in glob.glob(os.path.join(cas, "xet/shard-cache/*")):
        os.remove(p)
    text = open(os.path.join(work, "text.bin"), "rb").read()
    commit = session.new_upload_commit(endpoint=ep)
    hs = upload(commit, "g", [("gd_text_tail", text + rb(200000), SHA[1]),
                              ("gd_new", rb(40000), None)])
    done("g", commit.wait_to_finish())
    record("g", hs)
    grab(cas, "g")
    del commit
elif phase == "xmeta":
    cas, session, ep = local("cas-x")
    commit = session.new_upload_commit(endpoint=ep)
    hs = upload(commit, "x", [(f"x{i}", rb(rnd.choice([50, 70000, 900000])), None)
                              for i in range(6)])
    done("x", commit.wait_to_finish())
    record("x", hs)
    grab(cas, "x")
    del commit
elif phase == "conc":
    cas, session, ep = local("cas-k")
    commit = session.new_upload_commit(endpoint=ep)
    hs = upload(commit, "k", [(f"k{i}", rb(rnd.choice([0, 10, 9000, 70000, 400000, 3 << 20])),
                               None) for i in range(30)])
    for j, n in enumerate((0, 5000, 1 << 20)):
        data = rb(n)
        st = commit.start_upload_stream(name=f"s{j}", sha256=SHA[j % 2])
        for q in range(0, len(data), 100_000):
            st.write(data[q:q + 100_000])
        hs.append((f"s{j}", data, SHA[j % 2], st.finish()))
    done("k", commit.wait_to_finish())
    record("k", hs)
    grab(cas, "k")
    del commit
elif phase == "zero":
    cas, session, ep = local("cas-0")
    commit = session.new_upload_commit(endpoint=ep)
    done("zero", commit.wait_to_finish())
    grab(cas, "zero")
    del commit
elif phase == "http":
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    xorbs = os.path.join(work, "cas-h", "xet", "xorbs", "xorbs")
    os.makedirs(xorbs, exist_ok=True)
    bodies = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path.startswith("/v1/xorbs/"):
                name = "default." + self.path.rsplit("/", 1)[1]
                with open(os.path.join(xorbs, name), "wb") as fh:
                    fh.write(body)
                self.reply(200, b'{"was_inserted": true}')
            elif self.path == "/v1/shards":
                bodies.append(body)
                self.reply(200, b'{"result": 1}')
            else:
                self.reply(404, b"")

        def do_GET(self):
            self.reply(404, b"")

        def reply(self, code, body):
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    session = hf_xet.XetSession()
    commit = session.new_upload_commit(endpoint=f"http://127.0.0.1:{srv.server_address[1]}")
    hs = upload(commit, "h", [("h0", rb(120000), None), ("h1", b"", None), ("h2", rb(9000), None),
                              ("h3", rb(700000), None)])
    done("h", commit.wait_to_finish())
    record("h", hs)
    d = os.path.join(out, "h-upload")
    os.makedirs(d, exist_ok=True)
    for i, b in enumerate(bodies):
        with open(os.path.join(d, f"body{i}.bin"), "wb") as fh:
            fh.write(b)
    for root, _, names in os.walk(os.path.join(os.environ["HF_HOME"], "xet")):
        for n in names:
            if n.endswith(".mdb"):
                kind = "session" if "shard-session" in root else "cache"
                os.makedirs(os.path.join(out, f"h-{kind}"), exist_ok=True)
                shutil.copy(os.path.join(root, n), os.path.join(out, f"h-{kind}", n))
    del commit
    srv.shutdown()
with open(os.path.join(work, f"report-{phase}.json"), "w") as fh:
    json.dump(report, fh)
'''

PHASES: list[tuple[str, dict[str, str]]] = [
    ("main", {}),
    ("fresh", {}),
    ("xmeta", {"HF_XET_DATA_SESSION_XORB_METADATA_FLUSH_MAX_COUNT": "1"}),
    ("conc", {"HF_XET_DATA_SESSION_XORB_METADATA_FLUSH_MAX_COUNT": "1"}),
    ("zero", {}),
    ("http", {"HF_XET_CLIENT_LEGACY_DIRECT_XORB_UPLOAD": "true"}),
]
NAME = re.compile(r"[0-9a-f]{64}\.mdb")


class Corpus:
    """The generated shards, hf-xet's reports and a xorb-object reader."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.paths = sorted((work / "shards").glob("*/*"))
        self.files: list[dict[str, Any]] = []
        self.metrics: dict[str, dict[str, int]] = {}
        for p in sorted(work.glob("report-*.json")):
            rep = json.loads(p.read_text())
            self.files += rep["files"]
            self.metrics.update({m["tag"]: m for m in rep["metrics"]})
        self.xorb_dirs = sorted(work.glob("cas*/xet/xorbs/xorbs"))
        self._xorbs: dict[str, list[bytes] | None] = {}

    def kind(self, p: Path) -> tuple[str, str]:
        tag, kind = p.parent.name.split("-")
        return tag, kind

    def of(self, kind: str) -> list[Path]:
        return [p for p in self.paths if self.kind(p)[1] == kind]

    def chunks(self, xorb_hash: str, count: int) -> list[bytes] | None:
        """The uncompressed chunks of a xorb object (``default.<display hex>``) if stored.

        A serialized xorb is ``count`` chunks, each an 8-byte header (u8 version, u24 compressed
        length, u8 scheme, u24 uncompressed length, little-endian) and the compressed bytes
        (scheme 0 none, 1 LZ4 frame, 2 LZ4 frame of the bytes grouped by position mod 4),
        then a footer this reader does not need.
        """
        if xorb_hash in self._xorbs:
            return self._xorbs[xorb_hash]
        import lz4.frame

        found = [d / f"default.{xorb_hash}" for d in self.xorb_dirs
                 if (d / f"default.{xorb_hash}").exists()]
        out: list[bytes] | None = None
        if found:
            data, pos, out = found[0].read_bytes(), 0, []
            for _ in range(count):
                hdr = data[pos:pos + 8]
                clen, scheme = int.from_bytes(hdr[1:4], "little"), hdr[4]
                ulen = int.from_bytes(hdr[5:8], "little")
                body = data[pos + 8:pos + 8 + clen]
                pos += 8 + clen
                if scheme == 0:
                    raw = body
                elif scheme == 1:
                    raw = lz4.frame.decompress(body)
                elif scheme == 2:
                    grouped, arr, q = lz4.frame.decompress(body), bytearray(ulen), 0
                    for i in range(4):
                        n = ulen // 4 + (i < ulen % 4)
                        arr[i::4] = grouped[q:q + n]
                        q += n
                    raw = bytes(arr)
                else:  # pragma: no cover - a new scheme would need a reader update
                    raise AssertionError(f"xorb {xorb_hash}: unknown compression {scheme}")
                assert len(raw) == ulen, xorb_hash
                out.append(raw)
        self._xorbs[xorb_hash] = out
        return out


@pytest.fixture(scope="module", params=SEEDS, ids=lambda seed: f"seed{seed}")
def corpus(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    """Run every scenario for one seed (the seeds change every size and byte)."""
    pytest.importorskip("hf_xet")
    seed = request.param
    work = tmp_path_factory.mktemp(f"hfxet-unseen-{seed}")
    base = {k: v for k, v in os.environ.items() if not k.startswith("HF_XET_")}
    for phase, extra in PHASES:
        env = dict(base, HF_HOME=str(work / f"home-{phase}"), HF_XET_TELEMETRY_ENABLED="false",
                   **extra)
        if phase != "conc":
            env["HF_XET_DATA_MAX_CONCURRENT_FILE_INGESTION"] = "1"
        proc = subprocess.run([sys.executable, "-c", SCRIPT, phase, str(work), str(seed),
                               str(BIG)], env=env, capture_output=True, text=True, timeout=240,
                              check=False)
        assert proc.returncode == 0, (phase, proc.stderr[-3000:])
    return Corpus(work)


@pytest.fixture(scope="module")
def shards(corpus: Corpus):
    opened = {p: shardkit.open(p) for p in corpus.paths}
    yield opened
    for s in opened.values():
        s.close()


def test_every_kind_and_scenario_landed(corpus: Corpus, shards: dict[Path, MdbShard]) -> None:
    kinds = {corpus.kind(p) for p in corpus.paths}
    for tag in ("c1", "c2", "c3", "g", "k", "x"):
        assert {(tag, "session"), (tag, "cache"), (tag, "cas")} <= kinds, tag
    assert {("x", "xmeta"), ("k", "xmeta"), ("h", "session"), ("h", "cache"),
            ("h", "upload")} <= kinds
    assert not any(t == "zero" for t, _ in kinds)  # a commit without files writes no shard
    assert corpus.metrics["zero"]["shard_bytes_uploaded"] == 0
    variants = {s.variant for s in shards.values()}
    assert variants == {"full shard with lookup tables", "upload body (no footer)",
                        "server-stored shard without lookup tables",
                        "xorb-only shard with lookup tables"}
    (c1,) = [shards[p] for p in corpus.of("session") if corpus.kind(p)[0] == "c1"]
    assert len(c1.files) >= 190
    assert c1.footer.stored_bytes > 64 << 20 and len(c1.xorbs) >= 2
    big = max(c1.files, key=lambda f: f.size)
    assert big.size == BIG and len({t.xorb_hash for t in big.terms}) >= 2  # spans xorbs
    assert max(len(f.terms) for f in c1.files) > 2  # dedup inside the commit
    (c3,) = [shards[p] for p in corpus.of("session") if corpus.kind(p)[0] == "c3"]
    assert c3.xorbs == () and corpus.metrics["c3"]["new_chunks"] == 0
    assert corpus.metrics["c2"]["deduped_chunks"] > 0
    assert corpus.metrics["g"]["deduped_chunks_by_global_dedup"] > 0
    for p in corpus.of("xmeta"):
        assert shards[p].files == () and shards[p].xorbs


def test_open_summary_to_dict_verify(corpus: Corpus, shards: dict[Path, MdbShard]) -> None:
    cas = [shards[p] for p in corpus.of("cas")]
    for p, s in shards.items():
        summary = s.summary()
        json.dumps(summary)
        json.dumps(s.to_dict())
        assert summary["files"] == len(s.files) and summary["xorbs"] == len(s.xorbs), p.name
        assert summary["chunks"] == sum(x.num_chunks for x in s.xorbs), p.name
        assert "note" not in summary, (p.name, summary.get("note"))
        assert s.verify(name_check=bool(NAME.fullmatch(p.name))) == [], p
        assert s.verify(other_shards=cas) == [], p  # cross-shard terms and file hashes
        if NAME.fullmatch(p.name):
            assert str(s.content_hash()) == p.name[:-4]


def test_rebuild_byte_exact(corpus: Corpus, shards: dict[Path, MdbShard]) -> None:
    for p, s in shards.items():
        data = p.read_bytes()
        assert build(s) == data, p
        assert build(s, engine="construct") == data, p
        slow = MdbShard(open_source(p), engine="kaitai")
        try:
            assert slow.files == s.files and slow.xorbs == s.xorbs, p
            assert slow.footer == s.footer and slow.header == s.header, p
        finally:
            slow.close()


def _chunk_rows_sorted(data: bytes, s: MdbShard) -> tuple[bytes, bytes]:
    f = s.footer
    start, end = f.chunk_lookup_offset, f.footer_offset
    rows = np.frombuffer(data[start:end], np.dtype([("k", "<u8"), ("x", "<u4"), ("c", "<u4")]))
    return data[:start] + data[end:], np.sort(rows, order=["k", "x", "c"]).tobytes()


def test_default_writer_reproduces_each_form(corpus: Corpus,
                                             shards: dict[Path, MdbShard]) -> None:
    """xet-core's forms from the objects alone (equal chunk keys may come in any order)."""
    for p in corpus.of("session"):
        s, data = shards[p], p.read_bytes()
        mine = build_mdb(s.files, s.xorbs)
        assert len(mine) == len(data), p
        assert _chunk_rows_sorted(mine, s) == _chunk_rows_sorted(data, s), p
        tag = corpus.kind(p)[0]
        upload = build_mdb(s.files, s.xorbs, form="upload")
        assert len(upload) == corpus.metrics[tag]["shard_bytes_uploaded"], p
        for body in corpus.of("upload"):
            if corpus.kind(body)[0] == tag:
                assert body.read_bytes() == upload
    for p in corpus.of("cas"):
        s = shards[p]
        assert build_mdb(s.files, s.xorbs, form="server", key_expiry=0) == p.read_bytes(), p
        first = {(bytes(f.terms[0].xorb_hash), f.terms[0].chunk_start) for f in s.files
                 if f.terms}
        for x in s.xorbs:  # bit 31 exactly on the first chunk of each file starting here
            flagged = {(bytes(x.hash), i) for i, c in enumerate(x.chunks) if c.flags}
            assert flagged == {k for k in first if k[0] == bytes(x.hash)}, p


def test_file_hashes_sizes_and_sha256(corpus: Corpus, shards: dict[Path, MdbShard]) -> None:
    reported: dict[str, list[dict[str, Any]]] = {}
    for r in corpus.files:
        reported.setdefault(r["hash"], []).append(r)
    seen = set()
    for p, s in shards.items():
        for f in s.files:
            h = str(f.hash)
            seen.add(h)
            assert h in reported, (p, h)
            assert {r["size"] for r in reported[h]} == {f.size}, (p, h)
            if f.sha256 is not None:
                shas = {r["sha256"] for r in reported[h]}
                if f.size == 0:  # files/streams store 32 zero bytes, start_upload_bytes sha("")
                    assert str(f.sha256) in {"0" * 64, hashlib.sha256(b"").hexdigest()}, p
                else:
                    assert str(f.sha256) in shas, (p, h)
            if f.size == 0:
                assert f.hash.is_zero and f.terms == ()
    assert seen == set(reported)  # every upload is described by some shard


def test_files_rebuild_from_xorb_objects(corpus: Corpus, shards: dict[Path, MdbShard]) -> None:
    pytest.importorskip("lz4.frame")
    xorbs = {}
    for s in shards.values():
        for x in s.xorbs:
            xorbs.setdefault(str(x.hash), x)
    sha = {r["hash"]: r["sha256"] for r in corpus.files if r["sha256"] and r["size"]}
    checked: set[tuple[str, tuple]] = set()
    for p, s in shards.items():
        for f in s.files:
            key = (str(f.hash), tuple(f.terms))
            if key in checked:
                continue
            checked.add(key)
            parts: list[bytes] = []
            for t in f.terms:
                x = xorbs[str(t.xorb_hash)]
                chunks = corpus.chunks(str(t.xorb_hash), x.num_chunks)
                assert chunks is not None, (p, "xorb object missing", t.xorb_hash)
                assert [len(c) for c in chunks] == [c.size for c in x.chunks]
                parts += chunks[t.chunk_start:t.chunk_end]
            data = b"".join(parts)
            assert len(data) == f.size, p
            got = xh.file_hash([(xh.chunk_hash(c), len(c)) for c in parts]) if parts \
                else xh.ZERO_HASH
            assert xh.display_hex(got) == str(f.hash), p
            if str(f.hash) in sha:
                assert hashlib.sha256(data).hexdigest() == sha[str(f.hash)], p
    assert any(len(k[1]) > 1 for k in checked)


def test_lookups(shards: dict[Path, MdbShard]) -> None:
    for p, s in shards.items():
        for f in s.files:
            assert s.file(f.hash) == f and f.hash in s, p
        for x in s.xorbs:
            assert s.xorb(x.hash) == x, p
            for c in x.chunks[:: max(1, x.num_chunks // 50)]:
                ref = s.find_chunk(c.hash)
                assert ref is not None and ref.chunk.hash == c.hash, p
                found = s.xorb(ref.xorb_hash)
                assert found is not None and found.chunks[ref.chunk_index] == ref.chunk, p


def _cli(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main(argv)
    return rc, out.getvalue()


def test_cli(corpus: Corpus, shards: dict[Path, MdbShard]) -> None:
    for p, s in shards.items():
        rc, out = _cli(["ls", str(p)])
        assert rc == 0 and sorted(out.split()) == sorted(str(f.hash) for f in s.files), p
        rc, out = _cli(["info", "--json", str(p)])
        assert rc == 0 and json.loads(out)["files"] == len(s.files), p
        rc, out = _cli(["verify", "--name-check", str(p)])
        assert rc == 0, (p, out)
        for f in s.files[:3]:
            rc, out = _cli(["get", "--json", str(p), str(f.hash)])
            assert rc == 0 and json.loads(out)["hash"] == str(f.hash), p
