// Normalization (nn/layers/normalization.h), run by the CPU kernel: Keras' formula
// y = (x - mean) / max(sqrt(variance), 1e-7) (and its inverse) on hand-computed cases,
// the kept axes and broadcasting of Keras' build, the weights "mean", "variance", "count"
// and their loading by name (initial_weights), central-difference gradients, the
// refusals, and a Keras 3 model JSON. TensorFlow.js has no Normalization layer, so the
// reference is Keras' documented computation (keras/src/layers/preprocessing/normalization.py).
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cpu_run.h"
#include "inference/weights_by_name.h"
#include "nn/keras/keras_json.h"
#include "nn/layers/normalization.h"
#include "nn/model.h"
#include "test_util.h"

namespace ringtrain::nn {
namespace {

using nlohmann::json;

std::unique_ptr<Layer> Make(const json& j, const Shape& in) {
  auto l = Normalization::Create(j, "norm", in, "t");
  EXPECT_TRUE(l.ok()) << l.status().ToString();
  return l.ok() ? std::move(l).value() : nullptr;
}

std::vector<float> Apply(Layer& l, const std::vector<float>& x, int batch, const std::vector<float>& mean = {},
                       const std::vector<float>& variance = {}) {
  testing::CpuRun run(l);
  if (!mean.empty()) {
    std::copy(mean.begin(), mean.end(), run.param(0));
    std::copy(variance.begin(), variance.end(), run.param(1));
  }
  const float* y = run.Forward(x.data(), batch, true);
  return std::vector<float>(y, y + x.size());
}

TEST(NormalizationTest, KerasDocumentedExample) {
  // keras.layers.Normalization(mean=3., variance=2.) on [[1.], [2.], [3.]].
  auto l = Make({{"mean", 3.0}, {"variance", 2.0}}, Shape{1});
  const std::vector<float> y = Apply(*l, {1, 2, 3}, 3);
  const float s = std::sqrt(2.0f);
  EXPECT_EQ(y, (std::vector<float>{(1 - 3.0f) / s, (2 - 3.0f) / s, 0.0f}));
  EXPECT_NEAR(y[0], -1.4142135f, 1e-7);
  EXPECT_NEAR(y[1], -0.70710677f, 1e-7);
  EXPECT_TRUE(l->ParamSpecs().empty());
}

TEST(NormalizationTest, PerChannelInvertAndTheEpsilonFloor) {
  // axis -1 of [2, 3]: one mean and variance per channel; variance 0 floors at 1e-7.
  const json mv = {{"mean", {1.0, -2.0, 0.5}}, {"variance", {4.0, 0.25, 0.0}}};
  auto l = Make(mv, Shape{2, 3});
  const std::vector<float> x = {3, -1, 0.5f, 1, -2, 0.5f + 1e-6f};
  const std::vector<float> y = Apply(*l, x, 1);
  const std::vector<float> want = {(3 - 1.0f) / 2.0f, (-1 + 2.0f) / 0.5f, 0.0f, 0.0f, 0.0f, ((0.5f + 1e-6f) - 0.5f) / 1e-7f};
  EXPECT_EQ(y, want);
  json inv = mv;
  inv["invert"] = true;
  auto li = Make(inv, Shape{2, 3});
  EXPECT_EQ(Apply(*li, {1, 2, 3, 0, 0, 0}, 1), (std::vector<float>{1 + 1 * 2.0f, -2 + 2 * 0.5f, 0.5f + 3 * 1e-7f, 1, -2, 0.5f}));
}

TEST(NormalizationTest, KeptAxesAndBroadcasting) {
  const Shape in{2, 3, 2};
  // axis 1 (the height): one mean per row, broadcast over width and channels (an index table).
  auto rows = Make({{"axis", 1}, {"mean", {10.0, 20.0}}, {"variance", {1.0, 4.0}}}, in);
  std::vector<float> x(12);
  for (int i = 0; i < 12; ++i) x[i] = static_cast<float>(i);
  std::vector<float> want(12);
  for (int i = 0; i < 12; ++i) want[i] = i < 6 ? (x[i] - 10) / 1.0f : (x[i] - 20) / 2.0f;
  EXPECT_EQ(Apply(*rows, x, 1), want);
  EXPECT_FALSE(rows->op().norm_index.empty());
  // axis [1, 3] (height and channels), mean given for the channels only ([2] aligned right).
  // mean [2] and variance [2, 2] differ in shape: refused, as Keras.
  EXPECT_FALSE(Normalization::Create({{"axis", {1, 3}}, {"mean", {1.0, 2.0}}, {"variance", {{1.0, 4.0}, {9.0, 16.0}}}},
                                     "n", in, "t")
                   .ok());
  auto hc2 = Make({{"axis", {1, 3}}, {"mean", {1.0, 2.0}}, {"variance", {4.0, 16.0}}}, in);
  for (int i = 0; i < 12; ++i) want[i] = (x[i] - (i % 2 == 0 ? 1.0f : 2.0f)) / (i % 2 == 0 ? 2.0f : 4.0f);
  EXPECT_EQ(Apply(*hc2, x, 1), want);
  // axis null: one scalar mean and variance; trailing axes [2, 3] ([-2, -1]) need no table.
  auto all = Make({{"axis", nullptr}, {"mean", 1.0}, {"variance", 4.0}}, in);
  EXPECT_EQ(all->op().norm_size, 1);
  auto trailing = Make({{"axis", {-2, -1}}, {"mean", {{0, 1}, {2, 3}, {4, 5}}}, {"variance", {{1, 1}, {1, 1}, {4, 4}}}}, in);
  EXPECT_TRUE(trailing->op().norm_index.empty());
  EXPECT_EQ(trailing->op().norm_size, 6);
  for (int i = 0; i < 12; ++i) want[i] = (x[i] - static_cast<float>(i % 6)) / (i % 6 >= 4 ? 2.0f : 1.0f);
  EXPECT_EQ(Apply(*trailing, x, 1), want);
}

TEST(NormalizationTest, WeightsAreKerasAndLoadByName) {
  auto l = Make(json::object(), Shape{4, 3});
  const std::vector<ParamSpec> specs = l->ParamSpecs();
  ASSERT_EQ(specs.size(), 3u);
  EXPECT_EQ(specs[0].suffix, "mean");
  EXPECT_EQ(specs[0].shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(specs[1].suffix, "variance");
  EXPECT_EQ(specs[2].suffix, "count");
  EXPECT_TRUE(specs[2].shape.empty());
  for (const ParamSpec& s : specs) EXPECT_FALSE(s.trainable);
  // Initially 0 and 1: the identity.
  std::vector<float> x = testing::RandomVector(12, 4);
  EXPECT_EQ(Apply(*l, x, 1), x);

  // In a model, loaded by name as initial_weights loads a Keras model's converted weights.
  auto m = Model::FromJson(json::parse(R"({"input_shape": [4, 3], "layers": [
      {"type": "Normalization", "name": "norm"}, {"type": "flatten"}, {"type": "dense", "units": 2}]})"),
                           1);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  std::map<std::string, checkpoint::Tensor> tensors;
  tensors["norm/mean"] = {{3}, {1, 2, 3}};
  tensors["norm/variance"] = {{3}, {4, 9, 16}};
  tensors["norm/count"] = {{}, {120}};
  auto report = inference::LoadWeightsByName(m->get(), tensors, "test", false);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->loaded.size(), 3u);
  // The gradient step leaves them alone (not trainable).
  const std::vector<float> before((*m)->params(), (*m)->params() + (*m)->num_params());
  (*m)->Forward(x.data(), 1, true);
  const std::vector<float> dy = {1, -1};
  (*m)->Backward(dy.data());
  for (const ParamInfo& p : (*m)->param_infos()) {
    if (p.name.rfind("norm/", 0) == 0) EXPECT_FALSE(p.trainable) << p.name;
  }
  auto run_layer = Make(json::object(), Shape{4, 3});
  const std::vector<float> y = Apply(*run_layer, x, 1, {1, 2, 3}, {4, 9, 16});
  for (int i = 0; i < 12; ++i) {
    EXPECT_EQ(y[i], (x[i] - static_cast<float>(i % 3 + 1)) / static_cast<float>(i % 3 + 2)) << i;
  }
}

