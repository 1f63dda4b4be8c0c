// The CUDA kernel of backends/cuda/image_adjust_kernel.h over backends/cuda/image_adjust_launch.h.
#include "backends/cuda/image_adjust_kernel.h"

#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "backends/cuda/cuda_status.h"
#include "backends/cuda/device_buffer.h"
#include "backends/cuda/image_adjust_launch.h"

namespace ringtrain::gpu {
namespace adjust_ops {
namespace {

class ImageAdjustKernel final : public backends::Kernel {
 public:
  ImageAdjustKernel(const ops::Node& node, const GpuContext* gpu)
      : label_(node.Label()),
        name_(node.name),
        gpu_(gpu),
        op_(node.op),
        need_din_(!node.need_input_grad.empty() && node.need_input_grad[0]) {
    g_.h = node.input_shapes[0][0];
    g_.w = node.input_shapes[0][1];
    g_.c = node.input_shapes[0][2];
    g_.contrast = node.op.kind == ops::OpKind::kRandomContrast;
    g_.value_lo = node.op.value_lo;
    g_.value_hi = node.op.value_hi;
  }

  Status Reserve(int batch) override {
    const int id = gpu_->ordinal();
    const size_t n = static_cast<size_t>(batch) * g_.h * g_.w * g_.c;
    const size_t channels = static_cast<size_t>(batch) * g_.c;
    RT_RETURN_IF_ERROR(y_.Grow(n, name_ + " output", id));
    RT_RETURN_IF_ERROR(t_.Grow(n, name_ + " unclipped values", id));
    RT_RETURN_IF_ERROR(factors_.Grow(static_cast<size_t>(batch), name_ + " factors", id));
    if (g_.contrast) RT_RETURN_IF_ERROR(means_.Grow(channels, name_ + " channel means", id));
    if (need_din_) {
      RT_RETURN_IF_ERROR(dx_.Grow(n, name_ + " input gradient", id));
      if (g_.contrast) RT_RETURN_IF_ERROR(sums_.Grow(channels, name_ + " gradient sums", id));
    }
    return Status::Ok();
  }

  StatusOr<const float*> Forward(const backends::KernelArgs& args, const std::vector<const float*>& in, int batch,
                                 bool training) override {
    active_ = false;
    if (!training) return in[0];
    if (args.step == nullptr) {
      return InternalError(label_ + ": a training Forward needs the step context (KernelArgs::step) for its draws");
    }
    rm::StepKey s;
    s.seed = args.step->seed;
    s.step = args.step->step;
    s.replica = args.step->replica;
    cudaStream_t stream = gpu_->compute();
    RT_RETURN_IF_ERROR(
        Check(AdjustFactors(s, op_.key, op_.adjust_lo, op_.adjust_hi, batch, factors_.get(), stream), "AdjustFactors"));
    if (g_.contrast) {
      RT_RETURN_IF_ERROR(Check(AdjustChannelMeans(g_, in[0], batch, means_.get(), stream), "AdjustChannelMeans"));
    }
    RT_RETURN_IF_ERROR(Check(AdjustForward(g_, in[0], factors_.get(), means_.get(), batch, t_.get(), y_.get(), stream),
                             "AdjustForward"));
    active_ = true;
    batch_ = batch;
    return static_cast<const float*>(y_.get());
  }

  Status Backward(const backends::KernelArgs&, const float* dy, const std::vector<bool>& need,
                  std::vector<const float*>* din) override {
    (*din)[0] = nullptr;
    if (!need[0]) return Status::Ok();
    if (!active_) {
      (*din)[0] = dy;
      return Status::Ok();
    }
    if (dx_.get() == nullptr) return InternalError(name_ + ": an input gradient asked for, but none was reserved");
    RT_RETURN_IF_ERROR(Check(
        AdjustBackward(g_, dy, t_.get(), factors_.get(), batch_, sums_.get(), dx_.get(), gpu_->compute()),
        "AdjustBackward"));
    (*din)[0] = dx_.get();
    return Status::Ok();
  }

 private:
  Status Check(cudaError_t e, const char* call) const {
    return CudaCheck(e, std::string(call) + "(" + name_ + ")", gpu_->ordinal());
  }

  const std::string label_, name_;
  const GpuContext* gpu_;
  const ops::Op op_;
  const bool need_din_;
  AdjustGeometry g_;
  bool active_ = false;  // the last Forward was a training one
  int batch_ = 0;
  DeviceBuffer<float> y_, t_, factors_, means_, sums_, dx_;
};

}  // namespace
}  // namespace adjust_ops

StatusOr<std::unique_ptr<backends::Kernel>> NewImageAdjustKernel(const ops::Node& node, const GpuContext* gpu) {
  const ops::OpKind kind = node.op.kind;
  const bool ok = (kind == ops::OpKind::kRandomBrightness || kind == ops::OpKind::kRandomContrast) &&
                  node.inputs.size() == 1 && node.input_shapes.size() == 1 && node.input_shapes[0].size() == 3 &&
                  node.input_shapes[0] == node.output_shape && node.input_shapes[0][0] > 0 &&
                  node.input_shapes[0][1] > 0 && node.input_shapes[0][2] > 0;
  if (!ok) {
    return InvalidArgumentError(node.Label() + ": " + ops::OpKindName(kind) +
                                " needs one non-empty [height, width, channels] input and its shape as output");
  }
  return std::unique_ptr<backends::Kernel>(new adjust_ops::ImageAdjustKernel(node, gpu));
}

}  // namespace ringtrain::gpu
