#!/usr/bin/env bash
# Configures and builds a sanitized build directory (docs/dev/fuzzing-and-sanitizers.md):
#   tests/sanitized_build.sh address,undefined [TARGET...]  -> build-asan
#   tests/sanitized_build.sh thread            [TARGET...]  -> build-tsan
# (no target: everything). build-asan is the one ASan+UBSan build: clang-14 with libFuzzer's
# coverage (cmake -DRINGTRAIN_FUZZ=ON), at -O1 with line tables only; the fuzz targets
# (tests/fuzz/run_fuzzers.sh) and the tests under ASan+UBSan (tests/sanitize.sh) both
# build there, so CI compiles the libraries once for both. -O1 and line tables: gcc at
# -O2 -g took four times as long per file for the same reports; the coverage
# instrumentation only adds counters the tests never read. build-tsan: gcc,
# -DRINGTRAIN_SANITIZE=thread. CUDA is off in both (cmake/sanitizers.cmake says why).
set -euo pipefail
cd "$(dirname "$0")/.."

SAN=${1:?usage: tests/sanitized_build.sh address,undefined|thread [TARGET...]}
shift
case "$SAN" in
  address,undefined)
    DIR=${ASAN_BUILD_DIR:-build-asan}
    config=(-DCMAKE_CXX_COMPILER="${FUZZ_CXX:-clang++-14}"
            -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" -DRINGTRAIN_FUZZ=ON) ;;
  thread)
    DIR=build-tsan
    config=(-DRINGTRAIN_SANITIZE=thread) ;;
  *) echo "tests/sanitized_build.sh: the sanitizers are address,undefined or thread, not '$SAN'" >&2; exit 2 ;;
esac
command -v ccache > /dev/null && config+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRINGTRAIN_CUDA=OFF "${config[@]}" \
      > "$DIR.configure.log" 2>&1 || { cat "$DIR.configure.log"; exit 1; }
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$DIR" -j"${SANITIZE_JOBS:-$(nproc)}" "${targets[@]}"
