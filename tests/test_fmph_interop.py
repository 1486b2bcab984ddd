"""FMPH-GO against swh-mosaic 0.6.1: the maps of files it writes, for every index kind.

A MOSAIC index stores its keys in ``IdxUnrolled`` in the order of the map's values, so the
value of each stored key must be its position there; and since the crate's construction is
deterministic, :func:`fmph.build` over the same keys must give the very bytes of the ``Map``.
The files are read here with a small EBML walk of their own (just the elements needed).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from shardkit.hashing import fmph

mosaic = pytest.importorskip("swh.mosaic")
pytestmark = pytest.mark.interop

MASTERS = {0x1C535748, 0x1D535748, 0x1E535748, 0x1F535748, 0x6004, 0x6010, 0x6011}
INDEX, DESCRIPTION, UNROLLED, ENTRY_SIZE, MAP = 0x1F535748, 0x6001, 0x6002, 0x6003, 0x6005
KEY, OFFSET = 0xA0, 0xA1
KINDS = ["SHA1FMPHGO", "SHA1GITFMPHGO", "SHA256FMPHGO", "BLAKE2FMPHGO"]


def vint(buf: bytes, pos: int, keep_marker: bool) -> tuple[int, int]:
    first = buf[pos]
    length = 1
    while not first & (0x80 >> (length - 1)):
        length += 1
    value = first if keep_marker else first & ((0x80 >> (length - 1)) - 1)
    for i in range(1, length):
        value = (value << 8) | buf[pos + i]
    return value, pos + length


def elements(buf: bytes, pos: int, end: int):  # type: ignore[no-untyped-def]
    while pos < end:
        eid, p = vint(buf, pos, True)
        size, p = vint(buf, p, False)
        yield eid, p, size
        if eid in MASTERS:
            yield from elements(buf, p, p + size)
        pos = p + size


def read_indexes(path: Path) -> dict[str, tuple[bytes, int, list[bytes]]]:
    """Description -> (Map payload, its offset, keys of IdxUnrolled in order)."""
    buf = path.read_bytes()
    out = {}
    desc = ""
    unrolled = (0, 0)
    keys: list[bytes] = []
    for eid, p, size in elements(buf, 0, len(buf)):
        if eid == DESCRIPTION:
            desc = buf[p:p + size].decode()
        elif eid == UNROLLED:
            unrolled = (p, size)
        elif eid == ENTRY_SIZE:
            entry = int.from_bytes(buf[p:p + size], "big")
            keys = []
            start, total = unrolled
            for e in range(total // entry if entry else 0):
                kid, q = vint(buf, start + e * entry, True)
                ksize, q = vint(buf, q, False)
                assert kid == KEY
                keys.append(buf[q:q + ksize])
        elif eid == MAP:
            out[desc.split()[0]] = (buf[p:p + size], p, keys)
    return out


def object_keys(obj: bytes) -> list[bytes]:
    return [hashlib.sha1(obj).digest(),
            hashlib.sha1(b"blob %d\0" % len(obj) + obj).digest(),
            hashlib.sha256(obj).digest(),
            hashlib.blake2s(obj).digest()]


def make(path: Path, n: int) -> Path:
    kinds = [getattr(mosaic.IdxDescription, k) for k in KINDS]
    with mosaic.MosaicCreator(path, kinds) as creator:
        for i in range(n):
            obj = b"object %d of %d" % (i, n)
            creator.add(object_keys(obj), obj)
    return path


@pytest.fixture(scope="module", params=[0, 1, 2, 37, 10_000, 300_000])
def reference(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
              ) -> tuple[int, dict[str, tuple[bytes, int, list[bytes]]]]:
    n = request.param
    path = make(tmp_path_factory.mktemp("fmph") / f"n{n}.mosaic", n)
    return n, read_indexes(path)


def test_values_are_positions_in_idx_unrolled(reference) -> None:  # type: ignore[no-untyped-def]
    n, indexes = reference
    assert sorted(indexes) == ["key:blake2s256", "key:sha1", "key:sha1_git", "key:sha256"]
    for name, (blob, offset, keys) in indexes.items():
        assert len(keys) == n, name
        f = fmph.GOFunction.parse(blob, base_offset=offset)
        assert len(f) == n and f.size_bytes == len(blob) and f.trailing == 0
        assert f.values_of(keys).tolist() == list(range(n)), name
        assert f.get_many(keys) == list(range(n))
        step = max(1, n // 2000)
        assert [f.get(keys[i]) for i in range(0, n, step)] == list(range(0, n, step))
        assert [f._get_py(keys[i]) for i in range(0, n, step * 10)] == list(range(0, n, step * 10))


def test_build_gives_the_reference_map(reference) -> None:  # type: ignore[no-untyped-def]
    n, indexes = reference
    for name, (blob, _, keys) in indexes.items():
        built, ranks = fmph.build_with_ranks(sorted(keys))
        assert built == blob, name
        position = {k: i for i, k in enumerate(keys)}
        assert ranks.tolist() == [position[k] for k in sorted(keys)]
        if n:
            assert np.array_equal(fmph.ranks_of(built, keys), np.arange(n))


def test_reference_reads_through_our_values(tmp_path: Path) -> None:
    """swh-mosaic finds every object at the IdxUnrolled position our function gives."""
    path = make(tmp_path / "small.mosaic", 500)
    indexes = read_indexes(path)
    blob, _, keys = indexes["key:sha256"]
    f = fmph.GOFunction.parse(blob)
    with mosaic.MosaicReader(path, mosaic.IdxDescription.SHA256FMPHGO) as reader:
        for i in range(0, 500, 7):
            obj = b"object %d of 500" % i
            key = hashlib.sha256(obj).digest()
            assert reader.lookup(key) == obj
            assert keys[f.get(key)] == key
