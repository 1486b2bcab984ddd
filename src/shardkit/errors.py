"""The shardkit exception tree.

Every error raised while reading a shard is a :class:`ShardkitError`. Errors about the bytes of a
file carry the absolute byte ``offset`` and the schema ``field`` path where reading failed, so a
message reads like ``truncated: needs 40 bytes, 12 remain (at byte 2001311, field
/index/entries/3)``. Several classes also derive from a builtin (``EOFError``, ``KeyError``,
``NotImplementedError``) so callers may catch either.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "BadMagicError",
    "ChecksumError",
    "CorruptShardError",
    "DeletedEntryError",
    "EntryNotFoundError",
    "FormatError",
    "InvalidKeyError",
    "LayoutError",
    "LimitExceededError",
    "Problem",
    "ShardkitError",
    "TruncatedError",
    "UnknownFormatError",
    "UnsupportedVersionError",
    "WholeFileReadWarning",
]


class ShardkitError(Exception):
    """Root of every error shardkit raises on purpose.

    Attributes:
        message: What went wrong, without the location suffix.
        offset: Absolute byte offset in the file where the problem lies, if known.
        field: Schema field path (``/header/ofs_index``), if known.
    """

    def __init__(self, message: str, *, offset: int | None = None, field: str | None = None):
        self.message = message
        self.offset = offset
        self.field = field
        super().__init__(message)

    def __str__(self) -> str:
        return self.message + _where(self.offset, self.field)


class FormatError(ShardkitError):
    """The bytes are not (a supported variant of) the expected format."""


class BadMagicError(FormatError):
    """The file does not start with the format's magic bytes."""


class UnknownFormatError(FormatError):
    """No supported format matched; ``tried`` lists what was checked and why it failed."""

    def __init__(self, message: str, tried: list[str] | None = None, *,
                 offset: int | None = None):
        self.tried = list(tried or [])
        super().__init__(message, offset=offset)


class UnsupportedVersionError(FormatError, NotImplementedError):
    """A valid file that uses a version or feature shardkit does not implement."""


class CorruptShardError(ShardkitError):
    """The file claims to be of the format but its content is inconsistent."""


class LayoutError(CorruptShardError):
    """An offset, length or count points outside its section, overlaps, or contradicts another."""


class LimitExceededError(CorruptShardError):
    """A size read from the file exceeds a safety cap (decompression, recursion, hops)."""


class ChecksumError(CorruptShardError):
    """A stored checksum or hash does not match the bytes it covers.

    Attributes:
        region: Name of the region the checksum covers.
        stored: The value found in the file.
        computed: The value computed from the bytes.
    """

    def __init__(
        self,
        region: str,
        stored: Any,
        computed: Any,
        *,
        offset: int | None = None,
        field: str | None = None,
    ):
        self.region = region
        self.stored = stored
        self.computed = computed
        super().__init__(
            f"checksum mismatch in {region}: stored {_show(stored)}, computed {_show(computed)}",
            offset=offset,
            field=field,
        )


class TruncatedError(CorruptShardError, EOFError):
    """The file ends before a structure it declares.

    Attributes:
        needed: Bytes the read needed, if known.
        available: Bytes that remained, if known.
    """

    def __init__(
        self,
        message: str,
        *,
        needed: int | None = None,
        available: int | None = None,
        offset: int | None = None,
        field: str | None = None,
    ):
        self.needed = needed
        self.available = available
        super().__init__(message, offset=offset, field=field)


class WholeFileReadWarning(UserWarning):
    """A server ignored ``Range`` and a file was read whole (it was within ``max_whole_read``).

    Also :class:`shardkit.remote.WholeFileReadWarning`. The command line says this once on
    stderr; a program can filter it with :mod:`warnings`.
    """


class EntryNotFoundError(ShardkitError, KeyError):
    """The key is not in the shard (also a ``KeyError``)."""

    def __init__(self, key: Any, message: str | None = None):
        self.key = key
        super().__init__(message or f"key not found: {_show(key)}")

    def __str__(self) -> str:  # KeyError would repr() the message
        return ShardkitError.__str__(self)


class DeletedEntryError(EntryNotFoundError):
    """The key's slot holds a tombstone: the entry was deleted."""


class InvalidKeyError(ShardkitError, ValueError):
    """A key that cannot be one of this format's keys (wrong type, length or spelling).

    Also a ``ValueError``. The CLI treats it as a usage error (exit code 2).
    """


class Problem:
    """One finding of ``verify()``: immutable, compared and hashed by value.

    Attributes:
        check: Short name of the check (``object_bounds``, ``slot``...).
        message: Human-readable description.
        offset: Absolute byte offset concerned, if any.
        field: Schema field path concerned, if any.
    """

    # A plain class, not a dataclass: ``import shardkit`` stays free of the dataclasses
    # module (and the inspect module it loads), which is most of its start-up cost.
    __slots__ = ("check", "field", "message", "offset")
    __match_args__ = ("check", "message", "offset", "field")

    check: str
    message: str
    offset: int | None
    field: str | None

    def __init__(self, check: str, message: str, offset: int | None = None,
                 field: str | None = None) -> None:
        for name, value in (("check", check), ("message", message), ("offset", offset),
                            ("field", field)):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Problem is immutable: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Problem is immutable: cannot delete {name!r}")

    def _key(self) -> tuple[str, str, int | None, str | None]:
        return (self.check, self.message, self.offset, self.field)

    def __reduce__(self) -> tuple[type[Problem], tuple[str, str, int | None, str | None]]:
        return (Problem, self._key())  # pickles (e.g. from worker processes) by value

    def __eq__(self, other: object) -> bool:
        if type(other) is not Problem:
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (f"Problem(check={self.check!r}, message={self.message!r}, "
                f"offset={self.offset!r}, field={self.field!r})")

    def __str__(self) -> str:
        return f"{self.check}: {self.message}" + _where(self.offset, self.field)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON output."""
        return {"check": self.check, "message": self.message, "offset": self.offset,
                "field": self.field}


def _where(offset: int | None, field: str | None) -> str:
    """`` (at byte N, field /a/b)``, or nothing when neither is known."""
    parts = []
    if offset is not None:
        parts.append(f"at byte {offset}")
    if field:
        parts.append(f"field {field}")
    return f" ({', '.join(parts)})" if parts else ""


def _show(value: Any) -> str:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, int):
        return f"{value:#x}"
    return repr(value) if not isinstance(value, str) else value
