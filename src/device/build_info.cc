// Build(): the versions cmake/cuda.cmake found, compiled in; no CUDA call.
#include <string>

#include "device/build_config.h"
#include "device/device.h"

namespace ringtrain::device {

const BuildInfo& Build() {
  static const BuildInfo info = [] {
    BuildInfo b;
    b.cuda = RINGTRAIN_BUILD_CUDA_VERSION;
    b.cudnn = RINGTRAIN_BUILD_CUDNN_VERSION;
    b.nccl = RINGTRAIN_BUILD_NCCL_VERSION;
    b.gpu_engine = RINGTRAIN_BUILD_GPU_ENGINE != 0;
    return b;
  }();
  return info;
}

std::string BuildSummary() {
  const BuildInfo& b = Build();
  auto part = [](const char* name, const std::string& version) {
    return version.empty() ? std::string(name) + ": absent" : std::string(name) + " " + version;
  };
  return part("CUDA", b.cuda) + ", " + part("cuDNN", b.cudnn) + ", " + part("NCCL", b.nccl);
}

std::string CudaVersionText(int encoded) {
  if (encoded <= 0) return "none";
  return std::to_string(encoded / 1000) + "." + std::to_string(encoded % 1000 / 10);
}

}  // namespace ringtrain::device
