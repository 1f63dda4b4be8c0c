// The Activation op's CUDA kernel (backends/cuda/activation_kernel.h). The forward keeps
// its input (the executor keeps it valid until Backward) and its own output, the two
// things the CPU's backward reads; linear passes its input and output gradient through.
#include "backends/cuda/activation_kernel.h"

#include <string>
#include <vector>

#include "backends/cuda/activation_kernels.h"
#include "backends/cuda/cuda_status.h"
#include "backends/cuda/device_buffer.h"

namespace ringtrain::gpu {
namespace {

class GpuActivation final : public backends::Kernel {
 public:
  GpuActivation(const ops::Node& node, const GpuContext* gpu, int64_t size, int units)
      : name_(node.name),
        gpu_(gpu),
        act_(node.op.activation),
        relu_(node.op.relu),
        size_(size),
        units_(units),
        need_input_grad_(!node.need_input_grad.empty() && node.need_input_grad[0]),
        identity_(!node.op.relu.generic && node.op.activation == ops::Activation::kLinear) {}

  Status Reserve(int batch) override {
    if (identity_ || batch <= 0) return Status::Ok();
    const int id = gpu_->ordinal();
    const size_t n = static_cast<size_t>(batch) * static_cast<size_t>(size_);
    RT_RETURN_IF_ERROR(y_.Grow(n, name_ + " output", id));
    if (need_input_grad_) RT_RETURN_IF_ERROR(dx_.Grow(n, name_ + " input gradient", id));
    return Status::Ok();
  }

  StatusOr<const float*> Forward(const backends::KernelArgs&, const std::vector<const float*>& inputs, int batch,
                                 bool training) override {
    const float* x = inputs[0];
    if (training) {
      x_ = x;
      batch_ = batch;
      trained_ = true;
    }
    if (pass_through_ || identity_) return x;
    if (static_cast<size_t>(batch) * static_cast<size_t>(size_) > y_.size()) {
      return InternalError(name_ + ": Forward of " + std::to_string(batch) + " examples, reserved " +
                           std::to_string(y_.size() / static_cast<size_t>(size_)));
    }
    RT_RETURN_IF_ERROR(CudaCheck(ActivationForward(act_, relu_, x, Rows(batch), units_, y_.get(), gpu_->compute()),
                                 "ActivationForward(" + name_ + ")", gpu_->ordinal()));
    return static_cast<const float*>(y_.get());
  }

  Status Backward(const backends::KernelArgs&, const float* dy, const std::vector<bool>& need,
                  std::vector<const float*>* din) override {
    if (need.empty() || !need[0]) return Status::Ok();
    if (pass_through_ || identity_) {
      (*din)[0] = dy;
      return Status::Ok();
    }
    if (!trained_) return FailedPreconditionError(name_ + ": Backward without a preceding training Forward");
    if (dx_.get() == nullptr) {
      return InternalError(name_ + ": input gradient asked for, but the layer was built without one");
    }
    RT_RETURN_IF_ERROR(CudaCheck(
        ActivationBackward(act_, relu_, dy, x_, y_.get(), Rows(batch_), units_, dx_.get(), gpu_->compute()),
        "ActivationBackward(" + name_ + ")", gpu_->ordinal()));
    (*din)[0] = dx_.get();
    return Status::Ok();
  }

  // A relu absorbed by the node before it (executor fusion kReluIntoProducer): the
  // input is the output, the output gradient the input's, as the CPU layer's PassThrough.
  void PassThrough() override { pass_through_ = true; }

 private:
  int64_t Rows(int batch) const { return static_cast<int64_t>(batch) * (size_ / units_); }

  const std::string name_;
  const GpuContext* gpu_;
  const ops::Activation act_;
  const ops::Op::Relu relu_;
  const int64_t size_;  // floats per example
  const int units_;     // the last axis: softmax's row
  const bool need_input_grad_;
  const bool identity_;  // linear: nothing to compute either way
  bool pass_through_ = false;
  DeviceBuffer<float> y_, dx_;
  const float* x_ = nullptr;  // the input of the last training Forward
  int batch_ = 0;
  bool trained_ = false;
};

}  // namespace

StatusOr<std::unique_ptr<backends::Kernel>> NewActivationKernel(const ops::Node& node, const GpuContext* gpu) {
  if (node.op.kind != ops::OpKind::kActivation) {
    return InvalidArgumentError(node.Label() + ": not an Activation op (" + ops::Describe(node.op) + ")");
  }
  if (node.inputs.size() != 1 || node.input_shapes.size() != 1 || node.input_shapes[0].empty()) {
    return InvalidArgumentError(node.Label() + ": an Activation op takes one input with a shape");
  }
  const int64_t size = ops::NumElements(node.input_shapes[0]);
  const int units = node.input_shapes[0].back();
  if (units < 1 || size < 1 || size % units != 0 || node.output_size() != size) {
    return InvalidArgumentError(node.Label() + ": an Activation op's input and output must be one non-empty shape");
  }
  return std::unique_ptr<backends::Kernel>(new GpuActivation(node, gpu, size, units));
}

}  // namespace ringtrain::gpu
