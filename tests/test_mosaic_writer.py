"""MOSAIC writer, delete and CLI; interop with swh-mosaic 0.6.1 both ways."""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path

import pytest

import shardkit
from shardkit.cli import main
from shardkit.errors import EntryNotFoundError, InvalidKeyError, ShardkitError
from shardkit.formats.mosaic import KINDS, content_key
from shardkit.writers.mosaic import MosaicWriter, delete, write_mosaic

DATA = Path(__file__).parent / "data" / "mosaic"
ALL = list(KINDS)


def objects(n: int, seed: int = 1) -> list[bytes]:
    rnd = random.Random(seed)
    out = [rnd.randbytes(rnd.randrange(0, 400)) for _ in range(n)]
    return [*out, b"", b"large " * 2000]


def test_round_trip_every_option(tmp_path: Path) -> None:
    objs = objects(300)
    with shardkit.open(DATA / "zstd_dict.mosaic") as r:
        zdict = r.meta.compression_data
    for opts in ({}, {"zstd_level": 3}, {"zstd_level": 1, "zstd_dict": zdict},
                 {"tile_threshold": 500}):
        out = tmp_path / "f.mosaic"
        write_mosaic(out, objs, ALL, comments=["one", "two"], overwrite=True, **opts)
        with shardkit.open(out) as r:
            assert len(r) == len(set(objs))
            assert r.meta.comments == ["one", "two"]
            want = ("zstd.dict" if "zstd_dict" in opts else "zstd" if "zstd_level" in opts
                    else "none")
            assert r.meta.compression == want
            assert r.meta.objects_total_size == sum(map(len, set(objs)))
            assert r.verify() == []
            for kind in ALL:
                for obj in objs[::7]:
                    assert r.get(content_key(kind, obj), index=kind) == obj
            assert sorted(r.values()) == sorted(set(objs))


def test_duplicates_are_stored_once(tmp_path: Path) -> None:
    objs = objects(20)
    out = write_mosaic(tmp_path / "d.mosaic", objs + objs[:5] + [objs[3]], ["sha256", "sha1"])
    with shardkit.open(out) as r:
        assert len(r) == len(set(objs))
        assert r.verify() == []
        assert len(list(r.values())) == len(set(objs))


def test_explicit_keys_make_conflicts(tmp_path: Path) -> None:
    key = bytes(range(32))
    out = tmp_path / "c.mosaic"
    with MosaicWriter(out, ["sha256"]) as w:
        w.add(b"first", [key])
        w.add(b"other", [content_key("sha256", b"other")])
        w.add(b"second", [key])
    with shardkit.open(out) as r:
        assert r.get_all(key) == [b"first", b"second"]
        assert r[key] == b"first"
        assert r[content_key("sha256", b"other")] == b"other"
        idx = r.index("sha256")
        assert r.conflicts(idx) == {key: [o for o, _ in r.iter_objects()][::2]}
        # the key is not the objects' sha256: verify says so, and nothing else
        problems = r.verify()
        assert sorted(p.check for p in problems) == ["content_hash", "content_hash"]
        assert r.verify(content_hash=False) == []
    with pytest.raises(InvalidKeyError):
        MosaicWriter(tmp_path / "x.mosaic", ["sha1"]).add(b"x", [b"short"])


def test_atomic_and_options(tmp_path: Path) -> None:
    out = tmp_path / "a.mosaic"

    def failing():
        yield b"one"
        raise RuntimeError("input broke")

    with pytest.raises(RuntimeError):
        write_mosaic(out, failing())
    assert list(tmp_path.iterdir()) == []
    write_mosaic(out, [b"x"])
    with pytest.raises(ShardkitError, match="already exists"):
        write_mosaic(out, [b"y"])
    with pytest.raises(ShardkitError, match="indexes must be"):
        write_mosaic(tmp_path / "b.mosaic", [b"y"], ["md5"])
    with pytest.raises(ShardkitError, match="needs a zstd level"):
        write_mosaic(tmp_path / "b.mosaic", [b"y"], zstd_dict=b"abc")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.mosaic"]


