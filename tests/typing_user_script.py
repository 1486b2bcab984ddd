"""A small program written as a shardkit user would, using every reader.

``tests/test_typing.py`` runs it on the bundled samples and type-checks it with
``mypy --strict`` against the installed package: every value below must have a precise type
(no ``Any`` slipping through ``shardkit.open``), and the script must run.

Usage: ``python typing_user_script.py DATA_DIR`` (the folder ``tests/data``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import shardkit
from shardkit import (
    AmudaiShard,
    BytesSource,
    EntryNotFoundError,
    MdbShard,
    NgDataset,
    NgShard,
    Problem,
    ShardkitError,
    SwhShard,
    ZssFile,
)


def swh(data: Path) -> int:
    with shardkit.open(data / "swh" / "tiny.shard", format="swh") as shard:
        keys: list[bytes] = list(shard.keys())
        value: bytes = shard[keys[0]]
        problems: list[Problem] = shard.verify(content_hash="sha256")
        summary: dict[str, object] = shard.summary()
        assert not problems and summary["format"] == "swh"
        return len(value) + len(shard.get_many(keys))


def mdb(data: Path) -> int:
    path = next((data / "mdb" / "real" / "session").glob("*.mdb"))
    with shardkit.open(path, format=MdbShard) as shard:
        total = 0
        for f in shard.files:
            total += len(f.terms)
            found = shard.file(str(f.hash))
            assert found is not None and found.hash == f.hash
        for x in shard.xorbs:
            total += sum(c.size for c in x.chunks)
        problems: list[Problem] = shard.verify(name_check=True)
        assert not problems
        return total + len(shard.sections())


def zss(data: Path) -> int:
    z: ZssFile = shardkit.open(data / "zss" / "tiny_zlib.zss", format="zss")
    with z:
        records: list[bytes] = list(z)
        hits: list[bytes] = list(z.search(prefix=b"app"))
        meta: dict[str, object] = z.metadata
        assert b"apple" in z and len(meta) == 0 and not z.verify()
        tree: dict[str, object] = z.to_dict()
        return len(records) + len(hits) + len(tree)


def amudai(data: Path) -> int:
    with shardkit.open(data / "amudai" / "single.amudai.shard", format="amudai") as s:
        names: list[str] = [f.name for f in s.schema]
        ids = s.read_column("id")
        assert names[0] == "id" and len(ids) == s.record_count and not s.verify()
        return s.record_count + len(s.stripes) + len(s.sections())


def neuroglancer(data: Path) -> int:
    folder = data / "neuroglancer" / "cv_identity_raw"
    ds: NgDataset = shardkit.open_dataset(folder)
    info = json.loads((folder / "info").read_text())
    shard = shardkit.open(folder / "0.shard", spec=info["sharding"])
    with shard:
        ids: list[int] = sorted(shard.keys())
        chunk: bytes = shard[ids[0]]
        assert ds[ids[0]] == chunk and ds.get(2**63) is None
        assert not shard.verify() and not ds.verify()
        return len(ids) + len(ds.summary())


def detected(data: Path) -> str:
    """Without ``format=``, the union of the readers: narrowed with isinstance."""
    reader = shardkit.open(BytesSource((data / "swh" / "single.shard").read_bytes()))
    if isinstance(reader, (SwhShard, ZssFile, MdbShard, AmudaiShard, NgShard)):
        name: str = reader.format_id
        reader.close()
        return name
    reader.close()
    return "dataset"


def main(argv: list[str]) -> int:
    data = Path(argv[1])
    try:
        counts = [swh(data), mdb(data), zss(data), amudai(data), neuroglancer(data)]
    except EntryNotFoundError as exc:
        print(f"missing: {exc}", file=sys.stderr)
        return 1
    except ShardkitError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps({"counts": counts, "detected": detected(data)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
