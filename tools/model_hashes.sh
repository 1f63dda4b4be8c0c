#!/usr/bin/env bash
# The SHA-256 of the model each shipped job saves, trained shortened with
# `launch --workers 2`: the evidence that a change which is not meant to change the
# arithmetic did not. Run it with the executable from before the change and with the one
# from after, and compare the lines (docs/design/determinism.md).
#
#   tools/model_hashes.sh BINARY [OUT_DIR]     (PROCESSES=1: `--processes 1` as well)
#
# Prints "job epochs x steps sha256-prefix" per job; the saved models and each run's
# output stay in OUT_DIR (default build/model_hashes). The jobs read MNIST from data/mnist
# (a link to ../shared/data/mnist is made where it is missing). Exits 1 if a job fails.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(realpath "${1:?usage: tools/model_hashes.sh BINARY [OUT_DIR]}")
OUT=$(realpath -m "${2:-build/model_hashes}")
mkdir -p "$OUT"
if [ ! -e data/mnist ] && [ -d ../shared/data/mnist ]; then
  mkdir -p data && ln -s "$(realpath ../shared/data/mnist)" data/mnist
fi

# job:epochs:steps (0 steps: the job's whole epoch)
JOBS=(demo:3:0 mnist_w1:1:0 mnist_w2:1:0 mnist_w3:1:0 mnist_residual:1:0 resnet20_cifar_shape:2:8 vgg16_bench:1:1
      mobilenetv2_transfer:1:0)
tmp_jobs=()
cleanup() { rm -f "${tmp_jobs[@]}"; }
trap cleanup EXIT

status=0
for spec in "${JOBS[@]}"; do
  IFS=: read -r job epochs steps <<< "$spec"
  # The shortened copy sits beside the original, so that its relative data paths hold.
  copy="deploy/jobs/.model_hashes_$job.json"
  tmp_jobs+=("$copy")
  python3 - "deploy/jobs/$job.json" "$copy" "$OUT/$job.safetensors" "$epochs" "$steps" <<'PY'
import json, sys
src, dst, out, epochs, steps = sys.argv[1:]
job = json.load(open(src))
job["epochs"] = int(epochs)
if int(steps) > 0:
    job["steps_per_epoch"] = int(steps)
job["save_model"] = out
for key in ("history_file", "backup_and_restore", "model_checkpoint", "tensorboard_dir", "validation_freq"):
    job.pop(key, None)
json.dump(job, open(dst, "w"))
PY
  args=(launch --workers 2)
  [ -n "${PROCESSES:-}" ] && args+=(--processes "$PROCESSES")
  rm -f "$OUT/$job.safetensors"
  if ! "$BIN" "${args[@]}" --job "$copy" > "$OUT/$job.log" 2>&1; then
    echo "$job: failed; its output: $OUT/$job.log" >&2
    status=1
    continue
  fi
  steps_shown=$([ "$steps" -gt 0 ] && echo "$steps" || echo all)
  echo "$job $epochs x $steps_shown $(sha256sum "$OUT/$job.safetensors" | cut -c1-16)"
done
exit $status
