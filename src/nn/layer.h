// The internal interface every layer implements. Not part of the public API: other
// libraries see nn/model.h (the trainer also this file's StepContext, which it hands
// to Model::set_step_context).
//
// Memory: a layer owns its output and input-gradient buffers and grows them to the
// largest batch seen, so Forward/Backward allocate nothing once a batch size has
// been used. A pointer a layer returns stays valid until that layer's next
// Forward/Backward. Layers that only relabel the shape (reshape, flatten) return
// their input pointer unchanged.
//
// Threading: one thread at a time, like the Model that owns the layers.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "nn/initializers/initializers.h"
#include "backends/kernel.h"
#include "nn/regularizers/regularizer.h"
#include "ops/graph.h"
#include "ops/op.h"

namespace ringtrain::nn {

// Per-example shape, e.g. {26, 26, 32} for an NHWC activation.
using Shape = ops::Shape;
using ops::NumElements;
// "(None, 26, 26, 32)", Keras' notation with the batch dimension first.
std::string ShapeWithBatch(const Shape& shape);
// "[26, 26, 32]".
std::string ShapeToString(const Shape& shape);

// A parameter tensor a layer asks the model to allocate and initialise.
struct ParamSpec {
  // Keras' initializer (nn/initializers/initializers.h); ParamSpec::Init::kZeros, kOnes and
  // kGlorotUniform name the common ones.
  using Init = Initializer;
  ParamSpec() = default;
  ParamSpec(std::string suffix, std::vector<int64_t> shape, Init init, int64_t fan_in, int64_t fan_out,
            bool trainable = true)
      : suffix(std::move(suffix)),
        shape(std::move(shape)),
        init(init),
        fan_in(fan_in),
        fan_out(fan_out),
        trainable(trainable) {}
  std::string suffix;          // Keras' weight name: "kernel", "bias", "gamma", "moving_mean"
  std::vector<int64_t> shape;  // row-major
  Init init = Init::kZeros;
  int64_t fan_in = 0;  // Keras' fans, for the variance-scaling initializers
  int64_t fan_out = 0;
  // false for state a layer keeps but no gradient updates (BatchNormalization's moving
  // statistics): Keras' non-trainable weights. A frozen layer's weights all count as
  // non-trainable, whatever this says.
  bool trainable = true;
  // Keras' kernel_regularizer / bias_regularizer: its penalty joins the loss and its
  // gradient the weight's (nn/model_regularization.h). None by default.
  Regularizer regularizer;
};

// The step a layer runs in (backends/kernel.h): Dropout's and augmentation's random
// streams, synchronized BatchNormalization's all-reduce.
using StepContext = backends::StepContext;

class Layer {
 public:
  Layer(std::string name, Shape input_shape, Shape output_shape)
      : name_(std::move(name)), input_shapes_{std::move(input_shape)}, output_shape_(std::move(output_shape)) {}
  // A layer of several inputs (Add, Concatenate, Multiply).
  Layer(std::string name, std::vector<Shape> input_shapes, Shape output_shape)
      : name_(std::move(name)), input_shapes_(std::move(input_shapes)), output_shape_(std::move(output_shape)) {}
  virtual ~Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  // The job-file type ("conv2d") and Keras' class name ("Conv2D") for summaries.
  virtual const char* type() const = 0;
  virtual const char* class_name() const = 0;

  const std::string& name() const { return name_; }
  const Shape& input_shape() const { return input_shapes_[0]; }
  const std::vector<Shape>& input_shapes() const { return input_shapes_; }
  int num_inputs() const { return static_cast<int>(input_shapes_.size()); }
  const Shape& output_shape() const { return output_shape_; }
  int64_t input_size() const { return NumElements(input_shapes_[0]); }
  int64_t output_size() const { return NumElements(output_shape_); }

  // Keras' layer.trainable: false freezes every weight of the layer (the model binds no
  // gradient for them and leaves them out of the all-reduce). Layers whose behaviour
  // changes with it (BatchNormalization runs in inference mode when frozen, as in
  // Keras 2+) read trainable(). Set by the model before BindParams.
  void set_trainable(bool trainable) { trainable_ = trainable; }
  bool trainable() const { return trainable_; }

  // The step the next Forward runs in; the model points every layer at its own
  // context, which stays valid for the model's lifetime.
  void set_context(const StepContext* context) { context_ = context; }
  const StepContext& context() const { return *context_; }

  virtual std::vector<ParamSpec> ParamSpecs() const { return {}; }
  // Points the layer at its tensors inside the model's parameter and gradient
  // buffers, in ParamSpecs() order. The model owns the memory. A weight that is not
  // trainable (ParamSpec::trainable false, or the layer frozen) gets a null gradient:
  // Backward must not compute or write one.
  virtual void BindParams(const std::vector<float*>& params, const std::vector<float*>& grads) {}

