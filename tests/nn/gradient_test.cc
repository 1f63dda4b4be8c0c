// Gradient checks: each layer against central differences, then a whole model's
// parameter gradients (through Model::Backward) against differences of the loss.
#include <cmath>
#include <memory>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "nn/layers/conv2d.h"
#include "nn/layers/dense.h"
#include "nn/layers/depthwise_conv2d.h"
#include "nn/layers/separable_conv2d.h"
#include "nn/losses/loss.h"
#include "nn/layers/max_pool2d.h"
#include "nn/model.h"
#include "test_util.h"

namespace ringtrain::nn {
namespace {

using nlohmann::json;
using testing::CheckLayerGradients;

std::unique_ptr<Layer> MakeOrDie(StatusOr<std::unique_ptr<Layer>> layer) {
  EXPECT_TRUE(layer.ok()) << layer.status().ToString();
  return layer.ok() ? std::move(layer).value() : nullptr;
}

struct ConvCase {
  const char* name;
  json config;
  Shape input;
};
void PrintTo(const ConvCase& c, std::ostream* os) { *os << c.name; }


class Conv2DGradientTest : public ::testing::TestWithParam<ConvCase> {};

TEST_P(Conv2DGradientTest, MatchesFiniteDifferences) {
  const ConvCase& c = GetParam();
  auto layer = MakeOrDie(Conv2D::Create(c.config, "conv2d", c.input, "test"));
  ASSERT_NE(layer, nullptr);
  CheckLayerGradients(*layer, 2, 7);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, Conv2DGradientTest,
    ::testing::Values(
        ConvCase{"valid_s1", json{{"filters", 3}, {"kernel_size", 3}}, Shape{5, 5, 2}},
        ConvCase{"same_s1_relu", json{{"filters", 2}, {"kernel_size", 3}, {"padding", "same"}, {"activation", "relu"}},
                 Shape{4, 5, 3}},
        ConvCase{"valid_s2", json{{"filters", 2}, {"kernel_size", json::array({3, 2})}, {"strides", 2}},
                 Shape{7, 6, 2}},
        ConvCase{"same_s2_even_kernel",
                 json{{"filters", 3}, {"kernel_size", 4}, {"strides", 2}, {"padding", "same"}}, Shape{6, 5, 2}},
        ConvCase{"same_s2_odd", json{{"filters", 2}, {"kernel_size", 3}, {"strides", json::array({2, 1})},
                                     {"padding", "same"}, {"use_bias", false}},
                 Shape{5, 4, 3}},
        ConvCase{"pointwise", json{{"filters", 4}, {"kernel_size", 1}, {"activation", "relu"}}, Shape{3, 3, 3}}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(MaxPool2DGradientTest, ValidAndSame) {
  for (json config : {json::object(), json{{"pool_size", 3}, {"strides", 2}, {"padding", "same"}},
                      json{{"pool_size", json::array({2, 3})}, {"strides", 1}}}) {
    SCOPED_TRACE(config.dump());
    auto layer = MakeOrDie(MaxPool2D::Create(config, "max_pooling2d", Shape{5, 6, 2}, "test"));
    ASSERT_NE(layer, nullptr);
    CheckLayerGradients(*layer, 2, 11);
  }
}

TEST(DenseGradientTest, LinearReluAndNoBias) {
  for (json config : {json{{"units", 4}}, json{{"units", 5}, {"activation", "relu"}},
                      json{{"units", 3}, {"use_bias", false}}}) {
    SCOPED_TRACE(config.dump());
    auto layer = MakeOrDie(Dense::Create(config, "dense", Shape{7}, "test"));
    ASSERT_NE(layer, nullptr);
    CheckLayerGradients(*layer, 3, 5);
  }
}

// Keras' DepthwiseConv2D and SeparableConv2D apply any activation after the bias: their
// forward is act(conv + bias) and their gradients go through it.
TEST(DepthwiseSeparableGradientTest, AnyActivation) {
  for (const char* act : {"tanh", "gelu", "sigmoid", "swish", "relu", "linear"}) {
    SCOPED_TRACE(act);
    auto depthwise = MakeOrDie(DepthwiseConv2D::Create(
        json{{"kernel_size", 3}, {"depth_multiplier", 2}, {"padding", "same"}, {"activation", act}}, "depthwise",
        Shape{4, 5, 2}, "test"));
    ASSERT_NE(depthwise, nullptr);
    CheckLayerGradients(*depthwise, 2, 13);
    auto separable = MakeOrDie(SeparableConv2D::Create(
        json{{"filters", 3}, {"kernel_size", 3}, {"activation", act}}, "separable", Shape{5, 5, 2}, "test"));
    ASSERT_NE(separable, nullptr);
    CheckLayerGradients(*separable, 2, 17);
  }
}

// The mean cross-entropy of a small CNN, differentiated through every layer type.
TEST(ModelGradientTest, WholeModelMatchesFiniteDifferences) {
  json model_json = json::parse(R"({"input_shape": [8, 8], "layers": [
      {"type": "reshape", "target_shape": [8, 8, 1]},
      {"type": "conv2d", "filters": 3, "kernel_size": 3, "padding": "same", "activation": "relu"},
      {"type": "conv2d", "filters": 4, "kernel_size": 3, "strides": 2, "padding": "same", "activation": "relu"},
      {"type": "max_pooling2d"},
      {"type": "flatten"},
      {"type": "dense", "units": 6, "activation": "relu"},
      {"type": "dense", "units": 3}]})");
  auto model_or = Model::FromJson(model_json, 42);
  ASSERT_TRUE(model_or.ok()) << model_or.status().ToString();
  Model& model = **model_or;
  const int batch = 3;
  const std::vector<float> x = testing::RandomVector(batch * model.input_size(), 99);
  const std::vector<int32_t> labels = {0, 2, 1};
  auto mean_loss = [&]() {
    const float* logits = model.Forward(x.data(), batch, false);
    return SparseSoftmaxCrossEntropy(logits, labels.data(), batch, 3, 0, nullptr).loss_sum / batch;
  };

  std::vector<float> grad_logits(batch * 3);
  const float* logits = model.Forward(x.data(), batch, true);
  SparseSoftmaxCrossEntropy(logits, labels.data(), batch, 3, 1.0f / batch, grad_logits.data());
  model.Backward(grad_logits.data());
  const std::vector<float> analytic(model.grads(), model.grads() + model.num_params());

  const double eps = 1e-3;
  for (const ParamInfo& info : model.param_infos()) {
    for (size_t i = 0; i < info.count; ++i) {
      float* p = model.params() + info.offset + i;
      const float saved = *p;
      *p = saved + static_cast<float>(eps);
      const double up = mean_loss();
      *p = saved - static_cast<float>(eps);
      const double down = mean_loss();
      *p = saved;
      const double numeric = (up - down) / (2 * eps);
      EXPECT_NEAR(analytic[info.offset + i], numeric, 2e-3 + 1e-2 * std::abs(numeric))
          << info.name << "[" << i << "]";
    }
  }
}

}  // namespace
}  // namespace ringtrain::nn
