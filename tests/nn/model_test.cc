// Model building (layout, names, summary) and the Forward/Backward contract.
#include <cstring>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "nn/losses/loss.h"
#include "nn/model.h"
#include "nn/optimizers/optimizer.h"
#include "test_util.h"

namespace ringtrain::nn {
namespace {

using nlohmann::json;

std::unique_ptr<Model> Build(const std::string& text, uint64_t seed = 1) {
  auto m = Model::FromJson(json::parse(text), seed);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m).value() : nullptr;
}

const char* kMnistFlat = R"({"input_shape": [28, 28], "layers": [
    {"type": "reshape", "target_shape": [28, 28, 1]},
    {"type": "conv2d", "filters": 32, "kernel_size": 3, "activation": "relu"},
    {"type": "flatten"},
    {"type": "dense", "units": 128, "activation": "relu"},
    {"type": "dense", "units": 10}]})";

const char* kMnistPool = R"({"input_shape": [28, 28], "layers": [
    {"type": "reshape", "target_shape": [28, 28, 1]},
    {"type": "conv2d", "filters": 32, "kernel_size": 3, "activation": "relu"},
    {"type": "max_pooling2d"},
    {"type": "flatten"},
    {"type": "dense", "units": 128, "activation": "relu"},
    {"type": "dense", "units": 10}]})";

// Backward's readiness callback: offsets only decrease, each is where a layer with
// parameters starts, the last is 0, and the gradients equal plain Backward's.
TEST(ModelTest, BackwardReportsReadyGradientsLastLayerFirst) {
  auto a = Build(kMnistPool), b = Build(kMnistPool);
  ASSERT_TRUE(a && b);
  const int batch = 3;
  std::vector<float> x(batch * 28 * 28);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 37) % 101) / 101.0f;
  std::vector<float> dlogits(batch * 10);
  for (size_t i = 0; i < dlogits.size(); ++i) dlogits[i] = static_cast<float>(i % 7) - 3.0f;
  a->Forward(x.data(), batch, true);
  a->Backward(dlogits.data());
  b->Forward(x.data(), batch, true);
  std::vector<size_t> offsets;
  b->Backward(dlogits.data(), [&](size_t off) { offsets.push_back(off); });
  ASSERT_FALSE(offsets.empty());
  EXPECT_EQ(offsets.back(), 0u);
  for (size_t i = 1; i < offsets.size(); ++i) EXPECT_LE(offsets[i], offsets[i - 1]);
  // dense_1, dense, conv2d start where their kernels do.
  const auto& infos = b->param_infos();
  EXPECT_EQ(offsets[0], infos[4].offset);  // dense_1/kernel
  EXPECT_EQ(offsets[1], infos[2].offset);  // dense/kernel
  EXPECT_EQ(offsets[2], infos[0].offset);  // conv2d/kernel
  EXPECT_EQ(std::vector<float>(a->grads(), a->grads() + a->num_params()),
            std::vector<float>(b->grads(), b->grads() + b->num_params()));
}

TEST(ModelTest, ParamLayoutOfTheExampleModel) {
  auto m = Build(kMnistFlat);
  ASSERT_NE(m, nullptr);
  struct Want {
    const char* name;
    std::vector<int64_t> shape;
    size_t offset, count;
  };
  const std::vector<Want> want = {
      {"conv2d/kernel", {3, 3, 1, 32}, 0, 288},          {"conv2d/bias", {32}, 288, 32},
      {"dense/kernel", {21632, 128}, 320, 2768896},      {"dense/bias", {128}, 2769216, 128},
      {"dense_1/kernel", {128, 10}, 2769344, 1280},      {"dense_1/bias", {10}, 2770624, 10},
  };
  const auto& infos = m->param_infos();
  ASSERT_EQ(infos.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(infos[i].name, want[i].name);
    EXPECT_EQ(infos[i].shape, want[i].shape) << want[i].name;
    EXPECT_EQ(infos[i].offset, want[i].offset) << want[i].name;
    EXPECT_EQ(infos[i].count, want[i].count) << want[i].name;
  }
  EXPECT_EQ(m->num_params(), 2770634u);
  EXPECT_EQ(m->input_shape(), (std::vector<int>{28, 28}));
  EXPECT_EQ(m->input_size(), 784u);
  EXPECT_EQ(m->num_classes(), 10);
}

TEST(ModelTest, SummaryListsLayersShapesAndTotals) {
  auto m = Build(kMnistPool);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->num_params(), 693962u);  // 320 + 13*13*32*128 + 128 + 1290
  const std::string s = m->Summary();
  for (const char* part : {"reshape (Reshape)", "(None, 28, 28, 1)", "conv2d (Conv2D)", "(None, 26, 26, 32)", "320",
                           "max_pooling2d (MaxPooling2D)", "(None, 13, 13, 32)", "flatten (Flatten)", "(None, 5408)",
                           "dense (Dense)", "692,352", "dense_1 (Dense)", "(None, 10)", "1,290",
                           "Total params: 693,962"}) {
    EXPECT_NE(s.find(part), std::string::npos) << "missing '" << part << "' in\n" << s;
  }
}

