// The CUDA kernel of backends/cuda/zoom_kernel.h.
#include "backends/cuda/zoom_kernel.h"

#include <string>
#include <vector>

#include "backends/cuda/cuda_status.h"
#include "backends/cuda/device_buffer.h"
#include "backends/cuda/random_launch.h"
#include "backends/cuda/zoom_math.h"

namespace ringtrain::gpu {
namespace zoom_ops {
namespace {

class RandomZoomKernel final : public backends::Kernel {
 public:
  RandomZoomKernel(const ops::Node& node, const GpuContext* gpu)
      : label_(node.Label()),
        op_(node.op),
        need_din_(!node.need_input_grad.empty() && node.need_input_grad[0]),
        gpu_(gpu) {
    d_.height = node.input_shapes[0][0];
    d_.width = node.input_shapes[0][1];
    d_.channels = node.input_shapes[0][2];
    sampling_.fill_mode = node.op.fill_mode;
    sampling_.interpolation = node.op.interpolation;
    sampling_.fill_value = node.op.fill_value;
  }

  Status Reserve(int batch) override {
    const size_t n = static_cast<size_t>(batch) * static_cast<size_t>(d_.size());
    RT_RETURN_IF_ERROR(y_.Grow(n, label_ + " output", gpu_->ordinal()));
    if (need_din_) RT_RETURN_IF_ERROR(dx_.Grow(n, label_ + " input gradient", gpu_->ordinal()));
    if (transforms_.size() < static_cast<size_t>(batch) * 8) transforms_.resize(static_cast<size_t>(batch) * 8);
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
    if (transforms_.size() < static_cast<size_t>(batch) * 8) transforms_.resize(static_cast<size_t>(batch) * 8);
    for (int b = 0; b < batch; ++b) {
      zoom::DrawZoom(s, op_.key, b, d_.height, d_.width, op_.height_factor_lo, op_.height_factor_hi,
                     op_.width_factor_lo, op_.width_factor_hi, op_.zoom_same_aspect,
                     transforms_.data() + static_cast<size_t>(b) * 8);
    }
    RT_RETURN_IF_ERROR(CudaCheck(AffineImages(in[0], batch, d_, transforms_.data(), sampling_, y_.get(),
                                              gpu_->compute()),
                                 "AffineImages(" + label_ + ")", gpu_->ordinal()));
    batch_ = batch;
    active_ = true;
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
    if (dx_.get() == nullptr) return InternalError(label_ + ": input gradient asked for, but none was reserved");
    RT_RETURN_IF_ERROR(CudaCheck(AffineImagesAdjoint(dy, batch_, d_, transforms_.data(), sampling_, dx_.get(),
                                                     gpu_->compute()),
                                 "AffineImagesAdjoint(" + label_ + ")", gpu_->ordinal()));
    (*din)[0] = dx_.get();
    return Status::Ok();
  }

 private:
  const std::string label_;
  const ops::Op op_;
  const bool need_din_;
  const GpuContext* gpu_;
  rm::ImageDims d_;
  AffineSampling sampling_;
  DeviceBuffer<float> y_, dx_;
  std::vector<float> transforms_;  // host: 8 floats per example of the last training Forward
  bool active_ = false;
  int batch_ = 0;
};

}  // namespace
}  // namespace zoom_ops

StatusOr<std::unique_ptr<backends::Kernel>> NewRandomZoomKernel(const ops::Node& node, const GpuContext* gpu) {
  const bool ok = node.op.kind == ops::OpKind::kRandomZoom && node.inputs.size() == 1 &&
                  node.input_shapes.size() == 1 && node.input_shapes[0].size() == 3 &&
                  node.input_shapes[0] == node.output_shape && node.input_shapes[0][0] > 0 &&
                  node.input_shapes[0][1] > 0 && node.input_shapes[0][2] > 0;
  if (!ok) {
    return InvalidArgumentError(node.Label() +
                                ": RandomZoom needs one non-empty [height, width, channels] input and its shape as output");
  }
  return std::unique_ptr<backends::Kernel>(new zoom_ops::RandomZoomKernel(node, gpu));
}

}  // namespace ringtrain::gpu
