"""What the ZS and ZSS readers and writers share is written once: the reader's block cache
(``SortedSetQueries._cached``, with ZS's own checks as hooks) and the writers' option checks."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

import shardkit
from shardkit.errors import LayoutError
from shardkit.formats._sorted_set import SortedSetQueries
from shardkit.formats.zs import CorruptBlockError, ZsFile
from shardkit.formats.zss import ZssFile
from shardkit.sources import BytesSource
from shardkit.writers.zs import ZsWriter, build_zs
from shardkit.writers.zss import ZssWriter, build_zss

BROKEN = Path(__file__).parent / "data" / "zs" / "reference" / "broken-files"
RECORDS = [b"%06d" % i for i in range(5000)]


def test_one_block_cache_for_both_readers() -> None:
    for cls in (ZsFile, ZssFile):
        assert "_cached" not in vars(cls), cls.__name__
        assert cls._cached is SortedSetQueries._cached
    # it serves the lookups of both
    for cls, data in ((ZsFile, build_zs(RECORDS, codec="deflate", approx_block_size=4096)),
                      (ZssFile, build_zss(RECORDS, approx_block_size=4096))):
        with cls(BytesSource(data)) as z:
            assert list(z.search(prefix=b"0042")) == [b"%06d" % i for i in range(4200, 4300)]
            assert b"004999" in z and b"005000" not in z


@pytest.mark.parametrize(("name", "error", "field", "message"), [
    ("root-is-data.zs", LayoutError, "/header/ofs_root_index",
     "the root at offset 106 is a data block (it must be an index block)"),
    ("empty-data.zs", CorruptBlockError, "/blocks/@106/body/payload",
     "data block at offset 106 has no records"),
    ("wrong-root-level-1.zs", LayoutError, "/blocks/@106/body/level",
     "block at offset 106 has level 0, its parent expects 1"),
])
def test_zs_checks_of_a_block_read_for_a_lookup(name: str, error: type, field: str,
                                                message: str) -> None:
    with shardkit.open(BROKEN / name) as z, pytest.raises(error) as e:
        list(z.search(prefix=b"a"))
    assert e.value.field == field and str(e.value).startswith(message)


def test_zs_skips_extension_blocks_in_lookups() -> None:
    with shardkit.open(BROKEN / "good-extension-blocks.zs") as z:
        assert list(z.search(prefix=b"a")) == [b"a"] and len(list(z)) == 4


@pytest.mark.parametrize(("options", "error", "message"), [
    ({"branching_factor": 1}, ValueError, "branching_factor must be at least 2"),
    ({"approx_block_size": 0}, ValueError, "approx_block_size must be positive"),
    ({"record_overhead": -1}, ValueError, "record_overhead must be >= 0"),
    ({"metadata": ["not", "a", "dict"]}, TypeError, "{fmt} metadata must be a dict"),
])
def test_writers_check_shared_options_alike(options: dict[str, Any], error: type,
                                            message: str) -> None:
    for writer, fmt in ((ZsWriter, "ZS"), (ZssWriter, "ZSS")):
        fh = io.BytesIO()
        with pytest.raises(error, match=message.format(fmt=fmt)):
            writer(fh, **options)
        assert fh.getvalue() == b""  # refused before anything is written


@pytest.mark.parametrize("codec", ["zlib", "bz2", "deflate", "lzma"])
def test_one_capped_decompression_for_every_codec(codec: str) -> None:
    import bz2
    import lzma
    import zlib

    from shardkit.formats import _sorted_set
    from shardkit.formats.zs import reader as zs_reader
    from shardkit.formats.zss import reader as zss_reader

    body = bytes(range(256)) * 4096 + b"\0" * (3 << 20)  # 4 MiB, compresses well
    if codec == "zlib":
        payload, inflate = zlib.compress(body), zss_reader._inflate
    elif codec == "bz2":
        payload, inflate = bz2.compress(body), zss_reader._inflate
    elif codec == "deflate":
        c = zlib.compressobj(6, zlib.DEFLATED, -15)
        payload, inflate = c.compress(body) + c.flush(), zs_reader._inflate
    else:
        payload = lzma.compress(body, lzma.FORMAT_RAW, filters=zs_reader._LZMA_FILTERS)
        inflate = zs_reader._inflate
    calls: list[int] = []
    real = _sorted_set.inflate_capped

    def counted(d, data, cap):  # type: ignore[no-untyped-def]
        calls.append(cap)
        return real(d, data, cap)

    for module in (zs_reader, zss_reader):
        assert module.inflate_capped is real
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(zs_reader, "inflate_capped", counted)
        mp.setattr(zss_reader, "inflate_capped", counted)
        assert inflate(codec, payload + b"junk", len(body)) == (body, True, b"junk")
        assert inflate(codec, payload, len(body) - 1) == (None, False, b"")  # one byte over
        got, done, rest = inflate(codec, payload[: len(payload) // 2], len(body))
        assert not done and rest == b"" and body.startswith(got)  # cut off: no end seen
    assert calls == [len(body), len(body) - 1, len(body)]
    # a small step: the body comes in pieces, and is given up as soon as it passes the cap
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_sorted_set, "INFLATE_STEP", 1 << 16)
        assert inflate(codec, payload, len(body)) == (body, True, b"")
        assert inflate(codec, payload, 100_000) == (None, False, b"")
