"""Writes the annotation layers of this folder with neuroglancer 2.41.2 and ngsidekick 0.0.20.

    python tests/data/ng_annotations/make_samples.py

- ``ng_points/``: neuroglancer's ``AnnotationWriter`` (unsharded, one spatial cell): 12 points
  with a ``float32`` ``score``, a ``uint32`` ``big`` (which that writer pads as if 3-aligned)
  and a ``uint8`` enum ``kind``, related to ``segment`` ids;
- ``sk_points/``: ngsidekick's ``write_precomputed_annotations`` unsharded (cell files named by
  its transposed Morton decode), 40 points with a ``float32`` ``score``, 2 spatial levels;
- ``sk_lines/``: the same writer sharded, 30 lines, 3 spatial levels.

``expected.json`` holds the input of each layer, which the tests compare with what they read.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import neuroglancer
import numpy as np
import pandas as pd
from neuroglancer.write_annotations import AnnotationWriter
from ngsidekick.annotations.precomputed import write_precomputed_annotations

HERE = Path(__file__).parent


def ng_points() -> list[dict]:
    cs = neuroglancer.CoordinateSpace(names=["x", "y", "z"], units="nm", scales=[4, 4, 40])
    w = AnnotationWriter(cs, "point", relationships=["segment"], properties=[
        neuroglancer.AnnotationPropertySpec(id="score", type="float32"),
        neuroglancer.AnnotationPropertySpec(id="big", type="uint32"),
        neuroglancer.AnnotationPropertySpec(id="kind", type="uint8", enum_values=[0, 1],
                                            enum_labels=["pre", "post"])])
    out = []
    for i in range(12):
        point = [float(i), float(2 * i), float(i % 5)]
        props = {"score": i / 4, "big": 3_000_000_000 + i, "kind": i % 2}
        segs = [100 + i % 3]
        w.add_point(point, id=i + 1, segment=segs, **props)
        out.append({"id": i + 1, "point": point, "properties": props,
                    "relationships": {"segment": segs}})
    shutil.rmtree(HERE / "ng_points", ignore_errors=True)
    w.write(HERE / "ng_points")
    return out


def sk_points() -> list[dict]:
    rng = np.random.default_rng(3)
    n = 40
    df = pd.DataFrame({"x": rng.uniform(0, 64, n).astype(np.float32),
                       "y": rng.uniform(0, 64, n).astype(np.float32),
                       "z": rng.uniform(0, 64, n).astype(np.float32),
                       "score": rng.normal(size=n).astype(np.float32)},
                      index=pd.Index(np.arange(1, n + 1, dtype=np.uint64), name="id"))
    shutil.rmtree(HERE / "sk_points", ignore_errors=True)
    write_precomputed_annotations(df, ["x", "y", "z"], "point", properties=["score"],
                                  output_dir=str(HERE / "sk_points"), write_sharded=False,
                                  target_chunk_limit=10, num_spatial_levels=2)
    return [{"id": int(i), "point": [float(r.x), float(r.y), float(r.z)],
             "properties": {"score": float(r.score)}} for i, r in df.iterrows()]


def sk_lines() -> list[dict]:
    rng = np.random.default_rng(4)
    n = 30
    a = rng.uniform(0, 64, (n, 3)).astype(np.float32)
    b = (a + rng.uniform(-8, 8, (n, 3))).clip(0, 64).astype(np.float32)
    df = pd.DataFrame({"xa": a[:, 0], "ya": a[:, 1], "za": a[:, 2],
                       "xb": b[:, 0], "yb": b[:, 1], "zb": b[:, 2]},
                      index=pd.Index(np.arange(1, n + 1, dtype=np.uint64), name="id"))
    shutil.rmtree(HERE / "sk_lines", ignore_errors=True)
    write_precomputed_annotations(df, ["x", "y", "z"], "line", output_dir=str(HERE / "sk_lines"),
                                  write_sharded=True, target_chunk_limit=8, num_spatial_levels=3)
    return [{"id": i + 1, "point_a": a[i].tolist(), "point_b": b[i].tolist()} for i in range(n)]


def main() -> None:
    expected = {"ng_points": ng_points(), "sk_points": sk_points(), "sk_lines": sk_lines()}
    (HERE / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")


if __name__ == "__main__":
    main()
