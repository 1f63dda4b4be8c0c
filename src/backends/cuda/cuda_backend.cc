#include "backends/cuda/cuda_backend.h"

#include <cuda_runtime.h>

#include "backends/cuda/cuda_status.h"
#include "backends/cuda/gpu_kernels.h"
#include "backends/cuda/op_kernels.h"

namespace ringtrain::gpu {
namespace {

void FreeDevice(void* ptr) noexcept { (void)cudaFree(ptr); }

class CudaBackend final : public backends::Backend {
 public:
  explicit CudaBackend(const GpuContext* gpu) : gpu_(gpu) {}

  backends::Device device() const override { return backends::Device::kCuda; }
  std::string Describe() const override { return gpu_->Describe(); }
  Status Supports(const ops::Op& op) const override { return backends::CudaSupports(op); }
  // Relu into Dense and Conv2D is the op's own activation; nothing else is fused yet.
  bool CanFuse(backends::Fusion, const ops::Op&) const override { return false; }
  StatusOr<std::unique_ptr<backends::Kernel>> NewKernel(const ops::Node& node) override {
    return NewCudaKernel(node, gpu_);
  }

  StatusOr<backends::Buffer> Allocate(size_t bytes, const std::string& what) override {
    if (bytes == 0) return backends::Buffer();
    void* p = nullptr;
    RT_RETURN_IF_ERROR(CudaCheck(cudaMalloc(&p, bytes), "cudaMalloc(" + what + ")", gpu_->ordinal()));
    return backends::Buffer(p, bytes, &FreeDevice);
  }
  Status Copy(void* dst, const void* src, size_t bytes, Direction direction) override {
    if (bytes == 0) return Status::Ok();
    const cudaMemcpyKind kind = direction == Direction::kHostToDevice   ? cudaMemcpyHostToDevice
                                : direction == Direction::kDeviceToHost ? cudaMemcpyDeviceToHost
                                                                        : cudaMemcpyDeviceToDevice;
    return CudaCheck(cudaMemcpyAsync(dst, src, bytes, kind, gpu_->compute()), "cudaMemcpyAsync", gpu_->ordinal());
  }
  Status Synchronize(const std::string& what) override { return gpu_->SyncCompute(what); }
  Status AddArrays(const float* a, const float* b, const float* relu_mask, size_t n, float* out) override {
    return CudaCheck(gpu::AddArrays(a, b, relu_mask, n, out, gpu_->compute()), "AddArrays", gpu_->ordinal());
  }
  Status Accumulate(float* acc, const float* x, size_t n) override {
    return CudaCheck(AccumulateArray(acc, x, n, gpu_->compute()), "AccumulateArray", gpu_->ordinal());
  }

 private:
  const GpuContext* gpu_;
};

}  // namespace

std::unique_ptr<backends::Backend> NewCudaBackend(const GpuContext* gpu) { return std::make_unique<CudaBackend>(gpu); }

}  // namespace ringtrain::gpu
