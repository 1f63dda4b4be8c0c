// BatchNormalization on the GPU (backends/cuda/norm_kernels.h): nn::BatchNorm's passes
// (nn/layers/batch_norm.cc) as CUDA kernels (backends/cuda/norm_launch.h), channels last.
//   training Forward: per-channel sum(x), sum(x^2) in double -> [all-reduce when
//     synchronized] -> mean, biased variance, a = gamma * invstd, b = beta - mean * a
//     (and the reduced statistics) -> y = x * a + b.
//   inference Forward: a and b from the moving statistics -> y = x * a + b.
//   Backward: per-channel sum(g), sum(g * xhat) in double (gamma's and beta's gradients)
//     -> [all-reduce when synchronized] -> dx = a * (g - mean(g)) + B * (x - mean); in
//     inference mode dx = g * a.
// A following relu can be taken over (AbsorbRelu), as the CPU layer does: the output is
// relu'd and the gradient masked where it is not > 0.
#include <string>
#include <utility>
#include <vector>

#include "backends/cuda/cuda_status.h"
#include "backends/cuda/device_buffer.h"
#include "backends/cuda/norm_kernels.h"
#include "backends/cuda/norm_launch.h"
#include "backends/cuda/norm_math.h"

namespace ringtrain::gpu {
namespace {

// What the kernel reads of its node.
struct BnDesc {
  std::string name;
  int c = 0;                // channels: the last axis
  int64_t per_example = 0;  // floats of one example's input
  bool training_mode = true, synchronized = false, scale = true, center = true, need_input_grad = false;
  float epsilon = 0.0f, momentum = 0.0f;
  // Weights in the model's flat buffers; gamma and beta only where scale / center.
  size_t gamma_offset = 0, beta_offset = 0, moving_mean_offset = 0, moving_var_offset = 0;
  bool gamma_trainable = false, beta_trainable = false;
  bool write_stats = false;  // the node has the reduced statistics (2 * c floats at first_stat)
  size_t first_stat = 0;
};

class GpuBatchNorm final : public backends::Kernel {
 public:
  GpuBatchNorm(BnDesc d, const GpuContext* gpu) : d_(std::move(d)), gpu_(gpu) {}

  Status Reserve(int batch) override {
    const int id = gpu_->ordinal();
    const size_t c = static_cast<size_t>(d_.c);
    const int64_t rows = Rows(batch);
    RT_RETURN_IF_ERROR(y_.Grow(static_cast<size_t>(rows) * c, d_.name + " output", id));
    if (d_.need_input_grad) {
      RT_RETURN_IF_ERROR(dx_.Grow(static_cast<size_t>(rows) * c, d_.name + " input gradient", id));
    }
    RT_RETURN_IF_ERROR(partial_.Grow(BnPartialDoubles(rows, d_.c), d_.name + " partial sums", id));
    RT_RETURN_IF_ERROR(sums_.Grow(2 * c, d_.name + " channel sums", id));
    RT_RETURN_IF_ERROR(chan_.Grow(kChannelArrays * c, d_.name + " channel coefficients", id));
    if (d_.synchronized) {
      RT_RETURN_IF_ERROR(staging_.Grow(2 * c, d_.name + " all-reduce staging", id));
      red_.resize(nm::ForwardReduceFloats(d_.c));
    }
    return Status::Ok();
  }

  StatusOr<const float*> Forward(const backends::KernelArgs& args, const std::vector<const float*>& in, int batch,
                                 bool training) override {
    x_ = in[0];
    rows_ = Rows(batch);
    batch_stats_ = training && d_.training_mode;
    synced_ = batch_stats_ && Synchronized(args);
    if (batch_stats_) {
      RT_ASSIGN_OR_RETURN(const bool reduced, TrainCoefficients(args));
      // The collective failed: the output is left as it is and the trainer abandons the
      // step (the CPU layer's behaviour).
      if (!reduced) return static_cast<const float*>(y_.get());
    } else {
      RT_RETURN_IF_ERROR(Check(BnMovingCoefficients(args.params + d_.moving_mean_offset,
                                                    args.params + d_.moving_var_offset, d_.c, d_.epsilon,
                                                    Gamma(args), Beta(args), Mean(), InvStd(), A(), B(),
                                                    gpu_->compute()),
                               "BnMovingCoefficients"));
    }
    RT_RETURN_IF_ERROR(Check(BnAffine(x_, rows_, d_.c, A(), B(), relu_, y_.get(), gpu_->compute()), "BnAffine"));
    return static_cast<const float*>(y_.get());
  }

