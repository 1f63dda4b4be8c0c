// Runtime() for a build with the CUDA toolkit: asks the CUDA runtime once which GPUs
// this process can use, and which library versions were loaded. Without a driver or
// a GPU every call here fails cleanly; nothing creates a CUDA context.
#include <cstdlib>
#include <string>

#include <cuda_runtime_api.h>
#if defined(RINGTRAIN_DEVICE_WITH_CUDNN)
#include <cublas_api.h>
#include <cudnn.h>
#endif
#if defined(RINGTRAIN_DEVICE_WITH_NCCL)
#include <nccl.h>
#endif

#include "device/device.h"

namespace ringtrain::device {
namespace {

std::string Dotted(int major, int minor, int patch) {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

std::string VisibleDevicesNote() {
  const char* v = std::getenv("CUDA_VISIBLE_DEVICES");
  return v == nullptr ? std::string() : std::string(" (CUDA_VISIBLE_DEVICES=\"") + v + "\")";
}

void ReadLibraryVersions(RuntimeInfo& info) {
  int runtime = 0;
  if (cudaRuntimeGetVersion(&runtime) == cudaSuccess && runtime > 0) info.cuda_runtime = CudaVersionText(runtime);
#if defined(RINGTRAIN_DEVICE_WITH_CUDNN)
  {
    int major = 0, minor = 0, patch = 0;
    if (cudnnGetProperty(MAJOR_VERSION, &major) == CUDNN_STATUS_SUCCESS &&
        cudnnGetProperty(MINOR_VERSION, &minor) == CUDNN_STATUS_SUCCESS &&
        cudnnGetProperty(PATCH_LEVEL, &patch) == CUDNN_STATUS_SUCCESS) {
      info.cudnn_runtime = Dotted(major, minor, patch);
    }
  }
#endif
#if defined(RINGTRAIN_DEVICE_WITH_NCCL)
  int nccl = 0;
  if (ncclGetVersion(&nccl) == ncclSuccess && nccl > 0) {
    // X*10000 + Y*100 + Z since NCCL 2.9; X*1000 + Y*100 + Z before.
    info.nccl_runtime = nccl >= 20900 ? Dotted(nccl / 10000, nccl % 10000 / 100, nccl % 100)
                                      : Dotted(nccl / 1000, nccl % 1000 / 100, nccl % 100);
  }
#endif
}

// Fills gpus, or unavailable_reason when there are none.
void ReadGpus(RuntimeInfo& info) {
  int driver = 0;
  if (cudaDriverGetVersion(&driver) != cudaSuccess) driver = 0;
  info.driver_version = driver;
  if (driver == 0) {
    // CUDA would say "CUDA driver version is insufficient for CUDA runtime version",
    // which sends people to upgrade a driver they do not have.
    info.unavailable_reason = "no CUDA driver is installed";
    return;
  }
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e == cudaErrorNoDevice || (e == cudaSuccess && count <= 0)) {
    info.unavailable_reason = "no CUDA GPU is visible" + VisibleDevicesNote();
    return;
  }
  if (e == cudaErrorInsufficientDriver) {
    int runtime = 0;
    cudaRuntimeGetVersion(&runtime);
    info.unavailable_reason = "the CUDA driver (" + CudaVersionText(driver) +
                              ") is older than the CUDA runtime this ringtrain uses (" + CudaVersionText(runtime) +
                              "); update the driver";
    return;
  }
  if (e != cudaSuccess) {
    info.unavailable_reason = std::string("CUDA cannot list the GPUs: ") + cudaGetErrorString(e) + " (" +
                              cudaGetErrorName(e) + ")";
    return;
  }
  std::string first_error;
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaError_t pe = cudaGetDeviceProperties(&prop, i); pe != cudaSuccess) {
      if (first_error.empty()) first_error = "GPU " + std::to_string(i) + ": " + cudaGetErrorString(pe);
      continue;
    }
    Gpu gpu;
    gpu.ordinal = i;
    gpu.name = prop.name;
    gpu.memory_gib = static_cast<double>(prop.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0);
    gpu.compute_major = prop.major;
    gpu.compute_minor = prop.minor;
    char bus_id[32] = {};
    if (cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), i) == cudaSuccess) {
      gpu.pci_bus_id = bus_id;
    } else {
      gpu.pci_bus_id = "unknown";
    }
    info.gpus.push_back(std::move(gpu));
  }
  if (info.gpus.empty()) {
    info.unavailable_reason = "CUDA lists " + std::to_string(count) + " GPU(s) but cannot read them (" +
                              first_error + ")";
  }
}

RuntimeInfo Query() {
  RuntimeInfo info;
  ReadLibraryVersions(info);
  ReadGpus(info);
  // A failed call leaves a sticky last error; clear it so that it does not surface
  // in an unrelated CUDA call later.
  cudaGetLastError();
  return info;
}

}  // namespace

const RuntimeInfo& Runtime() {
  static const RuntimeInfo info = Query();
  return info;
}

std::string CublasRuntimeVersion() {
#if defined(RINGTRAIN_DEVICE_WITH_CUDNN)
  // cublasGetVersion needs a handle, and a handle needs a GPU; the properties do not.
  int major = 0, minor = 0, patch = 0;
  if (cublasGetProperty(MAJOR_VERSION, &major) == CUBLAS_STATUS_SUCCESS &&
      cublasGetProperty(MINOR_VERSION, &minor) == CUBLAS_STATUS_SUCCESS &&
      cublasGetProperty(PATCH_LEVEL, &patch) == CUBLAS_STATUS_SUCCESS) {
    return Dotted(major, minor, patch);
  }
#endif
  return "";
}

}  // namespace ringtrain::device
