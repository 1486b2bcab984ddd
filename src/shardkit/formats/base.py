"""What every format reader shares: the source it reads, context management, sections."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Self

from ..errors import EntryNotFoundError
from ..sources import ByteSource

__all__ = ["Reader", "Section"]


@dataclass(frozen=True)
class Section:
    """One byte range of a file, for ``shardkit map``.

    Attributes:
        name: Field path of the range (``/header``, ``/index/entries``).
        start: First byte (absolute).
        end: One past the last byte.
        note: What the range holds.
        extra: Structured details for ``map --json`` (a block's level, first key...).
    """

    name: str
    start: int
    end: int
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def size(self) -> int:
        """Length in bytes."""
        return self.end - self.start

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON output."""
        out = {"name": self.name, "start": self.start, "end": self.end, "size": self.size,
               "note": self.note}
        out.update(self.extra)
        return out


class ReaderPart:
    """Base of the classes a reader is assembled from (``class MdbShard(MdbSummary, ...,
    Reader)``): what every :class:`Reader` has, declared for the type checker (nothing at run
    time), so that each part declares only what it uses of its own reader."""

    if TYPE_CHECKING:
        format_id: str
        format_name: str
        source: ByteSource


class Reader:
    """Base of the format readers: owns a :class:`ByteSource` and closes it on exit."""

    format_id: str = ""
    format_name: str = ""

    def __init__(self, source: ByteSource) -> None:
        self.source = source

    def close(self) -> None:
        """Release the source (unmap the file)."""
        self.source.close()

    def __getitem__(self, key: Any) -> Any:
        raise NotImplementedError

    def get(self, key: Any, default: Any = None) -> Any:
        """``self[key]``, or ``default`` when the key is absent (or deleted), as a mapping does.

        ``self[key]`` raises instead: :class:`~shardkit.errors.EntryNotFoundError`, or its
        subclass :class:`~shardkit.errors.DeletedEntryError` for a deleted key.
        """
        try:
            return self[key]
        except EntryNotFoundError:
            return default

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.source.name!r}>"
