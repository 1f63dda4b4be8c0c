// Glorot-uniform initialisation: bounds, determinism, seed sensitivity, zero biases.
#include <cmath>
#include <cstring>
#include <map>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "nn/initializers/init.h"
#include "nn/model.h"

namespace ringtrain::nn {
namespace {

const char* kModel = R"({"input_shape": [10, 10], "layers": [
    {"type": "reshape", "target_shape": [10, 10, 1]},
    {"type": "conv2d", "filters": 8, "kernel_size": 3, "activation": "relu"},
    {"type": "flatten"},
    {"type": "dense", "units": 16, "activation": "relu"},
    {"type": "dense", "units": 4}]})";

std::unique_ptr<Model> Build(uint64_t seed, const char* text = kModel) {
  auto m = Model::FromJson(nlohmann::json::parse(text), seed);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return std::move(m).value();
}

TEST(InitTest, UniformIsInUnitIntervalAndDeterministic) {
  Rng a(5, 0), b(5, 0), c(5, 1);
  int differ = 0;
  for (int i = 0; i < 1000; ++i) {
    const float u = a.Uniform();
    EXPECT_GE(u, 0.0f);
    EXPECT_LT(u, 1.0f);
    EXPECT_EQ(u, b.Uniform());
    differ += u != c.Uniform();
  }
  EXPECT_GT(differ, 990);  // another stream is another sequence
}

TEST(InitTest, GlorotBoundsAndZeroBiases) {
  auto m = Build(7);
  // conv: fan_in 3*3*1, fan_out 3*3*8; dense: fan_in 8*8*8, fan_out 16; dense_1: 16, 4.
  const std::map<std::string, double> limits = {{"conv2d/kernel", std::sqrt(6.0 / (9 + 72))},
                                                {"dense/kernel", std::sqrt(6.0 / (512 + 16))},
                                                {"dense_1/kernel", std::sqrt(6.0 / (16 + 4))}};
  for (const ParamInfo& info : m->param_infos()) {
    const float* p = m->params() + info.offset;
    if (info.name.ends_with("/bias")) {
      for (size_t i = 0; i < info.count; ++i) EXPECT_EQ(p[i], 0.0f) << info.name;
      continue;
    }
    const float limit = static_cast<float>(limits.at(info.name));
    double sum = 0, max_abs = 0;
    for (size_t i = 0; i < info.count; ++i) {
      ASSERT_LE(std::abs(p[i]), limit) << info.name << "[" << i << "]";
      sum += p[i];
      max_abs = std::max(max_abs, static_cast<double>(std::abs(p[i])));
    }
    // Spread over the whole interval and roughly centred.
    EXPECT_GT(max_abs, 0.8 * limit) << info.name;
    EXPECT_LT(std::abs(sum / info.count), 0.2 * limit) << info.name;
  }
}

TEST(InitTest, SameSeedSameBitsOtherSeedOtherValues) {
  auto a = Build(7), b = Build(7), c = Build(8);
  ASSERT_EQ(a->num_params(), c->num_params());
  EXPECT_EQ(std::memcmp(a->params(), b->params(), a->num_params() * sizeof(float)), 0);
  size_t differ = 0;
  for (size_t i = 0; i < a->num_params(); ++i) differ += a->params()[i] != c->params()[i];
  EXPECT_GT(differ, a->num_params() / 2);  // every kernel value differs; biases are zero in both
}

TEST(InitTest, TensorStreamsDoNotShiftWhenLaterLayersChange) {
  // Growing the last layer leaves the earlier tensors' values untouched.
  auto a = Build(3);
  std::string bigger = kModel;
  bigger.replace(bigger.find("\"units\": 4"), 10, "\"units\": 9");
  auto b = Build(3, bigger.c_str());
  const ParamInfo& conv = a->param_infos()[0];
  const ParamInfo& dense = a->param_infos()[2];
  EXPECT_EQ(std::memcmp(a->params(), b->params(), (dense.offset + dense.count) * sizeof(float)), 0);
  EXPECT_EQ(conv.name, "conv2d/kernel");
}

}  // namespace
}  // namespace ringtrain::nn
