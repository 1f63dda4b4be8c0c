#include "nn/regularizers/regularizer.h"

#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace ringtrain::nn {
namespace {

using Json = nlohmann::json;

Regularizer Parse(const Json& j) {
  auto r = Regularizer::FromJson(j, "layer: kernel_regularizer");
  EXPECT_TRUE(r.ok()) << j.dump() << ": " << r.status().ToString();
  return r.ok() ? *r : Regularizer(-1, -1);
}

TEST(RegularizerTest, KerasNamesAndDefaults) {
  EXPECT_FALSE(Parse(nullptr).active());
  EXPECT_EQ(Parse("l1").l1(), 0.01);
  EXPECT_EQ(Parse("l1").l2(), 0.0);
  EXPECT_EQ(Parse("L2").l2(), 0.01);
  EXPECT_EQ(Parse("l1_l2").l1(), 0.01);
  EXPECT_EQ(Parse("l1_l2").l2(), 0.01);
  EXPECT_FALSE(Parse("L1L2").active());  // the class's defaults, 0 and 0
  // Keras 2 and Keras 3 serialized forms.
  EXPECT_EQ(Parse({{"class_name", "L2"}, {"config", {{"l2", 0.001}}}}).l2(), 0.001);
  const Regularizer k3 = Parse({{"module", "keras.regularizers"},
                                {"class_name", "L1L2"},
                                {"config", {{"l1", 0.0}, {"l2", 0.009999999776482582}}},
                                {"registered_name", nullptr}});
  EXPECT_EQ(k3.l1(), 0.0);
  EXPECT_EQ(k3.l2(), 0.009999999776482582);
  EXPECT_EQ(Parse({{"class_name", "L1"}, {"config", {{"l", 0.5}}}}).l1(), 0.5);  // tf.keras 2's old spelling
  EXPECT_EQ(Parse({{"class_name", "L1"}, {"config", {{"l1", nullptr}}}}).l1(), 0.01);
  EXPECT_EQ(Parse({{"class_name", "L2"}}).l2(), 0.01);
}

TEST(RegularizerTest, PenaltyAndGradient) {
  const Regularizer r(0.01, 0.02);
  const float w[3] = {-1.5f, 0.0f, 2.0f};
  // 0.01 * 3.5 + 0.02 * (2.25 + 4)
  EXPECT_NEAR(r.Penalty(w, 3), 0.035 + 0.125, 1e-15);
  float g[3] = {1, 1, 1};
  r.AddGradient(w, 3, 0.5f, g);
  EXPECT_FLOAT_EQ(g[0], static_cast<float>(1 + 0.5 * (-0.01 + 0.04 * -1.5)));
  EXPECT_EQ(g[1], 1.0f);  // sign(0) = 0 and 2 * l2 * 0 = 0
  EXPECT_FLOAT_EQ(g[2], static_cast<float>(1 + 0.5 * (0.01 + 0.04 * 2)));
  // L1 only at zero adds nothing; an inactive one leaves g alone.
  float h[1] = {3};
  const float zero[1] = {0};
  Regularizer(0.7, 0).AddGradient(zero, 1, 1, h);
  Regularizer().AddGradient(w, 1, 1, h);
  EXPECT_EQ(h[0], 3.0f);
  EXPECT_EQ(Regularizer().Penalty(w, 3), 0.0);
  // The gradient is the penalty's central difference away from 0.
  const float at[1] = {0.75f};
  const double d = 1e-3;
  const float up[1] = {static_cast<float>(0.75 + d)}, down[1] = {static_cast<float>(0.75 - d)};
  float gg[1] = {0};
  r.AddGradient(at, 1, 1, gg);
  EXPECT_NEAR(gg[0], (r.Penalty(up, 1) - r.Penalty(down, 1)) / (up[0] - down[0]), 1e-6);
}

TEST(RegularizerTest, BadInputIsRefusedNamingTheField) {
  struct Case {
    Json j;
    const char* needle;
  };
  const Case cases[] = {
      {"l3", "unknown regularizer \"l3\""},
      {3, "must be a regularizer name"},
      {{{"class_name", "OrthogonalRegularizer"}}, "unsupported regularizer class_name"},
      {{{"config", {{"l2", 0.1}}}}, "'class_name'"},
      {{{"class_name", "L2"}, {"config", {{"l2", -0.1}}}}, "'l2' must be a number >= 0"},
      {{{"class_name", "L2"}, {"config", {{"l2", "0.1"}}}}, "'l2' must be a number >= 0"},
      {{{"class_name", "L1L2"}, {"config", {{"l1", 1e40}}}}, "'l1'"},
      {{{"class_name", "L2"}, {"config", {{"l1", 0.1}}}}, "unknown field 'l1'"},
      {{{"class_name", "L2"}, {"config", {{"l2", 0.1}, {"l", 0.2}}}}, "not both"},
      {{{"class_name", "L2"}, {"config", 0.1}}, "'config' must be an object"},
      {{{"class_name", "L2"}, {"conf", {}}}, "unknown field 'conf'"},
  };
  for (const Case& c : cases) {
    auto r = Regularizer::FromJson(c.j, "model.layers[1] (dense): kernel_regularizer");
    ASSERT_FALSE(r.ok()) << c.j.dump();
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
    EXPECT_EQ(r.status().subject(), Subject::kConfig);
    EXPECT_NE(r.status().message().find(c.needle), std::string::npos) << c.j.dump() << " -> " << r.status().message();
    EXPECT_EQ(r.status().message().rfind("model.layers[1] (dense): kernel_regularizer", 0), 0u);
  }
}

}  // namespace
}  // namespace ringtrain::nn