  Status Backward(const backends::KernelArgs& args, const float* dy, const std::vector<bool>& need,
                  std::vector<const float*>* din) override {
    const bool need_din = need[0];
    const float* relu_y = relu_ && !masked_ ? y_.get() : nullptr;  // the fused relu's gradient mask
    masked_ = false;
    float* dgamma = d_.scale && d_.gamma_trainable && args.grads != nullptr ? args.grads + d_.gamma_offset : nullptr;
    float* dbeta = d_.center && d_.beta_trainable && args.grads != nullptr ? args.grads + d_.beta_offset : nullptr;
    const cudaStream_t stream = gpu_->compute();
    if (dgamma == nullptr && dbeta == nullptr && !batch_stats_) {
      // Inference mode (a frozen layer): a per-channel scale, no statistics.
      if (!need_din) return Status::Ok();
      return ScaleGrad(dy, relu_y, din);
    }
    RT_RETURN_IF_ERROR(Check(BnGradSums(dy, relu_y, x_, rows_, d_.c, Mean(), InvStd(), partial_.get(), sums_.get(),
                                        dgamma, dbeta, stream),
                             "BnGradSums"));
    if (!need_din) return Status::Ok();
    if (!batch_stats_) return ScaleGrad(dy, relu_y, din);
    RT_RETURN_IF_ERROR(CheckInputGradBuffer());
    if (synced_ && !Synchronized(args)) {
      return FailedPreconditionError(d_.name + ": the training Forward's statistics spanned the replicas, but "
                                     "Backward has no all-reduce (KernelArgs::step) for its sums");
    }
    if (synced_) {
      RT_RETURN_IF_ERROR(SumsToHost("input gradient sums"));
      nm::PackBackwardReduce(staging_.get(), d_.c, red_.data());
      if (!args.step->all_reduce_sum(red_.data(), nm::BackwardReduceFloats(d_.c))) {
        (*din)[0] = dx_.get();  // the collective failed: the trainer abandons the step
        return Status::Ok();
      }
      nm::UnpackBackwardReduce(red_.data(), d_.c, staging_.get());
      RT_RETURN_IF_ERROR(SumsToDevice());
    }
    RT_RETURN_IF_ERROR(Check(BnInputGradCoefficients(sums_.get(), count_, d_.c, A(), InvStd(), MeanG(), CoefB(),
                                                     stream),
                             "BnInputGradCoefficients"));
    RT_RETURN_IF_ERROR(Check(BnInputGrad(dy, relu_y, x_, rows_, d_.c, A(), MeanG(), CoefB(), Mean(), dx_.get(),
                                         stream),
                             "BnInputGrad"));
    (*din)[0] = dx_.get();
    return Status::Ok();
  }

  Status ApplyReducedStats(const backends::KernelArgs& args, const float* sums, int num_replicas) override {
    if (num_replicas <= 0) return Status::Ok();
    // The moving statistics are non-trainable weights in the engine's device parameter
    // buffer; this update after the all-reduce is the one place they are written.
    float* params = args.params;
    const float keep = d_.momentum, take = 1.0f - d_.momentum;
    return Check(BnMovingUpdate(params + d_.moving_mean_offset, params + d_.moving_var_offset, sums, d_.c,
                                static_cast<float>(num_replicas), keep, take, gpu_->compute()),
                 "BnMovingUpdate");
  }

  bool AbsorbRelu() override {
    relu_ = true;
    return true;
  }
  const float* ReluGradientMask() const override { return relu_ ? y_.get() : nullptr; }
  void GradientMasked() override { masked_ = relu_; }

