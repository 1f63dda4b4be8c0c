// Every optimizer against Keras 3's update rule (keras/src/optimizers/*.py) written out
// here in double, over several steps, with the defaults and with chosen arguments; the
// state round trip (state() -> a fresh optimizer -> the same next update bits).
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "nn/optimizers/optimizer.h"
#include "test_util.h"

namespace ringtrain::nn {
namespace {

using nlohmann::json;


constexpr int kN = 4;
constexpr int kSteps = 6;
const float kInit[kN] = {0.5f, -1.0f, 2.0f, 1.5f};
// Mixed signs and magnitudes, a zero, and a step whose gradient flips.
const float kGrads[kSteps][kN] = {{0.1f, -0.2f, 0.0f, 3.0f},  {0.3f, 0.1f, -1.0f, 2.5f}, {-0.5f, 0.0f, 2.0f, -0.7f},
                                  {0.05f, 0.4f, 0.0f, 0.01f}, {0.2f, -0.3f, 0.6f, 1.0f}, {-0.1f, 0.2f, -0.4f, 0.3f}};

// A reference: updates w (double) with gradient g (double) for step t = 1, 2, ...
using Rule = std::function<void(int t, std::vector<double>& w, const std::vector<double>& g)>;

// Runs the optimizer and the reference side by side; the weights must agree within a
// relative 1e-6 after every step.
void ExpectFollows(const json& config, Rule rule) {
  auto opt = testing::MakeOptimizer(config);
  ASSERT_NE(opt, nullptr);
  std::vector<float> w(kInit, kInit + kN);
  std::vector<double> rw(kInit, kInit + kN);
  for (int t = 1; t <= kSteps; ++t) {
    opt->Apply(w.data(), kGrads[t - 1], kN);
    rule(t, rw, std::vector<double>(kGrads[t - 1], kGrads[t - 1] + kN));
    for (int i = 0; i < kN; ++i) {
      EXPECT_NEAR(w[i], rw[i], 1e-6 * std::max(1.0, std::abs(rw[i])))
          << config.dump() << " step " << t << " element " << i;
    }
  }
  EXPECT_EQ(opt->iterations(), kSteps);
}

Rule SgdRule(double lr, double momentum, bool nesterov) {
  auto v = std::make_shared<std::vector<double>>(kN, 0.0);
  return [=](int, std::vector<double>& w, const std::vector<double>& g) {
    for (int i = 0; i < kN; ++i) {
      if (momentum == 0) {
        w[i] -= lr * g[i];
        continue;
      }
      (*v)[i] = momentum * (*v)[i] - lr * g[i];
      w[i] += nesterov ? momentum * (*v)[i] - lr * g[i] : (*v)[i];
    }
  };
}

Rule AdamRule(double lr, double b1, double b2, double eps, bool amsgrad, double weight_decay = 0) {
  auto m = std::make_shared<std::vector<double>>(kN, 0.0);
  auto v = std::make_shared<std::vector<double>>(kN, 0.0);
  auto vhat = std::make_shared<std::vector<double>>(kN, 0.0);
  return [=](int t, std::vector<double>& w, const std::vector<double>& g) {
    const double alpha = lr * std::sqrt(1 - std::pow(b2, t)) / (1 - std::pow(b1, t));
    for (int i = 0; i < kN; ++i) {
      w[i] -= w[i] * weight_decay * lr;
      (*m)[i] += (g[i] - (*m)[i]) * (1 - b1);
      (*v)[i] += (g[i] * g[i] - (*v)[i]) * (1 - b2);
      double denom_v = (*v)[i];
      if (amsgrad) {
        (*vhat)[i] = std::max((*vhat)[i], (*v)[i]);
        denom_v = (*vhat)[i];
      }
      w[i] -= (*m)[i] * alpha / (std::sqrt(denom_v) + eps);
    }
  };
}

Rule RmspropRule(double lr, double rho, double momentum, double eps, bool centered) {
  auto vel = std::make_shared<std::vector<double>>(kN, 0.0);
  auto mom = std::make_shared<std::vector<double>>(kN, 0.0);
  auto avg = std::make_shared<std::vector<double>>(kN, 0.0);
  return [=](int, std::vector<double>& w, const std::vector<double>& g) {
    for (int i = 0; i < kN; ++i) {
      (*vel)[i] = rho * (*vel)[i] + (1 - rho) * g[i] * g[i];
      double denominator = (*vel)[i] + eps;
      if (centered) {
        (*avg)[i] = rho * (*avg)[i] + (1 - rho) * g[i];
        denominator = (*vel)[i] - (*avg)[i] * (*avg)[i] + eps;
      }
      const double increment = lr * g[i] / std::sqrt(denominator);
      if (momentum > 0) {
        (*mom)[i] = momentum * (*mom)[i] + increment;
        w[i] -= (*mom)[i];
      } else {
        w[i] -= increment;
      }
    }
  };
}

Rule AdagradRule(double lr, double initial, double eps) {
  auto acc = std::make_shared<std::vector<double>>(kN, initial);
  return [=](int, std::vector<double>& w, const std::vector<double>& g) {
    for (int i = 0; i < kN; ++i) {
      (*acc)[i] += g[i] * g[i];
      w[i] -= lr * g[i] / std::sqrt((*acc)[i] + eps);
    }
  };
}

Rule NadamRule(double lr, double b1, double b2, double eps) {
  auto m = std::make_shared<std::vector<double>>(kN, 0.0);
  auto v = std::make_shared<std::vector<double>>(kN, 0.0);
  auto u_product = std::make_shared<double>(1.0);
  return [=](int t, std::vector<double>& w, const std::vector<double>& g) {
    const double u_t = b1 * (1 - 0.5 * std::pow(0.96, t));
    const double u_t1 = b1 * (1 - 0.5 * std::pow(0.96, t + 1));
    *u_product *= u_t;  // Keras updates it before the per-variable step
    const double u_product_t1 = *u_product * u_t1;
    for (int i = 0; i < kN; ++i) {
      (*m)[i] += (g[i] - (*m)[i]) * (1 - b1);
      (*v)[i] += (g[i] * g[i] - (*v)[i]) * (1 - b2);
      const double m_hat = u_t1 * (*m)[i] / (1 - u_product_t1) + (1 - u_t) * g[i] / (1 - *u_product);
      const double v_hat = (*v)[i] / (1 - std::pow(b2, t));
      w[i] -= m_hat * lr / (std::sqrt(v_hat) + eps);
    }
  };
}

// ---------------------------------------------------------------- defaults
TEST(OptimizerRulesTest, EveryDefault) {
  EXPECT_DOUBLE_EQ(testing::MakeOptimizer(json{{"type", "sgd"}})->learning_rate(), 0.01);
  for (const char* type : {"adam", "adamw", "rmsprop", "adagrad", "nadam"}) {
    EXPECT_DOUBLE_EQ(testing::MakeOptimizer(json{{"type", type}})->learning_rate(), 0.001) << type;
  }
  auto adamw = testing::MakeOptimizer(json{{"type", "AdamW"}});
  ASSERT_TRUE(adamw->options().weight_decay.has_value());
  EXPECT_DOUBLE_EQ(*adamw->options().weight_decay, 0.004);
  EXPECT_FALSE(testing::MakeOptimizer(json{{"type", "adam"}})->options().weight_decay.has_value());
  EXPECT_FALSE(testing::MakeOptimizer(json{{"type", "sgd"}})->options().clip.active());
  // The rules with every argument at its default.
  ExpectFollows(json{{"type", "sgd"}}, SgdRule(0.01, 0, false));
  ExpectFollows(json{{"type", "adam"}}, AdamRule(0.001, 0.9, 0.999, 1e-7, false));
  ExpectFollows(json{{"type", "adamw"}}, AdamRule(0.001, 0.9, 0.999, 1e-7, false, 0.004));
  ExpectFollows(json{{"type", "rmsprop"}}, RmspropRule(0.001, 0.9, 0.0, 1e-7, false));
  ExpectFollows(json{{"type", "adagrad"}}, AdagradRule(0.001, 0.1, 1e-7));
  ExpectFollows(json{{"type", "nadam"}}, NadamRule(0.001, 0.9, 0.999, 1e-7));
}

// ---------------------------------------------------------------- chosen arguments
TEST(OptimizerRulesTest, Sgd) {
  ExpectFollows(json{{"type", "sgd"}, {"learning_rate", 0.05}, {"momentum", 0.8}}, SgdRule(0.05, 0.8, false));
  ExpectFollows(json{{"type", "sgd"}, {"learning_rate", 0.05}, {"momentum", 0.8}, {"nesterov", true}},
                SgdRule(0.05, 0.8, true));
}

TEST(OptimizerRulesTest, AdamAndAmsgrad) {
  ExpectFollows(json{{"type", "adam"}, {"learning_rate", 0.02}, {"beta_1", 0.8}, {"beta_2", 0.95}, {"epsilon", 1e-3}},
                AdamRule(0.02, 0.8, 0.95, 1e-3, false));
  ExpectFollows(json{{"type", "adam"}, {"learning_rate", 0.02}, {"beta_1", 0.8}, {"beta_2", 0.95}, {"amsgrad", true}},
                AdamRule(0.02, 0.8, 0.95, 1e-7, true));
}

TEST(OptimizerRulesTest, AdamW) {
  ExpectFollows(json{{"type", "AdamW"}, {"learning_rate", 0.03}, {"weight_decay", 0.1}, {"beta_1", 0.7}},
                AdamRule(0.03, 0.7, 0.999, 1e-7, false, 0.1));
  ExpectFollows(json{{"type", "adamw"}, {"learning_rate", 0.03}, {"amsgrad", true}},
                AdamRule(0.03, 0.9, 0.999, 1e-7, true, 0.004));
}

TEST(OptimizerRulesTest, Rmsprop) {
  ExpectFollows(json{{"type", "rmsprop"}, {"learning_rate", 0.01}, {"rho", 0.8}, {"epsilon", 1e-4}},
                RmspropRule(0.01, 0.8, 0.0, 1e-4, false));
  ExpectFollows(json{{"type", "RMSprop"}, {"learning_rate", 0.01}, {"momentum", 0.6}},
                RmspropRule(0.01, 0.9, 0.6, 1e-7, false));
  ExpectFollows(json{{"type", "rmsprop"}, {"learning_rate", 0.01}, {"centered", true}, {"epsilon", 1e-3}},
                RmspropRule(0.01, 0.9, 0.0, 1e-3, true));
  ExpectFollows(json{{"type", "rmsprop"}, {"learning_rate", 0.01}, {"centered", true}, {"momentum", 0.5},
                     {"rho", 0.7}, {"epsilon", 1e-3}},
                RmspropRule(0.01, 0.7, 0.5, 1e-3, true));
}

TEST(OptimizerRulesTest, Adagrad) {
  ExpectFollows(json{{"type", "adagrad"}, {"learning_rate", 0.1}, {"initial_accumulator_value", 0.5}},
                AdagradRule(0.1, 0.5, 1e-7));
  ExpectFollows(json{{"type", "Adagrad"}, {"learning_rate", 0.1}, {"initial_accumulator_value", 0.0},
                     {"epsilon", 1e-2}},
                AdagradRule(0.1, 0.0, 1e-2));
}

TEST(OptimizerRulesTest, Nadam) {
  ExpectFollows(json{{"type", "nadam"}, {"learning_rate", 0.02}, {"beta_1", 0.8}, {"beta_2", 0.95}},
                NadamRule(0.02, 0.8, 0.95, 1e-7));
  ExpectFollows(json{{"type", "Nadam"}, {"learning_rate", 0.02}, {"epsilon", 1e-3}},
                NadamRule(0.02, 0.9, 0.999, 1e-3));
}

// Keras 3 weight decay on any optimizer: w -= w * weight_decay * lr, before the rule.
TEST(OptimizerRulesTest, WeightDecayOnEveryOptimizer) {
  const double wd = 0.05;
  const Rule decay = [wd](int, std::vector<double>& w, const std::vector<double>&) {
    for (int i = 0; i < kN; ++i) w[i] -= w[i] * wd * 0.1;
  };
  auto then = [decay](Rule rule) {
    return [decay, rule](int t, std::vector<double>& w, const std::vector<double>& g) {
      decay(t, w, g);
      rule(t, w, g);
    };
  };
  ExpectFollows(json{{"type", "sgd"}, {"learning_rate", 0.1}, {"weight_decay", wd}}, then(SgdRule(0.1, 0, false)));
  ExpectFollows(json{{"type", "sgd"}, {"learning_rate", 0.1}, {"weight_decay", wd}, {"momentum", 0.9}},
                then(SgdRule(0.1, 0.9, false)));
  ExpectFollows(json{{"type", "adam"}, {"learning_rate", 0.1}, {"weight_decay", wd}},
                then(AdamRule(0.1, 0.9, 0.999, 1e-7, false)));
  ExpectFollows(json{{"type", "rmsprop"}, {"learning_rate", 0.1}, {"weight_decay", wd}},
                then(RmspropRule(0.1, 0.9, 0, 1e-7, false)));
  ExpectFollows(json{{"type", "adagrad"}, {"learning_rate", 0.1}, {"weight_decay", wd}},
                then(AdagradRule(0.1, 0.1, 1e-7)));
  ExpectFollows(json{{"type", "nadam"}, {"learning_rate", 0.1}, {"weight_decay", wd}},
                then(NadamRule(0.1, 0.9, 0.999, 1e-7)));
}

// The weight decay uses the learning rate of the step (a schedule's, once set).
TEST(OptimizerRulesTest, WeightDecayFollowsTheCurrentLearningRate) {
  auto opt = testing::MakeOptimizer(json{{"type", "sgd"}, {"learning_rate", 0.1}, {"weight_decay", 0.5}});
  ASSERT_NE(opt, nullptr);
  opt->set_learning_rate(0.2);
  float w[1] = {2.0f};
  const float g[1] = {0.0f};
  opt->Apply(w, g, 1);
  EXPECT_FLOAT_EQ(w[0], 2.0f - 2.0f * 0.5f * 0.2f);
}

// ---------------------------------------------------------------- state round trip
// A run that stops after some steps and resumes in a fresh optimizer from state() and
// iterations() takes the same next updates, bit for bit.
TEST(OptimizerRulesTest, StateRoundTripGivesTheSameBits) {
  for (const json& config :
       {json{{"type", "sgd"}, {"momentum", 0.9}, {"nesterov", true}, {"learning_rate", 0.1}},
        json{{"type", "adam"}, {"amsgrad", true}, {"learning_rate", 0.01}},
        json{{"type", "adamw"}, {"clipnorm", 0.5}, {"learning_rate", 0.01}},
        json{{"type", "rmsprop"}, {"centered", true}, {"momentum", 0.5}, {"global_clipnorm", 1.0}},
        json{{"type", "adagrad"}, {"clipvalue", 0.25}, {"learning_rate", 0.1}},
        json{{"type", "nadam"}, {"weight_decay", 0.01}, {"learning_rate", 0.01}}}) {
    for (int stop : {0, 3}) {
      auto a = testing::MakeOptimizer(config), b = testing::MakeOptimizer(config);
      ASSERT_TRUE(a && b);
      std::vector<float> wa(kInit, kInit + kN);
      for (int t = 0; t < stop; ++t) a->Apply(wa.data(), kGrads[t], kN);
      // What a checkpoint holds: built state (also before the first step), step count.
      a->Build(kN);
      auto sa = a->state(), sb = b->state();
      ASSERT_EQ(sa.size(), sb.size());
      for (size_t i = 0; i < sa.size(); ++i) {
        EXPECT_EQ(sa[i].first, sb[i].first);
        *sb[i].second = *sa[i].second;
      }
      b->set_iterations(a->iterations());
      std::vector<float> wb = wa;
      for (int t = stop; t < kSteps; ++t) {
        a->Apply(wa.data(), kGrads[t], kN);
        b->Apply(wb.data(), kGrads[t], kN);
        EXPECT_EQ(std::memcmp(wa.data(), wb.data(), sizeof(float) * kN), 0) << config.dump() << " stop " << stop;
      }
    }
  }
}

// Nadam's u_product is a function of the step count: resuming a long run at any step
// (past the point where 0.96^t underflows) continues with the same bits.
TEST(OptimizerRulesTest, NadamResumesLongRunsBitForBit) {
  const json config = {{"type", "nadam"}, {"learning_rate", 1e-4}, {"beta_1", 0.999}};
  struct Snapshot {
    int64_t iterations;
    std::vector<float> w, m, v;
  };
  const float g[2] = {0.01f, -0.02f};
  auto a = testing::MakeOptimizer(config);
  ASSERT_NE(a, nullptr);
  std::vector<float> w = {0.5f, -0.25f};
  std::vector<Snapshot> snapshots;
  std::vector<std::vector<float>> trajectory;  // weights after each step
  for (int t = 0; t < 20010; ++t) {
    if (t == 19990 || t == 20005) {
      auto st = a->state();
      snapshots.push_back({a->iterations(), w, *st[0].second, *st[1].second});
    }
    a->Apply(w.data(), g, 2);
    trajectory.push_back(w);
  }
  for (const Snapshot& s : snapshots) {
    for (bool detour : {false, true}) {
      auto b = testing::MakeOptimizer(config);
      std::vector<float> wb = s.w;
      if (detour) {  // first restored to a later step and used, then to the snapshot's
        std::vector<float> scratch = s.w;
        b->set_iterations(s.iterations + 500);
        b->Apply(scratch.data(), g, 2);
      }
      auto sb = b->state();
      *sb[0].second = s.m;
      *sb[1].second = s.v;
      b->set_iterations(s.iterations);
      for (int k = 0; k < 3; ++k) {
        b->Apply(wb.data(), g, 2);
        EXPECT_EQ(std::memcmp(wb.data(), trajectory[s.iterations + k].data(), sizeof(float) * 2), 0)
            << "resumed at " << s.iterations << " detour " << detour << " step " << k;
      }
    }
  }
}

// Adagrad's accumulator starts at initial_accumulator_value, not zero, also in a
// checkpoint taken before the first step.
TEST(OptimizerRulesTest, BuildGivesKerasInitialValues) {
  auto o = testing::MakeOptimizer(json{{"type", "adagrad"}, {"initial_accumulator_value", 0.25}});
  ASSERT_NE(o, nullptr);
  auto s = o->state();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].first, "accumulator");
  EXPECT_TRUE(s[0].second->empty());
  o->Build(3);
  EXPECT_EQ(*s[0].second, std::vector<float>(3, 0.25f));
  auto r = testing::MakeOptimizer(json{{"type", "rmsprop"}, {"momentum", 0.5}, {"centered", true}});
  r->Build(2);
  const auto rs = r->state();
  ASSERT_EQ(rs.size(), 3u);
  EXPECT_EQ(rs[0].first, "velocity");
  EXPECT_EQ(rs[1].first, "momentum");
  EXPECT_EQ(rs[2].first, "average_gradient");
  for (const auto& [name, buffer] : rs) EXPECT_EQ(*buffer, std::vector<float>(2, 0.0f)) << name;
}

}  // namespace
}  // namespace ringtrain::nn
