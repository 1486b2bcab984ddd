"""What every command shares: exit codes, progress, sizes, I/O options, record input, output
and error printing.

Nothing here reads a shard; the command modules (``read``, ``verify``, ``create``, ``ng``,
``schema``) build on it, and the library never imports from :mod:`shardkit.cli`.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import inspect
import json
import os
import pathlib
import sys
import warnings
from collections.abc import Callable, Iterator
from typing import IO, Any, TextIO

from ..errors import ShardkitError, WholeFileReadWarning
from ..render import to_json

__all__ = [
    "EXIT_ERROR",
    "EXIT_OK",
    "EXIT_PROBLEMS",
    "MAX_RECORD_BYTES",
    "Records",
    "add_remote_options",
    "base_parser",
    "byte_count",
    "call_with",
    "check_out",
    "confirm",
    "each_file",
    "input_files",
    "io_options",
    "iter_json_items",
    "iter_records",
    "keys_to_delete",
    "load_spec",
    "notices",
    "positive_byte_count",
    "print_out",
    "progress_bar",
    "report_error",
    "report_internal_error",
    "run_guarded",
    "show_progress",
    "terminator_bytes",
]

EXIT_OK, EXIT_PROBLEMS, EXIT_ERROR = 0, 1, 2


@contextlib.contextmanager
def progress_bar(args: argparse.Namespace, label: str, unit: str = "it"
                 ) -> Iterator[Callable[..., None]]:
    """A tqdm progress bar on stderr while the block runs, closed after it, as the bars of
    ``verify`` of many files; off unless :func:`show_progress`.

    Yields the callback to hand to the library: ``progress(done, total)`` (a known total) or
    ``progress(done)`` (a count: records read so far). tqdm keeps the updates to a few a
    second.
    """
    from tqdm import tqdm

    bar = tqdm(desc=label, unit=unit, disable=not show_progress(args), file=sys.stderr,
               dynamic_ncols=True, mininterval=0.25, smoothing=0.1)

    def report(done: int, total: int | None = None) -> None:
        if total is not None and total != bar.total:
            bar.total = total
        if done != bar.n:
            bar.update(done - bar.n)

    try:
        yield report
    finally:
        bar.close()


def show_progress(args: argparse.Namespace) -> bool:
    """``--progress``/``--no-progress``; by default, when stderr is a terminal."""
    given = getattr(args, "progress", None)
    return given if given is not None else sys.stderr.isatty()


def print_out(args: argparse.Namespace, human: str, data: Any) -> None:
    """``human`` (a newline added), or ``data`` as one line of JSON with ``--json``."""
    sys.stdout.write(to_json(data) + "\n" if args.json else human + ("\n" if human else ""))



def call_with(func: Callable[..., Any], what: str, reader: Any, **given: Any) -> Any:
    """Call ``func`` with the options the user gave; refuse options the format does not take."""
    given = {k: v for k, v in given.items() if v is not None and v is not False}
    params = inspect.signature(func).parameters
    unknown = [k for k in given if k not in params]
    if unknown:
        flags = ", ".join("--" + k.replace("_", "-") for k in unknown)
        raise ShardkitError(f"{what}: {flags} not supported for {reader.format_name}")
    return func(**given)


def confirm(args: argparse.Namespace, question: str) -> bool:
    """``--yes``, or ask on the terminal; without one, refuse (a ShardkitError)."""
    if getattr(args, "yes", False):
        return True
    if not sys.stdin.isatty():
        raise ShardkitError(f"{question} (no terminal to ask: pass --yes)")
    sys.stderr.write(f"{question} [y/N] ")
    sys.stderr.flush()
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def base_parser() -> argparse.ArgumentParser:
    """A parent parser of the options every command takes: ``--json`` and ``--debug``."""
    base = argparse.ArgumentParser(add_help=False)
    base.add_argument("--json", action="store_true", help="machine-readable JSON output")
    base.add_argument("--debug", action="store_true", help="show tracebacks")
    return base


# -- sizes -------------------------------------------------------------------------------------

_BYTE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_MAX_BYTE_COUNT = (1 << 63) - 1


def byte_count(text: str, *, positive: bool = False) -> int:
    """A size option: ``65536``, ``64K``, ``1.5G``, ``32MiB``, ``2TB`` (units of 1024).

    The command line's one parser of sizes (an ``argparse`` type through
    :func:`_byte_count` and :func:`positive_byte_count`). Fractions are rounded down to
    whole bytes before the range is checked: at least 0 bytes, or 1 with ``positive``, and
    below 2**63.

    Raises:
        argparse.ArgumentTypeError: Not a size (``inf`` and ``nan`` included), or out of range.
    """
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    unit = t[-1] if t and t[-1] in "KMGT" else ""
    number = t[: len(t) - len(unit)].strip()
    try:
        if number.isdigit():
            value = int(number) * _BYTE_UNITS[unit]
        else:
            value = int(float(number) * _BYTE_UNITS[unit])
    except (ValueError, OverflowError):  # inf: OverflowError; nan: ValueError
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 65536, 64K, 32M, "
                                         "1.5G)") from None
    if value < (1 if positive else 0):
        least = "at least 1 byte" if positive else "at least 0"
        raise argparse.ArgumentTypeError(f"must be {least}: {text!r}")
    if value > _MAX_BYTE_COUNT:
        raise argparse.ArgumentTypeError(f"too large: {text!r} (at most 2**63 - 1 bytes)")
    return value


def _byte_count(text: str) -> int:
    """``--cache``-style sizes: 0 or more bytes."""
    return byte_count(text)


def positive_byte_count(text: str) -> int:
    """Sizes that must be at least one byte."""
    return byte_count(text, positive=True)



# -- reading: I/O options, --spec --------------------------------------------------------------

def add_remote_options(parser: argparse.ArgumentParser) -> None:
    """Options for URLs (see shardkit.remote.RemoteSource); unset means the default."""
    group = parser.add_argument_group("remote files (URLs)")
    group.add_argument("--cache", metavar="BYTES", type=_byte_count,
                       help="bytes of remote blocks kept in memory (default 32M; 0: none)")
    group.add_argument("--block-size", metavar="BYTES", type=positive_byte_count,
                       help="alignment and smallest remote request (default 64K)")
    group.add_argument("--concurrency", metavar="N", type=int,
                       help="remote requests in flight at once (default 8)")
    group.add_argument("--retries", metavar="N", type=int,
                       help="retries after a transient network failure (default 3)")
    group.add_argument("--max-whole-read", metavar="BYTES", type=_byte_count,
                       help="a server that ignores Range requests has its files up to BYTES "
                            "read whole, larger ones refused (default 16M; 0: never)")


def io_options(args: argparse.Namespace) -> dict[str, Any] | None:
    """The remote I/O options the user gave, as ``open_reader(io_options=...)`` takes them."""
    given = {k: getattr(args, k, None)
             for k in ("cache", "block_size", "concurrency", "retries", "max_whole_read")}
    return {k: v for k, v in given.items() if v is not None} or None



def load_spec(text: str) -> Any:
    """--spec: JSON text, or the path of a JSON file."""
    try:
        if not text.lstrip().startswith("{") and os.path.exists(text):
            with open(text, encoding="utf-8") as fh:
                return json.load(fh)
        return json.loads(text)
    except (OSError, ValueError) as exc:
        raise ShardkitError(f"--spec: not a JSON object or file: {exc}") from exc


# -- record input (create --format zss|zs) -----------------------------------------------------

#: Largest record ``iter_records`` accepts from a length prefix when the input's size is not
#: known (stdin, a pipe); a larger prefix is refused before anything is allocated.
MAX_RECORD_BYTES = 1 << 30
_CHUNK = 1 << 20


def json_object(text: str | bytes, where: str, what: str = "a JSON object") -> dict[str, Any]:
    """``text`` parsed as JSON, which must be an object; errors start with ``where``."""
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ShardkitError(f"{where}: not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ShardkitError(f"{where}: must be {what}, not {type(value).__name__}")
    return value


def terminator_bytes(text: str | None) -> bytes:
    """``--terminator``: backslash escapes allowed (``\\n``, ``\\0``, ``\\x1e``)."""
    if text is None:
        return b"\n"
    try:
        value = codecs.decode(text, "unicode_escape").encode("latin-1")
    except (UnicodeError, ValueError) as exc:
        raise ShardkitError(f"--terminator: not a byte string: {text!r} ({exc})") from exc
    if not value:
        raise ShardkitError("--terminator: must not be empty")
    return value


def _open_input(name: str) -> tuple[IO[bytes], int | None, bool]:
    """``(file, size or None, close it)`` for an input name; ``-`` is stdin."""
    if name == "-":
        return sys.stdin.buffer, None, False
    fh = open(name, "rb")  # noqa: SIM115 - closed by the caller
    try:
        size: int | None = os.fstat(fh.fileno()).st_size
        if not os.path.isfile(name):
            size = None
    except OSError:
        size = None
    return fh, size, True


def _terminated(fh: IO[bytes], name: str, sep: bytes, counted: list[int]) -> Iterator[bytes]:
    pending = b""
    while True:
        chunk = fh.read(_CHUNK)
        if not chunk:
            break
        pending += chunk
        parts = pending.split(sep)
        pending = parts.pop()
        counted[0] += len(parts)
        yield from parts
    if pending:  # the last record, not followed by a terminator
        counted[0] += 1
        yield pending


def _read_exactly(fh: IO[bytes], n: int) -> bytes:
    parts = []
    while n:
        chunk = fh.read(min(n, _CHUNK))
        if not chunk:
            break
        parts.append(chunk)
        n -= len(chunk)
    return b"".join(parts)


def _length_prefixed(fh: IO[bytes], name: str, size: int | None, kind: str,
                     counted: list[int]) -> Iterator[bytes]:
    pos = 0
    number = 0
    while True:
        start = pos
        if kind == "u64le":
            head = _read_exactly(fh, 8)
            if not head:
                return
            if len(head) < 8:
                raise ShardkitError(f"{name}: truncated: record {number} at byte {start}: "
                                    f"u64le length needs 8 bytes, got {len(head)}")
            length = int.from_bytes(head, "little")
            pos += 8
        else:
            length = shift = 0
            while True:
                b = fh.read(1)
                if not b:
                    if pos == start:
                        return
                    raise ShardkitError(f"{name}: truncated: record {number} at byte {start}: "
                                        "uleb128 length cut off")
                pos += 1
                length |= (b[0] & 0x7F) << shift
                shift += 7
                if not b[0] & 0x80:
                    break
                if shift >= 64:
                    raise ShardkitError(f"{name}: record {number} at byte {start}: uleb128 "
                                        "length longer than 64 bits")
        left = size - pos if size is not None else MAX_RECORD_BYTES
        if length > left:
            what = f"{left} byte(s) left in the file" if size is not None else \
                f"the limit of {MAX_RECORD_BYTES} bytes per record"
            raise ShardkitError(f"{name}: truncated: record {number} at byte {start}: length "
                                f"{length} is more than {what}")
        record = _read_exactly(fh, length)
        if len(record) < length:
            raise ShardkitError(f"{name}: truncated: record {number} at byte {start}: needs "
                                f"{length} bytes, got {len(record)}")
        pos += length
        number += 1
        counted[0] += 1
        yield record


class Records:
    """The records of several inputs as one iteration, and which input each came from.

    :meth:`where` names the input, the record number in it and (newline-terminated input) its
    line, for a record the consumer refuses by its overall number (``create`` names the input
    of an unsorted record). Nothing is kept per record: only where each input starts.
    """

    def __init__(self, inputs: list[str], records: Callable[[str, list[int]], Iterator[bytes]],
                 newline: bool) -> None:
        self._inputs = inputs
        self._records = records
        self._newline = newline
        self._starts: list[tuple[int, str]] = []  # (overall number of its first record, name)
        self._counted = [0]

    def __iter__(self) -> Iterator[bytes]:
        for name in self._inputs:
            self._starts.append((self._counted[0], "stdin" if name == "-" else name))
            yield from self._records(name, self._counted)

    def where(self, index: int) -> str:
        """``INPUT: record N (line L)`` for the record of overall number ``index`` (0-based)."""
        first, name = 0, "input"
        for start, shown in self._starts:
            if start > index:
                break
            first, name = start, shown
        n = index - first
        return f"{name}: record {n}" + (f" (line {n + 1})" if self._newline else "")


def _hex_record(text: Any, name: str, number: int, line: bool) -> bytes:
    where = f"{name}: record {number}" + (f" (line {number + 1})" if line else "")
    if not isinstance(text, str):
        raise ShardkitError(f"{where}: not a hex string: {json.dumps(text)[:60]}")
    try:
        return bytes.fromhex(text.removeprefix("hex:"))
    except ValueError:
        raise ShardkitError(f"{where}: not hex: {text[:60]!r}") from None


def _hex_lines(fh: IO[bytes], name: str, counted: list[int]) -> Iterator[bytes]:
    """``--input-format hex``: one record a line in hex, as ``ls --hex`` prints them."""
    for number, line in enumerate(fh):
        counted[0] += 1
        yield _hex_record(line.decode("ascii", "replace").strip(), name, number, True)


def iter_json_items(fh: IO[bytes], name: str, under: str | None = None,
                    before: list[str] | None = None) -> Iterator[Any]:
    """The items of a JSON array, streamed (memory: one read chunk plus one item).

    The input is a JSON array (``ls --json``), JSON lines (one value a line), or, with
    ``under``, an object whose top-level key ``under`` holds the array (``dump``: the
    ``entries``; what comes before it, a summary, is skipped, or appended to ``before``).

    Raises:
        ShardkitError: Not JSON, naming the input and the item number.
    """
    decoder = json.JSONDecoder()
    buf = ""
    pos = 0
    done = False
    reader = codecs.getincrementaldecoder("utf-8")()

    def more() -> bool:
        nonlocal buf, pos, done
        if done:
            return False
        chunk = fh.read(_CHUNK)
        done = not chunk
        buf = buf[pos:] + reader.decode(chunk, final=done)
        pos = 0
        return True

    if under is not None:
        import re

        opening = re.compile(r'"' + re.escape(under) + r'"\s*:\s*\[')
        while not (m := opening.search(buf)):
            if not more():
                raise ShardkitError(f"{name}: no \"{under}\" list in this JSON")
        if before is not None:
            before.append(buf[:m.start()])
        pos = m.end()
    number = 0
    while True:
        pos = _skip_separators(buf, pos)
        if pos >= len(buf):
            if more():
                continue
            return
        if buf[pos] == "]":
            if under is not None:
                return
            pos += 1
            continue
        try:
            item, end = decoder.raw_decode(buf, pos)
        except ValueError as exc:
            if more():
                continue
            raise ShardkitError(f"{name}: item {number} is not JSON: {exc.args[0]} at "
                                f"{buf[pos:pos + 40]!r}") from None
        if end == len(buf) and more():  # a number may go on in the next chunk
            continue
        pos = end
        number += 1
        yield item


def _skip_separators(buf: str, pos: int) -> int:
    """Where the next item of :func:`iter_json_items` may start: past the blanks, commas and
    the array's ``[``, from ``pos``."""
    while pos < len(buf) and buf[pos] in " \t\r\n,[":
        pos += 1
    return pos


