// Activations, initializers and the simple layers without the tfjs oracle: the
// initializers' statistics and glorot_uniform's unchanged bits, each activation's
// gradient against central differences and Keras' formulas where tfjs has no such
// activation (leaky_relu, silu, exponential, ReLU's threshold), the compact form, the
// GPU descriptions, and every refusal naming its field.
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "backends/cpu/activations.h"
#include "nn/layers/activation_layers.h"
#include "nn/layers/dense.h"
#include "nn/initializers/init.h"
#include "nn/initializers/initializers.h"
#include "nn/keras/keras_json.h"
#include "nn/layers/merge_layers.h"
#include "nn/model.h"
#include "nn/layers/rescaling.h"
#include "test_util.h"
#include "testing/source_dir.h"

namespace ringtrain::nn {
namespace {

using nlohmann::json;

Initializer Parse(const json& spec) {
  auto i = GetInitializer(json{{"kernel_initializer", spec}}, "kernel_initializer", Initializer::kZeros, "t");
  EXPECT_TRUE(i.ok()) << spec.dump() << ": " << i.status().ToString();
  return i.ok() ? *i : Initializer::kZeros;
}

std::string InitError(const json& spec) {
  auto i = GetInitializer(json{{"kernel_initializer", spec}}, "kernel_initializer", Initializer::kZeros, "ctx");
  EXPECT_FALSE(i.ok()) << spec.dump();
  return i.ok() ? "" : i.status().message();
}

// ---- initializers ----------------------------------------------------------------------

TEST(InitializerTest, GlorotUniformKeepsItsBits) {
  for (auto [fan_in, fan_out] : {std::pair<int64_t, int64_t>{784, 128}, {27, 288}, {1, 1}, {4608, 512}}) {
    const size_t n = 5000;
    std::vector<float> want(n), got(n);
    GlorotUniform(want.data(), n, fan_in, fan_out, 42, 7);
    for (const json& spec : {json("glorot_uniform"), json("GlorotUniform"),
                             json::parse(R"({"class_name": "GlorotUniform", "config": {"seed": null}})"),
                             json::parse(R"({"class_name": "VarianceScaling",
                                             "config": {"scale": 1, "mode": "fan_avg", "distribution": "uniform"}})")}) {
      Initialize(Parse(spec), got.data(), n, fan_in, fan_out, 42, 7);
      EXPECT_EQ(std::memcmp(got.data(), want.data(), n * sizeof(float)), 0) << spec.dump() << " " << fan_in;
    }
    Initialize(Initializer::kGlorotUniform, got.data(), n, fan_in, fan_out, 42, 7);
    EXPECT_EQ(std::memcmp(got.data(), want.data(), n * sizeof(float)), 0);
  }
}

struct Stats {
  double mean = 0, var = 0, min = 1e30, max = -1e30;
};

Stats Measure(const std::vector<float>& v) {
  Stats s;
  for (float x : v) {
    s.mean += x;
    s.min = std::min<double>(s.min, x);
    s.max = std::max<double>(s.max, x);
  }
  s.mean /= static_cast<double>(v.size());
  for (float x : v) s.var += (x - s.mean) * (x - s.mean);
  s.var /= static_cast<double>(v.size());
  return s;
}

struct StatCase {
  json spec;
  double mean, var;  // expected
  double lo, hi;     // every value within [lo, hi]
};

TEST(InitializerTest, StatisticsMatchKeras) {
  const int64_t fan_in = 300, fan_out = 200;
  const double avg = 250.0;
  const double t = 0.87962566103423978;  // the stddev of a standard normal truncated at 2
  const std::vector<StatCase> cases = {
      {"glorot_uniform", 0, 1 / avg, -std::sqrt(3 / avg), std::sqrt(3 / avg)},
      {"glorot_normal", 0, 1 / avg, -2 * std::sqrt(1 / avg) / t, 2 * std::sqrt(1 / avg) / t},
      {"he_uniform", 0, 2.0 / fan_in, -std::sqrt(6.0 / fan_in), std::sqrt(6.0 / fan_in)},
      {"he_normal", 0, 2.0 / fan_in, -2 * std::sqrt(2.0 / fan_in) / t, 2 * std::sqrt(2.0 / fan_in) / t},
      {"lecun_uniform", 0, 1.0 / fan_in, -std::sqrt(3.0 / fan_in), std::sqrt(3.0 / fan_in)},
      {"lecun_normal", 0, 1.0 / fan_in, -2 * std::sqrt(1.0 / fan_in) / t, 2 * std::sqrt(1.0 / fan_in) / t},
      {"random_normal", 0, 0.05 * 0.05, -1, 1},
      {"random_uniform", 0, 0.1 * 0.1 / 12, -0.05, 0.05},
      {"truncated_normal", 0, 0.05 * 0.05 * t * t, -0.1, 0.1},
      {json::parse(R"({"class_name": "RandomNormal", "config": {"mean": 1.5, "stddev": 0.2, "seed": 3}})"), 1.5,
       0.04, 0, 3},
      {json::parse(R"({"class_name": "RandomUniform", "config": {"minval": 2, "maxval": 6}})"), 4, 16.0 / 12, 2, 6},
      {json::parse(R"({"class_name": "TruncatedNormal", "config": {"mean": -1, "stddev": 0.5}})"), -1,
       0.25 * t * t, -2, 0},
      {json::parse(R"({"class_name": "VarianceScaling",
                       "config": {"scale": 3, "mode": "fan_out", "distribution": "untruncated_normal"}})"),
       0, 3.0 / fan_out, -1, 1},
      {json::parse(R"({"class_name": "VarianceScaling", "config": {"scale": 2, "mode": "fan_in",
                                                                   "distribution": "normal"}})"),
       0, 2.0 / fan_in, -2 * std::sqrt(2.0 / fan_in) / t, 2 * std::sqrt(2.0 / fan_in) / t},
      {"variance_scaling", 0, 1.0 / fan_in, -2 * std::sqrt(1.0 / fan_in) / t, 2 * std::sqrt(1.0 / fan_in) / t},
      {json::parse(R"({"class_name": "Constant", "config": {"value": 0.25}})"), 0.25, 0, 0.25, 0.25},
      {"zeros", 0, 0, 0, 0},
      {"Ones", 1, 0, 1, 1},
  };
  const size_t n = 400000;
  std::vector<float> v(n);
  for (const StatCase& c : cases) {
    SCOPED_TRACE(c.spec.dump());
    Initialize(Parse(c.spec), v.data(), n, fan_in, fan_out, 5, 3);
    const Stats s = Measure(v);
    const double sd = std::sqrt(c.var);
    EXPECT_NEAR(s.mean, c.mean, 5 * sd / std::sqrt(static_cast<double>(n)) + 1e-7);
    EXPECT_NEAR(s.var, c.var, 0.02 * c.var + 1e-12);
    EXPECT_GE(s.min, c.lo - 1e-6 * std::abs(c.lo) - 1e-7);
    EXPECT_LE(s.max, c.hi + 1e-6 * std::abs(c.hi) + 1e-7);
    if (c.var > 0) {  // the range is used: the extremes come near the limits
      EXPECT_LT(s.min, c.mean - 0.9 * std::min(c.mean - c.lo, 2 * sd));
      EXPECT_GT(s.max, c.mean + 0.9 * std::min(c.hi - c.mean, 2 * sd));
    }
  }
}

