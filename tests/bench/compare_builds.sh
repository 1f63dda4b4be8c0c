#!/bin/bash
# Two ringtrain binaries side by side: `bench allreduce` and `bench train`, alternating which goes
# first from round to round, so that a change can show it left the speed as it was.
#   tests/bench/compare_builds.sh OLD_BINARY NEW_BINARY
# Environment: ROUNDS (3), SIZES (bytes reported for the all-reduce, "4 65536 1048576 16777216 67108864"),
# ALLREDUCE ("2 2:tcp 4": worker counts, ":tcp" forcing TCP), TRAIN ("w1:1 w1:2 w2:1 w2:2": workload:workers
# on deploy/jobs/mnist_<w>.json), ITERS (30 timed all-reduce iterations), EPOCHS (3: the first is warm-up).
# Prints the median over the rounds of each figure (all-reduce: time_us and busbw_GBps per size; training:
# images/s) and NEW / OLD. Wall-clock figures: run it on a quiet machine (the load average is printed).
# Exit 0 with the tables; 1 if a run failed; 2 if something is missing.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
old=${1:-}; new=${2:-}
[ -x "$old" ] && [ -x "$new" ] || { echo "usage: $0 OLD_BINARY NEW_BINARY" >&2; exit 2; }
rounds=${ROUNDS:-3}
sizes=${SIZES:-4 65536 1048576 16777216 67108864}
allreduce=${ALLREDUCE:-2 2:tcp 4}
train=${TRAIN:-w1:1 w1:2 w2:1 w2:2}
iters=${ITERS:-30}
epochs=${EPOCHS:-3}
"$root/deploy/get_mnist.sh" >/dev/null || { echo "compare_builds: the MNIST test set is missing (deploy/get_mnist.sh)" >&2; exit 2; }
out=$(mktemp -d /tmp/compare_builds.XXXXXX)
trap 'rm -rf "$out"' EXIT

allreduce_run() {  # allreduce_run WHICH BINARY SPEC
  local which=$1 bin=$2 spec=$3 n=${3%%:*} args=() log="$out/last"
  [[ $spec == *:tcp ]] && args=(--backend tcp)
  timeout 600 "$bin" bench allreduce --workers "$n" "${args[@]}" --iters "$iters" --max_bytes 67108864 --json > "$log" 2>&1 ||
    { echo "== $which bench allreduce $spec failed:" >&2; tail -n 20 "$log" >&2; exit 1; }
  for s in $sizes; do
    awk -v s="$s" 'function field(k) { return match($0, "\"" k "\":[0-9.e+-]+") ? substr($0, RSTART + length(k) + 3, RLENGTH - length(k) - 3) : "" }
                   field("bytes") == s { print field("time_us"), field("busbw_GBps") }' "$log" |
      while read -r t w; do echo "$t" >> "$out/ar_${spec}_${s}_${which}_t"; echo "$w" >> "$out/ar_${spec}_${s}_${which}_w"; done
  done
}
train_run() {  # train_run WHICH BINARY SPEC
  local which=$1 bin=$2 spec=$3 w=${3%%:*} n=${3##*:} log="$out/last"
  (cd "$root" && timeout 900 "$bin" bench train --job "deploy/jobs/mnist_$w.json" --workers "$n" --epochs "$epochs") > "$log" 2>&1 ||
    { echo "== $which bench train $spec failed:" >&2; tail -n 20 "$log" >&2; exit 1; }
  awk '/^RESULT / { for (i = 2; i <= NF; ++i) if ($i ~ /^images_per_sec=/) print substr($i, 16) }' "$log" >> "$out/tr_${spec}_${which}"
}
median() { sort -g "$1" | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "== start: $(uptime)"
echo "== old: $old; new: $new; $rounds round(s)"
for ((r = 1; r <= rounds; ++r)); do
  if ((r % 2)); then first=(old "$old") second=(new "$new"); else first=(new "$new") second=(old "$old"); fi
  for spec in $allreduce; do allreduce_run "${first[@]}" "$spec"; allreduce_run "${second[@]}" "$spec"; done
  for spec in $train; do train_run "${first[@]}" "$spec"; train_run "${second[@]}" "$spec"; done
  echo "-- round $r/$rounds done: $(uptime)"
done
echo "== end: $(uptime)"
echo
echo "| all-reduce | bytes | old time_us | new time_us | old busbw GB/s | new busbw GB/s | new/old busbw |"
echo "|---|---|---|---|---|---|---|"
for spec in $allreduce; do
  for s in $sizes; do
    ot=$(median "$out/ar_${spec}_${s}_old_t"); nt=$(median "$out/ar_${spec}_${s}_new_t")
    ow=$(median "$out/ar_${spec}_${s}_old_w"); nw=$(median "$out/ar_${spec}_${s}_new_w")
    printf '| %s workers | %s | %s | %s | %s | %s | %s |\n' "$spec" "$s" "$ot" "$nt" "$ow" "$nw" \
      "$(awk -v a="$nw" -v b="$ow" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')"
  done
done
echo
echo "| training | workers | old images/s | new images/s | new/old |"
echo "|---|---|---|---|---|"
for spec in $train; do
  o=$(median "$out/tr_${spec}_old"); n=$(median "$out/tr_${spec}_new")
  printf '| %s | %s | %.0f | %.0f | %.2f |\n' "${spec%%:*}" "${spec##*:}" "$o" "$n" "$(awk -v a="$n" -v b="$o" 'BEGIN { print a / b }')"
done
