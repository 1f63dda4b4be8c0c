// permute: Keras Permute: the per-example axes reordered. dims (1-based, as Keras) names,
// for each output axis, the input axis it takes: [2, 1] swaps the two axes of a matrix,
// [3, 1, 2] makes [H, W, C] into [C, H, W]. Its op is kPermute (permutation, 0-based);
// the CPU kernel is backends/cpu/permute_kernel.cc.
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

class Permute final : public Layer {
 public:
  // Fields: dims (required): a permutation of 1..rank, rank the input's per-example rank.
  static StatusOr<std::unique_ptr<Layer>> Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                 const std::string& ctx);

  const char* type() const override { return "permute"; }
  const char* class_name() const override { return "Permute"; }
  ops::Op op() const override;

 private:
  Permute(std::string name, const Shape& in, const Shape& out, std::vector<int> permutation);

  std::vector<int> permutation_;  // 0-based
};

}  // namespace ringtrain::nn
