// What the CUDA kernels of Dense and the convolutions share: the epilogue that adds the
// bias and applies the op's output activation, and its backward pass (the gradient
// before the activation and the bias gradient), as the CPU layers compute them
// (nn/layers/dense.cc, conv2d.cc): relu and linear fused with the bias
// (gpu_kernels.h BiasActivationForward / ActivationBiasBackward); any other activation
// after it, on the kept pre-activation (activation_kernels.h), its gradient from the
// pre-activation and the output, and the bias gradient the column sums of that gradient.
// Also how a kernel reads its node's weights (offsets and trainable flags), and the
// check of a depthwise window.
//
// Every call only enqueues work on the context's compute stream. Threading: one thread
// at a time, as the kernel that owns it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "backends/cuda/activation_kernels.h"
#include "backends/cuda/cuda_status.h"
#include "backends/cuda/device_buffer.h"
#include "backends/cuda/gpu_context.h"
#include "backends/cuda/gpu_kernels.h"
#include "common/status.h"
#include "ops/graph.h"

namespace ringtrain::gpu {

// One weight of a node in the model's flat buffers.
struct NodeWeight {
  bool present = false;
  size_t offset = 0;       // floats, into the parameters and (when trainable) the gradients
  bool trainable = false;  // false: a frozen weight, which gets no gradient
};

inline NodeWeight WeightOf(const ops::Node& node, size_t k) {
  NodeWeight w;
  if (k < node.params.size()) {
    w.present = true;
    w.offset = node.params[k].offset;
    w.trainable = node.params[k].trainable;
  }
  return w;
}

// A depthwise window (DepthwiseConv2D's, SeparableConv2D's first pass) the kernels can
// run: nothing empty, strides and dilation at least 1.
inline Status CheckDepthwiseWindow(const ops::Node& node) {
  const ops::Window& g = node.op.window;
  if (g.h < 1 || g.w < 1 || g.c < 1 || g.kh < 1 || g.kw < 1 || g.out_h < 1 || g.out_w < 1 ||
      node.op.depth_multiplier < 1) {
    return InvalidArgumentError(node.Label() + " has an empty window, input or depth multiplier");
  }
  if (g.stride_h < 1 || g.stride_w < 1 || g.dilation_h < 1 || g.dilation_w < 1) {
    return InvalidArgumentError(node.Label() + " has a stride or dilation below 1");
  }
  return Status::Ok();
}

class OutputActivation {
 public:
  OutputActivation(ops::Activation act, std::string name, const GpuContext* gpu)
      : act_(act), name_(std::move(name)), gpu_(gpu) {}

  ops::Activation activation() const { return act_; }
  // relu and linear run fused with the bias: the output is the pre-activation buffer.
  bool fused() const { return act_ == ops::Activation::kLinear || act_ == ops::Activation::kRelu; }

  // Buffers for `rows` rows of `units`.
  Status Reserve(int64_t rows, int units) {
    const int id = gpu_->ordinal();
    const size_t n = static_cast<size_t>(rows) * static_cast<size_t>(units);
    if (!fused()) RT_RETURN_IF_ERROR(out_.Grow(n, name_ + " output", id));
    if (act_ != ops::Activation::kLinear) RT_RETURN_IF_ERROR(dpre_.Grow(n, name_ + " pre-activation gradient", id));
    return partial_.Grow(BiasGradScratchFloats(rows, units), name_ + " bias partial sums", id);
  }

  // `pre` [rows, units] holds the op's linear part; adds `bias` (may be null) to it, which
  // makes it the pre-activation, and applies the activation. Returns the output: `pre`
  // itself when fused, else the epilogue's own buffer.
  StatusOr<const float*> Forward(float* pre, const float* bias, int64_t rows, int units) {
    const int id = gpu_->ordinal();
    const bool relu = act_ == ops::Activation::kRelu;
    RT_RETURN_IF_ERROR(CudaCheck(BiasActivationForward(pre, bias, rows, units, relu, gpu_->compute()),
                                 "BiasActivationForward(" + name_ + ")", id));
    if (fused()) return static_cast<const float*>(pre);
    RT_RETURN_IF_ERROR(
        CudaCheck(ActivationForward(act_, ops::Op::Relu{}, pre, rows, units, out_.get(), gpu_->compute()),
                  std::string("ActivationForward(") + name_ + ", " + ops::ActivationName(act_) + ")", id));
    return static_cast<const float*>(out_.get());
  }

  // The gradient before the activation, from the output gradient `dy` and the last
  // Forward's `pre` (its pre-activation buffer, the output when fused): `dy` itself when
  // linear, else the epilogue's own buffer. Overwrites `db` (null: none wanted) with its
  // column sums.
  StatusOr<const float*> Backward(const float* dy, const float* pre, int64_t rows, int units, float* db) {
    const int id = gpu_->ordinal();
    if (fused()) {
      const bool relu = act_ == ops::Activation::kRelu;
      // Linear: dpre null, so nothing is written but the bias gradient.
      RT_RETURN_IF_ERROR(CudaCheck(ActivationBiasBackward(dy, pre, rows, units, relu, relu ? dpre_.get() : nullptr, db,
                                                          partial_.get(), gpu_->compute()),
                                   "ActivationBiasBackward(" + name_ + ")", id));
      return relu ? static_cast<const float*>(dpre_.get()) : dy;
    }
    RT_RETURN_IF_ERROR(CudaCheck(
        ActivationBackward(act_, ops::Op::Relu{}, dy, pre, out_.get(), rows, units, dpre_.get(), gpu_->compute()),
        std::string("ActivationBackward(") + name_ + ", " + ops::ActivationName(act_) + ")", id));
    if (db != nullptr) {
      RT_RETURN_IF_ERROR(CudaCheck(ActivationBiasBackward(dpre_.get(), out_.get(), rows, units, false, nullptr, db,
                                                          partial_.get(), gpu_->compute()),
                                   "ActivationBiasBackward(" + name_ + " bias gradient)", id));
    }
    return static_cast<const float*>(dpre_.get());
  }

 private:
  const ops::Activation act_;
  const std::string name_;
  const GpuContext* gpu_;
  DeviceBuffer<float> out_, dpre_, partial_;
};

}  // namespace ringtrain::gpu
