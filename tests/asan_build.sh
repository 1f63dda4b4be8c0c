#!/usr/bin/env bash
# Configures and builds build-asan, the one sanitized build: clang-14 with ASan+UBSan and
# libFuzzer's coverage (cmake -DRINGTRAIN_FUZZ=ON), at -O1 with line tables only. The fuzz
# targets (tests/fuzz/run_fuzzers.sh) and the tests under ASan+UBSan (tests/sanitize.sh
# address,undefined) both build here, so CI compiles the libraries once for both.
# Usage: tests/asan_build.sh [TARGET...]   (no target: everything)
# -O1 and line tables: gcc at -O2 -g took four times as long per file for the same
# reports (README, "Fuzzing and sanitizers"); the coverage instrumentation only adds
# counters the tests never read.
set -euo pipefail
cd "$(dirname "$0")/.."

DIR=${ASAN_BUILD_DIR:-build-asan}
CXX=${FUZZ_CXX:-clang++-14}
JOBS=${SANITIZE_JOBS:-$(nproc)}
launcher=()
command -v ccache > /dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$DIR" -DCMAKE_CXX_COMPILER="$CXX" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" -DRINGTRAIN_FUZZ=ON -DRINGTRAIN_CUDA=OFF \
      "${launcher[@]}" > "$DIR.configure.log" 2>&1 || { cat "$DIR.configure.log"; exit 1; }
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$DIR" -j"$JOBS" "${targets[@]}"
