// One layer run as nn::Model runs it on the CPU, for the layer tests: the layer's op as
// the node of a one-layer graph, its kernel from the CPU backend (Backend::NewKernel),
// and the buffers the kernel reads and writes, laid out as the model lays them out: the trainable weights
// first, then the others (a frozen layer's, moving statistics); each trainable weight's
// gradient at its offset; the reduced statistics after the gradients.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/cpu_backend.h"
#include "backends/kernel.h"
#include "nn/layer.h"
#include "ops/graph.h"

namespace ringtrain::nn::testing {

class CpuRun {
 public:
  // Sets `layer`'s trainable flag (Keras' layer.trainable; a frozen layer's weights get no
  // gradient). Weights start at 1 (ParamSpec::Init::kOnes) or 0; gradients and statistics
  // at garbage (123, NaN), so the kernel must write what it owns. `layer` must outlive this.
  explicit CpuRun(Layer& layer, bool trainable = true) : layer_(layer), cpu_(backends::NewCpuBackend()) {
    layer.set_trainable(trainable);
    specs_ = layer.ParamSpecs();
    node_.name = layer.name();
    node_.class_name = layer.class_name();
    node_.op = layer.op();
    node_.inputs.assign(layer.input_shapes().size(), ops::kModelInput);
    node_.input_shapes = layer.input_shapes();
    node_.output_shape = layer.output_shape();
    node_.need_input_grad.assign(node_.inputs.size(), true);
    node_.run_backward = true;
    // The model's layout: trainable weights first, then the rest.
    std::vector<size_t> offsets(specs_.size());
    size_t total = 0, num_trainable = 0;
    for (int pass = 0; pass < 2; ++pass) {
      for (size_t k = 0; k < specs_.size(); ++k) {
        const bool train = trainable && specs_[k].trainable;
        if (train != (pass == 0)) continue;
        offsets[k] = total;
        total += Count(specs_[k]);
      }
      if (pass == 0) num_trainable = total;
    }
    params_.assign(total, 0.0f);
    for (size_t k = 0; k < specs_.size(); ++k) {
      const bool train = trainable && specs_[k].trainable;
      node_.params.push_back(
          {layer.name() + "/" + specs_[k].suffix, specs_[k].shape, offsets[k], Count(specs_[k]), train});
      if (specs_[k].init == ParamSpec::Init::kOnes) {
        std::fill(params_.begin() + static_cast<std::ptrdiff_t>(offsets[k]),
                  params_.begin() + static_cast<std::ptrdiff_t>(offsets[k] + Count(specs_[k])), 1.0f);
      }
    }
    node_.first_trainable = 0;
    node_.first_stat = num_trainable;
    node_.num_stats = layer.ReducedStatsSize();
    grads_.assign(num_trainable, 123.0f);
    grads_.resize(num_trainable + node_.num_stats, std::nanf(""));
    auto kernel = cpu_->NewKernel(node_);
    EXPECT_TRUE(kernel.ok()) << kernel.status().ToString();
    if (kernel.ok()) kernel_ = std::move(kernel).value();
  }

  StepContext ctx;  // the step the kernel runs in (KernelArgs::step: Dropout's and augmentation's draws)

  Layer& layer() const { return layer_; }
  const ops::Node& node() const { return node_; }
  backends::Kernel& kernel() const { return *kernel_; }

  // Weight k (in ParamSpecs order) in the parameter buffer; its gradient, null when it
  // has none (not trainable); its size.
  float* param(size_t k) { return params_.data() + node_.params[k].offset; }
  float* grad(size_t k) { return node_.params[k].trainable ? grads_.data() + node_.params[k].offset : nullptr; }
  size_t count(size_t k) const { return node_.params[k].count; }
  size_t num_weights() const { return node_.params.size(); }
  // The index of the weight named `suffix` ("gamma", "moving_mean").
  size_t index(const std::string& suffix) const {
    for (size_t k = 0; k < specs_.size(); ++k) {
      if (specs_[k].suffix == suffix) return k;
    }
    ADD_FAILURE() << "no weight " << suffix;
    return 0;
  }
  // Copies of weight k's values and of its gradient (empty when it has none).
  std::vector<float> param_values(size_t k) { return std::vector<float>(param(k), param(k) + count(k)); }
  std::vector<float> grad_values(size_t k) {
    return grad(k) == nullptr ? std::vector<float>() : std::vector<float>(grad(k), grad(k) + count(k));
  }
  // The reduced statistics (ReducedStatsSize floats) a training Forward writes.
  float* stats() { return grads_.data() + node_.first_stat; }
  size_t num_stats() const { return node_.num_stats; }

  // in[k]: [batch, input k's shape]; the output, or null after a test failure.
  const float* Forward(const std::vector<const float*>& in, int batch, bool training) {
    auto y = kernel_->Forward(Args(), in, batch, training);
    EXPECT_TRUE(y.ok()) << y.status().ToString();
    return y.ok() ? *y : nullptr;
  }
  const float* Forward(const float* in, int batch, bool training) {
    return Forward(std::vector<const float*>{in}, batch, training);
  }
  // For the last training Forward: din[k] where need_din[k], else null.
  void Backward(const float* dout, const std::vector<bool>& need_din, std::vector<const float*>* din) {
    din->assign(need_din.size(), nullptr);
    const Status s = kernel_->Backward(Args(), dout, need_din, din);
    EXPECT_TRUE(s.ok()) << s.ToString();
  }
  // One input: its gradient when `need_din`, else null.
  const float* Backward(const float* dout, bool need_din) {
    std::vector<const float*> din;
    Backward(dout, std::vector<bool>{need_din}, &din);
    return din[0];
  }
  // After the all-reduce of stats() over num_replicas replicas.
  void ApplyReducedStats(int num_replicas) { ApplyReducedStats(stats(), num_replicas); }
  // The same from `sums` (the replicas' sums of the statistics) instead.
  void ApplyReducedStats(const float* sums, int num_replicas) {
    const Status s = kernel_->ApplyReducedStats(Args(), sums, num_replicas);
    EXPECT_TRUE(s.ok()) << s.ToString();
  }

 private:
  static size_t Count(const ParamSpec& s) {
    size_t n = 1;
    for (int64_t d : s.shape) n *= static_cast<size_t>(d);
    return n;
  }
  backends::KernelArgs Args() {
    backends::KernelArgs a;
    a.params = params_.data();
    a.grads = grads_.data();
    a.step = &ctx;
    return a;
  }

  Layer& layer_;
  std::unique_ptr<backends::Backend> cpu_;
  std::vector<ParamSpec> specs_;
  ops::Node node_;
  std::vector<float> params_, grads_;
  std::unique_ptr<backends::Kernel> kernel_;
};

}  // namespace ringtrain::nn::testing
