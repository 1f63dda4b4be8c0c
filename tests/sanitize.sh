#!/usr/bin/env bash
# Builds ringtrain with sanitizers in its own directory and runs the test suite there
# (README, "Fuzzing and sanitizers"):
#   tests/sanitize.sh address,undefined [all|unit] [extra ctest args]   -> build-asan
#   tests/sanitize.sh thread            [all|unit] [extra ctest args]   -> build-tsan
# "unit" runs the library tests only (ctest -LE integration|multihost|deploy); "all"
# (the default) every test but the multi-host one, whose fixed network-namespace names
# collide between concurrent runs on one machine. CUDA is off in these builds: the
# CUDA runtime and NCCL are uninstrumented, and there is no GPU to run them here.
# Any report fails the test that triggered it: UBSan and ASan abort, TSan exits 66.
set -euo pipefail
cd "$(dirname "$0")/.."

SAN=${1:?usage: tests/sanitize.sh address,undefined|thread [all|unit] [ctest args]}
WHAT=${2:-all}
shift $(( $# < 2 ? $# : 2 ))
case "$SAN" in
  *thread*) DIR=build-tsan ;;
  *) DIR=build-asan ;;
esac
JOBS=${SANITIZE_JOBS:-$(nproc)}
launcher=()
command -v ccache > /dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)

cmake -S . -B "$DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRINGTRAIN_SANITIZE="$SAN" -DRINGTRAIN_CUDA=OFF \
      "${launcher[@]}" > "$DIR.configure.log" 2>&1 || { cat "$DIR.configure.log"; exit 1; }
cmake --build "$DIR" -j"$JOBS"

SUPP="$PWD/tests/sanitizers"
symbolizer=$(command -v llvm-symbolizer || command -v llvm-symbolizer-14 || true)
# detect_leaks: LeakSanitizer's report at exit fails the test too (lsan.supp: the
# third-party libraries' one-time allocations).
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1:check_initialization_order=1${symbolizer:+:external_symbolizer_path=$symbolizer}"
export LSAN_OPTIONS="suppressions=$SUPP/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$SUPP/ubsan.supp"
export TSAN_OPTIONS="suppressions=$SUPP/tsan.supp:second_deadlock_stack=1:history_size=4${symbolizer:+:external_symbolizer_path=$symbolizer}"

filter=(-E MultiHost)
[ "$WHAT" = unit ] && filter+=(-LE "integration|multihost|deploy")
ctest --test-dir "$DIR" --output-on-failure -j"$JOBS" --timeout 1800 "${filter[@]}" "$@"
