"""The C accelerator of Amudai numeric cascades (``shardkit.formats.amudai._native``) against
its pure-Python twin (``blocks._decode_num_py``): every numeric values section the reader
decodes in every shard of tests/data/amudai (the Rust-written corpus included), nested sections
too, gives the same values through both; on a few hundred corrupted or truncated variants of
those sections the C path never answers where Python raises, answers the same values where it
answers, and the reader's path (C first, Python when C declines) raises the same error.
"""

from __future__ import annotations

import contextlib
import random
from pathlib import Path

import numpy as np
import pytest
from shardkit.generated import amudai_shard_pb2 as spb

import shardkit
from shardkit.errors import LimitExceededError, ShardkitError
from shardkit.formats.amudai import blocks

try:
    from shardkit.formats.amudai import _native
except ImportError:  # pragma: no cover - built without a C compiler
    _native = None

pytestmark = pytest.mark.skipif(_native is None, reason="the C accelerator is not built")

DATA = Path(__file__).parent / "data" / "amudai"
SHARDS = sorted(p for p in DATA.rglob("*.amudai.shard") if "fuzz" not in p.parts)
INTEGER_CODES = {blocks.FL_BIT_PACK, blocks.FOR, blocks.FFOR, blocks.DELTA, blocks.TRUNCATE_U8,
                 blocks.TRUNCATE_U16, blocks.TRUNCATE_U32, blocks.TRUNCATE_U64, blocks.ZIGZAG}

Section = tuple[bytes, int, int, int, np.dtype, int]


@pytest.fixture(scope="module")
def sections() -> list[Section]:
    """Every (section bytes, start, end, n, dtype, depth) the Python path decodes while every
    shard is verified and read into Arrow (duplicates dropped)."""
    seen: dict[tuple[bytes, int, int, int, str, int], Section] = {}
    original = blocks._decode_num_py

    def record(sec: blocks._Section, start: int, end: int, n: int, dtype: np.dtype,
               depth: int) -> np.ndarray:
        buf = bytes(sec.buf)
        seen.setdefault((buf, start, end, n, dtype.str, depth),
                        (buf, start, end, n, dtype, depth))
        return original(sec, start, end, n, dtype, depth)

    mp = pytest.MonkeyPatch()
    mp.setattr(blocks, "_native", None)
    mp.setattr(blocks, "_decode_num_py", record)
    try:
        for path in SHARDS:
            with shardkit.open(path) as s:
                s.verify()
                # a shard whose types Arrow cannot hold was read by verify
                with contextlib.suppress(ShardkitError):
                    s.to_arrow()
    finally:
        mp.undo()
    assert len(seen) > 500
    return list(seen.values())


def _python(buf: bytes, start: int, end: int, n: int, dtype: np.dtype, depth: int
            ) -> tuple[str, object]:
    try:
        got = blocks._decode_num_py(blocks._Section(memoryview(buf), 100, "f"), start, end, n,
                                    dtype, depth)
    except Exception as exc:  # noqa: BLE001 - the class and message are compared
        return "error", (type(exc), str(exc))
    return "values", np.ascontiguousarray(got).astype(dtype, copy=False).tobytes()


def _c(buf: bytes, start: int, end: int, n: int, dtype: np.dtype, depth: int) -> bytes | None:
    got = _native.decode_numeric(buf, start, end, n, dtype.itemsize, dtype.kind, depth)
    return None if got is None else bytes(got)


def _reader(buf: bytes, start: int, end: int, n: int, dtype: np.dtype, depth: int
            ) -> tuple[str, object]:
    """The reader's own path: C first, Python where C declines."""
    try:
        got = blocks._decode_num(blocks._Section(memoryview(buf), 100, "f"), start, end, n,
                                 dtype, depth)
    except Exception as exc:  # noqa: BLE001
        return "error", (type(exc), str(exc))
    return "values", np.ascontiguousarray(got).astype(dtype, copy=False).tobytes()


def test_every_section_of_every_shard_decodes_alike(sections: list[Section]) -> None:
    answered = 0
    codes = set()
    for buf, start, end, n, dtype, depth in sections:
        kind, py = _python(buf, start, end, n, dtype, depth)
        assert kind == "values"  # the shards are sound
        c = _c(buf, start, end, n, dtype, depth)
        code = int.from_bytes(buf[start : start + 2], "little")
        if code in INTEGER_CODES:  # an integer cascade: C answers it, bit for bit
            assert c is not None, (code, n, dtype, depth)
        if c is not None:
            assert c == py, (code, n, dtype, depth)
            answered += 1
            codes.add(code)
    assert answered > 400
    assert {blocks.FL_BIT_PACK, blocks.FFOR, blocks.DELTA, blocks.RUN_LENGTH, blocks.ALP} <= codes