TEST(InitializerTest, DeterministicPerSeedAndStream) {
  const Initializer he = Parse("he_normal");
  std::vector<float> a(1000), b(1000), c(1000);
  Initialize(he, a.data(), a.size(), 10, 10, 1, 0);
  Initialize(he, b.data(), b.size(), 10, 10, 1, 0);
  Initialize(he, c.data(), c.size(), 10, 10, 1, 1);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(InitializerTest, Refusals) {
  EXPECT_NE(InitError("orthogonal").find("ctx: 'kernel_initializer': unknown initializer \"orthogonal\" (supported: "),
            std::string::npos);
  EXPECT_NE(InitError(3).find("'kernel_initializer' must be an initializer name"), std::string::npos);
  EXPECT_NE(InitError(json::parse(R"({"class_name": "HeNormal", "config": {"scale": 2}})"))
                .find("'kernel_initializer.config': unknown field 'scale'"),
            std::string::npos);
  EXPECT_NE(InitError(json::parse(R"({"class_name": "VarianceScaling", "config": {"mode": "fan_sum"}})"))
                .find("'mode' must be \"fan_in\", \"fan_out\" or \"fan_avg\""),
            std::string::npos);
  EXPECT_NE(InitError(json::parse(R"({"class_name": "VarianceScaling", "config": {"distribution": "cauchy"}})"))
                .find("'distribution' must be"),
            std::string::npos);
  EXPECT_NE(InitError(json::parse(R"({"class_name": "VarianceScaling", "config": {"scale": 0}})"))
                .find("'scale' must be a positive number"),
            std::string::npos);
  EXPECT_NE(InitError(json::parse(R"({"class_name": "RandomNormal", "config": {"stddev": -1}})")).find("'stddev'"),
            std::string::npos);
  EXPECT_NE(InitError(json::parse(R"({"class_name": "RandomUniform", "config": {"minval": 1, "maxval": 0}})"))
                .find("'minval' must not exceed 'maxval'"),
            std::string::npos);
  EXPECT_NE(InitError(json::parse(R"({"class_name": "Zeros", "config": {"seed": "x"}})")).find("'seed' must be"),
            std::string::npos);
  EXPECT_NE(InitError(json::parse(R"({"class_name": "Zeros", "shared_object_id": 1})")).find("'shared_object_id'"),
            std::string::npos);
}

// ---- initializers in a model -------------------------------------------------------------

std::unique_ptr<Model> Build(const json& j, uint64_t seed = 1) {
  auto m = Model::FromJson(j, seed);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m).value() : nullptr;
}

