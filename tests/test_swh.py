"""SWH read shards: the reader against the reference generator's manifest of real files."""

from __future__ import annotations

import hashlib
import itertools
import struct

import numpy as np
import pytest
from conftest import SWH_SAMPLES, swh_path
from swh_impl import swh_impl  # noqa: F401 - the fixture, used by pytestmark

import shardkit
from shardkit.formats.swh import SLOT_SIZE, TOMBSTONE, SwhShard
from shardkit.formats.swh.reader import native_available

pytestmark = pytest.mark.usefixtures("swh_impl")


@pytest.fixture(params=SWH_SAMPLES)
def sample(request, swh_manifest):
    name = request.param
    with shardkit.open(swh_path(name)) as shard:
        yield name, shard, swh_manifest[f"{name}.shard"]


def test_file_is_the_manifest_file(sample):
    name, _, expected = sample
    data = swh_path(name).read_bytes()
    assert len(data) == expected["file_size"]
    assert hashlib.sha256(data).hexdigest() == expected["file_sha256"]


def test_header_and_counts(sample):
    _, shard, expected = sample
    assert isinstance(shard, SwhShard)
    h = expected["header"]
    assert shard.header.version == h["version"]
    assert shard.header.objects_count == h["objects_count"]
    assert shard.header.objects_position == h["objects_position"]
    assert shard.header.objects_size == h["objects_size"]
    assert shard.header.index_position == h["index_position"]
    assert shard.header.index_size == h["index_size"]
    assert shard.header.hash_position == h["hash_position"]
    assert shard.num_slots == expected["index_entries"]
    assert len(shard) == expected["live_count"]
    assert shard.deleted_count == expected["deleted_count"]
    assert shard.hash_function.dump_size == expected["hash_section_size"]


def test_every_value_matches_manifest(sample):
    _, shard, expected = sample
    total = 0
    for key_hex, obj in expected["objects"].items():
        value = shard[bytes.fromhex(key_hex)]
        assert len(value) == obj["length"]
        assert hashlib.sha256(value).hexdigest() == obj["sha256"]
        total += len(value)
    assert total == expected["total_live_value_bytes"]


def test_aggregate_hash_through_items(sample):
    _, shard, expected = sample
    agg = hashlib.sha256()
    for key, value in sorted(shard.items()):
        agg.update(key + struct.pack(">Q", len(value)) + value)
    assert agg.hexdigest() == expected["aggregate_sha256"]


def test_keys_are_the_live_keys(sample):
    _, shard, expected = sample
    keys = [k.hex() for k in shard.keys()]
    assert len(keys) == len(set(keys))
    assert set(keys) == set(expected["objects"])
    first = expected["write_order_keys_first5"]
    live_first = [k for k in first if k not in expected["deleted_keys"]]
    assert all(bytes.fromhex(k) in shard for k in live_first)


def test_deleted_keys(sample):
    _, shard, expected = sample
    deleted = [bytes.fromhex(k) for k in expected["deleted_keys"]]
    for key in deleted:
        assert key not in shard
        with pytest.raises(shardkit.DeletedEntryError, match="deleted"):
            shard[key]
        assert shard.get(key) is None
        assert shard.get(key, b"?") == b"?"
    live = [bytes.fromhex(k) for k in expected["objects"]]
    assert sorted(shard.deleted_keys(deleted + live)) == sorted(deleted)
    assert len(shard.tombstones()) == len(deleted)
    assert shard.deleted_keys() == [bytes(32)] * len(deleted)
    assert {t.slot for t in shard.tombstones()} == {shard.slot_of(k) for k in deleted}


def test_missing_key(sample):
    _, shard, _ = sample
    key = hashlib.sha256(b"certainly not in any sample").digest()
    assert key not in shard
    with pytest.raises(shardkit.EntryNotFoundError) as info:
        shard[key]
    assert not isinstance(info.value, shardkit.DeletedEntryError)
    with pytest.raises(shardkit.InvalidKeyError, match="32 bytes"):
        shard[b"short"]
    with pytest.raises(shardkit.InvalidKeyError, match="64 hex digits"):
        shard[12]
    with pytest.raises(shardkit.InvalidKeyError, match="64 hex digits"):
        shard["zz" * 32]
    assert b"short" not in shard
    assert "text" not in shard
    assert 12 not in shard
    with pytest.raises(shardkit.EntryNotFoundError):
        shard[key.hex()]
    assert shard.get(key.hex(), "absent") == "absent"


