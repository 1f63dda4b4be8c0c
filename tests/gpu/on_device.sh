#!/usr/bin/env bash
# The GPU checklist in one command, on a GPU machine that has CUDA, cuDNN and NCCL (e.g. in its PyTorch) but
# maybe not gRPC: run from a checkout that holds a bundle made by deploy/gpu_bundle.sh and data/mnist.
#   tests/gpu/on_device.sh check [BUNDLE_TGZ]   versions, the GPU test binaries (the op parity suite over {cpu, cuda},
#                                               whole training steps), CPU-vs-GPU curves (demo, W1-W3), two workers
#                                               sharing the GPU over RING, one worker over NCCL
#   tests/gpu/on_device.sh models [BUNDLE_TGZ]  CPU-vs-GPU loss curves over 3 epochs (within 1%) of ResNet-20,
#                                               mnist_residual, VGG16 transfer and MobileNetV2-style transfer
#   tests/gpu/on_device.sh sources [BUNDLE_TGZ] W2 from TFRecord, npz and PNG folders on the GPU (data/ made by deploy/)
#   tests/gpu/on_device.sh bench [BUNDLE_TGZ]   tests/bench/train_bench.sh with DEVICE=gpu (W1, W2, W3, ResNet-20,
#                                               VGG16 against PyTorch eager, 1 worker), and mnist_residual and the
#                                               MobileNetV2-style transfer job on the GPU
#   tests/gpu/on_device.sh all [BUNDLE_TGZ]     one lease's worth, most needed first, within BUDGET seconds (default
#                                               420; a step that would not fit is skipped and says so): the test
#                                               binaries (at once), the four models' CPU-vs-GPU curves with each GPU
#                                               run done twice for determinism (at once), the speed of ResNet-20
#                                               (batch 128), mnist_residual, MobileNetV2-style transfer and VGG16
#                                               against PyTorch eager (WORKLOADS, ROUNDS=1), then two workers sharing
#                                               the GPU over RING and one over NCCL. The logs go to $OUT/logs.tgz,
#                                               rewritten after every step, so a cut-off run still brings them back.
#   tests/gpu/on_device.sh profile [BUNDLE_TGZ] gpu_parity_test, then each kernel's GPU time over a few training
#                                               steps of ResNet-20 at batch 128 and of VGG16: ringtrain's by Nsight
#                                               Compute (gpu__time_duration, caches and clocks left alone; about
#                                               0.1 s a kernel, so 3 steps), the PyTorch peer's by torch.profiler
#                                               (--profile_steps). $OUT/logs.tgz holds the CSVs
#                                               (tests/gpu/kernel_profile.py --steps 3 sums them up)
# BUNDLE_TGZ defaults to build/gpu-bundle.tar.gz. Logs go to $OUT (default /tmp/gpu-out). Prints a summary last.
set -u
cd "$(dirname "$0")/../.."
stage=${1:-check}
bundle=${2:-build/gpu-bundle.tar.gz}
out=${OUT:-/tmp/gpu-out}
# `all` keeps its many logs out of $OUT (which brings back only a few files) and packs them there instead.
if [ "$stage" = all ] || [ "$stage" = profile ]; then dest=$out; out=/tmp/gpu-logs; rm -rf "$out"; fi
# The test binaries read committed files (deploy/jobs/...) from this checkout, not from where they were built.
export RINGTRAIN_TEST_SOURCE_DIR=$PWD
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
# For `all`: seconds left of BUDGET; a step of at most LIMIT seconds (cut to what is left), its exit code in
# $out/exit.txt (steps may run in the background), the logs packed to $dest after it.
t0=$SECONDS
budget=${BUDGET:-420}
left() { echo $((budget - (SECONDS - t0))); }
pack() { tar czf "$dest/.logs.$BASHPID" -C "$out" . && mv "$dest/.logs.$BASHPID" "$dest/logs.tgz"; }
timed() {
  local name=$1 limit=$2 l
  shift 2
  l=$(left)
  ((l - 10 < limit)) && limit=$((l - 10))
  if ((limit < 20)); then
    echo "$name: skipped (out of time)" >> "$out/exit.txt"
    return
  fi
  echo "=== $name (at most ${limit}s): $*"
  timeout "$limit" "$@" > "$out/$name.log" 2>&1
  local rc=$?
  echo "$name: exit $rc$( ((rc == 124)) && echo ' (timed out)') after $((SECONDS - t0))s" >> "$out/exit.txt"
  grep -h "^RESULT\|^\[  FAILED\|^\[  PASSED\|^|" "$out/$name.log" | head -n 40
  pack
}

