"""Fuzz targets: one function per format that runs the whole public API on one input.

Each ``run_<format>(data)`` opens ``data`` as that format and exercises what a user would call:
summary, keys and iteration, lookups, the format's own calls (ZSS search, Amudai column reads, MDB
file/find_chunk, Neuroglancer chunk reads), ``verify``, ``to_dict`` and, where a writer exists, a
round trip through it. A :class:`~shardkit.errors.ShardkitError` is the expected answer to bad input
and is swallowed; any other exception is a finding and propagates to the fuzzer.

The same functions replay saved findings in ``tests/test_fuzz_targets.py``, so every finding becomes
a regression test the moment its file lands in ``tests/data/<format>/fuzz/``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import itertools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import shardkit
from shardkit.errors import ShardkitError

#: Items taken from each iterator: enough to reach every record type, few enough to stay fast.
LIMIT = 64

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"


def _take(iterable: Any, n: int = LIMIT) -> list[Any]:
    return list(itertools.islice(iterable, n))


def _common(reader: Any) -> list[Any]:
    """The calls every reader has; returns a few keys for lookups."""
    reader.summary()
    keys = _take(reader.keys())
    for key in keys[:8]:
        reader.format_key(key)
        reader.get(key)
    json.dumps(reader.to_dict(), default=str)
    for section in reader.sections():
        section.to_dict()
    reader.verify()
    return keys


def _guard(body: Callable[[], None]) -> None:
    with contextlib.suppress(ShardkitError):
        body()


def run_swh(data: bytes) -> None:
    """SWH read shard: lookups (single and batched), deleted keys, verify with content hashes."""

    def body() -> None:
        with shardkit.open(data, format="swh") as s:
            keys = _common(s)
            s.get_many(keys[:16])
            s.get(b"\x00" * 32)
            _take(s.items(), 16)
            s.verify(content_hash="sha256")

    _guard(body)


def _swh_accelerators() -> dict[str, Any]:
    """The accelerators of SWH lookups that are built here, by name (the pure-Python path is
    what each is compared with; a new accelerator joins the differential target here)."""
    from shardkit.formats.swh import reader

    built = {"native": reader._native}
    return {name: module for name, module in built.items() if module is not None}


SWH_ACCELERATORS = _swh_accelerators()


def _swh_outcomes(data: bytes, accelerator: Any, path: Path | None = None) -> list[Any]:
    """What ``run_swh`` calls (and the slots of absent keys), each as its value or its
    error, read through one lookup path: the pure-Python one (``accelerator`` None) or an
    accelerator; from memory, or with ``path`` from that file by pread."""
    import hashlib

    from shardkit.formats.swh import reader

    out: list[Any] = []

    def record(name: str, call: Callable[[], Any]) -> None:
        try:
            out.append((name, call()))
        except ShardkitError as exc:
            out.append((name, type(exc).__name__, str(exc), getattr(exc, "offset", None),
                        getattr(exc, "field", None)))

    saved = reader._native, reader.MAP_LOOKUPS_LIMIT
    reader._native = accelerator
    if path is not None:
        reader.MAP_LOOKUPS_LIMIT = 0  # read with pread, not from the mapping
    try:
        try:
            s = shardkit.open(path if path is not None else data, format="swh")
        except ShardkitError as exc:
            return [("open", type(exc).__name__, str(exc))]
        with s:
            keys: list[bytes] = []
            record("keys", lambda: keys.extend(_take(s.keys())) or list(keys))
            absent = [hashlib.sha256(data[:64] + bytes([i])).digest() for i in range(8)]
            for key in keys[:8] + absent + [bytes(32)]:
                record("slot_of", lambda k=key: s.slot_of(k))
                record("get", lambda k=key: s.get(k))
            record("get_many", lambda: s.get_many(keys[:16] + absent[:2], default=None))
            record("items", lambda: _take(s.items(), 16))
            record("verify", lambda: s.verify(content_hash="sha256"))
    finally:
        reader._native, reader.MAP_LOOKUPS_LIMIT = saved
    return out


def run_swh_native(data: bytes) -> None:
    """SWH differential: every input through the pure-Python path and through each built
    accelerator (from memory, and from a file by pread); any difference in lookups, slots,
    ``verify`` problems or errors is a finding (an AssertionError naming the call)."""
    import tempfile

    want = _swh_outcomes(data, None)
    if not SWH_ACCELERATORS:
        return
    with tempfile.NamedTemporaryFile(dir=_TMP, suffix=".shard") as fh:
        fh.write(data)
        fh.flush()
        for name, accelerator in SWH_ACCELERATORS.items():
            for where, path in (("memory", None), ("pread", Path(fh.name))):
                got = _swh_outcomes(data, accelerator, path)
                if got != want:
                    first = next((i for i, (a, b) in enumerate(zip(got, want, strict=False))
                                  if a != b), min(len(got), len(want)))
                    raise AssertionError(
                        f"{name} ({where}) differs from the Python path at call {first}: "
                        f"{got[first:first + 1]!r:.300} != {want[first:first + 1]!r:.300}")


#: Where the differential target writes its input for the pread path (memory when it can).
_TMP = "/dev/shm" if Path("/dev/shm").is_dir() else None


def run_mdb(data: bytes) -> None:
    """Xet MDB shard: files, xorbs, chunk lookups through the tables, writer round trip."""

    def body() -> None:
        with shardkit.open(data, format="mdb") as s:
            _common(s)
            files, xorbs = s.files, s.xorbs
            for f in files[:8]:
                s.file(f.hash)
            for x in xorbs[:4]:
                s.xorb(x.hash)
                for c in x.chunks[:8]:
                    s.find_chunk(c.hash)
            s.find_chunk(b"\x01" * 32)
            s.verify(name_check=True)
            from shardkit.writers.xet_mdb import build

            rebuilt = build(s)
        with shardkit.open(rebuilt, format="mdb") as again:
            assert [f.hash for f in again.files] == [f.hash for f in files]
            assert [x.hash for x in again.xorbs] == [x.hash for x in xorbs]

    _guard(body)


def _sorted_set(data: bytes, fmt: str, build: Callable[[list[bytes]], bytes],
                nonempty: bool) -> None:
    """ZSS or ZS: the common calls, 256 records streamed, prefix searches and ``in`` for 4 keys,
    a range search, and for a complete sorted input a round trip through ``build``."""

    def body() -> None:
        with shardkit.open(data, format=fmt) as z:
            keys = _common(z)
            records = _take(iter(z), 4 * LIMIT)
            for key in keys[:4]:
                _take(z.search(prefix=key[:2]))
                _ = key in z
            if len(keys) >= 2:
                _take(z.search(start=keys[0], stop=keys[-1]))
            complete = len(records) < 4 * LIMIT
        if complete and (records or not nonempty) and records == sorted(records):
            with shardkit.open(build(records), format=fmt) as again:
                assert list(again) == records

    _guard(body)


def run_zss(data: bytes) -> None:
    """ZSS: streaming iteration, searches through the index tree, writer round trip."""
    from shardkit.writers.zss import build_zss

    _sorted_set(data, "zss", build_zss, nonempty=False)


def run_zs(data: bytes) -> None:
    """ZS: streaming iteration, searches through the index tree, verify, writer round trip."""
    from shardkit.writers.zs import build_zs

    _sorted_set(data, "zs", lambda records: build_zs(records, codec="deflate"), nonempty=True)


def run_amudai(data: bytes) -> None:
    """Amudai single-file shard: metadata tree, descriptors, every column's values."""

    def body() -> None:
        with shardkit.open(data, format="amudai") as s:
            s.summary()
            json.dumps(s.to_dict(), default=str)
            for section in s.sections():
                section.to_dict()
            for f in itertools.islice(s.iter_fields(), LIMIT):
                path = getattr(f, "path", None) or f.name
                _guard(lambda p=path: s.descriptor(p))
                _guard(lambda p=path: s.read_column(p))
            _guard(s.rows)
            _guard(lambda: list(s.iter_batches(batch_size=50)))
            if importlib.util.find_spec("pyarrow") is not None:
                _guard(s.to_arrow)
                _guard(lambda: list(s.iter_batches(batch_size=50, arrow=True)))
            s.verify()

    _guard(body)


