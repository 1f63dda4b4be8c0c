// Keras model JSON -> compact model form (nn/keras/keras_json.h). The fixtures in
// tests/nn/keras_json/ are real: tfjs_*.json written by TensorFlow.js' toJSON() (the
// tf.keras 2 format; make_fixtures.js), keras3_*.json the same models as Keras 3's
// to_json() writes them.
#include "nn/keras/keras_json.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "keras_json_test_util.h"
#include "nn/model.h"
#include "testing/source_dir.h"

namespace ringtrain::nn {
namespace {

using nlohmann::json;

using keras_json_testing::Fixture;
using keras_json_testing::Refusal;
using keras_json_testing::Translate;

struct Expected {
  std::string type, name;
  bool trainable;
  std::vector<std::string> inputs;  // empty: "inputs" absent (the previous layer)
};

void ExpectLayers(const json& compact, const std::vector<Expected>& want) {
  ASSERT_TRUE(compact.contains("layers")) << compact.dump();
  const json& layers = compact["layers"];
  ASSERT_EQ(layers.size(), want.size()) << layers.dump();
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(want[i].name);
    EXPECT_EQ(layers[i]["type"], want[i].type);
    EXPECT_EQ(layers[i]["name"], want[i].name);
    EXPECT_EQ(layers[i]["trainable"], want[i].trainable);
    if (want[i].inputs.empty()) {
      EXPECT_FALSE(layers[i].contains("inputs")) << layers[i].dump();
    } else {
      EXPECT_EQ(layers[i].value("inputs", json()), json(want[i].inputs));
    }
    // What the translation consumes never reaches the builder.
    for (const char* gone : {"dtype", "data_format", "batch_input_shape", "batch_shape", "kernel_constraint",
                             "bias_constraint", "activity_regularizer", "module", "registered_name"}) {
      EXPECT_FALSE(layers[i].contains(gone)) << gone << " in " << layers[i].dump();
    }
  }
}

const json& Layer(const json& compact, const std::string& name) {
  for (const json& l : compact["layers"]) {
    if (l["name"] == name) return l;
  }
  static const json kNone;
  ADD_FAILURE() << "no layer " << name;
  return kNone;
}

json VarianceScaling(double scale, const char* mode) {
  return {{"class_name", "VarianceScaling"},
          {"config", {{"scale", scale}, {"mode", mode}, {"distribution", "truncated_normal"}, {"seed", nullptr}}}};
}

class FormatTest : public ::testing::TestWithParam<std::string> {};  // "tfjs" or "keras3"

TEST_P(FormatTest, SequentialCnn) {
  const json c = Translate(Fixture(GetParam() + "_sequential_cnn.json"));
  EXPECT_EQ(c["name"], "cnn");
  EXPECT_EQ(c["input_shape"], json({28, 28, 1}));
  EXPECT_FALSE(c.contains("input_name"));  // no layer names the input: it feeds the first
  ExpectLayers(c, {{"Conv2D", "conv2d_1", true, {}},
                   {"MaxPooling2D", "max_pooling2d_1", true, {}},
                   {"Conv2D", "conv2d_2", true, {}},
                   {"Flatten", "flatten_1", true, {}},
                   {"Dense", "dense_1", true, {}},
                   {"Dense", "dense_2", true, {}}});
  const json& conv1 = Layer(c, "conv2d_1");
  EXPECT_EQ(conv1["filters"], 8);
  EXPECT_EQ(conv1["kernel_size"], json({3, 3}));
  EXPECT_EQ(conv1["activation"], "relu");
  EXPECT_EQ(conv1["kernel_initializer"], VarianceScaling(1, "fan_avg"));
  EXPECT_EQ(conv1["bias_initializer"], json({{"class_name", "Zeros"}, {"config", json::object()}}));
  EXPECT_TRUE(conv1["kernel_regularizer"].is_null());
  const json& conv2 = Layer(c, "conv2d_2");
  EXPECT_EQ(conv2["strides"], json({2, 2}));
  EXPECT_EQ(conv2["padding"], "same");
  EXPECT_EQ(conv2["kernel_regularizer"], json({{"class_name", "L1L2"}, {"config", {{"l1", 0}, {"l2", 0.01}}}}));
  EXPECT_EQ(Layer(c, "max_pooling2d_1")["pool_size"], json({2, 2}));
  EXPECT_EQ(Layer(c, "dense_1")["units"], 64);
  EXPECT_EQ(Layer(c, "dense_1")["kernel_initializer"], VarianceScaling(2, "fan_in"));
  EXPECT_EQ(Layer(c, "dense_2")["activation"], "linear");
}

TEST_P(FormatTest, FunctionalResidualBlock) {
  const json c = Translate(Fixture(GetParam() + "_residual.json"));
  EXPECT_EQ(c["name"], "residual");
  EXPECT_EQ(c["input_shape"], json({32, 32, 3}));
  EXPECT_EQ(c["input_name"], "input");  // the shortcut reads it
  ExpectLayers(c, {{"Conv2D", "conv_a", true, {}},
                   {"BatchNormalization", "bn_a", true, {}},
                   {"Activation", "relu_a", true, {}},
                   {"Conv2D", "conv_b", true, {}},
                   {"Conv2D", "shortcut", true, {"input"}},
                   {"BatchNormalization", "bn_b", true, {"conv_b"}},
                   {"Add", "add", true, {"shortcut", "bn_b"}},
                   {"Activation", "relu_out", true, {}},
                   {"GlobalAveragePooling2D", "gap", true, {}},
                   {"Dropout", "dropout", true, {}},
                   {"Dense", "logits", true, {}}});
  EXPECT_EQ(Layer(c, "conv_a")["use_bias"], false);
  EXPECT_EQ(Layer(c, "bn_a")["momentum"], 0.99);
  EXPECT_EQ(Layer(c, "bn_b")["momentum"], 0.9);
  EXPECT_EQ(Layer(c, "bn_b")["epsilon"], 0.001);
  EXPECT_EQ(Layer(c, "bn_b")["gamma_initializer"], json({{"class_name", "Ones"}, {"config", json::object()}}));
  EXPECT_EQ(Layer(c, "relu_a")["activation"], "relu");
  EXPECT_EQ(Layer(c, "shortcut")["kernel_size"], json({1, 1}));
  EXPECT_EQ(Layer(c, "dropout")["rate"], 0.5);
  EXPECT_EQ(Layer(c, "logits")["activation"], "softmax");
}

TEST_P(FormatTest, NestedSequentialIsFlattenedAndFrozen) {
  const json c = Translate(Fixture(GetParam() + "_nested.json"));
  EXPECT_EQ(c["name"], "outer");
  EXPECT_EQ(c["input_shape"], json({16, 16, 3}));
  EXPECT_FALSE(c.contains("input_name"));
  ExpectLayers(c, {{"Conv2D", "feat_conv", false, {}},
                   {"MaxPooling2D", "feat_pool", false, {}},
                   {"Flatten", "flatten", true, {}},
                   {"Dense", "head", true, {}}});
  EXPECT_EQ(Layer(c, "feat_conv")["filters"], 4);
  EXPECT_EQ(Layer(c, "head")["units"], 5);
}

TEST_P(FormatTest, FrozenLayersOfANestedFunctionalBase) {
  const json c = Translate(Fixture(GetParam() + "_frozen.json"));
  EXPECT_EQ(c["name"], "transfer");
  EXPECT_EQ(c["input_shape"], json({32, 32, 3}));
  ExpectLayers(c, {{"Conv2D", "block1_conv1", false, {}},
                   {"Conv2D", "block1_conv2", false, {}},
                   {"MaxPooling2D", "block1_pool", true, {}},
                   {"Conv2D", "block2_conv1", true, {}},
                   {"MaxPooling2D", "block2_pool", true, {}},
                   {"Flatten", "flatten", true, {}},
                   {"Dense", "predictions", true, {}}});
  EXPECT_EQ(Layer(c, "predictions")["activation"], "softmax");
  EXPECT_EQ(Layer(c, "predictions")["units"], 3);
}

INSTANTIATE_TEST_SUITE_P(KerasJson, FormatTest, ::testing::Values("tfjs", "keras3"));

// The same model written by tf.keras 2 (tfjs) and by Keras 3 gives the same compact
// model, up to the arguments that Keras 3 writes and tfjs leaves out at their default.
TEST(KerasJsonTest, BothFormatsGiveTheSameCompactModel) {
  const json kDefaults = {{"groups", 1}, {"synchronized", false}, {"keepdims", false}};
  for (const char* model : {"sequential_cnn", "residual", "nested", "frozen"}) {
    SCOPED_TRACE(model);
    json a = Translate(Fixture(std::string("tfjs_") + model + ".json"));
    json b = Translate(Fixture(std::string("keras3_") + model + ".json"));
    ASSERT_EQ(a["layers"].size(), b["layers"].size());
    for (size_t i = 0; i < a["layers"].size(); ++i) {
      for (json* layer : {&a["layers"][i], &b["layers"][i]}) {
        for (auto& [key, value] : kDefaults.items()) {
          if (layer->contains(key) && (*layer)[key] == value) layer->erase(key);
        }
      }
      EXPECT_EQ(a["layers"][i], b["layers"][i]);
    }
    EXPECT_EQ(a, b);
  }
}

// --- Refusals: each one line naming the layer and the key. ---

json Residual() { return Fixture("tfjs_residual.json"); }
json Residual3() { return Fixture("keras3_residual.json"); }
json& ConfigOf(json& model, size_t layer) { return model["config"]["layers"][layer]["config"]; }

TEST(KerasJsonTest, RefusesChannelsFirst) {
  json m = Residual();
  ConfigOf(m, 1)["data_format"] = "channels_first";
  EXPECT_EQ(Refusal(m),
            "model.keras_json: layer 'conv_a' (Conv2D): 'data_format' is \"channels_first\"; ringtrain stores images "
            "channels last (NHWC): build the model with data_format=\"channels_last\" (Keras' default)");
}

TEST(KerasJsonTest, RefusesOtherDtypesAndMixedPrecision) {
  json m = Residual();
  ConfigOf(m, 1)["dtype"] = "float64";
  EXPECT_EQ(Refusal(m), "model.keras_json: layer 'conv_a' (Conv2D): 'dtype' \"float64\" is not supported; ringtrain "
                        "computes in float32 (build the model with dtype float32, the default)");
  json k = Residual3();
  ConfigOf(k, 2)["dtype"]["config"]["name"] = "mixed_float16";
  EXPECT_NE(Refusal(k).find("layer 'bn_a' (BatchNormalization): 'dtype' is the mixed precision policy "
                            "\"mixed_float16\""),
            std::string::npos);
  json input = Residual();
  ConfigOf(input, 0)["dtype"] = "int32";
  EXPECT_NE(Refusal(input).find("layer 'input' (InputLayer): 'dtype' \"int32\" is not supported"), std::string::npos);
}

TEST(KerasJsonTest, RefusesConstraintsAndActivityRegularizers) {
  json m = Residual();
  ConfigOf(m, 1)["kernel_constraint"] = {{"class_name", "MaxNorm"}, {"config", {{"max_value", 2}}}};
  EXPECT_NE(Refusal(m).find("layer 'conv_a' (Conv2D): 'kernel_constraint' is {"), std::string::npos);
  EXPECT_NE(Refusal(m).find("constraints are not supported: remove it"), std::string::npos);
  json a = Residual();
  ConfigOf(a, 11)["activity_regularizer"] = {{"class_name", "L2"}, {"config", {{"l2", 0.1}}}};
  EXPECT_NE(Refusal(a).find("layer 'logits' (Dense): 'activity_regularizer' is {"), std::string::npos);
}

TEST(KerasJsonTest, RefusesUnknownInputDimensions) {
  json m = Residual();
  ConfigOf(m, 0)["batch_input_shape"] = {nullptr, nullptr, nullptr, 3};
  EXPECT_EQ(Refusal(m), "model.keras_json: input shape [null, null, 3] has unknown dimensions; ringtrain needs a fixed "
                        "input shape (give the Input or the first layer a shape without None)");
  json s = Fixture("keras3_sequential_cnn.json");
  ConfigOf(s, 0)["batch_shape"] = {nullptr, 28, nullptr, 1};
  EXPECT_NE(Refusal(s).find("input shape [28, null, 1] has unknown dimensions"), std::string::npos);
}

TEST(KerasJsonTest, RefusesASequentialWithoutInputShape) {
  json m = Fixture("tfjs_sequential_cnn.json");
  ConfigOf(m, 0).erase("batch_input_shape");
  EXPECT_EQ(Refusal(m), "model.keras_json: model 'cnn' has no input shape; build it with an Input (or input_shape on "
                        "the first layer) before calling to_json()");
}

// Several inputs and outputs translate into the compact form's "inputs" and "outputs", and
// the model builds; an InputLayer the outputs read but input_layers does not list is refused.
TEST(KerasJsonTest, TranslatesSeveralInputsAndOutputs) {
  json two_in = Residual();
  json aux = two_in["config"]["layers"][0];
  aux["name"] = aux["config"]["name"] = "aux";
  two_in["config"]["layers"].push_back(aux);
  two_in["config"]["layers"][5]["inbound_nodes"] = json::parse(R"([[["aux", 0, 0, {}]]])");
  two_in["config"]["input_layers"].push_back({"aux", 0, 0});
  const json c = Translate(two_in);
  ASSERT_TRUE(c.contains("inputs")) << c.dump();
  EXPECT_EQ(c["inputs"].size(), 2u);
  EXPECT_EQ(c["inputs"][0]["name"], "input");
  EXPECT_EQ(c["inputs"][1]["name"], "aux");
  EXPECT_FALSE(c.contains("input_shape"));
  EXPECT_FALSE(c.contains("outputs")) << "one output, the last layer";
  auto m = Model::FromJson(c, 1);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ((*m)->inputs().size(), 2u);
  // The input row holds the inputs in the order of their names: aux first.
  EXPECT_EQ((*m)->inputs()[1].name, "aux");
  EXPECT_EQ((*m)->inputs()[1].offset, 0u);
  EXPECT_EQ((*m)->inputs()[0].offset, (*m)->inputs()[1].size);

  json two_out = Residual3();
  two_out["config"]["output_layers"] = {{"logits", 0, 0}, {"gap", 0, 0}};
  const json c3 = Translate(two_out);
  EXPECT_EQ(c3["outputs"], json::array({"logits", "gap"})) << c3.dump();
  auto m3 = Model::FromJson(c3, 1);
  ASSERT_TRUE(m3.ok()) << m3.status().ToString();
  ASSERT_EQ((*m3)->outputs().size(), 2u);
  EXPECT_EQ((*m3)->outputs()[1].name, "gap");
  EXPECT_EQ((*m3)->outputs()[1].offset, (*m3)->outputs()[0].size);
  EXPECT_EQ((*m3)->output_size(), (*m3)->outputs()[0].size + (*m3)->outputs()[1].size);

  // An InputLayer the output depends on that input_layers does not list.
  json second = Residual();
  second["config"]["layers"].push_back(aux);
  second["config"]["layers"][5]["inbound_nodes"] = json::parse(R"([[["aux", 0, 0, {}]]])");
  EXPECT_EQ(Refusal(second), "model.keras_json: model 'residual' (Model): its output depends on the InputLayer 'aux', "
                             "which is not one of its input_layers");
  json twice = Residual();
  twice["config"]["input_layers"].push_back({"input", 0, 0});
  EXPECT_EQ(Refusal(twice), "model.keras_json: model 'residual' (Model): lists its input input twice");
}

// A layer called twice translates into its first call and {"shares": ...} for the second,
// with one set of weights; a later call whose first call feeds nothing is refused, and so
// is a call or output that does not exist.
TEST(KerasJsonTest, SharedLayersAndOtherCallsOrOutputs) {
  json shared = Residual();
  auto& nodes = shared["config"]["layers"][5]["inbound_nodes"];
  nodes.push_back(nodes[0]);
  shared["config"]["layers"][7]["inbound_nodes"] =
      json::parse(R"([[["shortcut", 0, 0, {}], ["shortcut", 1, 0, {}], ["bn_b", 0, 0, {}]]])");
  const json c = Translate(shared);
  bool found = false;
  for (const json& l : c["layers"]) {
    if (l.contains("shares")) {
      EXPECT_EQ(l, json::parse(R"({"shares": "shortcut", "name": "shortcut_1", "inputs": ["input"]})"));
      found = true;
    }
    if (l.value("name", "") == "add") EXPECT_EQ(l["inputs"], json::array({"shortcut", "shortcut_1", "bn_b"}));
  }
  EXPECT_TRUE(found) << c.dump();
  auto once = Model::FromJson(Translate(Residual()), 1);
  auto twice = Model::FromJson(c, 1);
  ASSERT_TRUE(once.ok() && twice.ok()) << twice.status().ToString();
  EXPECT_EQ((*twice)->num_params(), (*once)->num_params()) << "one set of weights for both calls";

  json unused_first = Residual();
  unused_first["config"]["layers"][5]["inbound_nodes"].push_back(unused_first["config"]["layers"][5]["inbound_nodes"][0]);
  unused_first["config"]["layers"][7]["inbound_nodes"] = json::parse(R"([[["shortcut", 1, 0, {}], ["bn_b", 0, 0, {}]]])");
  EXPECT_EQ(Refusal(unused_first), "model.keras_json: layer 'shortcut' (Conv2D): its first call feeds nothing the "
                                   "model's outputs need, but a later call does; ringtrain keeps a shared layer's "
                                   "weights with its first call (call it there first)");
  json node1 = Residual3();
  node1["config"]["layers"][2]["inbound_nodes"][0]["args"][0]["config"]["keras_history"] = {"conv_a", 1, 0};
  EXPECT_EQ(Refusal(node1), "model.keras_json: layer 'bn_a' (BatchNormalization) reads output 0 of call 1 of "
                            "'conv_a', which has 1 call(s); ringtrain layers have one output");
  json tensor1 = Residual();
  tensor1["config"]["layers"][2]["inbound_nodes"] = json::parse(R"([[["conv_a", 0, 1, {}]]])");
  EXPECT_NE(Refusal(tensor1).find("reads output 1 of call 0 of 'conv_a'"), std::string::npos);
}

TEST(KerasJsonTest, RefusesCallArguments) {
  json k3 = Residual3();
  k3["config"]["layers"][10]["inbound_nodes"][0]["kwargs"] = {{"training", false}};
  EXPECT_NE(Refusal(k3).find("layer 'dropout' (Dropout): the call passes training=false; ringtrain calls layers with "
                             "their input only (to freeze a model, set trainable false"),
            std::string::npos);
  json k2 = Residual();
  k2["config"]["layers"][10]["inbound_nodes"] = json::parse(R"([[["gap", 0, 0, {"training": true}]]])");
  EXPECT_NE(Refusal(k2).find("layer 'dropout' (Dropout): the call passes training=true"), std::string::npos);
}

TEST(KerasJsonTest, RefusesDuplicateNamesAfterFlattening) {
  json m = Fixture("tfjs_frozen.json");
  // The head is renamed like a layer of the nested base.
  ConfigOf(m, 2)["name"] = "block1_pool";
  EXPECT_EQ(Refusal(m), "model.keras_json: layer 'block1_pool' (Dense): another layer has this name once nested "
                        "models are flattened into one; layer names must be unique (rename one)");
}

TEST(KerasJsonTest, RefusesWhatItDoesNotUnderstand) {
  json top = Residual();
  top["weights"] = json::array();
  EXPECT_EQ(Refusal(top), "model.keras_json: unknown top-level key 'weights'; it is not part of Keras' model JSON");
  json entry = Residual3();
  entry["config"]["layers"][3]["weights"] = 7;
  EXPECT_EQ(Refusal(entry), "model.keras_json: layer 'relu_a' (Activation): unknown key 'weights' beside "
                            "class_name and config; it is not part of Keras' model JSON");
  json init = Residual3();
  ConfigOf(init, 1)["kernel_initializer"]["seed"] = 1;
  EXPECT_NE(Refusal(init).find("layer 'conv_a' (Conv2D): 'kernel_initializer' has the key 'seed'"),
            std::string::npos);
  json not_model = {{"class_name", "Dense"}, {"config", json::object()}};
  EXPECT_EQ(Refusal(not_model), "model.keras_json: class_name \"Dense\" is not a model; expected Sequential, "
                                "Functional or Model (the JSON that model.to_json() writes; a subclassed model's JSON "
                                "has no layer graph: save it as a Functional or Sequential model)");
  json sparse = Residual3();
  ConfigOf(sparse, 0)["sparse"] = true;
  EXPECT_NE(Refusal(sparse).find("layer 'input' (InputLayer): 'sparse' is true"), std::string::npos);
  json cycle = Residual();
  cycle["config"]["layers"][1]["inbound_nodes"] = json::parse(R"([[["bn_a", 0, 0, {}]]])");
  EXPECT_EQ(Refusal(cycle), "model.keras_json: model 'residual' (Model): its layers form a cycle");
  json unknown_ref = Residual();
  unknown_ref["config"]["layers"][2]["inbound_nodes"] = json::parse(R"([[["nope", 0, 0, {}]]])");
  EXPECT_EQ(Refusal(unknown_ref), "model.keras_json: layer 'bn_a' (BatchNormalization) reads 'nope', which is not a "
                                  "layer of model 'residual'");
  json slash = Residual();
  ConfigOf(slash, 1)["name"] = "a/b";
  slash["config"]["layers"][1]["name"] = "a/b";
  EXPECT_NE(Refusal(slash).find("the name \"a/b\" must be at most 256 characters without '/'"), std::string::npos);
  EXPECT_NE(Refusal(json::array()).find("must be an object"), std::string::npos);
  EXPECT_EQ(Refusal({{"class_name", "Functional"}, {"config", 3}}),
            "model.keras_json: the model's 'config' must be an object with its layers, got 3");
}

// --- Translation details. ---

TEST(KerasJsonTest, ANestedModelsTrainableFalseFreezesItsLayers) {
  // Keras writes trainable false on each layer too; a file that says it only on the
  // model still freezes them all.
  json m = Fixture("keras3_nested.json");
  for (json& layer : ConfigOf(m, 1)["layers"]) layer["config"]["trainable"] = true;
  json c = Translate(m);
  EXPECT_EQ(Layer(c, "feat_conv")["trainable"], false);
  EXPECT_EQ(Layer(c, "feat_pool")["trainable"], false);
  EXPECT_EQ(Layer(c, "flatten")["trainable"], true);
  // The whole model frozen.
  json top = Fixture("keras3_sequential_cnn.json");
  top["config"]["trainable"] = false;
  const json frozen = Translate(top);  // named: a range-for over a temporary's member would dangle
  for (const json& layer : frozen["layers"]) EXPECT_EQ(layer["trainable"], false) << layer["name"];
}

TEST(KerasJsonTest, InitializersAreNormalisedAndStringsKept) {
  json m = Residual3();
  ConfigOf(m, 1)["kernel_initializer"] = "he_uniform";
  ConfigOf(m, 1)["kernel_regularizer"] =
      json::parse(R"({"module": "keras.regularizers", "class_name": "L2", "config": {"l2": 0.01},
                      "registered_name": null})");
  json c = Translate(m);
  EXPECT_EQ(Layer(c, "conv_a")["kernel_initializer"], "he_uniform");
  EXPECT_EQ(Layer(c, "conv_a")["kernel_regularizer"], json::parse(R"({"class_name": "L2", "config": {"l2": 0.01}})"));
  EXPECT_EQ(Layer(c, "bn_a")["moving_variance_initializer"], json::parse(R"({"class_name": "Ones", "config": {}})"));
}

