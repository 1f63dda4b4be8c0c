#!/bin/bash
# Side-by-side training speed: `ringtrain bench train` against PyTorch DDP (gloo), workload by workload.
#   tests/bench/train_bench.sh            (after building build/bin/ringtrain; Debian's python3-torch)
# For each round, workload (w1, w2) and worker count (1, 2) it runs ringtrain's
#   ringtrain bench train --job deploy/jobs/mnist_<w>.json --workers N
# (the convolutional workloads: resnet20 -> deploy/jobs/resnet20_cifar_shape.json, resnet20_b128 -> resnet20_b128.json,
# vgg16 -> deploy/jobs/vgg16_bench.json, on synthetic data; residual -> mnist_residual.json and mobilenetv2 ->
# mobilenetv2_transfer.json on MNIST; unet -> deploy/jobs/unet_bench.json on data/mnist_seg, which
# python3 deploy/make_segmentation_folder.py writes; e.g. WORKLOADS="resnet20 vgg16" WORKERS=2)
# and tests/peers/pytorch_train_bench.py --workload <w> --procs N, alternating which goes first from
# round to round, takes images_per_sec from each one's `RESULT ...` line (first epoch excluded by both),
# and prints a markdown table of the medians over the rounds and their ratio (ringtrain / PyTorch).
# With RINGTRAIN_BEFORE (another ringtrain executable, e.g. the build before a change) each round runs it too,
# in the same rotation, and the table gains its column and ratio: a change's effect next to the peer, in one run.
# Environment: RINGTRAIN (default build/bin/ringtrain), PYTHON (default /usr/bin/python3), ROUNDS (3),
# WORKLOADS ("w1 w2"), WORKERS ("1 2"), EPOCHS (both sides' epochs; default each one's own), RUN_TIMEOUT (seconds per run, 900), DEVICE (cpu; gpu runs ringtrain
# with --device gpu against the peer's --device cuda, PyTorch eager on the same GPU), RT_BIND (ringtrain's
# --bind_to, default core as launch's) and PT_BIND (the peer's --bind, default none as torchrun's; core pins each
# rank to its own CPUs by the same rule). On the GPU the table also gives each side's peak device memory (the most
# nvidia-smi's memory.used rose above its value before the run, sampled every 100 ms: CUDA context and allocator pools
# included, the same way for both). The figures are wall times:
# run it on a quiet machine; the load averages at the start and the end are printed to show how quiet.
# Exit 0 with the table; 1 if a run failed or printed no images_per_sec; 2 if something is missing.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
ringtrain=${RINGTRAIN:-$root/build/bin/ringtrain}
before=${RINGTRAIN_BEFORE:-}
python=${PYTHON:-/usr/bin/python3}
rounds=${ROUNDS:-3}
workloads=${WORKLOADS:-w1 w2}
workers=${WORKERS:-1 2}
run_timeout=${RUN_TIMEOUT:-900}
device=${DEVICE:-cpu}
epochs=${EPOCHS:-}
rt_bind=${RT_BIND:-core}
pt_bind=${PT_BIND:-none}
case $device in
  cpu) rt_device=(--device cpu) pt_device=(--device cpu) ;;
  gpu) rt_device=(--device gpu) pt_device=(--device cuda) ;;
  *) echo "train_bench: DEVICE must be cpu or gpu, got '$device'" >&2; exit 2 ;;
esac
peer=$root/tests/peers/pytorch_train_bench.py

die() {  # die CODE MESSAGE
  echo "train_bench: $2" >&2
  exit "$1"
}

case $rounds in '' | *[!0-9]* | 0) die 2 "ROUNDS must be a positive integer, got '$rounds'" ;; esac
case $epochs in '') epoch_flag=() ;; *[!0-9]* | 0) die 2 "EPOCHS must be a positive integer, got '$epochs'" ;;
  *) epoch_flag=(--epochs "$epochs") ;; esac
[ -x "$ringtrain" ] || die 2 "no ringtrain executable at $ringtrain; build it (cmake --build build --target ringtrain) or set RINGTRAIN"
[ -z "$before" ] || [ -x "$before" ] || die 2 "RINGTRAIN_BEFORE=$before is not an executable"
# The job file of workload $1.
job_of() {
  case $1 in
    resnet20) echo deploy/jobs/resnet20_cifar_shape.json ;;
    resnet20_b128) echo deploy/jobs/resnet20_b128.json ;;
    vgg16) echo deploy/jobs/vgg16_bench.json ;;
    residual) echo deploy/jobs/mnist_residual.json ;;
    mobilenetv2) echo deploy/jobs/mobilenetv2_transfer.json ;;
    unet) echo deploy/jobs/unet_bench.json ;;
    *) echo "deploy/jobs/mnist_$1.json" ;;
  esac
}
for w in $workloads; do
  [ -f "$root/$(job_of "$w")" ] ||
    die 2 "no job file $(job_of "$w") for workload $w; \`ringtrain bench train\` needs one per workload (issue 5)"
done
# The MNIST jobs read data/mnist in the checkout.
"$root/deploy/get_mnist.sh" >/dev/null || die 2 "the MNIST test set is missing; run deploy/get_mnist.sh"
"$python" -c 'import torch' 2>/dev/null ||
  die 2 "$python cannot import torch; install Debian's python3-torch or set PYTHON to a Python that has it"

out=$(mktemp -d /tmp/train_bench.XXXXXX)
trap 'rm -rf "$out"' EXIT

