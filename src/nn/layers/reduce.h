// reduce: the sum or mean over some per-example axes, what tf.math.reduce_sum and
// reduce_mean (and Keras 3's keras.ops.sum and mean) compute in a model's graph. The
// Keras JSON translation (nn/keras/keras_json_tfop.h) makes it from those ops; the
// compact form writes {"type": "reduce", "op": "sum" | "mean", "axis": [...], "keepdims": false}.
// axis: TensorFlow's numbering with the batch as axis 0 (1..rank, or -rank..-1); the batch
// itself is never reduced. Its op is kReduce; the CPU kernel is backends/cpu/reduce_kernel.cc.
//
// Threading: one thread at a time (the owning Model's). Errors: Create returns
// INVALID_ARGUMENT naming the field.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "nn/layer.h"

namespace ringtrain::nn {

class Reduce final : public Layer {
 public:
  static StatusOr<std::unique_ptr<Layer>> Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                 const std::string& ctx);

  const char* type() const override { return "reduce"; }
  const char* class_name() const override { return mean_ ? "ReduceMean" : "ReduceSum"; }
  ops::Op op() const override;

 private:
  Reduce(std::string name, const Shape& in, const Shape& out, std::vector<int> axes, bool mean);

  std::vector<int> axes_;  // per-example, 0-based, ascending
  bool mean_;
};

}  // namespace ringtrain::nn
