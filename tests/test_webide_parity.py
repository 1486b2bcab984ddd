"""Web IDE parity: the JavaScript parsers (what the Kaitai Web IDE runs) read what Python reads.

Every schema is compiled to Python (generated/*.py) and JavaScript (generated/js/*.js). A .ksy
that only works in Python does not count, so for every format in FORMATS this test parses the
sample files with both, forces every lazy instance, and compares the two trees field by field.
tools/js_dump.js builds the JavaScript tree; py_tree() below builds the same tree from the Python
parser, spelling field names the way the compiler does for JavaScript (lowerCamelCase).

Numbers: the kaitai-struct JS runtime reads u8/s8 as a double, so integers beyond 2**53 arrive
rounded (2**64-1 as 18446744073709552000); those are compared after rounding the Python value to
a double too (or exactly, should the runtime ever hand out a BigInt, printed as a string).
"""

from __future__ import annotations

import enum
import importlib
import json
import math
import shutil
import subprocess
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from kaitaistruct import KaitaiStruct, ValidationNotEqualError

ROOT = Path(__file__).parents[1]
JS_DUMP = ROOT / "tools" / "js_dump.js"
JS_RUNTIME = ROOT / "node_modules" / "kaitai-struct"
MAX_SAFE_INT = 2**53
MAX_DEPTH = 64  # as in tools/js_dump.js
MAX_DIFFS = 20

pytestmark = pytest.mark.node


@dataclass(frozen=True)
class Format:
    js_class: str  # generated/js/<js_class>.js
    py_module: str
    py_class: str
    samples: str  # glob, relative to the repository root
    # Paths ("a/b/*/c", `*` = some element of a list) that must exist in both trees, so that a
    # walker that silently misses a part of the format cannot pass as "equal".
    required: tuple[str, ...] = ()

    def files(self) -> list[Path]:
        return sorted(ROOT.glob(self.samples))