def test_delete_in_place(tmp_path: Path) -> None:
    objs = objects(50)
    out = write_mosaic(tmp_path / "d.mosaic", objs, ["sha256", "blake2s256"],
                       tile_threshold=2000)
    gone = [objs[4], objs[30]]
    delete(out, [content_key("sha256", o) for o in gone], index="sha256")
    with shardkit.open(out) as r:
        assert len(r) == len(set(objs)) - 2
        assert r.verify() == []
        for kind in ("sha256", "blake2s256"):
            for o in set(objs):
                want = None if o in gone else o
                assert r.get(content_key(kind, o), index=kind) == want
    with pytest.raises(EntryNotFoundError):
        delete(out, [content_key("sha256", objs[4])], index="sha256")


# -- interop with swh-mosaic --------------------------------------------------------------------

def _ref():
    return pytest.importorskip("swh.mosaic")


REF_KIND = {"sha1": "SHA1FMPHGO", "sha1_git": "SHA1GITFMPHGO", "sha256": "SHA256FMPHGO",
            "blake2s256": "BLAKE2FMPHGO"}


@pytest.mark.interop
@pytest.mark.parametrize("opts", [{}, {"zstd_level": 5}, {"tile_threshold": 300},
                                  {"zstd_level": 3, "zstd_dict": True}],
                         ids=["plain", "zstd", "tiles", "zstd-dict"])
def test_reference_reads_ours(tmp_path: Path, opts: dict) -> None:
    sm = _ref()
    objs = objects(400, seed=7)
    if opts.get("zstd_dict"):
        opts = {**opts, "zstd_dict": sm.create_zstd_dict(
            [b"sample %d: " % i + b"lorem ipsum " * (i % 9) for i in range(80)], 1024)}
    out = write_mosaic(tmp_path / "ours.mosaic", objs, ALL, comments=["c"], **opts)
    for kind in ALL:
        r = sm.MosaicReader(str(out), getattr(sm.IdxDescription, REF_KIND[kind]))
        assert len(r) == len(set(objs))
        assert r.comments == ["c"]
        for o in set(objs):
            assert r.lookup(content_key(kind, o)) == o
        assert sorted(r.values()) == sorted(set(objs))
        assert sorted(r.keys()) == sorted(content_key(kind, o) for o in set(objs))


@pytest.mark.interop
def test_we_read_the_reference_and_delete_as_it_does(tmp_path: Path) -> None:
    sm = _ref()
    objs = list(set(objects(300, seed=3)))
    kinds = ["sha256", "sha1_git"]
    made = tmp_path / "ref.mosaic"
    with sm.MosaicCreator(made, [getattr(sm.IdxDescription, REF_KIND[k]) for k in kinds],
                          compression_level=3) as c:
        for o in objs:
            c.add([content_key(k, o) for k in kinds], o)
    with shardkit.open(made) as r:
        assert r.verify() == []
        for k in kinds:
            assert dict(r.items(k)) == {content_key(k, o): o for o in objs}
    # one tile: swh-mosaic's delete rewrites the right CRC-32 there, so the bytes agree
    ours, theirs = tmp_path / "ours.mosaic", tmp_path / "theirs.mosaic"
    shutil.copy(made, ours)
    shutil.copy(made, theirs)
    victims = objs[:5]
    delete(ours, [content_key("sha256", o) for o in victims])
    with sm.MosaicUpdater(theirs) as u:
        for o in victims:
            u.delete([(getattr(sm.IdxDescription, REF_KIND[k]), content_key(k, o))
                      for k in kinds])
    assert ours.read_bytes() == theirs.read_bytes()
    r = sm.MosaicReader(str(ours), sm.IdxDescription.SHA256FMPHGO)
    assert len(r) == len(objs) - 5
    for o in objs:
        if o in victims:
            with pytest.raises(KeyError):
                r.lookup(content_key("sha256", o))
        else:
            assert r.lookup(content_key("sha256", o)) == o