TEST(KerasJsonTest, LayersTheOutputDoesNotNeedAreLeftOut) {
  json m = Residual();
  json extra = m["config"]["layers"][11];  // a second head on dropout, not an output
  extra["name"] = extra["config"]["name"] = "unused_head";
  m["config"]["layers"].push_back(extra);
  json c = Translate(m);
  EXPECT_EQ(c["layers"].size(), 11u);
  EXPECT_EQ(c["layers"].back()["name"], "logits");
}

TEST(KerasJsonTest, TheOrderIsTopologicalWithTheOutputLast) {
  // Keras' own order reversed: the translation still puts every layer after its inputs.
  json m = Residual();
  json& layers = m["config"]["layers"];
  std::reverse(layers.begin(), layers.end());
  json c = Translate(m);
  std::set<std::string> seen = {"input"};
  std::string previous = "input";
  for (const json& l : c["layers"]) {
    const json inputs = l.value("inputs", json::array({previous}));
    for (const json& in : inputs) EXPECT_TRUE(seen.count(in.get<std::string>())) << l.dump();
    seen.insert(l["name"].get<std::string>());
    previous = l["name"].get<std::string>();
  }
  EXPECT_EQ(c["layers"].back()["name"], "logits");
  EXPECT_EQ(c["layers"].size(), 11u);
}

TEST(KerasJsonTest, ALegacySequentialConfigListIsRead) {
  // Keras before 2.2.3 wrote a Sequential's config as the list of its layers.
  json m = Fixture("tfjs_sequential_cnn.json");
  m["config"] = m["config"]["layers"];
  json c = Translate(m);
  EXPECT_EQ(c["input_shape"], json({28, 28, 1}));
  EXPECT_EQ(c["layers"].size(), 6u);
}

}  // namespace
}  // namespace ringtrain::nn
