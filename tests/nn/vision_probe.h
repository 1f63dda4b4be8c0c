// The probe the vision layers' tests run a layer in, as tests/nn/layers_conv_test.cc's:
//   Dense "pre" (identity kernel, zero bias) -> Reshape -> the layer -> Flatten
// on flat inputs. "pre" hands the layer x unchanged; its kernel gradient x^T din and its
// bias gradient sum(din) pin the layer's input gradient.
#pragma once

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "nn/model.h"
#include "test_util.h"
#include "testing/tfjs_oracle.h"

namespace ringtrain::nn::vision_test {

constexpr char kLayer[] = "under_test";

inline int64_t Elements(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

inline std::vector<int64_t> WithBatch(int64_t batch, const std::vector<int64_t>& shape) {
  std::vector<int64_t> s{batch};
  s.insert(s.end(), shape.begin(), shape.end());
  return s;
}

inline const ParamInfo* FindParam(const Model& m, const std::string& name) {
  for (const ParamInfo& p : m.param_infos()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

// pre (identity) -> Reshape -> the layer (config with "type") -> Flatten.
inline std::unique_ptr<Model> BuildProbe(const nlohmann::json& layer_config, const std::vector<int64_t>& input) {
  const int64_t in = Elements(input);
  nlohmann::json layer = layer_config;
  layer["name"] = kLayer;
  nlohmann::json layers = {{{"type", "Dense"}, {"name", "pre"}, {"units", in}},
                           {{"type", "Reshape"}, {"target_shape", input}},
                           layer,
                           {{"type", "Flatten"}}};
  auto m = Model::FromJson({{"input_shape", {in}}, {"layers", layers}}, 1);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m).value() : nullptr;
}

// Random weights for the layer under test, identity for "pre". Returns the layer's
// weights by short name ("kernel").
inline std::map<std::string, std::vector<float>> SetWeights(Model& m, uint64_t seed) {
  std::map<std::string, std::vector<float>> mine;
  const std::string prefix = std::string(kLayer) + "/";
  for (const ParamInfo& p : m.param_infos()) {
    std::vector<float> v(p.count, 0.0f);
    if (p.name == "pre/kernel") {
      const int64_t n = p.shape[0];
      for (int64_t i = 0; i < n; ++i) v[i * n + i] = 1.0f;
    } else if (p.name.rfind(prefix, 0) == 0) {
      v = testing::RandomVector(p.count, seed++, 0.5f);
      mine[p.name.substr(prefix.size())] = v;
    }
    std::copy(v.begin(), v.end(), m.params() + p.offset);
  }
  return mine;
}

// Runs the probe on x with dy and compares the output, the layer's weight gradients
// (by short name) and its input gradient (through "pre") with the wanted ones, within
// AllClose's relative 1e-4. With `adjoint_din` (a linear layer whose reference input
// gradient is not to be trusted) the input gradient is checked as the forward's adjoint
// instead: <x, din> = <out, dy>, with x^T din from "pre".
inline void CompareProbe(Model& m, const std::vector<float>& x, int batch, const std::vector<float>& dy,
                         const std::vector<float>& want_out,
                         const std::map<std::string, std::vector<float>>& want_grads,
                         const std::vector<float>& want_din, bool adjoint_din = false) {
  using ::ringtrain::testing::AllClose;
  const float* out = m.Forward(x.data(), batch, /*training=*/true);
  EXPECT_TRUE(AllClose(testing::Slice(out, 0, want_out.size()), want_out)) << "forward output";
  double out_dot_dy = 0;
  for (size_t i = 0; i < want_out.size(); ++i) out_dot_dy += static_cast<double>(out[i]) * dy[i];
  m.Backward(dy.data());
  const std::string prefix = std::string(kLayer) + "/";
  size_t compared = 0;
  for (const ParamInfo& p : m.param_infos()) {
    if (p.name.rfind(prefix, 0) != 0) continue;
    auto it = want_grads.find(p.name.substr(prefix.size()));
    ASSERT_NE(it, want_grads.end()) << "no reference gradient for " << p.name;
    EXPECT_TRUE(AllClose(testing::Slice(m.grads(), p.offset, p.count), it->second)) << "gradient of " << p.name;
    ++compared;
  }
  EXPECT_EQ(compared, want_grads.size()) << "the reference has weights the layer lacks";
  const ParamInfo* pk = FindParam(m, "pre/kernel");
  const ParamInfo* pb = FindParam(m, "pre/bias");
  ASSERT_TRUE(pk != nullptr && pb != nullptr);
  const size_t in = static_cast<size_t>(pk->shape[0]);
  if (adjoint_din) {  // <x, din> = trace(x^T din)
    double trace = 0;
    for (size_t i = 0; i < in; ++i) trace += m.grads()[pk->offset + i * in + i];
    EXPECT_NEAR(trace, out_dot_dy, 1e-4 * std::max(1.0, std::abs(out_dot_dy))) << "input gradient (adjoint)";
    return;
  }
  std::vector<float> want_dk(in * in, 0.0f), want_db(in, 0.0f);
  for (size_t i = 0; i < in; ++i) {
    for (size_t j = 0; j < in; ++j) {
      double s = 0;
      for (int n = 0; n < batch; ++n) s += static_cast<double>(x[n * in + i]) * want_din[n * in + j];
      want_dk[i * in + j] = static_cast<float>(s);
    }
  }
  for (size_t j = 0; j < in; ++j) {
    double s = 0;
    for (int n = 0; n < batch; ++n) s += want_din[n * in + j];
    want_db[j] = static_cast<float>(s);
  }
  EXPECT_TRUE(AllClose(testing::Slice(m.grads(), pb->offset, pb->count), want_db)) << "input gradient (sum)";
  EXPECT_TRUE(AllClose(testing::Slice(m.grads(), pk->offset, pk->count), want_dk)) << "input gradient (x^T din)";
}

}  // namespace ringtrain::nn::vision_test