FORMATS = [
    Format(
        "SwhReadShard",
        "shardkit.generated.swh_read_shard",
        "SwhReadShard",
        "tests/data/swh/*.shard",
        required=(
            "magic",
            *(
                f"header/{f}"
                for f in (
                    "version",
                    "numObjects",
                    "ofsObjects",
                    "lenObjects",
                    "ofsIndex",
                    "lenIndex",
                    "ofsHash",
                )
            ),
            "index/entries/*/key",
            "index/entries/*/ofsObject",
            "index/entries/*/isEmpty",
            "index/entries/*/isTombstone",
            "index/entries/*/object/lenData",
            "index/entries/*/object/data",
            "hashFunction/algoName",
            "hashFunction/hashState/seed",
            "hashFunction/compressedSeq/select/selectTable",
            "hashFunction/compressedSeq/storeTable",
            "hashFunction/numBuckets",
        ),
    ),
    Format(  # ZSS: only the none+crc32c samples, whose bodies the schema itself parses
        "Zss",
        "shardkit.generated.zss",
        "Zss",
        "tests/data/zss/*_none.zss",
        required=(
            "magic",
            "lenHeader",
            "header/rootVoffset",
            "header/uuid",
            "header/codec",
            "header/metadata",
            "headerCrc32c",
            "headerCrc32cInput",
            "root/level",
            "root/lenPayload/value",
            "root/payload/body/entries/*/childVoffset/value",
            "blocks/*/payload/body/records/*/record",
            "blocks/*/payload/body/records/*/lenRecord/lenBytes",
            "blocks/*/payload/bodyCrc32c",
        ),
    ),
    Format(  # Neuroglancer: the root infers minishard_bits from the file (Web IDE path)
        "NeuroglancerUint64Sharded",
        "shardkit.generated.neuroglancer_uint64_sharded",
        "NeuroglancerUint64Sharded",
        "tests/data/neuroglancer/*/*.shard",  # raw-index samples (the image scale is deeper)
        required=(
            "minishardBits",
            "minishardBitsProbes/*/fits",
            "shardIndex/entries/*/ofsMinishardIndex",
            "shardIndex/entries/*/ofsMinishardIndexEnd",
            "minishards/*/rawIndex",
            "minishards/*/index/chunkIdDeltas",
            "minishards/*/index/ofsDataDeltas",
            "minishards/*/index/lenData",
            "minishards/*/chunks/*/chunkIdDelta",
            "minishards/*/chunks/*/data",
        ),
    ),
    Format(
        "XetMdbShard",
        "shardkit.generated.xet_mdb_shard",
        "XetMdbShard",
        # names ending "db" (.mdb) or "rd" (.shard): every real shard, no manifest or notes;
        # required: what all variants hold (upload bodies have no footer, some no xorbs)
        "tests/data/mdb/**/*[dr][bd]",
        required=(
            "header/tag",
            "header/version",
            "header/lenFooter",
            "fileInfo/blocks/*/fileHash",
            "fileInfo/blocks/*/ofsBlock",
            "fileInfo/blocks/*/numRecords",
            "xorbInfo/blocks/*/xorbHash",
            "xorbInfo/blocks/*/isBookend",
            "ofsXorbInfoEnd",
            "hasFooter",
        ),
    ),
    Format(  # ZS: the codec-none samples, whose payloads the schema itself parses
        "Zs",
        "shardkit.generated.zs",
        "Zs",
        "tests/data/zs/*/*-none*.zs",
        required=(
            "magic",
            "lenHeader",
            "header/ofsRootIndex",
            "header/lenRootIndex",
            "header/lenFile",
            "header/sha256",
            "header/codec",
            "header/metadata",
            "headerCrc64xz",
            "headerCrc64xzInput",
            "root/body/level",
            "root/body/payload/entries/*/key",
            "root/body/payload/entries/*/ofsBlock/value",
            "root/body/payload/entries/*/lenBlock/value",
            "blocks/*/lenBody/value",
            "blocks/*/body/payload/records/*/record",
            "blocks/*/crc64xz",
        ),
    ),
    Format(
        "AmudaiShard",
        "shardkit.generated.amudai_shard",
        "AmudaiShard",
        "tests/data/amudai/*.amudai.shard",  # root files (writer-made, see PROVENANCE.md)
        required=(
            "header/magic",
            "header/versionMinor",
            "header/versionMajor",
            "footer/magic",
            "lenDirectory",
            "directory/lenPayload",
            "directory/payload",
            "directory/checksum",
        ),
    ),
    Format(  # MOSAIC: every sample (EBML framing, integers, strings, CRC-32 elements)
        "Mosaic",
        "shardkit.generated.mosaic",
        "Mosaic",
        "tests/data/mosaic/*.mosaic",
        required=(
            "elements/*/idVint/rawValue",
            "elements/*/lenData/value",
            "elements/*/data/elements/*/data/elements/*/lenData/value",
        ),
    ),
]


# --- the Python side of tools/js_dump.js ---------------------------------------------------


def lower_camel(name: str) -> str:
    """The compiler's JavaScript spelling of a ksy id (Utils.lowerCamelCase)."""
    if name.startswith("_"):
        return "_" + lower_camel(name[1:])
    first, *rest = name.split("_")
    return first + "".join(word[:1].upper() + word[1:] for word in rest)


def describe(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


def field_names(obj: KaitaiStruct) -> list[str]:
    """Seq fields (attributes) then instances (properties) of a parsed object, minus `_*`."""
    names = [name for name in vars(obj) if not name.startswith("_")]
    for cls in type(obj).__mro__:
        if not issubclass(cls, KaitaiStruct) or cls is KaitaiStruct:
            continue
        for name, attr in vars(cls).items():
            if isinstance(attr, property) and not name.startswith("_") and name not in names:
                names.append(name)
    return names


def py_tree(value: Any, path: set[int] | None = None, depth: int = 0) -> Any:
    """The tree tools/js_dump.js prints, built from a Python-parsed value."""
    path = set() if path is None else path
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, enum.Enum):
        return py_tree(value.value, path, depth)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        return value if math.isfinite(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, bytes | bytearray):
        return value.hex()
    if id(value) in path:
        return {"$cycle": True}
    if depth > MAX_DEPTH:
        return {"$depth": True}
    path.add(id(value))
    try:
        if isinstance(value, list | tuple):
            return [py_tree(item, path, depth + 1) for item in value]
        if not isinstance(value, KaitaiStruct):
            return str(value)
        tree = {}
        for name in field_names(value):
            try:
                item = getattr(value, name)
            except Exception as e:  # noqa: BLE001 - mirrors js_dump.js: any failure is reported
                tree[lower_camel(name)] = {"$error": describe(e)}
                continue
            tree[lower_camel(name)] = py_tree(item, path, depth + 1)
        return tree
    finally:
        path.discard(id(value))