def input_files(args: argparse.Namespace) -> list[str]:
    """The files of ``args.inputs`` (``create --format swh|mosaic``); ``-`` alone: their
    names, one a line on stdin."""
    files = list(args.inputs)
    if files == ["-"]:
        files = [line.strip() for line in sys.stdin.read().splitlines() if line.strip()]
    return files


def each_file(files: list[str], progress: Callable[[int, int], None]) -> Iterator[str]:
    """``files`` one by one, ``progress(files done, files)`` before each and at the end."""
    for done, name in enumerate(files):
        progress(done, len(files))
        yield name
    progress(len(files), len(files))


def keys_to_delete(args: argparse.Namespace, normalize: Callable[[str], bytes]) -> list[bytes]:
    """``delete``'s KEYs, each through the format's ``normalize``; ``-`` alone: keys separated
    by white space on stdin (then nothing is asked: ``args.yes`` is set).

    Raises:
        ShardkitError: A malformed key, or a key named twice.
    """
    keys = list(args.keys)
    if keys == ["-"]:
        keys = sys.stdin.read().split()
        args.yes = True
    try:
        wanted = [normalize(k) for k in keys]
    except ShardkitError as exc:
        raise ShardkitError(f"delete {args.shard}: {exc}") from exc
    if len(set(wanted)) < len(wanted):
        raise ShardkitError(f"delete {args.shard}: duplicate keys")
    return wanted


