"""Field statistics of the Amudai writer: a summary per stripe, merged into the shard's.

A :class:`Summary` holds what a ``FieldDescriptor`` records of some positions of one field:
the position and null counts, whether every value is the same (and the first value), the
range (min and max, NaN left out), the Boolean, floating-point, size and list-length counts.
The writer makes one per stripe and field from that stripe's values, writes the stripe's
descriptor from it, then merges it into the field's running summary; the shard-level
descriptor comes from the merged summary, so no stripe's values are kept once it is written.
Merging is exact: a summary of two runs of values equals the summary of their concatenation
(ties of min and max keep the first value met, as Python's ``min``/``max`` do, which matters
for ``0.0`` and ``-0.0``).
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..generated import amudai_common_pb2 as cpb
from ..generated import amudai_shard_pb2 as spb

if TYPE_CHECKING:
    from .amudai_schema import FieldSpec

__all__ = ["Summary"]

_INT_WIDTH = {"Int8": 1, "Int16": 2, "Int32": 4, "Int64": 8}
_NUMERIC = {"Int8", "Int16", "Int32", "Int64", "Float32", "Float64", "DateTime"}
_BYTES_TYPES = {"String", "Binary", "FixedSizeBinary", "Guid"}
_RANGED = _NUMERIC | {"String", "Binary"}
_FLOAT_KINDS = ("nan_count", "positive_infinity_count", "negative_infinity_count",
                "zero_count", "positive_count", "negative_count")


def _same(spec: FieldSpec, a: Any, b: Any) -> bool:
    if spec.type in ("Float32", "Float64") and a is not None and b is not None:
        fmt = "<f" if spec.type == "Float32" else "<d"
        return struct.pack(fmt, a) == struct.pack(fmt, b)
    same: bool = a == b  # a local, not a cast: this runs once per value
    return same


def _may_be_constant(spec: FieldSpec) -> bool:
    return spec.type in _NUMERIC or spec.type in _BYTES_TYPES or spec.type == "Boolean"


def _primitive_any(spec: FieldSpec, v: Any) -> cpb.AnyValue:
    t = spec.type
    out = cpb.AnyValue()
    if v is None:
        out.null_value.SetInParent()
    elif t == "Boolean":
        out.bool_value = v
    elif t in _INT_WIDTH:
        if spec.signed:
            out.i64_value = v
        else:
            out.u64_value = v
    elif t == "DateTime":
        out.u64_value = v  # ticks, as the Rust writer stores DateTime constants and ranges
    elif t in ("Float32", "Float64"):
        out.double_value = float(np.float32(v)) if t == "Float32" else v
    elif t == "String":
        out.string_value = v.decode("utf-8")
    elif spec.extended_type == "KustoDecimal":
        out.decimal_value = v
    else:
        out.bytes_value = v
    return out


def _float_kind(v: float) -> int:
    if math.isnan(v):
        return 0
    if v == math.inf:
        return 1
    if v == -math.inf:
        return 2
    if v == 0:
        return 3
    return 4 if v > 0 else 5


def _min(a: Any, b: Any) -> Any:
    """``min([a, b])`` over what is there (None: nothing): ``a`` unless ``b`` is smaller."""
    return b if a is None or (b is not None and b < a) else a


def _max(a: Any, b: Any) -> Any:
    return b if a is None or (b is not None and b > a) else a


@dataclass
class Summary:
    """What a FieldDescriptor records of some positions of one field (see the module doc).

    Attributes:
        spec: The field.
        count: Positions (values and nulls).
        nulls: Null positions.
        same: Every position equals the first (vacuously true when there is none; only
            tracked for the types that can be constant).
        first: The first position's value (None: null, or no position).
        low: Smallest present value, NaN left out (None: none); for ranged types.
        high: Largest, likewise.
        true_count: Boolean: true values.
        false_count: Boolean: false values.
        floats: Float32/Float64: NaN, +inf, -inf, zero, positive, negative value counts.
        size_min: Bytes types: smallest value size; List/Map: shortest length (None: no
            present value).
        size_max: Largest, likewise.
        size_min_non_empty: Smallest non-zero size or length (None: none).
        ascii_count: String: values that are all ASCII.
    """

    spec: FieldSpec
    count: int = 0
    nulls: int = 0
    same: bool = True
    first: Any = None
    low: Any = None
    high: Any = None
    true_count: int = 0
    false_count: int = 0
    floats: list[int] = field(default_factory=lambda: [0] * 6)
    size_min: int | None = None
    size_max: int | None = None
    size_min_non_empty: int | None = None
    ascii_count: int = 0

    @classmethod
    def of(cls, spec: FieldSpec, values: Any) -> Summary:
        """The summary of ``values``: a list of normalised values (None for null; composite
        fields: None or True, lengths for List/Map), or a 1-D numpy array without nulls for
        an integer field (integers) or a Float64 field (float64)."""
        out = cls(spec, count=len(values))
        if not out.count:
            return out
        if isinstance(values, np.ndarray):
            return out._of_array(values)
        t = spec.type
        present = [v for v in values if v is not None]
        out.nulls = out.count - len(present)
        out.first = values[0]
        if _may_be_constant(spec):
            first = values[0]
            out.same = all(_same(spec, v, first) for v in values)
        if t in _RANGED:
            ordered = [v for v in present if not (isinstance(v, float) and math.isnan(v))]
            if ordered:
                out.low, out.high = min(ordered), max(ordered)
        if t == "Boolean":
            out.true_count = sum(1 for v in present if v)
            out.false_count = sum(1 for v in present if not v)
        elif t in ("Float32", "Float64"):
            for v in present:
                out.floats[_float_kind(v)] += 1
        elif (t in _BYTES_TYPES or t in ("List", "Map")) and present:
            sizes = present if t in ("List", "Map") else [len(v) for v in present]
            non_empty = [s for s in sizes if s]
            out.size_min, out.size_max = min(sizes), max(sizes)
            out.size_min_non_empty = min(non_empty) if non_empty else None
            if t == "String":
                out.ascii_count = sum(1 for v in present if v.isascii())
        return out

    def _of_array(self, values: np.ndarray) -> Summary:
        """An integer or float64 array without nulls: what the list path finds, by numpy."""
        if values.dtype.kind == "f":
            bits = values.view(np.uint64)
            self.same = bool((bits == bits[0]).all())  # bit for bit, as _same packs them
            self.first = float(values[0])
            nan = np.isnan(values)
            ordered = values[~nan] if nan.any() else values
            if ordered.size:  # argmin/argmax: the first of equal values (0.0 and -0.0)
                self.low = float(ordered[int(np.argmin(ordered))])
                self.high = float(ordered[int(np.argmax(ordered))])
            pos_inf, neg_inf = int(np.isposinf(values).sum()), int(np.isneginf(values).sum())
            self.floats = [int(nan.sum()), pos_inf, neg_inf, int((values == 0).sum()),
                           int((values > 0).sum()) - pos_inf, int((values < 0).sum()) - neg_inf]
            return self
        first = values[0]
        self.same = bool((values == first).all())
        self.first = int(first)
        self.low, self.high = int(values.min()), int(values.max())
        return self

    def merge(self, other: Summary) -> Summary:
        """The summary of this summary's positions followed by ``other``'s."""
        if not other.count:
            return self
        if not self.count:
            return other
        return Summary(
            self.spec, self.count + other.count, self.nulls + other.nulls,
            self.same and other.same and _same(self.spec, self.first, other.first),
            self.first, _min(self.low, other.low), _max(self.high, other.high),
            self.true_count + other.true_count, self.false_count + other.false_count,
            [a + b for a, b in zip(self.floats, other.floats, strict=True)],
            _min(self.size_min, other.size_min), _max(self.size_max, other.size_max),
            _min(self.size_min_non_empty, other.size_min_non_empty),
            self.ascii_count + other.ascii_count)

    def constant(self, empty: bool = False) -> bool:
        """Whether the positions are one constant value; with no position, ``empty``."""
        if not _may_be_constant(self.spec):
            return False
        return self.same if self.count else empty

    def descriptor(self, constant: bool, dict_size: int | None = None
                   ) -> spb.FieldDescriptor:
        """The FieldDescriptor: counts, the constant value when ``constant``, the type's
        statistics, ``dictionary_size`` when given."""
        spec = self.spec
        t = spec.type
        d = spb.FieldDescriptor(position_count=self.count)
        d.null_count = self.nulls
        present = self.count - self.nulls
        if constant:
            d.constant_value.CopyFrom(_primitive_any(spec, self.first))
        if dict_size is not None:
            d.dictionary_size = dict_size
        if t in _RANGED and self.low is not None:
            d.range_stats.min_value.CopyFrom(_primitive_any(spec, self.low))
            d.range_stats.max_value.CopyFrom(_primitive_any(spec, self.high))
            d.range_stats.min_inclusive = d.range_stats.max_inclusive = True
        if t == "Boolean":
            d.boolean_stats.true_count = self.true_count
            d.boolean_stats.false_count = self.false_count
        elif t in ("Float32", "Float64"):
            fs = d.floating_stats
            fs.SetInParent()
            for name, n in zip(_FLOAT_KINDS, self.floats, strict=True):
                if n:
                    setattr(fs, name, n)
        elif t in _BYTES_TYPES and present:
            stats = d.string_stats if t == "String" else d.binary_stats
            if t == "String":
                stats.min_size, stats.max_size = self.size_min, self.size_max
                if self.size_min_non_empty is not None:
                    stats.min_non_empty_size = self.size_min_non_empty
                stats.ascii_count = self.ascii_count
            else:
                stats.min_length, stats.max_length = self.size_min, self.size_max
                if self.size_min_non_empty is not None:
                    stats.min_non_empty_length = self.size_min_non_empty
        elif t in ("List", "Map") and present:
            d.list_stats.min_length, d.list_stats.max_length = self.size_min, self.size_max
            if self.size_min_non_empty is not None:
                d.list_stats.min_non_empty_length = self.size_min_non_empty
        return d
