// Subtract, Average, Maximum and Minimum (nn/layers/merge_layers.h), run by the CPU
// backend's merge kernel: hand-computed cases of Keras' formulas, the tie rule of the
// extremes' gradient (to the first input holding the extreme, as TensorFlow's gradient
// of maximum(a, b) goes to a where a >= b), central-difference gradient checks, the
// refusals, and TensorFlow.js (tests/oracle) for Average, Maximum and Minimum, forward
// and weight gradients within a relative 1e-4 (tfjs has no Subtract layer). The tfjs
// cases skip, with the reason, where the oracle is not installed.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cpu_run.h"
#include "nn/keras/keras_json.h"
#include "nn/layers/merge_layers.h"
#include "nn/model.h"
#include "test_util.h"
#include "testing/tfjs_oracle.h"

namespace ringtrain::nn {
namespace {

using nlohmann::json;
using Factory = StatusOr<std::unique_ptr<Layer>> (*)(const json&, std::string, const std::vector<Shape>&,
                                                     const std::string&);

std::unique_ptr<Layer> Make(Factory f, const std::vector<Shape>& in) {
  auto l = f(json::object(), "m", in, "t");
  EXPECT_TRUE(l.ok()) << l.status().ToString();
  return l.ok() ? std::move(l).value() : nullptr;
}

std::vector<float> Vec(const float* p, size_t n) { return p == nullptr ? std::vector<float>() : std::vector<float>(p, p + n); }

TEST(MergeMoreTest, HandComputedForwardAndBackward) {
  const std::vector<Shape> two = {Shape{4}, Shape{4}};
  const std::vector<float> a = {1, 2, -3, 4}, b = {5, 2, -7, 0.5f}, c = {0, 9, -3, 4}, dy = {1, -1, 2, -2};
  std::vector<const float*> din;
  {
    auto l = Make(&MergeLayer::CreateSubtract, two);
    testing::CpuRun run(*l);
    EXPECT_EQ(Vec(run.Forward({a.data(), b.data()}, 1, true), 4), (std::vector<float>{-4, 0, 4, 3.5f}));
    run.Backward(dy.data(), {true, true}, &din);
    EXPECT_EQ(Vec(din[0], 4), dy);
    EXPECT_EQ(Vec(din[1], 4), (std::vector<float>{-1, 1, -2, 2}));
    run.Backward(dy.data(), {false, true}, &din);
    EXPECT_EQ(din[0], nullptr);
  }
  {
    auto l = Make(&MergeLayer::CreateAverage, {Shape{4}, Shape{4}, Shape{4}});
    testing::CpuRun run(*l);
    // (a + b + c) / 3, the sum left to right then divided.
    std::vector<float> want(4);
    for (int i = 0; i < 4; ++i) want[i] = ((a[i] + b[i]) + c[i]) / 3.0f;
    EXPECT_EQ(Vec(run.Forward({a.data(), b.data(), c.data()}, 1, true), 4), want);
    run.Backward(dy.data(), {true, false, true}, &din);
    const std::vector<float> third = {1.0f / 3, -1.0f / 3, 2.0f / 3, -2.0f / 3};
    EXPECT_EQ(Vec(din[0], 4), third);
    EXPECT_EQ(din[1], nullptr);
    EXPECT_EQ(Vec(din[2], 4), third);
  }
  {
    // Ties: element 1 (a == b), element 2 (a == c), element 3 (a == c): the first holder wins.
    auto l = Make(&MergeLayer::CreateMaximum, {Shape{4}, Shape{4}, Shape{4}});
    testing::CpuRun run(*l);
    EXPECT_EQ(Vec(run.Forward({a.data(), b.data(), c.data()}, 1, true), 4), (std::vector<float>{5, 9, -3, 4}));
    run.Backward(dy.data(), {true, true, true}, &din);
    EXPECT_EQ(Vec(din[0], 4), (std::vector<float>{0, 0, 2, -2}));
    EXPECT_EQ(Vec(din[1], 4), (std::vector<float>{1, 0, 0, 0}));
    EXPECT_EQ(Vec(din[2], 4), (std::vector<float>{0, -1, 0, 0}));
  }
  {
    auto l = Make(&MergeLayer::CreateMinimum, {Shape{4}, Shape{4}, Shape{4}});
    testing::CpuRun run(*l);
    EXPECT_EQ(Vec(run.Forward({a.data(), b.data(), c.data()}, 1, true), 4), (std::vector<float>{0, 2, -7, 0.5f}));
    run.Backward(dy.data(), {true, true, true}, &din);
    EXPECT_EQ(Vec(din[0], 4), (std::vector<float>{0, -1, 0, 0}));  // element 1: a == b == 2, a first
    EXPECT_EQ(Vec(din[1], 4), (std::vector<float>{0, 0, 2, -2}));
    EXPECT_EQ(Vec(din[2], 4), (std::vector<float>{1, 0, 0, 0}));
  }
}

// Central differences of L = sum(y * r) for every input element of a merge of `k`
// inputs of shape [3, 2], batch 2 (the random inputs have no ties).
void CheckGradients(Factory f, int k, uint64_t seed) {
  const std::vector<Shape> in(static_cast<size_t>(k), Shape{3, 2});
  auto l = Make(f, in);
  ASSERT_NE(l, nullptr);
  SCOPED_TRACE(l->class_name());
  testing::CpuRun run(*l);
  const int batch = 2;
  const size_t n = static_cast<size_t>(batch) * 6;
  std::vector<std::vector<float>> x;
  for (int i = 0; i < k; ++i) x.push_back(testing::RandomVector(n, seed + i));
  const std::vector<float> r = testing::RandomVector(n, seed + 50);
  auto ptrs = [&] {
    std::vector<const float*> p;
    for (auto& v : x) p.push_back(v.data());
    return p;
  };
  run.Forward(ptrs(), batch, true);
  std::vector<const float*> din;
  run.Backward(r.data(), std::vector<bool>(static_cast<size_t>(k), true), &din);
  std::vector<std::vector<float>> analytic;
  for (int i = 0; i < k; ++i) analytic.push_back(Vec(din[i], n));
  const double eps = 1e-3;
  for (int i = 0; i < k; ++i) {
    for (size_t e = 0; e < n; ++e) {
      const float saved = x[i][e];
      x[i][e] = saved + static_cast<float>(eps);
      const double up = testing::Dot(run.Forward(ptrs(), batch, false), r);
      x[i][e] = saved - static_cast<float>(eps);
      const double down = testing::Dot(run.Forward(ptrs(), batch, false), r);
      x[i][e] = saved;
      testing::ExpectClose(analytic[i][e], (up - down) / (2 * eps),
                           "input " + std::to_string(i) + "[" + std::to_string(e) + "]");
    }
  }
}

TEST(MergeMoreTest, GradientsMatchCentralDifferences) {
  CheckGradients(&MergeLayer::CreateSubtract, 2, 10);
  CheckGradients(&MergeLayer::CreateAverage, 2, 20);
  CheckGradients(&MergeLayer::CreateAverage, 4, 30);
  CheckGradients(&MergeLayer::CreateMaximum, 3, 40);
  CheckGradients(&MergeLayer::CreateMinimum, 3, 50);
}

TEST(MergeMoreTest, NamesAndOps) {
  auto l = Make(&MergeLayer::CreateMaximum, {Shape{2}, Shape{2}, Shape{2}});
  EXPECT_STREQ(l->type(), "maximum");
  EXPECT_STREQ(l->class_name(), "Maximum");
  EXPECT_EQ(l->op().kind, ops::OpKind::kMaximum);
  EXPECT_EQ(l->op().num_inputs, 3);
  EXPECT_EQ(ops::Describe(l->op()), "Maximum (3 inputs)");
  EXPECT_EQ(Make(&MergeLayer::CreateSubtract, {Shape{2}, Shape{2}})->op().kind, ops::OpKind::kSubtract);
  EXPECT_EQ(Make(&MergeLayer::CreateAverage, {Shape{2}, Shape{2}})->op().kind, ops::OpKind::kAverage);
  EXPECT_EQ(Make(&MergeLayer::CreateMinimum, {Shape{2}, Shape{2}})->op().kind, ops::OpKind::kMinimum);
}

std::string BuildError(const char* text) {
  auto m = Model::FromJson(json::parse(text), 1);
  EXPECT_FALSE(m.ok()) << text;
  return m.ok() ? "" : m.status().message();
}

TEST(MergeMoreTest, BadArgumentsAreRefused) {
  struct Bad {
    const char* json_text;
    const char* message;
  };
  const Bad cases[] = {
      {R"({"input_shape": [3], "layers": [{"type": "dense", "name": "a", "units": 2},
          {"type": "dense", "name": "b", "units": 2, "inputs": ["input"]},
          {"type": "dense", "name": "c", "units": 2, "inputs": ["input"]},
          {"type": "Subtract", "inputs": ["a", "b", "c"]}]})",
       "model.layers[3] (subtract): Subtract takes exactly two inputs (x0 - x1); list two in 'inputs' (it has 3)"},
      {R"({"input_shape": [3], "layers": [{"type": "dense", "units": 2}, {"type": "Subtract"}]})",
       "model.layers[1] (subtract): Subtract takes exactly two inputs"},
      {R"({"input_shape": [3], "layers": [{"type": "dense", "units": 2}, {"type": "Average"}]})",
       "model.layers[1] (average): Average merges two or more inputs; list them in 'inputs' (it has 1)"},
      {R"({"input_shape": [3], "layers": [{"type": "dense", "name": "a", "units": 2},
          {"type": "dense", "name": "b", "units": 3, "inputs": ["input"]}, {"type": "Maximum", "inputs": ["a", "b"]}]})",
       "model.layers[2] (maximum): Maximum needs inputs of the same shape, but input 0 is (None, 2) and input 1 is "
       "(None, 3)"},
      {R"({"input_shape": [3], "layers": [{"type": "dense", "name": "a", "units": 2},
          {"type": "Minimum", "axis": 1, "inputs": ["a", "a"]}]})",
       "model.layers[1] (minimum): unknown field 'axis'"},
  };
  for (const Bad& c : cases) {
    const std::string got = BuildError(c.json_text);
    EXPECT_NE(got.find(c.message), std::string::npos) << "got: " << got << "\nwant: " << c.message;
  }
}

