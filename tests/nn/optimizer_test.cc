// Optimizers against Keras' update rules, worked by hand or in double.
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "nn/optimizers/optimizer.h"
#include "test_util.h"

namespace ringtrain::nn {
namespace {

using nlohmann::json;


TEST(SgdTest, PlainStepAndDefaults) {
  auto opt = testing::MakeOptimizer(json{{"type", "sgd"}});
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
  auto opt = testing::MakeOptimizer(json{{"type", "SGD"}, {"learning_rate", 0.1}, {"momentum", 0.9}});
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
  auto opt = testing::MakeOptimizer(json{{"type", "sgd"}, {"learning_rate", 0.1}, {"momentum", 0.9}, {"nesterov", true}});
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
  auto opt = testing::MakeOptimizer(json{{"type", "adam"}, {"learning_rate", lr}, {"beta_1", b1}, {"beta_2", b2}});
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
  auto opt = testing::MakeOptimizer(json{{"type", "adam"}});
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
  auto a = testing::MakeOptimizer(config), b = testing::MakeOptimizer(config);
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
        BadOptimizer{json{{"type", "ftrl"}}, "optimizer: unknown 'type' \"ftrl\""},
        BadOptimizer{json{{"type", "sgd"}, {"lr", 0.1}}, "optimizer: unknown field 'lr'"},
        BadOptimizer{json{{"type", "sgd"}, {"learning_rate", -1}},
                     "optimizer: 'learning_rate' must be a positive number"},
        BadOptimizer{json{{"type", "sgd"}, {"learning_rate", "0.1"}}, "'learning_rate' must be a positive number"},
        BadOptimizer{json{{"type", "sgd"}, {"momentum", 1.5}}, "'momentum' must be a number in [0, 1]"},
        BadOptimizer{json{{"type", "sgd"}, {"nesterov", "yes"}}, "'nesterov' must be true or false"},
        BadOptimizer{json{{"type", "adam"}, {"beta_1", 1.0}}, "'beta_1' must be a number in [0, 1)"},
        BadOptimizer{json{{"type", "adam"}, {"beta_2", -0.1}}, "'beta_2'"},
        BadOptimizer{json{{"type", "adam"}, {"epsilon", 0}}, "'epsilon' must be a positive number"},
        BadOptimizer{json{{"type", "adam"}, {"momentum", 0.9}}, "unknown field 'momentum'"},
        BadOptimizer{json{{"type", "adam"}, {"lr", 0.1}}, "unknown field 'lr'; Keras 3 names it 'learning_rate'"},
        BadOptimizer{json{{"type", "adam"}, {"amsgrad", 1}}, "'amsgrad' must be true or false"},
        BadOptimizer{json{{"type", "AdamW"}, {"weight_decay", nullptr}}, "AdamW's 'weight_decay' must be a number"},
        BadOptimizer{json{{"type", "adamw"}, {"weight_decay", -0.1}}, "'weight_decay' must be a number in [0, "},
        BadOptimizer{json{{"type", "sgd"}, {"weight_decay", "0.1"}}, "'weight_decay' must be"},
        BadOptimizer{json{{"type", "RMSprop"}, {"rho", 1.0}}, "'rho' must be a number in [0, 1)"},
        BadOptimizer{json{{"type", "rmsprop"}, {"momentum", -0.5}}, "'momentum' must be a number in [0, 1]"},
        BadOptimizer{json{{"type", "rmsprop"}, {"epsilon", 0}}, "'epsilon' must be a positive number"},
        BadOptimizer{json{{"type", "rmsprop"}, {"centered", "no"}}, "'centered' must be true or false"},
        BadOptimizer{json{{"type", "rmsprop"}, {"beta_1", 0.9}}, "unknown field 'beta_1'"},
        BadOptimizer{json{{"type", "Adagrad"}, {"initial_accumulator_value", -1}},
                     "'initial_accumulator_value' must be a number in [0, "},
        BadOptimizer{json{{"type", "adagrad"}, {"epsilon", -1e-7}}, "'epsilon' must be a positive number"},
        BadOptimizer{json{{"type", "adagrad"}, {"momentum", 0.1}}, "unknown field 'momentum'"},
        BadOptimizer{json{{"type", "Nadam"}, {"beta_1", 1.5}}, "'beta_1' must be a number in [0, 1)"},
        BadOptimizer{json{{"type", "nadam"}, {"beta_2", 1.0}}, "'beta_2' must be a number in [0, 1)"},
        BadOptimizer{json{{"type", "nadam"}, {"epsilon", "small"}}, "'epsilon' must be a positive number"},
        BadOptimizer{json{{"type", "nadam"}, {"amsgrad", true}}, "unknown field 'amsgrad'"},
        BadOptimizer{json{{"type", "sgd"}, {"clipnorm", 0}}, "'clipnorm' must be a positive number"},
        BadOptimizer{json{{"type", "sgd"}, {"clipvalue", -1}}, "'clipvalue' must be a positive number"},
        BadOptimizer{json{{"type", "sgd"}, {"global_clipnorm", "1"}}, "'global_clipnorm' must be a positive number"},
        BadOptimizer{json{{"type", "adam"}, {"clipnorm", 1}, {"global_clipnorm", 1}},
                     "only one of 'clipnorm', 'clipvalue' and 'global_clipnorm' can be set (as in Keras), got "
                     "'clipnorm' and 'global_clipnorm'"},
        BadOptimizer{json{{"type", "adam"}, {"clipnorm", 1}, {"clipvalue", 1}}, "got 'clipnorm' and 'clipvalue'"},
        BadOptimizer{json{{"type", "adam"}, {"global_clipnorm", 1}, {"clipvalue", 1}},
                     "got 'global_clipnorm' and 'clipvalue'"},
        BadOptimizer{json{{"type", "sgd"}, {"use_ema", true}}, "'use_ema' true is not supported"},
        BadOptimizer{json{{"type", "sgd"}, {"ema_overwrite_frequency", 10}}, "'ema_overwrite_frequency' 10 is not"},
        BadOptimizer{json{{"type", "sgd"}, {"loss_scale_factor", 128}}, "'loss_scale_factor' 128 is not supported"},
        BadOptimizer{json{{"type", "sgd"}, {"gradient_accumulation_steps", 4}},
                     "'gradient_accumulation_steps' 4 is not supported"},
        BadOptimizer{json{{"type", "sgd"}, {"ema_momentum", "x"}}, "'ema_momentum' must be a number"},
        BadOptimizer{json{{"type", "sgd"}, {"is_legacy_optimizer", true}}, "'is_legacy_optimizer' true"},
        BadOptimizer{json{{"type", "sgd"}, {"jit_compile", 1}}, "'jit_compile' must be true or false"},
        BadOptimizer{json{{"type", "sgd"}, {"name", 3}}, "'name' must be a string"},
        BadOptimizer{json{{"type", "sgd"}, {"decay", 1e-4}}, "'decay' (tf.keras 2's per-step learning-rate decay) "
                                                              "is not supported; use the job's \"lr_schedule\": "
                                                              "{\"type\": \"inverse_time_decay\""}));

// What Keras' get_config writes for an optimizer that uses none of the unsupported
// features loads as is (Keras 3 and tf.keras 2 configs).
TEST(OptimizerParseTest, KerasGetConfigLoads) {
  const json keras3 = json::parse(R"({"name": "adam", "learning_rate": 0.0010000000474974513, "weight_decay": null,
      "clipnorm": null, "global_clipnorm": null, "clipvalue": null, "use_ema": false, "ema_momentum": 0.99,
      "ema_overwrite_frequency": null, "loss_scale_factor": null, "gradient_accumulation_steps": null,
      "beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-07, "amsgrad": false, "type": "Adam"})");
  auto a = testing::MakeOptimizer(keras3);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->name(), "adam");
  EXPECT_FALSE(a->transforms_gradients());
  const json tf2 = json::parse(R"({"name": "RMSprop", "weight_decay": null, "clipnorm": null,
      "global_clipnorm": null, "clipvalue": null, "use_ema": false, "ema_momentum": 0.99,
      "ema_overwrite_frequency": null, "jit_compile": true, "is_legacy_optimizer": false, "learning_rate": 0.001,
      "rho": 0.9, "momentum": 0.0, "epsilon": 1e-07, "centered": false, "type": "RMSprop"})");
  auto r = testing::MakeOptimizer(tf2);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->name(), "rmsprop");
  // Legacy tf.keras configs carry "decay": 0.0, which is no decay.
  EXPECT_NE(testing::MakeOptimizer(json{{"type", "sgd"}, {"decay", 0.0}}), nullptr);
}

