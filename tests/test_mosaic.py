"""MOSAIC reader on the bundled files written by swh-mosaic (tests/data/mosaic, PROVENANCE.md)."""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import random
from pathlib import Path

import pytest

import shardkit
from shardkit.errors import (
    BadMagicError,
    EntryNotFoundError,
    InvalidKeyError,
    LimitExceededError,
    ShardkitError,
    UnknownFormatError,
)
from shardkit.formats.mosaic import KINDS, MosaicFile, content_key
from shardkit.sources import BytesSource

DATA = Path(__file__).parent / "data" / "mosaic"
# name -> (objects, index kinds, compression), as make_corpus.py wrote them
FILES = {
    "empty": (0, ["sha256"], "none"),
    "single": (1, ["sha256"], "none"),
    "sha256": (20, ["sha256"], "none"),
    "all_indexes": (12, ["sha1", "sha1_git", "sha256", "blake2s256"], "none"),
    "sha1": (9, ["sha1"], "none"),
    "zstd": (30, ["sha256", "sha1"], "zstd"),
    "zstd_dict": (25, ["sha256"], "zstd.dict"),
    "tiles": (17, ["sha256", "blake2s256"], "none"),
    "deleted": (8, ["sha256", "sha1"], "none"),
}


def corpus_objects(n: int, seed: str = "") -> list[bytes]:
    """The objects make_corpus.py stores (its ``objects()``)."""
    out = []
    for i in range(n):
        line = f"{seed}object {i}: " + "lorem ipsum dolor sit amet " * (i % 7)
        out.append(b"" if (i == 0 and not seed) else line.encode())
    return out


@pytest.mark.parametrize("name", sorted(FILES))
def test_every_object_by_every_index(name: str) -> None:
    count, kinds, compression = FILES[name]
    with shardkit.open(DATA / f"{name}.mosaic") as r:
        assert isinstance(r, MosaicFile)
        assert len(r) == count
        assert r.index_names == kinds
        assert r.meta.compression == compression
        values = list(r.values())
        assert len(values) == count
        assert sum(map(len, values)) == r.meta.objects_total_size
        for kind in kinds:
            items = dict(r.items(kind))
            assert len(items) == count
            assert sorted(items.values()) == sorted(values)
            for key, value in items.items():
                assert content_key(kind, value) == key
                assert r.get(key, index=kind) == value
                assert r.get_all(key, index=kind) == [value]
            assert r.get_many(list(items), index=kind) == list(items.values())


def test_lookup_by_key_length_and_ambiguity() -> None:
    objs = corpus_objects(12)
    with shardkit.open(DATA / "all_indexes.mosaic") as r:
        obj = objs[5]
        for kind in ("sha256", "blake2s256", "sha1", "sha1_git"):
            assert r.get(content_key(kind, obj), index=kind) == obj
        # 20-byte keys: sha1 and sha1_git are both there
        with pytest.raises(InvalidKeyError, match="sha1, sha1_git: pass index="):
            r.get(content_key("sha1", obj))
        with pytest.raises(InvalidKeyError, match="key of 3 bytes"):
            r.get(b"abc")
        with pytest.raises(InvalidKeyError, match="unknown index 'md5'"):
            r.get(content_key("sha1", obj), index="md5")
        assert r.meta.comments == ["MOSAIC sample made by shardkit's tests",
                                   "second comment: \u00e9t\u00e9"]
    with shardkit.open(DATA / "all_indexes.mosaic", index="sha1_git") as r:
        assert r[content_key("sha1_git", objs[7])] == objs[7]
        assert r.get(content_key("sha1", objs[7])) is None  # read as a sha1_git key
        assert set(r.keys()) == {content_key("sha1_git", o) for o in objs}
    with shardkit.open(DATA / "sha1.mosaic") as r:  # a single 20-byte index: no ambiguity
        obj = corpus_objects(9, "s1 ")[4]
        assert r[hashlib.sha1(obj).digest()] == obj
        assert r[hashlib.sha1(obj).hexdigest()] == obj


def test_absent_keys() -> None:
    with shardkit.open(DATA / "sha256.mosaic") as r:
        for key in (bytes(32), hashlib.sha256(b"not stored").digest(), b"\xff" * 32):
            assert r.get(key) is None
            assert key not in r
            with pytest.raises(EntryNotFoundError):
                r[key]
            with pytest.raises(EntryNotFoundError):
                r.get_all(key)
        assert r.get_many([bytes(32)], default=7) == [7]
        with pytest.raises(EntryNotFoundError):
            r.get_many([bytes(32)])
    with shardkit.open(DATA / "empty.mosaic") as r:
        assert len(r) == 0 and list(r.keys()) == [] and list(r.values()) == []
        assert r.get(bytes(32)) is None


