"""The writers that build one file over several calls (SWH, MOSAIC) share one life through
``writers._atomic.AtomicWriter``: close once, abort, ``with``; the final name only ever holds a
complete file."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

import shardkit
from shardkit.writers._atomic import AtomicWriter
from shardkit.writers.mosaic import MosaicWriter
from shardkit.writers.swh import SwhShardWriter

VALUES = [b"value %d" % i * (i + 1) for i in range(50)]


def _write(writer: SwhShardWriter | MosaicWriter, value: bytes) -> None:
    if isinstance(writer, SwhShardWriter):
        writer.write(hashlib.sha256(value).digest(), value)
    else:
        writer.add(value)


@pytest.mark.parametrize("cls", [SwhShardWriter, MosaicWriter])
def test_one_life_for_every_single_file_writer(cls: type, tmp_path: Path) -> None:
    for name in ("close", "abort", "__enter__", "__exit__", "_commit", "_open"):
        assert name not in vars(cls) and getattr(cls, name) is getattr(AtomicWriter, name)
    target = tmp_path / "out"
    with cls(target) as w:
        for v in VALUES:
            _write(w, v)
        assert list(tmp_path.iterdir()) != [target] and not target.exists()  # a hidden name
    assert [p.name for p in tmp_path.iterdir()] == ["out"]
    assert w.close() == target  # closed again: nothing happens
    with shardkit.open(target) as r:
        assert r.verify() == [] and len(r) == len(VALUES)
        assert r[hashlib.sha256(VALUES[7]).digest()] == VALUES[7]
    before = target.read_bytes()
    # an error in the block, or abort(): the old file stays, no temporary is left
    with pytest.raises(RuntimeError), cls(target, overwrite=True) as w:
        _write(w, b"new")
        raise RuntimeError
    w2 = cls(target, overwrite=True)
    _write(w2, b"newer")
    w2.abort()
    assert w2.close() == target and target.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["out"]
    # a failure while finishing removes the temporary file too
    w3 = cls(target, overwrite=True)
    _write(w3, b"x")

    def broken() -> None:
        raise OSError(28, "No space left on device")

    w3._commit = broken  # type: ignore[method-assign]
    with pytest.raises((OSError, shardkit.ShardkitError)):
        w3.close()
    assert [p.name for p in tmp_path.iterdir()] == ["out"] and target.read_bytes() == before