def _ng_specs() -> list[dict[str, Any]]:
    """The sharding specs of the bundled Neuroglancer samples, in a fixed order."""
    specs: list[dict[str, Any]] = []
    for info in sorted((DATA / "neuroglancer").glob("*/info")):
        meta = json.loads(info.read_text())
        if meta.get("sharding"):
            specs.append(meta["sharding"])
        for scale in meta.get("scales", []):
            if scale.get("sharding"):
                specs.append(scale["sharding"])
    return specs


NG_SPECS = _ng_specs()


def run_neuroglancer(data: bytes) -> None:
    """A bare Neuroglancer shard: the first byte picks a sample's spec, the rest is the shard."""
    if not data:
        return
    spec = NG_SPECS[data[0] % len(NG_SPECS)]

    def body() -> None:
        with shardkit.open(data[1:], format="neuroglancer", spec=spec) as s:
            keys = _common(s)
            for key in keys[:8]:
                _ = s[key]
            s.get(2**64 - 1)

    _guard(body)


#: The chunk shapes ``(x, y, z)`` and block sizes a ``cseg`` input's first byte picks from: the
#: shapes of the bundled tensorstore sample's chunks (a whole chunk and its clipped edges),
#: its block size first, then odd and degenerate ones.
CSEG_SHAPES = [(16, 16, 8), (5, 16, 8), (16, 2, 8), (5, 2, 8), (16, 16, 1), (5, 16, 1),
               (16, 2, 1), (5, 2, 1)]
