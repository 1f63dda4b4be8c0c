#!/usr/bin/env bash
# The GPU checklist in one command, on a GPU machine that has CUDA, cuDNN and NCCL (e.g. in its PyTorch) but
# maybe not gRPC: run from a checkout that holds a bundle made by deploy/gpu_bundle.sh and data/mnist.
#   tests/gpu/on_device.sh check [BUNDLE_TGZ]   versions, the GPU test binaries, CPU-vs-GPU curves (demo, W1-W3),
#                                               two workers sharing the GPU over RING, one worker over NCCL
#   tests/gpu/on_device.sh sources [BUNDLE_TGZ] W2 from TFRecord, npz and PNG folders on the GPU (data/ made by deploy/)
#   tests/gpu/on_device.sh bench [BUNDLE_TGZ]   tests/bench/train_bench.sh with DEVICE=gpu (W1, W2, W3, 1 worker)
# BUNDLE_TGZ defaults to build/gpu-bundle.tar.gz. Logs go to $OUT (default /tmp/gpu-out). Prints a summary last.
set -u
cd "$(dirname "$0")/../.."
stage=${1:-check}
bundle=${2:-build/gpu-bundle.tar.gz}
out=${OUT:-/tmp/gpu-out}
mkdir -p "$out"
[ -f "$bundle" ] || { echo "on_device: no bundle $bundle (deploy/gpu_bundle.sh makes it)" >&2; exit 2; }
rm -rf /tmp/rt-bundle && mkdir -p /tmp/rt-bundle && tar xzf "$bundle" -C /tmp/rt-bundle
dir=$(ls -d /tmp/rt-bundle/*/ | head -n 1)
# shellcheck disable=SC1091
source "$dir/env.sh"
rt=$dir/bin/ringtrain
summary=()
note() { summary+=("$*"); }
# step NAME COMMAND...: runs it with its output in $out/NAME.log (and its tail on the console), notes the exit code.
step() {
  local name=$1
  shift
  echo "=== $name: $*"
  timeout 900 "$@" > "$out/$name.log" 2>&1
  local rc=$?
  tail -n 25 "$out/$name.log"
  note "$name: exit $rc"
}

case $stage in
  check)
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
    step version "$rt" --version
    step info "$rt" info
    step device_math "$dir/bin/device_math_test" --gtest_brief=1
    step engine "$dir/bin/engine_test" --gtest_brief=1
    step parity "$dir/bin/gpu_parity_test"
    step nccl "$dir/bin/nccl_test"
    step demo_ring2 python3 tests/bench/gpu_demo_curve.py --ringtrain "$rt" --workers 2
    for w in w1 w2 w3; do
      step "${w}_gpu1" python3 tests/bench/gpu_demo_curve.py --ringtrain "$rt" --job "deploy/jobs/mnist_$w.json" --workers 1
    done
    step w3_nccl1 python3 tests/bench/gpu_demo_curve.py --ringtrain "$rt" --job deploy/jobs/mnist_w3.json --workers 1 \
      --implementation NCCL
    ;;
  sources)
    # The data sources on the GPU: W2 read from TFRecord, npz and PNG folders (each made from MNIST by deploy/'s
    # scripts into data/) by two workers sharing the GPU over RING, against the CPU. The TFRecord and npz jobs give
    # W2's examples in W2's order, so their GPU models must be W2's bytes (the PNG folders are read class by class,
    # as Keras does: another order). Then a model the GPU engine refuses.
    for j in mnist_w2 tfrecord npz image_folder; do
      step "src_$j" python3 tests/bench/gpu_demo_curve.py --ringtrain "$rt" --job "deploy/jobs/$j.json" --workers 2 \
        --save_dir "$out/models"
    done
    for j in tfrecord npz; do
      cmp -s "$out/models/mnist_w2-gpu.safetensors" "$out/models/$j-gpu.safetensors"
      note "GPU model of $j.json, same bytes as mnist_w2.json's: $([ $? -eq 0 ] && echo yes || echo NO)"
    done
    step residual_gpu "$rt" bench train --job deploy/jobs/mnist_residual.json --workers 1 --device gpu
    ;;
  bench)
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    step bench env RINGTRAIN="$rt" PYTHON=python3 DEVICE=gpu WORKERS=1 WORKLOADS="${WORKLOADS:-w1 w2 w3}" \
      ROUNDS="${ROUNDS:-3}" tests/bench/train_bench.sh
    # The largest shipped model, which the GPU engine refuses (softmax output): one line, exit 2.
    step vgg16_gpu "$rt" bench train --job deploy/jobs/vgg16_bench.json --workers 1 --device gpu
    ;;
  *) echo "usage: $0 check|sources|bench [BUNDLE_TGZ]" >&2; exit 2 ;;
esac
echo "=== summary"
printf '%s\n' "${summary[@]}"
grep -h "^RESULT\|^\[  FAILED\|^|" "$out"/*.log 2>/dev/null | head -n 80
