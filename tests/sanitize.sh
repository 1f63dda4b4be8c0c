#!/usr/bin/env bash
# Builds ringtrain with sanitizers and runs tests there (docs/dev/fuzzing-and-sanitizers.md):
#   tests/sanitize.sh address,undefined [all|unit|inputs] [ctest args]  -> build-asan
#   tests/sanitize.sh thread            [all|unit|inputs] [ctest args]  -> build-tsan
# "all" (the default): every test but the multi-host one, whose fixed network-namespace
# names collide between concurrent runs on one machine; "unit": the libraries' tests
# (every label but integration, multihost and deploy); "inputs": the tests of the
# libraries that read outside input and of the kernels (tests/CMakeLists.txt,
# RINGTRAIN_INPUT_TEST_LABELS: what CI runs). Only what the chosen tests need is built. ASan+UBSan build with clang in
# build-asan, shared with the fuzz targets; TSan with gcc (tests/sanitized_build.sh). CUDA is
# off in both: the CUDA runtime and NCCL are uninstrumented, and there is no GPU here.
# Any report fails the test that triggered it: UBSan and ASan abort, TSan exits 66.
set -euo pipefail
cd "$(dirname "$0")/.."

SAN=${1:?usage: tests/sanitize.sh address,undefined|thread [all|unit|inputs] [ctest args]}
WHAT=${2:-all}
shift $(( $# < 2 ? $# : 2 ))
JOBS=${SANITIZE_JOBS:-$(nproc)}
case "$WHAT" in
  all) targets=() ;;
  unit) targets=(unit_tests) ;;
  inputs) targets=(input_tests) ;;
  *) echo "tests/sanitize.sh: the second argument is all, unit or inputs, not '$WHAT'" >&2; exit 2 ;;
esac
case "$SAN" in
  address,undefined) DIR=${ASAN_BUILD_DIR:-build-asan} ;;
  thread) DIR=build-tsan ;;
  *) echo "tests/sanitize.sh: the sanitizers are address,undefined or thread, not '$SAN'" >&2; exit 2 ;;
esac
tests/sanitized_build.sh "$SAN" "${targets[@]}"

SUPP="$PWD/tests/sanitizers"
symbolizer=$(command -v llvm-symbolizer || command -v llvm-symbolizer-14 || true)
# detect_leaks: LeakSanitizer's report at exit fails the test too (lsan.supp: the
# third-party libraries' one-time allocations).
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1:check_initialization_order=1${symbolizer:+:external_symbolizer_path=$symbolizer}"
export LSAN_OPTIONS="suppressions=$SUPP/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$SUPP/ubsan.supp"
export TSAN_OPTIONS="suppressions=$SUPP/tsan.supp:second_deadlock_stack=1:history_size=4${symbolizer:+:external_symbolizer_path=$symbolizer}"

filter=(-E MultiHost)
case "$WHAT" in
  unit) filter+=(-L "$(cat "$DIR/unit_test_labels")") ;;
  inputs) filter+=(-L "$(cat "$DIR/input_test_labels")") ;;
esac
ctest --test-dir "$DIR" --output-on-failure -j"$JOBS" --timeout 1800 "${filter[@]}" "$@"
