#!/usr/bin/env bash
# Build the wheel, install it into a fresh venv outside the repo, and run the installed
# `shardkit` on a bundled sample: proves the generated parsers ship inside the wheel, and that
# `shardkit schema` writes the shipped .ksy files unchanged.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$repo/.venv/bin/python" -m build --wheel --outdir "$tmp/dist" "$repo" >"$tmp/build.log" 2>&1 ||
  { cat "$tmp/build.log"; exit 1; }
wheel=$(ls "$tmp"/dist/shardkit-*.whl)
echo "wheel-check: built $(basename "$wheel")"
"$py" -m zipfile -l "$wheel" >"$tmp/contents"
grep -q "shardkit/generated/swh_read_shard.py" "$tmp/contents" ||
  { echo "wheel-check: generated parsers missing from the wheel"; exit 1; }
for ksy in "$repo"/schemas/*.ksy; do   # the schemas ship as they are, for `shardkit schema`
  grep -q "shardkit/schemas/$(basename "$ksy")" "$tmp/contents" ||
    { echo "wheel-check: $(basename "$ksy") missing from the wheel"; exit 1; }
done
grep -q "shardkit/generated/schemas.json" "$tmp/contents" ||
  { echo "wheel-check: generated/schemas.json missing from the wheel"; exit 1; }
grep -q "shardkit/py.typed" "$tmp/contents" ||
  { echo "wheel-check: py.typed (PEP 561 marker) missing from the wheel"; exit 1; }

"$py" -m venv "$tmp/venv"
"$tmp/venv/bin/python" -m pip install --quiet "$wheel"
cp "$repo/tests/data/swh/tiny.shard" "$tmp/tiny.shard"
cd "$tmp"   # outside the repo: nothing can be imported from the source tree
"$tmp/venv/bin/shardkit" info tiny.shard >/dev/null
"$tmp/venv/bin/shardkit" verify tiny.shard
test "$("$tmp/venv/bin/shardkit" get tiny.shard \
  a948904f2f0f479b8f8197694b30184b0d2ed1c1cd2a1ec0fb85d299a192a447)" = "hello world"
# the Web IDE upload set of every format, written by the installed wheel, equals schemas/
"$tmp/venv/bin/shardkit" schema --list >/dev/null
for fmt in swh mdb zss neuroglancer amudai; do
  "$tmp/venv/bin/shardkit" schema "$fmt" -o "$tmp/ide-$fmt" >"$tmp/written" 2>/dev/null
  test -s "$tmp/written" || { echo "wheel-check: shardkit schema $fmt wrote nothing"; exit 1; }
  for f in "$tmp/ide-$fmt"/*; do
    cmp -s "$f" "$repo/schemas/$(basename "$f")" ||
      { echo "wheel-check: shardkit schema $fmt: $(basename "$f") differs from schemas/"; exit 1; }
  done
done
test -f "$tmp/ide-swh/cmph_chd_ph.ksy" && test -f "$tmp/ide-zss/uleb128.ksy" ||
  { echo "wheel-check: shardkit schema left out an imported schema"; exit 1; }
echo "wheel-check: OK"
