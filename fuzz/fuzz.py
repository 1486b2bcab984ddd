"""Coverage-guided fuzzing of one format's reader with atheris (libFuzzer for Python).

    python fuzz/fuzz.py FORMAT [--seconds N] [--runs N] [-- LIBFUZZER_ARGS...]
    make fuzz FORMAT=zss SECONDS=60

The corpus starts from the small writer-made seeds (``fuzz/seeds/<format>``, see
``make_seeds.py``) and the bundled samples up to 64 KiB (``tests/data/<format>``), and grows in
``.fuzz/<format>/corpus`` (not committed). A finding (an exception other than a ``ShardkitError``,
an input taking more than 10 s, or an RSS above the limit) is written to
``tests/data/<format>/fuzz/`` where ``tests/test_fuzz_targets.py`` replays it for ever after.
Structure-aware mutators (``fuzz/mutators.py``) re-seal checksums for ZSS and Amudai.
FUZZING.md has the details and the campaign's figures.
"""

from __future__ import annotations

import argparse
import hashlib
import operator
import resource
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

import atheris
import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

_NATIVE_TRACE_CMP = atheris._trace_cmp
_CMP = [operator.lt, operator.le, operator.eq, operator.ne, operator.gt, operator.ge]


def _trace_cmp(obj1: object, obj2: object, op: int, counter: int, is_const: bool) -> object:
    """Atheris' comparison hook, minus its leak on numpy operands.

    Instrumented code calls ``atheris._trace_cmp`` (looked up on the module at each call) for
    every comparison. atheris 3.0's native hook leaks memory when an operand is a numpy array or
    scalar (about 0.7 KiB per execution of the SWH reader, which compares whole arrays): a long
    campaign then ends in a false out-of-memory finding. numpy comparisons are made directly (no
    comparison feedback: their operands are arrays, not the magic values the feedback is for);
    everything else goes to the native hook.
    """
    if isinstance(obj1, (np.ndarray, np.generic)) or isinstance(obj2, (np.ndarray, np.generic)):
        return _CMP[op](obj1, obj2)
    return _NATIVE_TRACE_CMP(obj1, obj2, op, counter, is_const)


if sys.version_info < (3, 12):  # the hook's ``op`` is the plain cmp_op index up to 3.11 only
    atheris._trace_cmp = _trace_cmp

with atheris.instrument_imports(include=["shardkit"]):
    import shardkit
    import shardkit.formats.amudai
    import shardkit.formats.neuroglancer
    import shardkit.formats.swh
    import shardkit.formats.xet_mdb
    import shardkit.formats.zs
    import shardkit.formats.zss
    import shardkit.writers.xet_mdb
    import shardkit.writers.zs
    import shardkit.writers.zss  # noqa: F401

import mutators  # noqa: E402
import targets  # noqa: E402

#: RSS cap (MiB) for one fuzzing process: the interpreter with numpy and every reader loaded
#: takes about 150 MiB; the cap leaves 256 MiB beyond that and the largest input.
RSS_LIMIT_MB = 512

#: Seeds above this size are left out of the fuzzing corpus: small inputs run hundreds of times
#: faster and reach the same code (the large samples are covered by the test suite).
MAX_SEED = 64 << 10


#: With ``--keep-going``: an input that raises the process' peak RSS by more than this (plus its
#: own size) is a memory finding, recorded with the input that did it; libFuzzer's own RSS limit
#: (checked once a second, after the fact) is then only the backstop.
PEAK_STEP_MB = 256
KEEP_GOING_RSS_LIMIT_MB = 2048


