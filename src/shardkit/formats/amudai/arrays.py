"""Amudai columns as Arrow arrays built from the decoded buffers, never from Python values.

:meth:`AmudaiArrays.to_arrow` and ``read_column(path, arrow=True)`` decode each column of each
stripe block by block into numpy arrays (values, valid masks, offsets and the bytes of binary
values) and hand them to Arrow as buffers: a stripe's column becomes one chunk of the table's
column, with the types of :mod:`.arrow`. Only KustoDecimal values (a decimal128 conversion of
each value) and stripe constants of nested types go through Python values. Every check of the
value readers applies: the same counts, offsets, dictionaries and UTF-8 validity.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...errors import LayoutError
from . import blocks as _blocks_mod
from ._deps import np, spb
from ._host import ShardHost
from .arrow import NS_TICKS, UNIX_EPOCH_TICKS, arrow_field, arrow_type, pyarrow, to_arrow_values
from .blocks import decode_binary_raw
from .columns import _Unbacked
from .model import _BYTES_TYPES, AmudaiField, _dtype_of, _is_text

if TYPE_CHECKING:

    import pyarrow as pa


__all__ = ["AmudaiArrays"]

_NESTED = ("Struct", "List", "Map", "FixedSizeList")
_I64 = 1 << 63


class _Wide(Exception):
    """A DateTime or TimeSpan node holds a value its nanosecond unit cannot: the column is
    built again with microseconds for that node (``schema_id``)."""

    def __init__(self, schema_id: int) -> None:
        super().__init__(schema_id)
        self.schema_id = schema_id


class AmudaiArrays(ShardHost):
    """Arrow arrays for :class:`~shardkit.formats.amudai.AmudaiShard` (see the module doc)."""

    def to_arrow(self) -> Any:
        """The whole shard as a ``pyarrow.Table``: one column per top-level field, in schema
        order, one chunk per stripe, typed as :mod:`.arrow` says (needs the
        ``shardkit[arrow]`` extra)."""
        pa = pyarrow()
        self._stripe_records()
        columns, fields = [], []
        for node in self.schema:
            chunks, units = self._arrow_chunks(node)
            typ = arrow_type(node, units)
            columns.append(pa.chunked_array(chunks, type=typ))
            fields.append(arrow_field(node, units=units))
        return pa.Table.from_arrays(columns, schema=pa.schema(fields))

    def _arrow_column(self, node: AmudaiField) -> Any:
        """One column (any node, nested ones too) as one ``pyarrow.Array``."""
        pa = pyarrow()
        chunks, units = self._arrow_chunks(node)
        typ = arrow_type(node, units)
        return pa.concat_arrays(chunks) if chunks else pa.array([], type=typ)

    def _arrow_chunks(self, node: AmudaiField
                      ) -> tuple[list[Any], dict[int, str]]:
        """A column's chunk per stripe, and the units chosen for its time nodes."""
        units: dict[int, str] = {}
        while True:
            unbacked = self._unbacked()
            try:
                chunks = [self._arrow_chunk(k, node, self._positions(k, node, stripe), units,
                                            unbacked)
                          for k, stripe in enumerate(self.stripes)]
            except _Wide as wide:
                if units.get(wide.schema_id) == "us":  # pragma: no cover - us always fits
                    raise
                units[wide.schema_id] = "us"
                continue
            return chunks, units

    def _arrow_chunk(self, k: int, node: AmudaiField,
                     count: int, units: dict[int, str], unbacked: _Unbacked) -> Any:
        """Column ``node`` of stripe ``k`` (``count`` positions) as a ``pyarrow.Array``."""
        pa = pyarrow()
        field = f"/stripes/{k}/fields/{node.path}"
        typ = arrow_type(node, units)
        t = node.type
        if node.extended_type == "KustoDecimal" and t == "FixedSizeBinary":
            return self._python_chunk(k, node, count, units, unbacked)
        sfd = self._sized_field(k, node, count, field, unbacked)
        if sfd is None:
            return pa.nulls(count, typ)
        if sfd.field.HasField("constant_value"):
            return self._constant_chunk(k, node, count, units, unbacked, sfd, typ, field)
        bufs = self._buffers(sfd, field)
        valid: np.ndarray | None = None
        if spb.PRESENCE in bufs:
            valid = self._bits(bufs[spb.PRESENCE], count, field + "/presence")
        if t == "Struct":
            kids = [self._arrow_chunk(k, c, count, units, unbacked) for c in node.children]
            return pa.StructArray.from_arrays(
                kids, fields=[arrow_field(c, units=units) for c in node.children],
                mask=None if valid is None else _bool_array(pa, ~valid))
        if t in ("List", "Map"):
            return self._list_chunk(k, node, bufs, count, valid, units, unbacked, field)
        if t == "FixedSizeList":
            size = node.fixed_size
            if len(node.children) != 1 or size <= 0:
                raise LayoutError("FixedSizeList needs one child and a positive size",
                                  field=field)
            child = self._arrow_chunk(k, node.children[0], count * size, units, unbacked)
            return pa.FixedSizeListArray.from_arrays(
                child, type=typ, mask=None if valid is None else _bool_array(pa, ~valid))
        if t == "Boolean":
            if spb.DATA not in bufs:
                raise LayoutError("Boolean field without a DATA buffer", field=field)
            bits = self._bits(bufs[spb.DATA], count, field + "/data")
            return _bool_array(pa, bits, None if valid is None else ~valid)
        if spb.DATA not in bufs:
            raise LayoutError(f"{t} field without a DATA buffer", field=field)
        dtype = _dtype_of(node)
        if dtype is not None:
            values, mask = self._numeric_into(bufs[spb.DATA], dtype, count, field + "/data")
            return self._numeric_array(node, values, mask, units)
        if t in _BYTES_TYPES:
            return self._bytes_chunk(node, bufs, count, typ, field)
        return self._python_chunk(k, node, count, units, unbacked, counted=True)

    def _constant_chunk(self, k: int, node: AmudaiField, count: int, units: dict[int, str],
                        unbacked: _Unbacked, sfd: spb.StripeFieldDescriptor, typ: Any,
                        field: str) -> Any:
        """A stripe constant repeated ``count`` times as a ``pyarrow.Array`` (nested ones
        through Python values)."""
        pa = pyarrow()
        t = node.type
        if t in _NESTED:
            return self._python_chunk(k, node, count, units, unbacked, counted=True)
        value = self._constant_raw(sfd.field, node, field)
        if value is None:
            return pa.nulls(count, typ)
        dtype = _dtype_of(node)
        if dtype is not None:
            return self._numeric_array(node, np.full(count, value, dtype), None, units)
        if t in _BYTES_TYPES and isinstance(value, str) and not _is_text(node):
            value = value.encode("utf-8")
        return pa.repeat(pa.scalar(value, type=typ), count)

    def _numeric_into(self, buf: spb.EncodedBuffer,
                      dtype: np.dtype, count: int, field: str
                      ) -> tuple[np.ndarray, np.ndarray | None]:
        """A block stream's ``count`` values decoded into one array (no list of per-block
        arrays to concatenate: memory is the column's once), and its valid mask."""
        out = np.empty(count, dtype)
        mask: np.ndarray | None = None
        pos = 0
        for got, valid in self._numeric_pieces(buf, dtype, field):
            if pos + len(got) > count:
                raise LayoutError(f"DATA buffer holds more than the stripe's {count} values",
                                  offset=buf.buffer.range.start, field=field)
            out[pos:pos + len(got)] = got
            if valid is not None:
                if mask is None:
                    mask = np.ones(count, bool)
                mask[pos:pos + len(got)] = valid
            pos += len(got)
        if pos != count:
            raise LayoutError(f"DATA buffer holds {pos} values, the stripe {count}",
                              offset=buf.buffer.range.start, field=field)
        return out, mask

    def _python_chunk(self, k: int, node: AmudaiField,
                      count: int, units: dict[int, str], unbacked: _Unbacked,
                      counted: bool = False) -> Any:
        """A chunk through Python values (decimals, nested constants)."""
        pa = pyarrow()
        values = self._column_in_stripe(k, node, count, _Unbacked(_I64) if counted else unbacked,
                                        raw=True)
        mine: dict[int, str] = dict(units)
        out = to_arrow_values(node, values, mine)
        for sid, unit in mine.items():
            if units.get(sid) != unit:
                raise _Wide(sid)
        return pa.array(out, type=arrow_type(node, units))

    def _numeric_array(self, node: AmudaiField,
                       values: np.ndarray, mask: np.ndarray | None,
                       units: dict[int, str]) -> Any:
        """Fixed-width values (``mask``: valid positions, None: all) as an Arrow array."""
        pa = pyarrow()
        typ = arrow_type(node, units)
        nulls = None if mask is None else ~mask
        if node.type == "DateTime":
            present = values if mask is None else values[mask]
            unit = units.get(node.schema_id, "ns")
            lo, hi = NS_TICKS
            if unit == "ns" and present.size and (int(present.min()) < lo
                                                  or int(present.max()) > hi):
                raise _Wide(node.schema_id)
            if present.size and int(present.max()) >= _I64:  # past int64 ticks: no instant
                raise LayoutError(f"DateTime ticks {int(present.max())} past 9999-12-31",
                                  field=node.path)
            out = values.view(np.int64)  # in place: the ticks are not needed after this
            if nulls is not None:
                out[nulls] = UNIX_EPOCH_TICKS
            out -= np.int64(UNIX_EPOCH_TICKS)
            if unit == "ns":
                out *= 100
            else:
                out //= 10
            return _fixed_array(pa, out, typ, nulls)
        if node.type == "Int64" and node.extended_type == "KustoTimeSpan":
            if typ.unit == "ns":
                limit = (_I64 - 1) // 100
                present = values if mask is None else values[mask]
                if present.size and (int(present.min()) < -limit or int(present.max()) > limit):
                    raise _Wide(node.schema_id)
                out = values * 100
            else:
                out = values // 10
            return _fixed_array(pa, out, typ, nulls)
        return _fixed_array(pa, values, typ, nulls)

    def _list_chunk(self, k: int, node: AmudaiField,
                    bufs: dict[int, Any], count: int, valid: np.ndarray | None,
                    units: dict[int, str], unbacked: _Unbacked, field: str) -> Any:
        pa = pyarrow()
        t = node.type
        if spb.OFFSETS not in bufs:
            raise LayoutError(f"{t} field without an OFFSETS buffer", field=field)
        want = 1 if t == "List" else 2
        if len(node.children) != want:
            raise LayoutError(f"{t} field with {len(node.children)} children (expected "
                              f"{want})", field=field)
        offs, _ = self._numeric_stream(bufs[spb.OFFSETS], np.dtype("<u8"), field + "/offsets")
        self._check_offsets(offs, count, bufs[spb.OFFSETS], field)
        total = int(offs[-1])
        kids = [self._arrow_chunk(k, c, total, units, unbacked) for c in node.children]
        typ = arrow_type(node, units)
        if t == "Map":
            if total > _I64 >> 32:
                raise LayoutError(f"a map column of {total} entries (Arrow maps hold 2^31)",
                                  field=field)
            if kids[0].null_count:
                raise LayoutError("a map key is null", field=field + "/key")
            offsets = _fixed_array(pa, offs.astype(np.int32), pa.int32(),
                                   None if valid is None else np.append(~valid, False))
            return pa.MapArray.from_arrays(offsets, kids[0], kids[1], type=typ)
        offsets = _fixed_array(pa, offs.astype(np.int64), pa.int64(),
                               None if valid is None else np.append(~valid, False))
        return pa.LargeListArray.from_arrays(offsets, kids[0], type=typ)

    def _bytes_chunk(self, node: AmudaiField,
                     bufs: dict[int, Any], count: int, typ: Any, field: str) -> Any:
        pa = pyarrow()
        t = node.type
        fixed = node.fixed_size if t in ("FixedSizeBinary", "Guid") else 0
        if t == "Guid":
            fixed = fixed or 16
        text = _is_text(node)
        if spb.VALUE_DICTIONARY in bufs:
            entries, null_id = self.value_dictionary(bufs[spb.VALUE_DICTIONARY],
                                                     field + "/dictionary")
            ids, mask = self._numeric_into(bufs[spb.DATA], np.dtype("<u4"), count,
                                           field + "/data")
            if len(ids) and int(ids.max()) >= len(entries):
                raise LayoutError(f"dictionary id {int(ids.max())} of {len(entries)} entries",
                                  field=field + "/data")
            null = None if mask is None else ~mask
            if null_id is not None:
                hit = ids == null_id
                if hit.any():
                    null = hit if null is None else null | hit
            return _as_type(_dictionary_take(entries, ids, null, fixed), typ, text, field)
        # the values go straight into one growing buffer and one offsets array of the
        # stripe's size (no list of block bytes to join: the column's bytes are held once)
        data = bytearray()
        offs_out = None if fixed else np.empty(count + 1, np.int64)
        ok: np.ndarray | None = None
        pos = 0
        for n, parts, valid, base, where in self._block_parts(bufs[spb.DATA], field + "/data"):
            got, offs = decode_binary_raw(parts.values, n, fixed,
                                          base=base + parts.values_offset,
                                          field=where + "/values")
            if pos + n <= count:  # more values than expected: counted, then refused
                if offs_out is not None:
                    offs_out[pos : pos + n] = offs[:-1] + len(data)
                data += got
                if valid is not None:
                    if ok is None:
                        ok = np.ones(count, bool)
                    ok[pos : pos + n] = valid
            del got
            pos += n
        if pos != count:
            raise LayoutError(f"DATA buffer holds {pos} values, expected {count}",
                              field=field + "/data")
        nulls = None if ok is None else pa.py_buffer(np.packbits(ok, bitorder="little"))
        if offs_out is None:
            arr = pa.Array.from_buffers(pa.binary(fixed), count, [nulls, pa.py_buffer(data)])
        else:
            offs_out[count] = len(data)
            arr = pa.Array.from_buffers(pa.large_binary(), count,
                                        [nulls, pa.py_buffer(offs_out), pa.py_buffer(data)])
        return _as_type(arr, typ, text, field)


