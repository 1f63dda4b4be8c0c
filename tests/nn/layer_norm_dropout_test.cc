// LayerNormalization against a double-precision reference and central differences;
// Dropout's mask: its kept fraction, exact scaling, the same mask for the same (seed,
// step, replica, layer) and a different one otherwise, the gradient masked the same,
// rate 0 and inference as the identity; the refusals of both.
#include <cmath>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "nn/layers/dropout.h"
#include "nn/layers/layer_norm.h"
#include "nn/model.h"
#include "norm_test_util.h"

namespace ringtrain::nn {
namespace {

using nlohmann::json;
using testing::Bind;
using testing::RandomVector;


// ---- LayerNormalization ----------------------------------------------------------------------

void CheckLayerNormForward(const json& config, const Shape& in, size_t row) {
  auto b = Bind(LayerNorm::Create(config, "ln", in, "t"));
  ASSERT_NE(b, nullptr);
  b->Set("gamma", RandomVector(row, 1));
  b->Set("beta", RandomVector(row, 2));
  const int batch = 3;
  const std::vector<float> x = testing::Shifted(RandomVector(batch * b->layer->input_size(), 3), 2.0f, 1.5f);
  const float* out = b->Forward(x.data(), batch, false);
  for (size_t r = 0; r < x.size() / row; ++r) {
    double mean = 0, var = 0;
    for (size_t k = 0; k < row; ++k) mean += x[r * row + k];
    mean /= static_cast<double>(row);
    for (size_t k = 0; k < row; ++k) var += (x[r * row + k] - mean) * (x[r * row + k] - mean);
    var /= static_cast<double>(row);
    for (size_t k = 0; k < row; ++k) {
      const double want = b->param("gamma")[k] * (x[r * row + k] - mean) / std::sqrt(var + 0.001) + b->param("beta")[k];
      ASSERT_NEAR(out[r * row + k], want, 1e-5 * std::max(1.0, std::abs(want))) << r << " " << k;
    }
  }
}

TEST(LayerNormTest, NormalizesTheLastAxisOrTrailingAxes) {
  CheckLayerNormForward({{"type", "LayerNormalization"}}, {2, 3, 4}, 4);
  CheckLayerNormForward({{"type", "LayerNormalization"}, {"axis", {-2, -1}}}, {2, 3, 4}, 12);
  CheckLayerNormForward({{"type", "LayerNormalization"}, {"axis", {3, 1, 2}}}, {2, 3, 4}, 24);
  CheckLayerNormForward({{"type", "LayerNormalization"}, {"axis", 1}}, {6}, 6);
}

TEST(LayerNormTest, GradientsMatchCentralDifferences) {
  for (json config : {json{{"type", "LayerNormalization"}}, json{{"type", "LayerNormalization"}, {"axis", {-2, -1}}},
                      json{{"type", "LayerNormalization"}, {"center", false}, {"epsilon", 0.01}},
                      json{{"type", "LayerNormalization"}, {"scale", false}}}) {
    SCOPED_TRACE(config.dump());
    auto b = Bind(LayerNorm::Create(config, "ln", {2, 5}, "t"));
    ASSERT_NE(b, nullptr);
    if (b->layer->ParamSpecs()[0].suffix == "gamma") {
      b->Set("gamma", testing::Shifted(RandomVector(b->count(0), 4), 0.5f, 1.0f));
    }
    testing::CheckTrainingGradients(*b, testing::Shifted(RandomVector(3 * 10, 5), 1.5f, 0.5f), 3, 6);
  }
}

TEST(LayerNormTest, WeightsHaveTheNormalizedAxesShape) {
  auto m = Model::FromJson({{"input_shape", {2, 3, 4}},
                            {"layers", {{{"type", "layer_normalization"}, {"axis", {-2, -1}}},
                                        {{"type", "Flatten"}},
                                        {{"type", "Dense"}, {"units", 2}}}}},
                           1);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const auto& infos = (*m)->param_infos();
  EXPECT_EQ(infos[0].name, "layer_normalization/gamma");
  EXPECT_EQ(infos[0].shape, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(infos[1].name, "layer_normalization/beta");
  EXPECT_EQ((*m)->graph().nodes[0].op.kind, ops::OpKind::kLayerNorm);
}

TEST(LayerNormTest, BadArgumentsAreRefusedNamingThem) {
  const std::vector<std::pair<json, std::string>> cases = {
      {{{"axis", 1}}, "'axis'"},          // not trailing
      {{{"axis", {1, 3}}}, "'axis'"},     // not contiguous
      {{{"axis", {-1, 3}}}, "'axis'"},    // twice
      {{{"axis", 0}}, "'axis'"},          // the batch
      {{{"axis", 4}}, "'axis'"},          // out of range
      {{{"epsilon", -1}}, "'epsilon'"},
      {{{"rms_scaling", true}}, "'rms_scaling'"},
      {{{"gamma_initializer", "zeros"}}, "'gamma_initializer'"},
      {{{"beta_regularizer", "l2"}}, "'beta_regularizer'"},
      {{{"momentum", 0.9}}, "'momentum'"},
  };
  for (const auto& [args, field] : cases) {
    json l = args;
    l["type"] = "LayerNormalization";
    auto m = Model::FromJson({{"input_shape", {2, 3, 4}}, {"layers", {l, {{"type", "Flatten"}}, {{"type", "Dense"}, {"units", 2}}}}}, 1);
    ASSERT_FALSE(m.ok()) << args.dump();
    EXPECT_NE(m.status().message().find(field), std::string::npos) << m.status().ToString();
  }
}

// ---- Dropout -----------------------------------------------------------------------------------

std::unique_ptr<testing::BoundLayer> MakeDropout(const json& config, const std::string& name, int size) {
  return Bind(Dropout::Create(config, name, {size}, "t"));
}

std::vector<float> RunDropout(testing::BoundLayer& b, const std::vector<float>& x, int batch, uint64_t seed, int64_t step,
                       int replica) {
  b.ctx.seed = seed;
  b.ctx.step = step;
  b.ctx.replica = replica;
  const float* out = b.Forward(x.data(), batch, true);
  return std::vector<float>(out, out + x.size());
}

TEST(DropoutTest, KeepsAboutOneMinusRateAndScalesExactly) {
  const int n = 1000, batch = 100;
  for (double rate : {0.1, 0.3, 0.5, 0.9}) {
    SCOPED_TRACE(rate);
    auto b = MakeDropout({{"type", "Dropout"}, {"rate", rate}}, "dropout", n);
    ASSERT_NE(b, nullptr);
    const std::vector<float> x = testing::Shifted(RandomVector(n * batch, 1), 1.0f, 2.5f);  // no zeros
    const std::vector<float> out = RunDropout(*b, x, batch, 42, 3, 0);
    const float scale = 1.0f / static_cast<float>(1.0 - rate);
    size_t kept = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      if (out[i] == 0.0f) continue;
      ++kept;
      ASSERT_EQ(out[i], x[i] * scale) << i;
    }
    const double frac = static_cast<double>(kept) / static_cast<double>(x.size());
    EXPECT_NEAR(frac, 1.0 - rate, 0.01);  // 1e5 draws: the standard deviation is below 0.0016
  }
}

TEST(DropoutTest, MaskIsAFunctionOfSeedStepReplicaAndLayer) {
  const int n = 64;
  const std::vector<float> x = testing::Shifted(RandomVector(n * 4, 1), 1.0f, 2.5f);
  auto a = MakeDropout({{"type", "Dropout"}, {"rate", 0.5}}, "dropout", n);
  auto same = MakeDropout({{"type", "Dropout"}, {"rate", 0.5}}, "dropout", n);
  auto other = MakeDropout({{"type", "Dropout"}, {"rate", 0.5}}, "dropout_1", n);
  auto seeded = MakeDropout({{"type", "Dropout"}, {"rate", 0.5}, {"seed", 7}}, "dropout", n);
  ASSERT_TRUE(a && same && other && seeded);
  const std::vector<float> base = RunDropout(*a, x, 4, 42, 10, 1);
  EXPECT_EQ(RunDropout(*same, x, 4, 42, 10, 1), base) << "another instance, the same stream (a resumed run)";
  EXPECT_EQ(RunDropout(*a, x, 4, 42, 10, 1), base) << "the same layer again";
  EXPECT_NE(RunDropout(*a, x, 4, 42, 11, 1), base) << "the next step";
  EXPECT_NE(RunDropout(*a, x, 4, 42, 10, 0), base) << "another replica";
  EXPECT_NE(RunDropout(*a, x, 4, 43, 10, 1), base) << "another job seed";
  EXPECT_NE(RunDropout(*other, x, 4, 42, 10, 1), base) << "another layer";
  EXPECT_NE(RunDropout(*seeded, x, 4, 42, 10, 1), base) << "the layer's own seed";
  // A smaller batch draws the first elements of the same stream.
  const std::vector<float> half = RunDropout(*a, std::vector<float>(x.begin(), x.begin() + 2 * n), 2, 42, 10, 1);
  EXPECT_EQ(half, std::vector<float>(base.begin(), base.begin() + 2 * n));
}

TEST(DropoutTest, GradientIsMaskedTheSame) {
  const int n = 50;
  auto b = MakeDropout({{"type", "Dropout"}, {"rate", 0.4}}, "dropout", n);
  ASSERT_NE(b, nullptr);
  const std::vector<float> x = testing::Shifted(RandomVector(n * 3, 1), 1.0f, 2.5f), dy = RandomVector(n * 3, 2);
  const std::vector<float> out = RunDropout(*b, x, 3, 5, 0, 0);
  const float* din = b->Backward(dy.data(), true);
  ASSERT_NE(din, nullptr);
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(din[i], out[i] == 0.0f ? 0.0f : dy[i] * (1.0f / 0.6f)) << i;
  }
  EXPECT_EQ(b->Backward(dy.data(), false), nullptr);
}

TEST(DropoutTest, RateZeroAndInferenceAreTheIdentity) {
  const std::vector<float> x = RandomVector(20, 1), dy = RandomVector(20, 2);
  auto zero = MakeDropout({{"type", "Dropout"}, {"rate", 0}}, "dropout", 10);
  auto half = MakeDropout({{"type", "Dropout"}, {"rate", 0.5}, {"noise_shape", nullptr}, {"seed", nullptr}}, "d", 10);
  ASSERT_TRUE(zero && half);
  EXPECT_EQ(zero->Forward(x.data(), 2, true), x.data());
  EXPECT_EQ(zero->Backward(dy.data(), true), dy.data());
  EXPECT_EQ(half->Forward(x.data(), 2, false), x.data());
}

TEST(DropoutTest, ModelStepContextDrivesTheMask) {
  const json j = {{"input_shape", {30}},
                  {"layers", {{{"type", "Dense"}, {"units", 30}}, {{"type", "Dropout"}, {"rate", 0.5}},
                              {{"type", "Dense"}, {"units", 2}}}}};
  auto a = Model::FromJson(j, 3), b = Model::FromJson(j, 3);
  ASSERT_TRUE(a.ok() && b.ok());
  const std::vector<float> x = RandomVector(4 * 30, 1);
  StepContext ctx;
  ctx.seed = 9;
  ctx.step = 5;
  (*a)->set_step_context(ctx);
  (*b)->set_step_context(ctx);
  const float* oa = (*a)->Forward(x.data(), 4, true);
  const std::vector<float> va(oa, oa + 8);
  const float* ob = (*b)->Forward(x.data(), 4, true);
  EXPECT_EQ(va, std::vector<float>(ob, ob + 8));
  ctx.step = 6;
  (*b)->set_step_context(ctx);
  ob = (*b)->Forward(x.data(), 4, true);
  EXPECT_NE(va, std::vector<float>(ob, ob + 8));
  const float* ea = (*a)->Forward(x.data(), 4, false);
  const std::vector<float> eva(ea, ea + 8);
  const float* eb = (*b)->Forward(x.data(), 4, false);
  EXPECT_EQ(eva, std::vector<float>(eb, eb + 8)) << "inference is deterministic and mask-free";
}

TEST(DropoutTest, BadArgumentsAreRefusedNamingThem) {
  const std::vector<std::pair<json, std::string>> cases = {
      {json::object(), "'rate'"},
      {{{"rate", 1}}, "'rate'"},
      {{{"rate", -0.1}}, "'rate'"},
      {{{"rate", "half"}}, "'rate'"},
      {{{"rate", 0.5}, {"noise_shape", {1, 1}}}, "'noise_shape'"},
      {{{"rate", 0.5}, {"seed", "abc"}}, "'seed'"},
      {{{"rate", 0.5}, {"units", 3}}, "'units'"},
  };
  for (const auto& [args, field] : cases) {
    json l = args;
    l["type"] = "Dropout";
    auto m = Model::FromJson({{"input_shape", {4}}, {"layers", {l, {{"type", "Dense"}, {"units", 2}}}}}, 1);
    ASSERT_FALSE(m.ok()) << args.dump();
    EXPECT_NE(m.status().message().find(field), std::string::npos) << m.status().ToString();
  }
}

}  // namespace
}  // namespace ringtrain::nn