TEST(NormalizationTest, GradientsMatchCentralDifferences) {
  auto a = Make({{"mean", {0.5, -0.25, 1.0}}, {"variance", {0.5, 2.0, 0.1}}}, Shape{2, 3});
  testing::CheckLayerGradients(*a, 2, 10);
  auto b = Make({{"axis", 1}, {"mean", {0.5, -0.25}}, {"variance", {0.5, 2.0}}, {"invert", true}}, Shape{2, 3});
  testing::CheckLayerGradients(*b, 2, 20);
  // The weights get no gradient.
  auto w = Make(json::object(), Shape{3});
  testing::CpuRun run(*w);
  EXPECT_EQ(run.grad(0), nullptr);
  EXPECT_EQ(run.grad(1), nullptr);
}

std::string Error(const json& j, const Shape& in) {
  auto l = Normalization::Create(j, "norm", in, "model.layers[0] (norm)");
  EXPECT_FALSE(l.ok()) << j.dump();
  return l.ok() ? "" : l.status().message();
}

TEST(NormalizationTest, BadArgumentsAreRefusedNamingTheArgument) {
  const Shape in{4, 3};
  struct Bad {
    json j;
    const char* message;
  };
  const Bad cases[] = {
      {{{"mean", 1.0}}, "give both 'mean' and 'variance', or neither"},
      {{{"variance", 1.0}}, "give both 'mean' and 'variance', or neither"},
      {{{"axis", 0}}, "'axis' 0 keeps the batch axis"},
      {{{"axis", 3}}, "'axis' must be null, an axis or a list of axes of the input other than the batch (1 to 2, or -2 "
                      "to -1), got 3"},
      {{{"axis", {1, 1}}}, "'axis' [1,1] names an axis twice"},
      {{{"axis", "x"}}, "'axis' must be null"},
      {{{"mean", {1.0, 2.0}}, {"variance", {1.0, 2.0}}}, "'mean' [1.0,2.0] does not fit the kept axes"},
      {{{"mean", {1.0, 2.0, 3.0}}, {"variance", {1.0, -2.0, 3.0}}}, "'variance' must not be negative"},
      {{{"mean", "a"}, {"variance", 1.0}}, "'mean' must be finite numbers"},
      {{{"mean", {{1.0}, {1.0, 2.0}}}, {"variance", 1.0}}, "'mean' must be finite numbers"},
      {{{"invert", 1}}, "invert"},
      {{{"adapt", true}}, "unknown field 'adapt'"},
  };
  for (const Bad& c : cases) {
    const std::string got = Error(c.j, in);
    EXPECT_NE(got.find(c.message), std::string::npos) << "got: " << got << "\nwant: " << c.message;
    EXPECT_EQ(got.rfind("model.layers[0] (norm): ", 0), 0u) << got;
  }
}

