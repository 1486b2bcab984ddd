#!/usr/bin/env bash
# `make demo`: shardkit on the bundled sample files of every supported format, one screen each.
set -euo pipefail
cd "$(dirname "$0")/.."
PATH="$PWD/.venv/bin:$PATH"
run() { echo; echo "\$ shardkit $*"; shardkit "$@"; }
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
# like run, but shows only the first N lines (or, for binary output, a hex dump of the start)
run_head() { n=$1; shift; echo; echo "\$ shardkit $* | head -n $n"; shardkit "$@" >"$tmp"
             head -n "$n" "$tmp"; }
# like run, for a command whose exit code 1 (problems found) is part of the show
run_found() { echo; echo "\$ shardkit $*"; shardkit "$@" || echo "(exit code $?)"; }
run_hex() { echo; echo "\$ shardkit $* | od -A d -t x1 -N 32"; shardkit "$@" >"$tmp"; od -A d -t x1 -N 32 "$tmp"; }

echo "== Software Heritage read shards"
run info tests/data/swh/tiny.shard
run ls tests/data/swh/tiny.shard
run get tests/data/swh/tiny.shard a948904f2f0f479b8f8197694b30184b0d2ed1c1cd2a1ec0fb85d299a192a447
run verify --content-hash sha256 tests/data/swh/deleted.shard
run map tests/data/swh/deleted.shard

echo; echo "== Software Heritage MOSAIC files (written by swh-mosaic 0.6.1)"
run_head 10 info tests/data/mosaic/all_indexes.mosaic
run_head 3 ls --index sha1 tests/data/mosaic/all_indexes.mosaic
run get --index sha256 tests/data/mosaic/all_indexes.mosaic \
  7bb09df73163b7b95a5c02ff2d07648b9fffb86e46a03520540df547d99a80af
run verify tests/data/mosaic/zstd.mosaic
run map tests/data/mosaic/single.mosaic

echo; echo "== Hugging Face Xet MDB shards"
mdb=tests/data/mdb/real/session/b04ac8152506ea5af6b90a7378a3d35c46cbef373a597241937795e323cea8f1.mdb
run info "$mdb"
run_head 3 ls "$mdb"
run_head 6 get "$mdb" 1686ca90c1751860f1a32b3b103bed9f483886112eb26a999a6568a43fd38f1c
run verify --name-check "$mdb"
run verify tests/data/mdb/real/upload_body/c2a7f4f3dcab2f5c0038b17845ec6b3db4e6478a53b442f1dd8a40354f82e009.mdb

echo; echo "== ZSS compressed sorted sets"
run info tests/data/zss/tiny_none.zss
run ls tests/data/zss/tiny_none.zss
run_head 3 ls --prefix dup tests/data/zss/medium_zlib.zss
run verify tests/data/zss/medium_zlib.zss
run_head 4 map tests/data/zss/medium_bz2.zss

echo; echo "== ZS, ZSS's released successor (the zs 0.10.0 reference's own sample files)"
run_head 12 info tests/data/zs/reference/letters-lzma.zs
run ls --prefix j tests/data/zs/reference/letters-deflate.zs
run verify tests/data/zs/reference/letters-none.zs
run_head 6 map tests/data/zs/reference/letters-none.zs

echo; echo "== Neuroglancer precomputed sharded datasets"
run_head 20 info tests/data/neuroglancer/ts_image_identity_gzipindex
run verify tests/data/neuroglancer/cv_identity_raw
run_head 3 ls tests/data/neuroglancer/ts_kv_identity_minishardbits0_shardbits5
run_hex get tests/data/neuroglancer/cv_identity_raw 10
run_head 4 map --spec tests/data/neuroglancer/cv_identity_raw/info tests/data/neuroglancer/cv_identity_raw/0.shard

echo; echo "== Neuroglancer annotation layers (written by ngsidekick 0.0.20, with its bugs)"
run_head 12 info tests/data/ng_annotations/sk_lines
run_head 3 ls tests/data/ng_annotations/sk_lines
run_head 14 get --json tests/data/ng_annotations/sk_lines 1
run_found verify tests/data/ng_annotations/sk_points

echo; echo "== Microsoft Amudai shards (written by amudai-cmd, the reference, and by shardkit's writer)"
run verify tests/data/amudai/reference/nested.amudai.shard
run_head 22 info tests/data/amudai/single.amudai.shard
run_head 4 ls tests/data/amudai/twolevel.amudai.shard
run verify tests/data/amudai/twolevel.amudai.shard
run_head 4 map tests/data/amudai/single.amudai.shard
echo
echo "(each command takes --json; shardkit --help lists them all)"
