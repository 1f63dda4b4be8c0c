// SeparableConv2D on the GPU, as nn/layers/separable_conv2d.cc: the depthwise pass
// (backends/cuda/depthwise_conv.h; no bias, linear) into mid [pixels, c * m], then the
// pointwise 1x1 convolution as one cuBLAS product over the pixels, y[P, F] = mid[P, M]
// pw[M, F], with the bias and the output activation as the epilogue of
// backends/cuda/output_activation.h. Weights in the layer's order: depthwise_kernel
// [kh, kw, c, m], pointwise_kernel [1, 1, c * m, filters], then bias [filters].
//
// Row-major matrices through column-major cuBLAS, as dense_kernel.cc:
//   y[P, F]     = mid[P, M] pw[M, F]   is  y^T  = pw^T mid^T   (N, N; m=F, n=P, k=M)
//   dpw[M, F]   = mid^T d              is  dpw^T = d^T mid     (N, T; m=F, n=M, k=P)
//   dmid[P, M]  = d pw^T               is  dmid^T = pw d^T     (T, N; m=M, n=P, k=F)
// then the depthwise filter gradient from x and dmid, and the input gradient from dmid.
#include <climits>
#include <string>

#include "backends/cuda/conv_family.h"
#include "backends/cuda/cuda_status.h"
#include "backends/cuda/depthwise_conv.h"
#include "backends/cuda/device_buffer.h"
#include "backends/cuda/output_activation.h"
#include "backends/kernel.h"

namespace ringtrain::gpu {
namespace {

class GpuSeparable final : public backends::Kernel {
 public:
  GpuSeparable(const ops::Node& node, const GpuContext* gpu)
      : name_(node.name),
        g_(node.op.window),
        m_(node.op.depth_multiplier),
        mid_channels_(node.op.window.c * node.op.depth_multiplier),
        f_(node.op.units),
        depthwise_(WeightOf(node, 0)),
        pointwise_(WeightOf(node, 1)),
        bias_(node.op.use_bias ? WeightOf(node, 2) : NodeWeight{}),
        need_input_grad_(!node.need_input_grad.empty() && node.need_input_grad[0]),
        gpu_(gpu),
        epilogue_(node.op.activation, node.name, gpu) {}

  Status Reserve(int batch) override {
    const int id = gpu_->ordinal();
    const int64_t pixels = static_cast<int64_t>(batch) * g_.out_h * g_.out_w;
    if (pixels > INT_MAX) {
      return InvalidArgumentError(
          name_ + ": " + std::to_string(pixels) +
          " output pixels in a batch exceed what one cuBLAS product takes; use a smaller batch");
    }
    const size_t mid = static_cast<size_t>(pixels) * mid_channels_;
    RT_RETURN_IF_ERROR(mid_.Grow(mid, name_ + " depthwise output", id));
    RT_RETURN_IF_ERROR(
        y_.Grow(static_cast<size_t>(pixels) * f_, name_ + (epilogue_.fused() ? " output" : " pre-activation"), id));
    RT_RETURN_IF_ERROR(epilogue_.Reserve(pixels, f_));
    if (depthwise_.trainable || need_input_grad_) {
      RT_RETURN_IF_ERROR(dmid_.Grow(mid, name_ + " depthwise output gradient", id));
    }
    if (depthwise_.trainable) {
      RT_RETURN_IF_ERROR(partial_.Grow(DepthwiseFilterGradScratchFloats(g_, m_, batch),
                                       name_ + " depthwise filter gradient partial sums", id));
    }
    if (need_input_grad_) {
      RT_RETURN_IF_ERROR(dx_.Grow(static_cast<size_t>(batch) * g_.in_size(), name_ + " input gradient", id));
    }
    return Status::Ok();
  }

