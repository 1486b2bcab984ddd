"""``compressed_segmentation`` chunks: the decoder on hand-built and hostile bytes, the committed
tensorstore sample through ``read_chunk``/``cutout``/``volume``/``shardkit cutout``, and
(interop) voxel-for-voxel agreement with tensorstore's own reads."""

from __future__ import annotations

import hashlib
import json
import shutil
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from kaitaistruct import BytesIO, KaitaiStream
from ng_cseg_samples import DISTINCT, SAMPLE, labels, sample_volume, write_tensorstore
from shardkit.generated.ng_compressed_segmentation import NgCompressedSegmentation

import shardkit
from shardkit.cli import main
from shardkit.errors import LayoutError, UnsupportedVersionError
from shardkit.formats.neuroglancer import SpecError, decode_compressed_segmentation
from shardkit.writers.neuroglancer import build_shards

DATA = Path(__file__).parent / "data" / "neuroglancer"
SAMPLE_DIR = DATA / SAMPLE["name"]
MANIFEST = json.loads((DATA / f"{SAMPLE['name']}.manifest.json").read_text())
KEY = "8_8_40"


# -- hand-built chunks ----------------------------------------------------------------------------

def hand_built(dtype: str = "uint32") -> tuple[bytes, np.ndarray]:
    """A one-channel chunk of x 3, y 2, z 2 voxels in 2x2x2 blocks (2 blocks, the second
    clipped to x = 2 only), as the README lays it out, and its decoded ``(c, z, y, x)`` array.

    Words (from the chunk's start): 0 channel offset (1); channel words 0-3 block headers;
    4 block 0's 1-bit values; 5.. block 0's table (2 labels); then block 1's table (1 label,
    0 bits, values offset pointing at its table: no words are read).
    """
    big = dtype == "uint64"
    label_words = 2 if big else 1
    table0 = [10, (1 << 40) + 20] if big else [10, 20]
    table1 = [(7 << 33) + 99] if big else [99]
    bits = 0b10110010  # voxel i of block 0 (x fastest over 2x2x2) has index bit i
    ofs_table0 = 5
    ofs_table1 = ofs_table0 + 2 * label_words
    channel = [ofs_table0 | (1 << 24), 4, ofs_table1 | (0 << 24), ofs_table1, bits]
    for value in table0 + table1:
        channel += [value & 0xFFFFFFFF] + ([value >> 32] if big else [])
    data = struct.pack(f"<{1 + len(channel)}I", 1, *channel)
    want = np.zeros((1, 2, 2, 3), dtype=dtype)
    for z in range(2):
        for y in range(2):
            for x in range(2):
                want[0, z, y, x] = table0[(bits >> (x + 2 * (y + 2 * z))) & 1]
            want[0, z, y, 2] = table1[0]
    return data, want


@pytest.mark.parametrize("dtype", ["uint32", "uint64"])
def test_hand_built_chunk(dtype: str) -> None:
    data, want = hand_built(dtype)
    got = decode_compressed_segmentation(data, (1, 2, 2, 3), (2, 2, 2), dtype)
    assert got.dtype == np.dtype(dtype) and got.flags.c_contiguous
    assert np.array_equal(got, want)
    assert got[0, 1, 1, 1] == (20 if dtype == "uint32" else (1 << 40) + 20)  # bit 7 set
    # the schema's Web IDE view infers both counts and reads the same headers
    root = NgCompressedSegmentation(KaitaiStream(BytesIO(data)))
    assert root.num_channels == 1 and root.channel_offsets.ofs_channels == [1]
    blocks = root.channels[0].data.blocks
    assert [(b.ofs_lookup_table, b.encoded_bits, b.ofs_encoded_values) for b in blocks] == [
        (5, 1, 4), (5 + 2 * (2 if dtype == "uint64" else 1), 0, 5 + 2 * (2 if dtype == "uint64"
                                                                          else 1))]


def _words(data: bytes) -> list[int]:
    return list(struct.unpack(f"<{len(data) // 4}I", data))


def _pack(words: list[int]) -> bytes:
    return struct.pack(f"<{len(words)}I", *words)


def _set(data: bytes, word: int, value: int) -> bytes:
    w = _words(data)
    w[word] = value
    return _pack(w)


