// Device buffers through the CUDA runtime (built when the NCCL backend is).
#include <cuda_runtime_api.h>

#include "bench/op_buffer.h"

namespace ringtrain::bench {
namespace {

Status CudaError(const std::string& what, cudaError_t err) {
  return InternalError(what + ": " + cudaGetErrorString(err));
}

class DeviceBuffer : public OpBuffer {
 public:
  DeviceBuffer(float* device, size_t count) : device_(device), host_(count) {}
  ~DeviceBuffer() override { cudaFree(device_); }  // errors ignored: nothing to do about them here
  float* data() override { return device_; }
  size_t count() const override { return host_.size(); }
  float* host() override { return host_.data(); }
  Status CopyIn(size_t n) override {
    cudaError_t err = cudaMemcpy(device_, host_.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    return err == cudaSuccess ? Status::Ok() : CudaError("copying the benchmark's input to the GPU", err);
  }
  Status CopyOut(size_t n) override {
    cudaError_t err = cudaMemcpy(host_.data(), device_, n * sizeof(float), cudaMemcpyDeviceToHost);
    return err == cudaSuccess ? Status::Ok() : CudaError("copying the benchmark's result from the GPU", err);
  }

 private:
  float* device_;
  std::vector<float> host_;
};

}  // namespace

StatusOr<std::unique_ptr<OpBuffer>> AllocateDeviceBuffer(size_t count) {
  void* p = nullptr;
  cudaError_t err = cudaMalloc(&p, (count > 0 ? count : 1) * sizeof(float));
  if (err != cudaSuccess) {
    return CudaError("allocating " + std::to_string(count * sizeof(float)) + " bytes on the GPU", err);
  }
  return std::unique_ptr<OpBuffer>(new DeviceBuffer(static_cast<float*>(p), count));
}

}  // namespace ringtrain::bench
