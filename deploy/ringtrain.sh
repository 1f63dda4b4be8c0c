#!/usr/bin/env bash
# Set-up for a fresh Debian 12 machine (as root, or with sudo): installs the Debian
# packages ringtrain needs that are missing, builds it, then
#   deploy/ringtrain.sh demo   runs the two-worker localhost demo
#   deploy/ringtrain.sh test   runs the whole test suite
#   deploy/ringtrain.sh build  only builds
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(build-essential cmake pkg-config libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev
          protobuf-compiler nlohmann-json3-dev libgtest-dev libopenblas-dev zlib1g-dev)
missing=()
for p in "${PACKAGES[@]}"; do
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
    exec ctest --test-dir build --output-on-failure -j"$JOBS" --timeout 900 ;;
  build) ;;
  *) echo "usage: $0 [demo|test|build]" >&2; exit 2 ;;
esac
