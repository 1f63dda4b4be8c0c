// What the whole-model TensorFlow.js tests share: every weight of a model against the
// tensors the oracle returned for it by full name ("dense/kernel"), within AllClose.
#pragma once

#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "nn/model.h"
#include "test_util.h"
#include "testing/tfjs_oracle.h"

namespace ringtrain::nn::testing {

// values: the model's buffer laid out as params() (params() itself, or grads() for the
// trainable weights); oracle: {name: tensor} (tfjs' "weight_grads" or "weights").
inline void ExpectWeightsMatchTfjs(const Model& m, const float* values, const nlohmann::json& oracle,
                                   const std::string& what) {
  for (const ParamInfo& p : m.param_infos()) {
    ASSERT_TRUE(oracle.contains(p.name)) << what << ": tfjs gave nothing for " << p.name;
    EXPECT_TRUE(::ringtrain::testing::AllClose(Slice(values, p.offset, p.count),
                                               ::ringtrain::testing::TfjsValues(oracle[p.name], p.shape)))
        << what << " of " << p.name;
  }
}

}  // namespace ringtrain::nn::testing
