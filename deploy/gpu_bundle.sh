#!/usr/bin/env bash
# Packs a built ringtrain for a GPU machine that has CUDA, cuDNN and NCCL (e.g. inside
# its PyTorch) but not gRPC, Protobuf or OpenBLAS.
#   deploy/gpu_bundle.sh [BUILD_DIR] [OUT_DIR]     (defaults: build, build/gpu-bundle)
# OUT_DIR receives:
#   bin/   ringtrain and the GPU test binaries (op_parity_test, gpu_parity_test, device_math_test, engine_test, nccl_test)
#   lib/   every shared library they load (ldd) except the C library's own and the CUDA
#          ones: cudart, cuBLAS, cuDNN and NCCL are hundreds of MB and the GPU machine has them
#   env.sh sourced on the GPU machine: puts lib/ and the machine's CUDA libraries (its
#          CUDA install, or the nvidia-* wheels PyTorch ships) on LD_LIBRARY_PATH
# and OUT_DIR.tar.gz holds the same (about 25 MB: small enough to carry to a machine whose
# transfers are limited). On the GPU machine:  source OUT_DIR/env.sh && ringtrain info
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-$build/gpu-bundle}
[ -x "$build/bin/ringtrain" ] || { echo "gpu_bundle: no $build/bin/ringtrain; build first" >&2; exit 2; }
"$build/bin/ringtrain" --version | grep -q "GPU engine: yes" ||
  { echo "gpu_bundle: $build was built without the GPU engine (see cmake/cuda.cmake)" >&2; exit 2; }

rm -rf "$out" && mkdir -p "$out/bin" "$out/lib"
bins=(ringtrain)
for t in op_parity_test gpu_parity_test device_math_test engine_test nccl_test; do [ -x "$build/bin/$t" ] && bins+=("$t"); done
for b in "${bins[@]}"; do cp "$build/bin/$b" "$out/bin/"; done
# Not packed: what every Linux has (glibc's libraries, the loader) and the CUDA stack.
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libcuda\.so|libcudart|libcublas|libcudnn|libnccl|libnvrtc|libnvJitLink)'
for b in "${bins[@]}"; do
  ldd "$build/bin/$b" | awk '$3 ~ /^\// { print $1, $3 }'
done | sort -u | while read -r name path; do
  [[ $name =~ $skip ]] || cp -L "$path" "$out/lib/$name"
done
cat > "$out/env.sh" <<'ENV'
# Source me: ringtrain's packed libraries, then the CUDA libraries this machine has.
_rt_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
_rt_cuda=""
for d in /usr/local/cuda/lib64 /usr/local/cuda/lib; do [ -d "$d" ] && _rt_cuda="$_rt_cuda:$d"; done
# PyTorch's CUDA wheels: site-packages/nvidia/<part>/lib (and nvidia/cu13/lib in newer ones).
_rt_nv=$(${PYTHON:-python3} -c 'import nvidia, os; print(" ".join(os.path.abspath(p) for p in nvidia.__path__))' 2>/dev/null || true)
for n in $_rt_nv; do
  for d in $(find "$n" -name 'lib*.so*' -printf '%h\n' 2>/dev/null | sort -u); do _rt_cuda="$_rt_cuda:$d"; done
done
export LD_LIBRARY_PATH="$_rt_here/lib$_rt_cuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$_rt_here/bin:$PATH"
unset _rt_here _rt_cuda _rt_nv
ENV
tar czf "$out.tar.gz" -C "$(dirname "$out")" "$(basename "$out")"
du -sh "$out" "$out.tar.gz" | awk '{ print "gpu_bundle: " $2 " (" $1 ")" }'
echo "gpu_bundle: on the GPU machine: source $out/env.sh && ringtrain info"