def iter_records(args: argparse.Namespace) -> Records:
    """The records of ``args.inputs``, streamed, as ``zs make`` takes them.

    Each input is a file or ``-`` (stdin). Records are separated by ``--terminator``
    (default a newline; backslash escapes allowed; a last record without a terminator counts),
    or framed by ``--length-prefixed uleb128|u64le`` (each record preceded by its length).
    Memory is bounded by one read chunk plus one record.

    Raises:
        ShardkitError: A cut length prefix or record, naming the input, the record number
            and its byte offset.
    """
    framing: str | None = getattr(args, "length_prefixed", None)
    sep = None if framing else terminator_bytes(getattr(args, "terminator", None))
    if framing and getattr(args, "terminator", None) is not None:
        raise ShardkitError("give --terminator or --length-prefixed, not both")

    form = getattr(args, "input_format", None)
    if form is not None and (framing or getattr(args, "terminator", None) is not None):
        raise ShardkitError(f"--input-format {form}: records are one a line; --terminator "
                            "and --length-prefixed do not apply")

    def records(name: str, counted: list[int]) -> Iterator[bytes]:
        fh, size, close = _open_input(name)
        shown = "stdin" if name == "-" else name
        try:
            if form == "hex":
                yield from _hex_lines(fh, shown, counted)
            elif form == "json":
                for number, item in enumerate(iter_json_items(fh, shown)):
                    counted[0] += 1
                    yield _hex_record(item, shown, number, False)
            elif sep is not None:
                yield from _terminated(fh, shown, sep, counted)
            else:
                yield from _length_prefixed(fh, shown, size, framing or "uleb128", counted)
        finally:
            if close:
                fh.close()

    return Records(list(args.inputs), records, form == "hex" or (not form and sep == b"\n"))


