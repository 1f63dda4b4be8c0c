// The internal interface every layer implements. Not part of the public API: other
// libraries see nn/model.h (the trainer also this file's StepContext, which it hands
// to Model::set_step_context).
//
// A layer holds its Keras arguments, its shapes and weights (ParamSpecs), the per-step
// statistics it contributes to the all-reduce (ReducedStatsSize), whether it trains, and
// emits what it computes as one device-neutral op (op(), ops/op.h). It runs nowhere
// itself: the backends' kernels (backends/cpu, backends/cuda) compute the ops.
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

// The step a model's kernels run in (backends/kernel.h): Dropout's and augmentation's
// random streams, synchronized BatchNormalization's all-reduce.
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

  // Keras' layer.trainable: false freezes every weight of the layer (the model gives
  // them no gradient and leaves them out of the all-reduce). Layers whose op changes
  // with it (BatchNormalization runs in inference mode when frozen, as in Keras 2+) read
  // trainable(). Set by the model before it asks for ParamSpecs and op.
  void set_trainable(bool trainable) { trainable_ = trainable; }
  bool trainable() const { return trainable_; }

  virtual std::vector<ParamSpec> ParamSpecs() const { return {}; }

  // Floats of per-step statistics the layer's op contributes to the all-reduce (summed
  // over the replicas with the gradients), e.g. BatchNormalization's batch mean and
  // variance, from which every replica then updates the same moving statistics: Keras'
  // moving statistics under MultiWorkerMirroredStrategy are the replicas' mean (ON_READ,
  // MEAN aggregation), and their update is linear in the batch statistics. The model
  // places them in its gradient buffer after the gradients (ops::Node::first_stat).
  virtual size_t ReducedStatsSize() const { return 0; }

  // What the layer computes, device-neutral (ops/op.h): the model's graph (Model::graph)
  // holds one op per layer, which the executor plans on a backend.
  virtual ops::Op op() const = 0;

 private:
  std::string name_;
  std::vector<Shape> input_shapes_;
  Shape output_shape_;
  bool trainable_ = true;
};

}  // namespace ringtrain::nn
