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
    ("amudai/single.amudai.shard", "AmudaiShard"),
])
def test_local_open_imports_no_heavy_module(sample: str, kind: str) -> None:
    opened, loaded = _open_in_fresh_process(DATA / sample)
    assert opened == kind
    assert loaded == []


def test_amudai_directory_walk_agrees_with_protobuf() -> None:
    """Open reads the shard directory with a wire walk (no protobuf): the DataRefs it finds
    are those protobuf's parse sets, on every bundled sample; a field the walk does not know
    (another commit's layout) or a malformed one is left to protobuf, which names it."""
    import shardkit
    from shardkit.formats.amudai.wire import directory_refs

    names = ("schema_ref", "properties_ref", "field_list_ref", "stripe_list_ref",
             "url_list_ref", "indexes_ref")
    samples = sorted((DATA / "amudai").glob("*.amudai.shard"))
    assert samples
    for path in samples:
        with shardkit.open(path) as shard:
            raw, start = shard._directory_raw
            payload = shard._decode(raw, start, "/directory", bytes, "directory")
            assert directory_refs(payload) == {n for n in names if shard.directory.HasField(n)}
    assert directory_refs(payload + b"\x58\x01") is None  # field 11 (retired), a varint
    assert directory_refs(payload + b"\x39\x00") is None  # fixed64 cut short
    assert directory_refs(b"\x0a\x03\x0a\x01\xff") is None  # a url that is not UTF-8
    assert directory_refs(b"\x0a\x02\x12\x00") == {"schema_ref"}  # an empty range


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


@pytest.mark.parametrize("sample", ["neuroglancer/cv_identity_raw",
                                    "neuroglancer/ts_seg_cseg_uint64"])
def test_volume_and_kv_layers_open_without_the_annotation_code(sample: str) -> None:
    """The annotation reader (the largest Neuroglancer module) comes with an annotation
    layer only."""
    out = subprocess.run([sys.executable, "-c", _CHILD, str(DATA / sample), json.dumps(
        ["shardkit.formats.neuroglancer.annotations"])], capture_output=True, text=True,
        check=True)
    assert json.loads(out.stdout)[1] == []
    out = subprocess.run([sys.executable, "-c", _CHILD, str(DATA / "ng_annotations/sk_points"),
                          json.dumps(["shardkit.formats.neuroglancer.annotations"])],
                         capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == ["NgAnnotationLayer",
                                      ["shardkit.formats.neuroglancer.annotations"]]
