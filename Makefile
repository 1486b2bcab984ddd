# shardkit developer tasks. `make install` once, then any target.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: install zs-reference generate check-generated test test-fast demo bench lint wheel-check clean fuzz fuzz-smoke docs asan

install:                       ## venv + package with dev extras + pinned Kaitai compiler
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	PYTHONWARNINGS="ignore:Editable installation" $(PY) -m pip install --quiet -e '.[dev]'
	$(PY) tools/dev_typing.py      # mypy cannot see the editable install's import hook
	npm ci --no-audit --no-fund --loglevel=error
	@command -v flatc >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	  apt-get update -qq && apt-get install -y -qq flatbuffers-compiler >/dev/null; } || \
	  echo "warning: flatc is missing (Debian: apt-get install flatbuffers-compiler); make generate needs it"
	@command -v dot >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	  apt-get update -qq && apt-get install -y -qq graphviz >/dev/null; } || \
	  echo "warning: Graphviz's dot is missing (Debian: apt-get install graphviz); make docs needs it"
	@$(MAKE) --no-print-directory zs-reference

# zs 0.10.0, the ZS reference, builds only on Python 3.6: with a python3.6 on PATH or a pyenv
# 3.6.x, .venv-zs gets it (once) and .ci/run points ZS_PYTHON at it; without one, a notice.
PYTHON36 ?= $(lastword $(shell command -v python3.6) $(wildcard $(HOME)/.pyenv/versions/3.6.*/bin/python3.6))
zs-reference:                  ## the zs 0.10.0 reference in .venv-zs (live ZS interop tests)
	@if .venv-zs/bin/python -c "import zs" 2>/dev/null; then exit 0; fi; \
	if ! "$(PYTHON36)" -c "import sys; assert sys.version_info[:2] == (3, 6)" 2>/dev/null; then \
	echo "notice: no Python 3.6 (python3.6 on PATH or a pyenv \
	3.6.x): the live ZS interop tests will be skipped (zs 0.10.0 builds only on Python 3.6)"; \
	exit 0; fi; rm -rf .venv-zs && $(PYTHON36) -m venv .venv-zs && \
	.venv-zs/bin/python -m pip install --quiet --disable-pip-version-check zs==0.10.0 || \
	{ echo "notice: zs 0.10.0 did not install with $(PYTHON36): the live ZS interop tests \
	will be skipped"; rm -rf .venv-zs; }

generate:                      ## schemas -> generated/ (Kaitai -> Python + JS; protoc; flatc; layouts)
	node tools/ksc.js --outdir generated
	$(PY) tools/gen_amudai.py --outdir generated
	$(PY) tools/gen_layouts.py --outdir generated

check-generated:               ## fail when generated/ is not what the schemas give
	rm -rf .check-generated && node tools/ksc.js --outdir .check-generated
	$(PY) tools/gen_amudai.py --outdir .check-generated
	$(PY) tools/gen_layouts.py --outdir .check-generated
	diff -r -x __pycache__ generated .check-generated || { echo "generated/ is stale: run make generate"; rm -rf .check-generated; exit 1; }
	rm -rf .check-generated

test:                          ## the whole test suite, interop group included
	$(PY) -m pytest -q

test-fast:                     ## without the interop group
	$(PY) -m pytest -q -m 'not interop'

demo:                          ## shardkit on the bundled sample files of every supported format
	tools/demo.sh

bench:                         ## speed and memory, side by side with the reference implementations
	@for f in benchmarks/bench_*.py; do echo "== $$f"; $(PY) $$f || exit 1; done

FORMAT  ?= zss
SECONDS ?= 60
fuzz:                          ## coverage-guided fuzzing of one reader: make fuzz FORMAT=zss SECONDS=60
	cd fuzz && ../$(PY) fuzz.py $(FORMAT) --seconds $(SECONDS) $(FUZZ_ARGS)

# The smoke is deterministic (fixed seed and run counts, a fresh corpus, fixed hash seed), so
# a run that passed here passes in CI; each target runs a few seconds.
SMOKE_RUNS = swh:20000 swh_native:500 mdb:10000 zss:10000 zs:5000 amudai:3000 neuroglancer:15000 \
             cseg:10000 mosaic:5000 ngann:10000 ng_native:3000
fuzz-smoke:                    ## every fuzz target for a few seconds (CI); a finding fails
	@mkdir -p .fuzz; for fr in $(SMOKE_RUNS); do f=$${fr%%:*}; n=$${fr##*:}; \
	  echo "== fuzz $$f ($$n runs)"; rm -rf .fuzz/smoke-$$f; \
	  (cd fuzz && PYTHONHASHSEED=0 ../$(PY) fuzz.py $$f --runs $$n --seconds 120 \
	    --corpus ../.fuzz/smoke-$$f -- -seed=1 > ../.fuzz/$$f.log 2>&1) || \
	  { tail -40 .fuzz/$$f.log; exit 1; }; \
	  grep -E '^stat::(number_of_executed_units|average_exec_per_sec)' .fuzz/$$f.log; done

# The C accelerator built with AddressSanitizer and UBSan (its own copy under build/asan; the
# installed one is untouched), then the SWH tests with it: any sanitizer report fails the run.
ASAN_TESTS ?= tests/test_swh_native.py tests/test_swh.py tests/test_swh_errors.py tests/test_swh_writer.py
SANITIZE   := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
asan:                          ## the SWH tests with the C accelerator under ASan + UBSan
	rm -rf build/asan
	CFLAGS="-O1 -g $(SANITIZE)" LDFLAGS="$(SANITIZE)" $(PY) setup.py -q build_ext \
	  --build-lib build/asan/lib --build-temp build/asan/tmp
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  PYTHONMALLOC=malloc SHARDKIT_REQUIRE_NATIVE=1 \
	  LD_PRELOAD="$$($${CC:-cc} -print-file-name=libasan.so) $$($${CC:-cc} -print-file-name=libubsan.so)" \
	  $(PY) tools/asan_pytest.py build/asan/lib/shardkit/formats/swh/_native*.so \
	  -q -p no:cacheprovider $(ASAN_TESTS) $(ASAN_ARGS)

docs:                          ## the docs site into site/, warnings as errors (diagrams made here)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --site-dir site

lint:                          ## ruff
	$(PY) -m ruff check src tests tools benchmarks fuzz

wheel-check:                   ## build the wheel, install it in a fresh venv outside the repo, run it
	tools/wheel_check.sh

clean:
	rm -rf build dist .check-generated .pytest_cache src/*.egg-info site .docs-build