std::string BuildError(const json& j) {
  auto m = Model::FromJson(j, 1);
  EXPECT_FALSE(m.ok()) << j.dump();
  return m.ok() ? "" : m.status().message();
}

TEST(InitializerModelTest, DenseAndConvTakeKerasInitializers) {
  auto m = Build(json::parse(R"({"input_shape": [4, 4, 2], "layers": [
      {"type": "Conv2D", "filters": 3, "kernel_size": 3, "kernel_initializer": "ones",
       "bias_initializer": {"class_name": "Constant", "config": {"value": 0.5}}, "kernel_regularizer": null},
      {"type": "Flatten"},
      {"type": "Dense", "units": 2, "kernel_initializer": {"class_name": "HeUniform", "config": {"seed": 7}},
       "bias_initializer": "ones", "bias_regularizer": null}]})"));
  ASSERT_NE(m, nullptr);
  const auto& infos = m->param_infos();
  ASSERT_EQ(infos.size(), 4u);
  auto values = [&](size_t k) { return std::vector<float>(m->params() + infos[k].offset, m->params() + infos[k].offset + infos[k].count); };
  EXPECT_EQ(values(0), std::vector<float>(3 * 3 * 2 * 3, 1.0f));
  EXPECT_EQ(values(1), std::vector<float>(3, 0.5f));
  EXPECT_EQ(values(3), std::vector<float>(2, 1.0f));
  // he_uniform over fan_in 2*2*3 = 12: |w| <= sqrt(6 / 12), the job's seed and the
  // weight's stream deciding the values.
  std::vector<float> want(infos[2].count);
  Initialize(Parse("he_uniform"), want.data(), want.size(), 12, 2, 1, 2);
  EXPECT_EQ(values(2), want);
  for (float w : want) EXPECT_LE(std::abs(w), std::sqrt(0.5f));
}

TEST(InitializerModelTest, RegularizersAndInitializersByKerasName) {
  EXPECT_NE(BuildError(json::parse(R"({"input_shape": [3], "layers": [{"type": "dense", "units": 2,
      "kernel_regularizer": {"class_name": "L3", "config": {"l2": 0.01}}}]})"))
                .find("model.layers[0] (dense): kernel_regularizer"),
            std::string::npos);
  EXPECT_NE(BuildError(json::parse(R"({"input_shape": [3], "layers": [{"type": "dense", "units": 2,
      "kernel_initializer": "he_unifrom"}]})"))
                .find("model.layers[0] (dense): 'kernel_initializer': unknown initializer \"he_unifrom\""),
            std::string::npos);
}

