// LayerNormalization on the GPU (backends/cuda/norm_kernels.h): nn::LayerNorm's passes
// (nn/layers/layer_norm.cc) as CUDA kernels (backends/cuda/norm_launch.h). Each example's
// trailing op.row_size elements are one row:
//   Forward: the row's mean and variance in double (two passes), invstd = 1 / sqrt(var +
//     eps), y = (x - mean) * invstd * gamma + beta; mean and invstd kept per row.
//   Backward: gamma's and beta's gradients (column sums over the rows, in double) where
//     trainable; dx = invstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * gamma, per row.
// The same in training and inference.
#include <string>
#include <utility>
#include <vector>

#include "backends/cuda/cuda_status.h"
#include "backends/cuda/device_buffer.h"
#include "backends/cuda/norm_kernels.h"
#include "backends/cuda/norm_launch.h"

namespace ringtrain::gpu {
namespace {

// What the kernel reads of its node.
struct LnDesc {
  std::string name;
  int64_t row = 0;          // elements per normalized row (op.row_size)
  int64_t per_example = 0;  // floats of one example's input (a multiple of row)
  float epsilon = 0.0f;
  bool scale = true, center = true, need_input_grad = false;
  size_t gamma_offset = 0, beta_offset = 0;  // only where scale / center
  bool gamma_trainable = false, beta_trainable = false;
};

class GpuLayerNorm final : public backends::Kernel {
 public:
  GpuLayerNorm(LnDesc d, const GpuContext* gpu) : d_(std::move(d)), gpu_(gpu) {}

  Status Reserve(int batch) override {
    const int id = gpu_->ordinal();
    const int64_t rows = Rows(batch);
    const size_t n = static_cast<size_t>(rows) * static_cast<size_t>(d_.row);
    RT_RETURN_IF_ERROR(y_.Grow(n, d_.name + " output", id));
    RT_RETURN_IF_ERROR(mean_.Grow(static_cast<size_t>(rows), d_.name + " row means", id));
    RT_RETURN_IF_ERROR(invstd_.Grow(static_cast<size_t>(rows), d_.name + " row inverse deviations", id));
    if (d_.need_input_grad) RT_RETURN_IF_ERROR(dx_.Grow(n, d_.name + " input gradient", id));
    if ((d_.scale && d_.gamma_trainable) || (d_.center && d_.beta_trainable)) {
      RT_RETURN_IF_ERROR(partial_.Grow(LnPartialDoubles(rows, d_.row), d_.name + " partial sums", id));
    }
    return Status::Ok();
  }

  StatusOr<const float*> Forward(const backends::KernelArgs& args, const std::vector<const float*>& in, int batch,
                                 bool /*training*/) override {
    x_ = in[0];
    rows_ = Rows(batch);
    const float* gamma = d_.scale ? args.params + d_.gamma_offset : nullptr;
    const float* beta = d_.center ? args.params + d_.beta_offset : nullptr;
    RT_RETURN_IF_ERROR(Check(LnForward(x_, rows_, d_.row, d_.epsilon, gamma, beta, y_.get(), mean_.get(),
                                       invstd_.get(), gpu_->compute()),
                             "LnForward"));
    return static_cast<const float*>(y_.get());
  }

  Status Backward(const backends::KernelArgs& args, const float* dy, const std::vector<bool>& need,
                  std::vector<const float*>* din) override {
    const cudaStream_t stream = gpu_->compute();
    float* dgamma = d_.scale && d_.gamma_trainable && args.grads != nullptr ? args.grads + d_.gamma_offset : nullptr;
    float* dbeta = d_.center && d_.beta_trainable && args.grads != nullptr ? args.grads + d_.beta_offset : nullptr;
    if (dgamma != nullptr || dbeta != nullptr) {
      RT_RETURN_IF_ERROR(Check(LnParamGrads(dy, x_, mean_.get(), invstd_.get(), rows_, d_.row, partial_.get(),
                                            dgamma, dbeta, stream),
                               "LnParamGrads"));
    }
    if (!need[0]) return Status::Ok();
    if (dx_.get() == nullptr && rows_ > 0) {
      return InternalError(d_.name + ": input gradient asked for, but the layer was built without one");
    }
    const float* gamma = d_.scale ? args.params + d_.gamma_offset : nullptr;
    RT_RETURN_IF_ERROR(Check(LnInputGrad(dy, x_, mean_.get(), invstd_.get(), rows_, d_.row, gamma, dx_.get(), stream),
                             "LnInputGrad"));
    (*din)[0] = dx_.get();
    return Status::Ok();
  }

 private:
  int64_t Rows(int batch) const { return static_cast<int64_t>(batch) * (d_.per_example / d_.row); }
  Status Check(cudaError_t e, const char* what) const {
    return CudaCheck(e, std::string(what) + "(" + d_.name + ")", gpu_->ordinal());
  }

  const LnDesc d_;
  const GpuContext* gpu_;
  DeviceBuffer<float> y_, dx_, mean_, invstd_;
  DeviceBuffer<double> partial_;
  const float* x_ = nullptr;  // the input of the last Forward (valid until Backward)
  int64_t rows_ = 0;
};

}  // namespace

StatusOr<std::unique_ptr<backends::Kernel>> NewLayerNormKernel(const ops::Node& node, const GpuContext* gpu) {
  const ops::Op& op = node.op;
  if (op.kind != ops::OpKind::kLayerNorm) {
    return InvalidArgumentError(node.Label() + ": not a LayerNorm op: " + ops::Describe(op));
  }
  if (node.input_shapes.size() != 1) return InvalidArgumentError(node.Label() + ": LayerNorm needs one input");
  LnDesc d;
  d.name = node.name;
  d.row = op.row_size;
  d.per_example = ops::NumElements(node.input_shapes[0]);
  if (d.row < 1 || d.per_example < 1 || d.per_example % d.row != 0) {
    return InvalidArgumentError(node.Label() + ": LayerNorm rows of " + std::to_string(d.row) +
                                " elements do not divide an input of " + std::to_string(d.per_example));
  }
  d.epsilon = op.epsilon;
  d.scale = op.scale;
  d.center = op.center;
  d.need_input_grad = !node.need_input_grad.empty() && node.need_input_grad[0];
  // Keras' weight order: gamma (scale), beta (center), each of the row's shape.
  const size_t want = (op.scale ? 1 : 0) + (op.center ? 1 : 0);
  if (node.params.size() != want) {
    return InvalidArgumentError(node.Label() + ": LayerNorm has " + std::to_string(node.params.size()) +
                                " weights, expected " + std::to_string(want));
  }
  for (const ops::ParamRef& p : node.params) {
    if (p.count != static_cast<size_t>(d.row)) {
      return InvalidArgumentError(node.Label() + ": LayerNorm weight " + p.name + " has " + std::to_string(p.count) +
                                  " floats for rows of " + std::to_string(d.row));
    }
  }
  size_t k = 0;
  if (op.scale) {
    d.gamma_offset = node.params[k].offset;
    d.gamma_trainable = node.params[k++].trainable;
  }
  if (op.center) {
    d.beta_offset = node.params[k].offset;
    d.beta_trainable = node.params[k].trainable;
  }
  return std::unique_ptr<backends::Kernel>(new GpuLayerNorm(std::move(d), gpu));
}

}  // namespace ringtrain::gpu
