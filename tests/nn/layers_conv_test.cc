// Conv2D's dilation_rate and groups, DepthwiseConv2D, SeparableConv2D, AveragePooling2D,
// GlobalAveragePooling2D, GlobalMaxPooling2D and ZeroPadding2D against TensorFlow.js
// (tests/oracle), the Keras reference: forward outputs, input gradients and weight
// gradients within AllClose's relative 1e-4. Then their Keras JSON (written by the
// oracle's "build") loaded through KerasJsonToCompact, and their argument errors.
//
// The model's first layer computes no input gradient, so every case runs
//   Dense "pre" (identity kernel, zero bias) -> Reshape -> the layer -> Flatten
// on flat inputs: "pre" hands the layer x unchanged, and its kernel gradient is
// x^T din, its bias gradient sum(din), which pins the layer's input gradient.
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "nn/keras/keras_json.h"
#include "nn/model.h"
#include "test_util.h"
#include "testing/tfjs_oracle.h"

namespace ringtrain::nn {
namespace {

using nlohmann::json;
using ::ringtrain::testing::AllClose;
using ::ringtrain::testing::RunTfjs;
using ::ringtrain::testing::TfjsTensor;
using ::ringtrain::testing::TfjsValues;

constexpr char kLayer[] = "under_test";

int64_t Elements(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::vector<int64_t> WithBatch(int64_t batch, const std::vector<int64_t>& shape) {
  std::vector<int64_t> s{batch};
  s.insert(s.end(), shape.begin(), shape.end());
  return s;
}


const ParamInfo* FindParam(const Model& m, const std::string& name) {
  for (const ParamInfo& p : m.param_infos()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

struct LayerCase {
  const char* name;
  const char* class_name;
  json config;                  // Keras arguments, shared by both sides
  std::vector<int64_t> input;   // per example, HWC
  std::vector<int64_t> output;  // per example, as Keras computes it
  // tfjs' average-pooling gradient divides by the whole window even where 'same' padding
  // clips it (its forward, like TensorFlow, divides by the cells inside the input). For
  // such cases the input gradient is checked as the forward's adjoint instead:
  // <x, din> = <out, dy> (the layer is linear), with x^T din from "pre".
  bool adjoint_din = false;
};
void PrintTo(const LayerCase& c, std::ostream* os) { *os << c.name; }

// pre (identity) -> Reshape -> the layer -> Flatten (unless its output is flat already).
std::unique_ptr<Model> BuildProbe(const LayerCase& c, const json& layer_config) {
  const int64_t in = Elements(c.input);
  json layer = layer_config;
  layer["type"] = c.class_name;
  layer["name"] = kLayer;
  json layers = {{{"type", "Dense"}, {"name", "pre"}, {"units", in}},
                 {{"type", "Reshape"}, {"target_shape", c.input}},
                 layer};
  if (c.output.size() != 1) layers.push_back({{"type", "Flatten"}});
  auto m = Model::FromJson({{"input_shape", {in}}, {"layers", layers}}, 1);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m).value() : nullptr;
}

// Random weights for the layer under test, identity for "pre". Returns the layer's
// weights by short name ("kernel").
std::map<std::string, std::vector<float>> SetWeights(Model& m, uint64_t seed) {
  std::map<std::string, std::vector<float>> mine;
  const std::string prefix = std::string(kLayer) + "/";
  for (const ParamInfo& p : m.param_infos()) {
    std::vector<float> v(p.count, 0.0f);
    if (p.name == "pre/kernel") {
      const int64_t n = p.shape[0];
      for (int64_t i = 0; i < n; ++i) v[i * n + i] = 1.0f;
    } else if (p.name.rfind(prefix, 0) == 0) {
      v = testing::RandomVector(p.count, seed++, 0.5f);
      mine[p.name.substr(prefix.size())] = v;
    }
    std::copy(v.begin(), v.end(), m.params() + p.offset);
  }
  return mine;
}

// Runs our side on x with dy; compares the output, the layer's weight gradients with
// `want_grads` (by short name, already in our shapes) and its input gradient with want_din.
void CompareProbe(Model& m, const std::vector<float>& x, int batch, const std::vector<float>& dy,
                  const std::vector<float>& want_out, const std::map<std::string, std::vector<float>>& want_grads,
                  const std::vector<float>& want_din, bool adjoint_din = false) {
  const float* out = m.Forward(x.data(), batch, /*training=*/true);
  EXPECT_TRUE(AllClose(testing::Slice(out, 0, want_out.size()), want_out)) << "forward output";
  double out_dot_dy = 0;
  for (size_t i = 0; i < want_out.size(); ++i) out_dot_dy += static_cast<double>(out[i]) * dy[i];
  m.Backward(dy.data());
  const std::string prefix = std::string(kLayer) + "/";
  size_t compared = 0;
  for (const ParamInfo& p : m.param_infos()) {
    if (p.name.rfind(prefix, 0) != 0) continue;
    const std::string name = p.name.substr(prefix.size());
    auto it = want_grads.find(name);
    ASSERT_NE(it, want_grads.end()) << "no reference gradient for " << p.name;
    EXPECT_TRUE(AllClose(testing::Slice(m.grads(), p.offset, p.count), it->second)) << "gradient of " << p.name;
    ++compared;
  }
  EXPECT_EQ(compared, want_grads.size()) << "the reference has weights the layer lacks";
  // din through "pre": dkernel[i, j] = sum_n x[n, i] din[n, j]; dbias[j] = sum_n din[n, j].
  const ParamInfo* pk = FindParam(m, "pre/kernel");
  const ParamInfo* pb = FindParam(m, "pre/bias");
  ASSERT_TRUE(pk != nullptr && pb != nullptr);
  const size_t in = static_cast<size_t>(pk->shape[0]);
  if (adjoint_din) {  // <x, din> = trace(x^T din)
    double trace = 0;
    for (size_t i = 0; i < in; ++i) trace += m.grads()[pk->offset + i * in + i];
    EXPECT_NEAR(trace, out_dot_dy, 1e-4 * std::max(1.0, std::abs(out_dot_dy))) << "input gradient (adjoint)";
    return;
  }
  std::vector<float> want_dk(in * in, 0.0f), want_db(in, 0.0f);
  for (size_t i = 0; i < in; ++i) {
    for (size_t j = 0; j < in; ++j) {
      double s = 0;
      for (int n = 0; n < batch; ++n) s += static_cast<double>(x[n * in + i]) * want_din[n * in + j];
      want_dk[i * in + j] = static_cast<float>(s);
    }
  }
  for (size_t j = 0; j < in; ++j) {
    double s = 0;
    for (int n = 0; n < batch; ++n) s += want_din[n * in + j];
    want_db[j] = static_cast<float>(s);
  }
  EXPECT_TRUE(AllClose(testing::Slice(m.grads(), pb->offset, pb->count), want_db)) << "input gradient (sum over the batch)";
  EXPECT_TRUE(AllClose(testing::Slice(m.grads(), pk->offset, pk->count), want_dk)) << "input gradient (x^T din)";
}

// The oracle's answer for `config` of `class_name` with `weights` (short names).
StatusOr<json> OracleLayer(const char* class_name, const json& config, const std::vector<int64_t>& input,
                           const std::vector<int64_t>& output, int batch, const std::vector<float>& x,
                           const std::vector<float>& dy, const json& weights) {
  json req = {{"kind", "layer"},
              {"layer", {{"class_name", class_name}, {"config", config}}},
              {"inputs", {TfjsTensor(WithBatch(batch, input), x)}},
              {"training", true},
              {"dy", TfjsTensor(WithBatch(batch, output), dy)}};
  if (!weights.empty()) req["weights"] = weights;
  return RunTfjs(req);
}

// tfjs has no grouped Conv2D and no gradients for dilated convolutions, so the oracle
// runs the equivalent plain layer: dilation_rate d becomes a kernel of (k - 1) * d + 1
// with zeros between the taps, groups a full kernel that is zero where the input channel
// and the filter lie in different groups (block-diagonal). Our kernel gradient is that
// kernel's gradient at the entries ours maps to.
struct KernelMap {
  std::string weight;  // "kernel" or "depthwise_kernel"
  int dh = 1, dw = 1, groups = 1;
  std::vector<int64_t> ours, full;  // [kh, kw, in, out]
  bool identity() const { return dh == 1 && dw == 1 && groups == 1; }
  // The index in `full` of ours[i, j, ci, f].
  size_t Full(int64_t i, int64_t j, int64_t ci, int64_t f) const {
    const int64_t out = ours[3], cg = ours[2], fg = out / groups;
    return static_cast<size_t>(((i * dh * full[1] + j * dw) * full[2] + (f / fg) * cg + ci) * out + f);
  }
  std::vector<float> Expand(const std::vector<float>& k) const {
    std::vector<float> v(static_cast<size_t>(Elements(full)), 0.0f);
    ForEach([&](size_t o, size_t fi) { v[fi] = k[o]; });
    return v;
  }
  std::vector<float> Gather(const std::vector<float>& g) const {
    std::vector<float> v(static_cast<size_t>(Elements(ours)));
    ForEach([&](size_t o, size_t fi) { v[o] = g[fi]; });
    return v;
  }
  template <typename F>
  void ForEach(F f) const {
    size_t o = 0;
    for (int64_t i = 0; i < ours[0]; ++i)
      for (int64_t j = 0; j < ours[1]; ++j)
        for (int64_t ci = 0; ci < ours[2]; ++ci)
          for (int64_t fo = 0; fo < ours[3]; ++fo) f(o++, Full(i, j, ci, fo));
  }
};

std::pair<int, int> Pair(const json& v) {
  return v.is_array() ? std::make_pair(v[0].get<int>(), v[1].get<int>()) : std::make_pair(v.get<int>(), v.get<int>());
}

// The oracle's config for `c` and how our kernel maps onto its kernel.
json OracleConfig(const LayerCase& c, const Model& m, KernelMap* map) {
  json config = c.config;
  const std::string cls = c.class_name;
  if (cls != "Conv2D" && cls != "DepthwiseConv2D" && cls != "SeparableConv2D") return config;
  map->weight = cls == "Conv2D" ? "kernel" : "depthwise_kernel";
  map->ours = FindParam(m, std::string(kLayer) + "/" + map->weight)->shape;
  if (config.contains("dilation_rate")) std::tie(map->dh, map->dw) = Pair(config["dilation_rate"]);
  map->groups = config.value("groups", 1);
  config.erase("dilation_rate");
  config.erase("groups");
  const int64_t channels = cls == "Conv2D" ? c.input[2] : map->ours[2];
  map->full = {(map->ours[0] - 1) * map->dh + 1, (map->ours[1] - 1) * map->dw + 1, channels, map->ours[3]};
  config["kernel_size"] = {map->full[0], map->full[1]};
  return config;
}

class TfjsLayerTest : public ::testing::TestWithParam<LayerCase> {};

TEST_P(TfjsLayerTest, MatchesTfjs) {
  RT_REQUIRE_TFJS();
  const LayerCase& c = GetParam();
  auto m = BuildProbe(c, c.config);
  ASSERT_NE(m, nullptr);
  ASSERT_EQ(m->num_classes(), Elements(c.output)) << "ringtrain's output shape differs from Keras'";
  const int batch = 3;
  const auto mine = SetWeights(*m, 700);
  KernelMap map;
  const json config = OracleConfig(c, *m, &map);
  auto shape_of = [&](const std::string& name) { return FindParam(*m, std::string(kLayer) + "/" + name)->shape; };
  json weights = json::object();
  for (const auto& [name, v] : mine) {
    weights[name] = name == map.weight && !map.identity() ? TfjsTensor(map.full, map.Expand(v))
                                                          : TfjsTensor(shape_of(name), v);
  }
  const std::vector<float> x = testing::RandomVector(batch * Elements(c.input), 11);
  const std::vector<float> dy = testing::RandomVector(batch * Elements(c.output), 12);
  auto r = OracleLayer(c.class_name, config, c.input, c.output, batch, x, dy, weights);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::map<std::string, std::vector<float>> want_grads;
  for (const auto& [name, v] : mine) {
    ASSERT_TRUE((*r)["weight_grads"].contains(name)) << (*r)["weight_grads"].dump();
    want_grads[name] = name == map.weight && !map.identity()
                           ? map.Gather(TfjsValues((*r)["weight_grads"][name], map.full))
                           : TfjsValues((*r)["weight_grads"][name], shape_of(name));
  }
  EXPECT_EQ((*r)["weight_grads"].size(), mine.size()) << "tfjs has weights ringtrain lacks";
  CompareProbe(*m, x, batch, dy, TfjsValues((*r)["output"], WithBatch(batch, c.output)), want_grads,
               TfjsValues((*r)["input_grads"][0], WithBatch(batch, c.input)), c.adjoint_din);
}

json J(std::initializer_list<json::object_t::value_type> kv) { return json::object_t(kv); }

INSTANTIATE_TEST_SUITE_P(
    Conv2D, TfjsLayerTest,
    ::testing::Values(
        LayerCase{"dilation2_valid", "Conv2D", J({{"filters", 3}, {"kernel_size", {3, 3}}, {"dilation_rate", 2}}),
                  {7, 8, 2}, {3, 4, 3}},
        LayerCase{"dilation_2_3_same_relu", "Conv2D",
                  J({{"filters", 4}, {"kernel_size", {3, 2}}, {"dilation_rate", {2, 3}}, {"padding", "same"},
                     {"activation", "relu"}}),
                  {5, 7, 3}, {5, 7, 4}},
        // dilation 1, groups 1: the fast path, whose input gradient (checked here through
        // "pre") runs as a transposed convolution or a dense product on AVX-512.
        LayerCase{"fast_even_kernel_same", "Conv2D", J({{"filters", 5}, {"kernel_size", {4, 2}}, {"padding", "same"}}),
                  {6, 5, 3}, {6, 5, 5}},
        LayerCase{"fast_valid_relu", "Conv2D", J({{"filters", 17}, {"kernel_size", 3}, {"activation", "relu"}}),
                  {6, 7, 2}, {4, 5, 17}},
        LayerCase{"fast_pointwise", "Conv2D", J({{"filters", 6}, {"kernel_size", 1}}), {4, 3, 5}, {4, 3, 6}},
        LayerCase{"fast_pointwise_strides2", "Conv2D", J({{"filters", 3}, {"kernel_size", 1}, {"strides", 2}}),
                  {5, 4, 4}, {3, 2, 3}},
        LayerCase{"dilation2_even_kernel_same_no_bias", "Conv2D",
                  J({{"filters", 2}, {"kernel_size", {2, 2}}, {"dilation_rate", 2}, {"padding", "same"},
                     {"use_bias", false}}),
                  {6, 5, 2}, {6, 5, 2}}),
    [](const auto& info) { return std::string(info.param.name); });

INSTANTIATE_TEST_SUITE_P(
    DepthwiseConv2D, TfjsLayerTest,
    ::testing::Values(
        LayerCase{"valid", "DepthwiseConv2D", J({{"kernel_size", {3, 3}}}), {6, 5, 3}, {4, 3, 3}},
        LayerCase{"same_strides2_relu", "DepthwiseConv2D",
                  J({{"kernel_size", {3, 3}}, {"strides", 2}, {"padding", "same"}, {"activation", "relu"}}),
                  {7, 6, 4}, {4, 3, 4}},
        LayerCase{"multiplier2_even_kernel_same", "DepthwiseConv2D",
                  J({{"kernel_size", {2, 4}}, {"depth_multiplier", 2}, {"padding", "same"}}), {5, 6, 3}, {5, 6, 6}},
        LayerCase{"multiplier3_dilation2_no_bias", "DepthwiseConv2D",
                  J({{"kernel_size", 3}, {"depth_multiplier", 3}, {"dilation_rate", 2}, {"use_bias", false}}),
                  {7, 6, 2}, {3, 2, 6}}),
    [](const auto& info) { return std::string(info.param.name); });

INSTANTIATE_TEST_SUITE_P(
    SeparableConv2D, TfjsLayerTest,
    ::testing::Values(
        LayerCase{"valid", "SeparableConv2D", J({{"filters", 4}, {"kernel_size", 3}}), {6, 5, 3}, {4, 3, 4}},
        LayerCase{"same_strides2_multiplier2_relu", "SeparableConv2D",
                  J({{"filters", 5}, {"kernel_size", {3, 3}}, {"strides", {2, 2}}, {"padding", "same"},
                     {"depth_multiplier", 2}, {"activation", "relu"}}),
                  {7, 5, 3}, {4, 3, 5}},
        LayerCase{"dilation2_no_bias", "SeparableConv2D",
                  J({{"filters", 3}, {"kernel_size", {3, 2}}, {"dilation_rate", 2}, {"use_bias", false}}),
                  {7, 6, 2}, {3, 4, 3}}),
    [](const auto& info) { return std::string(info.param.name); });

INSTANTIATE_TEST_SUITE_P(
    Pooling, TfjsLayerTest,
    ::testing::Values(
        LayerCase{"avg_default", "AveragePooling2D", J({}), {6, 4, 3}, {3, 2, 3}},
        LayerCase{"avg_valid_odd", "AveragePooling2D", J({{"pool_size", {3, 2}}, {"strides", {2, 1}}}), {7, 5, 2},
                  {3, 4, 2}},
        LayerCase{"avg_same_odd", "AveragePooling2D", J({{"pool_size", 2}, {"padding", "same"}}), {5, 7, 3},
                  {3, 4, 3}, /*adjoint_din=*/true},
        // 'same' whose windows all lie inside the input: tfjs' gradient is right there.
        LayerCase{"avg_same_even", "AveragePooling2D", J({{"padding", "same"}}), {4, 6, 2}, {2, 3, 2}},
        LayerCase{"avg_same_3x3_strides2", "AveragePooling2D",
                  J({{"pool_size", 3}, {"strides", 2}, {"padding", "same"}}), {6, 5, 2}, {3, 3, 2},
                  /*adjoint_din=*/true},
        LayerCase{"global_avg", "GlobalAveragePooling2D", J({}), {5, 3, 4}, {4}},
        LayerCase{"global_max", "GlobalMaxPooling2D", J({}), {4, 5, 3}, {3}},
        LayerCase{"zero_padding_default", "ZeroPadding2D", J({}), {3, 4, 2}, {5, 6, 2}},
        LayerCase{"zero_padding_pair", "ZeroPadding2D", J({{"padding", {2, 1}}}), {3, 2, 2}, {7, 4, 2}},
        LayerCase{"zero_padding_4", "ZeroPadding2D", J({{"padding", {{0, 2}, {3, 1}}}}), {3, 2, 3}, {5, 6, 3}}),
    [](const auto& info) { return std::string(info.param.name); });

INSTANTIATE_TEST_SUITE_P(
    Groups, TfjsLayerTest,
    ::testing::Values(
        LayerCase{"groups2_valid", "Conv2D", J({{"filters", 4}, {"kernel_size", 3}, {"groups", 2}}), {6, 5, 4},
                  {4, 3, 4}},
        LayerCase{"groups3_same_strides2_relu", "Conv2D",
                  J({{"filters", 6}, {"kernel_size", {3, 2}}, {"strides", 2}, {"padding", "same"},
                     {"activation", "relu"}, {"groups", 3}}),
                  {7, 6, 3}, {4, 3, 6}},
        LayerCase{"groups2_dilation2_same_no_bias", "Conv2D",
                  J({{"filters", 2}, {"kernel_size", 3}, {"dilation_rate", 2}, {"padding", "same"},
                     {"use_bias", false}, {"groups", 2}}),
                  {5, 6, 4}, {5, 6, 2}},
        LayerCase{"groups4_pointwise", "Conv2D", J({{"filters", 8}, {"kernel_size", 1}, {"groups", 4}}), {3, 4, 8},
                  {3, 4, 8}}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace ringtrain::nn
