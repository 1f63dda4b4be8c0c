// A model built from the job file's "model" section: a graph of Keras-like layers
// (channels-last NHWC) in the compact form of Keras' Functional API, each layer taking
// the layers it names in "inputs", by default the one before it, so a plain list is a
// Sequential model (nn/model_build.h). Parameters live in one contiguous buffer and
// gradients in another of the same layout, so a whole step's gradient is one all-reduce.
//
// Threading: a Model is used by one thread at a time. Forward/Backward allocate
// nothing after the first call with a given batch size.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "backends/kernel.h"
#include "nn/regularizers/regularizer.h"
#include "ops/graph.h"

namespace ringtrain::nn {

struct ParamInfo {
  std::string name;            // Keras-style: "conv2d/kernel", "dense_1/bias"
  std::vector<int64_t> shape;  // conv kernel [kh, kw, in, out]; dense kernel [in, out]; bias [units]
  size_t offset = 0;           // into params() (and grads() when trainable), in floats
  size_t count = 0;
  bool trainable = true;       // false: a frozen layer's weight or a moving statistic; no gradient
  Regularizer regularizer;     // the layer's kernel_/bias_regularizer (none by default)
};

// One of a model's inputs or outputs: its name (an output's is its layer's), its
// per-example shape, and where its values sit in an example's row. A model with several
// inputs takes them side by side in one row per example, in the order of their names
// (as a data source lays out the arrays it names: data/source.h); a model with several
// outputs gives them side by side in the order of the model's "outputs".
struct ModelIo {
  std::string name;
  std::vector<int> shape;
  size_t offset = 0;  // floats before it in the row
  size_t size = 0;    // floats per example
};

class Layer;         // defined in nn/layer.h
using StepContext = backends::StepContext;  // nn/layer.h

class Model {
 public:
  // Builds and initialises the model: each weight by its layer's initializer (by default
  // Glorot-uniform kernels and zero biases; nn/initializers/initializers.h), drawn deterministically
  // from `seed` (same seed -> same bits). Errors name the bad layer and field, e.g.
  // "model.layers[2] (dense): 'units' must be a positive integer".
  static StatusOr<std::unique_ptr<Model>> FromJson(const nlohmann::json& model_json, uint64_t seed);
  // Models built after SetReluFusion(false) run every relu and Add as its own pass (the
  // executor's fusion pass, executor/fusion.h, is off): for tests, which check that fusion keeps the
  // bits. On by default.
  static void SetReluFusion(bool enabled);
  ~Model();

  const std::vector<int>& input_shape() const;  // per example, e.g. {28, 28}; several inputs: {their floats}
  size_t input_size() const;                     // floats per example
  // The model's inputs and outputs in its order (one each for most models). With several
  // outputs, num_classes() and the rest below describe the row of all of them.
  const std::vector<ModelIo>& inputs() const;
  const std::vector<ModelIo>& outputs() const;
  // Node i of graph() was made to take several inputs or give several outputs (a crop
  // of the input row, the reshape named as the input, the outputs laid side by side).
  bool internal_node(size_t i) const;
  // The output's last axis (the classes or units a loss reads per position), how many
  // positions of it an example's output holds (the product of the other axes: 1 for a
  // vector output, h * w for a (h, w, classes) segmentation map), and their product.
  int num_classes() const;
  size_t output_positions() const;
  const std::vector<int>& output_shape() const;  // per example, e.g. {10} or {128, 128, 11}
  size_t output_size() const;

  // Every weight: the trainable ones first (in layer order), then the non-trainable
  // ones (frozen layers' weights, BatchNormalization's moving statistics), in
  // num_params() floats.
  float* params();
  const float* params() const;
  size_t num_params() const;
  // How many of params() (a prefix) are trainable: the optimizer updates these.
  size_t num_trainable() const;
  // The buffer to all-reduce each step, num_reduced() floats: the trainable weights'
  // gradients (num_trainable(), the layout of params()' prefix), then the per-step
  // statistics layers contribute (see Layer::ReducedStatsSize), summed over replicas.
  float* grads();
  size_t num_reduced() const;
  const std::vector<ParamInfo>& param_infos() const;
  // Every layer takes the one before it (no "inputs" graph).
  bool sequential() const;
  // The model input's name ("input" unless the model names it).
  const std::string& input_name() const;

  // The step the next training Forward runs in (Dropout's and augmentation's random
  // streams). Defaults to step 0 of replica 0 of 1 with seed 0.
  void set_step_context(const StepContext& context);
  const StepContext& step_context() const;
  // After grads() has been all-reduced (summed over num_replicas): layers update their
  // state from the summed statistics (BatchNormalization's moving mean and variance).
  // A no-op for models without such layers.
  void ApplyReducedStats(int num_replicas);

  // input: [batch, input_shape...] floats. Returns logits [batch, output_size()],
  // valid until the next Forward. `training` keeps what Backward needs (the input is
  // copied, so the caller may reuse its buffer at once). Any batch size works; buffers
  // grow to the largest batch seen and are reused after that.
  const float* Forward(const float* input, int batch, bool training);
  // grad_logits: [batch, output_size()] for the batch of the last Forward, which must
  // have been a training one (an evaluation Forward in between reuses the buffers;
  // Backward then logs an error and zeroes grads()). Overwrites grads().
  void Backward(const float* grad_logits);
  // The same, calling on_ready(offset) (on this thread) as soon as grads()[offset..
  // num_params()) are final -- after each layer with parameters, last layer first, and
  // finally with 0 -- so their all-reduce can start while backward goes on. The
  // offsets only decrease. on_ready must not touch the model.
  void Backward(const float* grad_logits, const std::function<void(size_t)>& on_ready);

  // The model as a graph of device-neutral ops, one node per layer in a topological
  // order, with the weights' offsets: what an executor (executor/executor.h) runs on a
  // backend. The CPU executor behind Forward/Backward runs this same graph.
  const ops::Graph& graph() const;

  // Keras' summary table (nn/model_summary.h): layer, output shape, parameter count.
  std::string Summary() const;

 private:
  Model();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ringtrain::nn