HOSTILE = [
    # what is done to the hand-built uint32 chunk; the field (after /chunks/9); byte offset
    ("truncated in the headers", lambda d: d[:12], "/channels/0/block_headers", 12),
    ("truncated in block 1's table", lambda d: d[:-4], "/channels/0/blocks/1/ofs_lookup_table",
     12),
    ("not whole words", lambda d: d + b"\0", "", 36),
    ("no channel offset", lambda d: b"", "/ofs_channels/0", 0),
    ("channel offset past the end", lambda d: _set(d, 0, 1000), "/ofs_channels/0", 0),
    ("encoded values past the end", lambda d: _set(d, 2, 1000),
     "/channels/0/blocks/0/ofs_encoded_values", 8),
    ("lookup table past the end", lambda d: _set(d, 1, (1 << 24) | 9000),
     "/channels/0/blocks/0/ofs_lookup_table", 4),
    ("bad bit width", lambda d: _set(d, 3, (3 << 24) | 7), "/channels/0/blocks/1/encoded_bits",
     15),
    ("bit width over 32", lambda d: _set(d, 1, (64 << 24) | 5),
     "/channels/0/blocks/0/encoded_bits", 7),
    # block 0's table moved to block 1's: one value before the end, and index 1 is used
    ("table index past the table", lambda d: _set(d, 1, (1 << 24) | 7),
     "/channels/0/blocks/0/encoded_values", 20),
]


@pytest.mark.parametrize(("what", "mutate", "field", "offset"), HOSTILE,
                         ids=[h[0] for h in HOSTILE])
def test_hostile_chunks(what: str, mutate: Any, field: str, offset: int) -> None:
    data, _ = hand_built()
    bad = mutate(data)
    with pytest.raises(LayoutError) as info:
        decode_compressed_segmentation(bad, (1, 2, 2, 3), (2, 2, 2), "uint32", field="/chunks/9")
    assert info.value.field == "/chunks/9" + field
    assert info.value.offset == offset
    assert str(info.value).endswith(f"(at byte {offset}, field /chunks/9{field})")


def test_padding_indices_are_not_checked() -> None:
    """Voxels of an edge block outside the chunk may index anything (the encoder zeroes them,
    but the format lets any value stand there): only in-chunk voxels are looked up."""
    data, _ = hand_built()
    # chunk x 1 instead of 3: only block 0, voxels x = 0; set the x = 1 bits to index 1 and
    # move block 0's table to its last value, so index 1 would be past it
    w = _words(data)
    w[1] = (1 << 24) | 6  # table at channel word 6 (20), the last one once cut to 8 words
    w[5] = 0b10101010  # every x = 1 voxel has index 1, every x = 0 voxel index 0
    got = decode_compressed_segmentation(_pack(w[:8]), (1, 2, 2, 1), (2, 2, 2), "uint32")
    assert np.array_equal(got, np.full((1, 2, 2, 1), 20, np.uint32))
    with pytest.raises(LayoutError, match="table index 1"):
        decode_compressed_segmentation(_pack(w[:8]), (1, 2, 2, 2), (2, 2, 2), "uint32")


def test_decoder_arguments() -> None:
    data, _ = hand_built()
    with pytest.raises(ValueError, match="uint32 or uint64"):
        decode_compressed_segmentation(data, (1, 2, 2, 3), (2, 2, 2), "uint16")
    with pytest.raises(ValueError, match="positive"):
        decode_compressed_segmentation(data, (1, 2, 2, 3), (0, 2, 2), "uint32")
    with pytest.raises(ValueError, match="pads to 1152921504606846976 voxels"):
        decode_compressed_segmentation(data, (1, 2, 2, 3), (2**20, 2**20, 2**20), "uint32")
    with pytest.raises(ValueError, match="more than 4"):
        decode_compressed_segmentation(data, (1, 2, 2, 3), (2, 2, 2), "uint32",
                                       max_padded_voxels=4)


def _sample_chunks() -> dict[int, bytes]:
    with shardkit.open(SAMPLE_DIR) as ds:
        return dict(ds.scales[KEY].items())