def test_deleted_objects_are_absent() -> None:
    objs = corpus_objects(10)
    with shardkit.open(DATA / "deleted.mosaic") as r:
        assert len(r) == 8
        assert r.meta.objects_total_size == sum(len(o) for o in objs) - len(objs[3]) \
            - len(objs[7])
        for i, obj in enumerate(objs):
            for kind in ("sha256", "sha1"):
                key = content_key(kind, obj)
                if i in (3, 7):
                    assert r.get(key, index=kind) is None
                    assert key not in set(r.keys(kind))
                else:
                    assert r.get(key, index=kind) == obj
        assert sorted(r.values()) == sorted(o for i, o in enumerate(objs) if i not in (3, 7))


def test_zstd_and_dictionary() -> None:
    for name, n in (("zstd", 30), ("zstd_dict", 25)):
        objs = corpus_objects(n)
        with shardkit.open(DATA / f"{name}.mosaic") as r:
            assert sorted(r.values()) == sorted(objs)
            assert r[hashlib.sha256(objs[9]).digest()] == objs[9]
    with shardkit.open(DATA / "zstd_dict.mosaic") as r:
        assert r.meta.compression_data is not None and len(r.meta.compression_data) > 100
    # the decompression cap
    with shardkit.open(DATA / "zstd.mosaic", max_object_size=50) as r:
        big = max(corpus_objects(30), key=len)
        with pytest.raises(LimitExceededError, match="max_object_size 50"):
            r[hashlib.sha256(big).digest()]


def test_tiles_and_large_objects() -> None:
    with shardkit.open(DATA / "tiles.mosaic") as r:
        tiles = [s for s in r.sections() if s.name.startswith("/Mosaic/Tile")]
        assert [s.name for s in tiles] == [f"/Mosaic/Tile[{i}]" for i in range(8)]
        assert tiles[0].start == r.meta.meta_end and tiles[-1].end == r.meta.end_of_tiles_offset
        assert all(a.end == b.start for a, b in itertools.pairwise(tiles))
        assert [s.name for s in r._tile_sections(limit=3)][-1] == "/Mosaic/Tile[3:]"
        big = bytes(range(256)) * 4
        assert r.get(hashlib.sha256(big).digest(), index="sha256") == big
        assert r.get(hashlib.blake2s(b"x" * 700 + b"large one").digest(),
                     index="blake2s256") == b"x" * 700 + b"large one"
    from shardkit.generated.mosaic import Mosaic

    root = Mosaic.from_file(str(DATA / "tiles.mosaic")).elements[1].data.elements
    ids = [e.id_vint.raw_value for e in root]
    assert ids.count(0x1E535748) == 8 and ids.count(0x1F535748) == 2


def test_detection_and_other_ebml_documents() -> None:
    data = (DATA / "single.mosaic").read_bytes()
    assert shardkit.formats.detect(BytesSource(data)).id == "mosaic"
    webm = data.replace(b"\x42\x82\x86mosaic", b"\x42\x82\x86webm\0\0")
    with pytest.raises(UnknownFormatError):
        shardkit.open(webm)
    with pytest.raises(BadMagicError, match="DocType 'webm"):
        MosaicFile(BytesSource(webm))
    with pytest.raises(BadMagicError, match="EBML header"):
        MosaicFile(BytesSource(b"\0" * 64))


def test_kinds() -> None:
    assert [k.key_len for k in KINDS.values()] == [20, 20, 32, 32]
    assert content_key("sha1_git", b"hello\n").hex() == "ce013625030ba8dba906f756967f9e9ca394464a"


# -- verify -------------------------------------------------------------------------------------

BROKEN = DATA / "broken"
VERDICTS = json.loads((BROKEN / "verdicts.json").read_text())


@pytest.mark.parametrize("name", sorted(FILES))
def test_verify_good_files(name: str) -> None:
    with shardkit.open(DATA / f"{name}.mosaic") as r:
        assert r.verify() == []
        assert r.verify(content_hash=False) == []


@pytest.mark.parametrize("name", sorted(VERDICTS))
def test_broken_files_verdicts(name: str) -> None:
    verdict = VERDICTS[name]
    if verdict["error"]:
        with pytest.raises(getattr(shardkit.errors, verdict["error"])) as info, \
                shardkit.open(BROKEN / name) as r:
            r.verify()
        assert info.value.offset is not None
        return
    with shardkit.open(BROKEN / name) as r:
        problems = r.verify()
    assert sorted(p.check for p in problems) == sorted(verdict["checks"])
    for p in problems:
        assert p.offset is not None and p.field and p.field.startswith("/Mosaic")


