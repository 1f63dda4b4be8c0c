// Dense on the GPU. Row-major matrices through column-major cuBLAS: a row-major
// [r, c] matrix is its transpose [c, r] to cuBLAS, so
//   y[B, U]  = x[B, I] W[I, U]   is  y^T  = W^T x^T      (N, N; m=U, n=B, k=I)
//   dW[I, U] = x^T d             is  dW^T = d^T x        (N, T; m=U, n=I, k=B)
//   dx[B, I] = d W^T             is  dx^T = W d^T        (T, N; m=I, n=B, k=U)
// FP32 sgemm with CUBLAS_DEFAULT_MATH (no TF32), set on the handle by GpuContext.
// The bias and the output activation are the epilogue of backends/cuda/output_activation.h
// (relu and linear fused with the bias, any other after it, as nn/layers/dense.cc).
#include <string>

#include "backends/cuda/conv_family.h"
#include "backends/cuda/cuda_status.h"
#include "backends/cuda/device_buffer.h"
#include "backends/cuda/op_kernels.h"
#include "backends/cuda/output_activation.h"
#include "backends/kernel.h"

namespace ringtrain::gpu {
namespace {

// What the Dense kernel reads of its node.
struct DenseSpec {
  std::string name;
  int in = 0, units = 0;
  ops::Activation act = ops::Activation::kLinear;
  NodeWeight kernel, bias;  // bias.present: use_bias
  bool need_input_grad = false;
};

class GpuDense final : public backends::Kernel {
 public:
  GpuDense(const DenseSpec& s, const GpuContext* gpu)
      : s_(s), gpu_(gpu), in_(s.in), units_(s.units), epilogue_(s.act, s.name, gpu) {}

  Status Reserve(int batch) override {
    const int id = gpu_->ordinal();
    const size_t outputs = static_cast<size_t>(batch) * units_;
    RT_RETURN_IF_ERROR(y_.Grow(outputs, s_.name + (epilogue_.fused() ? " output" : " pre-activation"), id));
    RT_RETURN_IF_ERROR(epilogue_.Reserve(batch, units_));
    if (s_.need_input_grad) {
      RT_RETURN_IF_ERROR(dx_.Grow(static_cast<size_t>(batch) * in_, s_.name + " input gradient", id));
    }
    return Status::Ok();
  }

  StatusOr<const float*> Forward(const backends::KernelArgs& a, const std::vector<const float*>& inputs, int batch,
                                 bool training) override {
    const float* x = inputs[0];
    const int id = gpu_->ordinal();
    const float one = 1.0f, zero = 0.0f;
    RT_RETURN_IF_ERROR(CublasCheck(cublasSgemm(gpu_->cublas(), CUBLAS_OP_N, CUBLAS_OP_N, units_, batch, in_, &one,
                                               a.params + s_.kernel.offset, units_, x, in_, &zero, y_.get(), units_),
                                   "cublasSgemm(" + s_.name + " forward)", id));
    RT_ASSIGN_OR_RETURN(
        const float* out,
        epilogue_.Forward(y_.get(), s_.bias.present ? a.params + s_.bias.offset : nullptr, batch, units_));
    if (training) {
      x_ = x;
      batch_ = batch;
    }
    return out;
  }

  Status Backward(const backends::KernelArgs& a, const float* dy, const std::vector<bool>& need,
                  std::vector<const float*>* din) override {
    const bool need_din = need[0];
    const bool bias_grad = s_.bias.present && s_.bias.trainable;
    if (!need_din && !s_.kernel.trainable && !bias_grad) return Status::Ok();  // frozen, and nothing to pass back
    const int id = gpu_->ordinal();
    const float one = 1.0f, zero = 0.0f;
    RT_ASSIGN_OR_RETURN(const float* d, epilogue_.Backward(dy, y_.get(), batch_, units_,
                                                           bias_grad ? a.grads + s_.bias.offset : nullptr));
    if (s_.kernel.trainable) {  // a frozen kernel gets no gradient
      RT_RETURN_IF_ERROR(CublasCheck(cublasSgemm(gpu_->cublas(), CUBLAS_OP_N, CUBLAS_OP_T, units_, in_, batch_, &one, d,
                                                 units_, x_, in_, &zero, a.grads + s_.kernel.offset, units_),
                                     "cublasSgemm(" + s_.name + " kernel gradient)", id));
    }
    if (!need_din) return Status::Ok();
    if (dx_.get() == nullptr) {
      return InternalError(s_.name + ": input gradient asked for, but the layer was built without one");
    }
    RT_RETURN_IF_ERROR(CublasCheck(cublasSgemm(gpu_->cublas(), CUBLAS_OP_T, CUBLAS_OP_N, in_, batch_, units_, &one,
                                               a.params + s_.kernel.offset, units_, d, units_, &zero, dx_.get(), in_),
                                   "cublasSgemm(" + s_.name + " input gradient)", id));
    (*din)[0] = dx_.get();
    return Status::Ok();
  }

 private:
  const DenseSpec s_;
  const GpuContext* gpu_;
  const int in_, units_;
  OutputActivation epilogue_;
  // y_: the product plus the bias: the output when the activation is fused, else the
  // pre-activation (the epilogue holds the output).
  DeviceBuffer<float> y_, dx_;
  const float* x_ = nullptr;  // the input of the last training Forward
  int batch_ = 0;
};

StatusOr<std::unique_ptr<backends::Kernel>> MakeDense(const DenseSpec& s, const GpuContext* gpu) {
  if (s.in < 1 || s.units < 1) {
    return InvalidArgumentError("dense layer '" + s.name + "' needs a flat input and positive units");
  }
  if (!s.kernel.present) return InvalidArgumentError("dense layer '" + s.name + "' has no kernel weight");
  return std::unique_ptr<backends::Kernel>(new GpuDense(s, gpu));
}

}  // namespace

StatusOr<std::unique_ptr<backends::Kernel>> NewDenseKernelForNode(const ops::Node& node, const GpuContext* gpu) {
  if (node.op.kind != ops::OpKind::kDense) {
    return InvalidArgumentError(node.Label() + ": not a Dense op (" + ops::Describe(node.op) + ")");
  }
  if (node.input_shapes.empty() || node.input_shapes[0].size() != 1) {
    return InvalidArgumentError("dense layer '" + node.name + "' needs a flat input and positive units");
  }
  DenseSpec s;
  s.name = node.name;
  s.in = node.input_shapes[0][0];
  s.units = node.op.units;
  s.act = node.op.activation;
  s.kernel = WeightOf(node, 0);
  if (node.op.use_bias) {
    s.bias = WeightOf(node, 1);
    if (!s.bias.present) return InvalidArgumentError(node.Label() + ": use_bias, but no bias weight");
  }
  s.need_input_grad = !node.need_input_grad.empty() && node.need_input_grad[0];
  return MakeDense(s, gpu);
}

}  // namespace ringtrain::gpu
