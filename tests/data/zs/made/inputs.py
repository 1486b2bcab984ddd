"""The inputs of make.sh (deterministic): sorted text lines and binary records.

Run as a script, writes ``lines.txt``, ``binary.uleb128`` and ``binary.u64le``; the tests import
:func:`lines` and :func:`binary_records` to know what the files hold.
"""

import random
import struct


def uleb(n):
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def lines():
    rng = random.Random(25)
    words = {"{}{:04d}".format(rng.choice(["apple", "banana", "cherry", "zs"]), rng.randrange(3000))
             for _ in range(600)}
    return [w.encode() for w in sorted(words)]


def binary_records():
    rng = random.Random(26)
    records = [b"", b"", b"\x00", b"\x00\x00\n", b"\n", b"\nnewline", b"a\x00b", b"a" * 200,
               b"\xff" * 3, b"\x80\x81"]
    records += [bytes(rng.randrange(256) for _ in range(rng.randrange(0, 40)))
                for _ in range(300)]
    return sorted(records)


if __name__ == "__main__":
    with open("lines.txt", "wb") as f:
        f.write(b"".join(w + b"\n" for w in lines()))
    records = binary_records()
    with open("binary.uleb128", "wb") as f:
        f.write(b"".join(uleb(len(r)) + r for r in records))
    with open("binary.u64le", "wb") as f:
        f.write(b"".join(struct.pack("<Q", len(r)) + r for r in records))
