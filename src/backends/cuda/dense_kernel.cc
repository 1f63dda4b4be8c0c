// Dense on the GPU. Row-major matrices through column-major cuBLAS: a row-major
// [r, c] matrix is its transpose [c, r] to cuBLAS, so
//   y[B, U]  = x[B, I] W[I, U]   is  y^T  = W^T x^T      (N, N; m=U, n=B, k=I)
//   dW[I, U] = x^T d             is  dW^T = d^T x        (N, T; m=U, n=I, k=B)
//   dx[B, I] = d W^T             is  dx^T = W d^T        (T, N; m=I, n=B, k=U)
// FP32 sgemm with CUBLAS_DEFAULT_MATH (no TF32), set on the handle by GpuContext.
#include <string>

#include "backends/cuda/cuda_status.h"
#include "backends/cuda/device_buffer.h"
#include "backends/cuda/gpu_kernels.h"
#include "backends/cuda/op_kernels.h"
#include "backends/kernel.h"

namespace ringtrain::gpu {
namespace {

class GpuDense final : public backends::Kernel {
 public:
  GpuDense(const NodeDesc& d, const GpuContext* gpu, int in) : d_(d), gpu_(gpu), in_(in), units_(d.units) {}

  Status Reserve(int batch) override {
    const int id = gpu_->ordinal();
    const size_t outputs = static_cast<size_t>(batch) * units_;
    RT_RETURN_IF_ERROR(y_.Grow(outputs, d_.name + " output", id));
    RT_RETURN_IF_ERROR(dpre_.Grow(outputs, d_.name + " pre-activation gradient", id));
    RT_RETURN_IF_ERROR(bias_partial_.Grow(BiasGradScratchFloats(batch, units_), d_.name + " bias partial sums", id));
    if (d_.need_input_grad) {
      RT_RETURN_IF_ERROR(dx_.Grow(static_cast<size_t>(batch) * in_, d_.name + " input gradient", id));
    }
    return Status::Ok();
  }

  StatusOr<const float*> Forward(const backends::KernelArgs& a, const std::vector<const float*>& inputs, int batch,
                                 bool training) override {
    const float* x = inputs[0];
    const int id = gpu_->ordinal();
    const float one = 1.0f, zero = 0.0f;
    RT_RETURN_IF_ERROR(CublasCheck(cublasSgemm(gpu_->cublas(), CUBLAS_OP_N, CUBLAS_OP_N, units_, batch, in_, &one,
                                               a.params + d_.kernel_offset, units_, x, in_, &zero, y_.get(), units_),
                                   "cublasSgemm(" + d_.name + " forward)", id));
    RT_RETURN_IF_ERROR(CudaCheck(BiasActivationForward(y_.get(), d_.use_bias ? a.params + d_.bias_offset : nullptr,
                                                       batch, units_, d_.relu, gpu_->compute()),
                                 "BiasActivationForward(" + d_.name + ")", id));
    if (training) {
      x_ = x;
      batch_ = batch;
    }
    return static_cast<const float*>(y_.get());
  }

  Status Backward(const backends::KernelArgs& a, const float* dy, const std::vector<bool>& need,
                  std::vector<const float*>* din) override {
    const bool need_din = need[0];
    const int id = gpu_->ordinal();
    const float one = 1.0f, zero = 0.0f;
    RT_RETURN_IF_ERROR(CudaCheck(ActivationBiasBackward(dy, y_.get(), batch_, units_, d_.relu, dpre_.get(),
                                                        d_.use_bias && d_.bias_trainable ? a.grads + d_.bias_offset
                                                                                         : nullptr,
                                                        bias_partial_.get(), gpu_->compute()),
                                 "ActivationBiasBackward(" + d_.name + ")", id));
    if (d_.kernel_trainable) {  // a frozen kernel gets no gradient
      RT_RETURN_IF_ERROR(CublasCheck(cublasSgemm(gpu_->cublas(), CUBLAS_OP_N, CUBLAS_OP_T, units_, in_, batch_, &one,
                                                 dpre_.get(), units_, x_, in_, &zero, a.grads + d_.kernel_offset,
                                                 units_),
                                     "cublasSgemm(" + d_.name + " kernel gradient)", id));
    }
    if (!need_din) return Status::Ok();
    if (dx_.get() == nullptr) {
      return InternalError(d_.name + ": input gradient asked for, but the layer was built without one");
    }
    RT_RETURN_IF_ERROR(CublasCheck(cublasSgemm(gpu_->cublas(), CUBLAS_OP_T, CUBLAS_OP_N, in_, batch_, units_, &one,
                                               a.params + d_.kernel_offset, units_, dpre_.get(), units_, &zero,
                                               dx_.get(), in_),
                                   "cublasSgemm(" + d_.name + " input gradient)", id));
    (*din)[0] = dx_.get();
    return Status::Ok();
  }

 private:
  const NodeDesc d_;
  const GpuContext* gpu_;
  const int in_, units_;
  DeviceBuffer<float> y_, dpre_, dx_, bias_partial_;
  const float* x_ = nullptr;  // the input of the last training Forward
  int batch_ = 0;
};

}  // namespace

StatusOr<std::unique_ptr<backends::Kernel>> NewDenseKernel(const NodeDesc& desc, const GpuContext* gpu) {
  if (desc.input_shape.size() != 1 || desc.input_shape[0] < 1 || desc.units < 1) {
    return InvalidArgumentError("dense layer '" + desc.name + "' needs a flat input and positive units");
  }
  return std::unique_ptr<backends::Kernel>(new GpuDense(desc, gpu, desc.input_shape[0]));
}

}  // namespace ringtrain::gpu
