# cellsim: the two commands of the README, and a few helpers.
#   make test       install (editable, with test extras) and run every test: Rust and Python
#   make reproduce  install and reproduce the published figures into ./cellsim-results
#   make fuzz       long runs of the fuzzers (FUZZ_EXAMPLES programs each; outcome counts in fuzz-report.json)
PY ?= python3
FUZZ_EXAMPLES ?= 20000

.PHONY: install test test-rust test-python lint reproduce bench fmt fuzz

install:
	$(PY) -m pip install -q -e '.[test,dask]'

test: install lint test-rust test-python

test-rust:
	cargo test -p cellsim-engine

test-python:
	$(PY) -m pytest

lint:
	cargo clippy -q -p cellsim-engine -p cellsim-py --all-targets -- -D warnings
	$(PY) -m ruff check python tests examples benches

fuzz:
	CELLSIM_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) CELLSIM_FUZZ_REPORT=fuzz-report.json \
		$(PY) -m pytest -q -o timeout=0 tests/test_fuzz_mfc.py tests/test_fuzz_binding.py
	PROPTEST_CASES=$(FUZZ_EXAMPLES) cargo test -q --release -p cellsim-engine --test it \
		hostile::random_commands_never_panic

reproduce:
	$(PY) -m pip install -q .
	cellsim reproduce

bench:
	cellsim bench speed
	cellsim bench speed --traffic uniform --rate 0.01
	cellsim bench switch

fmt:
	cargo fmt --all
	$(PY) -m ruff format python tests examples benches