def test_verify_names_the_bad_object() -> None:
    with shardkit.open(BROKEN / "bad_content.mosaic") as r:
        (p,) = r.verify()
        assert p.check == "content_hash"
        assert p.field.startswith("/Mosaic/Index[0]/IdxUnrolled/entry[")
        head = r.source.read_range(p.offset, p.offset + 1)
        assert head == b"\xf0"  # the Object element's ID
        assert r.verify(content_hash=False) == []


def _touch_everything(data: bytes) -> None:
    try:
        r = MosaicFile(BytesSource(data))
    except ShardkitError:
        return
    for call in (lambda: r.verify(), lambda: list(r.values()),
                 lambda: [list(r.items(k)) for k in r.index_names],
                 lambda: r.get(hashlib.sha256(b"hello world\n").digest(), index="sha256"),
                 lambda: r.summary(), lambda: r.sections()):
        with contextlib.suppress(ShardkitError):
            call()


@pytest.mark.parametrize("name", ["single", "zstd"])
def test_every_corrupted_byte_is_a_shardkit_error(name: str) -> None:
    """Each byte of the file changed (and the file cut there): only shardkit errors."""
    good = (DATA / f"{name}.mosaic").read_bytes()
    step = 1 if len(good) < 1000 else 7
    for i in range(0, len(good), step):
        for value in (good[i] ^ 0xFF, 0x00, 0x80):
            _touch_everything(good[:i] + bytes([value]) + good[i + 1:])
        _touch_everything(good[:i])


def test_conflict_sample() -> None:
    shared = hashlib.sha256(b"first object of a shared key\n").digest()
    with shardkit.open(DATA / "conflict.mosaic") as r:
        assert len(r) == 3
        assert r.get_all(shared) == [b"first object of a shared key\n",
                                     b"second object of the shared key\n"]
        assert r[shared] == b"first object of a shared key\n"
        assert list(r.keys()).count(shared) == 1
        assert sorted(v for k, v in r.items() if k == shared) == [
            b"first object of a shared key\n", b"second object of the shared key\n"]
        (p,) = r.verify()
        assert p.check == "content_hash" and "hashes to" in p.message


def test_reference_deletion_across_tiles_has_a_stale_crc() -> None:
    with shardkit.open(DATA / "deleted_tiles.mosaic") as r:
        assert len(r) == 14
        assert r.get(hashlib.sha256(corpus_objects(15)[2]).digest()) is None
        assert [(p.check, p.field) for p in r.verify()] == [("crc32", "/Mosaic/Tile[0]/CRC-32")]


# -- the C accelerator and its Python twin ------------------------------------------------------



def _outcome(data: bytes, keys: list[bytes]) -> list[object]:
    """What a user sees of ``data``: each key's object (or error type), then the values."""
    out: list[object] = []
    try:
        r = MosaicFile(BytesSource(data))
    except ShardkitError as exc:
        return [type(exc).__name__]
    for key in keys:
        try:
            out.append(r.get(key, index="sha256"))
        except ShardkitError as exc:
            out.append(type(exc).__name__)
    try:
        out.append(list(r.values()))
    except ShardkitError as exc:
        out.append(type(exc).__name__)
    return out


@pytest.mark.parametrize("name", ["sha256", "zstd", "tiles", "deleted", "conflict"])
def test_c_and_python_paths_agree(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from shardkit.formats.mosaic import reader

    if reader._native is None:
        pytest.skip("the C accelerator is not built")
    good = (DATA / f"{name}.mosaic").read_bytes()
    with shardkit.open(DATA / f"{name}.mosaic") as r:
        real = list(r.keys("sha256"))[:6]
    keys = [*real, bytes(32), b"\x01" * 32]
    rnd = random.Random(name)
    variants = [good] + [
        bytes(b ^ (0xFF if i == at else 0) for i, b in enumerate(good))
        for at in sorted(rnd.sample(range(len(good)), min(150, len(good))))]
    native = [_outcome(v, keys) for v in variants]
    monkeypatch.setattr(reader, "_native", None)
    python = [_outcome(v, keys) for v in variants]
    assert native == python
    assert all(isinstance(x, bytes) for x in native[0][:len(real)])
    assert native[0][len(real):len(keys)] == [None, None]


@pytest.mark.parametrize("name", ["sha256", "tiles", "deleted"])
def test_python_path_reads_every_object(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from shardkit.formats.mosaic import reader

    monkeypatch.setattr(reader, "_native", None)
    count, kinds, _ = FILES[name]
    with shardkit.open(DATA / f"{name}.mosaic") as r:
        for kind in kinds:
            items = dict(r.items(kind))
            assert len(items) == count
            for key, value in items.items():
                assert r.get(key, index=kind) == value
        assert len(list(r.values())) == count