# -- notices and errors ------------------------------------------------------------------------

@contextlib.contextmanager
def notices() -> Iterator[None]:
    """Say the library's notices (a file read whole because its server ignores Range) once
    per run on stderr, as ``shardkit: note: ...``; other warnings as Python shows them."""
    said: set[type[Warning]] = set()
    with warnings.catch_warnings():
        warnings.simplefilter("always", WholeFileReadWarning)
        shown = warnings.showwarning

        def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                 file: TextIO | None = None, line: str | None = None) -> None:
            if not issubclass(category, WholeFileReadWarning):
                shown(message, category, filename, lineno, file, line)
            elif category not in said:
                said.add(category)
                sys.stderr.write(f"shardkit: note: {message}\n")

        warnings.showwarning = show
        yield


# -- errors ------------------------------------------------------------------------------------

def check_out(out: str) -> None:
    """Refuse, naming OUT, an OUT that cannot be written: a folder, or in a missing folder
    (before any input is read; the writers would name their temporary file instead)."""
    path = pathlib.Path(out)
    if path.is_dir():
        raise ShardkitError(f"cannot write {out}: it is a folder (give a file name)")
    folder = path.parent
    if not folder.is_dir():
        raise ShardkitError(f"cannot write {out}: the folder {folder} does not exist")



