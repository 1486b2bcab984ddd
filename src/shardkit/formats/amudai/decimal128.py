"""Kusto decimals: the 16 bytes of an IEEE 754-2008 decimal128 (DPD) as a ``decimal.Decimal``.

The reference writer stores a ``KustoDecimal`` field (FixedSizeBinary(16)) as the raw bytes of
a decNumber ``decQuad``: the densely-packed-decimal interchange encoding, least significant
byte first. Layout of the 128-bit little-endian integer, from the top: sign (1 bit),
combination field (5 bits), exponent continuation (12 bits), coefficient continuation
(110 bits, 11 declets of 3 digits each). Exponent bias 6176; 34 coefficient digits.
"""

from __future__ import annotations

from decimal import Decimal

__all__ = ["decode_d128", "encode_d128"]

_BIAS = 6176


def _declet(d: int) -> int:
    """One DPD declet (10 bits) as its three-digit number (IEEE 754-2008, table 3.3)."""
    b = [(d >> i) & 1 for i in range(10)]  # b[0] is the lowest bit
    abc = d >> 7 & 7
    c = b[7]
    f = b[4]
    i = b[0]
    if not b[3]:
        return abc * 100 + (d >> 4 & 7) * 10 + (d & 7)
    wx = d >> 1 & 3
    if wx == 0:
        return abc * 100 + (d >> 4 & 7) * 10 + 8 + i
    if wx == 1:
        return abc * 100 + (8 + f) * 10 + ((d >> 5 & 3) << 1 | i)
    if wx == 2:
        return (8 + c) * 100 + (d >> 4 & 7) * 10 + ((d >> 8 & 3) << 1 | i)
    st = d >> 5 & 3
    if st == 0:
        return (8 + c) * 100 + (8 + f) * 10 + ((d >> 8 & 3) << 1 | i)
    if st == 1:
        return (8 + c) * 100 + ((d >> 8 & 3) << 1 | f) * 10 + 8 + i
    if st == 2:
        return abc * 100 + (8 + f) * 10 + 8 + i
    return (8 + c) * 100 + (8 + f) * 10 + 8 + i


def decode_d128(raw: bytes) -> Decimal:
    """The value of a 16-byte decimal128 (DPD, little-endian): finite, infinite or NaN."""
    if len(raw) != 16:
        raise ValueError(f"a decimal128 has 16 bytes, not {len(raw)}")
    x = int.from_bytes(raw, "little")
    sign = x >> 127
    comb = x >> 122 & 0x1F
    if comb >> 3 == 3:
        if comb == 0x1E:
            return Decimal("-Infinity" if sign else "Infinity")
        if comb == 0x1F:
            return Decimal("NaN")
        msd, exp_hi = 8 + (comb & 1), comb >> 1 & 3
    else:
        msd, exp_hi = comb & 7, comb >> 3
    exponent = (exp_hi << 12 | (x >> 110 & 0xFFF)) - _BIAS
    coefficient = msd
    for k in range(10, -1, -1):
        coefficient = coefficient * 1000 + _declet(x >> (10 * k) & 0x3FF)
    return Decimal((sign, tuple(int(ch) for ch in str(coefficient)), exponent))


_ENCODE: dict[int, int] = {}
for _d in range(1023, -1, -1):  # the lowest of a number's encodings is its canonical one
    _ENCODE[_declet(_d)] = _d
_MAX_COEFFICIENT = 10**34


def encode_d128(value: Decimal) -> bytes:
    """The 16 bytes (DPD, little-endian) of a finite ``value``, its exponent as it is.

    Raises:
        ValueError: More than 34 digits, or an exponent outside decimal128's range.
    """
    sign, digits, exponent = value.as_tuple()
    if not isinstance(exponent, int):
        x = (0x1E if exponent == "F" else 0x1F) << 122
        return ((sign << 127) | x).to_bytes(16, "little")
    coefficient = int("".join(map(str, digits)) or "0")
    if coefficient >= _MAX_COEFFICIENT:
        raise ValueError(f"{value} has more than 34 digits")
    biased = exponent + _BIAS
    if not 0 <= biased < 3 << 12:
        raise ValueError(f"{value}: exponent {exponent} is outside decimal128's range")
    msd, rest = divmod(coefficient, 10**33)
    x = 0
    for k in range(11):
        rest, three = divmod(rest, 1000)
        x |= _ENCODE[three] << (10 * k)
    exp_hi = biased >> 12
    comb = (exp_hi << 3 | msd) if msd < 8 else (0x18 | exp_hi << 1 | (msd & 1))
    x |= (biased & 0xFFF) << 110 | comb << 122 | sign << 127
    return x.to_bytes(16, "little")