TEST(NormalizationTest, KerasJson) {
  // As Keras 3 saves an adapted layer (mean and variance in its weights, null in the config).
  const json keras = json::parse(R"({"class_name": "Sequential", "config": {"name": "s", "layers": [
      {"class_name": "InputLayer", "config": {"batch_shape": [null, 5], "dtype": "float32", "name": "in"}},
      {"class_name": "Normalization", "config": {"name": "normalization", "trainable": true, "dtype": "float32",
       "axis": [-1], "invert": false, "mean": null, "variance": null}},
      {"class_name": "Normalization", "config": {"name": "given", "trainable": true, "dtype": "float32",
       "axis": -1, "invert": true, "mean": [1, 2, 3, 4, 5], "variance": [4, 4, 4, 4, 4]}},
      {"class_name": "Dense", "config": {"name": "dense", "units": 2}}]}})");
  auto compact = KerasJsonToCompact(keras);
  ASSERT_TRUE(compact.ok()) << compact.status().ToString();
  auto m = Model::FromJson(*compact, 1);
  ASSERT_TRUE(m.ok()) << m.status().ToString() << "\n" << compact->dump();
  std::vector<std::string> names;
  for (const ParamInfo& p : (*m)->param_infos()) names.push_back(p.name);
  EXPECT_NE(std::find(names.begin(), names.end(), "normalization/mean"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "normalization/variance"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "normalization/count"), names.end());
  for (const std::string& n : names) EXPECT_EQ(n.rfind("given/", 0), std::string::npos) << n;
}

}  // namespace
}  // namespace ringtrain::nn
