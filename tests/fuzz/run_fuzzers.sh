#!/usr/bin/env bash
# Builds the fuzz targets with clang into build-asan (tests/sanitized_build.sh, shared with
# tests/sanitize.sh address,undefined) and runs each for SECONDS (default 60), starting
# from the committed corpus (tests/fuzz/corpus/<target>). New inputs the fuzzer finds go
# to build-asan/corpus/<target>, not into the repository.
# Fails on the first crash, leak, timeout or out-of-memory, printing the reproducer and
# the command that replays it. Usage: tests/fuzz/run_fuzzers.sh [SECONDS] [TARGET...]
# (FUZZ_JOBS: how many targets run at once; default one per core).
set -euo pipefail
cd "$(dirname "$0")/../.."

SECONDS_EACH=${1:-60}
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -eq 0 ] && TARGETS=(job_config tf_config idx safetensors backup npy image_decode tfrecord)
BUILD=${ASAN_BUILD_DIR:-build-asan}

build_targets=()
for t in "${TARGETS[@]}"; do build_targets+=("fuzz_$t"); done
tests/sanitized_build.sh address,undefined "${build_targets[@]}"

# One target's run; its output in $BUILD/fuzz_<target>.log. Non-zero on a finding.
fuzz_one() {
  local t=$1 corpus="$BUILD/corpus/$1" artifacts="$BUILD/artifacts/$1/"
  mkdir -p "$corpus" "$artifacts"
  local dict=()
  [ -f "tests/fuzz/dict/$t.dict" ] && dict=(-dict="tests/fuzz/dict/$t.dict")
  # -rss_limit_mb: a target that needs more memory than this for one input has a bug
  # (every reader is bounded); -timeout: one input that takes 10 s is a hang.
  "$BUILD/bin/fuzz_$t" "$corpus" "tests/fuzz/corpus/$t" "${dict[@]}" -max_total_time="$SECONDS_EACH" \
    -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 -artifact_prefix="$artifacts" \
    > "$BUILD/fuzz_$t.log" 2>&1
}

report() {
  local t=$1 artifacts="$BUILD/artifacts/$1/"
  tail -60 "$BUILD/fuzz_$t.log"
  for f in "$artifacts"*; do
    [ -f "$f" ] || continue
    echo "reproducer: $f"
    echo "replay it:  $BUILD/bin/fuzz_$t $f"
    echo "bytes (hex, first 256):"
    head -c 256 "$f" | od -A d -t x1 | head -20
  done
}

# The targets run FUZZ_JOBS at a time (default: one per core), each single-threaded for
# SECONDS_EACH, so every target gets the same fuzzing time as when they ran in turn.
JOBS=${FUZZ_JOBS:-$(nproc)}
status=0
for (( i = 0; i < ${#TARGETS[@]}; i += JOBS )); do
  batch=("${TARGETS[@]:i:JOBS}")
  echo "== ${batch[*]/#/fuzz_} for ${SECONDS_EACH}s each, side by side"
  pids=()
  for t in "${batch[@]}"; do
    fuzz_one "$t" &
    pids+=($!)
  done
  for k in "${!batch[@]}"; do
    t=${batch[$k]}
    if wait "${pids[$k]}"; then
      grep -E "^(stat::number_of_executed_units|stat::peak_rss_mb|#[0-9]+ *DONE)" "$BUILD/fuzz_$t.log" |
        sed "s/^/fuzz_$t: /" || true
    else
      echo "== fuzz_$t found something:"
      report "$t"
      status=1
    fi
  done
  [ $status -eq 0 ] || break
done
exit $status