def test_truncations_and_flips_of_real_chunks_are_layout_errors() -> None:
    """Every cut of a real chunk, and many random word changes, either decode or raise
    LayoutError naming a field under the chunk: never IndexError, ValueError or the like."""
    rng = np.random.default_rng(5)
    with shardkit.open(SAMPLE_DIR) as ds:
        s = ds.scales[KEY]
        for code, data in s.items():
            shape = ds.chunk_shape(KEY, s.position(code))
            for cut in range(0, len(data), 4):
                with pytest.raises(LayoutError) as info:
                    decode_compressed_segmentation(data[:cut], shape, s.block_size, ds.dtype,
                                                   field=f"/chunks/{code}")
                assert info.value.field.startswith(f"/chunks/{code}/")
                assert info.value.offset is not None and 0 <= info.value.offset <= cut
            words = np.frombuffer(data, "<u4").copy()
            for _ in range(60):
                bad = words.copy()
                i = int(rng.integers(0, len(bad)))
                bad[i] = rng.choice([0, 1, 0xFFFFFFFF, int(rng.integers(0, 2**32)),
                                     int(bad[i]) ^ (1 << int(rng.integers(0, 32)))])
                try:
                    got = decode_compressed_segmentation(bad.tobytes(), shape, s.block_size,
                                                         ds.dtype)
                except LayoutError as exc:
                    assert exc.field and exc.offset is not None
                    assert 0 <= exc.offset <= len(data)
                else:
                    assert got.shape == shape


# -- the committed sample -------------------------------------------------------------------------

def test_sample_files_are_the_manifest() -> None:
    for name, meta in MANIFEST["files"].items():
        blob = (SAMPLE_DIR / name).read_bytes()
        assert len(blob) == meta["size"] and hashlib.sha256(blob).hexdigest() == meta["sha256"]
    vol = sample_volume()  # the generator's volume, made again (numpy only)
    assert hashlib.sha256(vol.tobytes()).hexdigest() == MANIFEST["volume_sha256"]


def test_sample_cutout_volume_and_read_chunk() -> None:
    vol = sample_volume()
    lo = tuple(SAMPLE["voxel_offset"])
    with shardkit.open(SAMPLE_DIR) as ds:
        s = ds.scales[KEY]
        assert s.encoding == "compressed_segmentation" and s.block_size == (8, 4, 4)
        hi = tuple(a + n for a, n in zip(lo, SAMPLE["size"], strict=True))
        whole = ds.cutout(KEY, (lo, hi))
        assert whole.dtype == np.dtype("<u8") and whole.shape == (21, 18, 9, 2)
        assert hashlib.sha256(np.ascontiguousarray(whole).tobytes()).hexdigest() == \
            MANIFEST["volume_sha256"]
        # boxes across chunk edges, inside the clipped edge chunks, one voxel
        for a, b in [((3, 2, 1), (20, 17, 9)), ((16, 16, 8), (21, 18, 9)), ((7, 9, 4), (8, 10, 5)),
                     ((0, 15, 0), (21, 17, 9))]:
            box = (tuple(x + o for x, o in zip(a, lo, strict=True)),
                   tuple(x + o for x, o in zip(b, lo, strict=True)))
            want = vol[a[0]:b[0], a[1]:b[1], a[2]:b[2]]
            assert np.array_equal(ds.cutout(KEY, box), want)
            assert np.array_equal(ds.cutout(KEY, box, order="czyx"), want.transpose(3, 2, 1, 0))
        view = ds.volume(KEY)
        assert np.array_equal(view[lo[0] + 4:lo[0] + 19, :, lo[2] + 8], vol[4:19, :, 8:9])
        for code in s.keys():
            pos = s.position(code)
            (x0, y0, z0), (x1, y1, z1) = s.chunk_box(pos)
            chunk = ds.read_chunk(KEY, pos)
            assert chunk.shape == ds.chunk_shape(KEY, pos)
            assert np.array_equal(chunk, vol[x0:x1, y0:y1, z0:z1].transpose(3, 2, 1, 0))
            assert np.array_equal(ds.read_chunk(KEY, pos, order="xyzc"), vol[x0:x1, y0:y1, z0:z1])


