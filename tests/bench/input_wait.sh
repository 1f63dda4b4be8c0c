#!/bin/bash
# Does the input pipeline keep training fed? Trains the W2 job (deploy/jobs/mnist_w2.json:
# 2 workers on loopback, as the README's demo) twice: on ../shared/data/mnist's examples
# 0..7999 as a PNG class folder (image_folder, grayscale 28x28, rescale 1/255; the pipeline
# decodes the PNGs on its threads, prefetch on) and on the same examples as mnist_idx (in
# memory). Prints, from each run's history file, images/s and input_wait_share (the share
# of step time spent waiting for input), the first epoch excluded as warm-up.
#
# usage: tests/bench/input_wait.sh [BUILD_DIR (build)] [MNIST_DIR] [WORK_DIR (a temp dir)]
# CACHE=1 adds "cache": true to data.pipeline (decoded examples kept after the first epoch).
# The goal: the PNG run's input_wait_share at most 5%, its images/s within 5% of
# the mnist_idx run's. Not a ctest test: it times things.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build}
MNIST=${2:-}
if [ -z "$MNIST" ]; then
  for d in "$ROOT/data/mnist" "$ROOT/../shared/data/mnist"; do
    [ -f "$d/t10k-images-idx3-ubyte.gz" ] && MNIST=$(cd "$d" && pwd) && break
  done
fi
[ -n "$MNIST" ] || { echo "input_wait.sh: no MNIST folder found; pass it as the second argument" >&2; exit 2; }
WORK=${3:-}
if [ -z "$WORK" ]; then WORK=$(mktemp -d "${TMPDIR:-/tmp}/ringtrain_input_wait.XXXXXX"); trap 'rm -rf "$WORK"' EXIT; fi
PY=/usr/bin/python3
RINGTRAIN=$BUILD/bin/ringtrain
[ -x "$RINGTRAIN" ] || { echo "input_wait.sh: $RINGTRAIN not built" >&2; exit 2; }

echo "# PNG class folder of MNIST t10k examples 0..7999 in $WORK/png/train (made once)"
$PY "$ROOT/deploy/make_mnist_png_folder.py" "$WORK/png" "$MNIST"

# The two jobs: the W2 job with absolute data paths, no evaluation and no outputs but the
# history; the same pipeline settings for both.
$PY - "$ROOT/deploy/jobs/mnist_w2.json" "$MNIST" "$WORK" "${CACHE:-0}" <<'PYEOF'
import json, sys
src, mnist, work = sys.argv[1:4]
job = json.load(open(src))
for k in ("save_model", "model_checkpoint", "backup_and_restore", "tensorboard_dir", "validation_freq"):
    job.pop(k, None)
job["data"].pop("eval", None)
job["data"]["pipeline"] = {"num_parallel_calls": "AUTOTUNE", "prefetch": "AUTOTUNE"}
if sys.argv[4] == "1":
    job["data"]["pipeline"]["cache"] = True
t = job["data"]["train"]
t["images"] = mnist + "/t10k-images-idx3-ubyte.gz"
t["labels"] = mnist + "/t10k-labels-idx1-ubyte.gz"
job["history_file"] = work + "/idx.jsonl"
json.dump(job, open(work + "/idx.json", "w"), indent=1)
job["data"]["train"] = {"format": "image_folder", "directory": work + "/png/train", "color_mode": "grayscale",
                        "image_size": [28, 28], "rescale": 1.0 / 255}
job["model"]["input_shape"] = [28, 28, 1]
job["history_file"] = work + "/png.jsonl"
json.dump(job, open(work + "/png.json", "w"), indent=1)
PYEOF

for name in idx png; do
  rm -f "$WORK/$name.jsonl"
  echo "# training $name: $RINGTRAIN launch --workers 2 --job $WORK/$name.json"
  "$RINGTRAIN" launch --workers 2 --job "$WORK/$name.json" > "$WORK/$name.log" 2>&1 ||
    { echo "input_wait.sh: the $name run failed; its output:" >&2; tail -20 "$WORK/$name.log" >&2; exit 1; }
done

$PY - "$WORK" <<'PYEOF'
import json, sys
work = sys.argv[1]
def summary(name):
    epochs = [json.loads(l) for l in open("%s/%s.jsonl" % (work, name)) if l.strip()]
    epochs = [e for e in epochs if "images_per_sec" in e][1:]  # the first epoch is warm-up
    ips = sum(e["images_per_sec"] for e in epochs) / len(epochs)
    waits = [e["input_wait_share"] for e in epochs if "input_wait_share" in e]
    return ips, (sum(waits) / len(waits) if waits else None), len(epochs)
idx, png = summary("idx"), summary("png")
print("%-34s %12s %18s %7s" % ("source", "images/s", "input_wait_share", "epochs"))
for label, (ips, wait, n) in (("mnist_idx (in memory)", idx), ("image_folder (8000 PNGs, 28x28)", png)):
    print("%-34s %12.0f %18s %7d" % (label, ips, "n/a" if wait is None else "%.1f%%" % (100 * wait), n))
print("png / idx images/s: %.3f (goal: >= 0.95); png input_wait_share goal: <= 5%%" % (png[0] / idx[0]))
PYEOF