TEST(ModelTest, ExplicitNamesAndAutoNamesThatSkipThem) {
  auto m = Build(R"({"input_shape": [6], "layers": [
      {"type": "Dense", "units": 4, "name": "dense_1"},
      {"type": "dense", "units": 4},
      {"type": "dense", "units": 3, "name": "logits", "use_bias": false},
      {"type": "reshape", "target_shape": [-1, 1]},
      {"type": "flatten"}]})");
  ASSERT_NE(m, nullptr);
  std::vector<std::string> names;
  for (const ParamInfo& p : m->param_infos()) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"dense_1/kernel", "dense_1/bias", "dense/kernel", "dense/bias",
                                             "logits/kernel"}));
  EXPECT_EQ(m->num_classes(), 3);
}

TEST(ModelTest, ForwardIsDeterministicAndBatchIndependent) {
  auto a = Build(kMnistPool, 5), b = Build(kMnistPool, 5);
  const int batch = 6;
  const std::vector<float> x = testing::RandomVector(batch * 784, 8);
  std::vector<float> ya(a->Forward(x.data(), batch, true), a->Forward(x.data(), batch, true) + batch * 10);
  const float* yb = b->Forward(x.data(), batch, false);
  EXPECT_EQ(std::memcmp(ya.data(), yb, ya.size() * sizeof(float)), 0);
  // A smaller evaluation batch (the last partial batch) sees the same rows.
  const float* y2 = b->Forward(x.data() + 784, 2, false);
  for (int i = 0; i < 20; ++i) EXPECT_NEAR(y2[i], ya[10 + i], 1e-5f);
  // A larger one grows the buffers and still works.
  const std::vector<float> big = testing::RandomVector(20 * 784, 9);
  const float* y3 = b->Forward(big.data(), 20, false);
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(std::isfinite(y3[i]));
  // Same batch size again: the output buffer is reused, not reallocated.
  EXPECT_EQ(b->Forward(big.data(), 20, false), y3);
}

TEST(ModelTest, BackwardOverwritesGradients) {
  auto m = Build(kMnistPool, 2);
  const int batch = 4;
  const std::vector<float> x = testing::RandomVector(batch * 784, 3);
  const std::vector<int32_t> labels = {1, 7, 3, 0};
  std::vector<float> g(batch * 10);
  auto step = [&]() {
    const float* logits = m->Forward(x.data(), batch, true);
    SparseSoftmaxCrossEntropy(logits, labels.data(), batch, 10, 1.0f / batch, g.data());
    m->Backward(g.data());
    return std::vector<float>(m->grads(), m->grads() + m->num_params());
  };
  const std::vector<float> first = step();
  const std::vector<float> second = step();
  EXPECT_EQ(first, second);
  double norm = 0;
  for (float v : first) norm += static_cast<double>(v) * v;
  EXPECT_GT(norm, 0.0);
}

TEST(ModelTest, BackwardAfterEvaluationForwardGivesZeroGradients) {
  auto m = Build(R"({"input_shape": [3], "layers": [{"type": "dense", "units": 2}]})");
  const float x[3] = {1, 2, 3}, g[2] = {1, -1};
  m->Forward(x, 1, true);
  m->Forward(x, 1, false);
  m->Backward(g);
  for (size_t i = 0; i < m->num_params(); ++i) EXPECT_EQ(m->grads()[i], 0.0f);
}

TEST(ModelTest, TrainingReducesTheLossOnAFixedBatch) {
  auto m = Build(R"({"input_shape": [6, 6], "layers": [
      {"type": "reshape", "target_shape": [6, 6, 1]},
      {"type": "conv2d", "filters": 4, "kernel_size": 3, "padding": "same", "activation": "relu"},
      {"type": "max_pooling2d"},
      {"type": "flatten"},
      {"type": "dense", "units": 3}]})", 11);
  auto opt = Optimizer::FromJson(json{{"type", "adam"}, {"learning_rate", 0.01}});
  ASSERT_TRUE(opt.ok());
  const int batch = 8;
  const std::vector<float> x = testing::RandomVector(batch * 36, 4);
  const std::vector<int32_t> labels = {0, 1, 2, 0, 1, 2, 0, 1};
  std::vector<float> g(batch * 3);
  double first = 0, last = 0;
  for (int step = 0; step < 100; ++step) {
    const float* logits = m->Forward(x.data(), batch, true);
    LossStats s = SparseSoftmaxCrossEntropy(logits, labels.data(), batch, 3, 1.0f / batch, g.data());
    (step == 0 ? first : last) = s.loss_sum / batch;
    m->Backward(g.data());
    (*opt)->Apply(m->params(), m->grads(), m->num_params());
  }
  EXPECT_LT(last, 0.5 * first);
}

}  // namespace
}  // namespace ringtrain::nn