def _signature(exc: BaseException) -> str:
    """``Type@file:line`` of the last shardkit frame (the last frame when none is shardkit's)."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if "shardkit" in f.filename] or traceback.extract_tb(exc.__traceback__)
    where = f"{Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else "?"
    return f"{type(exc).__name__}@{where}"


def _keep_going(target: Callable[[bytes], None], artifacts: Path) -> Callable[[bytes], None]:
    """Wrap ``target``: save the first input of each distinct finding, then go on fuzzing.

    Signatures of the ``crash-`` files already saved are known from the start (they are replayed
    once), so a later run does not save the same finding again. A jump of the peak RSS by more
    than ``PEAK_STEP_MB`` during one input is saved as ``oom-<sha1>``; each such input is saved.
    """
    seen: set[str] = set()
    for path in sorted(artifacts.glob("crash-*")):
        try:
            target(path.read_bytes())
        except Exception as exc:  # noqa: BLE001 - an open finding
            seen.add(_signature(exc))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10

    def run(data: bytes) -> None:
        nonlocal peak
        try:
            target(data)
        except Exception as exc:  # noqa: BLE001 - every escaping exception is a finding
            signature = _signature(exc)
            if signature not in seen:
                seen.add(signature)
                digest = hashlib.sha1(data).hexdigest()[:16]
                (artifacts / f"crash-{digest}").write_bytes(data)
                print(f"FINDING {signature}: {exc!r:.200} -> crash-{digest}", flush=True)
        now = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10
        if now - peak > PEAK_STEP_MB + (len(data) >> 20):
            digest = hashlib.sha1(data).hexdigest()
            (artifacts / f"oom-{digest}").write_bytes(data)
            print(f"FINDING peak RSS {peak} -> {now} MiB on one input -> oom-{digest}",
                  flush=True)
        peak = now

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("format", choices=sorted(targets.TARGETS))
    parser.add_argument("--seconds", type=int, default=60, help="stop after N seconds")
    parser.add_argument("--runs", type=int, default=-1, help="stop after N executions")
    parser.add_argument("--keep-going", action="store_true",
                        help="record each distinct exception (by type and place) and go on")
    parser.add_argument("--corpus", type=Path, help="corpus folder (default .fuzz/FORMAT/corpus)")
    parser.add_argument("--artifacts", type=Path,
                        help="where findings go (default tests/data/FORMAT/fuzz)")
    parser.add_argument("libfuzzer", nargs="*", help="extra libFuzzer arguments (after --)")
    args, extra = parser.parse_known_args()  # libFuzzer flags (-seed=1...) pass through
    args.libfuzzer += [a for a in extra if a != "--"]

    corpus = args.corpus or ROOT / ".fuzz" / args.format / "corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    seeds = [(n, d) for n, d in targets.seeds(args.format) if len(d) <= MAX_SEED]
    for name, data in seeds:
        (corpus / f"seed-{name.replace('/', '_')}").write_bytes(data)
    for path in targets.findings(args.format):
        if not path.name.startswith(("timeout-", "oom-")):  # those would stop every run at once
            (corpus / f"finding-{path.name}").write_bytes(path.read_bytes())
    artifacts = args.artifacts or ROOT / "tests" / "data" / args.format / "fuzz"
    artifacts.mkdir(parents=True, exist_ok=True)
    largest = max((len(d) for _, d in seeds), default=1 << 16)

    rss_limit = KEEP_GOING_RSS_LIMIT_MB if args.keep_going else RSS_LIMIT_MB
    flags = [sys.argv[0], str(corpus),
             f"-artifact_prefix={artifacts}/",
             f"-max_total_time={args.seconds}",
             f"-runs={args.runs}",
             "-timeout=10",
             f"-rss_limit_mb={rss_limit + largest // (1 << 20)}",
             f"-max_len={max(4096, largest + largest // 4)}",
             "-print_final_stats=1"]
    dictionary = HERE / "dicts" / f"{args.format}.dict"
    if dictionary.exists():
        flags.append(f"-dict={dictionary}")
    flags += args.libfuzzer

    target = targets.TARGETS[args.format]
    if args.keep_going:
        target = _keep_going(target, artifacts)
    mutate = mutators.MUTATORS.get(args.format)
    if mutate is not None:
        def custom(data: bytes, max_size: int, seed: int) -> bytes:
            return mutate(data, max_size, seed, atheris.Mutate)

        atheris.Setup(flags, target, custom_mutator=custom)
    else:
        atheris.Setup(flags, target)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
