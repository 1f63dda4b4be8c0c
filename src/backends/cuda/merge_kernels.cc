// The CUDA kernels (backends/kernel.h) of backends/cuda/merge_kernels.h: Subtract, Average,
// Maximum and Minimum, thin classes over the launches of backends/cuda/merge_launch.h
// (and shape_launch.h's left-to-right sum for Average) that own their buffers.
#include "backends/cuda/merge_kernels.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "backends/cuda/cuda_status.h"
#include "backends/cuda/device_buffer.h"
#include "backends/cuda/merge_launch.h"
#include "backends/cuda/shape_launch.h"

namespace ringtrain::gpu {
namespace merge_ops {
namespace {

class ElementwiseMergeKernel final : public backends::Kernel {
 public:
  ElementwiseMergeKernel(const ops::Node& node, const GpuContext* gpu)
      : name_(node.name),
        gpu_(gpu),
        kind_(node.op.kind),
        inputs_(static_cast<int>(node.inputs.size())),
        size_(node.output_size()),
        need_(node.need_input_grad) {
    need_.resize(node.inputs.size(), false);
  }

  Status Reserve(int batch) override {
    const size_t n = static_cast<size_t>(batch) * static_cast<size_t>(size_);
    RT_RETURN_IF_ERROR(y_.Grow(n, name_ + " output", gpu_->ordinal()));
    if (extreme()) RT_RETURN_IF_ERROR(winner_.Grow(n, name_ + " winners", gpu_->ordinal()));
    bool any = false;
    for (bool b : need_) any = any || b;
    if (!any) return Status::Ok();
    if (extreme()) {
      dx_.resize(need_.size());
      for (size_t k = 0; k < need_.size(); ++k) {
        if (need_[k]) RT_RETURN_IF_ERROR(dx_[k].Grow(n, name_ + " input " + std::to_string(k) + " gradient", gpu_->ordinal()));
      }
      return Status::Ok();
    }
    // Subtract: the second input's (negated) gradient; Average: the shared dy / count.
    dx_.resize(1);
    return dx_[0].Grow(n, name_ + " input gradient", gpu_->ordinal());
  }

  StatusOr<const float*> Forward(const backends::KernelArgs&, const std::vector<const float*>& in, int batch,
                                 bool training) override {
    const int64_t n = static_cast<int64_t>(batch) * size_;
    cudaStream_t s = gpu_->compute();
    switch (kind_) {
      case ops::OpKind::kSubtract:
        RT_RETURN_IF_ERROR(Check(SubtractForward(in[0], in[1], n, y_.get(), s), "SubtractForward"));
        break;
      case ops::OpKind::kAverage:
        RT_RETURN_IF_ERROR(Check(ElementwiseChain(in.data(), inputs_, /*multiply=*/false, /*relu=*/false, n, y_.get(), s),
                                 "ElementwiseChain(average)"));
        RT_RETURN_IF_ERROR(Check(DivideByCount(y_.get(), inputs_, n, y_.get(), s), "DivideByCount"));
        break;
      default:  // Maximum, Minimum: the winners are kept for Backward
        RT_RETURN_IF_ERROR(Check(ExtremeForward(in.data(), inputs_, kind_ == ops::OpKind::kMaximum, n, y_.get(),
                                                winner_.get(), s),
                                 "ExtremeForward"));
        break;
    }
    if (training) batch_ = batch;
    return static_cast<const float*>(y_.get());
  }

  Status Backward(const backends::KernelArgs&, const float* dy, const std::vector<bool>& need,
                  std::vector<const float*>* din) override {
    for (size_t k = 0; k < need.size(); ++k) (*din)[k] = nullptr;
    bool any = false;
    for (bool b : need) any = any || b;
    if (!any) return Status::Ok();
    if (batch_ <= 0) return FailedPreconditionError(name_ + ": Backward without a training Forward");
    const int64_t n = static_cast<int64_t>(batch_) * size_;
    cudaStream_t s = gpu_->compute();
    switch (kind_) {
      case ops::OpKind::kSubtract:
        if (need[0]) (*din)[0] = dy;
        if (need[1]) {
          RT_ASSIGN_OR_RETURN(float* dx, Buffer(0));
          RT_RETURN_IF_ERROR(Check(NegateArray(dy, n, dx, s), "NegateArray"));
          (*din)[1] = dx;
        }
        return Status::Ok();
      case ops::OpKind::kAverage: {
        RT_ASSIGN_OR_RETURN(float* dx, Buffer(0));
        RT_RETURN_IF_ERROR(Check(DivideByCount(dy, inputs_, n, dx, s), "DivideByCount(gradient)"));
        for (size_t k = 0; k < need.size(); ++k) (*din)[k] = need[k] ? dx : nullptr;
        return Status::Ok();
      }
      default:
        if (winner_.get() == nullptr) return InternalError(name_ + ": no winners kept for the gradient");
        for (size_t k = 0; k < need.size(); ++k) {
          if (!need[k]) continue;
          RT_ASSIGN_OR_RETURN(float* dx, Buffer(k));
          RT_RETURN_IF_ERROR(
              Check(ExtremeBackward(dy, winner_.get(), static_cast<int32_t>(k), n, dx, s), "ExtremeBackward"));
          (*din)[k] = dx;
        }
        return Status::Ok();
    }
  }

 private:
  bool extreme() const { return kind_ == ops::OpKind::kMaximum || kind_ == ops::OpKind::kMinimum; }
  Status Check(cudaError_t e, const char* call) const {
    return CudaCheck(e, std::string(call) + "(" + name_ + ")", gpu_->ordinal());
  }
  StatusOr<float*> Buffer(size_t k) {
    if (k >= dx_.size() || dx_[k].get() == nullptr) {
      return InternalError(name_ + ": an input gradient asked for, but the kernel was built without one");
    }
    return dx_[k].get();
  }

  const std::string name_;
  const GpuContext* gpu_;
  const ops::OpKind kind_;
  const int inputs_;
  const int64_t size_;  // floats per example
  std::vector<bool> need_;
  int batch_ = 0;  // of the last training Forward
  DeviceBuffer<float> y_;
  DeviceBuffer<int32_t> winner_;  // Maximum, Minimum: per element, the winning input of the last Forward
  std::vector<DeviceBuffer<float>> dx_;
};

}  // namespace
}  // namespace merge_ops

StatusOr<std::unique_ptr<backends::Kernel>> NewElementwiseMergeKernel(const ops::Node& node, const GpuContext* gpu) {
  const ops::OpKind kind = node.op.kind;
  if (kind != ops::OpKind::kSubtract && kind != ops::OpKind::kAverage && kind != ops::OpKind::kMaximum &&
      kind != ops::OpKind::kMinimum) {
    return InvalidArgumentError(node.Label() + ": op " + ops::OpKindName(kind) + " is not an element-wise merge");
  }
  const size_t want = kind == ops::OpKind::kSubtract ? 2 : 0;
  bool ok = node.inputs.size() >= 2 && node.input_shapes.size() == node.inputs.size() &&
            (want == 0 || node.inputs.size() == want);
  for (size_t k = 0; ok && k < node.input_shapes.size(); ++k) ok = node.input_shapes[k] == node.output_shape;
  if (!ok) {
    return InvalidArgumentError(node.Label() + ": " + ops::OpKindName(kind) + " needs " +
                                (want == 2 ? std::string("two inputs") : std::string("two or more inputs")) +
                                " and an output, all of one shape");
  }
  return std::unique_ptr<backends::Kernel>(new merge_ops::ElementwiseMergeKernel(node, gpu));
}

}  // namespace ringtrain::gpu
