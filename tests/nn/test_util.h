// Helpers shared by the nn tests: deterministic random fills and a central-difference
// gradient check for single layers.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "nn/initializers/init.h"
#include "nn/layer.h"
#include "nn/optimizers/optimizer.h"

namespace ringtrain::nn::testing {

// data[offset, offset + count) as a vector.
inline std::vector<float> Slice(const float* data, size_t offset, size_t count) {
  return std::vector<float>(data + offset, data + offset + count);
}

// v * scale + offset, element by element.
inline std::vector<float> Shifted(std::vector<float> v, float scale, float offset) {
  for (float& x : v) x = x * scale + offset;
  return v;
}

// The optimizer `j` describes; null (and a test failure naming `j`) if it is refused.
inline std::unique_ptr<Optimizer> MakeOptimizer(const nlohmann::json& j) {
  auto o = Optimizer::FromJson(j);
  EXPECT_TRUE(o.ok()) << j.dump() << ": " << o.status().ToString();
  return o.ok() ? std::move(o).value() : nullptr;
}

inline std::vector<float> RandomVector(size_t n, uint64_t seed, float scale = 1.0f) {
  Rng rng(seed, 0);
  std::vector<float> v(n);
  for (float& x : v) x = (2.0f * rng.Uniform() - 1.0f) * scale;
  return v;
}

// sum(out * r) in double, the scalar the gradient checks differentiate.
inline double Dot(const float* out, const std::vector<float>& r) {
  double s = 0;
  for (size_t i = 0; i < r.size(); ++i) s += static_cast<double>(out[i]) * r[i];
  return s;
}

inline void ExpectClose(double analytic, double numeric, const std::string& what) {
  EXPECT_NEAR(analytic, numeric, 1e-2 + 1e-2 * std::abs(numeric)) << what;
}

// Checks a layer's parameter and input gradients against central differences of
// L = sum(Forward(x) * r) with random parameters, input and r.
inline void CheckLayerGradients(Layer& layer, int batch, uint64_t seed, double eps = 1e-3) {
  std::vector<ParamSpec> specs = layer.ParamSpecs();
  std::vector<std::vector<float>> params, grads;
  std::vector<float*> p, g;
  for (size_t i = 0; i < specs.size(); ++i) {
    size_t n = 1;
    for (int64_t d : specs[i].shape) n *= static_cast<size_t>(d);
    params.push_back(RandomVector(n, seed + 10 + i, 0.5f));
    grads.emplace_back(n, 123.0f);  // garbage: Backward must overwrite it
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    p.push_back(params[i].data());
    g.push_back(grads[i].data());
  }
  layer.BindParams(p, g);
  std::vector<float> x = RandomVector(batch * layer.input_size(), seed + 1);
  const std::vector<float> r = RandomVector(batch * layer.output_size(), seed + 2);

  layer.Forward(x.data(), batch, true);
  const float* din_ptr = layer.Backward(r.data(), true);
  ASSERT_NE(din_ptr, nullptr);
  const std::vector<float> din(din_ptr, din_ptr + x.size());
  const std::vector<std::vector<float>> analytic = grads;

  auto loss = [&]() { return Dot(layer.Forward(x.data(), batch, false), r); };
  auto numeric = [&](float* v) {
    const float saved = *v;
    *v = saved + static_cast<float>(eps);
    const double up = loss();
    *v = saved - static_cast<float>(eps);
    const double down = loss();
    *v = saved;
    return (up - down) / (2 * eps);
  };
  for (size_t t = 0; t < params.size(); ++t) {
    for (size_t i = 0; i < params[t].size(); ++i) {
      ExpectClose(analytic[t][i], numeric(&params[t][i]),
                  layer.name() + "/" + specs[t].suffix + "[" + std::to_string(i) + "]");
    }
  }
  for (size_t i = 0; i < x.size(); ++i) {
    ExpectClose(din[i], numeric(&x[i]), layer.name() + " input[" + std::to_string(i) + "]");
  }
}

}  // namespace ringtrain::nn::testing
