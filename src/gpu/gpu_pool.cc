// Max pooling on the GPU: the forward records each output's winning input cell, the
// backward routes the gradient there (gpu/gpu_kernels.h, the CPU's tie rule and order).
#include <string>

#include "gpu/cuda_status.h"
#include "gpu/device_buffer.h"
#include "gpu/gpu_kernels.h"
#include "gpu/gpu_layers.h"

namespace ringtrain::gpu {
namespace {

class GpuMaxPool final : public GpuLayer {
 public:
  GpuMaxPool(const nn::LayerDesc& d, const GpuContext* gpu) : d_(d), gpu_(gpu) {}

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

  StatusOr<const float*> Forward(const LayerArgs&, const float* x, int batch, bool training) override {
    RT_RETURN_IF_ERROR(CudaCheck(MaxPoolForward(d_.window, x, batch, y_.get(), argmax_.get(), gpu_->compute()),
                                 "MaxPoolForward(" + d_.name + ")", gpu_->ordinal()));
    if (training) batch_ = batch;
    return static_cast<const float*>(y_.get());
  }

  StatusOr<const float*> Backward(const LayerArgs&, const float* dy, bool need_din) override {
    if (!need_din) return static_cast<const float*>(nullptr);
    if (dx_.get() == nullptr) {
      return InternalError(d_.name + ": input gradient asked for, but the layer was built without one");
    }
    RT_RETURN_IF_ERROR(CudaCheck(MaxPoolBackward(d_.window, argmax_.get(), dy, batch_, dx_.get(), gpu_->compute()),
                                 "MaxPoolBackward(" + d_.name + ")", gpu_->ordinal()));
    return static_cast<const float*>(dx_.get());
  }

 private:
  const nn::LayerDesc d_;
  const GpuContext* gpu_;
  DeviceBuffer<float> y_, dx_;
  DeviceBuffer<int32_t> argmax_;
  int batch_ = 0;  // of the last training Forward
};

}  // namespace

StatusOr<std::unique_ptr<GpuLayer>> NewGpuMaxPool(const nn::LayerDesc& desc, const GpuContext* gpu) {
  const kernels::Window& g = desc.window;
  if (g.h < 1 || g.w < 1 || g.c < 1 || g.kh < 1 || g.kw < 1 || g.out_h < 1 || g.out_w < 1) {
    return InvalidArgumentError("max_pooling2d layer '" + desc.name + "' has an empty window or input");
  }
  return std::unique_ptr<GpuLayer>(new GpuMaxPool(desc, gpu));
}

}  // namespace ringtrain::gpu
