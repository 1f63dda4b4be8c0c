#!/usr/bin/env bash
# Set-up for a fresh Debian 12 machine (as root, or with sudo): installs the Debian
# packages ringtrain needs that are missing, builds what the command needs, then
#   deploy/ringtrain.sh demo   builds the ringtrain executable only and runs the two-worker
#                              localhost demo
#   deploy/ringtrain.sh test   builds everything and runs the whole test suite, the fuzz
#                              targets for a bounded time and the input-reading libraries'
#                              tests under ASan+UBSan (what CI runs: docs/dev/testing.md)
#   deploy/ringtrain.sh build  builds everything (the executable and the tests)
# It prints one line per phase; the package manager's and the compiler's output go to
# build/setup.log, whose last lines are printed if a phase fails.
set -euo pipefail
cd "$(dirname "$0")/.."

MODE=${1:-demo}
case "$MODE" in
  demo|test|build) ;;
  *) echo "usage: $0 [demo|test|build]" >&2; exit 2 ;;
esac

PACKAGES=(build-essential cmake pkg-config libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev
          protobuf-compiler nlohmann-json3-dev libgtest-dev libopenblas-dev zlib1g-dev
          libcurl4-openssl-dev libssl-dev libturbojpeg0-dev libpng-dev libstb-dev libcpp-httplib-dev
          libhdf5-dev libzip-dev)
# Faster builds, used when present (cmake/build_speed.cmake): mold links the ~90 test
# executables in a fraction of GNU ld's time. Not needed to build; the image leaves it out.
BUILD_TOOLS=(mold)
# `test` also builds the fuzz targets (clang's libFuzzer) and symbolizes sanitizer
# reports, and its tests use Pillow and NumPy (data generators), Prometheus (promtool and
# a real server) and Chromium (the live page); the image (deploy/docker) needs none of them.
TEST_PACKAGES=(clang-14 libclang-rt-14-dev llvm-14 python3-pil python3-numpy prometheus chromium python3-h5py)
wanted=("${PACKAGES[@]}" "${BUILD_TOOLS[@]}")
[ "$MODE" = test ] && wanted+=("${TEST_PACKAGES[@]}")
# The tfjs fidelity oracle (tests/oracle) needs Node.js >= 18 and npm: Debian's where the
# machine has no npm of its own (one installed otherwise, e.g. from NodeSource, is used as is).
[ "$MODE" = test ] && ! command -v npm >/dev/null 2>&1 && wanted+=(nodejs npm)

mkdir -p build
LOG=build/setup.log
: > "$LOG"
START=$SECONDS
say() { echo "ringtrain.sh $MODE: $*"; }
elapsed() { echo "$(( SECONDS - $1 )) s"; }
# Runs a command with its output in the log; on failure prints the log's end and exits.
logged() {
  if ! "$@" >> "$LOG" 2>&1; then
    echo "ringtrain.sh $MODE: failed: $*" >&2
    echo "---- the last 40 lines of $LOG ----" >&2
    tail -n 40 "$LOG" >&2
    exit 1
  fi
}

# 1. Packages.
t=$SECONDS
missing=()
for p in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "[1/4] packages: installing ${#missing[@]} missing (${missing[*]}); output in $LOG"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  logged $SUDO apt-get update
  logged env DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
  say "[1/4] packages: installed in $(elapsed $t)"
else
  say "[1/4] packages: all present"
fi

# 2. Configure.
t=$SECONDS
say "[2/4] configure: cmake -S . -B build -DCMAKE_BUILD_TYPE=Release"
logged cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
say "[2/4] configure: done in $(elapsed $t)"

# 3. Build, with a progress line at every tenth of the way.
t=$SECONDS
JOBS=$(nproc)
targets=()
[ "$MODE" = demo ] && targets=(--target ringtrain)
say "[3/4] build: ${targets[*]:-everything} with $JOBS jobs; compiler output in $LOG"
cmake --build build -j"$JOBS" "${targets[@]}" >> "$LOG" 2>&1 &
build_pid=$!
shown=0
while kill -0 "$build_pid" 2>/dev/null; do
  sleep 3
  # Make prints "[ 42%] Building ...", Ninja "[123/626] Building ...".
  pct=$(tail -n 200 "$LOG" | grep -aoE '^\[ *[0-9]+%\]|^\[[0-9]+/[0-9]+\]' | tail -n 1 |
        awk -F'[][/% ]+' '{ if (NF >= 4 && $3 != "") print int(100 * $2 / $3); else print $2 + 0 }' || true)
  if [ -n "$pct" ] && [ "$pct" -ge $(( shown + 10 )) ]; then
    shown=$(( pct / 10 * 10 ))
    say "[3/4] build: ${shown}% ($(elapsed $t))"
  fi
done
if ! wait "$build_pid"; then
  echo "ringtrain.sh $MODE: the build failed; the last 40 lines of $LOG:" >&2
  tail -n 40 "$LOG" >&2
  exit 1
fi
say "[3/4] build: done in $(elapsed $t)"

# 4. Run.
case "$MODE" in
  demo)
    mkdir -p build/demo
    say "[4/4] demo: build/bin/ringtrain launch --workers 2 --job deploy/jobs/demo.json ($(elapsed $START) since the start)"
    exec build/bin/ringtrain launch --workers 2 --job deploy/jobs/demo.json ;;
  test)
    say "[4/4] test: the suite, the fuzz targets and the ASan+UBSan stage (docs/dev/testing.md)"
    # a. The TensorFlow.js oracle (@tensorflow/tfjs from npm, pure JavaScript) for the
    #    fidelity tests; without it (no registry) they skip, naming the reason.
    tests/oracle/install.sh || echo "the tfjs fidelity tests will skip (see the line above)" >&2
    # b. The whole suite (the fuzz corpora replay in it as FuzzCorpus.*).
    t=$SECONDS
    ctest --test-dir build --output-on-failure -j"$JOBS" --timeout 900
    say "suite: done in $(elapsed $t)"
    sanitize=${RINGTRAIN_CI_SANITIZE:-inputs}
    fuzz_seconds=${RINGTRAIN_FUZZ_SECONDS:-30}
    # c. Every fuzz target for a bounded time, from the committed corpus, then d. the
    #    tests of the libraries that read outside input, and of the kernels, under
    #    ASan+UBSan: one clang build (build-asan) serves both, and the first of the two
    #    builds it (docs/dev/fuzzing-and-sanitizers.md;
    #    RINGTRAIN_FUZZ_SECONDS=0 and RINGTRAIN_CI_SANITIZE=0 skip them,
    #    RINGTRAIN_CI_SANITIZE=unit or all run more tests there).
    if [ "$fuzz_seconds" != 0 ]; then
      t=$SECONDS
      tests/fuzz/run_fuzzers.sh "$fuzz_seconds"
      say "ASan+UBSan build and fuzzing: done in $(elapsed $t)"
    fi
    if [ "$sanitize" != 0 ]; then
      t=$SECONDS
      tests/sanitize.sh address,undefined "$sanitize"
      say "ASan+UBSan tests: done in $(elapsed $t)"
    fi
    say "all stages done in $(elapsed $START)" ;;
  build)
    say "built in $(elapsed $START): build/bin/ringtrain" ;;
esac
