"""CRC-64-xz: liblzma's lzma_crc64 (through ctypes) and the crcmod fallback give the same values."""

from __future__ import annotations

import os
import random
import subprocess
import sys

import pytest

from shardkit.hashing import crc64xz as mod
from shardkit.hashing.crc64xz import KNOWN_ANSWERS, crc64xz, crc64xz_crcmod, crc64xz_le


@pytest.mark.parametrize("fn", [crc64xz, crc64xz_crcmod], ids=["default", "crcmod"])
def test_known_answers(fn):
    for data, expected in KNOWN_ANSWERS.items():
        assert fn(data) == expected
    assert crc64xz_le(b"123456789") == bytes.fromhex("fa3919dfbbc95d99")


def test_backends_agree_on_random_data_lengths_and_continuation():
    rng = random.Random(64)
    for n in (1, 7, 8, 9, 63, 64, 65, 1000, 65537, 1 << 20):
        data = rng.randbytes(n)
        want = crc64xz_crcmod(data)
        assert crc64xz(data) == want
        assert crc64xz(bytearray(data)) == want
        assert crc64xz(memoryview(data)) == want
        cut = n // 3
        assert crc64xz(data[cut:], crc64xz(data[:cut])) == want
        assert crc64xz_crcmod(data[cut:], crc64xz_crcmod(data[:cut])) == want
        # length= is the CRC of a prefix, without slicing
        assert crc64xz(data + b"tail", length=n) == want
        assert crc64xz(memoryview(data + b"tail"), length=n) == want
        assert crc64xz_crcmod(data + b"tail", length=n) == want


def test_length_outside_the_data_is_refused():
    if mod.BACKEND != "liblzma":
        pytest.skip("liblzma is not loadable here")
    with pytest.raises(ValueError):
        crc64xz(b"abc", length=4)


def test_liblzma_is_used_where_python_has_lzma_and_crcmod_can_be_forced():
    # CPython's lzma module links liblzma, so the fast backend loads on the platforms we ship to
    assert mod.BACKEND == "liblzma" or sys.platform not in ("linux", "darwin")
    code = ("from shardkit.hashing import crc64xz as m; "
            "print(m.BACKEND, m.crc64xz(b'123456789'))")
    env = {**os.environ, "SHARDKIT_CRC64XZ": "crcmod"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["crcmod", str(0x995DC9BBDF1939FA)]
