// Keras' merge layers, over two or more inputs:
//   Add          y = x0 + x1 + ...  (same shapes; Keras' broadcasting is not supported)
//   Multiply     y = x0 * x1 * ...  (same shapes)
//   Concatenate  along `axis` (-1, Keras' default; any axis but the batch); the inputs'
//                shapes agree except along it
//   Subtract     y = x0 - x1  (exactly two inputs of one shape)
//   Average      y = (x0 + x1 + ...) / n, summed left to right, then divided (Keras 3's ops.divide)
//   Maximum      y = max(x0, x1, ...), Minimum y = min(...): the gradient goes to the first
//                input holding the extreme, as TensorFlow's (and tfjs') gradient of
//                maximum(a, b) (to a where a >= b) applied left to right
// No weights. Their ops are kAdd, kMultiply, kConcatenate (num_inputs, axis), kSubtract,
// kAverage, kMaximum and kMinimum; the CPU backend's kernel is backends/cpu/merge_kernels.cc.
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
  static StatusOr<std::unique_ptr<Layer>> CreateSubtract(const nlohmann::json& j, std::string name,
                                                         const std::vector<Shape>& in, const std::string& ctx);
  static StatusOr<std::unique_ptr<Layer>> CreateAverage(const nlohmann::json& j, std::string name,
                                                        const std::vector<Shape>& in, const std::string& ctx);
  static StatusOr<std::unique_ptr<Layer>> CreateMaximum(const nlohmann::json& j, std::string name,
                                                        const std::vector<Shape>& in, const std::string& ctx);
  static StatusOr<std::unique_ptr<Layer>> CreateMinimum(const nlohmann::json& j, std::string name,
                                                        const std::vector<Shape>& in, const std::string& ctx);

  const char* type() const override;
  const char* class_name() const override;
  ops::Op op() const override;

 private:
  enum class Op { kAdd, kMultiply, kConcatenate, kSubtract, kAverage, kMaximum, kMinimum };
  // The element-wise merges of inputs of one shape (all but Concatenate).
  static StatusOr<std::unique_ptr<Layer>> CreateElementwise(Op op, const char* cls, const nlohmann::json& j,
                                                            std::string name, const std::vector<Shape>& in,
                                                            const std::string& ctx);
  MergeLayer(Op op, std::string name, const std::vector<Shape>& in, Shape out, int axis);

  Op op_;
  int axis_;  // Concatenate: the per-example axis
};

}  // namespace ringtrain::nn