// Keras 3 and tfjs model JSON (tests/nn/keras_json) load, their initializers included:
// the first kernel holds the values of the initializer its config names (glorot_normal
// here: VarianceScaling, fan_avg, truncated normal).
TEST(InitializerModelTest, KerasJsonInitializersLoad) {
  for (const char* name : {"keras3_frozen.json", "keras3_nested.json", "tfjs_frozen.json", "tfjs_nested.json"}) {
    SCOPED_TRACE(name);
    const std::string text = ::ringtrain::testing::ReadSourceFile(std::string("tests/nn/keras_json/") + name);
    ASSERT_FALSE(text.empty()) << "cannot read the fixture";
    auto compact = KerasJsonToCompact(json::parse(text));
    ASSERT_TRUE(compact.ok()) << compact.status().ToString();
    auto m = Build(*compact, 3);
    ASSERT_NE(m, nullptr);
    const json& first = (*compact)["layers"][0];
    ASSERT_TRUE(first.contains("kernel_initializer")) << first.dump();
    const ParamInfo& k = m->param_infos()[0];
    ASSERT_EQ(k.shape.size(), 4u);  // a Conv2D kernel [kh, kw, in, out]
    const int64_t area = k.shape[0] * k.shape[1];
    std::vector<float> want(k.count);
    Initialize(Parse(first["kernel_initializer"]), want.data(), want.size(), area * k.shape[2], area * k.shape[3], 3, 0);
    EXPECT_EQ(std::vector<float>(m->params() + k.offset, m->params() + k.offset + k.count), want);
    EXPECT_EQ(Parse(first["kernel_initializer"]), Parse("glorot_normal"));
  }
}

// ---- activations -------------------------------------------------------------------------

const Activation kAll[] = {Activation::kLinear,   Activation::kRelu,     Activation::kRelu6,    Activation::kSigmoid,
                           Activation::kTanh,     Activation::kSoftmax,  Activation::kGelu,     Activation::kGeluTanh,
                           Activation::kSwish,    Activation::kElu,      Activation::kSelu,     Activation::kLeakyRelu,
                           Activation::kSoftplus, Activation::kSoftsign, Activation::kMish,     Activation::kExponential};

// Dense(units=4, act) on 3 inputs: kernel, bias and input gradients against central
// differences, for every activation.
TEST(ActivationTest, DenseGradientsForEveryActivation) {
  for (Activation act : kAll) {
    SCOPED_TRACE(ActivationName(act));
    auto layer = Dense::Create({{"units", 4}, {"activation", ActivationName(act)}}, "dense", Shape{3}, "t");
    ASSERT_TRUE(layer.ok()) << layer.status().ToString();
    testing::CheckLayerGradients(**layer, 3, 77);
  }
}

TEST(ActivationTest, KerasValues) {
  // Keras 3's formulas at x = -1 and 1 (and 7 for relu6), computed in double.
  struct Case {
    const char* name;
    float x;
    double want;
  };
  const Case cases[] = {
      {"leaky_relu", -1, -0.2},  {"leaky_relu", 1, 1},       {"exponential", 1, std::exp(1.0)},
      {"silu", 1, 1 / (1 + std::exp(-1.0))},                 {"swish", -1, -1 / (1 + std::exp(1.0))},
      {"elu", -1, std::exp(-1.0) - 1},                       {"selu", -1, 1.0507009873554805 * 1.6732632423543772 * (std::exp(-1.0) - 1)},
      {"selu", 1, 1.0507009873554805},                       {"gelu", 1, 0.5 * (1 + std::erf(1 / std::sqrt(2.0)))},
      {"gelu_new", 1, 0.5 * (1 + std::tanh(std::sqrt(2 / M_PI) * (1 + 0.044715)))},
      {"relu6", 7, 6},           {"softplus", -1, std::log1p(std::exp(-1.0))}, {"softsign", -1, -0.5},
      {"mish", 1, std::tanh(std::log1p(std::exp(1.0)))},
  };
  for (const Case& c : cases) {
    auto act = GetActivation({{"activation", c.name}}, "t");
    ASSERT_TRUE(act.ok()) << c.name;
    float y = 0;
    backends::cpu::ActivationForward(*act, &c.x, 1, 1, &y);
    EXPECT_NEAR(y, c.want, 1e-6 * std::max(1.0, std::abs(c.want))) << c.name << "(" << c.x << ")";
  }
}

