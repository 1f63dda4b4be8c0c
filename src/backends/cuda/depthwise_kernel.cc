// DepthwiseConv2D on the GPU: the direct CUDA kernels of backends/cuda/depthwise_conv.h over
// the model's layouts (NHWC input, the [kh, kw, c, m] kernel as the model stores it,
// output channel c * m + k), then the bias and the output activation as the epilogue of
// backends/cuda/output_activation.h. Backward: the gradient before the activation (with
// the bias gradient), the filter gradient (a frozen kernel gets none) and the input
// gradient, as nn/layers/depthwise_conv2d.cc.
#include <string>

#include "backends/cuda/conv_family.h"
#include "backends/cuda/cuda_status.h"
#include "backends/cuda/depthwise_conv.h"
#include "backends/cuda/device_buffer.h"
#include "backends/cuda/output_activation.h"
#include "backends/kernel.h"

namespace ringtrain::gpu {
namespace {

class GpuDepthwise final : public backends::Kernel {
 public:
  GpuDepthwise(const ops::Node& node, const GpuContext* gpu)
      : name_(node.name),
        g_(node.op.window),
        m_(node.op.depth_multiplier),
        f_(node.op.window.c * node.op.depth_multiplier),
        kernel_(WeightOf(node, 0)),
        bias_(node.op.use_bias ? WeightOf(node, 1) : NodeWeight{}),
        need_input_grad_(!node.need_input_grad.empty() && node.need_input_grad[0]),
        gpu_(gpu),
        epilogue_(node.op.activation, node.name, gpu) {}

  Status Reserve(int batch) override {
    const int id = gpu_->ordinal();
    const int64_t rows = static_cast<int64_t>(batch) * g_.out_h * g_.out_w;
    RT_RETURN_IF_ERROR(
        y_.Grow(static_cast<size_t>(rows) * f_, name_ + (epilogue_.fused() ? " output" : " pre-activation"), id));
    RT_RETURN_IF_ERROR(epilogue_.Reserve(rows, f_));
    if (kernel_.trainable) {
      RT_RETURN_IF_ERROR(
          partial_.Grow(DepthwiseFilterGradScratchFloats(g_, m_, batch), name_ + " filter gradient partial sums", id));
    }
    if (need_input_grad_)
      RT_RETURN_IF_ERROR(dx_.Grow(static_cast<size_t>(batch) * g_.in_size(), name_ + " input gradient", id));
    return Status::Ok();
  }

  StatusOr<const float*> Forward(const backends::KernelArgs& args, const std::vector<const float*>& inputs, int batch,
                                 bool training) override {
    const float* x = inputs[0];
    RT_RETURN_IF_ERROR(
        CudaCheck(DepthwiseConvForward(g_, m_, x, batch, args.params + kernel_.offset, y_.get(), gpu_->compute()),
                  "DepthwiseConvForward(" + name_ + ")", gpu_->ordinal()));
    const int64_t rows = static_cast<int64_t>(batch) * g_.out_h * g_.out_w;
    RT_ASSIGN_OR_RETURN(const float* out,
                        epilogue_.Forward(y_.get(), bias_.present ? args.params + bias_.offset : nullptr, rows, f_));
    if (training) {
      x_ = x;
      batch_ = batch;
    }
    return out;
  }

  Status Backward(const backends::KernelArgs& args, const float* dy, const std::vector<bool>& need,
                  std::vector<const float*>* din) override {
    const bool need_din = need[0];
    const bool bias_grad = bias_.present && bias_.trainable;
    if (!need_din && !kernel_.trainable && !bias_grad) return Status::Ok();  // frozen, and nothing to pass back
    const int id = gpu_->ordinal();
    const int64_t rows = static_cast<int64_t>(batch_) * g_.out_h * g_.out_w;
    RT_ASSIGN_OR_RETURN(const float* d,
                        epilogue_.Backward(dy, y_.get(), rows, f_, bias_grad ? args.grads + bias_.offset : nullptr));
    if (kernel_.trainable) {  // a frozen kernel gets no gradient
      RT_RETURN_IF_ERROR(CudaCheck(
          DepthwiseConvFilterGrad(g_, m_, x_, d, batch_, args.grads + kernel_.offset, partial_.get(), gpu_->compute()),
          "DepthwiseConvFilterGrad(" + name_ + ")", id));
    }
    if (!need_din) return Status::Ok();
    if (!need_input_grad_) {
      return InternalError(name_ + ": input gradient asked for, but the layer was built without one");
    }
    RT_RETURN_IF_ERROR(
        CudaCheck(DepthwiseConvInputGrad(g_, m_, d, args.params + kernel_.offset, batch_, dx_.get(), gpu_->compute()),
                  "DepthwiseConvInputGrad(" + name_ + ")", id));
    (*din)[0] = dx_.get();
    return Status::Ok();
  }

 private:
  const std::string name_;
  const ops::Window g_;
  const int m_;  // depth_multiplier
  const int f_;  // output channels: c * m
  const NodeWeight kernel_, bias_;
  const bool need_input_grad_;
  const GpuContext* gpu_;
  OutputActivation epilogue_;
  // y_: the convolution plus the bias: the output when the activation is fused, else the
  // pre-activation (the epilogue holds the output).
  DeviceBuffer<float> y_, dx_, partial_;
  const float* x_ = nullptr;  // the input of the last training Forward
  int batch_ = 0;
};

}  // namespace

StatusOr<std::unique_ptr<backends::Kernel>> NewDepthwiseConv2DKernel(const ops::Node& node, const GpuContext* gpu) {
  if (node.op.kind != ops::OpKind::kDepthwiseConv2D) {
    return InvalidArgumentError(node.Label() + ": not a DepthwiseConv2D op (" + ops::Describe(node.op) + ")");
  }
  RT_RETURN_IF_ERROR(CheckDepthwiseWindow(node));
  const size_t weights = node.op.use_bias ? 2 : 1;
  if (node.params.size() < weights) {
    return InvalidArgumentError(node.Label() + ": expected " + std::to_string(weights) + " weights, the node has " +
                                std::to_string(node.params.size()));
  }
  return std::unique_ptr<backends::Kernel>(new GpuDepthwise(node, gpu));
}

}  // namespace ringtrain::gpu
