// The CUDA kernels of backends/cuda/noise_kernel.h over backends/cuda/noise_launch.h.
// The stream key is the CPU's (rm::DropoutStreamKey of the step and the layer).
#include "backends/cuda/noise_kernel.h"

#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "backends/cuda/cuda_status.h"
#include "backends/cuda/device_buffer.h"
#include "backends/cuda/noise_launch.h"
#include "backends/cuda/random_math.h"

namespace ringtrain::gpu {
namespace noise_ops {
namespace {

class NoiseKernel final : public backends::Kernel {
 public:
  NoiseKernel(const ops::Node& node, const GpuContext* gpu)
      : label_(node.Label()),
        name_(node.name),
        gpu_(gpu),
        op_(node.op),
        spatial_(node.op.kind == ops::OpKind::kSpatialDropout2D),
        size_(node.output_size()),
        channels_(node.input_shapes[0].back()),
        need_din_(!node.need_input_grad.empty() && node.need_input_grad[0]) {}

  Status Reserve(int batch) override {
    const size_t n = static_cast<size_t>(batch) * static_cast<size_t>(size_);
    RT_RETURN_IF_ERROR(y_.Grow(n, name_ + " output", gpu_->ordinal()));
    if (spatial_ && need_din_) RT_RETURN_IF_ERROR(dx_.Grow(n, name_ + " input gradient", gpu_->ordinal()));
    return Status::Ok();
  }

  StatusOr<const float*> Forward(const backends::KernelArgs& args, const std::vector<const float*>& in, int batch,
                                 bool training) override {
    active_ = false;
    const bool noisy = spatial_ ? op_.rate > 0.0f : op_.stddev > 0.0f;
    if (!(training && noisy)) return in[0];
    if (args.step == nullptr) {
      return InternalError(label_ + ": a training Forward needs the step context (KernelArgs::step) for its draws");
    }
    const uint64_t key =
        rm::DropoutStreamKey(args.step->seed, args.step->step, args.step->replica, op_.name_hash, op_.layer_seed);
    const int64_t n = static_cast<int64_t>(batch) * size_;
    cudaStream_t s = gpu_->compute();
    if (spatial_) {
      RT_RETURN_IF_ERROR(Check(
          SpatialDropoutApply(in[0], n, size_, channels_, key, op_.rate, op_.dropout_scale, y_.get(), s),
          "SpatialDropoutApply"));
      key_ = key;
      batch_ = batch;
      active_ = true;
    } else {
      RT_RETURN_IF_ERROR(Check(GaussianNoiseForward(in[0], n, key, op_.stddev, y_.get(), s), "GaussianNoiseForward"));
    }
    return static_cast<const float*>(y_.get());
  }

  Status Backward(const backends::KernelArgs&, const float* dy, const std::vector<bool>& need,
                  std::vector<const float*>* din) override {
    (*din)[0] = nullptr;
    if (!need[0]) return Status::Ok();
    if (!spatial_ || !active_) {
      (*din)[0] = dy;  // the identity (GaussianNoise always; SpatialDropout2D when it did not drop)
      return Status::Ok();
    }
    if (dx_.get() == nullptr) return InternalError(name_ + ": an input gradient asked for, but none was reserved");
    const int64_t n = static_cast<int64_t>(batch_) * size_;
    RT_RETURN_IF_ERROR(Check(SpatialDropoutApply(dy, n, size_, channels_, key_, op_.rate, op_.dropout_scale, dx_.get(),
                                                 gpu_->compute()),
                             "SpatialDropoutApply(gradient)"));
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
  const bool spatial_;
  const int64_t size_;  // floats per example
  const int channels_;
  const bool need_din_;
  bool active_ = false;  // SpatialDropout2D: the last Forward dropped (training, rate > 0)
  uint64_t key_ = 0;     // and with this stream
  int batch_ = 0;
  DeviceBuffer<float> y_, dx_;
};

}  // namespace
}  // namespace noise_ops

StatusOr<std::unique_ptr<backends::Kernel>> NewNoiseKernel(const ops::Node& node, const GpuContext* gpu) {
  const ops::OpKind kind = node.op.kind;
  bool ok = (kind == ops::OpKind::kSpatialDropout2D || kind == ops::OpKind::kGaussianNoise) &&
            node.inputs.size() == 1 && node.input_shapes.size() == 1 && node.input_shapes[0] == node.output_shape &&
            !node.output_shape.empty();
  if (ok && kind == ops::OpKind::kSpatialDropout2D) ok = node.output_shape.size() == 3 && node.output_shape[2] > 0;
  if (!ok) {
    return InvalidArgumentError(node.Label() + ": " + ops::OpKindName(kind) +
                                " needs one input (SpatialDropout2D: [height, width, channels]) and its shape as output");
  }
  return std::unique_ptr<backends::Kernel>(new noise_ops::NoiseKernel(node, gpu));
}

}  // namespace ringtrain::gpu