@pytest.mark.interop
def test_reference_delete_leaves_a_stale_tile_crc(tmp_path: Path) -> None:
    """swh-mosaic 0.6.1's MosaicUpdater.delete writes the CRC-32 of the tile after the
    object's (find_object_tile stops one tile late); ours writes the object's own."""
    sm = _ref()
    objs = list(set(objects(60, seed=5)))
    made = tmp_path / "ref.mosaic"
    with sm.MosaicCreator(made, [sm.IdxDescription.SHA256FMPHGO], tile_threshold=300) as c:
        for o in objs:
            c.add([content_key("sha256", o)], o)
    ours, theirs = tmp_path / "ours.mosaic", tmp_path / "theirs.mosaic"
    shutil.copy(made, ours)
    shutil.copy(made, theirs)
    victim = objs[10]
    delete(ours, [content_key("sha256", victim)])
    with sm.MosaicUpdater(theirs) as u:
        u.delete([(sm.IdxDescription.SHA256FMPHGO, content_key("sha256", victim))])
    with shardkit.open(ours) as r:
        assert r.verify() == []
    with shardkit.open(theirs) as r:
        assert [p.check for p in r.verify()] == ["crc32"]


# -- CLI ----------------------------------------------------------------------------------------


def test_cli_create_get_delete(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = []
    for i, text in enumerate([b"alpha\n", b"beta\n", b"alpha\n", b""]):
        f = tmp_path / f"in{i}"
        f.write_bytes(text)
        files.append(str(f))
    out = tmp_path / "o.mosaic"
    assert main(["create", "--format", "mosaic", str(out), *files, "--index", "sha1_git",
                 "--index", "sha256", "--zstd", "3", "--tile-threshold", "100",
                 "--comment", "made by a test", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["objects"] == 3 and doc["files"] == 4 and doc["compression"] == "zstd"
    with shardkit.open(out) as r:
        assert r.index_names == ["sha1_git", "sha256"]
        assert r.meta.comments == ["made by a test"]
        assert r.verify() == []
    key = content_key("sha1_git", b"beta\n").hex()
    assert main(["get", str(out), key, "-o", str(tmp_path / "got")]) == 0
    assert (tmp_path / "got").read_bytes() == b"beta\n"
    assert main(["delete", str(out), key, "--yes"]) == 0
    capsys.readouterr()
    assert main(["get", str(out), key]) == 1
    assert main(["delete", str(out), key, "--yes"]) == 1
    assert main(["delete", str(out), key, "--yes", "--ignore-missing"]) == 0
    assert main(["verify", str(out)]) == 0
    assert main(["create", "--format", "mosaic", str(tmp_path / "x.mosaic"), files[0],
                 "--codec", "zlib"]) == 2
    assert "--codec not supported for mosaic" in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "x.mosaic")


@pytest.mark.interop
def test_reference_duplicates_are_not_lost_objects(tmp_path: Path) -> None:
    """swh-mosaic stores content added twice twice and indexes the last copy."""
    sm = _ref()
    objs = [b"one", b"two", b"three", b"two"]
    made = tmp_path / "dups.mosaic"
    with sm.MosaicCreator(made, [sm.IdxDescription.SHA256FMPHGO]) as c:
        for o in objs:
            c.add([content_key("sha256", o)], o)
    with shardkit.open(made) as r:
        assert len(r) == 4 and sorted(r.values()) == sorted(objs)
        assert r[content_key("sha256", b"two")] == b"two"
        assert r.verify() == []  # the first b"two" has the hash of an indexed object
        assert [p.check for p in r.verify(content_hash=False)] == ["orphan"]