TEST(ActivationTest, SiluIsSwishBitForBit) {
  auto a = Dense::Create({{"units", 4}, {"activation", "silu"}}, "d", Shape{3}, "t");
  auto b = Dense::Create({{"units", 4}, {"activation", "swish"}}, "d", Shape{3}, "t");
  ASSERT_TRUE(a.ok() && b.ok());
  const std::vector<float> k = testing::RandomVector(12, 1), bias = testing::RandomVector(4, 2);
  testing::CpuRun ra(**a, /*trainable=*/false), rb(**b, /*trainable=*/false);
  for (testing::CpuRun* r : {&ra, &rb}) {
    std::copy(k.begin(), k.end(), r->param(0));
    std::copy(bias.begin(), bias.end(), r->param(1));
  }
  const std::vector<float> x = testing::RandomVector(6, 3);
  const float* ya = ra.Forward(x.data(), 2, false);
  const float* yb = rb.Forward(x.data(), 2, false);
  EXPECT_EQ(std::vector<float>(ya, ya + 8), std::vector<float>(yb, yb + 8));
}

// Each layer's op carries its activation, whatever it is: the backends decide what they run.
TEST(ActivationTest, OpsCarryTheActivation) {
  auto m = Build(json::parse(R"({"input_shape": [4, 4, 1], "layers": [
      {"type": "conv2d", "filters": 2, "kernel_size": 3, "activation": "relu"},
      {"type": "conv2d", "filters": 2, "kernel_size": 1, "activation": "gelu"},
      {"type": "flatten"},
      {"type": "dense", "units": 3, "activation": "tanh"},
      {"type": "dense", "units": 2}]})"));
  ASSERT_NE(m, nullptr);
  const std::vector<ops::Node>& d = m->graph().nodes;
  EXPECT_EQ(d[0].op.kind, ops::OpKind::kConv2D);
  EXPECT_EQ(d[0].op.activation, Activation::kRelu);
  EXPECT_EQ(d[1].op.kind, ops::OpKind::kConv2D);
  EXPECT_EQ(d[1].op.activation, Activation::kGelu);
  EXPECT_EQ(ops::Describe(d[1].op), "Conv2D (1x1, gelu)");
  EXPECT_EQ(d[2].op.kind, ops::OpKind::kView);
  EXPECT_EQ(d[3].op.kind, ops::OpKind::kDense);
  EXPECT_EQ(d[3].op.activation, Activation::kTanh);
  EXPECT_EQ(d[4].op.activation, Activation::kLinear);
  EXPECT_EQ(d[4].class_name, "Dense");
}

// ---- the simple layers -------------------------------------------------------------------

TEST(SimpleLayersTest, ReLUArgumentsFollowKeras) {
  // Keras' ReLU(max_value=2, negative_slope=0.1, threshold=0.5).
  auto l = ActivationLayer::CreateReLU({{"max_value", 2}, {"negative_slope", 0.1}, {"threshold", 0.5}}, "r",
                                       Shape{5}, "t");
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  const std::vector<float> x = {-1.0f, 0.25f, 1.0f, 3.0f, 0.75f};
  testing::CpuRun run(**l);
  const float* y = run.Forward(x.data(), 1, true);
  const std::vector<float> want = {-0.15f, -0.025f, 1.0f, 2.0f, 0.75f};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(y[i], want[i], 1e-6) << i;
  const std::vector<float> dy(5, 1.0f);
  const float* g = run.Backward(dy.data(), true);
  const std::vector<float> want_g = {0.1f, 0.1f, 1.0f, 0.0f, 1.0f};
  EXPECT_EQ(std::vector<float>(g, g + 5), want_g);
  testing::CheckLayerGradients(**l, 3, 11);
}