TEST(OptimizerParseTest, TypeAcceptsSnakeAndClassNamesInAnyCase) {
  const std::vector<std::pair<std::string, std::string>> names = {
      {"sgd", "sgd"},     {"SGD", "sgd"},         {"adam", "adam"},       {"Adam", "adam"},
      {"adamw", "adamw"}, {"AdamW", "adamw"},     {"ADAMW", "adamw"},     {"rmsprop", "rmsprop"},
      {"RMSprop", "rmsprop"}, {"adagrad", "adagrad"}, {"Adagrad", "adagrad"}, {"nadam", "nadam"},
      {"Nadam", "nadam"}};
  for (const auto& [type, name] : names) {
    auto o = testing::MakeOptimizer(json{{"type", type}});
    ASSERT_NE(o, nullptr) << type;
    EXPECT_EQ(o->name(), name) << type;
  }
}

// state_floats_per_param is what Build allocates, for every configuration.
TEST(OptimizerParseTest, StateFloatsPerParamIsExact) {
  for (const json& j : {json{{"type", "sgd"}}, json{{"type", "sgd"}, {"momentum", 0.5}}, json{{"type", "adam"}},
                        json{{"type", "adam"}, {"amsgrad", true}}, json{{"type", "adamw"}}, json{{"type", "rmsprop"}},
                        json{{"type", "rmsprop"}, {"momentum", 0.5}}, json{{"type", "rmsprop"}, {"centered", true}},
                        json{{"type", "rmsprop"}, {"centered", true}, {"momentum", 0.1}}, json{{"type", "adagrad"}},
                        json{{"type", "nadam"}}, json{{"type", "nadam"}, {"clipnorm", 1.0}}}) {
    auto o = testing::MakeOptimizer(j);
    ASSERT_NE(o, nullptr) << j.dump();
    o->Build(7);
    size_t floats = 0;
    for (const auto& [name, buffer] : o->state()) {
      EXPECT_EQ(buffer->size(), 7u) << j.dump() << " " << name;
      floats += buffer->size();
    }
    EXPECT_EQ(floats, 7u * o->state_floats_per_param()) << j.dump();
    EXPECT_EQ(o->work_floats_per_param(), j.contains("clipnorm") ? 1 : 0) << j.dump();
  }
}

}  // namespace
}  // namespace ringtrain::nn
