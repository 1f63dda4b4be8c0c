// The model's memory estimate: computed from the description alone, it agrees with the
// model it describes, grows with the batch, saturates instead of wrapping, and refuses
// what the kernels could not index. Hyper-parameters outside float32 are refused.
#include "nn/model_memory.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include <nlohmann/json.hpp>

#include "nn/model.h"
#include "nn/optimizers/optimizer.h"

namespace ringtrain::nn {
namespace {

using json = nlohmann::json;

json Cnn() {
  return json::parse(R"({"input_shape": [12, 12], "layers": [
      {"type": "reshape", "target_shape": [12, 12, 1]},
      {"type": "conv2d", "filters": 4, "kernel_size": 3, "activation": "relu"},
      {"type": "max_pooling2d"}, {"type": "flatten"},
      {"type": "dense", "units": 16, "activation": "relu"}, {"type": "dense", "units": 4}]})");
}

TEST(ModelFootprintTest, AgreesWithTheModel) {
  auto f = ModelFootprint::FromJson(Cnn());
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  auto m = Model::FromJson(Cnn(), 1);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(f->num_params(), (*m)->num_params());
  EXPECT_EQ(f->input_size(), 144u);
  EXPECT_EQ(f->output_size(), 4u);
  EXPECT_EQ(f->output_positions(), 1u);
  EXPECT_EQ(f->largest_layer(), "model.layers[4] (dense)");
}

TEST(ModelFootprintTest, ActivationsGrowWithTheBatch) {
  auto f = ModelFootprint::FromJson(Cnn());
  ASSERT_TRUE(f.ok());
  const uint64_t one = f->ActivationBytes(1, /*training=*/true);
  EXPECT_GT(one, f->ActivationBytes(1, /*training=*/false));
  // At least every layer's output: 10x10x4 + 5x5x4 + 16 + 4 floats per example.
  EXPECT_GE(f->ActivationBytes(1000, false), 1000u * (400 + 100 + 16 + 4) * 4);
  EXPECT_GE(f->ActivationBytes(1000, true), 900 * one - 900 * 4 * 16 * (16 + 4));  // linear, but the dense
                                                                                 // scratch rounds the batch to 16
  EXPECT_LE(f->ActivationBytes(1000, true), 1000 * one);
  EXPECT_EQ(f->ActivationBytes(uint64_t{1} << 62, true), UINT64_MAX);  // saturates, never wraps
}

// Layers the GPU engine does not run still count what their CPU passes keep: a Conv2D
// with gelu its pre-activation, gradient copies and kernel scratch (as the relu one
// does), Dropout its mask, and an output feeding two layers its gradient sum.
TEST(ModelFootprintTest, CpuOnlyLayersCountTheirScratch) {
  auto model = [](const char* act, bool dropout, bool residual) {
    json layers = json::array({json{{"type", "conv2d"}, {"name", "c"}, {"filters", 8}, {"kernel_size", 3},
                                    {"padding", "same"}, {"activation", act}}});
    if (residual) layers.push_back({{"type", "Add"}, {"inputs", {"c", "c"}}});
    if (dropout) layers.push_back({{"type", "dropout"}, {"rate", 0.5}});
    layers.push_back({{"type", "flatten"}});
    layers.push_back({{"type", "dense"}, {"units", 4}});
    auto f = ModelFootprint::FromJson(json{{"input_shape", {10, 10, 8}}, {"layers", layers}});
    EXPECT_TRUE(f.ok()) << f.status().ToString();
    return f->ActivationBytes(32, /*training=*/true);
  };
  const uint64_t out = 32 * 10 * 10 * 8 * 4;  // one conv output of the batch, in bytes
  // gelu keeps the pre-activation and its gradient beyond what relu (fused) keeps.
  EXPECT_GE(model("gelu", false, false), model("relu", false, false) + 2 * out);
  EXPECT_GE(model("relu", true, false), model("relu", false, false) + 3 * out);  // output, mask, input gradient
  EXPECT_GE(model("relu", false, true), model("relu", false, false) + 3 * out);  // output, input grads, gradient sum
}

TEST(ModelFootprintTest, BatchesTooLargeForTheKernelsAreRefused) {
  auto f = ModelFootprint::FromJson(Cnn());
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE(f->CheckBatch(1000, "batch_size_per_worker").ok());
  Status s = f->CheckBatch(1000000000, "batch_size_per_worker");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_EQ(s.subject(), Subject::kConfig);
  EXPECT_NE(s.message().find("batch_size_per_worker 1000000000 x 100 output positions of model.layers[1] (conv2d)"),
            std::string::npos) << s.message();
  EXPECT_NE(s.message().find("at most 21474836"), std::string::npos) << s.message();
}

TEST(ModelFootprintTest, HugeKernelsDoNotWrapAround) {
  // 65536 x 65536 x 2^30 x 2^24 parameters: 2^86, which a 64-bit product wraps to 0.
  const json model = json::parse(R"({"input_shape": [1, 1, 1073741824], "layers": [
      {"type": "conv2d", "filters": 16777216, "kernel_size": 65536, "padding": "same"},
      {"type": "flatten"}, {"type": "dense", "units": 2}]})");
  auto f = ModelFootprint::FromJson(model);
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("the limit is 2^31 - 1"), std::string::npos) << f.status().message();
  auto m = Model::FromJson(model, 1);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("more than 2^31 - 1 parameters"), std::string::npos) << m.status().message();
}

TEST(HyperParametersTest, ValuesOutsideFloat32AreRefused) {
  auto bad = [](const char* text, const std::string& want) {
    auto o = Optimizer::FromJson(json::parse(text));
    ASSERT_FALSE(o.ok()) << text;
    EXPECT_NE(o.status().message().find(want), std::string::npos) << o.status().message();
  };
  bad(R"({"type": "sgd", "learning_rate": 1e300})", "'learning_rate' must be at most 3.4e38");
  bad(R"({"type": "adam", "epsilon": 1e-300})", "'epsilon' is too small for float32");
  bad(R"({"type": "adam", "learning_rate": 1e39})", "float32");
  EXPECT_TRUE(Optimizer::FromJson(json::parse(R"({"type": "adam", "learning_rate": 1e-3})")).ok());
  EXPECT_EQ((*Optimizer::FromJson(json::parse(R"({"type": "adam"})")))->state_floats_per_param(), 2);
  EXPECT_EQ((*Optimizer::FromJson(json::parse(R"({"type": "sgd"})")))->state_floats_per_param(), 0);
  EXPECT_EQ((*Optimizer::FromJson(json::parse(R"({"type": "sgd", "momentum": 0.9})")))->state_floats_per_param(), 1);
}

// The extremes the parser accepts are applied without an out-of-range conversion:
// Adam's step size lr * sqrt(1 - b2^t) / (1 - b1^t) exceeds float's range here; it
// becomes infinity, as IEEE hardware's conversion gives.
TEST(HyperParametersTest, ExtremeAcceptedValuesStayDefined) {
  auto o = Optimizer::FromJson(json::parse(R"({"type": "adam", "learning_rate": 3e38, "beta_1": 0.9999999999})"));
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  std::vector<float> params(4, 1.0f), grads(4, 0.5f);
  (*o)->Apply(params.data(), grads.data(), params.size());
  EXPECT_TRUE(std::isinf(params[0])) << params[0];
}

}  // namespace
}  // namespace ringtrain::nn