# The images_per_sec value of the RESULT line in file $1, or nothing.
ips() { awk '/^RESULT / { for (i = 2; i <= NF; ++i) if ($i ~ /^images_per_sec=/) v = substr($i, 16) } END { print v }' "$1"; }

# GPU memory in use now (MiB), or nothing without nvidia-smi.
gpu_used() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits 2>/dev/null | head -n 1; }

# measure NAME KEY COMMAND...: runs the command, echoes its RESULT line and appends images/s to $out/KEY (on the GPU,
# the peak device memory it took to $out/mem_KEY).
measure() {
  local name=$1 key=$2 log="$out/last" sampler="" base=""
  shift 2
  if [ "$device" = gpu ] && base=$(gpu_used) && [ -n "$base" ]; then
    nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 100 > "$out/samples" 2>/dev/null &
    sampler=$!
  fi
  timeout "$run_timeout" "$@" > "$log" 2>&1
  local rc=$? v
  if [ -n "$sampler" ]; then
    kill "$sampler" 2>/dev/null
    wait "$sampler" 2>/dev/null
    awk -v b="$base" '$1 + 0 > m { m = $1 + 0 } END { print m - b }' "$out/samples" >> "$out/mem_$key"
  fi
  v=$(ips "$log")
  if [ $rc -ne 0 ] || [ -z "$v" ]; then
    echo "== $name FAILED (exit $rc$([ -z "$v" ] && echo ', no RESULT line with images_per_sec')): $*" >&2
    tail -n 15 "$log" >&2
    case $name in
      ringtrain*) die 1 "ringtrain's side could not be measured. This driver needs \`ringtrain bench train --job J --workers N\` (issue 5), printing a line 'RESULT ... images_per_sec=<x> step_ms=<y> comm_wait_share=<z>'. Is it built into $ringtrain?" ;;
      *) die 1 "the PyTorch peer failed; see its output above" ;;
    esac
  fi
  grep '^RESULT ' "$log" | tail -n 1 | sed "s/^/   $name: /"
  echo "$v" >> "$out/$key"
}

median() { sort -g "$1" | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "== start: $(uptime)"
echo "== $rounds round(s), device $device, binding: ringtrain $rt_bind, PyTorch $pt_bind; ringtrain: $ringtrain${before:+ (before: $before)}; PyTorch: $("$python" -c 'import torch; print(torch.__version__)')"
cd "$root" || die 2 "cannot cd to $root"
for ((r = 1; r <= rounds; ++r)); do
  for w in $workloads; do
    for n in $workers; do
      echo "-- round $r/$rounds, $w, $n worker(s)"
      rt=(measure "ringtrain $w x$n" "rt_${w}_$n" "$ringtrain" bench train --job "$(job_of "$w")" --workers "$n"
          "${rt_device[@]}" --bind_to "$rt_bind" "${epoch_flag[@]}")
      pt=(measure "pytorch   $w x$n" "pt_${w}_$n" "$python" "$peer" --workload "$w" --procs "$n" "${pt_device[@]}"
          --bind "$pt_bind" "${epoch_flag[@]}")
      if [ -n "$before" ]; then
        bf=(measure "before    $w x$n" "bf_${w}_$n" "$before" bench train --job "$(job_of "$w")" --workers "$n"
            "${rt_device[@]}" --bind_to "$rt_bind" "${epoch_flag[@]}")
        case $((r % 3)) in
          1) "${rt[@]}"; "${bf[@]}"; "${pt[@]}" ;;
          2) "${bf[@]}"; "${pt[@]}"; "${rt[@]}" ;;
          0) "${pt[@]}"; "${rt[@]}"; "${bf[@]}" ;;
        esac
      elif ((r % 2)); then "${rt[@]}"; "${pt[@]}"; else "${pt[@]}"; "${rt[@]}"; fi
    done
  done
done
echo "== end: $(uptime)"
echo
if [ -n "$before" ]; then
  echo "| workload | workers | before img/s | ringtrain img/s | PyTorch img/s | before / PyTorch | ringtrain / PyTorch |"
  echo "|---|---|---|---|---|---|---|"
else
  echo "| workload | workers | ringtrain img/s | PyTorch img/s | ratio |"
  echo "|---|---|---|---|---|"
fi
for w in $workloads; do
  for n in $workers; do
    a=$(median "$out/rt_${w}_$n")
    b=$(median "$out/pt_${w}_$n")
    if [ -n "$before" ]; then
      c=$(median "$out/bf_${w}_$n")
      printf '| %s | %s | %.1f | %.1f | %.1f | %.2f | %.2f |\n' "$w" "$n" "$c" "$a" "$b" \
        "$(awk -v a="$c" -v b="$b" 'BEGIN { print a / b }')" "$(awk -v a="$a" -v b="$b" 'BEGIN { print a / b }')"
    else
      printf '| %s | %s | %.1f | %.1f | %.2f |\n' "$w" "$n" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN { print a / b }')"
    fi
  done
done
if [ "$device" = gpu ] && ls "$out"/mem_* > /dev/null 2>&1; then
  echo
  echo "| workload | workers | ringtrain peak device MiB | PyTorch peak device MiB |"
  echo "|---|---|---|---|"
  for w in $workloads; do
    for n in $workers; do
      printf '| %s | %s | %s | %s |\n' "$w" "$n" "$(sort -g "$out/mem_rt_${w}_$n" 2>/dev/null | tail -n 1)" \
        "$(sort -g "$out/mem_pt_${w}_$n" 2>/dev/null | tail -n 1)"
    done
  done
fi
