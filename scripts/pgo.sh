#!/usr/bin/env bash
# `make pgo`: install the engine compiled with profile-guided optimisation.
#
# The loads that run event by event (Keller and Varbanescu's ring, uniform
# traffic) spend their time in short, branchy handlers; a compiler that knows
# which branches are taken lays the hot paths out straight. Results are the
# same bytes (the compiler changes layout and inlining, never arithmetic), and
# `cellsim._engine.BUILD` reads "pgo" so that benchmarks say what they measured.
#
#   1. an instrumented engine is installed (target/pgo-gen);
#   2. it runs the training loads below, which write raw profiles;
#   3. llvm-profdata merges them, and the engine is installed again, compiled
#      with the profile (target/pgo-use).
#
# `make install` (or `pip install -e .`) goes back to the plain release build.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v rustc >/dev/null || { echo "error: make pgo needs a Rust toolchain (rustc on PATH)" >&2; exit 1; }
trap 'echo "pgo: failed; the installed engine may be the instrumented one: make install restores the release build" >&2' ERR
PY=${PY:-python3}
out=$PWD/target/pgo

host=$(rustc -vV | sed -n 's/^host: //p')
profdata=$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata
if [ ! -x "$profdata" ]; then
  if ! command -v rustup >/dev/null; then
    echo "error: make pgo needs llvm-profdata from rustup's llvm-tools component," \
      "and this Rust toolchain has no rustup (install Rust with rustup, or use make install)" >&2
    exit 1
  fi
  rustup component add llvm-tools
fi

install() { # install ENGINE_BUILD RUSTFLAGS TARGET_DIR
  rm -f python/cellsim/_engine.cpython-*.so
  CELLSIM_BUILD=$1 RUSTFLAGS=$2 CARGO_TARGET_DIR=$3 $PY -m pip install -q -e '.[test,dask]'
}

echo "pgo: 1/3 instrumented build"
install pgo-instrumented "-Cprofile-generate=$out/raw" target/pgo-gen
rm -rf "$out" # the build scripts' own profiles

echo "pgo: 2/3 training"
# Only the loads whose speed has a target: the branches of the arbiter and the
# handlers go other ways at saturation, and training on every experiment (the
# reference path's saturated streams weigh most) took the ring's gain away.
$PY benches/ring_run.py 1000 2                               # the ring, event by event
$PY -m cellsim.tools.cli bench speed --pairs 100 >/dev/null        # saturation: looks and jumps
$PY -m cellsim.tools.cli bench speed --traffic uniform --rate 0.01 >/dev/null
$PY -m cellsim.tools.cli bench speed --traffic uniform --rate 0.03 >/dev/null

echo "pgo: 3/3 optimised build"
"$profdata" merge -o "$out/engine.profdata" "$out/raw"
install pgo "-Cprofile-use=$out/engine.profdata" target/pgo-use
$PY -c "import cellsim._engine as e; print('engine build:', e.BUILD)"