def py_dump(fmt: Format, file: Path) -> Any:
    cls = getattr(importlib.import_module(fmt.py_module), fmt.py_class)
    try:
        parsed = cls.from_bytes(file.read_bytes())
    except Exception as e:  # noqa: BLE001 - as js_dump.js: a parse error becomes the tree
        return {"error": describe(e)}
    return py_tree(parsed)


# --- comparison ------------------------------------------------------------------------------


def same_scalar(py: Any, js: Any) -> bool:
    if isinstance(py, bool) or isinstance(js, bool):
        return type(py) is type(js) and py == js
    if isinstance(py, int) and abs(py) > MAX_SAFE_INT:
        if isinstance(js, str):  # a BigInt, printed exactly
            return js == str(py)
        # A double from the JS runtime: equal to the Python value rounded to a double.
        return isinstance(js, int | float) and float(py) == float(js)
    if isinstance(py, int | float) and isinstance(js, int | float):
        return py == js
    return type(py) is type(js) and py == js


def diff(py: Any, js: Any, where: str = "", out: list[str] | None = None) -> list[str]:
    """Where the Python tree and the JS tree differ (at most MAX_DIFFS places)."""
    out = [] if out is None else out
    if len(out) >= MAX_DIFFS:
        return out
    here = where or "/"
    if isinstance(py, dict) and isinstance(js, dict):
        if "$error" in py and "$error" in js:
            return out  # both runtimes failed on this instance; their messages differ
        only_py, only_js = py.keys() - js.keys(), js.keys() - py.keys()
        if only_py or only_js:
            out.append(f"{here}: only in Python {sorted(only_py)}, only in JS {sorted(only_js)}")
        for key in py.keys() & js.keys():
            diff(py[key], js[key], f"{where}/{key}", out)
    elif isinstance(py, list) and isinstance(js, list):
        if len(py) != len(js):
            out.append(f"{here}: {len(py)} elements in Python, {len(js)} in JS")
        for i, (a, b) in enumerate(zip(py, js, strict=False)):
            diff(a, b, f"{where}/{i}", out)
    elif not same_scalar(py, js):
        out.append(f"{here}: Python {short(py)} != JS {short(js)}")
    return out