TEST(SimpleLayersTest, GradientsOfEveryLayer) {
  auto check = [](StatusOr<std::unique_ptr<Layer>> l, uint64_t seed) {
    ASSERT_TRUE(l.ok()) << l.status().ToString();
    testing::CheckLayerGradients(**l, 2, seed);
  };
  check(ActivationLayer::CreateActivation({{"activation", "selu"}}, "a", Shape{2, 3}, "t"), 1);
  check(ActivationLayer::CreateLeakyReLU({{"negative_slope", 0.2}}, "l", Shape{6}, "t"), 2);
  check(ActivationLayer::CreateLeakyReLU({{"alpha", 0.1}}, "l", Shape{6}, "t"), 3);
  check(ActivationLayer::CreateSoftmax({{"axis", -1}}, "s", Shape{2, 4}, "t"), 4);
  check(ActivationLayer::CreateReLU(json::object(), "r", Shape{7}, "t"), 5);
  check(Rescaling::Create({{"scale", {0.5, -2.0, 3.0}}, {"offset", {1.0, 0.0, -1.0}}}, "r", Shape{2, 3}, "t"), 6);
}

TEST(SimpleLayersTest, RescalingPerChannel) {
  auto l = Rescaling::Create({{"scale", {2.0, 10.0}}, {"offset", 1.0}}, "r", Shape{2, 2}, "t");
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  const std::vector<float> x = {1, 1, 2, 3};
  testing::CpuRun run(**l);
  const float* y = run.Forward(x.data(), 1, true);
  EXPECT_EQ(std::vector<float>(y, y + 4), (std::vector<float>{3, 11, 5, 31}));
}

TEST(SimpleLayersTest, MergeLayersForwardAndBackward) {
  const std::vector<Shape> two = {Shape{2, 2}, Shape{2, 2}};
  const std::vector<float> a = {1, 2, 3, 4}, b = {5, 6, 7, 8}, dy = {1, -1, 2, -2};
  std::vector<const float*> din(2);
  {
    auto l = MergeLayer::CreateMultiply(json::object(), "m", two, "t");
    ASSERT_TRUE(l.ok());
    testing::CpuRun run(**l);
    const float* y = run.Forward({a.data(), b.data()}, 1, true);
    EXPECT_EQ(std::vector<float>(y, y + 4), (std::vector<float>{5, 12, 21, 32}));
    run.Backward(dy.data(), {true, true}, &din);
    EXPECT_EQ(std::vector<float>(din[0], din[0] + 4), (std::vector<float>{5, -6, 14, -16}));
    EXPECT_EQ(std::vector<float>(din[1], din[1] + 4), (std::vector<float>{1, -2, 6, -8}));
    run.Backward(dy.data(), {false, true}, &din);
    EXPECT_EQ(din[0], nullptr);
  }
  {
    // Axis 1 (the first per-example axis) of [2, 2] and [1, 2]: rows stacked.
    auto l = MergeLayer::CreateConcatenate({{"axis", 1}}, "c", {Shape{2, 2}, Shape{1, 2}}, "t");
    ASSERT_TRUE(l.ok()) << l.status().ToString();
    EXPECT_EQ((*l)->output_shape(), (Shape{3, 2}));
    testing::CpuRun run(**l);
    const float* y = run.Forward({a.data(), b.data()}, 1, true);
    EXPECT_EQ(std::vector<float>(y, y + 6), (std::vector<float>{1, 2, 3, 4, 5, 6}));
    const std::vector<float> d6 = {1, 2, 3, 4, 5, 6};
    run.Backward(d6.data(), {true, true}, &din);
    EXPECT_EQ(std::vector<float>(din[1], din[1] + 2), (std::vector<float>{5, 6}));
  }
  {
    auto l = MergeLayer::CreateConcatenate(json::object(), "c", two, "t");  // axis -1
    ASSERT_TRUE(l.ok());
    testing::CpuRun run(**l);
    const float* y = run.Forward({a.data(), b.data()}, 1, true);
    EXPECT_EQ(std::vector<float>(y, y + 8), (std::vector<float>{1, 2, 5, 6, 3, 4, 7, 8}));
  }
}