 private:
  // Per-channel float arrays in chan_: mean, invstd, a, b, mean(g), B.
  static constexpr size_t kChannelArrays = 6;
  float* Chan(size_t k) const { return chan_.get() + k * static_cast<size_t>(d_.c); }
  float* Mean() const { return Chan(0); }
  float* InvStd() const { return Chan(1); }
  float* A() const { return Chan(2); }
  float* B() const { return Chan(3); }
  float* MeanG() const { return Chan(4); }
  float* CoefB() const { return Chan(5); }

  const float* Gamma(const backends::KernelArgs& args) const {
    return d_.scale ? args.params + d_.gamma_offset : nullptr;
  }
  const float* Beta(const backends::KernelArgs& args) const {
    return d_.center ? args.params + d_.beta_offset : nullptr;
  }
  int64_t Rows(int batch) const { return static_cast<int64_t>(batch) * (d_.per_example / d_.c); }

  Status Check(cudaError_t e, const char* what) const {
    return CudaCheck(e, std::string(what) + "(" + d_.name + ")", gpu_->ordinal());
  }
  Status CheckInputGradBuffer() const {
    if (dx_.get() == nullptr && rows_ > 0) {
      return InternalError(d_.name + ": input gradient asked for, but the layer was built without one");
    }
    return Status::Ok();
  }

  // The statistics span every replica: only across several replicas with an all-reduce
  // (one replica: nothing to sum).
  bool Synchronized(const backends::KernelArgs& args) const {
    return d_.synchronized && args.step != nullptr && args.step->all_reduce_sum && args.step->num_replicas > 1;
  }

  // sums_ (2c doubles) into the pinned staging buffer, waited for (the host reads it next).
  Status SumsToHost(const char* what) {
    const size_t bytes = 2 * static_cast<size_t>(d_.c) * sizeof(double);
    RT_RETURN_IF_ERROR(Check(cudaMemcpyAsync(staging_.get(), sums_.get(), bytes, cudaMemcpyDeviceToHost,
                                             gpu_->compute()),
                             "cudaMemcpyAsync(sums to host)"));
    return gpu_->SyncCompute(d_.name + " " + what + " for the all-reduce");
  }
  // The staging buffer back into sums_. The host writes staging_ again only after a
  // later SumsToHost has waited for the stream, so this copy has run by then.
  Status SumsToDevice() {
    const size_t bytes = 2 * static_cast<size_t>(d_.c) * sizeof(double);
    return Check(cudaMemcpyAsync(sums_.get(), staging_.get(), bytes, cudaMemcpyHostToDevice, gpu_->compute()),
                 "cudaMemcpyAsync(sums to device)");
  }

  // Batch statistics into the per-channel coefficients (and the reduced statistics).
  // False when the all-reduce failed.
  StatusOr<bool> TrainCoefficients(const backends::KernelArgs& args) {
    const cudaStream_t stream = gpu_->compute();
    RT_RETURN_IF_ERROR(Check(BnChannelSums(x_, rows_, d_.c, partial_.get(), sums_.get(), stream), "BnChannelSums"));
    count_ = static_cast<double>(rows_);
    if (synced_) {
      RT_RETURN_IF_ERROR(SumsToHost("batch moments"));
      nm::PackForwardReduce(static_cast<size_t>(rows_), staging_.get(), d_.c, red_.data());
      if (!args.step->all_reduce_sum(red_.data(), nm::ForwardReduceFloats(d_.c))) return false;
      count_ = nm::UnpackForwardReduce(red_.data(), d_.c, staging_.get());
      RT_RETURN_IF_ERROR(SumsToDevice());
    }
    float* stats = d_.write_stats && args.grads != nullptr ? args.grads + d_.first_stat : nullptr;
    RT_RETURN_IF_ERROR(Check(BnBatchCoefficients(sums_.get(), count_, d_.c, d_.epsilon, Gamma(args), Beta(args),
                                                 Mean(), InvStd(), A(), B(), stats, stream),
                             "BnBatchCoefficients"));
    return true;
  }

  Status ScaleGrad(const float* dy, const float* relu_y, std::vector<const float*>* din) {
    RT_RETURN_IF_ERROR(CheckInputGradBuffer());
    RT_RETURN_IF_ERROR(Check(BnScaleGrad(dy, relu_y, rows_, d_.c, A(), dx_.get(), gpu_->compute()), "BnScaleGrad"));
    (*din)[0] = dx_.get();
    return Status::Ok();
  }

