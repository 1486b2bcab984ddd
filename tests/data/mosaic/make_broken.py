"""Derive the broken MOSAIC samples (broken/*.mosaic) from the good ones, with their verdicts.

Run from the repository root: ``python tests/data/mosaic/make_broken.py``. Each file is a good
sample with a few bytes changed (and, where said, a CRC-32 written again so that only the
intended check fails); ``broken/verdicts.json`` lists for each the checks ``verify`` reports,
or the error opening it raises. Offsets are found by walking the EBML elements.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path

HERE = Path(__file__).parent
TILE, INDEX, META = 0x1E535748, 0x1F535748, 0x1D535748


def vint(buf: bytes, pos: int) -> tuple[int, int]:
    n = 9 - buf[pos].bit_length()
    return int.from_bytes(buf[pos:pos + n], "big") & ((1 << (7 * n)) - 1), n


def element(buf: bytes, pos: int) -> tuple[int, int, int]:
    """(id, data start, data end) of the element at ``pos``."""
    n = 9 - buf[pos].bit_length()
    eid = int.from_bytes(buf[pos:pos + n], "big")
    size, m = vint(buf, pos + n)
    return eid, pos + n + m, pos + n + m + size


def kids(buf: bytes, start: int, end: int) -> list[tuple[int, int, int, int]]:
    out, pos = [], start
    while pos < end:
        eid, a, b = element(buf, pos)
        out.append((eid, pos, a, b))
        pos = b
    return out


def top(buf: bytes) -> list[tuple[int, int, int, int]]:
    _, _, hend = element(buf, 0)
    _, rstart, rend = element(buf, hend)
    return kids(buf, rstart, rend)


def fix_crc(buf: bytearray, master: tuple[int, int, int, int]) -> None:
    _, _, a, b = master
    buf[a + 2:a + 6] = zlib.crc32(buf[a + 6:b]).to_bytes(4, "little")


def main() -> None:
    out = HERE / "broken"
    out.mkdir(exist_ok=True)
    verdicts: dict[str, dict[str, object]] = {}

    def save(name: str, data: bytes, how: str, checks: list[str] | None = None,
             error: str | None = None) -> None:
        (out / name).write_bytes(bytes(data))
        verdicts[name] = {"made": how, "checks": checks, "error": error}

    good = (HERE / "sha256.mosaic").read_bytes()
    els = top(good)
    tile = next(e for e in els if e[0] == TILE)
    index = next(e for e in els if e[0] == INDEX)
    meta = next(e for e in els if e[0] == META)
    objs = [k for k in kids(good, tile[2], tile[3]) if k[0] == 0xF0]
    obj = objs[5]

    b = bytearray(good)
    b[obj[2]] ^= 0x20
    save("bad_tile_crc.mosaic", b, "sha256.mosaic, first byte of object 5 flipped (bit 5)",
         ["crc32", "content_hash"])
    fix_crc(b, tile)
    save("bad_content.mosaic", b, "bad_tile_crc.mosaic with the tile's CRC-32 written again",
         ["content_hash"])

    b = bytearray(good)
    ctr = next(k for k in kids(good, meta[2], meta[3]) if k[0] == 0x5000)
    b[ctr[3] - 1] += 1
    fix_crc(b, meta)
    save("bad_counter.mosaic", b, "sha256.mosaic, ObjectsCounter + 1, metadata CRC-32 fixed",
         ["count"])

    b = bytearray(good)
    eot = next(k for k in kids(good, meta[2], meta[3]) if k[0] == 0x5099)
    b[eot[3] - 1] -= 2
    fix_crc(b, meta)
    save("bad_end_of_tiles.mosaic", b, "sha256.mosaic, EndOfTilesOffset - 2, metadata "
         "CRC-32 fixed", ["end_of_tiles"])

    b = bytearray(good)
    ikids = kids(good, index[2], index[3])
    unrolled = next(k for k in ikids if k[0] == 0x6002)
    entry = kids(good, unrolled[2], unrolled[3])[0:2]  # Key, Offset of rank 0
    b[entry[0][2]] ^= 0xFF
    save("bad_key.mosaic", b, "sha256.mosaic, first key byte of entry 0 inverted",
         ["crc32", "map", "content_hash"])

    b = bytearray(good)
    off = entry[1]
    value = int.from_bytes(good[off[2]:off[3]], "big") + 1
    b[off[2]:off[3]] = value.to_bytes(off[3] - off[2], "big")
    fix_crc(b, index)
    save("bad_offset.mosaic", b, "sha256.mosaic, Offset of entry 0 + 1, index CRC-32 fixed",
         ["entry", "orphan"])

    b = bytearray(good)
    second = kids(good, unrolled[2], unrolled[3])[3]  # Offset of rank 1
    b[second[2]:second[3]] = good[off[2]:off[3]]
    fix_crc(b, index)
    save("dup_offset.mosaic", b, "sha256.mosaic, entry 1's Offset set to entry 0's, index "
         "CRC-32 fixed", ["entry", "orphan", "content_hash"])

    b = bytearray(good)
    mc = next(k for k in ikids if k[0] == 0x6004)
    mp = kids(good, mc[2], mc[3])[1]
    b[mp[3] - 1] ^= 0x01
    save("bad_map_crc.mosaic", b, "sha256.mosaic, last bit of Map flipped (a bit the "
         "function does not read)", ["crc32", "crc32"])

    save("truncated.mosaic", good[:len(good) - 40], "sha256.mosaic without its last 40 bytes",
         error="TruncatedError")
    b = bytearray(good)
    assert good[0x22:0x25] == b"\x42\x85\x81"
    b[0x25] = 2  # DocTypeReadVersion 1 -> 2
    save("read_version.mosaic", b, "sha256.mosaic, DocTypeReadVersion 2",
         error="UnsupportedVersionError")
    (out / "verdicts.json").write_text(json.dumps(verdicts, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