TEST(SimpleLayersTest, CompactFormFunctionalModel) {
  // A residual block: dense -> relu -> dense, added to its input; then concatenated with
  // a rescaled copy and softmaxed.
  auto m = Build(json::parse(R"({"input_shape": [4], "layers": [
      {"type": "Dense", "name": "d0", "units": 4},
      {"type": "ReLU", "name": "r"},
      {"type": "dense", "name": "d1", "units": 4, "kernel_initializer": "zeros"},
      {"type": "add", "name": "sum", "inputs": ["d0", "d1"]},
      {"type": "Rescaling", "name": "half", "scale": 0.5, "inputs": ["sum"]},
      {"type": "concatenate", "name": "cat", "inputs": ["sum", "half"]},
      {"type": "LeakyReLU", "name": "lr", "negative_slope": 0.1},
      {"type": "Multiply", "name": "sq", "inputs": ["lr", "lr"]},
      {"type": "Activation", "name": "act", "activation": "linear"},
      {"type": "softmax", "name": "sm"}]})"));
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->num_classes(), 8);
  const std::vector<float> x = testing::RandomVector(8, 9);
  const float* y = m->Forward(x.data(), 2, false);
  for (int r = 0; r < 2; ++r) {
    double sum = 0;
    for (int k = 0; k < 8; ++k) sum += y[r * 8 + k];
    EXPECT_NEAR(sum, 1.0, 1e-5);
  }
}

// docs/reference/layers.md's example: a residual connection from the model input.
TEST(SimpleLayersTest, ResidualExampleTrains) {
  auto m = Build(json::parse(R"({"input_shape": [8, 8, 4], "layers": [
      {"type": "Conv2D", "name": "c1", "filters": 4, "kernel_size": 3, "padding": "same", "activation": "relu",
       "kernel_initializer": "he_normal"},
      {"type": "Conv2D", "name": "c2", "filters": 4, "kernel_size": 3, "padding": "same"},
      {"type": "Add", "name": "sum", "inputs": ["input", "c2"]},
      {"type": "ReLU", "name": "out"},
      {"type": "Flatten"}, {"type": "Dense", "units": 10}]})"));
  ASSERT_NE(m, nullptr);
  const std::vector<float> x = testing::RandomVector(2 * 8 * 8 * 4, 5);
  const std::vector<float> dy = testing::RandomVector(2 * 10, 6);
  m->Forward(x.data(), 2, true);
  m->Backward(dy.data());
  double c1_grad = 0;
  for (size_t i = 0; i < m->param_infos()[0].count; ++i) c1_grad += std::abs(m->grads()[i]);
  EXPECT_GT(c1_grad, 0.0) << "no gradient reached the first convolution";
}

struct BadLayer {
  const char* json_text;
  const char* message;
};