  const BnDesc d_;
  const GpuContext* gpu_;
  DeviceBuffer<float> y_, dx_, chan_;
  DeviceBuffer<double> partial_, sums_;
  PinnedBuffer<double> staging_;  // sums_ on the host (synchronized)
  std::vector<float> red_;        // what goes through the all-reduce (synchronized)

  // The last Forward: its input (valid until Backward), rows, the rows its statistics
  // count (every replica's when synchronized), whether it used batch statistics ...
  const float* x_ = nullptr;
  int64_t rows_ = 0;
  double count_ = 0;
  bool batch_stats_ = false;
  bool synced_ = false;  // ... summed over the replicas (so Backward's sums are too)
  bool relu_ = false;    // a following relu taken over (AbsorbRelu)
  bool masked_ = false;  // the next Backward's output gradient arrives masked (GradientMasked)
};

}  // namespace

StatusOr<std::unique_ptr<backends::Kernel>> NewBatchNormKernel(const ops::Node& node, const GpuContext* gpu) {
  const ops::Op& op = node.op;
  if (op.kind != ops::OpKind::kBatchNorm) {
    return InvalidArgumentError(node.Label() + ": not a BatchNorm op: " + ops::Describe(op));
  }
  if (op.activation != ops::Activation::kLinear) {
    return UnimplementedError(node.Label() + ": BatchNorm with a fused activation " +
                              ops::ActivationName(op.activation) + " has no CUDA kernel");
  }
  if (node.input_shapes.size() != 1 || node.input_shapes[0].empty()) {
    return InvalidArgumentError(node.Label() + ": BatchNorm needs one input with a channel axis");
  }
  BnDesc d;
  d.name = node.name;
  d.c = node.input_shapes[0].back();
  d.per_example = ops::NumElements(node.input_shapes[0]);
  if (d.c < 1 || d.per_example < 1 || d.per_example % d.c != 0) {
    return InvalidArgumentError(node.Label() + ": BatchNorm on an empty input " +
                                std::to_string(d.per_example) + " floats, " + std::to_string(d.c) + " channels");
  }
  d.training_mode = op.training_mode;
  d.synchronized = op.synchronized;
  d.scale = op.scale;
  d.center = op.center;
  d.epsilon = op.epsilon;
  d.momentum = op.momentum;
  d.need_input_grad = !node.need_input_grad.empty() && node.need_input_grad[0];
  // Keras' weight order: gamma (scale), beta (center), moving_mean, moving_variance.
  const size_t want = (op.scale ? 1 : 0) + (op.center ? 1 : 0) + 2;
  if (node.params.size() != want) {
    return InvalidArgumentError(node.Label() + ": BatchNorm has " + std::to_string(node.params.size()) +
                                " weights, expected " + std::to_string(want));
  }
  for (const ops::ParamRef& p : node.params) {
    if (p.count != static_cast<size_t>(d.c)) {
      return InvalidArgumentError(node.Label() + ": BatchNorm weight " + p.name + " has " + std::to_string(p.count) +
                                  " floats for " + std::to_string(d.c) + " channels");
    }
  }
  size_t k = 0;
  if (op.scale) {
    d.gamma_offset = node.params[k].offset;
    d.gamma_trainable = node.params[k++].trainable;
  }
  if (op.center) {
    d.beta_offset = node.params[k].offset;
    d.beta_trainable = node.params[k++].trainable;
  }
  d.moving_mean_offset = node.params[k++].offset;
  d.moving_var_offset = node.params[k].offset;
  if (node.num_stats != 0 && node.num_stats != 2 * static_cast<size_t>(d.c)) {
    return InvalidArgumentError(node.Label() + ": BatchNorm has " + std::to_string(node.num_stats) +
                                " reduced statistics, expected 0 or " + std::to_string(2 * d.c));
  }
  d.write_stats = node.num_stats > 0;
  d.first_stat = node.first_stat;
  return std::unique_ptr<backends::Kernel>(new GpuBatchNorm(std::move(d), gpu));
}

}  // namespace ringtrain::gpu
