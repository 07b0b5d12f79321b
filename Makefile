# cellsim: the two commands of the README, and a few helpers.
#   make test       install (editable, with test extras) and run every test: Rust and Python
#   make reproduce  install and reproduce the published figures into ./cellsim-results
#   make fuzz       long runs of the fuzzers (FUZZ_EXAMPLES programs each; outcome counts in fuzz-report.json)
#   make wheel      the release wheel into dist/: abi3 (CPython >= 3.11), manylinux2014 (maturin, zig as linker)
#   make docs       the API reference, from the docstrings, into site/ (mkdocs + mkdocstrings)
#   make pgo        install the engine compiled with profile-guided optimisation (docs/performance.md)
PY ?= python3
# writes python/cellsim/_engine.pyi from the binding's Rust sources
STUBGEN = crates/cellsim-py/stubgen.py
FUZZ_EXAMPLES ?= 20000

.PHONY: check-cc browser install test test-rust test-python lint reproduce bench fmt fuzz wheel docs pgo

install:
	@# a build from before the abi3 wheels left a version-tagged module that Python would load first
	rm -f python/cellsim/_engine.cpython-*.so
	$(PY) -m pip install -q -e '.[test,dask]'

test: check-cc browser install lint test-rust test-python

# tests/tools/test_report_browser.py looks at report.html in headless Chromium and skips without one.
# CI (CI=true, root, Debian) installs it so that the check runs there; a developer's machine is
# only told how (installing system packages is theirs to decide).
browser:
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || \
	  { [ "$${CI:-}" = true ] && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	    (apt-get update -qq && apt-get install -y -qq chromium) >/dev/null 2>&1; } || \
	  echo "note: no Chromium: the report's browser test skips (Debian: apt-get install chromium)"

# C programs (cellsim cc, tests/c/test_c_programs.py) need a host C compiler: say so once, loudly,
# rather than let their tests fail one by one (Debian: apt-get install gcc)
check-cc:
	@command -v "$${CC:-cc}" >/dev/null || command -v gcc >/dev/null || \
	  { echo "error: no C compiler (cc or gcc, or \$$CC): cellsim cc and its tests need one; apt-get install gcc" >&2; exit 1; }

test-rust:
	cargo test -p cellsim-engine -p cellsim-programs

test-python:
	@# one pytest worker per core (pytest-xdist): the suite is end-to-end commands and sweeps
	$(PY) -m pytest -n auto

lint:
	cargo fmt --check
	cargo clippy -q -p cellsim-engine -p cellsim-programs -p cellsim-py --all-targets -- -D warnings
	$(PY) -m ruff format --check -q python tests examples benches $(STUBGEN)
	$(PY) -m ruff check python tests examples benches $(STUBGEN)
	$(PY) -m mypy examples python/cellsim benches $(STUBGEN)
	@# the stub is what the generator writes from the binding's sources, and agrees with the built module
	$(PY) $(STUBGEN) --check
	$(PY) -m mypy.stubtest cellsim._engine --allowlist python/cellsim/_engine.stubtest-allowlist

fuzz:
	CELLSIM_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) CELLSIM_FUZZ_REPORT=fuzz-report.json \
		$(PY) -m pytest -q -o timeout=0 tests/test_fuzz_mfc.py tests/test_fuzz_binding.py tests/test_fuzz_api.py
	PROPTEST_CASES=$(FUZZ_EXAMPLES) cargo test -q --release -p cellsim-engine --test it \
		hostile::random_commands_never_panic

reproduce:
	$(PY) -m pip install -q '.[report]'
	cellsim reproduce

wheel:
	$(PY) -m pip install -q 'maturin>=1.7,<2' 'ziglang>=0.13'
	$(PY) -m maturin build --release --zig --compatibility manylinux2014 --out dist

docs:
	$(PY) -m pip install -q -e '.[docs]'
	$(PY) -m mkdocs build --strict --site-dir site

pgo:
	PY=$(PY) scripts/pgo.sh

bench:
	cellsim bench speed
	cellsim bench speed --traffic uniform --rate 0.01
	cellsim bench switch

fmt:
	cargo fmt --all
	$(PY) -m ruff format python tests examples benches $(STUBGEN)