def test_hex_text_keys_everywhere(sample):
    _, shard, expected = sample
    hexkeys = list(expected["objects"])
    values = [shard[bytes.fromhex(k)] for k in hexkeys]
    assert [shard[k] for k in hexkeys] == values
    assert [shard[k.upper()] for k in hexkeys] == values
    assert [shard[bytearray.fromhex(k)] for k in hexkeys] == values
    assert all(k in shard for k in hexkeys)
    assert shard.get_many(hexkeys) == values
    assert [shard.slot_of(k) for k in hexkeys] == [shard.slot_of(bytes.fromhex(k))
                                                   for k in hexkeys]
    assert shard.get_many(["nope", *hexkeys], default=None) == [None, *values]
    with pytest.raises(shardkit.InvalidKeyError):
        shard.get_many(["nope"])


def test_get_many_equals_get(sample):
    _, shard, expected = sample
    keys = [bytes.fromhex(k) for k in expected["objects"]]
    assert shard.get_many(keys) == [shard[k] for k in keys]
    missing = hashlib.sha256(b"missing").digest()
    assert shard.get_many([*keys[:2], missing], default=b"?")[-1] == b"?"
    with pytest.raises(shardkit.EntryNotFoundError):
        shard.get_many([missing])


def test_verify_clean(sample):
    _, shard, _ = sample
    assert shard.verify() == []
    assert shard.verify(content_hash="sha256") == []


def test_fast_index_path_equals_kaitai_path(sample):
    _, shard, _ = sample
    entries = shard._ks.index.entries
    arr = shard._index_array()
    assert len(entries) == len(arr) == shard.num_slots
    for i, e in enumerate(entries):
        assert e.key == arr["key"][i].tobytes()
        assert e.ofs_object == int(arr["ofs"][i])
        assert e.is_tombstone == (int(arr["ofs"][i]) == TOMBSTONE)
        assert e.is_empty == (int(arr["ofs"][i]) == 0)
    live = {e.slot: e for e in shard.iter_entries(with_sizes=True)}
    for i, e in enumerate(entries):
        if e.is_empty or e.is_tombstone:
            assert i not in live
        else:
            assert live[i].key == e.key
            assert live[i].offset == e.ofs_object
            assert live[i].size == e.object.len_data
            assert shard[e.key] == e.object.data


def test_kaitai_hash_function_fields(sample):
    _, shard, _ = sample
    hf = shard._ks.hash_function
    chd = shard.hash_function
    assert hf.algo_name == "chd_ph"
    assert hf.hash_state.hash_name == "jenkins"
    assert (hf.num_keys, hf.num_buckets, hf.hash_state.seed) == (chd.n, chd.nbuckets, chd.seed)
    assert hf.compressed_seq.num_values == chd.nbuckets


def test_sections_tile_the_file(sample):
    _, shard, _ = sample
    sections = shard.sections()
    assert sections[0].start == 0
    assert sections[-1].end == shard.source.size
    for a, b in itertools.pairwise(sections):
        assert a.end == b.start


def test_to_dict(sample):
    _, shard, expected = sample
    tree = shard.to_dict()
    assert tree["format"] == "swh"
    assert tree["live"] == expected["live_count"]
    sizes = {e["key"]: e["size"] for e in tree["entries"]}
    assert sizes == {k: v["length"] for k, v in expected["objects"].items()}
    assert len(tree["tombstones"]) == expected["deleted_count"]


def test_numpy_slots_equal_python_slots(sample):
    _, shard, expected = sample
    keys = [bytes.fromhex(k) for k in expected["objects"]]
    rng = np.random.default_rng(7)
    keys += [rng.bytes(32) for _ in range(500)]
    chd = shard.hash_function
    assert chd.slots(keys).tolist() == [chd.slot(k) for k in keys]


def test_open_reads_only_the_header():
    src = shardkit.CountingSource(shardkit.FileSource(swh_path("medium")))
    with shardkit.open(src) as shard:
        assert all(end <= 512 for _, end in src.stats.ranges)
        assert src.stats.bytes_read <= 512
        before = len(src.stats.ranges)
        key = next(iter(shard.keys()))  # scans the index
        src.stats.ranges.clear()
        assert shard[key]
        h = shard.header
        slot = shard.slot_of(key)
        touched = src.stats.ranges
        # hash function (once, one read), one 40-byte index entry, then the object (one read
        # with read-ahead: its size field and its value)
        entry = h.index_position + slot * SLOT_SIZE
        assert touched[0] == (h.hash_position, src.size)
        assert touched[1] == (entry, entry + SLOT_SIZE)
        assert len(touched) == 3
        assert touched[2][0] < h.index_position
        assert before > 0


