"""MOSAIC verify in windows of Objects: the problems are those of a single window."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest

import shardkit
from shardkit.formats.mosaic import verify as mv
from shardkit.writers.mosaic import write_mosaic

DATA = Path(__file__).parent / "data" / "mosaic"
FILES = sorted(DATA.glob("*.mosaic")) + sorted((DATA / "broken").glob("*.mosaic"))
WINDOWS = (1, 2, 3, 7)


def problems(path: Path, window: int | None, content_hash: bool = True) -> list[tuple]:
    with shardkit.open(path, format="mosaic") as r:
        return [(p.check, p.message, p.offset, p.field)
                for p in mv.check(r, content_hash=content_hash, window=window)]


def same_in_windows(path: Path) -> list[tuple]:
    whole = problems(path, None)
    for w in WINDOWS:
        assert problems(path, w) == whole, w
        assert problems(path, w, False) == problems(path, None, False), w
    return whole


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_corpus_same_problems_in_windows(path: Path) -> None:
    try:
        same_in_windows(path)
    except shardkit.errors.ShardkitError:
        with pytest.raises(shardkit.errors.ShardkitError):
            problems(path, 1)


def _objects(n: int, seed: int = 5) -> list[bytes]:
    rnd = random.Random(seed)
    return [rnd.randbytes(rnd.randrange(1, 40)) for _ in range(n)]


def _patched(tmp_path: Path, objects: list[bytes],
             patch: Callable[[bytearray, list[int], list], None]) -> Path:
    path = write_mosaic(tmp_path / "f.mosaic", objects, indexes=("sha256", "sha1"))
    with shardkit.open(path) as r:
        offsets = [o for o, _ in r.iter_objects()]
        idx = [(i.unrolled_start, i.unrolled_size // len(offsets), i.key_len)
               for i in r.indexes]
    data = bytearray(path.read_bytes())
    patch(data, offsets, idx)
    out = tmp_path / "patched.mosaic"
    out.write_bytes(bytes(data))
    return out


def _set_offset(data: bytearray, idx: tuple[int, int, int], rank: int, value: int) -> None:
    start, size, klen = idx
    off_len = size - 4 - klen
    at = start + rank * size + 4 + klen
    data[at:at + off_len] = value.to_bytes(off_len, "big")


def _offset(data: bytearray, idx: tuple[int, int, int], rank: int) -> int:
    start, size, klen = idx
    off_len = size - 4 - klen
    at = start + rank * size + 4 + klen
    return int.from_bytes(data[at:at + off_len], "big")


def test_sound_file_in_windows(tmp_path: Path) -> None:
    path = write_mosaic(tmp_path / "f.mosaic", _objects(60), indexes=("sha256", "sha1"))
    assert same_in_windows(path) == []


def test_duplicates_across_windows(tmp_path: Path) -> None:
    def patch(data: bytearray, offsets: list[int], idx: list) -> None:
        for rank in (0, 5, 33):  # point three entries at the last Object
            _set_offset(data, idx[0], rank, offsets[-1])
    got = same_in_windows(_patched(tmp_path, _objects(60), patch))
    checks = [p[0] for p in got]
    assert checks.count("entry") == 1 and "several entries" in got[checks.index("entry")][1]
    assert checks.count("orphan") == 3
    assert checks.count("content_hash") == 3


def test_entries_between_objects_and_past_the_end(tmp_path: Path) -> None:
    def patch(data: bytearray, offsets: list[int], idx: list) -> None:
        for i, rank in enumerate(range(0, 60, 6)):
            _set_offset(data, idx[i % 2], rank, _offset(data, idx[i % 2], rank) + 1)
        _set_offset(data, idx[1], 1, len(data) + 100)
        _set_offset(data, idx[0], 2, 0)
    got = same_in_windows(_patched(tmp_path, _objects(60), patch))
    assert sum("which is not an Object" in p[1] for p in got) == 12
    assert sum(p[0] == "orphan" for p in got) == 12


def test_hash_mismatches_and_many_problems(tmp_path: Path) -> None:
    def patch(data: bytearray, offsets: list[int], idx: list) -> None:
        for o in offsets[::2]:  # change a byte of every other Object (and the tiles' CRCs)
            data[o + 2] ^= 0xFF
        for rank in range(0, 90, 3):
            _set_offset(data, idx[1], rank, offsets[(rank * 7) % len(offsets)])
    got = same_in_windows(_patched(tmp_path, _objects(90), patch))
    assert any(p[0] == "content_hash" for p in got)
    assert any(p[0] == "more" for p in got)  # more problems than are listed


def test_content_stored_twice_across_windows(tmp_path: Path) -> None:
    objs = _objects(30)
    objs = objs + objs[:10]  # stored twice: the index keeps one copy of each
    path = write_mosaic(tmp_path / "f.mosaic", objs, indexes=("sha256",))
    whole = same_in_windows(path)
    assert not any(p[0] == "orphan" for p in whole)
