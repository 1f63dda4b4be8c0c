// The CUDA kernel of backends/cuda/normalization_kernel.h over the launches of
// backends/cuda/normalization_launch.h. The mean and variance come from the op (uploaded
// once) or from the layer's weights "mean" and "variance" in the model's parameters
// (read on every Forward: initial_weights may set them); the scales are computed from
// them on each Forward and kept for Backward.
#include "backends/cuda/normalization_kernel.h"

#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "backends/cuda/cuda_status.h"
#include "backends/cuda/device_buffer.h"
#include "backends/cuda/normalization_launch.h"

namespace ringtrain::gpu {
namespace normalization_ops {
namespace {

class NormalizationKernel final : public backends::Kernel {
 public:
  NormalizationKernel(const ops::Node& node, const GpuContext* gpu)
      : node_(node),
        gpu_(gpu),
        size_(node.output_size()),
        from_weights_(node.op.mean_values.empty()),
        need_din_(!node.need_input_grad.empty() && node.need_input_grad[0]) {}

  Status Reserve(int batch) override {
    const int id = gpu_->ordinal();
    const ops::Op& op = node_.op;
    if (scale_.get() == nullptr) {  // the op's values and table, once
      RT_RETURN_IF_ERROR(scale_.Allocate(static_cast<size_t>(op.norm_size), node_.name + " scales", id));
      if (!from_weights_) {
        RT_RETURN_IF_ERROR(Upload(&mean_, op.mean_values, "mean"));
        RT_RETURN_IF_ERROR(Upload(&variance_, op.variance_values, "variance"));
      }
      if (!op.norm_index.empty()) {
        RT_RETURN_IF_ERROR(index_.Allocate(op.norm_index.size(), node_.name + " index", id));
        RT_RETURN_IF_ERROR(Check(cudaMemcpyAsync(index_.get(), op.norm_index.data(), index_.bytes(),
                                                 cudaMemcpyHostToDevice, gpu_->compute()),
                                 "cudaMemcpyAsync(index)"));
      }
    }
    const size_t n = static_cast<size_t>(batch) * static_cast<size_t>(size_);
    RT_RETURN_IF_ERROR(y_.Grow(n, node_.name + " output", id));
    if (need_din_) RT_RETURN_IF_ERROR(dx_.Grow(n, node_.name + " input gradient", id));
    return Status::Ok();
  }

  StatusOr<const float*> Forward(const backends::KernelArgs& args, const std::vector<const float*>& in, int batch,
                                 bool training) override {
    if (scale_.get() == nullptr) return FailedPreconditionError(node_.name + ": Forward before Reserve");
    const ops::Op& op = node_.op;
    const float* mean = from_weights_ ? args.params + node_.params[0].offset : mean_.get();
    const float* variance = from_weights_ ? args.params + node_.params[1].offset : variance_.get();
    cudaStream_t s = gpu_->compute();
    RT_RETURN_IF_ERROR(
        Check(NormalizationScales(variance, op.norm_size, op.epsilon, scale_.get(), s), "NormalizationScales"));
    const int64_t n = static_cast<int64_t>(batch) * size_;
    RT_RETURN_IF_ERROR(Check(NormalizationForward(in[0], mean, scale_.get(), index_.get(), size_, op.norm_size,
                                                  op.invert, n, y_.get(), s),
                             "NormalizationForward"));
    if (training) batch_ = batch;
    return static_cast<const float*>(y_.get());
  }

  Status Backward(const backends::KernelArgs&, const float* dy, const std::vector<bool>& need,
                  std::vector<const float*>* din) override {
    (*din)[0] = nullptr;
    if (!need[0]) return Status::Ok();
    if (batch_ <= 0) return FailedPreconditionError(node_.name + ": Backward without a training Forward");
    if (dx_.get() == nullptr) return InternalError(node_.name + ": an input gradient asked for, but none was reserved");
    const ops::Op& op = node_.op;
    const int64_t n = static_cast<int64_t>(batch_) * size_;
    RT_RETURN_IF_ERROR(Check(NormalizationBackward(dy, scale_.get(), index_.get(), size_, op.norm_size, op.invert, n,
                                                   dx_.get(), gpu_->compute()),
                             "NormalizationBackward"));
    (*din)[0] = dx_.get();
    return Status::Ok();
  }

 private:
  Status Check(cudaError_t e, const char* call) const {
    return CudaCheck(e, std::string(call) + "(" + node_.name + ")", gpu_->ordinal());
  }
  Status Upload(DeviceBuffer<float>* d, const std::vector<float>& host, const char* what) {
    RT_RETURN_IF_ERROR(d->Allocate(host.size(), node_.name + " " + what, gpu_->ordinal()));
    return Check(cudaMemcpyAsync(d->get(), host.data(), d->bytes(), cudaMemcpyHostToDevice, gpu_->compute()),
                 "cudaMemcpyAsync(normalization values)");
  }

  const ops::Node node_;
  const GpuContext* gpu_;
  const int64_t size_;  // floats per example
  const bool from_weights_;
  const bool need_din_;
  int batch_ = 0;
  DeviceBuffer<float> mean_, variance_, scale_, y_, dx_;
  DeviceBuffer<int32_t> index_;
};

}  // namespace
}  // namespace normalization_ops

StatusOr<std::unique_ptr<backends::Kernel>> NewNormalizationKernel(const ops::Node& node, const GpuContext* gpu) {
  const ops::Op& op = node.op;
  bool ok = op.kind == ops::OpKind::kNormalization && node.inputs.size() == 1 && node.input_shapes.size() == 1 &&
            node.input_shapes[0] == node.output_shape && op.norm_size >= 1;
  const int64_t size = node.output_size();
  if (ok && op.mean_values.empty()) {
    ok = node.params.size() >= 2 && node.params[0].count == static_cast<size_t>(op.norm_size) &&
         node.params[1].count == static_cast<size_t>(op.norm_size);
  } else if (ok) {
    ok = op.mean_values.size() == static_cast<size_t>(op.norm_size) &&
         op.variance_values.size() == static_cast<size_t>(op.norm_size);
  }
  if (ok && !op.norm_index.empty()) {
    ok = op.norm_index.size() == static_cast<size_t>(size);
    for (size_t j = 0; ok && j < op.norm_index.size(); ++j) ok = op.norm_index[j] >= 0 && op.norm_index[j] < op.norm_size;
  } else if (ok) {
    ok = size % op.norm_size == 0;
  }
  if (!ok) {
    return InvalidArgumentError(node.Label() + ": the Normalization op's mean, variance and index do not fit its shapes");
  }
  return std::unique_ptr<backends::Kernel>(new normalization_ops::NormalizationKernel(node, gpu));
}

}  // namespace ringtrain::gpu
