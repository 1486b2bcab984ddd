#!/bin/sh
# Regenerates the files of this folder with the reference implementation: zs 0.10.0 (PyPI sdist),
# run under Python 3.6 (see ../MANIFEST.md). Inputs are made by inputs.py (deterministic).
set -e
trap "rm -f lines.txt binary.uleb128 binary.u64le" EXIT
ZS=${ZS:-zs}
python3 inputs.py
rm -f *.zs
M='{"dataset": {"name": "shardkit zs test", "tags": ["a", "b"], "nested": {"depth": [1, {"x": null}]}}}'
for codec in none deflate lzma; do
  $ZS make --no-spinner --no-default-metadata -j 1 --codec $codec --branching-factor 2 --approx-block-size 64 "$M" lines.txt lines-$codec-bf2-tiny.zs
  $ZS make --no-spinner --no-default-metadata -j 1 --codec $codec "$M" lines.txt lines-$codec-default.zs
  $ZS make --no-spinner --no-default-metadata -j 1 --codec $codec --length-prefixed uleb128 --branching-factor 3 --approx-block-size 100 "$M" binary.uleb128 binary-uleb128-$codec-bf3.zs
done
$ZS make --no-spinner --no-default-metadata -j 2 --codec deflate -z 1 --length-prefixed u64le --branching-factor 1024 --approx-block-size 200 '{}' binary.u64le binary-u64le-deflate-bf1024.zs
$ZS make --no-spinner --no-default-metadata -j 1 --codec lzma -z 1 --branching-factor 16 --approx-block-size 300 '{}' lines.txt lines-lzma1-bf16.zs
