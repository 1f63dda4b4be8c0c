#!/usr/bin/env bash
# Set-up for a fresh Debian 12 machine (as root, or with sudo): installs the Debian
# packages ringtrain needs that are missing, builds it, then
#   deploy/ringtrain.sh demo   runs the two-worker localhost demo
#   deploy/ringtrain.sh test   runs the whole test suite, the fuzz targets for a bounded
#                              time and the input-reading libraries' tests under
#                              ASan+UBSan (what CI runs)
#   deploy/ringtrain.sh build  only builds
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(build-essential cmake pkg-config libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev
          protobuf-compiler nlohmann-json3-dev libgtest-dev libopenblas-dev zlib1g-dev
          libcurl4-openssl-dev libssl-dev libturbojpeg0-dev libpng-dev libstb-dev libcpp-httplib-dev)
# `test` also builds the fuzz targets (clang's libFuzzer) and symbolizes sanitizer
# reports; the image (deploy/docker, which builds with PACKAGES only) does not need them.
TEST_PACKAGES=(clang-14 libclang-rt-14-dev llvm-14 python3-pil python3-numpy prometheus chromium)
wanted=("${PACKAGES[@]}")
[ "${1:-demo}" = test ] && wanted+=("${TEST_PACKAGES[@]}")
# The tfjs fidelity oracle (tests/oracle) needs Node.js >= 18 and npm: Debian's where the
# machine has no npm of its own (one installed otherwise, e.g. from NodeSource, is used as is).
[ "${1:-demo}" = test ] && ! command -v npm >/dev/null 2>&1 && wanted+=(nodejs npm)
missing=()
for p in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing missing packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

JOBS=$(nproc)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$JOBS"

case "${1:-demo}" in
  demo)
    mkdir -p build/demo
    exec build/bin/ringtrain launch --workers 2 --job deploy/jobs/demo.json ;;
  test)
    # 0. The TensorFlow.js oracle (@tensorflow/tfjs from npm, pure JavaScript) for the
    #    fidelity tests; without it (no registry) they skip, naming the reason.
    tests/oracle/install.sh || echo "the tfjs fidelity tests will skip (see the line above)" >&2
    # 1. The whole suite (the fuzz corpora replay in it as FuzzCorpus.*).
    ctest --test-dir build --output-on-failure -j"$JOBS" --timeout 900
    # 2. Every fuzz target for a bounded time, from the committed corpus, then 3. the
    #    tests of the libraries that read outside input, and of the kernels, under
    #    ASan+UBSan: one clang build (build-asan) serves both (README, "Fuzzing and
    #    sanitizers"; RINGTRAIN_FUZZ_SECONDS=0 and RINGTRAIN_CI_SANITIZE=0 skip them,
    #    RINGTRAIN_CI_SANITIZE=unit or all run more tests there).
    if [ "${RINGTRAIN_FUZZ_SECONDS:-30}" != 0 ]; then
      tests/fuzz/run_fuzzers.sh "${RINGTRAIN_FUZZ_SECONDS:-30}"
    fi
    if [ "${RINGTRAIN_CI_SANITIZE:-inputs}" != 0 ]; then
      exec tests/sanitize.sh address,undefined "${RINGTRAIN_CI_SANITIZE:-inputs}"
    fi ;;
  build) ;;
  *) echo "usage: $0 [demo|test|build]" >&2; exit 2 ;;
esac