  StatusOr<const float*> Forward(const backends::KernelArgs& args, const std::vector<const float*>& inputs, int batch,
                                 bool training) override {
    const float* x = inputs[0];
    const int id = gpu_->ordinal();
    const int pixels = batch * g_.out_h * g_.out_w;
    RT_RETURN_IF_ERROR(
        CudaCheck(DepthwiseConvForward(g_, m_, x, batch, args.params + depthwise_.offset, mid_.get(), gpu_->compute()),
                  "DepthwiseConvForward(" + name_ + ")", id));
    const float one = 1.0f, zero = 0.0f;
    RT_RETURN_IF_ERROR(
        CublasCheck(cublasSgemm(gpu_->cublas(), CUBLAS_OP_N, CUBLAS_OP_N, f_, pixels, mid_channels_, &one,
                                args.params + pointwise_.offset, f_, mid_.get(), mid_channels_, &zero, y_.get(), f_),
                    "cublasSgemm(" + name_ + " pointwise forward)", id));
    RT_ASSIGN_OR_RETURN(const float* out,
                        epilogue_.Forward(y_.get(), bias_.present ? args.params + bias_.offset : nullptr, pixels, f_));
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
    if (!need_din && !depthwise_.trainable && !pointwise_.trainable && !bias_grad) {
      return Status::Ok();  // frozen, and nothing to pass back
    }
    if (need_din && !need_input_grad_) {
      return InternalError(name_ + ": input gradient asked for, but the layer was built without one");
    }
    const int id = gpu_->ordinal();
    const int pixels = batch_ * g_.out_h * g_.out_w;
    const float one = 1.0f, zero = 0.0f;
    RT_ASSIGN_OR_RETURN(const float* d,
                        epilogue_.Backward(dy, y_.get(), pixels, f_, bias_grad ? args.grads + bias_.offset : nullptr));
    if (pointwise_.trainable) {  // a frozen kernel gets no gradient
      RT_RETURN_IF_ERROR(
          CublasCheck(cublasSgemm(gpu_->cublas(), CUBLAS_OP_N, CUBLAS_OP_T, f_, mid_channels_, pixels, &one, d, f_,
                                  mid_.get(), mid_channels_, &zero, args.grads + pointwise_.offset, f_),
                      "cublasSgemm(" + name_ + " pointwise kernel gradient)", id));
    }
    if (!depthwise_.trainable && !need_din) return Status::Ok();
    // The gradient at the depthwise output, then through the depthwise convolution.
    RT_RETURN_IF_ERROR(
        CublasCheck(cublasSgemm(gpu_->cublas(), CUBLAS_OP_T, CUBLAS_OP_N, mid_channels_, pixels, f_, &one,
                                args.params + pointwise_.offset, f_, d, f_, &zero, dmid_.get(), mid_channels_),
                    "cublasSgemm(" + name_ + " depthwise output gradient)", id));
    if (depthwise_.trainable) {
      RT_RETURN_IF_ERROR(
          CudaCheck(DepthwiseConvFilterGrad(g_, m_, x_, dmid_.get(), batch_, args.grads + depthwise_.offset,
                                            partial_.get(), gpu_->compute()),
                    "DepthwiseConvFilterGrad(" + name_ + ")", id));
    }
    if (!need_din) return Status::Ok();
    RT_RETURN_IF_ERROR(CudaCheck(DepthwiseConvInputGrad(g_, m_, dmid_.get(), args.params + depthwise_.offset, batch_,
                                                        dx_.get(), gpu_->compute()),
                                 "DepthwiseConvInputGrad(" + name_ + ")", id));
    (*din)[0] = dx_.get();
    return Status::Ok();
  }

 private:
  const std::string name_;
  const ops::Window g_;
  const int m_;             // depth_multiplier
  const int mid_channels_;  // c * m
  const int f_;             // filters
  const NodeWeight depthwise_, pointwise_, bias_;
  const bool need_input_grad_;
  const GpuContext* gpu_;
  OutputActivation epilogue_;
  // mid_: the depthwise output; y_: the pointwise product plus the bias (the output when
  // the activation is fused, else the pre-activation).
  DeviceBuffer<float> mid_, y_, dmid_, dx_, partial_;
  const float* x_ = nullptr;  // the input of the last training Forward
  int batch_ = 0;
};

}  // namespace

StatusOr<std::unique_ptr<backends::Kernel>> NewSeparableConv2DKernel(const ops::Node& node, const GpuContext* gpu) {
  if (node.op.kind != ops::OpKind::kSeparableConv2D) {
    return InvalidArgumentError(node.Label() + ": not a SeparableConv2D op (" + ops::Describe(node.op) + ")");
  }
  RT_RETURN_IF_ERROR(CheckDepthwiseWindow(node));
  if (node.op.units < 1) return InvalidArgumentError(node.Label() + " has no filters");
  const size_t weights = node.op.use_bias ? 3 : 2;
  if (node.params.size() < weights) {
    return InvalidArgumentError(node.Label() + ": expected " + std::to_string(weights) + " weights, the node has " +
                                std::to_string(node.params.size()));
  }
  return std::unique_ptr<backends::Kernel>(new GpuSeparable(node, gpu));
}

}  // namespace ringtrain::gpu