def _corrupt(rng: random.Random, buf: bytes, start: int, end: int) -> tuple[bytes, int]:
    """A variant of the section: cut short, bytes flipped, or a u32 count made large."""
    how = rng.randrange(4)
    data = bytearray(buf)
    if how == 0:  # truncated
        return bytes(data), rng.randrange(start, end) if end > start else start
    if how == 1:  # one to three random bytes changed
        for _ in range(rng.randint(1, 3)):
            data[rng.randrange(start, end)] = rng.randrange(256)
    elif how == 2:  # a metadata byte (width, flags, code) changed
        data[rng.randrange(start, min(start + 16, end))] = rng.randrange(256)
    else:  # a u32 size or count made large
        at = rng.randrange(start + 2, max(start + 3, min(start + 12, end - 3)))
        data[at : at + 4] = rng.choice([0xFFFFFFFF, 1 << 24, 1 << 20, 7]).to_bytes(4, "little")
        del data[len(buf):]
    return bytes(data), end


def test_corrupted_sections_error_alike(sections: list[Section]) -> None:
    rng = random.Random(31)
    ints = [s for s in sections
            if int.from_bytes(s[0][s[1] : s[1] + 2], "little") in INTEGER_CODES
            | {blocks.RUN_LENGTH, blocks.BLOCK_DICTIONARY, blocks.SPARSE, blocks.ALP}]
    assert len(ints) > 50
    outcomes = {"values": 0, "error": 0, "c": 0}
    for _ in range(600):
        buf, start, end, n, dtype, depth = rng.choice(ints)
        bad, bad_end = _corrupt(rng, buf, start, end)
        kind, py = _python(bad, start, bad_end, n, dtype, depth)
        c = _c(bad, start, bad_end, n, dtype, depth)
        if c is not None:  # C answers only what Python answers, with the same values
            assert (kind, py) == ("values", c)
            outcomes["c"] += 1
        assert _reader(bad, start, bad_end, n, dtype, depth) == (kind, py)
        outcomes[kind] += 1
    assert min(outcomes.values()) > 50, outcomes


def test_counts_and_widths_out_of_range_decline() -> None:
    single = (7).to_bytes(2, "little") + (5).to_bytes(8, "little")
    assert bytes(_native.decode_numeric(single, 0, len(single), 3, 8, "i", 0)) == (
        (5).to_bytes(8, "little") * 3)
    assert _native.decode_numeric(single, 0, len(single), 1 << 25, 8, "i", 0) is None
    assert _native.decode_numeric(single, 0, len(single), -1, 8, "i", 0) is None
    assert _native.decode_numeric(single, 0, len(single) + 1, 3, 8, "i", 0) is None
    assert _native.decode_numeric(single, 0, len(single), 3, 3, "i", 0) is None
    assert _native.decode_numeric(single, 0, len(single), 3, 8, "i", 17) is None
    # TruncateU64 cascades nested deeper than the cap, around a Plain block
    deep = b"".join((11).to_bytes(2, "little") + b"\x01" + bytes(5) for _ in range(20))
    deep += (1).to_bytes(2, "little") + bytes(32)
    assert _native.decode_numeric(deep, 0, len(deep), 4, 8, "i", 0) is None
    assert bytes(_native.decode_numeric(deep, 8 * 10, len(deep), 4, 8, "i", 0)) == bytes(32)
    with pytest.raises(LimitExceededError):
        blocks.decode_numeric_values(memoryview(deep), 4, np.dtype("<i8"), base=0, field="f")


def _scan(path: Path | bytes) -> tuple[str, object]:
    """Every column of every stripe as Arrow batches, the Arrow table, and ``verify``'s
    problems; or the error."""
    try:
        with shardkit.open(path) as s:
            problems = [str(p) for p in s.verify()]
            tables = [*s.iter_batches(arrow=True), s.to_arrow()]  # compared with equals()
    except Exception as exc:  # noqa: BLE001 - the class and message are compared
        return "error", (type(exc), str(exc))
    return "values", (problems, tables)


def _both(monkeypatch: pytest.MonkeyPatch, path: Path) -> tuple[object, object]:
    c = _scan(path)
    with monkeypatch.context() as m:
        m.setattr(blocks, "_native", None)
        py = _scan(path)
    return c, py


SAMPLE = [*(p for p in SHARDS if "rust" in p.parts), DATA / "single.amudai.shard",
          DATA / "lz4.amudai.shard"]