  // Floats of per-step statistics the layer contributes to the all-reduce (summed over
  // the replicas with the gradients), e.g. BatchNormalization's batch mean and variance,
  // from which every replica then updates the same moving statistics: Keras' moving
  // statistics under MultiWorkerMirroredStrategy are the replicas' mean (ON_READ, MEAN
  // aggregation), and their update is linear in the batch statistics.
  virtual size_t ReducedStatsSize() const { return 0; }
  // Where the layer writes them during a training Forward (inside the model's gradient
  // buffer, after the gradients).
  virtual void BindReducedStats(float* stats) {}
  // After the all-reduce: `sums` holds the replicas' sums of the statistics.
  virtual void ApplyReducedStats(const float* sums, int num_replicas) {}

  // in: [batch, input_shape]. Returns [batch, output_shape]. With `training`, `in`
  // must stay valid until Backward (the model keeps it so).
  virtual const float* Forward(const float* in, int batch, bool training) = 0;
  // dout: [batch, output_shape] for the batch of the last training Forward.
  // Overwrites this layer's parameter gradients. Returns the input gradient when
  // `need_din`, otherwise nullptr (the first layers of a model skip that work).
  virtual const float* Backward(const float* dout, bool need_din) = 0;

  // Layers of several inputs override these two; the defaults call the one-input pair.
  // in[k]: [batch, input_shapes()[k]]. Backward writes din[k] (nullptr where
  // !need_din[k]); each pointer stays valid until this layer's next Forward/Backward.
  virtual const float* ForwardInputs(const std::vector<const float*>& in, int batch, bool training) {
    return Forward(in[0], batch, training);
  }
  virtual void BackwardInputs(const float* dout, const std::vector<bool>& need_din, std::vector<const float*>* din) {
    (*din)[0] = Backward(dout, need_din[0]);
  }

  // The CPU passes' fusions, set up once by the executor's fusion pass (executor/fusion.h)
  // through the layer's CPU kernel (nn/layer_kernel.h), before the first Forward.
  //
  // A relu into the layer before it: when a layer's output feeds nothing but a plain
  // relu, the pass asks the layer to take the relu over: AbsorbRelu returns true if it
  // did, and from then on the layer's output is relu'd and its Backward receives the
  // relu's output gradient, which it masks where its output is not > 0. The relu layer is
  // then told to PassThrough: its Forward returns its input and its Backward its output
  // gradient. The bits are those of the unfused pair; two passes over memory fewer each way.
  virtual bool AbsorbRelu() { return false; }
  virtual void PassThrough() {}
  // After AbsorbRelu: the output of the last training Forward (the relu's gradient
  // passes where it is > 0). Where the relu's output feeds two layers, the executor sums
  // their gradients and masks the sum in one pass, then calls GradientMasked: the next
  // Backward then takes its output gradient as already masked (masking again would give
  // the same bits; it only saves a pass). Layers that absorb a relu implement both.
  virtual const float* ReluGradientMask() const { return nullptr; }
  virtual void GradientMasked() {}

  // A layer into the Add it feeds (after relu fusion): a layer whose output feeds nothing
  // but an Add of two inputs may leave that output to the Add: DeferToAdd returns true if
  // it does, and from then on its Forward returns null and the Add calls
  // AddOutputTo(other, relu, out), which writes out = this layer's output + other (relu'd
  // when asked) in one pass, with the bits of the two passes. The Add learns which input
  // it is through TakeDeferredInput. The layer's Backward is unchanged (it must not need
  // its own output).
  virtual bool DeferToAdd() { return false; }
  virtual void AddOutputTo(const float* other, bool relu, float* out) const {}
  virtual void TakeDeferredInput(size_t k, const Layer* producer) {}

  // What the layer computes, device-neutral (ops/op.h): the model's graph (Model::graph)
  // holds one op per layer, which the executor plans on a backend.
  virtual ops::Op op() const = 0;
  // For the memory check (nn/model_memory.h) of a layer without a cost model of its own there:
  // the floats per example its CPU passes keep besides its output and its input gradients
  // (pre-activation copies, masks, kernel scratch), with the backward pass's needs when
  // `training`. An upper bound; 0 when it keeps nothing that grows with the batch.
  virtual uint64_t ScratchFloatsPerExample(bool training) const {
    (void)training;
    return 0;
  }

 private:
  std::string name_;
  std::vector<Shape> input_shapes_;
  Shape output_shape_;
  bool trainable_ = true;
  const StepContext* context_ = nullptr;
};

// Grows `buf` to at least n floats; never shrinks, so steady-state calls do not allocate.
template <typename T>
inline T* EnsureSize(std::vector<T>& buf, size_t n) {
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

}  // namespace ringtrain::nn
