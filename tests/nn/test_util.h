// Helpers shared by the nn tests: deterministic random fills and a central-difference
// gradient check for single layers (run through their CPU kernels: cpu_run.h).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "nn/initializers/init.h"
#include "nn/layer.h"
#include "nn/optimizers/optimizer.h"
#include "cpu_run.h"

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

// Checks a layer's parameter and input gradients, run as the model runs it on the CPU
// (CpuRun), against central differences of L = sum(Forward(x) * r) with random
// parameters, input and r.
inline void CheckLayerGradients(Layer& layer, int batch, uint64_t seed, double eps = 1e-3) {
  CpuRun run(layer);
  for (size_t i = 0; i < run.num_weights(); ++i) {
    const std::vector<float> v = RandomVector(run.count(i), seed + 10 + i, 0.5f);
    std::copy(v.begin(), v.end(), run.param(i));
  }
  std::vector<float> x = RandomVector(batch * layer.input_size(), seed + 1);
  const std::vector<float> r = RandomVector(batch * layer.output_size(), seed + 2);

  run.Forward(x.data(), batch, true);
  const float* din_ptr = run.Backward(r.data(), true);
  ASSERT_NE(din_ptr, nullptr);
  const std::vector<float> din(din_ptr, din_ptr + x.size());
  std::vector<std::vector<float>> analytic;
  for (size_t i = 0; i < run.num_weights(); ++i) analytic.push_back(run.grad_values(i));

  auto loss = [&]() { return Dot(run.Forward(x.data(), batch, false), r); };
  auto numeric = [&](float* v) {
    const float saved = *v;
    *v = saved + static_cast<float>(eps);
    const double up = loss();
    *v = saved - static_cast<float>(eps);
    const double down = loss();
    *v = saved;
    return (up - down) / (2 * eps);
  };
  const std::vector<ParamSpec> specs = layer.ParamSpecs();
  for (size_t t = 0; t < run.num_weights(); ++t) {
    for (size_t i = 0; i < run.count(t); ++i) {
      ExpectClose(analytic[t][i], numeric(run.param(t) + i),
                  layer.name() + "/" + specs[t].suffix + "[" + std::to_string(i) + "]");
    }
  }
  for (size_t i = 0; i < x.size(); ++i) {
    ExpectClose(din[i], numeric(&x[i]), layer.name() + " input[" + std::to_string(i) + "]");
  }
}

}  // namespace ringtrain::nn::testing