@pytest.mark.parametrize("path", SAMPLE, ids=lambda p: p.name)
def test_runs_of_blocks_read_alike(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    c, py = _both(monkeypatch, path)
    assert c == py
    assert c[0] == "values"


def test_corrupted_shards_read_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bytes changed in the data blocks of a Rust-written shard: the reader answers the same
    values or raises the same error with and without the C path."""
    rng = random.Random(3131)
    src = DATA / "rust" / "scalars.amudai.shard"
    raw = src.read_bytes()
    kinds = {"values": 0, "error": 0}
    for j in range(40):
        data = bytearray(raw)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(64, len(raw) // 2)] = rng.randrange(256)
        path = tmp_path / f"bad{j}.amudai.shard"
        path.write_bytes(bytes(data))
        c, py = _both(monkeypatch, path)
        assert c == py
        kinds[c[0]] += 1
    assert kinds["error"] > 5, kinds


def test_dictionary_gather_equals_take() -> None:
    pa = pytest.importorskip("pyarrow")
    rng = np.random.default_rng(31)
    entries = [bytes(rng.integers(0, 256, int(k), np.uint8)) for k in rng.integers(0, 9, 50)]
    bounds = np.zeros(51, np.int64)
    np.cumsum([len(e) for e in entries], out=bounds[1:])
    data = b"".join(entries)
    ids = rng.integers(0, 50, 5000).astype("<u4")
    null = rng.random(5000) < 0.1
    got, offs = _native.gather(data, bounds, ids, null.astype(np.uint8))
    arr = pa.Array.from_buffers(pa.large_binary(), 5000, [
        pa.py_buffer(np.packbits(~null, bitorder="little")), pa.py_buffer(offs),
        pa.py_buffer(got)])
    want = pa.array(entries, pa.large_binary()).take(pa.array(ids, mask=null))
    assert arr.equals(want)
    assert arr.to_pylist()[:5] == want.to_pylist()[:5]
    # anything that does not fit the table: None (the take path answers)
    assert _native.gather(data, bounds, np.array([50], "<u4"), None) is None
    bad = bounds.copy()
    bad[3] = bad[4] + 1
    assert _native.gather(data, bad, ids, None) is None
    assert _native.gather(data[:-1], bounds, ids, None) is None
    assert _native.gather(data, bounds, ids, np.zeros(3, np.uint8)) is None
    assert _native.gather(data, bounds[:0], ids, None) is None


def _nullable_unsealed(tmp_path: Path, presence: str) -> Path:
    """Numeric columns with nulls in blocks without checksums (so that changed bytes reach
    the presence sections and the decoders)."""
    from shardkit.writers.amudai import field, write_amudai

    rng = random.Random(17)
    n = 30_000  # a few blocks per column
    cols = {
        "i": [None if rng.random() < 0.2 else rng.randrange(-10**12, 10**12) for _ in range(n)],
        "f": [None if rng.random() < 0.5 else rng.random() * 100 for _ in range(n)],
        # an all-null first block, then nulls in runs
        "s": [None if i < 9000 or i % 700 < 300 else i % 7 for i in range(n)],
        "d": [rng.randrange(1000) for _ in range(n)],  # no nulls: runs mix both kinds
    }
    out = tmp_path / f"nullable-{presence}.amudai.shard"
    write_amudai(out, [field("i", "Int64"), field("f", "Float64"), field("s", "Int32"),
                       field("d", "Int64")], [cols], block_checksums=False, presence=presence)
    return out


@pytest.mark.parametrize("presence", ["bytes", "roaring"])
def test_nulls_decode_alike_in_c_and_python(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            presence: str) -> None:
    """Presence sections of runs of blocks: the C path (byte-per-value and all-null kinds; it
    declines roaring) gives the same values, nulls and errors as Python, on the shard and on
    flipped, zeroed and truncated bytes of its blocks."""
    path = _nullable_unsealed(tmp_path, presence)
    calls = {"flags": 0}
    original = _native.decode_blocks

    def counted(*args: object) -> tuple[object, int, object]:
        got = original(*args)
        calls["flags"] += got[2] is not None
        return got

    monkeypatch.setattr(_native, "decode_blocks", counted)
    c, py = _both(monkeypatch, path)
    assert c == py and c[0] == "values"
    table = c[1][1][-1]
    assert table.column("i").null_count > 5000 and table.column("s").null_count > 17000
    assert calls["flags"] > 0  # runs with nulls went through C (all-null blocks in both)
    raw = path.read_bytes()
    spans = []  # (offset, size) of every block of the DATA buffers
    with shardkit.open(path) as s:
        for node in s.schema:
            where = f"/stripes/0/fields/{node.name}"
            buf = s._buffers(s.stripe_field(0, node.schema_id), where)[spb.DATA]
            spans += [(base, len(block)) for _, block, base in s._blocks(buf, where)]
    assert len(spans) > 8
    rng = random.Random(5)
    kinds = {"values": 0, "error": 0}
    for j in range(90):
        data = bytearray(raw)
        base, size = rng.choice(spans)
        at = base + (rng.randrange(min(size, 24)) if j % 2 else rng.randrange(size))
        if j % 3 == 0:
            data[at] ^= 1 << rng.randrange(8)
        elif j % 3 == 1:
            data[at : at + 8] = bytes(8)
        else:
            data[at] = rng.choice([0, 1, 2, 3, 255])
        bad = tmp_path / f"bad{j}.amudai.shard"
        bad.write_bytes(bytes(data))
        c, py = _both(monkeypatch, bad)
        assert c == py, (j, at)
        kinds[c[0]] += 1
    assert kinds["values"] > 5 and kinds["error"] > 5, kinds


def _block(presence: bytes, values: bytes, *, len_presence: int | None = None,
           len_values: int | None = None) -> bytes:
    """A block's framing: the two lengths, the presence section padded to 8, the values."""
    lp = len(presence) if len_presence is None else len_presence
    lv = len(values) if len_values is None else len_values
    head = lp.to_bytes(4, "little") + lv.to_bytes(4, "little") + presence
    return head + bytes(-len(head) % 8) + values


def _py_block(raw: bytes, n: int, embedded: bool) -> tuple[bytes, object] | None:
    """The Python path on one block: (values, valid mask as bytes or None), or None on error."""
    try:
        parts = blocks.split_block(memoryview(raw), embedded_presence=embedded,
                                   has_checksum=False, base=0, field="f", region="b")
        valid = blocks.decode_presence(parts.presence, n, base=0, field="f")
        values = blocks.decode_numeric_values(parts.values, n, np.dtype("<i8"), base=0,
                                              field="f")
    except ShardkitError:
        return None
    if len(values) != n:
        return None
    return values.tobytes(), None if valid is None else valid.astype(np.uint8).tobytes()


def test_block_framing_and_presence_decline_or_agree() -> None:
    """``decode_blocks`` on hand-made framings and presence sections (lengths past the end,
    padding pushing the values out, all-null with extra bytes, byte-per-value of the wrong
    length, unknown and roaring kinds, empty sections, huge counts): where C decodes a block,
    Python gives the same values and nulls; where Python raises, C declines."""
    n = 3
    plain = (1).to_bytes(2, "little") + b"".join(i.to_bytes(8, "little") for i in (5, -1, 9)
                                                  for i in [i & (2**64 - 1)])
    cases = [
        _block(b"", plain), _block(b"\x01", plain), _block(b"\x01junk", plain),
        _block(b"\x02\x01\x00\x01", plain), _block(b"\x02\x01\x00", plain),
        _block(b"\x02\x01\x00\x01\x01", plain), _block(b"\x00", plain), _block(b"\x04", plain),
        _block(b"\x03\x00", plain), _block(b"\x02\x01\x00\x01", plain, len_presence=1 << 31),
        _block(b"\x02\x01\x00\x01", plain, len_presence=0xFFFFFFFF),
        _block(b"\x01", plain, len_values=len(plain) + 1), _block(b"\x01", plain, len_values=1),
        _block(b"\x01" * 8, plain)[:-1], _block(b"\x01", plain)[:8], b"", bytes(7), bytes(8),
        # the presence section ends where the padding would push the values past the end
        (9).to_bytes(4, "little") + (len(plain)).to_bytes(4, "little") + b"\x01" * 9 + plain,
    ]
    for embedded in (True, False):
        for raw in cases:
            for count in (n, 0, 1 << 40):
                want = _py_block(raw, count, embedded) if count <= n else None
                got, done, flags = _native.decode_blocks([raw], [count], 8, "i", embedded,
                                                         False)
                if done == 0:
                    continue  # declined: the Python path answers (or raises) alone
                assert want is not None, (raw, count, embedded)
                assert bytes(got)[: count * 8] == want[0], (raw, count, embedded)
                mask = None if flags is None else bytes(flags)[:count]
                assert mask == want[1] or (want[1] is None and mask == b"\x01" * count), raw
    # a run: a block without nulls, then one with, then roaring (declined): flags cover both
    run = [_block(b"", plain), _block(b"\x02\x00\x01\x00", plain), _block(b"\x03\x00", plain)]
    got, done, flags = _native.decode_blocks(run, [n] * 3, 8, "i", True, False)
    assert done == 2 and bytes(got)[: 2 * n * 8] == _py_block(run[0], n, True)[0] * 2
    assert bytes(flags)[: 2 * n] == b"\x01\x01\x01\x00\x01\x00"
    # a block without nulls, then a presence section C declines: no flags, as Python says
    got, done, flags = _native.decode_blocks([run[0], _block(b"\x02\x01", plain)], [n] * 2,
                                             8, "i", True, False)
    assert done == 1 and flags is None
