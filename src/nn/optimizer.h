// Optimizers with Keras' defaults and update rules.
//   {"type": "sgd", "learning_rate": 0.01, "momentum": 0.0, "nesterov": false}
//   {"type": "adam", "learning_rate": 0.001, "beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7}
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace ringtrain::nn {

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // One update of params[0..n) with grads[0..n). Allocates its state on first use.
  virtual void Apply(float* params, const float* grads, size_t n) = 0;
  virtual double learning_rate() const = 0;
  virtual void set_learning_rate(double lr) = 0;
  virtual int64_t iterations() const = 0;  // updates applied so far
  virtual std::string name() const = 0;
  // Named state buffers (e.g. "m", "v"; "momentum") for checkpoints; may be empty before the first Apply.
  virtual std::vector<std::pair<std::string, std::vector<float>*>> state() = 0;
  virtual void set_iterations(int64_t it) = 0;
  // How many floats of state each parameter gets (Adam 2, SGD with momentum 1, plain
  // SGD 0), for memory estimates before the state is allocated.
  virtual int state_floats_per_param() const = 0;

  // Errors name the field: "optimizer: 'learning_rate' must be a positive number".
  static StatusOr<std::unique_ptr<Optimizer>> FromJson(const nlohmann::json& optimizer_json);
};

}  // namespace ringtrain::nn
