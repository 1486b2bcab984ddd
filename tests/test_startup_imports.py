"""Opening a local file reads its header only: it must not import numpy, protobuf or the
network stack (they come with the first value decoded, or with a URL). Each case opens a
bundled sample in a fresh interpreter and lists which of those modules are loaded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"

#: Loaded only to decode values or to read a URL, never to open a local file.
HEAVY = ("numpy", "google.protobuf", "asyncio", "ssl", "aiohttp", "fsspec.implementations.http",
         "subprocess")

_CHILD = """
import json, sys
import shardkit
with shardkit.open(sys.argv[1]) as reader:
    kind = type(reader).__name__
print(json.dumps([kind, [m for m in json.loads(sys.argv[2]) if m in sys.modules]]))
"""


def _open_in_fresh_process(path: Path) -> tuple[str, list[str]]:
    out = subprocess.run([sys.executable, "-c", _CHILD, str(path), json.dumps(HEAVY)],
                         capture_output=True, text=True, check=True)
    kind, loaded = json.loads(out.stdout)
    return kind, loaded


@pytest.mark.parametrize(("sample", "kind"), [
    ("neuroglancer/cv_identity_raw", "NgKeyValueDataset"),
    ("neuroglancer/ts_seg_cseg_uint64", "NgImageDataset"),
    ("ng_annotations/sk_points", "NgAnnotationLayer"),
    ("ng_annotations/ng_points", "NgAnnotationLayer"),
    ("mdb/real/session/b04ac8152506ea5af6b90a7378a3d35c46cbef373a597241937795e323cea8f1.mdb",
     "MdbShard"),
    ("swh/tiny.shard", "SwhShard"),
    ("zss/tiny_zlib.zss", "ZssFile"),
    ("zs/made/lines-deflate-default.zs", "ZsFile"),
    ("mosaic/single.mosaic", "MosaicFile"),
])
def test_local_open_imports_no_heavy_module(sample: str, kind: str) -> None:
    opened, loaded = _open_in_fresh_process(DATA / sample)
    assert opened == kind
    assert loaded == []


def test_amudai_open_imports_protobuf_only() -> None:
    """An Amudai shard's directory is a protobuf message (read by open), its schema a
    FlatBuffers table (read on first use): open imports protobuf, not numpy."""
    opened, loaded = _open_in_fresh_process(DATA / "amudai" / "single.amudai.shard")
    assert opened == "AmudaiShard"
    assert loaded == ["google.protobuf"]


def test_crc64xz_finds_liblzma_without_a_subprocess() -> None:
    """liblzma loads by its usual name; ``ctypes.util.find_library`` (which starts ldconfig) is
    the fallback only."""
    env = {k: v for k, v in os.environ.items() if k != "SHARDKIT_CRC64XZ"}
    out = subprocess.run([sys.executable, "-c", "import sys; from shardkit.hashing import "
                          "crc64xz as c; print(c.BACKEND, 'ctypes.util' in sys.modules)"],
                         capture_output=True, text=True, check=True, env=env)
    backend, searched = out.stdout.split()
    assert (backend, searched) in {("liblzma", "False"), ("crcmod", "True")}


def test_the_check_sees_a_heavy_import() -> None:
    """The probe itself works: a module that was imported is listed."""
    out = subprocess.run([sys.executable, "-c", "import numpy, sys, json; "
                          f"print(json.dumps([m for m in {list(HEAVY)!r} if m in sys.modules]))"],
                         capture_output=True, text=True, check=True)
    assert "numpy" in json.loads(out.stdout)
