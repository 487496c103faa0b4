# `make demo` and `make test` do their own set-up: a virtualenv with accy in
# it, and PoCL from Debian's packages when no OpenCL platform exists.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.accy-installed
export ACCY_CACHE_DIR ?= $(CURDIR)/.venv/accy-cache
# `make bench` writes its JSON here and its chart beside it (bench.png),
# tuned beside untuned (--tune); BENCH_ARGS go to tools/bench/run.py (e.g.
# BENCH_ARGS=--quick).
BENCH_JSON ?= bench-results/bench.json
BENCH_ARGS ?=

.PHONY: demo test lit unit conformance bench lint setup onnx

setup: $(STAMP) $(VENV)/.opencl-checked

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip >/dev/null
	$(BIN)/pip install -q -e '.[test,onnx]'
	touch $@

$(VENV)/.opencl-checked: $(STAMP)
	tools/ensure_opencl.sh $(BIN)/python
	touch $@

# The demo needs no OpenCL: without a GPU it runs on the LLVM device.
demo: $(STAMP)
	$(BIN)/python examples/demo.py

lit: setup
	PATH=$(CURDIR)/$(BIN):$$PATH $(BIN)/lit -q tests/lit

# --capture=sys: C-level stderr (PoCL's and LLVM's own messages, an abort's
# assertion) shows in the log instead of going to pytest's capture files,
# where a SIGABRT lost it (how PoCL 3.1's pocl_release_dlhandle_cache abort,
# fixed in program_cache.py's `store`, stayed unexplained for a round).
# A fixed quarter of the conformance suite's cases (tests/conftest.py), so
# make test fits CI's few minutes on two cores; make conformance runs it all.
unit: setup
	$(BIN)/python -m pytest -q --capture=sys --conformance-sample=4

test: setup lint lit unit

lint: setup
	$(BIN)/ruff check -q accy tests tools examples

conformance: setup
	$(BIN)/python -m pytest -q --capture=sys -m '' tests/conformance
	$(BIN)/python -m pytest -q --capture=sys -m sampled tests/unit

# ONNX's whole node-test suite on each device (tools/onnx_node_tests.py);
# it rewrites docs/onnx-node-tests.md. make test runs a slice of it.
onnx: setup
	$(BIN)/python tools/onnx_node_tests.py -q

# matplotlib (the `bench` extra) draws the chart; the bench runs without it.
$(VENV)/.bench-installed: $(STAMP)
	$(BIN)/pip install -q -e '.[bench]' && touch $@ || echo "make bench: matplotlib not installed, so no chart"

bench: setup $(VENV)/.bench-installed
	$(BIN)/python tools/bench/run.py --json $(BENCH_JSON) --tune $(BENCH_ARGS)