def test_open_bytes_and_fsspec_sources(tmp_path):
    data = swh_path("tiny").read_bytes()
    with shardkit.open(data) as a, shardkit.open(swh_path("tiny").resolve().as_uri()) as b:
        assert sorted(a.keys()) == sorted(b.keys())
        for k in a.keys():
            assert a[k] == b[k]
    import fsspec

    fs = fsspec.filesystem("memory")
    fs.pipe("/shardkit-test/tiny.shard", data)
    with shardkit.open("memory:///shardkit-test/tiny.shard") as c:
        assert c.verify() == []
        assert len(c) == 3


@pytest.mark.parametrize("size", [2**64 - 1, 2**64 - 8 - 0x200, 2**63, 72])
def test_corrupt_object_size_never_returns_bytes(size):
    """The vectorised get_many and the mapped get agree with the ranged path on bad sizes."""
    data = bytearray(swh_path("tiny").read_bytes())
    struct.pack_into(">Q", data, 0x200, size)  # the first object's size field ("hello world")
    key = bytes.fromhex("a948904f2f0f479b8f8197694b30184b0d2ed1c1cd2a1ec0fb85d299a192a447")
    for source in (shardkit.BytesSource(bytes(data)),
                   shardkit.CountingSource(shardkit.BytesSource(bytes(data)))):
        with shardkit.open(source) as shard:
            with pytest.raises(shardkit.LayoutError) as info:
                shard[key]
            assert info.value.offset == 0x200
            with pytest.raises(shardkit.LayoutError):
                shard.get_many([key])
            assert {p.check for p in shard.verify()} & {"object_bounds"}


def test_get_many_mapped_equals_ranged(swh_manifest):
    keys = [bytes.fromhex(k) for k in swh_manifest["deleted.shard"]["objects"]]
    keys += [bytes.fromhex(k) for k in swh_manifest["deleted.shard"]["deleted_keys"]]
    keys.append(bytes(32))
    ranged = shardkit.CountingSource(shardkit.FileSource(swh_path("deleted")))
    with shardkit.open(swh_path("deleted")) as mapped, shardkit.open(ranged) as slow:
        assert mapped._mem is not None and slow._mem is None
        assert mapped.get_many(keys, default=None) == slow.get_many(keys, default=None)
        assert mapped.get_many(keys, default=None)[-21:] == [None] * 21


def test_lookup_paths_agree(swh_manifest):
    """Mapped file (mmap slices), bytes, bytearray (view slices) and ranged reads agree."""
    data = swh_path("deleted").read_bytes()
    keys = [bytes.fromhex(k) for k in swh_manifest["deleted.shard"]["objects"]]
    sources = [shardkit.FileSource(swh_path("deleted")), shardkit.BytesSource(data),
               shardkit.BytesSource(bytearray(data)),
               shardkit.CountingSource(shardkit.BytesSource(data))]
    results = []
    for src in sources:
        with shardkit.open(src) as shard:
            values = [shard[k] for k in keys]
            assert all(type(v) is bytes for v in values)
            assert shard.get_many(keys) == values
            results.append(values)
    assert all(r == results[0] for r in results)


def test_first_lookup_decodes_one_select_block(tmp_path):
    """Opening and one lookup touch one block of 128 buckets, whatever the shard's size."""
    from shardkit.writers.swh import write_swh

    values = {hashlib.sha256(b"%d" % i).digest(): b"%d" % i for i in range(20000)}
    write_swh(tmp_path / "s.shard", values.items())
    with shardkit.open(tmp_path / "s.shard") as shard:
        assert "_lookup" not in shard.__dict__ and "hash_function" not in shard.__dict__
        key = next(iter(values))
        assert shard[key] == values[key]
        assert shard.layout.samples > 30
        # the Python path decodes the key's block; the C path decodes none (it selects in place)
        assert len(shard._lookup._blocks) == (0 if native_available() else 1)
        assert "hash_function" not in shard.__dict__  # the whole sequence was not decoded
        # the lazily decoded displacements are the fully decoded ones
        assert [shard._lookup.displacement(g) for g in range(shard.layout.nbuckets)] == list(
            shard.hash_function.displacements)