CSEG_BLOCKS = [(8, 4, 4), (8, 8, 8), (4, 4, 4), (3, 5, 7), (2, 2, 1), (1, 1, 1), (16, 8, 8),
               (5, 3, 2)]


def cseg_head(dtype: str, channels: int, shape: tuple[int, int, int],
              block: tuple[int, int, int]) -> int:
    """The first byte of a ``cseg`` input: bit 0 uint64, bit 1 two channels, bits 2-4 the
    block size, bits 5-7 the chunk shape (indices in :data:`CSEG_BLOCKS`, :data:`CSEG_SHAPES`)."""
    return ((dtype == "uint64") | (channels == 2) << 1 | CSEG_BLOCKS.index(block) << 2
            | CSEG_SHAPES.index(shape) << 5)


def run_cseg(data: bytes) -> None:
    """One Neuroglancer ``compressed_segmentation`` chunk: the first byte picks the label type,
    the channels, the block size and the chunk shape (:func:`cseg_head`), the rest is the chunk."""
    if not data:
        return
    from shardkit.formats.neuroglancer import decode_compressed_segmentation

    head = data[0]
    x, y, z = CSEG_SHAPES[head >> 5 & 7]
    shape = (2 if head & 2 else 1, z, y, x)
    dtype = "uint64" if head & 1 else "uint32"
    _guard(lambda: decode_compressed_segmentation(data[1:], shape, CSEG_BLOCKS[head >> 2 & 7],
                                                  dtype, field="/chunk"))


def run_mosaic(data: bytes) -> None:
    """MOSAIC: every index's keys, lookups (single, batched, all objects of a key), the objects
    in file order, verify with content hashes."""

    def body() -> None:
        with shardkit.open(data, format="mosaic") as r:
            r.summary()
            json.dumps(r.to_dict(), default=str)
            for section in r.sections():
                section.to_dict()
            for kind in r.index_names:
                keys = _take(r.keys(kind), 16)
                r.get_many(keys, default=None, index=kind)
                for key in keys[:4]:
                    r.get_all(key, index=kind)
                _take(r.items(kind), 16)
            _take(r.values())
            r.verify()

    _guard(body)


#: The annotation layers an ``ngann`` input's first byte picks from (``info`` fields): every
#: annotation type, every property type, with and without relationships.
NGANN_LAYOUTS: list[dict[str, Any]] = [
    {"annotation_type": "point", "rank": 3, "properties": [], "relationships": []},
    {"annotation_type": "point", "rank": 3,
     "properties": [{"id": "kind", "type": "uint8", "enum_values": [0, 1],
                     "enum_labels": ["a", "b"]}, {"id": "score", "type": "float32"}],
     "relationships": ["pre", "post"]},
    {"annotation_type": "line", "rank": 2,
     "properties": [{"id": "c", "type": "rgb"}, {"id": "n", "type": "int16"}],
     "relationships": ["seg"]},
    {"annotation_type": "axis_aligned_bounding_box", "rank": 3,
     "properties": [{"id": "u", "type": "uint32"}, {"id": "t", "type": "rgba"}],
     "relationships": []},
    {"annotation_type": "ellipsoid", "rank": 3,
     "properties": [{"id": "i", "type": "int32"}, {"id": "j", "type": "int8"},
                    {"id": "k", "type": "uint16"}], "relationships": ["seg"]},
    {"annotation_type": "polyline", "rank": 3, "properties": [{"id": "w", "type": "float32"}],
     "relationships": ["seg"]},
    {"annotation_type": "point", "rank": 3,  # neuroglancer 2.41.2's uint32 layout differs
     "properties": [{"id": "f", "type": "float32"}, {"id": "u", "type": "uint32"},
                    {"id": "b", "type": "uint8"}], "relationships": []},
]


