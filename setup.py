"""Build hook for the optional C accelerators of SWH and FMPH-GO (MOSAIC) lookups, of ZS/ZSS
record bodies and of Amudai numeric cascades (everything else is in pyproject.toml).

``shardkit.formats.swh._native``, ``shardkit.formats._records``, ``shardkit.hashing._fmph``,
``shardkit.hashing._murmur``, ``shardkit.formats.neuroglancer._native``,
``shardkit.formats.mosaic._native`` and ``shardkit.formats.amudai._native`` are compiled
with the system C compiler when one is there; when compiling fails, the install goes on
without them and shardkit uses its pure-Python paths (same answers, slower lookups).
"""

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class OptionalBuildExt(build_ext):
    """build_ext that warns instead of failing when the extension cannot be compiled."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # noqa: BLE001 - any compiler or setup failure
            self.warn(f"shardkit: C accelerator not built ({exc}); using the Python path")

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:  # noqa: BLE001 - any compiler failure
            self.warn(f"shardkit: {ext.name} not built ({exc}); using the Python path")


setup(
    ext_modules=[Extension("shardkit.formats.swh._native",
                           ["src/shardkit/formats/swh/_native.c"],
                           # its record sizes and offsets come from generated/layouts.h
                           include_dirs=["generated"], depends=["generated/layouts.h"],
                           extra_compile_args=["-O2", "-Wall"], optional=True),
                 Extension("shardkit.formats._records", ["src/shardkit/formats/_records.c"],
                           extra_compile_args=["-O2", "-Wall"], optional=True),
                 Extension("shardkit.hashing._fmph", ["src/shardkit/hashing/_fmph.c"],
                           include_dirs=["src/shardkit"], depends=["src/shardkit/_bytes.h"],
                           extra_compile_args=["-O2", "-Wall"], optional=True),
                 Extension("shardkit.hashing._murmur", ["src/shardkit/hashing/_murmur.c"],
                           include_dirs=["src/shardkit"], depends=["src/shardkit/_bytes.h"],
                           extra_compile_args=["-O2", "-Wall"], optional=True),
                 Extension("shardkit.formats.neuroglancer._native",
                           ["src/shardkit/formats/neuroglancer/_native.c"],
                           include_dirs=["src/shardkit"], depends=["src/shardkit/_bytes.h"],
                           extra_compile_args=["-O2", "-Wall"], optional=True),
                 Extension("shardkit.formats.mosaic._native",
                           ["src/shardkit/formats/mosaic/_native.c"],
                           extra_compile_args=["-O2", "-Wall"], optional=True),
                 Extension("shardkit.formats.amudai._native",
                           ["src/shardkit/formats/amudai/_native.c"],
                           # no fused multiply-add: ALP's products round as numpy's do
                           extra_compile_args=["-O2", "-Wall", "-ffp-contract=off"],
                           optional=True)],
    cmdclass={"build_ext": OptionalBuildExt},
)
