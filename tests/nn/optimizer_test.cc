// Optimizers against Keras' update rules, worked by hand or in double.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "nn/optimizer.h"

namespace ringtrain::nn {
namespace {

using nlohmann::json;

std::unique_ptr<Optimizer> Make(const json& j) {
  auto o = Optimizer::FromJson(j);
  EXPECT_TRUE(o.ok()) << o.status().ToString();
  return o.ok() ? std::move(o).value() : nullptr;
}

TEST(SgdTest, PlainStepAndDefaults) {
  auto opt = Make(json{{"type", "sgd"}});
  ASSERT_NE(opt, nullptr);
  EXPECT_DOUBLE_EQ(opt->learning_rate(), 0.01);
  EXPECT_EQ(opt->name(), "sgd");
  EXPECT_TRUE(opt->state().empty());  // no momentum, no state (as in Keras)
  opt->set_learning_rate(0.1);
  float w[2] = {1.0f, 2.0f};
  const float g[2] = {0.5f, -1.0f};
  opt->Apply(w, g, 2);
  EXPECT_FLOAT_EQ(w[0], 0.95f);
  EXPECT_FLOAT_EQ(w[1], 2.1f);
  EXPECT_EQ(opt->iterations(), 1);
}

TEST(SgdTest, MomentumTwoSteps) {
  auto opt = Make(json{{"type", "SGD"}, {"learning_rate", 0.1}, {"momentum", 0.9}});
  ASSERT_NE(opt, nullptr);
  float w[1] = {1.0f};
  const float g[1] = {1.0f};
  opt->Apply(w, g, 1);  // v = -0.1, w = 0.9
  EXPECT_NEAR(w[0], 0.9f, 1e-6);
  opt->Apply(w, g, 1);  // v = 0.9 * -0.1 - 0.1 = -0.19, w = 0.71
  EXPECT_NEAR(w[0], 0.71f, 1e-6);
  auto state = opt->state();
  ASSERT_EQ(state.size(), 1u);
  EXPECT_EQ(state[0].first, "momentum");
  ASSERT_EQ(state[0].second->size(), 1u);
  EXPECT_NEAR((*state[0].second)[0], -0.19f, 1e-6);
}

TEST(SgdTest, NesterovTwoSteps) {
  auto opt = Make(json{{"type", "sgd"}, {"learning_rate", 0.1}, {"momentum", 0.9}, {"nesterov", true}});
  ASSERT_NE(opt, nullptr);
  float w[1] = {1.0f};
  const float g[1] = {1.0f};
  opt->Apply(w, g, 1);  // v = -0.1; w += 0.9 * -0.1 - 0.1 -> 0.81
  EXPECT_NEAR(w[0], 0.81f, 1e-6);
  opt->Apply(w, g, 1);  // v = -0.19; w += 0.9 * -0.19 - 0.1 = -0.271 -> 0.539
  EXPECT_NEAR(w[0], 0.539f, 1e-6);
}

TEST(AdamTest, MatchesKerasFormulaOverSeveralSteps) {
  const double lr = 0.01, b1 = 0.8, b2 = 0.95, eps = 1e-7;
  auto opt = Make(json{{"type", "adam"}, {"learning_rate", lr}, {"beta_1", b1}, {"beta_2", b2}});
  ASSERT_NE(opt, nullptr);
  const int n = 3;
  float w[n] = {0.5f, -1.0f, 2.0f};
  double rw[n] = {0.5, -1.0, 2.0}, m[n] = {}, v[n] = {};
  const float grads[4][n] = {{0.1f, -0.2f, 0.0f}, {0.3f, 0.1f, -1.0f}, {-0.5f, 0.0f, 2.0f}, {0.05f, 0.4f, 0.0f}};
  for (int t = 1; t <= 4; ++t) {
    opt->Apply(w, grads[t - 1], n);
    const double lr_t = lr * std::sqrt(1 - std::pow(b2, t)) / (1 - std::pow(b1, t));
    for (int i = 0; i < n; ++i) {
      const double g = grads[t - 1][i];
      m[i] = b1 * m[i] + (1 - b1) * g;
      v[i] = b2 * v[i] + (1 - b2) * g * g;
      rw[i] -= lr_t * m[i] / (std::sqrt(v[i]) + eps);
      EXPECT_NEAR(w[i], rw[i], 1e-6) << "step " << t << " element " << i;
    }
  }
  EXPECT_EQ(opt->iterations(), 4);
  auto state = opt->state();
  ASSERT_EQ(state.size(), 2u);
  EXPECT_EQ(state[0].first, "m");
  EXPECT_EQ(state[1].first, "v");
  EXPECT_NEAR((*state[0].second)[1], m[1], 1e-7);
  EXPECT_NEAR((*state[1].second)[2], v[2], 1e-7);
}

TEST(AdamTest, DefaultsAndFirstStepMagnitude) {
  auto opt = Make(json{{"type", "adam"}});
  ASSERT_NE(opt, nullptr);
  EXPECT_DOUBLE_EQ(opt->learning_rate(), 0.001);
  // The first Adam step moves every weight by about lr * sign(g), whatever |g|.
  float w[2] = {0.0f, 0.0f};
  const float g[2] = {0.1f, -50.0f};
  opt->Apply(w, g, 2);
  EXPECT_NEAR(w[0], -0.001f, 1e-6);
  EXPECT_NEAR(w[1], 0.001f, 1e-6);
}

TEST(AdamTest, RestoredStateAndIterationsContinueTheRun) {
  const json config = {{"type", "adam"}, {"learning_rate", 0.05}};
  auto a = Make(config), b = Make(config);
  float wa[2] = {1.0f, -1.0f};
  const float g1[2] = {0.3f, -0.7f}, g2[2] = {-0.1f, 0.2f};
  a->Apply(wa, g1, 2);
  float wb[2] = {wa[0], wa[1]};
  // A checkpoint restore: copy the state vectors and the step count into a fresh optimizer.
  auto sa = a->state(), sb = b->state();
  for (size_t i = 0; i < sa.size(); ++i) *sb[i].second = *sa[i].second;
  b->set_iterations(a->iterations());
  a->Apply(wa, g2, 2);
  b->Apply(wb, g2, 2);
  EXPECT_EQ(wa[0], wb[0]);
  EXPECT_EQ(wa[1], wb[1]);
}

struct BadOptimizer {
  json config;
  const char* message;
};
void PrintTo(const BadOptimizer& c, std::ostream* os) { *os << c.config.dump(); }


class OptimizerErrorTest : public ::testing::TestWithParam<BadOptimizer> {};

TEST_P(OptimizerErrorTest, NamesTheField) {
  auto o = Optimizer::FromJson(GetParam().config);
  ASSERT_FALSE(o.ok()) << GetParam().config.dump();
  EXPECT_EQ(o.status().code(), Code::kInvalidArgument);
  EXPECT_NE(o.status().message().find(GetParam().message), std::string::npos) << o.status().message();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, OptimizerErrorTest,
    ::testing::Values(
        BadOptimizer{json::array(), "optimizer: must be a JSON object"},
        BadOptimizer{json{{"learning_rate", 0.1}}, "optimizer: missing 'type'"},
        BadOptimizer{json{{"type", "rmsprop"}}, "optimizer: unknown 'type' \"rmsprop\""},
        BadOptimizer{json{{"type", "sgd"}, {"lr", 0.1}}, "optimizer: unknown field 'lr'"},
        BadOptimizer{json{{"type", "sgd"}, {"learning_rate", -1}},
                     "optimizer: 'learning_rate' must be a positive number"},
        BadOptimizer{json{{"type", "sgd"}, {"learning_rate", "0.1"}}, "'learning_rate' must be a positive number"},
        BadOptimizer{json{{"type", "sgd"}, {"momentum", 1.5}}, "'momentum' must be a number in [0, 1]"},
        BadOptimizer{json{{"type", "sgd"}, {"nesterov", "yes"}}, "'nesterov' must be true or false"},
        BadOptimizer{json{{"type", "adam"}, {"beta_1", 1.0}}, "'beta_1' must be a number in [0, 1)"},
        BadOptimizer{json{{"type", "adam"}, {"beta_2", -0.1}}, "'beta_2'"},
        BadOptimizer{json{{"type", "adam"}, {"epsilon", 0}}, "'epsilon' must be a positive number"},
        BadOptimizer{json{{"type", "adam"}, {"momentum", 0.9}}, "unknown field 'momentum'"}));

}  // namespace
}  // namespace ringtrain::nn
