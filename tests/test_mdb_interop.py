"""Interop with hf-xet (PyPI): fresh shards written by the reference client read correctly.

Each test runs hf-xet in a subprocess (it reads its settings from the environment) against its
offline ``local://`` CAS in a temporary folder, uploads seeded random files, and collects the
session shards (with lookup tables) and the CAS-stored shards (without). shardkit must list the
file hashes hf-xet reports, verify every shard clean (recomputing verification, xorb and file
hashes and the file name), and rebuild every shard byte for byte.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import shardkit
from shardkit.writers.xet_mdb import build

pytestmark = pytest.mark.interop

SCRIPT = r'''
import glob, json, os, random, shutil, sys
work = sys.argv[1]
import hf_xet
rnd = random.Random(int(sys.argv[2]))
names = []
for i, size in enumerate([0, 1, 5000, 150_000, 700_000]):
    p = os.path.join(work, f"f{i}.bin")
    with open(p, "wb") as fh:
        fh.write(rnd.randbytes(size))
    names.append(p)
text = os.path.join(work, "t.txt")
with open(text, "wb") as fh:
    fh.write(b"".join(rnd.choice([b"river ", b"stone\n", b"maple "]) for _ in range(40000)))
names.append(text)
session = hf_xet.XetSession()
commit = session.new_upload_commit(endpoint="local://" + os.path.join(work, "cas"))
handles = [commit.start_upload_file(p, sha256=hf_xet.COMPUTE_SHA256 if i % 2 else
                                    hf_xet.SKIP_SHA256) for i, p in enumerate(names)]
commit.wait_to_finish()
out = os.path.join(work, "shards")
os.makedirs(out)
for kind, pattern in (("session", "xet/shard-session/.tmp*/*.mdb"),
                      ("cas", "xet/xorbs/shards/*.mdb")):
    for p in glob.glob(os.path.join(work, "cas", pattern)):
        os.makedirs(os.path.join(out, kind), exist_ok=True)
        shutil.copy(p, os.path.join(out, kind, os.path.basename(p)))
results = [{"path": os.path.basename(p), "hash": h.result().xet_info.hash,
            "size": os.path.getsize(p)} for p, h in zip(names, handles)]
hashed = hf_xet.hash_files(names)
json.dump({"results": results, "hash_files": [x.hash for x in hashed]},
          open(os.path.join(work, "report.json"), "w"))
del commit
'''


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    pytest.importorskip("hf_xet")
    work = tmp_path_factory.mktemp("hfxet")
    env = dict(os.environ, HF_HOME=str(work / "home"), HF_XET_TELEMETRY_ENABLED="false",
               HF_XET_DATA_MAX_CONCURRENT_FILE_INGESTION="1")
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(work), "11"], env=env,
                          capture_output=True, text=True, timeout=180, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return work / "shards", json.loads((work / "report.json").read_text())


def test_file_hashes_equal_hf_xet(fresh: tuple[Path, dict]) -> None:
    shards_dir, report = fresh
    sessions = sorted((shards_dir / "session").glob("*.mdb"))
    assert sessions, "hf-xet wrote no session shard"
    found = {}
    for p in sessions:
        with shardkit.open(p) as s:
            for f in s.files:
                found[str(f.hash)] = f.size
    for r in report["results"]:
        assert r["hash"] in found, r
        assert found[r["hash"]] == r["size"]
    assert len(found) == len({r["hash"] for r in report["results"]})


def test_hash_files_oracle_agrees(fresh: tuple[Path, dict]) -> None:
    """hf_xet.hash_files (no upload) gives the same hashes as the upload and the shards."""
    _, report = fresh
    assert report["hash_files"] == [r["hash"] for r in report["results"]]
    assert report["hash_files"][0] == "0" * 64  # the empty file


def test_fresh_shards_verify_and_round_trip(fresh: tuple[Path, dict]) -> None:
    shards_dir, _ = fresh
    paths = sorted(shards_dir.glob("*/*.mdb"))
    assert {p.parent.name for p in paths} == {"session", "cas"}
    for p in paths:
        with shardkit.open(p) as s:
            assert s.verify(name_check=True) == [], p.name
            assert build(s) == p.read_bytes(), p.name
            if p.parent.name == "session":
                assert s.footer.chunk_lookup_num_entry == sum(len(x.chunks) for x in s.xorbs)
                for f in s.files:
                    assert s.file(f.hash) == f
            else:
                assert s.file_lookup is None and s.chunk_lookup is None
