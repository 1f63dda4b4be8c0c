// The internal interface every layer implements. Not part of the public API: the
// trainer and other libraries only see nn/model.h.
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
#include <string>
#include <utility>
#include <vector>

#include "nn/layer_desc.h"

namespace ringtrain::nn {

// Per-example shape, e.g. {26, 26, 32} for an NHWC activation.
using Shape = std::vector<int>;

int64_t NumElements(const Shape& shape);
// "(None, 26, 26, 32)", Keras' notation with the batch dimension first.
std::string ShapeWithBatch(const Shape& shape);
// "[26, 26, 32]".
std::string ShapeToString(const Shape& shape);

// A parameter tensor a layer asks the model to allocate and initialise.
struct ParamSpec {
  enum class Init { kGlorotUniform, kZeros };
  std::string suffix;          // "kernel" or "bias"; the full name is "<layer>/<suffix>"
  std::vector<int64_t> shape;  // row-major
  Init init = Init::kZeros;
  int64_t fan_in = 0;  // for Glorot
  int64_t fan_out = 0;
};

class Layer {
 public:
  Layer(std::string name, Shape input_shape, Shape output_shape)
      : name_(std::move(name)), input_shape_(std::move(input_shape)), output_shape_(std::move(output_shape)) {}
  virtual ~Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  // The job-file type ("conv2d") and Keras' class name ("Conv2D") for summaries.
  virtual const char* type() const = 0;
  virtual const char* class_name() const = 0;

  const std::string& name() const { return name_; }
  const Shape& input_shape() const { return input_shape_; }
  const Shape& output_shape() const { return output_shape_; }
  int64_t input_size() const { return NumElements(input_shape_); }
  int64_t output_size() const { return NumElements(output_shape_); }

  virtual std::vector<ParamSpec> ParamSpecs() const { return {}; }
  // Points the layer at its tensors inside the model's parameter and gradient
  // buffers, in ParamSpecs() order. The model owns the memory.
  virtual void BindParams(const std::vector<float*>& params, const std::vector<float*>& grads) {}

  // in: [batch, input_shape]. Returns [batch, output_shape]. With `training`, `in`
  // must stay valid until Backward (the model keeps it so).
  virtual const float* Forward(const float* in, int batch, bool training) = 0;
  // dout: [batch, output_shape] for the batch of the last training Forward.
  // Overwrites this layer's parameter gradients. Returns the input gradient when
  // `need_din`, otherwise nullptr (the first layers of a model skip that work).
  virtual const float* Backward(const float* dout, bool need_din) = 0;

  // This layer for another backend: kind, shapes, geometry, activation. The model
  // fills in the name, the parameter offsets and need_input_grad.
  virtual LayerDesc Describe() const = 0;

 private:
  std::string name_;
  Shape input_shape_;
  Shape output_shape_;
};

// Grows `buf` to at least n floats; never shrinks, so steady-state calls do not allocate.
template <typename T>
inline T* EnsureSize(std::vector<T>& buf, size_t n) {
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

}  // namespace ringtrain::nn
