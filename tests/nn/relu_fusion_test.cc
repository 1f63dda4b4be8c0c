// A relu fused into the BatchNormalization or Add before it (Kernel::AbsorbRelu, executor/fusion.h) gives
// the bits of the unfused graph: outputs, weight gradients and batch statistics.
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "nn/model.h"

namespace ringtrain::nn {
namespace {

// A residual block as in ResNet: conv -> BN -> relu -> conv -> BN -> Add(shortcut) ->
// relu, a second block whose shortcut is that relu (so the gradients of relus fused into
// a BN and into an Add are summed over two consumers and masked in one pass), then a
// frozen BN (inference mode) -> relu, pooling and a head.
constexpr const char* kBlock = R"({"input_shape": [6, 5, 3], "layers": [
  {"type": "Conv2D", "name": "stem", "filters": 8, "kernel_size": 3, "padding": "same", "use_bias": false},
  {"type": "BatchNormalization", "name": "bn0"},
  {"type": "Activation", "name": "relu0", "activation": "relu"},
  {"type": "Conv2D", "name": "c1", "filters": 8, "kernel_size": 3, "padding": "same", "use_bias": false},
  {"type": "BatchNormalization", "name": "bn1"},
  {"type": "Activation", "name": "relu1", "activation": "relu"},
  {"type": "Conv2D", "name": "c2", "filters": 8, "kernel_size": 3, "padding": "same", "use_bias": false},
  {"type": "BatchNormalization", "name": "bn2"},
  {"type": "Add", "name": "add", "inputs": ["bn2", "relu0"]},
  {"type": "Activation", "name": "relu2", "activation": "relu"},
  {"type": "Conv2D", "name": "c4", "filters": 8, "kernel_size": 3, "padding": "same", "use_bias": false},
  {"type": "BatchNormalization", "name": "bn4"},
  {"type": "Add", "name": "add2", "inputs": ["bn4", "relu2"]},
  {"type": "Activation", "name": "relu4", "activation": "relu"},
  {"type": "BatchNormalization", "name": "bn3", "trainable": false},
  {"type": "Activation", "name": "relu3", "activation": "relu"},
  {"type": "Conv2D", "name": "c3", "filters": 4, "kernel_size": 1},
  {"type": "GlobalAveragePooling2D", "name": "gap"},
  {"type": "Dense", "name": "head", "units": 3}]})";

std::unique_ptr<Model> Build(bool fused) {
  Model::SetReluFusion(fused);
  auto m = Model::FromJson(nlohmann::json::parse(kBlock), 11);
  Model::SetReluFusion(true);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  if (!m.ok()) return nullptr;
  // Non-trivial frozen statistics, the same in both.
  for (const ParamInfo& p : (*m)->param_infos()) {
    if (p.name.rfind("bn3/", 0) != 0) continue;
    for (size_t i = 0; i < p.count; ++i) (*m)->params()[p.offset + i] = 0.5f + 0.125f * static_cast<float>(i % 5);
  }
  return std::move(*m);
}

TEST(ReluFusionTest, FusedAndUnfusedGraphsGiveTheSameBits) {
  auto fused = Build(true);
  auto plain = Build(false);
  ASSERT_NE(fused, nullptr);
  ASSERT_NE(plain, nullptr);
  ASSERT_EQ(fused->num_params(), plain->num_params());
  ASSERT_EQ(0, std::memcmp(fused->params(), plain->params(), fused->num_params() * sizeof(float)));
  const int batch = 4;
  std::vector<float> x(static_cast<size_t>(batch) * fused->input_size());
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 37) % 23) / 11.0f - 1.0f;
  std::vector<float> dy(static_cast<size_t>(batch) * 3);
  for (size_t i = 0; i < dy.size(); ++i) dy[i] = 0.25f * static_cast<float>(i % 7) - 0.75f;
  for (int step = 0; step < 2; ++step) {
    const float* yf = fused->Forward(x.data(), batch, true);
    const float* yp = plain->Forward(x.data(), batch, true);
    ASSERT_EQ(0, std::memcmp(yf, yp, dy.size() * sizeof(float))) << "step " << step;
    fused->Backward(dy.data());
    plain->Backward(dy.data());
    // Gradients, then the batch statistics (the reduced buffer holds both).
    ASSERT_EQ(fused->num_reduced(), plain->num_reduced());
    EXPECT_EQ(0, std::memcmp(fused->grads(), plain->grads(), fused->num_reduced() * sizeof(float))) << "step " << step;
    float norm = 0;
    for (size_t i = 0; i < fused->num_trainable(); ++i) norm += fused->grads()[i] * fused->grads()[i];
    EXPECT_GT(norm, 0.0f);  // the comparison is not between two zero vectors
    // Inference mode as well (moving statistics, the frozen BN).
    const float* ef = fused->Forward(x.data(), batch, false);
    const float* ep = plain->Forward(x.data(), batch, false);
    ASSERT_EQ(0, std::memcmp(ef, ep, dy.size() * sizeof(float)));
    x[static_cast<size_t>(step)] += 0.5f;
  }
}

}  // namespace
}  // namespace ringtrain::nn
