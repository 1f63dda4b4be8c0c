// max_pooling2d: Keras MaxPooling2D over NHWC input. Forward remembers which input
// cell won each window; Backward routes the gradient there (ties go to the first
// cell in row-major window order, padding cells never win).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "nn/layer.h"
#include "nn/layers/window.h"

namespace ringtrain::nn {

class MaxPool2D final : public Layer {
 public:
  // Fields: pool_size (2), strides (= pool_size), padding ("valid"). `in` must be [H, W, C].
  static StatusOr<std::unique_ptr<Layer>> Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                 const std::string& ctx);

  const char* type() const override { return "max_pooling2d"; }
  const char* class_name() const override { return "MaxPooling2D"; }
  const float* Forward(const float* in, int batch, bool training) override;
  const float* Backward(const float* dout, bool need_din) override;
  ops::Op op() const override;

 private:
  MaxPool2D(std::string name, const Shape& in, const Window2D& g);

  Window2D g_;
  kernels::Window kg_;
  const float* x_ = nullptr;  // the input of the last training Forward
  int batch_ = 0;
  std::vector<float> out_, din_;
};

}  // namespace ringtrain::nn