def ngann_info(index: int) -> dict[str, Any]:
    """The ``info`` of :data:`NGANN_LAYOUTS` ``[index]``."""
    lay = NGANN_LAYOUTS[index]
    names = "xyzw"[: lay["rank"]]
    return {"@type": "neuroglancer_annotations_v1", "annotation_type": lay["annotation_type"],
            "dimensions": {n: [1, "nm"] for n in names}, "properties": lay["properties"],
            "relationships": [{"id": r, "key": r} for r in lay["relationships"]]}


def run_ngann(data: bytes) -> None:
    """Neuroglancer annotation values: the first byte picks a layout (:data:`NGANN_LAYOUTS`),
    the next two (u16) split the rest into a ``by_id`` value and a cell list; both are decoded
    (spec layout, and neuroglancer 2.41.2's where it differs), their geometry tested against a
    box."""
    if len(data) < 3:
        return
    from shardkit.formats.neuroglancer.annotation_layout import AnnotationLayout, quirk_layout
    from shardkit.formats.neuroglancer.annotations import RecordDecoder, bounding_box, meets

    info = ngann_info(data[0] % len(NGANN_LAYOUTS))
    split = int.from_bytes(data[1:3], "little")
    by_id, cell = data[3 : 3 + split], data[3 + split :]
    layout = AnnotationLayout(info)
    layouts = [layout, *filter(None, [quirk_layout(info, layout)])]
    box = ([0.0] * layout.rank, [10.0] * layout.rank)

    def body(decoder: RecordDecoder) -> None:
        def use(ann: Any) -> None:
            json.dumps(ann.to_dict(), default=str)
            meets(ann.type, ann.geometry, *box)
            if len(ann.geometry):
                bounding_box(ann.type, ann.geometry)

        with contextlib.suppress(ShardkitError):
            use(decoder.decode_by_id(1, by_id))
        with contextlib.suppress(ShardkitError):
            for ann in decoder.decode_cell(cell, "cell"):
                use(ann)
        with contextlib.suppress(ShardkitError):
            decoder.cell_arrays(cell, "cell")

    for lay in layouts:
        body(RecordDecoder(lay))


def _outcome(fn: Callable[[], Any]) -> Any:
    """What a call gives: its value (arrays as lists), or its error's type and message."""
    try:
        got = fn()
    except (ShardkitError, ValueError) as exc:
        return ("error", type(exc).__name__, getattr(exc, "message", str(exc)))
    if isinstance(got, tuple):
        return tuple(g.tolist() if hasattr(g, "tolist") else g for g in got)
    return got.tolist() if hasattr(got, "tolist") else got