def test_remote_cutout_of_the_sample(range_server: Any) -> None:
    """Over HTTP: the same voxels, ranged reads only, coalesced per shard."""
    srv = range_server(DATA)
    ds = shardkit.formats.neuroglancer.open_dataset(srv.url(SAMPLE["name"]))
    srv.reset()
    got = ds.cutout(KEY, ds.bounds(KEY))
    assert hashlib.sha256(np.ascontiguousarray(got).tobytes()).hexdigest() == \
        MANIFEST["volume_sha256"]
    # 2 x 2 x 2 chunks in 2 shards: per shard its index entries, minishard indices and data
    assert 0 < srv.count() <= 2 * 3 and srv.count("HEAD") == 0
    ds.close()


def _bit_widths(ds: Any, key: str) -> set[int]:
    """Every block's encoded_bits in a scale, read with the generated parser."""
    s = ds.scales[key]
    seen: set[int] = set()
    for code, data in s.items():
        c, dz, dy, dx = ds.chunk_shape(key, s.position(code))
        bx, by, bz = s.block_size
        n = (-(-dx // bx)) * (-(-dy // by)) * (-(-dz // bz))
        offsets = NgCompressedSegmentation.ChannelOffsets(c, KaitaiStream(BytesIO(data)))
        for ofs in offsets.ofs_channels:
            channel = NgCompressedSegmentation.Channel(n, KaitaiStream(BytesIO(data[4 * ofs:])))
            seen |= {b.encoded_bits for b in channel.blocks}
    return seen


def test_sample_uses_several_bit_widths() -> None:
    with shardkit.open(SAMPLE_DIR) as ds:
        assert _bit_widths(ds, KEY) == {0, 1, 2, 4, 8}


def test_corrupt_chunk_through_the_dataset(tmp_path: Path) -> None:
    chunks = _sample_chunks()
    code = min(chunks)
    words = np.frombuffer(chunks[code], "<u4").copy()
    words[words[0] + 2 * 3] = (words[words[0] + 2 * 3] & 0xFFFFFF) | (5 << 24)  # block 3
    chunks[code] = words.tobytes()
    root = tmp_path / "seg"
    shutil.copytree(SAMPLE_DIR, root)
    for name, blob in build_shards(chunks, SAMPLE["sharding"]).items():
        (root / KEY / name).write_bytes(blob)
    with shardkit.open(root) as ds:
        pos = ds.scales[KEY].position(code)
        for read in (lambda: ds.read_chunk(KEY, pos),
                     lambda: ds.cutout(KEY, ds.bounds(KEY))):
            with pytest.raises(LayoutError) as info:
                read()
            assert info.value.field == f"/chunks/{code}/channels/0/blocks/3/encoded_bits"
            assert info.value.offset == 4 * (2 + 2 * 3) + 3
            assert f"chunk {code} at {pos} of scale {KEY}: block 3: encoded_bits 5" in \
                str(info.value)
    out = tmp_path / "c.npy"
    code_, _, err = _cli(["cutout", str(root), "--scale", KEY, "--bbox",
                          "5,-3,100,26,15,109", "-o", str(out)])
    assert code_ == 2 and err.startswith(f"shardkit: error: {root}: chunk {code} at ")
    assert err.count("\n") == 1 and "field /chunks/" in err
    assert not out.exists()


def _with_info(tmp_path: Path, **changes: Any) -> Path:
    root = tmp_path / "seg"
    shutil.copytree(SAMPLE_DIR, root)
    info = json.loads((root / "info").read_text())
    for name, value in changes.items():
        if name == "data_type":
            info["data_type"] = value
        elif value is None:
            info["scales"][0].pop(name)
        else:
            info["scales"][0][name] = value
    (root / "info").write_text(json.dumps(info))
    return root


def test_bad_info_for_the_encoding(tmp_path: Path) -> None:
    root = _with_info(tmp_path, compressed_segmentation_block_size=None)
    with shardkit.open(root) as ds, pytest.raises(SpecError) as info:
        ds.cutout(KEY, ds.bounds(KEY))
    assert info.value.field == "/scales/0/compressed_segmentation_block_size"
    shutil.rmtree(root)
    root = _with_info(tmp_path, compressed_segmentation_block_size=[8, 0, 4])
    with shardkit.open(root) as ds, pytest.raises(SpecError, match=">= 1"):
        ds.read_chunk(KEY, (0, 0, 0))
    shutil.rmtree(root)
    root = _with_info(tmp_path, compressed_segmentation_block_size=[2**20, 2**20, 2**20])
    with shardkit.open(root) as ds, pytest.raises(SpecError, match="max_decoded_size") as info:
        ds.cutout(KEY, ds.bounds(KEY))  # padded to 2**60 voxels: refused before allocating
    assert info.value.field == "/scales/0/compressed_segmentation_block_size"
    shutil.rmtree(root)
    root = _with_info(tmp_path, data_type="int64")
    with shardkit.open(root) as ds, pytest.raises(SpecError, match="uint32 or uint64") as info:
        ds.read_chunk(KEY, (0, 0, 0))
    assert info.value.field == "/data_type"
    shutil.rmtree(root)
    root = _with_info(tmp_path, encoding="png")
    with shardkit.open(root) as ds:
        with pytest.raises(UnsupportedVersionError, match="raw and compressed_segmentation "
                                                          "chunks; its encoding is 'png'"):
            ds.cutout(KEY, ds.bounds(KEY))
        chunk = ds.read_chunk(KEY, (0, 0, 0))
        assert chunk.encoding == "png" and chunk.data == ds[ds.scales[KEY].morton_code((0, 0, 0))]


def _cli(argv: list[str]) -> tuple[int, str, str]:
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def test_cli_cutout_of_the_sample(tmp_path: Path) -> None:
    out = tmp_path / "seg.npy"
    code, stdout, err = _cli(["cutout", str(SAMPLE_DIR), "--scale", KEY, "--bbox",
                              "6,-1,101,26,15,109", "-o", str(out), "--json"])
    assert code == 0, err
    want = sample_volume()[1:21, 2:18, 1:9]
    got = np.load(out)
    assert got.dtype == np.dtype("<u8") and np.array_equal(got, want)
    assert json.loads(stdout)["shape"] == [20, 16, 8, 2]


# -- interop: tensorstore writes, shardkit and tensorstore read -----------------------------------

TS_CASES = [
    # dtype, channels, size, chunk, block, distinct labels per block, voxel offset, sharding
    ("uint32", 1, [37, 29, 21], [16, 16, 8], [8, 8, 8], DISTINCT[:6], [0, 0, 0], None),
    ("uint64", 2, [37, 29, 21], [16, 16, 8], [8, 8, 8], DISTINCT[:6], [-5, 7, 100], None),
    ("uint64", 1, [45, 23, 11], [20, 12, 6], [4, 3, 2], (1, 2, 3, 5, 17), [0, 0, 0], None),
    ("uint32", 2, [19, 18, 17], [19, 18, 17], [3, 5, 7], (1, 3, 17, 2, 5), [1, 2, 3], None),
    # one block of 64 x 64 x 32 per chunk; the two full blocks get 70000 and 300 labels (32
    # and 16 bits), the clipped ones the rest (0 to 8 bits)
    ("uint32", 1, [130, 70, 40], [64, 64, 32], [64, 64, 32], (70000, 300, 1, 2, 3, 5, 17),
     [0, 0, 0],
     {"minishard_bits": 0, "shard_bits": 0}),
    ("uint64", 1, [130, 70, 40], [64, 64, 32], [64, 64, 32], DISTINCT[::-1], [0, 0, 0],
     {"hash": "murmurhash3_x86_128", "data_encoding": "gzip"}),
]


@pytest.mark.interop
@pytest.mark.parametrize("case", TS_CASES, ids=[f"{c[0]}x{c[1]}-{c[2]}-{c[3]}-{c[4]}"
                                                for c in TS_CASES])
def test_cutout_equals_tensorstore(tmp_path: Path, case: tuple[Any, ...]) -> None:
    pytest.importorskip("tensorstore")
    dtype, channels, size, chunk, block, distinct, offset, spec_changes = case
    spec = {**SAMPLE["sharding"], "minishard_bits": 2, "shard_bits": 2,
            "minishard_index_encoding": "gzip", **(spec_changes or {})}
    vol = labels(size, block, channels, dtype, sum(size), distinct)
    store = write_tensorstore(tmp_path, vol, chunk, block, spec, offset)
    with shardkit.open(tmp_path) as ds:
        key = next(iter(ds.scales))
        lo, hi = ds.bounds(key)
        assert tuple(store.domain.inclusive_min[:3]) == lo
        boxes = [(lo, hi),
                 (tuple(a + 1 for a in lo), tuple(b - 2 for b in hi)),
                 (tuple(b - 3 for b in hi), hi),  # the clipped corner
                 (tuple(a + n // 2 for a, n in zip(lo, size, strict=True)),
                  tuple(a + n // 2 + 1 for a, n in zip(lo, size, strict=True)))]
        for a, b in boxes:
            want = np.asarray(store[a[0]:b[0], a[1]:b[1], a[2]:b[2]].read().result())
            got = ds.cutout(key, (a, b))
            assert got.dtype == want.dtype and got.shape == want.shape
            assert np.array_equal(got, want), (a, b)
        assert np.array_equal(ds.volume(key)[:, :, :], vol)
        widths = _bit_widths(ds, key)
    assert {0, 1, 2} <= widths <= {0, 1, 2, 4, 8, 16, 32}
    if block == [64, 64, 32]:
        assert widths == {0, 1, 2, 4, 8, 16, 32}  # every width the format has, 32 included


@pytest.mark.interop
def test_cli_cutout_equals_tensorstore(tmp_path: Path) -> None:
    pytest.importorskip("tensorstore")
    vol = labels([33, 20, 10], [8, 8, 8], 1, "uint64", 3, DISTINCT[:6])
    store = write_tensorstore(tmp_path / "seg", vol, [16, 16, 8], [8, 8, 8],
                              voxel_offset=[10, 0, -4])
    out = tmp_path / "c.npy"
    code, _, err = _cli(["cutout", str(tmp_path / "seg"), "--scale", "0", "--bbox",
                         "12,3,-4,43,20,6", "-o", str(out)])
    assert code == 0, err
    want = np.asarray(store[12:43, 3:20, -4:6].read().result())
    assert np.array_equal(np.load(out), want)


@pytest.mark.interop
def test_committed_sample_is_what_tensorstore_writes(tmp_path: Path) -> None:
    pytest.importorskip("tensorstore")
    import contextlib
    import io

    from ng_cseg_samples import main as regenerate

    with contextlib.redirect_stdout(io.StringIO()) as text:
        assert regenerate([str(tmp_path / "again")]) == 0
    manifest = json.loads(text.getvalue())
    assert manifest["files"] == MANIFEST["files"]
    assert manifest["volume_sha256"] == MANIFEST["volume_sha256"]


@pytest.mark.node
def test_web_ide_parser_reads_the_sample_chunks(tmp_path: Path) -> None:
    """The JavaScript parser (what the Web IDE runs) reads every sample chunk as Python does,
    and its inferred block headers are the ones the decoder reads."""
    parity = pytest.importorskip("test_webide_parity")
    if shutil.which("node") is None or not parity.JS_RUNTIME.exists():
        pytest.skip("node or the kaitai-struct runtime is missing")
    files = []
    for code, data in sorted(_sample_chunks().items()):
        (tmp_path / f"{code}.cseg").write_bytes(data)
        files.append(tmp_path / f"{code}.cseg")
    fmt = parity.Format("NgCompressedSegmentation", "shardkit.generated.ng_compressed_segmentation",
                        "NgCompressedSegmentation", "")
    js = parity.run_js_dump(fmt.js_class, files)
    with shardkit.open(SAMPLE_DIR) as ds:
        s = ds.scales[KEY]
        for file in files:
            tree = js[str(file)]
            assert parity.parse_error(tree) is None
            assert parity.diff(parity.py_dump(fmt, file), tree) == []
            # the inferred counts are the info file's, and the headers are the decoder's
            c, dz, dy, dx = ds.chunk_shape(KEY, s.position(int(file.stem)))
            bx, by, bz = s.block_size
            n = (-(-dx // bx)) * (-(-dy // by)) * (-(-dz // bz))
            data = file.read_bytes()
            assert tree["numChannels"] == c == 2
            words = np.frombuffer(data, "<u4")
            for ch, view in enumerate(tree["channels"]):
                headers = words[words[ch]:words[ch] + 2 * n].reshape(n, 2)
                assert [(b["ofsLookupTable"], b["encodedBits"], b["ofsEncodedValues"])
                        for b in view["data"]["blocks"]] == [
                    (int(h0) & 0xFFFFFF, int(h0) >> 24, int(h1)) for h0, h1 in headers]