TEST(SimpleLayersTest, RefusalsNameTheField) {
  const BadLayer cases[] = {
      {R"({"input_shape": [3], "layers": [{"type": "dense", "units": 2}, {"type": "Activation"}]})",
       "model.layers[1] (activation): missing 'activation'"},
      {R"({"input_shape": [3], "layers": [{"type": "dense", "units": 2}, {"type": "Activation", "activation": "hard_silu"}]})",
       "model.layers[1] (activation): unknown 'activation' \"hard_silu\""},
      {R"({"input_shape": [3], "layers": [{"type": "dense", "units": 2}, {"type": "ReLU", "max_value": -1}]})",
       "model.layers[1] (re_lu): 'max_value' must be a number in [0, inf)"},
      {R"({"input_shape": [3], "layers": [{"type": "dense", "units": 2}, {"type": "ReLU", "threshold": -0.5}]})",
       "model.layers[1] (re_lu): 'threshold' must be"},
      {R"({"input_shape": [3], "layers": [{"type": "dense", "units": 2}, {"type": "ReLU", "negative_slope": -0.5}]})",
       "model.layers[1] (re_lu): 'negative_slope' must be"},
      {R"({"input_shape": [3], "layers": [{"type": "dense", "units": 2}, {"type": "LeakyReLU", "alpha": 0.1, "negative_slope": 0.1}]})",
       "model.layers[1] (leaky_re_lu): give 'negative_slope' (Keras 3) or 'alpha' (tf.keras 2), not both"},
      {R"({"input_shape": [3], "layers": [{"type": "dense", "units": 2}, {"type": "LeakyReLU", "alpha": "big"}]})",
       "model.layers[1] (leaky_re_lu): 'alpha' must be"},
      {R"({"input_shape": [2, 3], "layers": [{"type": "Softmax", "axis": 1}, {"type": "flatten"}]})",
       "model.layers[0] (softmax): 'axis' 1 is not supported; Softmax runs over the last axis only"},
      {R"({"input_shape": [3], "layers": [{"type": "Rescaling"}]})", "model.layers[0] (rescaling): missing 'scale'"},
      {R"({"input_shape": [3], "layers": [{"type": "Rescaling", "scale": [1, 2]}]})",
       "model.layers[0] (rescaling): 'scale' must be a finite number or a list of 3"},
      {R"({"input_shape": [3], "layers": [{"type": "Rescaling", "scale": 1, "offset": "x"}]})",
       "model.layers[0] (rescaling): 'offset' must be"},
      {R"({"input_shape": [3], "layers": [{"type": "dense", "name": "a", "units": 2}, {"type": "dense", "name": "b", "units": 3, "inputs": ["input"]},
          {"type": "Add", "inputs": ["a", "b"]}]})",
       "model.layers[2] (add): Add needs inputs of the same shape, but input 0 is (None, 2) and input 1 is (None, 3)"},
      {R"({"input_shape": [3], "layers": [{"type": "dense", "name": "a", "units": 2}, {"type": "dense", "name": "b", "units": 3, "inputs": ["input"]},
          {"type": "Multiply", "inputs": ["a", "b"]}]})",
       "model.layers[2] (multiply): Multiply needs inputs of the same shape"},
      {R"({"input_shape": [3], "layers": [{"type": "dense", "units": 2}, {"type": "Add"}]})",
       "model.layers[1] (add): Add merges two or more inputs; list them in 'inputs' (it has 1)"},
      {R"({"input_shape": [3], "layers": [{"type": "dense", "name": "a", "units": 2}, {"type": "Concatenate", "axis": 0, "inputs": ["a", "a"]}]})",
       "model.layers[1] (concatenate): 'axis' must be an axis of the inputs other than the batch (1 to 1, or -1 to -1), got 0"},
      {R"({"input_shape": [2, 2, 1], "layers": [{"type": "conv2d", "name": "a", "filters": 2, "kernel_size": 1},
          {"type": "conv2d", "name": "b", "filters": 2, "kernel_size": 2, "inputs": ["input"]},
          {"type": "Concatenate", "inputs": ["a", "b"]}, {"type": "flatten"}]})",
       "model.layers[2] (concatenate): Concatenate needs inputs whose shapes agree except along the axis, but input 0 is "
       "(None, 2, 2, 2) and input 1 is (None, 1, 1, 2)"},
      {R"({"input_shape": [3], "layers": [{"type": "dense", "units": 2, "bias_regularizer": "l3"}]})",
       "model.layers[0] (dense): bias_regularizer"},
      {R"({"input_shape": [3], "layers": [{"type": "dense", "units": 2}, {"type": "Add", "name": "x", "alpha": 1, "inputs": ["dense", "dense"]}]})",
       "model.layers[1] (x): unknown field 'alpha'"},
  };
  for (const BadLayer& c : cases) {
    const std::string got = BuildError(json::parse(c.json_text));
    EXPECT_NE(got.find(c.message), std::string::npos) << "got: " << got << "\nwant: " << c.message;
  }
}

}  // namespace
}  // namespace ringtrain::nn
