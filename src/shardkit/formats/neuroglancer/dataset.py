"""Datasets: the ``info`` file and its sharded parts (:class:`NgDataset`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ...errors import Problem, ShardkitError
from ..base import Section
from .kv import ShardedKV
from .shard import _MISSING, NgShard
from .spec import ShardingSpec
from .store import _SourceName, _Store

# -- datasets -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class EncodedChunk:
    """An image chunk in an encoding shardkit does not decode (``jpeg``, ``png``...).

    Attributes:
        encoding: The scale's ``encoding``.
        data: The stored bytes (``data_encoding`` undone).
        shape: The chunk's ``(channels, z, y, x)`` shape, clipped at the volume's edge.
    """

    encoding: str
    data: bytes
    shape: tuple[int, int, int, int]


class NgDataset:
    """Base of the dataset readers: the ``info`` file, a store and the CLI hooks."""

    format_id = "neuroglancer"
    format_name = "Neuroglancer precomputed sharded dataset"

    def __init__(self, store: _Store, info: dict[str, Any]) -> None:
        self.store = store
        self.info = info
        self.source = _SourceName(store.name)

    @property
    def kv(self) -> ShardedKV:
        """The mapping ``ds[key]``, ``keys()`` and friends act on."""
        raise NotImplementedError

    @property
    def spec(self) -> ShardingSpec:
        """The sharding spec (for an image dataset, the first scale's)."""
        return self.kv.spec

    _kv_getitem: Callable[[int], bytes]

    def __getitem__(self, key: int) -> bytes:
        try:
            get = self._kv_getitem
        except AttributeError:
            get = self._kv_getitem = self.kv.__getitem__
        return get(key)

    def __contains__(self, key: object) -> bool:
        return key in self.kv

    def get(self, key: int, default: Any = None, *, decode: bool = False) -> Any:
        """The value of ``key`` or ``default``.

        With ``decode=True`` the value of a skeleton or multi-resolution mesh layer comes back
        decoded (:func:`shardkit.ng.payloads.decode_payload`: numpy arrays, as cloud-volume
        decodes them) instead of as bytes.
        """
        value = self.kv.get(key, _MISSING)
        if value is _MISSING:
            return default
        if not decode:
            return value
        from ...ng.payloads import decode_payload  # lazily: most users want the bytes

        return decode_payload(value, self.info)

    def get_many(self, keys: Iterable[int], default: Any = _MISSING) -> list[Any]:
        """Values of many keys with coalesced reads."""
        return self.kv.get_many(keys, default)

    def keys(self) -> Iterator[int]:
        """Every chunk id."""
        return self.kv.keys()

    def __iter__(self) -> Iterator[int]:
        return self.kv.keys()

    def items(self) -> Iterator[tuple[int, bytes]]:
        """Every ``(chunk id, value)``."""
        return self.kv.items()

    def __len__(self) -> int:
        return len(self.kv)

    format_key = staticmethod(NgShard.format_key)
    parse_key = staticmethod(NgShard.parse_key)

    def _all_kvs(self) -> list[tuple[str, ShardedKV]]:
        return [("", self.kv)]

    def verify(self, progress: Callable[[int, int], None] | None = None) -> list[Problem]:
        """Every shard of every sharded part (see :meth:`NgShard.verify`)."""
        problems = []
        for prefix, kv in self._all_kvs():
            problems += [Problem(p.check, f"{prefix}{p.message}", p.offset, p.field)
                         for p in kv.verify(progress)]
        return problems

    def sections(self) -> list[Section]:
        """The layout of every shard file."""
        out = []
        for prefix, kv in self._all_kvs():
            out += [Section(f"{prefix}{s.name}", s.start, s.end, s.note)
                    for s in kv.sections()]
        return out

    def _counting(self, count_chunks: bool | None) -> bool:
        return not self.store.remote if count_chunks is None else bool(count_chunks)

    def _kv_summary(self, kv: ShardedKV, count: bool) -> dict[str, Any]:
        out: dict[str, Any] = {"sharding": kv.spec.to_dict(), "num_shards": kv.spec.num_shards,
                               "shard_files": None, "chunk_count": None}
        if count:
            files = chunks = 0
            unreadable = []
            for number in kv.shard_numbers():
                try:  # one bad shard file is named; the others are still counted
                    reader = kv.shard(number)
                    if reader is None:
                        continue
                    chunks += len(reader)
                    files += 1
                except FileNotFoundError:  # unlisted (URL): a shard file that is not there
                    kv._forget(number)
                except ShardkitError as exc:
                    name = f"{kv.store.name}/{kv.spec.shard_name(number)}"
                    unreadable.append({"shard": name, "error": str(exc)})
            out["shard_files"] = files + len(unreadable)
            out["chunk_count"] = chunks
            if unreadable:
                out["unreadable_shards"] = unreadable
        return out

    def summary(self, count_chunks: bool | None = None) -> dict[str, Any]:
        """Type, spec, and shard-file and chunk counts.

        Args:
            count_chunks: Count shard files and chunks: a scan of every shard index and
                minishard index. By default done for a local dataset only: remotely it is many
                requests, and the summary costs nothing beyond the ``info`` file.
        """
        count = self._counting(count_chunks)
        out = {"format": self.format_name, "dataset": self.store.name,
               "type": self.info.get("@type"), **self._kv_summary(self.kv, count)}
        if not count:
            out["counts"] = "not counted (summary(count_chunks=True) scans every shard)"
        return out

    def to_dict(self) -> dict[str, Any]:
        """The ``info`` file and every shard's tree."""
        shards = []
        for _, kv in self._all_kvs():
            for reader in kv._existing_shards():
                with kv.naming(reader):
                    shards.append(reader.to_dict())
        return {"format": self.format_id, "dataset": self.store.name, "info": self.info,
                "shards": shards}

    def close(self) -> None:
        """Close every open shard."""
        for _, kv in self._all_kvs():
            kv.close()

    def __enter__(self) -> NgDataset:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.store.name!r}>"


class NgKeyValueDataset(NgDataset):
    """Skeletons, meshes or annotations by id: ``ds[segment_id] -> bytes``."""

    def __init__(self, store: _Store, info: dict[str, Any], spec: ShardingSpec,
                 subdir: str = "", **shard_options: Any) -> None:
        super().__init__(store, info)
        self.subdir = subdir
        self._kv = ShardedKV(store.sub(subdir) if subdir else store, spec, **shard_options)

    @property
    def kv(self) -> ShardedKV:
        return self._kv