def run_ng_native(data: bytes) -> None:
    """The array loops of Neuroglancer annotation verify, differential: an input's bytes as a
    minishard index, as uint64 ids, as records, as digest columns and as spans, through each
    built C function and its numpy twin; any difference (values or errors) is a finding."""
    import numpy as np

    from shardkit.formats.neuroglancer import annotation_spill as spill
    from shardkit.formats.neuroglancer import decode
    from shardkit.hashing import murmur

    if murmur._native is None or spill._native is None or decode._native() is None:
        return
    head, body = (data[0] if data else 0), data[1:]
    pairs: list[tuple[str, Callable[[], Any], Callable[[], Any]]] = []
    for skip in (0, head % 24):
        raw = body[skip:][: len(body[skip:]) // 24 * 24]
        pairs.append(("minishard index", lambda raw=raw: _index_arrays(
            decode.decode_minishard_index(raw, head)), lambda raw=raw: _index_arrays(
                decode._decode_minishard_numpy(raw, len(raw) // 24, head, None, None))
            if raw else _index_arrays(decode.decode_minishard_index(raw, head))))
    words = np.frombuffer(body[: len(body) // 8 * 8], "<u8")
    with np.errstate(over="ignore"):
        pairs.append(("murmur", lambda: murmur.hash_uint64_array(words),
                      lambda: murmur._hash_uint64_numpy(words)))
    width = 1 + head % 40
    recs = np.frombuffer(body[: len(body) // width * width], np.uint8).reshape(-1, width)
    keys = [np.uint64((0x9E3779B97F4A7C15 * (2 * i + 1)) % 2**64 | 1) for i in range(7)]
    pairs.append(("record hash", lambda: spill.hash_rows(recs, keys),
                  lambda: spill._hash_rows_numpy(recs, keys)))
    cols = tuple(words[: len(words) // 3 * 3].reshape(3, -1))
    digest = spill.MultisetHash(key=head)
    if len(cols[0]):
        pairs.append(("digest", lambda: spill._native.multiset_sum(
            int(digest.key), np.array(digest.muls, "<u8"), cols), lambda: digest._sum(cols)))
    halves = np.frombuffer(body[: len(body) // 4 * 4], "<u2").astype(np.uint64)
    starts, lengths = halves[0::2] % (len(body) + 8), halves[1::2] % 64
    buf = np.frombuffer(body, np.uint8)
    pairs.append(("spans", lambda: spill.copy_spans(buf, starts, lengths),
                  lambda: spill._copy_spans_numpy(buf, starts, lengths)))
    for name, c_path, numpy_path in pairs:
        got, want = _outcome(c_path), _outcome(numpy_path)
        if got != want:
            raise AssertionError(f"{name}: the C path gives {got!r:.200}, numpy {want!r:.200}")


def _index_arrays(index: Any) -> tuple[Any, ...]:
    return index.ids, index.starts, index.ends, index.base


TARGETS: dict[str, Callable[[bytes], None]] = {
    "swh": run_swh,
    "swh_native": run_swh_native,
    "mdb": run_mdb,
    "zss": run_zss,
    "zs": run_zs,
    "amudai": run_amudai,
    "neuroglancer": run_neuroglancer,
    "cseg": run_cseg,
    "mosaic": run_mosaic,
    "ngann": run_ngann,
    "ng_native": run_ng_native,
}


SEEDS = Path(__file__).resolve().parent / "seeds"
#: Targets that start from another target's seeds and samples.
SAME_INPUTS = {"swh_native": "swh", "ng_native": "neuroglancer"}


def seeds(fmt: str) -> list[tuple[str, bytes]]:
    """The fuzz inputs to start from: the small seeds of ``fuzz/seeds/<fmt>/`` (written by
    ``make_seeds.py``; a Neuroglancer seed already starts with its spec byte), then the bundled
    sample files, as (name, fuzz input) pairs."""
    fmt = SAME_INPUTS.get(fmt, fmt)
    made = [(f"seeds/{p.name}", p.read_bytes())
            for p in sorted((SEEDS / fmt).glob("*")) if p.is_file()]
    return made + _samples(fmt)


def _samples(fmt: str) -> list[tuple[str, bytes]]:
    """The bundled sample files of ``fmt`` as (name, fuzz input) pairs."""
    folder = DATA / fmt
    if fmt == "neuroglancer":
        out = []
        for shard in sorted(folder.glob("**/*.shard")):
            info = json.loads((shard.parent / "info").read_text()) if (
                shard.parent / "info").exists() else json.loads(
                (shard.parent.parent / "info").read_text())
            spec = info.get("sharding") or next(
                s["sharding"] for s in info["scales"] if s["key"] == shard.parent.name)
            out.append((str(shard.relative_to(folder)), bytes([NG_SPECS.index(spec)])
                        + shard.read_bytes()))
        return out
    suffix = {"swh": ".shard", "zss": ".zss", "zs": ".zs", "amudai": ".amudai.shard",
              "mosaic": ".mosaic"}.get(fmt)
    files = [p for p in sorted(folder.rglob("*"))
             if p.is_file() and "fuzz" not in p.relative_to(folder).parts]
    if fmt == "mdb":
        files = [p for p in files if p.suffix in (".mdb", ".shard")]
    elif suffix:
        files = [p for p in files if p.name.endswith(suffix)]
    return [(str(p.relative_to(folder)), p.read_bytes()) for p in files]


def findings(fmt: str) -> list[Path]:
    """Saved fuzz findings of ``fmt`` (regression inputs)."""
    folder = DATA / fmt / "fuzz"
    return sorted(p for p in folder.glob("*") if p.is_file() and p.name != "README.md")
