// reshape and flatten: both only relabel the per-example shape of an NHWC buffer: their
// op is kView, whose kernels pass pointers through in both directions and own no memory.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "nn/layer.h"

namespace ringtrain::nn {

class ShapeView final : public Layer {
 public:
  // reshape: "target_shape" (positive ints, at most one -1 inferred like Keras), whose
  // product must equal the input's.
  static StatusOr<std::unique_ptr<Layer>> CreateReshape(const nlohmann::json& j, std::string name, const Shape& in,
                                                        const std::string& ctx);
  // flatten: no fields besides "type" and "name".
  static StatusOr<std::unique_ptr<Layer>> CreateFlatten(const nlohmann::json& j, std::string name, const Shape& in,
                                                        const std::string& ctx);

  const char* type() const override { return flatten_ ? "flatten" : "reshape"; }
  const char* class_name() const override { return flatten_ ? "Flatten" : "Reshape"; }
  ops::Op op() const override { return ops::Op{}; }  // kView

 private:
  ShapeView(std::string name, const Shape& in, const Shape& out, bool flatten)
      : Layer(std::move(name), in, out), flatten_(flatten) {}
  bool flatten_;
};

}  // namespace ringtrain::nn
