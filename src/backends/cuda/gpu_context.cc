#include "backends/cuda/gpu_context.h"

#include <chrono>
#include <cstdio>
#include <thread>
#include <utility>

#include "common/logging.h"
#include "device/cublas_loader.h"
#include "backends/cuda/cuda_status.h"

namespace ringtrain::gpu {

Event::~Event() {
  if (e_ != nullptr) (void)cudaEventDestroy(e_);
}
Event::Event(Event&& other) noexcept : e_(std::exchange(other.e_, nullptr)) {}
Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    if (e_ != nullptr) (void)cudaEventDestroy(e_);
    e_ = std::exchange(other.e_, nullptr);
  }
  return *this;
}
Status Event::Create(int gpu) {
  if (e_ != nullptr) return Status::Ok();
  return CudaCheck(cudaEventCreateWithFlags(&e_, cudaEventDisableTiming), "cudaEventCreateWithFlags", gpu);
}

StatusOr<std::unique_ptr<GpuContext>> GpuContext::Create(int ordinal) {
  int count = 0;
  RT_RETURN_IF_ERROR(CudaCheck(cudaGetDeviceCount(&count), "cudaGetDeviceCount", ordinal));
  if (ordinal < 0 || ordinal >= count) {
    return FailedPreconditionError("GPU " + std::to_string(ordinal) + " does not exist: CUDA sees " +
                                   std::to_string(count) +
                                   " GPU(s); check CUDA_VISIBLE_DEVICES and the worker's local rank");
  }
  std::unique_ptr<GpuContext> ctx(new GpuContext(ordinal));
  RT_RETURN_IF_ERROR(ctx->MakeCurrent());
  cudaDeviceProp props{};
  RT_RETURN_IF_ERROR(CudaCheck(cudaGetDeviceProperties(&props, ordinal), "cudaGetDeviceProperties", ordinal));
  ctx->compute_major_ = props.major;
  RT_RETURN_IF_ERROR(CudaCheck(cudaStreamCreateWithFlags(&ctx->compute_, cudaStreamNonBlocking),
                               "cudaStreamCreateWithFlags(compute)", ordinal));
  RT_RETURN_IF_ERROR(CudaCheck(cudaStreamCreateWithFlags(&ctx->copy_, cudaStreamNonBlocking),
                               "cudaStreamCreateWithFlags(copy)", ordinal));
  RT_RETURN_IF_ERROR(ctx->sync_.Create(ordinal));

  if (!device::CublasLoaded()) return FailedPreconditionError(device::CublasLoadError());
  RT_RETURN_IF_ERROR(CublasCheck(cublasCreate(&ctx->cublas_), "cublasCreate", ordinal));
  RT_RETURN_IF_ERROR(CublasCheck(cublasSetStream(ctx->cublas_, ctx->compute_), "cublasSetStream", ordinal));
  // DEFAULT keeps FP32 GEMMs off TF32; host scalars; no atomics (deterministic).
  RT_RETURN_IF_ERROR(CublasCheck(cublasSetMathMode(ctx->cublas_, CUBLAS_DEFAULT_MATH), "cublasSetMathMode", ordinal));
  RT_RETURN_IF_ERROR(CublasCheck(cublasSetPointerMode(ctx->cublas_, CUBLAS_POINTER_MODE_HOST),
                                 "cublasSetPointerMode", ordinal));
  RT_RETURN_IF_ERROR(CublasCheck(cublasSetAtomicsMode(ctx->cublas_, CUBLAS_ATOMICS_NOT_ALLOWED),
                                 "cublasSetAtomicsMode", ordinal));
  RT_RETURN_IF_ERROR(CudnnCheck(cudnnCreate(&ctx->cudnn_), "cudnnCreate", ordinal));
  RT_RETURN_IF_ERROR(CudnnCheck(cudnnSetStream(ctx->cudnn_, ctx->compute_), "cudnnSetStream", ordinal));

  int cublas_version = 0;
  RT_RETURN_IF_ERROR(CublasCheck(cublasGetVersion(ctx->cublas_, &cublas_version), "cublasGetVersion", ordinal));
  const size_t cudnn_version = cudnnGetVersion();
  char memory[32];
  std::snprintf(memory, sizeof(memory), "%.1f", static_cast<double>(props.totalGlobalMem) / (1ull << 30));
  ctx->describe_ = "GPU " + std::to_string(ordinal) + ": " + props.name + " (compute " +
                   std::to_string(props.major) + "." + std::to_string(props.minor) + ", " + memory +
                   " GiB), cuDNN " + std::to_string(cudnn_version / 10000) + "." +
                   std::to_string(cudnn_version % 10000 / 100) + "." + std::to_string(cudnn_version % 100) +
                   ", cuBLAS " + std::to_string(cublas_version / 10000) + "." +
                   std::to_string(cublas_version % 10000 / 100) + "." + std::to_string(cublas_version % 100);
  return ctx;
}

GpuContext::~GpuContext() {
  Drain(10);
  if (cudnn_ != nullptr) (void)cudnnDestroy(cudnn_);
  if (cublas_ != nullptr) (void)cublasDestroy(cublas_);
  if (copy_ != nullptr) (void)cudaStreamDestroy(copy_);
  if (compute_ != nullptr) (void)cudaStreamDestroy(compute_);
}

void GpuContext::Drain(double seconds) const noexcept {
  if (cudaSetDevice(ordinal_) != cudaSuccess || sync_.get() == nullptr) return;
  // A healthy GPU finishes a step in milliseconds; a hung one must not hang shutdown.
  for (cudaStream_t s : {compute_, copy_}) {
    if (s == nullptr || cudaEventRecord(sync_.get(), s) != cudaSuccess) continue;
    Status st = Wait(sync_.get(), Deadline::AfterSeconds(seconds), "queued GPU work");
    if (!st.ok()) RT_LOG(WARNING) << "GPU " << ordinal_ << " shutdown: " << st.message();
  }
}

std::string GpuContext::Describe() const { return describe_; }

Status GpuContext::MakeCurrent() const { return CudaCheck(cudaSetDevice(ordinal_), "cudaSetDevice", ordinal_); }

Status GpuContext::Wait(cudaEvent_t event, Deadline deadline, const std::string& what) const {
  // Poll rather than cudaEventSynchronize, which cannot time out. Spin briefly first:
  // most waits end within microseconds of the first query.
  for (int polls = 0;; ++polls) {
    const cudaError_t e = cudaEventQuery(event);
    if (e == cudaSuccess) return Status::Ok();
    if (e != cudaErrorNotReady) return CudaError(e, "waiting for " + what, ordinal_);
    if (deadline.expired()) {
      return DeadlineExceededError(what + " on GPU " + std::to_string(ordinal_) + " did not finish in time; the GPU " +
                                   "may be hung or shared with another heavy job: check nvidia-smi");
    }
    if (polls < 1000) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
}

Status GpuContext::SyncCompute(const std::string& what) const {
  RT_RETURN_IF_ERROR(CudaCheck(cudaEventRecord(sync_.get(), compute_), "cudaEventRecord(" + what + ")", ordinal_));
  return Wait(sync_.get(), Deadline::AfterSeconds(kWaitSeconds), what);
}

}  // namespace ringtrain::gpu
