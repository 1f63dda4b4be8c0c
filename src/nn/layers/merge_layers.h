// Keras' merge layers, over two or more inputs:
//   Add          y = x0 + x1 + ...  (same shapes; Keras' broadcasting is not supported)
//   Multiply     y = x0 * x1 * ...  (same shapes)
//   Concatenate  along `axis` (-1, Keras' default; any axis but the batch); the inputs'
//                shapes agree except along it
// No weights. Backward writes an input gradient per input that needs one (Add hands its
// output gradient itself to every input: the same pointer, no copy). One thread
// at a time; nothing allocated after the first batch size.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "nn/layer.h"

namespace ringtrain::nn {

class MergeLayer final : public Layer {
 public:
  static StatusOr<std::unique_ptr<Layer>> CreateAdd(const nlohmann::json& j, std::string name,
                                                    const std::vector<Shape>& in, const std::string& ctx);
  static StatusOr<std::unique_ptr<Layer>> CreateMultiply(const nlohmann::json& j, std::string name,
                                                         const std::vector<Shape>& in, const std::string& ctx);
  static StatusOr<std::unique_ptr<Layer>> CreateConcatenate(const nlohmann::json& j, std::string name,
                                                            const std::vector<Shape>& in, const std::string& ctx);

  const char* type() const override;
  const char* class_name() const override;
  // A one-input call cannot happen (the factories require two inputs or more).
  const float* Forward(const float* in, int batch, bool training) override;
  const float* Backward(const float* dout, bool need_din) override;
  const float* ForwardInputs(const std::vector<const float*>& in, int batch, bool training) override;
  void BackwardInputs(const float* dout, const std::vector<bool>& need_din, std::vector<const float*>* din) override;
  ops::Op op() const override;
  // Add takes a following relu over (Layer::AbsorbRelu); the others do not.
  bool AbsorbRelu() override {
    fused_relu_ = op_ == Op::kAdd;
    return fused_relu_;
  }
  const float* ReluGradientMask() const override { return fused_relu_ ? out_.data() : nullptr; }
  void GradientMasked() override { masked_ = fused_relu_; }
  void TakeDeferredInput(size_t k, const Layer* producer) override {
    deferred_input_ = k;
    producer_ = producer;
  }

 private:
  enum class Op { kAdd, kMultiply, kConcatenate };
  MergeLayer(Op op, std::string name, const std::vector<Shape>& in, Shape out, int axis);

  Op op_;
  int axis_;                    // Concatenate: the per-example axis
  size_t outer_ = 1;            // Concatenate: elements per example before the axis
  std::vector<size_t> chunks_;  // Concatenate: per input, elements from the axis on

  std::vector<const float*> x_;  // the inputs of the last training Forward
  int batch_ = 0;
  bool fused_relu_ = false;
  bool masked_ = false;  // the next backward's output gradient is already masked (Layer::GradientMasked)
  // Add of two: the input whose producer left its output to this layer (Layer::DeferToAdd).
  size_t deferred_input_ = 0;
  const Layer* producer_ = nullptr;
  std::vector<float> out_;
  std::vector<std::vector<float>> din_;
};

}  // namespace ringtrain::nn