def _fixed_array(pa: Any, data: np.ndarray, typ: Any, mask: np.ndarray | None) -> Any:
    """``pa.array(data, type=typ, mask=mask)`` (``mask``: True where null), made from the
    buffers when ``data`` is already ``typ``'s storage: pyarrow's own path imports numpy.ma
    and asks pandas whether ``data`` is a Series (importing pandas where it is installed,
    0.4 s), a fixed cost of every scan."""
    temporal = pa.types.is_timestamp(typ) or pa.types.is_duration(typ)
    if not ((temporal and data.dtype == np.int64)
            or (not temporal and data.dtype.kind in "iuf"
                and pa.from_numpy_dtype(data.dtype) == typ)):
        return pa.array(data, type=typ, mask=mask)
    data = np.ascontiguousarray(data)
    nulls = None
    if mask is not None and mask.any():
        nulls = pa.py_buffer(np.packbits(~mask, bitorder="little"))
    return pa.Array.from_buffers(typ, len(data), [nulls, pa.py_buffer(data)])


def _bool_array(pa: Any, bits: np.ndarray, nulls: np.ndarray | None = None) -> Any:
    """A boolean numpy array as an Arrow ``bool_`` array (``nulls``: True where null), from
    packed buffers (no ``pa.array``: see :func:`_fixed_array`)."""
    n = len(bits)
    validity = None
    if nulls is not None and nulls.any():
        validity = pa.py_buffer(np.packbits(~nulls, bitorder="little"))
    return pa.Array.from_buffers(pa.bool_(), n, [validity, pa.py_buffer(
        np.packbits(bits, bitorder="little"))])


