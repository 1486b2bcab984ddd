"""pytest with the SWH accelerator taken from a sanitizer build (``make asan``).

    python tools/asan_pytest.py PATH/TO/_native.so [pytest arguments...]

The module at PATH is loaded as ``shardkit.formats.swh._native`` before shardkit imports it,
so the tests run the instrumented build while the package itself comes from the checkout.
"""

from __future__ import annotations

import importlib.util
import sys

NAME = "shardkit.formats.swh._native"


def main() -> int:
    path, args = sys.argv[1], sys.argv[2:]
    spec = importlib.util.spec_from_file_location(NAME, path)
    if spec is None or spec.loader is None:
        print(f"cannot load {path}", file=sys.stderr)
        return 2
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules[NAME] = module
    from shardkit.formats.swh import reader

    if reader._native is not module:
        print("the sanitizer build was not picked up", file=sys.stderr)
        return 2
    print(f"shardkit.formats.swh._native from {module.__file__}", flush=True)
    import pytest

    return int(pytest.main(args))


if __name__ == "__main__":
    sys.exit(main())
