// The model's layer graph: "inputs", "trainable", and the weight layout they give.
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "nn/model.h"

namespace ringtrain::nn {
namespace {

std::unique_ptr<Model> Build(const char* json) {
  auto m = Model::FromJson(nlohmann::json::parse(json), 7);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(*m) : nullptr;
}

std::string Error(const char* json) {
  auto m = Model::FromJson(nlohmann::json::parse(json), 7);
  return m.ok() ? "" : m.status().message();
}

constexpr const char* kFrozenFirst = R"({"input_shape": [6], "layers": [
    {"type": "dense", "units": 5, "activation": "relu", "trainable": false},
    {"type": "Dense", "units": 3}]})";

TEST(ModelGraphTest, FrozenWeightsComeAfterTheTrainableOnesAndGetNoGradient) {
  auto m = Build(kFrozenFirst);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->num_params(), 6u * 5 + 5 + 5 * 3 + 3);
  EXPECT_EQ(m->num_trainable(), 5u * 3 + 3);
  EXPECT_EQ(m->num_reduced(), m->num_trainable());
  const auto& infos = m->param_infos();
  ASSERT_EQ(infos.size(), 4u);
  EXPECT_EQ(infos[0].name, "dense/kernel");
  EXPECT_FALSE(infos[0].trainable);
  EXPECT_GE(infos[0].offset, m->num_trainable());
  EXPECT_EQ(infos[2].name, "dense_1/kernel");
  EXPECT_TRUE(infos[2].trainable);
  EXPECT_EQ(infos[2].offset, 0u);
  EXPECT_NE(m->Summary().find("Trainable params: 18"), std::string::npos) << m->Summary();
  EXPECT_NE(m->Summary().find("Non-trainable params: 35"), std::string::npos);

  std::vector<float> x(2 * 6);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.1f * static_cast<float>(i) - 0.5f;
  m->Forward(x.data(), 2, true);
  const std::vector<float> dy = {0.1f, -0.2f, 0.3f, 0.0f, 0.5f, -0.1f};
  std::vector<size_t> ready;
  m->Backward(dy.data(), [&](size_t offset) { ready.push_back(offset); });
  // One ready call for the trainable layer, then the final 0; the frozen one adds none.
  EXPECT_EQ(ready, (std::vector<size_t>{0, 0}));
  float grad_norm = 0;
  for (size_t i = 0; i < m->num_trainable(); ++i) grad_norm += m->grads()[i] * m->grads()[i];
  EXPECT_GT(grad_norm, 0.0f);
}

TEST(ModelGraphTest, FreezingALayerKeepsTheOthersGradientsBitForBit) {
  // The same weights (same seed, same layer order) frozen or not: the last layer's
  // gradient is the same bits, since it depends only on its input and dy.
  auto frozen = Build(kFrozenFirst);
  auto all = Build(R"({"input_shape": [6], "layers": [
      {"type": "dense", "units": 5, "activation": "relu"}, {"type": "dense", "units": 3}]})");
  ASSERT_NE(frozen, nullptr);
  ASSERT_NE(all, nullptr);
  for (const ParamInfo& f : frozen->param_infos()) {
    for (const ParamInfo& a : all->param_infos()) {
      if (a.name != f.name) continue;
      ASSERT_EQ(a.count, f.count);
      EXPECT_EQ(0, std::memcmp(all->params() + a.offset, frozen->params() + f.offset, a.count * sizeof(float))) << a.name;
    }
  }
  std::vector<float> x(3 * 6, 0.25f);
  x[4] = -1.0f;
  const std::vector<float> dy(9, 0.125f);
  frozen->Forward(x.data(), 3, true);
  frozen->Backward(dy.data());
  all->Forward(x.data(), 3, true);
  all->Backward(dy.data());
  const ParamInfo& fk = frozen->param_infos()[2];
  const ParamInfo& ak = all->param_infos()[2];
  EXPECT_EQ(0, std::memcmp(frozen->grads() + fk.offset, all->grads() + ak.offset, fk.count * sizeof(float)));
}

TEST(ModelGraphTest, InputsNameEarlierLayersOrTheModelInput) {
  auto m = Build(R"({"input_shape": [4], "input_name": "pixels", "layers": [
      {"type": "dense", "units": 3, "name": "a", "inputs": ["pixels"]},
      {"type": "dense", "units": 2, "inputs": ["a"]}]})");
  ASSERT_NE(m, nullptr);
  EXPECT_TRUE(m->sequential());
  EXPECT_EQ(m->graph().nodes[1].inputs, std::vector<int>{0});
  EXPECT_EQ(m->graph().nodes[0].inputs, std::vector<int>{-1});
}