def _dictionary_take(entries: list[bytes], ids: np.ndarray, null: np.ndarray | None,
                     fixed: int, table: Any = None) -> Any:
    """The dictionary ``entries`` at ``ids`` (checked to be in range) as a binary Arrow array
    (large_binary from C; else ``table``'s type), null where ``null`` says: expanded in C when
    the accelerator is built (it imports no ``pyarrow.compute``), else by Arrow's ``take`` on
    ``table`` (the entries as an Arrow array; made here when None)."""
    pa = pyarrow()
    native = _blocks_mod._native
    if native is not None and not fixed:
        bounds = np.zeros(len(entries) + 1, np.int64)
        np.cumsum([len(e) for e in entries], out=bounds[1:])
        got = native.gather(b"".join(entries), bounds, np.ascontiguousarray(ids, "<u4"),
                            None if null is None else np.ascontiguousarray(null, np.uint8))
        if got is not None:
            data, offs = got
            nulls = None if null is None else pa.py_buffer(np.packbits(~null,
                                                                        bitorder="little"))
            return pa.Array.from_buffers(pa.large_binary(), len(ids),
                                         [nulls, pa.py_buffer(offs), pa.py_buffer(data)])
    if table is None:
        table = _binary_array(entries, fixed)
    return table.take(pa.array(ids, type=pa.uint32(), mask=null))


