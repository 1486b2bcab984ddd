# shardkit developer tasks. `make install` once, then any target.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

SAMPLES := tests/data/swh/tiny.shard tests/data/swh/deleted.shard

.PHONY: install generate check-generated test test-fast demo bench lint wheel-check clean

install:                       ## venv + package with dev extras + pinned Kaitai compiler
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	npm ci --no-audit --no-fund --loglevel=error

generate:                      ## schemas/*.ksy -> generated/ (Python + JavaScript)
	node tools/ksc.js --outdir generated

check-generated:               ## fail when generated/ is not what the schemas give
	rm -rf .check-generated && node tools/ksc.js --outdir .check-generated
	diff -r -x __pycache__ generated .check-generated || { echo "generated/ is stale: run make generate"; rm -rf .check-generated; exit 1; }
	rm -rf .check-generated

test:                          ## the whole test suite, interop group included
	$(PY) -m pytest -q

test-fast:                     ## without the interop group
	$(PY) -m pytest -q -m 'not interop'

demo:                          ## shardkit on the bundled sample files of every supported format
	@for f in $(SAMPLES); do \
	  echo "== shardkit info $$f"; shardkit info $$f || exit 1; \
	  echo "== shardkit verify $$f"; shardkit verify $$f || exit 1; \
	  echo "== shardkit map $$f"; shardkit map $$f || exit 1; \
	done
	@echo "== shardkit ls tests/data/swh/tiny.shard"; shardkit ls tests/data/swh/tiny.shard
	@echo "== shardkit get tests/data/swh/tiny.shard a948904f...47"; \
	  shardkit get tests/data/swh/tiny.shard a948904f2f0f479b8f8197694b30184b0d2ed1c1cd2a1ec0fb85d299a192a447

bench:                         ## speed and memory, side by side with the reference implementations
	@for f in benchmarks/bench_*.py; do echo "== $$f"; $(PY) $$f || exit 1; done

lint:                          ## ruff
	$(PY) -m ruff check src tests tools benchmarks

wheel-check:                   ## build the wheel, install it in a fresh venv outside the repo, run it
	tools/wheel_check.sh

clean:
	rm -rf build dist .check-generated .pytest_cache src/*.egg-info