case $stage in
  check)
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
    step version "$rt" --version
    step info "$rt" info
    step device_math "$dir/bin/device_math_test" --gtest_brief=1
    step engine "$dir/bin/engine_test" --gtest_brief=1
    step op_parity "$dir/bin/op_parity_test" --gtest_brief=1
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
  models)
    # Shortened curves (3 epochs of a few steps): each model's loss on the GPU within 1% of the CPU's.
    step resnet20_curve python3 tests/bench/gpu_demo_curve.py --ringtrain "$rt" --job deploy/jobs/resnet20_cifar_shape.json \
      --workers 1 --epochs 3 --steps_per_epoch 8
    step residual_curve python3 tests/bench/gpu_demo_curve.py --ringtrain "$rt" --job deploy/jobs/mnist_residual.json \
      --workers 1 --epochs 3 --steps_per_epoch 16
    step vgg16_transfer_curve python3 tests/bench/gpu_demo_curve.py --ringtrain "$rt" --job deploy/jobs/vgg16_transfer.json \
      --workers 1 --epochs 3 --steps_per_epoch 4
    step mobilenetv2_curve python3 tests/bench/gpu_demo_curve.py --ringtrain "$rt" \
      --job deploy/jobs/mobilenetv2_transfer.json --workers 1 --epochs 3 --steps_per_epoch 16
    ;;
  bench)
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    step bench env RINGTRAIN="$rt" PYTHON=python3 DEVICE=gpu WORKERS=1 WORKLOADS="${WORKLOADS:-w1 w2 w3 resnet20 vgg16}" \
      ROUNDS="${ROUNDS:-3}" tests/bench/train_bench.sh
    # The models train_bench.sh has no PyTorch peer for: ringtrain's own figures.
    for j in mnist_residual mobilenetv2_transfer; do
      step "${j}_gpu" "$rt" bench train --job "deploy/jobs/$j.json" --workers 1 --device gpu
    done
    ;;
  all)
    {
      nvidia-smi
      nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
      "$rt" --version
      "$rt" info
      python3 -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda, "cuDNN",
        torch.backends.cudnn.version(), "NCCL", torch.cuda.nccl.version(), torch.cuda.get_device_name(0))'
      echo "libraries not found:"; ldd "$rt" | grep "not found"
    } > "$out/versions.log" 2>&1
    cat "$out/versions.log"
    pack
    # The PNG folders vgg16_transfer.json reads, made while the tests run (the wait below waits for it too).
    python3 deploy/make_mnist_png_folder.py > "$out/png_folder.log" 2>&1 &
    timed device_math 150 "$dir/bin/device_math_test" --gtest_brief=1 &
    timed engine 150 "$dir/bin/engine_test" --gtest_brief=1 &
    timed op_parity 150 "$dir/bin/op_parity_test" --gtest_brief=1 &
    timed parity 150 "$dir/bin/gpu_parity_test" &
    timed nccl 150 "$dir/bin/nccl_test" &
    wait
    # The curves (3 short epochs each, within 1% of the CPU's) and determinism (the GPU run twice: same bytes).
    # ResNet-20 (rate 0.1, random labels) is chaotic: held to its CPU's own spread (portable against AVX-512 kernels).
    curve() { timed "$1" 240 python3 tests/bench/gpu_demo_curve.py --ringtrain "$rt" --job "deploy/jobs/$2.json" \
      --workers 1 --epochs 3 --steps_per_epoch "$3" --gpu_twice "${@:4}"; }
    curve resnet20_curve resnet20_cifar_shape 8 --cpu_spread &
    curve residual_curve mnist_residual 16 &
    curve mobilenetv2_curve mobilenetv2_transfer 16 &
    curve vgg16_transfer_curve vgg16_transfer 4 &
    wait
    timed bench 300 env RINGTRAIN="$rt" PYTHON=python3 DEVICE=gpu WORKERS=1 ROUNDS="${ROUNDS:-1}" EPOCHS=3 \
      WORKLOADS="${WORKLOADS:-resnet20_b128 residual mobilenetv2 vgg16}" tests/bench/train_bench.sh
    timed demo_ring2 90 python3 tests/bench/gpu_demo_curve.py --ringtrain "$rt" --workers 2
    timed w3_nccl1 90 python3 tests/bench/gpu_demo_curve.py --ringtrain "$rt" --job deploy/jobs/mnist_w3.json \
      --workers 1 --implementation NCCL
    echo "=== summary ($((SECONDS - t0))s)"
    cat "$out/exit.txt"
    cp -r deploy/jobs/logs "$out/task-logs" 2>/dev/null
    pack
    exit 0
    ;;
  profile)
    timed parity 120 "$dir/bin/gpu_parity_test"
    ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
    prof=("$ncu" --clock-control none --cache-control none --target-processes all --metrics gpu__time_duration.sum
          --csv --page raw)
    # The peer first (seconds), then ringtrain under Nsight Compute (minutes).
    timed prof_pt_resnet20_b128 120 python3 tests/peers/pytorch_train_bench.py --workload resnet20_b128 --procs 1 \
      --device cuda --epochs 2 --profile_steps 3
    timed prof_pt_vgg16_bench 120 python3 tests/peers/pytorch_train_bench.py --workload vgg16 --procs 1 \
      --device cuda --epochs 2 --profile_steps 3
    for job in resnet20_b128 vgg16_bench; do
      python3 -c 'import json, sys
j = json.load(open(sys.argv[1])); j.update(device="gpu", epochs=1, steps_per_epoch=3); json.dump(j, open(sys.argv[2], "w"))' \
        "deploy/jobs/$job.json" "deploy/jobs/.profile-$job.json"
      RINGTRAIN_LOG_LEVEL=DEBUG timed "prof_rt_$job" 240 "${prof[@]}" --log-file "$out/prof_rt_$job.csv" "$rt" launch \
        --workers 1 --job "deploy/jobs/.profile-$job.json"
    done
    echo "=== summary ($((SECONDS - t0))s)"
    cat "$out/exit.txt"
    cp -r deploy/jobs/logs "$out/task-logs" 2>/dev/null
    pack
    exit 0
    ;;
  *) echo "usage: $0 check|models|sources|bench|all|profile [BUNDLE_TGZ]" >&2; exit 2 ;;
esac
echo "=== summary"
printf '%s\n' "${summary[@]}"
grep -h "^RESULT\|^\[  FAILED\|^|" "$out"/*.log 2>/dev/null | head -n 80