def _binary_array(entries: list[bytes], fixed: int) -> Any:
    """``entries`` as a ``binary(fixed)`` (``fixed`` > 0) or ``large_binary`` Arrow array, made
    from one buffer and its offsets: ``pa.array`` of a Python list asks pandas whether the
    list is array-like, and imports it when it is installed (a 0.4 s import in a scan)."""
    pa = pyarrow()
    data = b"".join(entries)
    if fixed:
        if len(data) != fixed * len(entries):  # an entry of another size: Arrow says which
            return pa.array(entries, type=pa.binary(fixed))
        return pa.Array.from_buffers(pa.binary(fixed), len(entries), [None, pa.py_buffer(data)])
    bounds = np.zeros(len(entries) + 1, np.int64)
    np.cumsum([len(e) for e in entries], out=bounds[1:])
    return pa.Array.from_buffers(pa.large_binary(), len(entries),
                                 [None, pa.py_buffer(bounds), pa.py_buffer(data)])


def _as_type(arr: pa.Array, typ: Any, text: bool, field: str) -> Any:
    """``arr`` (binary) viewed as ``typ``; text is checked to be UTF-8.

    The offsets of ``arr`` are the decoders' (checked there to increase from 0 within the
    data), so bytes that are all ASCII need no UTF-8 walk (one vectorised ``max``, about a
    tenth of Arrow's full validation); any other text is validated in full."""
    pa = pyarrow()
    if not text:
        return arr if arr.type == typ else arr.view(typ)
    out = arr.view(pa.large_string())
    data = out.buffers()[2]
    try:
        if data is None or data.size == 0 or int(np.frombuffer(data, np.uint8).max()) < 0x80:
            out.validate()
        else:
            out.validate(full=True)
    except pa.ArrowInvalid as exc:
        raise LayoutError(f"String value is not UTF-8: {exc}", field=field) from exc
    return out
