// The convolution and pooling layers through their Keras JSON (written by
// the tfjs oracle's "build", loaded with KerasJsonToCompact) against tfjs running that
// JSON; GlobalPooling's keepdims; every bad argument refused with a message naming it.
#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kernels/kernels.h"
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


// ---- Keras JSON -------------------------------------------------------------------------

struct KerasCase {
  const char* name;
  json layer;  // {"class_name", "config"} with a name
  bool flat;   // the layer's output is flat already (no Flatten after it)
  bool grads = true;  // false: forward only (tfjs has no gradients through dilated convolutions)
};
void PrintTo(const KerasCase& c, std::ostream* os) { *os << c.name; }

class KerasJsonLayerTest : public ::testing::TestWithParam<KerasCase> {};

// layer -> [Flatten]: tfjs writes the Keras JSON with Keras' defaults for every
// argument; ringtrain loads it, has the same weights, and computes what tfjs computes on
// that JSON. (No Dense after it: Dense's and Conv2D's initializer arguments come with
// another change; Conv2D's are dropped from the compact form below for that reason.)
TEST_P(KerasJsonLayerTest, LoadsAndMatchesTfjs) {
  RT_REQUIRE_TFJS();
  const KerasCase& c = GetParam();
  const std::vector<int64_t> input = {7, 6, 4};
  json layers = json::array({c.layer});  // not {c.layer}: clang reads that as a copy
  if (!c.flat) layers.push_back({{"class_name", "Flatten"}, {"config", {{"name", "flatten"}}}});
  auto built = RunTfjs({{"kind", "build"}, {"inputs", {{{"name", "input"}, {"shape", input}}}}, {"layers", layers}});
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  auto compact = KerasJsonToCompact((*built)["model_json"]);
  ASSERT_TRUE(compact.ok()) << compact.status().ToString() << "\n" << (*built)["model_json"].dump();
  for (json& l : (*compact)["layers"]) {
    if (l["type"] == "Conv2D") {
      l.erase("kernel_initializer");
      l.erase("bias_initializer");
      l.erase("kernel_regularizer");
      l.erase("bias_regularizer");
    }
  }
  auto mo = Model::FromJson(*compact, 1);
  ASSERT_TRUE(mo.ok()) << mo.status().ToString() << "\n" << compact->dump();
  Model& m = **mo;
  const json& init = (*built)["weights"];
  ASSERT_EQ(init.size(), m.param_infos().size()) << init.dump();
  json weights = json::object();
  uint64_t seed = 40;
  for (const ParamInfo& p : m.param_infos()) {
    ASSERT_TRUE(init.contains(p.name)) << p.name;
    EXPECT_EQ(init[p.name]["shape"], json(p.shape)) << p.name;
    const std::vector<float> v = testing::RandomVector(p.count, seed++, 0.5f);
    std::copy(v.begin(), v.end(), m.params() + p.offset);
    weights[p.name] = TfjsTensor(p.shape, v);
  }
  const int batch = 2;
  const int64_t outputs = m.num_classes();
  const std::vector<float> x = testing::RandomVector(batch * 7 * 6 * 4, 5);
  const std::vector<float> dy = testing::RandomVector(batch * outputs, 6);
  json req = {{"kind", "model"},
              {"model", (*built)["model_json"]},
              {"weights", weights},
              {"inputs", {TfjsTensor({batch, 7, 6, 4}, x)}},
              {"training", true}};
  if (c.grads) req["dy"] = TfjsTensor({batch, outputs}, dy);
  auto r = RunTfjs(req);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const float* out = m.Forward(x.data(), batch, true);
  EXPECT_TRUE(AllClose(testing::Slice(out, 0, batch * outputs), TfjsValues((*r)["outputs"][0], {batch, outputs})))
      << "output";
  if (!c.grads) return;
  m.Backward(dy.data());
  for (const ParamInfo& p : m.param_infos()) {
    EXPECT_TRUE(AllClose(testing::Slice(m.grads(), p.offset, p.count), TfjsValues((*r)["weight_grads"][p.name], p.shape)))
        << "gradient of " << p.name;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Layers, KerasJsonLayerTest,
    ::testing::Values(
        KerasCase{"conv2d_dilated",
                  {{"class_name", "Conv2D"},
                   {"config", {{"name", "conv"}, {"filters", 3}, {"kernel_size", 3}, {"dilation_rate", 2},
                               {"padding", "same"}}}},
                  false, /*grads=*/false},
        KerasCase{"depthwise",
                  {{"class_name", "DepthwiseConv2D"},
                   // tfjs' own default is glorot_normal; Keras' (what Keras writes) glorot_uniform
                   {"config", {{"name", "dw"}, {"kernel_size", 3}, {"depth_multiplier", 2}, {"strides", 2},
                               {"padding", "same"}, {"activation", "relu"},
                               {"depthwise_initializer", {{"class_name", "GlorotUniform"}, {"config", {{"seed", nullptr}}}}}}}},
                  false},
        KerasCase{"separable",
                  {{"class_name", "SeparableConv2D"},
                   {"config", {{"name", "sep"}, {"filters", 5}, {"kernel_size", 3}, {"activation", "relu"}}}},
                  false},
        KerasCase{"average_pooling",
                  {{"class_name", "AveragePooling2D"}, {"config", {{"name", "avg"}, {"padding", "same"}}}}, false},
        KerasCase{"global_average",
                  {{"class_name", "GlobalAveragePooling2D"}, {"config", {{"name", "gap"}}}}, true},
        KerasCase{"global_max", {{"class_name", "GlobalMaxPooling2D"}, {"config", {{"name", "gmp"}}}}, true},
        KerasCase{"zero_padding",
                  {{"class_name", "ZeroPadding2D"}, {"config", {{"name", "pad"}, {"padding", {{1, 0}, {2, 3}}}}}},
                  false}),
    [](const auto& info) { return std::string(info.param.name); });

// ---- keepdims -----------------------------------------------------------------------------

// keepdims gives [1, 1, C] with the values (and gradients) of keepdims false.
TEST(GlobalPoolingTest, KeepdimsKeepsValuesAndGradients) {
  for (const char* type : {"GlobalAveragePooling2D", "GlobalMaxPooling2D"}) {
    SCOPED_TRACE(type);
    std::vector<std::vector<float>> outs, grads;
    for (bool keepdims : {false, true}) {
      json layers = {{{"type", "Conv2D"}, {"filters", 3}, {"kernel_size", 2}},
                     {{"type", type}, {"keepdims", keepdims}}};
      if (keepdims) layers.push_back({{"type", "Flatten"}});
      auto m = Model::FromJson({{"input_shape", {5, 4, 2}}, {"layers", layers}}, 7);
      ASSERT_TRUE(m.ok()) << m.status().ToString();
      ASSERT_EQ((*m)->num_classes(), 3);
      if (keepdims) {
        EXPECT_EQ((*m)->graph().nodes[1].output_shape, (std::vector<int>{1, 1, 3}));
      }
      const std::vector<float> x = testing::RandomVector(2 * 5 * 4 * 2, 3);
      const std::vector<float> dy = testing::RandomVector(2 * 3, 4);
      const float* out = (*m)->Forward(x.data(), 2, true);
      outs.emplace_back(out, out + 6);
      (*m)->Backward(dy.data());
      grads.push_back(testing::Slice((*m)->grads(), 0, (*m)->num_params()));
    }
    EXPECT_EQ(outs[0], outs[1]);
    EXPECT_EQ(grads[0], grads[1]);
  }
}

// ---- determinism and frozen layers ----------------------------------------------------------

json AllLayersModel(bool freeze_depthwise) {
  return {{"input_shape", {9, 8, 4}},
          {"layers",
           {{{"type", "Conv2D"}, {"filters", 4}, {"kernel_size", 3}, {"padding", "same"}, {"activation", "relu"}},
            {{"type", "ZeroPadding2D"}, {"padding", {{1, 0}, {0, 2}}}},
            {{"type", "Conv2D"}, {"filters", 6}, {"kernel_size", 3}, {"groups", 2}, {"dilation_rate", 2}},
            {{"type", "DepthwiseConv2D"}, {"kernel_size", 2}, {"depth_multiplier", 2}, {"padding", "same"},
             {"activation", "relu"}, {"trainable", !freeze_depthwise}},
            {{"type", "SeparableConv2D"}, {"filters", 5}, {"kernel_size", 2}, {"strides", 2}, {"padding", "same"}},
            {{"type", "AveragePooling2D"}, {"padding", "same"}},
            {{"type", "GlobalMaxPooling2D"}, {"keepdims", true}},
            {{"type", "Flatten"}},
            {{"type", "Dense"}, {"units", 3}}}}};
}

// Output and gradients once, on `threads` kernel threads.
std::vector<float> RunOnce(bool freeze, int threads) {
  kernels::SetNumThreads(threads);
  auto m = Model::FromJson(AllLayersModel(freeze), 3);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  if (!m.ok()) return {};
  const int batch = 4;
  const std::vector<float> x = testing::RandomVector(batch * 9 * 8 * 4, 8);
  const std::vector<float> dy = testing::RandomVector(batch * 3, 9);
  const float* out = (*m)->Forward(x.data(), batch, true);
  std::vector<float> result(out, out + batch * 3);
  (*m)->Backward(dy.data());
  result.insert(result.end(), (*m)->grads(), (*m)->grads() + (*m)->num_params());
  kernels::SetNumThreads(1);
  return result;
}

TEST(ConvLayersTest, SameBitsForAnyThreadCount) {
  const std::vector<float> one = RunOnce(false, 1);
  ASSERT_FALSE(one.empty());
  EXPECT_EQ(one, RunOnce(false, 3));
  EXPECT_EQ(one, RunOnce(false, 1)) << "a second run differs";
}

// A frozen DepthwiseConv2D still passes the gradient back to the Conv2D layers before it,
// which then get the same gradients as with the layer trainable.
TEST(ConvLayersTest, FrozenDepthwiseStillPassesGradients) {
  auto trainable = Model::FromJson(AllLayersModel(false), 3);
  auto frozen = Model::FromJson(AllLayersModel(true), 3);
  ASSERT_TRUE(trainable.ok() && frozen.ok());
  const int batch = 2;
  const std::vector<float> x = testing::RandomVector(batch * 9 * 8 * 4, 10);
  const std::vector<float> dy = testing::RandomVector(batch * 3, 11);
  std::map<std::string, std::vector<float>> grads[2];
  int k = 0;
  for (Model* m : {trainable->get(), frozen->get()}) {
    m->Forward(x.data(), batch, true);
    m->Backward(dy.data());
    for (const ParamInfo& p : m->param_infos()) {
      if (p.trainable) grads[k][p.name] = testing::Slice(m->grads(), p.offset, p.count);  // grads() holds the trainable only
    }
    ++k;
  }
  for (const char* name : {"conv2d/kernel", "conv2d/bias", "conv2d_1/kernel", "conv2d_1/bias"}) {
    ASSERT_TRUE(grads[0].count(name) && grads[1].count(name)) << name;
    EXPECT_EQ(grads[0][name], grads[1][name]) << name;
    EXPECT_TRUE(std::any_of(grads[1][name].begin(), grads[1][name].end(), [](float v) { return v != 0; })) << name;
  }
}

// ---- errors -------------------------------------------------------------------------------

struct ErrorCase {
  const char* name;
  std::vector<int> input;
  json layer;          // the first layer; a Flatten and a Dense follow
  const char* needle;  // what the message must name
};
void PrintTo(const ErrorCase& c, std::ostream* os) { *os << c.name; }

class LayerErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(LayerErrorTest, RefusedNamingTheField) {
  const ErrorCase& c = GetParam();
  json model = {{"input_shape", c.input},
                {"layers", {c.layer, {{"type", "Flatten"}}, {{"type", "Dense"}, {"units", 2}}}}};
  auto m = Model::FromJson(model, 1);
  ASSERT_FALSE(m.ok()) << c.layer.dump();
  const std::string msg = m.status().ToString();
  EXPECT_NE(msg.find(c.needle), std::string::npos) << msg;
  EXPECT_NE(msg.find("model.layers[0]"), std::string::npos) << msg;
}

INSTANTIATE_TEST_SUITE_P(
    Args, LayerErrorTest,
    ::testing::Values(
        ErrorCase{"conv_dilation_with_strides", {8, 8, 2},
                  {{"type", "Conv2D"}, {"filters", 2}, {"kernel_size", 3}, {"dilation_rate", 2}, {"strides", 2}},
                  "dilation_rate"},
        ErrorCase{"conv_dilation_zero", {8, 8, 2},
                  {{"type", "Conv2D"}, {"filters", 2}, {"kernel_size", 3}, {"dilation_rate", 0}}, "dilation_rate"},
        ErrorCase{"conv_dilated_kernel_too_large", {5, 8, 2},
                  {{"type", "Conv2D"}, {"filters", 2}, {"kernel_size", 3}, {"dilation_rate", 3}}, "dilation_rate"},
        ErrorCase{"conv_groups_not_dividing_filters", {8, 8, 4},
                  {{"type", "Conv2D"}, {"filters", 3}, {"kernel_size", 3}, {"groups", 2}}, "groups"},
        ErrorCase{"conv_groups_not_dividing_channels", {8, 8, 3},
                  {{"type", "Conv2D"}, {"filters", 4}, {"kernel_size", 3}, {"groups", 2}}, "groups"},
        ErrorCase{"conv_groups_zero", {8, 8, 4},
                  {{"type", "Conv2D"}, {"filters", 4}, {"kernel_size", 3}, {"groups", 0}}, "groups"},
        ErrorCase{"depthwise_no_kernel_size", {8, 8, 2}, {{"type", "DepthwiseConv2D"}}, "kernel_size"},
        ErrorCase{"depthwise_multiplier_zero", {8, 8, 2},
                  {{"type", "DepthwiseConv2D"}, {"kernel_size", 3}, {"depth_multiplier", 0}}, "depth_multiplier"},
        ErrorCase{"depthwise_filters", {8, 8, 2}, {{"type", "DepthwiseConv2D"}, {"kernel_size", 3}, {"filters", 4}},
                  "filters"},
        ErrorCase{"depthwise_initializer", {8, 8, 2},
                  {{"type", "DepthwiseConv2D"}, {"kernel_size", 3}, {"depthwise_initializer", "he_normal"}},
                  "depthwise_initializer"},
        ErrorCase{"depthwise_regularizer", {8, 8, 2},
                  {{"type", "DepthwiseConv2D"},
                   {"kernel_size", 3},
                   {"depthwise_regularizer", {{"class_name", "L2"}, {"config", {{"l2", 0.01}}}}}},
                  "depthwise_regularizer"},
        ErrorCase{"depthwise_flat_input", {64}, {{"type", "DepthwiseConv2D"}, {"kernel_size", 3}},
                  "depthwise_conv2d needs a 3-D input"},
        ErrorCase{"depthwise_activation", {8, 8, 2},
                  {{"type", "DepthwiseConv2D"}, {"kernel_size", 3}, {"activation", "no_such"}}, "activation"},
        ErrorCase{"depthwise_groups", {8, 8, 2}, {{"type", "DepthwiseConv2D"}, {"kernel_size", 3}, {"groups", 2}},
                  "groups"},
        ErrorCase{"separable_no_filters", {8, 8, 2}, {{"type", "SeparableConv2D"}, {"kernel_size", 3}}, "filters"},
        ErrorCase{"separable_pointwise_initializer", {8, 8, 2},
                  {{"type", "SeparableConv2D"},
                   {"filters", 2},
                   {"kernel_size", 3},
                   {"pointwise_initializer", {{"class_name", "Ones"}, {"config", json::object()}}}},
                  "pointwise_initializer"},
        ErrorCase{"separable_dilation_with_strides", {8, 8, 2},
                  {{"type", "SeparableConv2D"}, {"filters", 2}, {"kernel_size", 3}, {"strides", 2},
                   {"dilation_rate", 2}},
                  "dilation_rate"},
        ErrorCase{"avg_pool_size_zero", {8, 8, 2}, {{"type", "AveragePooling2D"}, {"pool_size", 0}}, "pool_size"},
        ErrorCase{"avg_padding", {8, 8, 2}, {{"type", "AveragePooling2D"}, {"padding", "full"}}, "padding"},
        ErrorCase{"avg_too_large", {3, 8, 2}, {{"type", "AveragePooling2D"}, {"pool_size", 4}}, "pool size"},
        ErrorCase{"global_keepdims", {8, 8, 2}, {{"type", "GlobalAveragePooling2D"}, {"keepdims", "yes"}},
                  "keepdims"},
        ErrorCase{"global_max_unknown", {8, 8, 2}, {{"type", "GlobalMaxPooling2D"}, {"pool_size", 2}}, "pool_size"},
        ErrorCase{"zero_padding_negative", {8, 8, 2}, {{"type", "ZeroPadding2D"}, {"padding", -1}}, "padding"},
        ErrorCase{"zero_padding_three", {8, 8, 2}, {{"type", "ZeroPadding2D"}, {"padding", {1, 2, 3}}}, "padding"},
        ErrorCase{"zero_padding_ragged", {8, 8, 2}, {{"type", "ZeroPadding2D"}, {"padding", {{1}, {2, 3}}}},
                  "padding"}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace ringtrain::nn