def report_error(args: argparse.Namespace, exc: BaseException, msg: str) -> int:
    """One line on stderr (and the error as JSON on stdout with ``--json``); exit code 2."""
    if getattr(args, "json", False):
        sys.stdout.write(to_json({"error": type(exc).__name__, "message": msg,
                                  "offset": getattr(exc, "offset", None),
                                  "field": getattr(exc, "field", None)}) + "\n")
    sys.stderr.write(f"shardkit: error: {msg}\n")
    return EXIT_ERROR


def report_internal_error(exc: BaseException) -> int:
    """A bug of ours, said in one line instead of a traceback; exit code 2."""
    sys.stderr.write(f"shardkit: internal error: {type(exc).__name__}: {exc} "
                     "(rerun with --debug for the traceback, and please report it)\n")
    return EXIT_ERROR


def _naming_the_file(args: argparse.Namespace, exc: ShardkitError) -> str:
    """``FILE: message`` for an error about the bytes of the one file a command read (it names
    an offset or a field) unless the message starts with its name: a script checking many
    files must see which one is broken (an error in a two-level shard's stripe file names that
    file after the shard's)."""
    msg = str(exc)
    name = getattr(args, "file", None)
    if isinstance(name, list):
        name = name[0] if len(name) == 1 else None
    about_bytes = getattr(exc, "offset", None) is not None or getattr(exc, "field", None)
    if about_bytes and isinstance(name, str) and name not in ("", "-") and \
            not msg.startswith(name):
        return f"{name}: {msg}"
    return msg


def run_guarded(args: argparse.Namespace, func: Callable[[], int]) -> int:
    """Run a command: a closed pipe is success, ^C is 130, errors are one line (exit 2)."""
    try:
        return func()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except KeyboardInterrupt:
        return 130
    except (ShardkitError, OSError) as exc:
        if args.debug:
            raise
        if isinstance(exc, ShardkitError):
            msg = _naming_the_file(args, exc)
        elif getattr(exc, "filename", None):
            msg = f"{exc.filename}: {exc.strerror or exc}"
        else:
            msg = f"{getattr(args, 'file', None)}: {exc}"
        return report_error(args, exc, msg)
    except Exception as exc:  # last line of defence: never a raw traceback
        if args.debug:
            raise
        return report_internal_error(exc)
