#include "backends/cuda/op_kernels.h"

#include "backends/cuda/cuda_status.h"
#include "backends/cuda/device_buffer.h"
#include "backends/cuda/gpu_kernels.h"
#include "backends/cuda/norm_kernels.h"

namespace ringtrain::gpu {
namespace {

// reshape / flatten: the same bytes under another shape.
class ViewKernel final : public backends::Kernel {
 public:
  StatusOr<const float*> Forward(const backends::KernelArgs&, const std::vector<const float*>& in, int,
                                 bool) override {
    return in[0];
  }
  Status Backward(const backends::KernelArgs&, const float* dy, const std::vector<bool>& need,
                  std::vector<const float*>* din) override {
    if (need[0]) (*din)[0] = dy;
    return Status::Ok();
  }
};

// Add of two inputs of one shape: y = a + b; both input gradients are the output's.
class AddKernel final : public backends::Kernel {
 public:
  AddKernel(const NodeDesc& d, const GpuContext* gpu, size_t size) : d_(d), gpu_(gpu), size_(size) {}

  Status Reserve(int batch) override {
    return y_.Grow(static_cast<size_t>(batch) * size_, d_.name + " output", gpu_->ordinal());
  }
  StatusOr<const float*> Forward(const backends::KernelArgs&, const std::vector<const float*>& in, int batch,
                                 bool) override {
    RT_RETURN_IF_ERROR(CudaCheck(AddArrays(in[0], in[1], nullptr, static_cast<size_t>(batch) * size_, y_.get(),
                                           gpu_->compute()),
                                 "AddArrays(" + d_.name + ")", gpu_->ordinal()));
    return static_cast<const float*>(y_.get());
  }
  Status Backward(const backends::KernelArgs&, const float* dy, const std::vector<bool>& need,
                  std::vector<const float*>* din) override {
    for (size_t k = 0; k < need.size(); ++k) (*din)[k] = need[k] ? dy : nullptr;
    return Status::Ok();
  }

 private:
  const NodeDesc d_;
  const GpuContext* gpu_;
  const size_t size_;  // floats per example
  DeviceBuffer<float> y_;
};

}  // namespace

NodeDesc NodeDesc::From(const ops::Node& node) {
  NodeDesc d;
  d.name = node.name;
  d.window = node.op.window;
  d.units = node.op.units;
  d.relu = node.op.activation == ops::Activation::kRelu;
  d.use_bias = node.op.use_bias;
  if (!node.params.empty()) {
    d.kernel_offset = node.params[0].offset;
    d.kernel_trainable = node.params[0].trainable;
  }
  if (node.params.size() > 1) {
    d.bias_offset = node.params[1].offset;
    d.bias_trainable = node.params[1].trainable;
  }
  d.need_input_grad = !node.need_input_grad.empty() && node.need_input_grad[0];
  d.input_shape = node.input_shapes.empty() ? std::vector<int>{} : node.input_shapes[0];
  return d;
}

StatusOr<std::unique_ptr<backends::Kernel>> NewCudaKernel(const ops::Node& node, const GpuContext* gpu) {
  const NodeDesc d = NodeDesc::From(node);
  switch (node.op.kind) {
    case ops::OpKind::kView:
      return std::unique_ptr<backends::Kernel>(new ViewKernel());
    case ops::OpKind::kConv2D:
      return NewConvKernel(d, gpu);
    case ops::OpKind::kDense:
      return NewDenseKernel(d, gpu);
    case ops::OpKind::kMaxPool2D:
      return NewMaxPoolKernel(d, gpu);
    case ops::OpKind::kBatchNorm:
      return NewBatchNormKernel(node, gpu);
    case ops::OpKind::kLayerNorm:
      return NewLayerNormKernel(node, gpu);
    case ops::OpKind::kAdd:
      if (node.inputs.size() == 2) {
        return std::unique_ptr<backends::Kernel>(
            new AddKernel(d, gpu, static_cast<size_t>(node.output_size())));
      }
      break;
    default:
      break;
  }
  return UnimplementedError(node.Label() + ": no CUDA kernel for op " + ops::Describe(node.op));
}

}  // namespace ringtrain::gpu