def short(value: Any, limit: int = 120) -> str:
    text = json.dumps(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def covers(tree: Any, parts: list[str]) -> bool:
    if not parts:
        return True
    part, rest = parts[0], parts[1:]
    if part == "*":
        return isinstance(tree, list) and any(covers(item, rest) for item in tree)
    return isinstance(tree, dict) and part in tree and covers(tree[part], rest)


# --- running node ------------------------------------------------------------------------------


@cache
def _node_js_dump(js_class: str, files: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["node", str(JS_DUMP), js_class, *files],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def run_js_dump(js_class: str, files: list[Path]) -> dict[str, Any]:
    """{str(file): tree} from one `node tools/js_dump.js` run over all the files (cached)."""
    proc = _node_js_dump(js_class, tuple(map(str, files)))
    if proc.returncode != 0:
        pytest.fail(f"tools/js_dump.js {js_class} exited {proc.returncode}:\n{proc.stderr}")
    return json.loads(proc.stdout)


def parse_error(tree: Any) -> str | None:
    """The message of a file-level parse error ({"error": message}), else None."""
    if isinstance(tree, dict) and set(tree) == {"error"} and isinstance(tree["error"], str):
        return tree["error"]
    return None


@pytest.fixture(scope="session")
def node() -> None:
    if shutil.which("node") is None:
        pytest.skip("node is not on PATH: cannot run the JavaScript (Web IDE) parsers")
    if not JS_RUNTIME.is_dir():
        pytest.skip(f"{JS_RUNTIME.relative_to(ROOT)} is missing: run `npm ci` in {ROOT}")


def js_trees(fmt: Format) -> dict[str, Any]:
    """Node runs once per format, over all its sample files."""
    return run_js_dump(fmt.js_class, fmt.files())


CASES = [
    pytest.param(fmt, file, id=f"{fmt.js_class}-{file.name}")
    for fmt in FORMATS
    for file in fmt.files()
]


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda fmt: fmt.js_class)
def test_format_has_samples(fmt: Format) -> None:
    assert fmt.files(), f"no sample files match {fmt.samples}"


@pytest.mark.parametrize(("fmt", "file"), CASES)
def test_js_parser_reads_what_python_reads(node: None, fmt: Format, file: Path) -> None:
    py = py_dump(fmt, file)
    js = js_trees(fmt)[str(file)]
    assert parse_error(py) is None, f"Python cannot parse {file.name}: {parse_error(py)}"
    assert parse_error(js) is None, f"JavaScript cannot parse {file.name}: {parse_error(js)}"
    for required in fmt.required:
        assert covers(py, required.split("/")), f"{required} is not in the Python tree"
    differences = diff(py, js)
    assert not differences, f"{file.name}: JS and Python trees differ:\n" + "\n".join(differences)


def test_bad_magic_fails_in_both(node: None, tmp_path: Path) -> None:
    fmt = FORMATS[0]
    data = bytearray((ROOT / "tests" / "data" / "swh" / "tiny.shard").read_bytes())
    data[0:9] = b"XWHShard\0"
    bad = tmp_path / "bad_magic.shard"
    bad.write_bytes(bytes(data))

    cls = getattr(importlib.import_module(fmt.py_module), fmt.py_class)
    with pytest.raises(ValidationNotEqualError):
        cls.from_bytes(bytes(data))
    py = py_dump(fmt, bad)
    js = run_js_dump(fmt.js_class, [bad])[str(bad)]
    assert (parse_error(py) or "").startswith("ValidationNotEqualError"), py
    assert (parse_error(js) or "").startswith("ValidationNotEqualError"), js


# --- imports, resolved as the Web IDE resolves them ------------------------------------------
#
# The Kaitai Web IDE (kaitai-io/kaitai_struct_webide, branch stable = master at a02d396e,
# src/v1/KaitaiServices.ts, class JsImporter) loads an absolute import `/dir/x` from its
# built-in gallery only: `formats/dir/x.ksy`, where `formats` is its git submodule
# kaitai-io/kaitai_struct_formats at e6a75bb9f57df5cd4f6696c788f9d016192b6be3. A relative import
# `x` is looked up among the user's files, and its upload button (src/v1/app.ts, addNewFiles)
# stores every file under its base name. tools/ksc.js --ide-check DIR does the same with DIR as
# the uploaded files and the paths below as the gallery: every .ksy of that formats commit
# (git ls-tree -r e6a75bb9 | grep .ksy), without the extension.
_GALLERY_PATHS = """
    3d/gltf_binary archive/android_bootldr_asus archive/android_bootldr_huawei
    archive/android_bootldr_qcom archive/android_dto archive/android_img archive/android_sparse
    archive/cpio_old_le archive/gzip archive/lzh archive/mozilla_mar archive/phar_without_stub
    archive/rar archive/respack archive/rpm archive/xar archive/zip archive/zisofs
    cad/monomakh_sapr_chg common/bcd common/bytes_with_io common/dos_datetime common/riff
    common/utf8_string common/vlq_base128_be common/vlq_base128_le database/dbf
    database/gettext_mo database/sqlite3 database/tsm executable/android_nanoapp_header
    executable/dex executable/dos_mz executable/elf executable/java_class executable/mach_o
    executable/mach_o_fat executable/microsoft_pe executable/python_pyc_27 executable/swf
    executable/uefi_te filesystem/amlogic_emmc_partitions filesystem/android_super
    filesystem/apm_partition_table filesystem/apple_single_double filesystem/btrfs_stream
    filesystem/cramfs filesystem/ext2 filesystem/gpt_partition_table filesystem/iso9660
    filesystem/luks filesystem/lvm2 filesystem/mbr_partition_table filesystem/tr_dos_image
    filesystem/vdi filesystem/vfat filesystem/vmware_vmdk filesystem/zx_spectrum_tap
    firmware/andes_firmware firmware/broadcom_trx firmware/ines firmware/uimage font/grub2_font
    font/pcf_font font/ttf game/allegro_dat game/doom_wad game/dune_2_pak game/fallout2_dat
    game/fallout_dat game/ftl_dat game/gran_turismo_vol game/heaps_pak
    game/heroes_of_might_and_magic_agg game/heroes_of_might_and_magic_bmp game/minecraft_nbt
    game/quake2_md2 game/quake_mdl game/quake_pak game/renderware_binary_stream
    game/saints_row_2_vpp_pc game/warcraft_2_pud geospatial/shapefile_index
    geospatial/shapefile_main hardware/dtb hardware/edid hardware/mifare/mifare_classic
    image/bmp image/dicom image/exif image/gif image/gimp_brush image/icc_4 image/ico
    image/jpeg image/nitf image/pcx image/pcx_dcx image/pif image/png image/psx_tim image/tga
    image/wmf image/xwd log/aix_utmp log/glibc_utmp log/hashcat_restore log/mcap log/sudoers_ts
    log/systemd_journal log/windows_evt_log machine_code/code_6502 macos/compressed_resource
    macos/ds_store macos/mac_os_resource_snd macos/resource_compression/dcmp_0
    macos/resource_compression/dcmp_1 macos/resource_compression/dcmp_2
    macos/resource_compression/dcmp_variable_length_integer macos/resource_fork
    media/android_opengl_shaders_cache media/au media/avi media/blender_blend
    media/creative_voice_file media/genmidi_op2 media/id3v1_1 media/id3v2_3 media/id3v2_4
    media/magicavoxel_vox media/ogg media/quicktime_mov media/standard_midi_file media/stl
    media/tracker_modules/fasttracker_xm_module media/tracker_modules/s3m media/vp8_duck_ivf
    media/wav network/bitcoin_transaction network/dime_message network/dns_packet
    network/ethernet_frame network/hccap network/hccapx network/icmp_packet network/ipv4_packet
    network/ipv6_packet network/microsoft_network_monitor_v2 network/packet_ppi network/pcap
    network/protocol_body network/rtcp_payload network/rtp_packet network/rtpdump
    network/some_ip/some_ip network/some_ip/some_ip_container network/some_ip/some_ip_sd
    network/some_ip/some_ip_sd_entries network/some_ip/some_ip_sd_options network/tcp_segment
    network/tls_client_hello network/udp_datagram network/websocket scientific/nt_mdt/nt_mdt
    scientific/nt_mdt/nt_mdt_pal scientific/spectroscopy/avantes_roh60
    scientific/spectroscopy/specpr security/efivar_signature_list security/openpgp_message
    security/ssh_public_key serialization/asn1/asn1_der serialization/bson
    serialization/chrome_pak serialization/google_protobuf serialization/microsoft_cfb
    serialization/msgpack serialization/php_serialized_value serialization/python_pickle
    serialization/ruby_marshal windows/regf windows/windows_lnk_file windows/windows_minidump
    windows/windows_resource_file windows/windows_shell_items windows/windows_systemtime
"""
WEBIDE_GALLERY = tuple(_GALLERY_PATHS.split())
KSC = ROOT / "tools" / "ksc.js"


def ide_check(upload_dir: Path, gallery_dir: Path | None = None, outdir: Path | None = None,
              debug: bool = False) -> subprocess.CompletedProcess[str]:
    """Compile every .ksy of upload_dir the way the Web IDE compiles uploaded files."""
    cmd = ["node", str(KSC), "--ide-check", str(upload_dir), *(["--debug"] if debug else [])]
    for path in WEBIDE_GALLERY:
        cmd += ["--gallery", path]
    if gallery_dir is not None:
        cmd += ["--gallery-dir", str(gallery_dir)]
    if outdir is not None:
        cmd += ["--outdir", str(outdir)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)


def test_gallery_list_is_the_pinned_one() -> None:
    assert len(WEBIDE_GALLERY) == 185 == len(set(WEBIDE_GALLERY))
    common = sorted(p for p in WEBIDE_GALLERY if p.startswith("common/"))
    assert common == ["common/bcd", "common/bytes_with_io", "common/dos_datetime",
                      "common/riff", "common/utf8_string", "common/vlq_base128_be",
                      "common/vlq_base128_le"]


FORMAT_SCHEMAS = ["swh", "mdb", "zss", "zs", "neuroglancer", "amudai", "mosaic"]


@pytest.mark.parametrize("fmt", FORMAT_SCHEMAS)
def test_format_compiles_from_its_upload_files(node: None, fmt: str, tmp_path: Path) -> None:
    """`shardkit schema FMT -o DIR` gives what the IDE needs, and the IDE's JavaScript from
    those files is byte for byte generated/js/."""
    from shardkit.schema_files import resolve, write_upload_files

    written = write_upload_files(fmt, tmp_path / "upload")
    proc = ide_check(tmp_path / "upload", outdir=tmp_path / "js")
    assert proc.returncode == 0, proc.stderr
    modules = sorted(p.name for p in (tmp_path / "js").iterdir())
    assert len(modules) == len(written) == len(resolve(fmt).upload)
    for name in modules:
        assert (tmp_path / "js" / name).read_bytes() == \
            (ROOT / "generated" / "js" / name).read_bytes(), name


def _schema_importing(folder: Path, *imports: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["meta:", "  id: importer", "  imports:", *(f"    - {i}" for i in imports),
             "seq:", "  - id: value", "    type: uleb128" if "uleb128" in imports[0] else
             "    type: vlq_base128_le"]
    path = folder / "importer.ksy"
    path.write_text("\n".join(lines) + "\n")
    return path


def _stand_in_gallery(tmp_path: Path) -> Path:
    """A gallery folder holding common/uleb128.ksy and common/vlq_base128_le.ksy."""
    common = tmp_path / "gallery" / "common"
    common.mkdir(parents=True)
    shutil.copy(ROOT / "schemas" / "uleb128.ksy", common / "uleb128.ksy")
    (common / "vlq_base128_le.ksy").write_text(
        "meta:\n  id: vlq_base128_le\nseq:\n  - id: b\n    type: u1\n")
    return tmp_path / "gallery"


def test_absolute_import_from_the_gallery_compiles(node: None, tmp_path: Path) -> None:
    _schema_importing(tmp_path / "up", "/common/vlq_base128_le")
    proc = ide_check(tmp_path / "up", gallery_dir=_stand_in_gallery(tmp_path))
    assert proc.returncode == 0, proc.stderr


def test_absolute_import_outside_the_gallery_fails(node: None, tmp_path: Path) -> None:
    """The old layout (`- /common/uleb128`) fails although the file exists, uploaded and in
    the gallery folder: the IDE's gallery has no uleb128."""
    _schema_importing(tmp_path / "up", "/common/uleb128")
    shutil.copy(ROOT / "schemas" / "uleb128.ksy", tmp_path / "up" / "uleb128.ksy")
    proc = ide_check(tmp_path / "up", gallery_dir=_stand_in_gallery(tmp_path))
    assert proc.returncode == 1
    assert "failed to import spec formats/common/uleb128.ksy from kaitai.io" in proc.stderr
    assert "not in the Web IDE's gallery" in proc.stderr


@pytest.mark.parametrize("name", ["uleb128", "common/uleb128", "../uleb128"])
def test_relative_import_needs_an_uploaded_file(node: None, tmp_path: Path, name: str) -> None:
    _schema_importing(tmp_path / "up", name)
    if name != "uleb128":  # present, but not where a flat upload can put it
        (tmp_path / "common").mkdir()
        shutil.copy(ROOT / "schemas" / "uleb128.ksy", tmp_path / "common" / "uleb128.ksy")
        shutil.copy(ROOT / "schemas" / "uleb128.ksy", tmp_path / "uleb128.ksy")
    proc = ide_check(tmp_path / "up")
    assert proc.returncode == 1
    assert f"failed to import spec {name}.ksy from local storage" in proc.stderr


def test_relative_import_of_an_uploaded_file_compiles(node: None, tmp_path: Path) -> None:
    _schema_importing(tmp_path / "up", "uleb128")
    shutil.copy(ROOT / "schemas" / "uleb128.ksy", tmp_path / "up" / "uleb128.ksy")
    proc = ide_check(tmp_path / "up", outdir=tmp_path / "js")
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in (tmp_path / "js").iterdir()) == ["Importer.js", "Uleb128.js"]


# --- u64 values above 2**53: the exact forms the schemas add for the Web IDE --------------------

BIG_IDS = [5, 2**53 + 1, 2**60 + 1, 2**60 + 3, 2**63 + 12345, 2**64 - 2, 2**64 - 1]


def test_neuroglancer_chunk_ids_are_exact_in_javascript(node: None, tmp_path: Path) -> None:
    """chunkIdDec and the 32-bit halves give ids above 2**53 exactly; chunkIdDelta does not."""
    from shardkit.writers.neuroglancer import build_shard

    spec = {"@type": "neuroglancer_uint64_sharded_v1", "hash": "identity", "preshift_bits": 0,
            "minishard_bits": 1, "shard_bits": 0, "minishard_index_encoding": "raw",
            "data_encoding": "raw"}
    items = {i: i.to_bytes(8, "little") for i in BIG_IDS}
    shard = tmp_path / "0.shard"
    shard.write_bytes(build_shard(items, spec))
    fmt = next(f for f in FORMATS if f.js_class == "NeuroglancerUint64Sharded")
    js = run_js_dump(fmt.js_class, [shard])[str(shard)]
    py = py_dump(fmt, shard)
    assert diff(py, js) == []
    chunks = [c for m in js["minishards"] for c in m["chunks"]]
    assert len(chunks) == len(BIG_IDS)
    for chunk in chunks:
        chunk_id = int.from_bytes(bytes.fromhex(chunk["data"]), "little")
        assert chunk["chunkIdDec"] == str(chunk_id)
        assert chunk["chunkIdHi"] * 2**32 + chunk["chunkIdLo"] == chunk_id
        assert chunk["chunkIdHi"] < 2**32 and chunk["chunkIdLo"] < 2**32
    by_id = {int(c["chunkIdDec"]): c for c in chunks}
    assert sorted(by_id) == BIG_IDS
    # each delta, from its exact halves, is the difference of consecutive ids in its minishard
    for m in js["minishards"]:
        prev = 0
        for c in m["chunks"]:
            delta = c["chunkIdDeltaHi"] * 2**32 + c["chunkIdDeltaLo"]
            assert delta == int(c["chunkIdDec"]) - prev
            prev = int(c["chunkIdDec"])
    # what the exact forms are for: the plain u8 delta arrives rounded
    big = by_id[2**64 - 1]
    assert big["chunkIdDelta"] != big["chunkIdDeltaHi"] * 2**32 + big["chunkIdDeltaLo"]
    # and shardkit reads the same ids
    import shardkit

    with shardkit.open(str(shard), spec=spec) as reader:
        assert sorted(reader.keys()) == sorted(by_id)


def test_neuroglancer_samples_chunk_ids_match_shardkit(node: None) -> None:
    """On the reference-written samples, chunkIdDec is what shardkit lists."""
    import shardkit

    fmt = next(f for f in FORMATS if f.js_class == "NeuroglancerUint64Sharded")
    trees = js_trees(fmt)
    checked = 0
    for file in fmt.files():
        spec = json.loads((file.parent / "info").read_text())["sharding"]
        with shardkit.open(str(file), spec=spec) as shard:
            ids = sorted(shard.keys())
        js_ids = sorted(int(c["chunkIdDec"]) for m in trees[str(file)]["minishards"]
                        for c in (m["chunks"] or []))
        assert js_ids == ids, file
        checked += len(ids)
    assert checked > 0


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda fmt: fmt.js_class)
def test_debug_build_reads_what_release_reads(node: None, fmt: Format, tmp_path: Path) -> None:
    """The IDE's object tree runs the debug build, compiled from the uploaded files: it gives
    the same tree as generated/js/ on every sample."""
    from shardkit.schema_files import SCHEMA_OF_FORMAT, write_upload_files

    schema = fmt.py_module.rsplit(".", 1)[1]
    assert schema in SCHEMA_OF_FORMAT.values()
    write_upload_files(schema, tmp_path / "upload")
    proc = ide_check(tmp_path / "upload", outdir=tmp_path / "debug", debug=True)
    assert proc.returncode == 0, proc.stderr
    assert "this._debug" in (tmp_path / "debug" / f"{fmt.js_class}.js").read_text()
    files = fmt.files()
    debug = subprocess.run(
        ["node", str(JS_DUMP), "--modules", str(tmp_path / "debug"), "--debug", fmt.js_class,
         *map(str, files)], capture_output=True, text=True, timeout=120, check=False)
    assert debug.returncode == 0, debug.stderr
    trees = json.loads(debug.stdout)
    release = js_trees(fmt)
    for file in files:
        assert parse_error(trees[str(file)]) is None, file.name
        assert diff(release[str(file)], trees[str(file)]) == [], file.name