TEST(MergeMoreTest, CompactModelTrains) {
  auto m = Model::FromJson(json::parse(R"({"input_shape": [3], "layers": [
      {"type": "dense", "name": "a", "units": 2}, {"type": "dense", "name": "b", "units": 2, "inputs": ["input"]},
      {"type": "subtract", "name": "d", "inputs": ["a", "b"]},
      {"type": "Maximum", "name": "mx", "inputs": ["d", "a", "b"]}]})"),
                           1);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const std::vector<float> x = testing::RandomVector(6, 3);
  const float* y = (*m)->Forward(x.data(), 2, true);
  ASSERT_NE(y, nullptr);
  const std::vector<float> dy = {1, 1, 1, 1};
  (*m)->Backward(dy.data());
}

// ---------------------------------------------------------------- TensorFlow.js

json L(const char* cls, json config, std::vector<std::string> inputs = {}) {
  json l = {{"class_name", cls}, {"config", std::move(config)}};
  if (!inputs.empty()) l["inputs"] = inputs;
  return l;
}

// Three Dense branches from a [4] input merged by `cls`, then Dense(3): tfjs builds the
// model, ringtrain loads its Keras JSON; the forward output and every weight gradient
// (each branch's kernel gradient is the merge's input gradient for that branch) agree.
void CheckAgainstTfjs(const char* cls, int branches, uint64_t seed) {
  using ::ringtrain::testing::AllClose;
  using ::ringtrain::testing::RunTfjs;
  using ::ringtrain::testing::TfjsTensor;
  using ::ringtrain::testing::TfjsValues;
  SCOPED_TRACE(cls);
  json layers = json::array();
  std::vector<std::string> names;
  for (int b = 0; b < branches; ++b) {
    names.push_back("branch" + std::to_string(b));
    layers.push_back(L("Dense", {{"name", names.back()}, {"units", 5}}, {"input"}));
  }
  layers.push_back(L(cls, {{"name", "merge"}}, names));
  layers.push_back(L("Dense", {{"name", "head"}, {"units", 3}}, {"merge"}));
  auto built = RunTfjs({{"kind", "build"},
                        {"inputs", {{{"name", "input"}, {"shape", {4}}}}},
                        {"layers", layers},
                        {"sequential", false}});
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  auto compact = KerasJsonToCompact((*built)["model_json"]);
  ASSERT_TRUE(compact.ok()) << compact.status().ToString();
  auto m = Model::FromJson(*compact, 1);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  Model& model = **m;
  json weights = json::object();
  for (const ParamInfo& p : model.param_infos()) {
    const std::vector<float> w = testing::RandomVector(p.count, seed++, 0.5f);
    std::copy(w.begin(), w.end(), model.params() + p.offset);
    weights[p.name] = TfjsTensor(p.shape, w);
  }
  const int batch = 3;
  const std::vector<float> x = testing::RandomVector(batch * 4, seed + 100);
  const std::vector<float> dy = testing::RandomVector(batch * 3, seed + 101);
  auto r = RunTfjs({{"kind", "model"},
                    {"model", (*built)["model_json"]},
                    {"weights", weights},
                    {"inputs", {TfjsTensor({batch, 4}, x)}},
                    {"training", true},
                    {"dy", TfjsTensor({batch, 3}, dy)}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const std::vector<float> want = TfjsValues((*r)["outputs"][0], {batch, 3});
  const float* out = model.Forward(x.data(), batch, /*training=*/true);
  EXPECT_TRUE(AllClose(Vec(out, want.size()), want)) << "forward output";
  model.Backward(dy.data());
  for (const ParamInfo& p : model.param_infos()) {
    const json& g = (*r)["weight_grads"];
    ASSERT_TRUE(g.contains(p.name)) << "tfjs gave no gradient for " << p.name;
    EXPECT_TRUE(AllClose(Vec(model.grads() + p.offset, p.count), TfjsValues(g[p.name], p.shape)))
        << "gradient of " << p.name;
  }
}

TEST(MergeMoreTfjsTest, AverageMaximumMinimum) {
  RT_REQUIRE_TFJS();
  CheckAgainstTfjs("Average", 2, 100);
  CheckAgainstTfjs("Average", 3, 200);
  CheckAgainstTfjs("Maximum", 3, 300);
  CheckAgainstTfjs("Minimum", 3, 400);
}

}  // namespace
}  // namespace ringtrain::nn
