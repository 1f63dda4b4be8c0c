// Max pooling on the GPU: the forward records each output's winning input cell, the
// backward routes the gradient there (backends/cuda/gpu_kernels.h, the CPU's tie rule and order).
#include <string>

#include "backends/cuda/cuda_status.h"
#include "backends/cuda/device_buffer.h"
#include "backends/cuda/gpu_kernels.h"
#include "backends/cuda/op_kernels.h"
#include "backends/kernel.h"

namespace ringtrain::gpu {
namespace {

class GpuMaxPool final : public backends::Kernel {
 public:
  GpuMaxPool(const NodeDesc& d, const GpuContext* gpu) : d_(d), gpu_(gpu) {}

  Status Reserve(int batch) override {
    const int id = gpu_->ordinal();
    const size_t outputs = static_cast<size_t>(batch) * d_.window.out_h * d_.window.out_w * d_.window.c;
    RT_RETURN_IF_ERROR(y_.Grow(outputs, d_.name + " output", id));
    RT_RETURN_IF_ERROR(argmax_.Grow(outputs, d_.name + " argmax", id));
    if (d_.need_input_grad) {
      RT_RETURN_IF_ERROR(dx_.Grow(static_cast<size_t>(batch) * d_.window.in_size(), d_.name + " input gradient", id));
    }
    return Status::Ok();
  }

  StatusOr<const float*> Forward(const backends::KernelArgs&, const std::vector<const float*>& inputs, int batch,
                                 bool training) override {
    const float* x = inputs[0];
    RT_RETURN_IF_ERROR(CudaCheck(MaxPoolForward(d_.window, x, batch, y_.get(), argmax_.get(), gpu_->compute()),
                                 "MaxPoolForward(" + d_.name + ")", gpu_->ordinal()));
    if (training) batch_ = batch;
    return static_cast<const float*>(y_.get());
  }

  Status Backward(const backends::KernelArgs&, const float* dy, const std::vector<bool>& need,
                  std::vector<const float*>* din) override {
    const bool need_din = need[0];
    if (!need_din) return Status::Ok();
    if (dx_.get() == nullptr) {
      return InternalError(d_.name + ": input gradient asked for, but the layer was built without one");
    }
    RT_RETURN_IF_ERROR(CudaCheck(MaxPoolBackward(d_.window, argmax_.get(), dy, batch_, dx_.get(), gpu_->compute()),
                                 "MaxPoolBackward(" + d_.name + ")", gpu_->ordinal()));
    (*din)[0] = dx_.get();
    return Status::Ok();
  }

 private:
  const NodeDesc d_;
  const GpuContext* gpu_;
  DeviceBuffer<float> y_, dx_;
  DeviceBuffer<int32_t> argmax_;
  int batch_ = 0;  // of the last training Forward
};

}  // namespace

StatusOr<std::unique_ptr<backends::Kernel>> NewMaxPoolKernel(const NodeDesc& desc, const GpuContext* gpu) {
  const kernels::Window& g = desc.window;
  if (g.h < 1 || g.w < 1 || g.c < 1 || g.kh < 1 || g.kw < 1 || g.out_h < 1 || g.out_w < 1) {
    return InvalidArgumentError("max_pooling2d layer '" + desc.name + "' has an empty window or input");
  }
  return std::unique_ptr<backends::Kernel>(new GpuMaxPool(desc, gpu));
}

}  // namespace ringtrain::gpu
