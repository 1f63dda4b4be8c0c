#!/bin/sh
# Builds the all-reduce peers of `ringtrain bench allreduce` into build/peers/ (or $1).
# Needs: apt-get install libgloo-dev openmpi-bin libopenmpi-dev
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../../build/peers}
mkdir -p "$out"
g++ -O2 -std=c++17 -o "$out/gloo_allreduce" "$here/gloo_allreduce.cc" -lgloo -pthread
mpicc -O2 -o "$out/mpi_allreduce" "$here/mpi_allreduce.c"
echo "built $out/gloo_allreduce $out/mpi_allreduce"
