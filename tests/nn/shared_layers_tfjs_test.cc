// Shared layers against TensorFlow.js (tests/oracle), the Keras reference: a Siamese model
// whose two inputs go through the same layer (a Dense called twice), and one whose two
// inputs go through the same nested model (an encoder called twice, Keras' node indices 1
// and 2), as tf.keras 2 writes their JSON. ringtrain translates the JSON (a later call is
// {"shares": ...}), and with the same weights the output and every weight's gradient -- the
// sum over the calls -- agree within AllClose's relative 1e-4. Skips where the oracle is
// not installed.
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "nn/keras/keras_json.h"
#include "nn/model.h"
#include "test_util.h"
#include "tfjs_model_check.h"
#include "testing/tfjs_oracle.h"

namespace ringtrain::nn {
namespace {

using nlohmann::json;
using ::ringtrain::testing::AllClose;
using ::ringtrain::testing::RunTfjs;
using ::ringtrain::testing::TfjsTensor;
using ::ringtrain::testing::TfjsValues;

constexpr int kIn = 8;

json Input(const std::string& name) {
  return {{"class_name", "InputLayer"}, {"name", name}, {"inbound_nodes", json::array()},
          {"config", {{"batch_input_shape", {nullptr, kIn}}, {"dtype", "float32"}, {"sparse", false}, {"name", name}}}};
}

json Call(const std::string& layer, int node) { return json::array({layer, node, 0, json::object()}); }

// left, right -> `encoder` entry (called on each) -> Concatenate -> Dense(1, sigmoid).
json Siamese(json encoder, int first_node) {
  const std::string enc = encoder["name"];
  encoder["inbound_nodes"] = json::array({json::array({Call("left", 0)}), json::array({Call("right", 0)})});
  const json diff = {{"class_name", "Concatenate"}, {"name", "diff"}, {"config", {{"name", "diff"}}},
                     {"inbound_nodes", json::array({json::array({Call(enc, first_node), Call(enc, first_node + 1)})})}};
  const json out = {{"class_name", "Dense"}, {"name", "out"},
                    {"config", {{"name", "out"}, {"units", 1}, {"activation", "sigmoid"}}},
                    {"inbound_nodes", json::array({json::array({Call("diff", 0)})})}};
  return {{"class_name", "Model"},
          {"config", {{"name", "siamese"},
                      {"layers", json::array({Input("left"), Input("right"), encoder, diff, out})},
                      {"input_layers", json::array({json::array({"left", 0, 0}), json::array({"right", 0, 0})})},
                      {"output_layers", json::array({json::array({"out", 0, 0})})}}}};
}

void CheckAgainstTfjs(const json& keras, size_t want_weights) {
  auto compact = KerasJsonToCompact(keras);
  ASSERT_TRUE(compact.ok()) << compact.status().ToString();
  auto built = Model::FromJson(*compact, 1);
  ASSERT_TRUE(built.ok()) << built.status().ToString() << " " << compact->dump();
  Model& m = **built;
  ASSERT_EQ(m.param_infos().size(), want_weights) << "one set of weights for the calls";
  json weights = json::object();
  uint64_t seed = 40;
  for (const ParamInfo& p : m.param_infos()) {
    const std::vector<float> w = testing::RandomVector(p.count, seed++, 0.5f);
    std::copy(w.begin(), w.end(), m.params() + p.offset);
    weights[p.name] = TfjsTensor(p.shape, w);
  }
  const int batch = 4;
  const std::vector<float> left = testing::RandomVector(batch * kIn, 1), right = testing::RandomVector(batch * kIn, 2);
  const std::vector<float> dy = testing::RandomVector(batch, 3);
  auto r = RunTfjs({{"kind", "model"},
                    {"model", keras},
                    {"weights", weights},
                    {"inputs", {TfjsTensor({batch, kIn}, left), TfjsTensor({batch, kIn}, right)}},
                    {"training", true},
                    {"dy", TfjsTensor({batch, 1}, dy)}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::vector<float> x;  // the input row: "left" then "right", the order of their names
  for (int n = 0; n < batch; ++n) {
    x.insert(x.end(), left.begin() + n * kIn, left.begin() + (n + 1) * kIn);
    x.insert(x.end(), right.begin() + n * kIn, right.begin() + (n + 1) * kIn);
  }
  const float* out = m.Forward(x.data(), batch, /*training=*/true);
  EXPECT_TRUE(AllClose(testing::Slice(out, 0, batch), TfjsValues((*r)["outputs"][0], {batch, 1}))) << "output";
  m.Backward(dy.data());
  testing::ExpectWeightsMatchTfjs(m, m.grads(), (*r)["weight_grads"], "gradient");
}

TEST(SharedLayersTfjsTest, ADenseCalledOnTwoInputsSumsItsGradients) {
  RT_REQUIRE_TFJS();
  const json enc = {{"class_name", "Dense"}, {"name", "enc"},
                    {"config", {{"name", "enc"}, {"units", 5}, {"activation", "tanh"}}}};
  CheckAgainstTfjs(Siamese(enc, 0), 4);  // enc/kernel, enc/bias, out/kernel, out/bias
}

TEST(SharedLayersTfjsTest, ANestedEncoderCalledOnTwoInputsSumsItsGradients) {
  RT_REQUIRE_TFJS();
  const json encoder = {
      {"class_name", "Sequential"},
      {"name", "encoder"},
      {"config",
       {{"name", "encoder"},
        {"layers", json::array({{{"class_name", "Dense"},
                                 {"config", {{"name", "enc_a"}, {"units", 6}, {"activation", "relu"},
                                             {"batch_input_shape", {nullptr, kIn}}}}},
                                {{"class_name", "Dense"}, {"config", {{"name", "enc_b"}, {"units", 4}}}}})}}}};
  CheckAgainstTfjs(Siamese(encoder, 1), 6);
}

}  // namespace
}  // namespace ringtrain::nn