// Several inputs and outputs, and shared layers, refused naming what is wrong.
TEST(ModelGraphTest, BadInputsOutputsAndSharesAreRefused) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"inputs": [{"name": "a", "shape": [4]}], "layers": [{"type": "dense", "units": 2}]})",
       "model: 'inputs' must be an array of two or more"},
      {R"({"inputs": [{"name": "a", "shape": [4]}, {"name": "a", "shape": [2]}], "layers": [{"type": "dense", "units": 2}]})",
       "model.inputs[1]: the name \"a\" is taken twice"},
      {R"({"inputs": [{"name": "a", "shape": [4]}, {"name": "b", "shape": [0]}], "layers": [{"type": "dense", "units": 2}]})",
       "model.inputs[1]: 'shape' must be a non-empty array of positive integers"},
      {R"({"input_shape": [4], "inputs": [{"name": "a", "shape": [4]}, {"name": "b", "shape": [2]}], "layers": []})",
       "model: give either 'inputs' or 'input_shape', not both"},
      {R"({"inputs": [{"name": "a", "shape": [4]}, {"name": "b", "shape": [2]}], "layers": [{"type": "dense", "units": 2}]})",
       "model: the input \"b\" is not used by any layer"},
      {R"({"input_shape": [4], "outputs": ["nope"], "layers": [{"type": "dense", "units": 2}]})",
       "model: 'outputs' names \"nope\", which is not a layer of the model"},
      {R"({"input_shape": [4], "outputs": ["a", "a"], "layers": [{"type": "dense", "units": 2, "name": "a"}]})",
       "model: 'outputs' names \"a\" twice"},
      {R"({"input_shape": [4], "outputs": ["a"], "layers": [{"type": "dense", "units": 2, "name": "a"},
          {"type": "dense", "units": 2}]})",
       "model: 'outputs' names one layer, \"a\", which is not the last"},
      {R"({"input_shape": [4], "layers": [{"type": "dense", "units": 4, "name": "a"}, {"shares": "b"}]})",
       "model.layers[1]: 'shares' must name an earlier layer"},
      {R"({"input_shape": [4], "layers": [{"type": "dense", "units": 3, "name": "a"}, {"shares": "a", "units": 2}]})",
       "model.layers[1]: unknown field 'units'"},
      {R"({"input_shape": [4], "layers": [{"type": "dense", "units": 3, "name": "a"}, {"shares": "a"}]})",
       "calls layer 'a' again on an input of shape (None, 3), but its weights were made for (None, 4)"},
      {R"({"input_shape": [2, 2, 4], "layers": [{"type": "batch_normalization", "name": "bn"}, {"shares": "bn"}]})",
       "calls layer 'bn' (BatchNormalization) again; a frozen layer, or one with moving statistics, cannot be shared"},
  };
  for (const auto& [model, want] : cases) {
    const std::string got = Error(model);
    EXPECT_NE(got.find(want), std::string::npos) << model << "\n got: " << got;
  }
}

TEST(ModelGraphTest, BadGraphsAreRefusedNamingTheLayer) {
  EXPECT_NE(Error(R"({"input_shape": [4], "layers": [{"type": "dense", "units": 3, "inputs": ["later"]},
      {"type": "dense", "units": 2, "name": "later"}]})").find("model.layers[0] (dense): 'inputs' names \"later\", which is no earlier layer"),
            std::string::npos);
  EXPECT_NE(Error(R"({"input_shape": [4], "layers": [{"type": "dense", "units": 3, "name": "a"},
      {"type": "dense", "units": 3, "name": "b", "inputs": ["input"]}, {"type": "dense", "units": 2, "inputs": ["b"]}]})")
                .find("model.layers[0] (a): its output is not used by any later layer"),
            std::string::npos);
  EXPECT_NE(Error(R"({"input_shape": [4], "layers": [{"type": "dense", "units": 3, "inputs": ["input", "input"]}]})")
                .find("a Dense layer takes one input, but 'inputs' names 2"),
            std::string::npos);
  EXPECT_NE(Error(R"({"input_shape": [4], "layers": [{"type": "dense", "units": 3, "trainable": "no"}]})")
                .find("'trainable' must be true or false"),
            std::string::npos);
  EXPECT_NE(Error(R"({"input_shape": [4], "layers": [{"type": "dense", "units": 3, "name": "input"}]})")
                .find("is the model input's name"),
            std::string::npos);
}

}  // namespace
}  // namespace ringtrain::nn
