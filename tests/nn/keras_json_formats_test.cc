// The Keras model JSON of every Keras version people have files from
// (nn/keras/keras_json.h): Keras 3's and tf.keras 2's every field, Keras 2.0's bare
// Sequential lists, tf.keras 2's TFOpLambda layers, and the refusals (Keras 1, Lambda,
// custom classes, subclassed models, quantized and mixed precision layers). The
// fixtures are written by make_format_fixtures.py, which cites for each the Keras
// source of its form.
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "nn/keras/keras_json.h"
#include "nn/model.h"
#include "keras_json_test_util.h"
#include "testing/source_dir.h"

namespace ringtrain::nn::keras_json_formats_test {
namespace {

using nlohmann::json;

using keras_json_testing::Fixture;
using keras_json_testing::Refusal;
using keras_json_testing::Translate;

// `m` contains `part`, printed when not.
#define EXPECT_HAS(m, part) EXPECT_NE(std::string(m).find(part), std::string::npos) << (m)

std::vector<std::string> Names(const json& compact) {
  std::vector<std::string> names;
  for (const json& l : compact["layers"]) names.push_back(l["name"].get<std::string>());
  return names;
}

// The compact model builds (every argument passed on is one the layers take).
void ExpectBuilds(const json& compact) {
  auto model = Model::FromJson(compact, 1);
  EXPECT_TRUE(model.ok()) << model.status().ToString() << "\n" << compact.dump();
}

json& Layers(json& keras) { return keras["config"]["layers"]; }

// --- Keras 3: every field it writes. ---

TEST(KerasJsonFormatsTest, Keras3EveryFieldIsReadAndBuilds) {
  const json c = Translate(Fixture("keras3_every_field.json"));
  EXPECT_EQ(c["name"], "every_field");
  EXPECT_EQ(c["input_shape"], json({8, 8, 3}));
  EXPECT_EQ(Names(c), (std::vector<std::string>{"conv", "bn", "flatten", "logits"}));
  // shared_object_id and Keras 3's module / registered_name leave the initializer as Keras wrote it.
  EXPECT_EQ(c["layers"][0]["kernel_initializer"], json::parse(R"({"class_name": "GlorotUniform", "config": {"seed": null}})"));
  EXPECT_EQ(c["layers"][3]["kernel_initializer"], c["layers"][0]["kernel_initializer"]);
  for (const json& l : c["layers"]) {
    for (const char* gone : {"quantization_config", "dtype", "shared_object_id", "build_config", "module"}) {
      EXPECT_FALSE(l.contains(gone)) << gone << " in " << l.dump();
    }
  }
  ExpectBuilds(c);
}

TEST(KerasJsonFormatsTest, Keras3SharedObjectIdOnALayerEntryIsAccepted) {
  json m = Fixture("keras3_every_field.json");
  Layers(m)[3]["shared_object_id"] = 7;  // a layer object serialized twice in a sharing scope
  EXPECT_EQ(Translate(m)["layers"].size(), 4u);
}

TEST(KerasJsonFormatsTest, QuantizationConfigOtherThanNullIsRefused) {
  json m = Fixture("keras3_every_field.json");
  Layers(m)[4]["config"]["quantization_config"] =
      json::parse(R"({"module": "keras.quantizers", "class_name": "Int8QuantizationConfig", "config": {},
                      "registered_name": null})");
  const std::string r = Refusal(m);
  EXPECT_HAS(r, "layer 'logits' (Dense): 'quantization_config' is {");
  EXPECT_HAS(r, "quantized layers are not implemented");
  json lora = Fixture("keras3_every_field.json");
  Layers(lora)[4]["config"]["lora_rank"] = 4;
  Layers(lora)[4]["config"]["lora_alpha"] = 4;
  EXPECT_HAS(Refusal(lora), "layer 'logits' (Dense): 'lora_rank' is 4; LoRA is not implemented");
}

TEST(KerasJsonFormatsTest, OptionalInputFalseIsAcceptedTrueRefused) {
  json m = Fixture("keras3_every_field.json");
  ASSERT_EQ(Layers(m)[0]["config"]["optional"], false);
  Translate(m);
  Layers(m)[0]["config"]["optional"] = true;
  EXPECT_HAS(Refusal(m), "layer 'image' (InputLayer): 'optional' is true; ringtrain takes a dense, required input");
}

TEST(KerasJsonFormatsTest, DTypePoliciesOtherThanFloat32AreRefusedNamingThem) {
  json mixed = Fixture("keras3_every_field.json");
  Layers(mixed)[2]["config"]["dtype"]["config"]["name"] = "mixed_bfloat16";
  EXPECT_HAS(Refusal(mixed), "layer 'bn' (BatchNormalization): 'dtype' is the mixed precision policy "
                             "\"mixed_bfloat16\"; mixed precision is not implemented yet");
  // Keras 3.0-3.3's FloatDTypePolicy and tf.keras 2's Policy read like DTypePolicy.
  json older = Fixture("keras3_every_field.json");
  Layers(older)[1]["config"]["dtype"]["class_name"] = "FloatDTypePolicy";
  Layers(older)[2]["config"]["dtype"] = json::parse(R"({"class_name": "Policy", "config": {"name": "float32"}})");
  Translate(older);
  Layers(older)[2]["config"]["dtype"]["config"]["name"] = "mixed_float16";
  EXPECT_HAS(Refusal(older), "'dtype' is the mixed precision policy \"mixed_float16\"");
  json quantized = Fixture("keras3_every_field.json");
  Layers(quantized)[4]["config"]["dtype"] = json::parse(
      R"({"module": "keras", "class_name": "QuantizedDTypePolicy", "config": {"name": "int8_from_float32",
          "source_name": "float32"}, "registered_name": null})");
  EXPECT_HAS(Refusal(quantized), "layer 'logits' (Dense): 'dtype' is the QuantizedDTypePolicy \"int8_from_float32\"");
}

// --- BatchNormalization's axis as each Keras version writes it. ---

TEST(KerasJsonFormatsTest, BatchNormalizationAxisAsEveryVersionWritesIt) {
  // Keras 3 and tfjs: -1; tf.keras 2 after build: [3]; by hand: 3 or [-1].
  for (const json& axis : {json(-1), json(3), json::array({3}), json::array({-1})}) {
    SCOPED_TRACE(axis.dump());
    json m = Fixture("keras3_every_field.json");
    Layers(m)[2]["config"]["axis"] = axis;
    ExpectBuilds(Translate(m));
  }
  for (const json& axis : {json(1), json(2), json::array({1, 2, 3}), json::array({2})}) {
    SCOPED_TRACE(axis.dump());
    json m = Fixture("keras3_every_field.json");
    Layers(m)[2]["config"]["axis"] = axis;
    auto model = Model::FromJson(Translate(m), 1);
    ASSERT_FALSE(model.ok());
    EXPECT_HAS(model.status().message(), "'axis' " + axis.dump());
  }
}

// --- tf.keras 2's TFOpLambda layers. ---

TEST(KerasJsonFormatsTest, TfOpLambdaAddConcatReshapeMapToLayers) {
  const json c = Translate(Fixture("tfkeras2_tfop.json"));
  EXPECT_EQ(Names(c), (std::vector<std::string>{"conv_a", "bn", "conv_b", "tf.__operators__.add", "tf.concat",
                                                "tf.reshape", "logits"}));
  const json& add = c["layers"][3];
  EXPECT_EQ(add["type"], "Add");
  EXPECT_EQ(add["inputs"], json({"bn", "conv_b"}));
  const json& concat = c["layers"][4];
  EXPECT_EQ(concat["type"], "Concatenate");
  EXPECT_EQ(concat["axis"], -1);
  EXPECT_EQ(concat["inputs"], json({"tf.__operators__.add", "conv_a"}));
  const json& reshape = c["layers"][5];
  EXPECT_EQ(reshape["type"], "Reshape");
  EXPECT_EQ(reshape["target_shape"], json({512}));
  EXPECT_FALSE(reshape.contains("inputs"));  // the previous layer
  EXPECT_EQ(c["layers"][1]["axis"], json({3}));
  ExpectBuilds(c);
}

TEST(KerasJsonFormatsTest, TfOpLambdaInTfKeras213Form) {
  // tf.keras 2.13-2.15 serialize each layer with serialization_lib
  // (tf_keras/engine/functional.py get_network_config): module and registered_name
  // beside class_name, the op layers' module Keras' own.
  json m = Fixture("tfkeras2_tfop.json");
  for (json& layer : Layers(m)) {
    const bool op = layer["class_name"] == "TFOpLambda";
    layer["module"] = op ? "keras.src.layers.core.tf_op_layer" : "keras.layers";
    layer["registered_name"] = op ? json("TFOpLambda") : json();
  }
  EXPECT_EQ(Translate(m), Translate(Fixture("tfkeras2_tfop.json")));
}

TEST(KerasJsonFormatsTest, TfOpLambdaMultiplyAndMathAddMap) {
  json m = Fixture("tfkeras2_tfop.json");
  Layers(m)[4]["config"]["function"] = "math.multiply";
  json c = Translate(m);
  EXPECT_EQ(c["layers"][3]["type"], "Multiply");
  Layers(m)[4]["config"]["function"] = "math.add";
  c = Translate(m);
  EXPECT_EQ(c["layers"][3]["type"], "Add");
  ExpectBuilds(c);
  // The first argument written as a list of one record is read the same.
  Layers(m)[4]["inbound_nodes"] = json::parse(R"([[["bn", 0, 0, {"y": ["conv_b", 0, 0], "name": null}]]])");
  EXPECT_EQ(Translate(m)["layers"][3]["inputs"], json({"bn", "conv_b"}));
  // An operand that is not a layer of the model.
  Layers(m)[4]["inbound_nodes"] = json::parse(R"([["bn", 0, 0, {"y": ["nope", 0, 0]}]])");
  EXPECT_HAS(Refusal(m), "layer 'tf.__operators__.add' (TFOpLambda) reads 'nope', which is not a layer of model 'ops'");
}

// The merge ops with a layer of their own: tf.keras 2's TFOpLambda and Keras 3's ops.
TEST(KerasJsonFormatsTest, SubtractMaximumMinimumOpsMapToTheirLayers) {
  const std::pair<const char*, const char*> tf_ops[] = {
      {"math.subtract", "Subtract"}, {"__operators__.sub", "Subtract"}, {"math.maximum", "Maximum"},
      {"math.minimum", "Minimum"}};
  for (const auto& [function, type] : tf_ops) {
    json m = Fixture("tfkeras2_tfop.json");
    Layers(m)[4]["config"]["function"] = function;
    json c = Translate(m);
    EXPECT_EQ(c["layers"][3]["type"], type) << function;
    ExpectBuilds(c);
  }
  for (const char* type : {"Subtract", "Maximum", "Minimum"}) {
    json m = Fixture("keras3_ops.json");
    Layers(m)[3]["class_name"] = type;
    json c = Translate(m);
    EXPECT_EQ(c["layers"][2]["type"], type);
    ExpectBuilds(c);
  }
}

// The translated layer named `name` (null when there is none) and what it reads: its
// "inputs", or the layer before it when it has none.
json LayerNamed(const json& t, const std::string& name) {
  for (const json& l : t["layers"]) {
    if (l.value("name", "") == name) return l;
  }
  return nullptr;
}
json InputsOf(const json& t, const std::string& name) {
  const json& layers = t["layers"];
  for (size_t i = 0; i < layers.size(); ++i) {
    if (layers[i].value("name", "") != name) continue;
    if (layers[i].contains("inputs")) return layers[i]["inputs"];
    return i == 0 ? json::array({"input"}) : json::array({layers[i - 1]["name"]});
  }
  return nullptr;
}

// x op c and c op x with a number c: Rescaling(scale, offset); reduce_mean over the
// spatial axes: GlobalAveragePooling2D.
TEST(KerasJsonFormatsTest, TfOpLambdaWithANumberAndSpatialMeanMapToLayers) {
  struct Case {
    const char* function;
    const char* inbound;
    double scale, offset;
    const char* input;
  };
  for (const Case& c : {Case{"math.multiply", R"([["bn", 0, 0, {"y": 2.0, "name": null}]])", 2, 0, "bn"},
                        Case{"math.add", R"([["_CONSTANT_VALUE", -1, 1.5, {"y": ["conv_b", 0, 0]}]])", 1, 1.5, "conv_b"},
                        Case{"__operators__.sub", R"([["bn", 0, 0, {"y": 3}]])", 1, -3, "bn"},
                        Case{"math.subtract", R"([["_CONSTANT_VALUE", -1, 1.0, {"y": ["bn", 0, 0]}]])", -1, 1, "bn"},
                        Case{"math.truediv", R"([["bn", 0, 0, {"y": 4.0}]])", 0.25, 0, "bn"}}) {
    json m = Fixture("tfkeras2_tfop.json");
    Layers(m)[4]["config"]["function"] = c.function;
    Layers(m)[4]["inbound_nodes"] = json::parse(c.inbound);
    // (conv_b, when no longer read, is left out of the translation.)
    const json t = Translate(m);
    const json layer = LayerNamed(t, "tf.__operators__.add");
    ASSERT_TRUE(layer.is_object()) << t.dump();
    EXPECT_EQ(layer["type"], "Rescaling") << c.function;
    EXPECT_EQ(layer["scale"].get<double>(), c.scale) << c.function;
    EXPECT_EQ(layer["offset"].get<double>(), c.offset) << c.function;
    EXPECT_EQ(InputsOf(t, "tf.__operators__.add"), json({c.input})) << c.function;
    ExpectBuilds(t);
  }
  for (const bool keepdims : {false, true}) {
    json m = Fixture("tfkeras2_tfop.json");
    Layers(m)[4]["config"]["function"] = "math.reduce_mean";
    Layers(m)[4]["inbound_nodes"] = json{json::array({"bn", 0, 0, {{"axis", {1, 2}}, {"keepdims", keepdims}}})};
    const json t = Translate(m);
    const json layer = LayerNamed(t, "tf.__operators__.add");
    ASSERT_TRUE(layer.is_object()) << t.dump();
    EXPECT_EQ(layer["type"], "GlobalAveragePooling2D");
    EXPECT_EQ(layer["keepdims"], keepdims);
  }
}

// reduce_sum and reduce_mean over other axes than the height and width: the reduce layer.
TEST(KerasJsonFormatsTest, TfOpLambdaReductionsMapToTheReduceLayer) {
  const std::pair<const char*, const char*> cases[] = {
      {"math.reduce_mean", R"({"axis": -1, "keepdims": true})"},
      {"math.reduce_sum", R"({"axis": [1, 2]})"},
      {"math.reduce_sum", R"({"axis": 3, "keepdims": false})"},
  };
  for (const auto& [function, kwargs] : cases) {
    SCOPED_TRACE(std::string(function) + " " + kwargs);
    json m = Fixture("tfkeras2_tfop.json");
    Layers(m)[4]["config"]["function"] = function;
    Layers(m)[4]["inbound_nodes"] = json{json::array({"bn", 0, 0, json::parse(kwargs)})};
    const json t = Translate(m);
    const json layer = LayerNamed(t, "tf.__operators__.add");
    ASSERT_TRUE(layer.is_object()) << t.dump();
    EXPECT_EQ(layer["type"], "reduce");
    EXPECT_EQ(layer["op"], std::string(function) == "math.reduce_sum" ? "sum" : "mean");
    const json args = json::parse(kwargs);
    EXPECT_EQ(layer["keepdims"], args.value("keepdims", false));
    EXPECT_EQ(layer["axis"], args["axis"].is_array() ? args["axis"] : json::array({args["axis"]}));
  }
}

TEST(KerasJsonFormatsTest, TfOpLambdaRefusals) {
  // Ops without a layer yet, and others, named.
  json sum = Fixture("tfkeras2_tfop.json");
  Layers(sum)[4]["config"]["function"] = "math.reduce_sum";
  Layers(sum)[4]["inbound_nodes"] = json::parse(R"([["bn", 0, 0, {}]])");
  EXPECT_HAS(Refusal(sum), "(TFOpLambda): tf.math.reduce_sum over every axis (axis=None) reduces the batch too");
  json over_batch = Fixture("tfkeras2_tfop.json");
  Layers(over_batch)[4]["config"]["function"] = "math.reduce_mean";
  Layers(over_batch)[4]["inbound_nodes"] = json::parse(R"([["bn", 0, 0, {"axis": [0, 1]}]])");
  EXPECT_HAS(Refusal(over_batch), "tf.math.reduce_mean over axis=[0,1]: ringtrain reduces axes other than the batch");
  json divide = Fixture("tfkeras2_tfop.json");
  Layers(divide)[4]["config"]["function"] = "math.truediv";
  EXPECT_HAS(Refusal(divide), "(TFOpLambda): tf.math.truediv of two tensors has no ringtrain layer (a division by a "
                              "number maps to Rescaling)");
  json other = Fixture("tfkeras2_tfop.json");
  Layers(other)[4]["config"]["function"] = "nn.softmax";
  EXPECT_HAS(Refusal(other), "layer 'tf.__operators__.add' (TFOpLambda): tf.nn.softmax has no ringtrain layer");
  // A constant that is not one number, and a division of a number by a tensor.
  json vector = Fixture("tfkeras2_tfop.json");
  Layers(vector)[4]["config"]["function"] = "math.multiply";
  Layers(vector)[4]["inbound_nodes"] = json::parse(R"([["bn", 0, 0, {"y": [1.0, 2.0], "name": null}]])");
  EXPECT_HAS(Refusal(vector), "(TFOpLambda): tf.math.multiply is called with the constant [1.0,2.0]; ringtrain maps "
                              "an op with a constant only when it is one number");
  json reciprocal = Fixture("tfkeras2_tfop.json");
  Layers(reciprocal)[4]["config"]["function"] = "math.truediv";
  Layers(reciprocal)[4]["inbound_nodes"] = json::parse(R"([["_CONSTANT_VALUE", -1, 1.0, {"y": ["bn", 0, 0]}]])");
  EXPECT_HAS(Refusal(reciprocal), "tf.math.truediv with the constant 1.0 divided by a tensor has no ringtrain layer");
  // A reshape that fixes the batch size.
  json batch = Fixture("tfkeras2_tfop.json");
  Layers(batch)[6]["inbound_nodes"] = json::parse(R"([["tf.concat", 0, 0, {"shape": [32, 512], "name": null}]])");
  EXPECT_HAS(Refusal(batch), "layer 'tf.reshape' (TFOpLambda): tf.reshape reshapes to [32,512], whose batch entry is "
                             "not -1");
  // An argument the mapping does not know.
  json extra = Fixture("tfkeras2_tfop.json");
  Layers(extra)[5]["inbound_nodes"][0][0][3]["foo"] = 1;
  Layers(extra)[5]["inbound_nodes"][0][1][3]["foo"] = 1;
  EXPECT_HAS(Refusal(extra), "layer 'tf.concat' (TFOpLambda): tf.concat is called with foo=1");
  // tf.keras 2's other op layers.
  json slicing = Fixture("tfkeras2_tfop.json");
  Layers(slicing)[6]["class_name"] = "SlicingOpLambda";
  Layers(slicing)[6]["config"]["function"] = "__operators__.getitem";
  EXPECT_HAS(Refusal(slicing), "layer 'tf.reshape' (SlicingOpLambda): a tf.keras 2 op layer (__operators__.getitem)");
}

// --- Keras 3's operations on Keras tensors. ---

TEST(KerasJsonFormatsTest, Keras3OpsMapToLayers) {
  const json c = Translate(Fixture("keras3_ops.json"));
  EXPECT_EQ(Names(c), (std::vector<std::string>{"conv_a", "conv_b", "add", "concatenate", "reshape", "logits"}));
  EXPECT_EQ(c["layers"][2]["type"], "Add");
  EXPECT_EQ(c["layers"][2]["inputs"], json({"conv_a", "conv_b"}));
  EXPECT_EQ(c["layers"][3]["type"], "Concatenate");
  EXPECT_EQ(c["layers"][3]["axis"], -1);
  EXPECT_EQ(c["layers"][3]["inputs"], json({"add", "conv_a"}));
  EXPECT_EQ(c["layers"][4]["type"], "Reshape");
  EXPECT_EQ(c["layers"][4]["target_shape"], json({512}));
  ExpectBuilds(c);
  json multiply = Fixture("keras3_ops.json");
  Layers(multiply)[3]["class_name"] = "Multiply";
  EXPECT_EQ(Translate(multiply)["layers"][2]["type"], "Multiply");
}

// keras.ops with one number operand: Rescaling, as for tf.keras 2's op layers.
TEST(KerasJsonFormatsTest, Keras3OpsWithANumberMapToRescaling) {
  for (const auto& [cls, first, scale, offset] : std::vector<std::tuple<const char*, bool, double, double>>{
           {"Multiply", false, 2, 0}, {"Add", true, 1, 2}, {"Subtract", false, 1, -2}, {"Subtract", true, -1, 2},
           {"Divide", false, 0.5, 0}, {"TrueDivide", false, 0.5, 0}}) {
    json m = Fixture("keras3_ops.json");
    Layers(m)[3]["class_name"] = cls;
    json& args = Layers(m)[3]["inbound_nodes"][0]["args"];
    if (first) std::swap(args[0], args[1]);
    args[first ? 0 : 1] = 2.0;
    const json t = Translate(m);
    const json layer = LayerNamed(t, "add");
    ASSERT_TRUE(layer.is_object()) << t.dump();
    EXPECT_EQ(layer["type"], "Rescaling") << cls;
    EXPECT_EQ(layer["scale"].get<double>(), scale) << cls << first;
    EXPECT_EQ(layer["offset"].get<double>(), offset) << cls << first;
    EXPECT_EQ(InputsOf(t, "add"), json({"conv_a"})) << cls;
    ExpectBuilds(t);
  }
}

// keras3_ops.json with its 'add' layer made keras.ops.mean(conv_a, axis, keepdims).
json Keras3Mean(const json& axis, bool keepdims) {
  json m = Fixture("keras3_ops.json");
  Layers(m)[3]["class_name"] = "Mean";
  Layers(m)[3]["config"]["axis"] = axis;
  Layers(m)[3]["config"]["keepdims"] = keepdims;
  Layers(m)[3]["inbound_nodes"][0]["args"].erase(1);
  return m;
}

// keras.ops.mean(x, axis=[1, 2], keepdims) over an image tensor: GlobalAveragePooling2D.
TEST(KerasJsonFormatsTest, Keras3SpatialMeanMapsToGlobalAveragePooling) {
  for (const bool keepdims : {false, true}) {
    const json t = Translate(Keras3Mean({1, 2}, keepdims));
    const json layer = LayerNamed(t, "add");
    ASSERT_TRUE(layer.is_object()) << t.dump();
    EXPECT_EQ(layer["type"], "GlobalAveragePooling2D");
    EXPECT_EQ(layer["keepdims"], keepdims);
    EXPECT_EQ(InputsOf(t, "add"), json({"conv_a"}));
  }
}

TEST(KerasJsonFormatsTest, Keras3OpRefusals) {
  json divide = Fixture("keras3_ops.json");
  Layers(divide)[3]["class_name"] = "Divide";
  EXPECT_HAS(Refusal(divide), "layer 'add' (Divide): keras.ops.divide of two tensors has no ringtrain layer");
  json sum = Keras3Mean(json(), false);
  Layers(sum)[3]["class_name"] = "Sum";
  EXPECT_HAS(Refusal(sum), "layer 'add' (Sum): keras.ops.sum over every axis (axis=None) reduces the batch too");
  const json channel_mean = Translate(Keras3Mean(-1, false));
  EXPECT_EQ(LayerNamed(channel_mean, "add")["type"], "reduce") << channel_mean.dump();
  json other = Fixture("keras3_ops.json");
  Layers(other)[3]["class_name"] = "Log";
  EXPECT_HAS(Refusal(other), "layer 'add' (Log): keras.ops.log has no ringtrain layer");
  // Maximum with a number has no Rescaling form.
  json constant = Fixture("keras3_ops.json");
  Layers(constant)[3]["class_name"] = "Maximum";
  Layers(constant)[3]["inbound_nodes"][0]["args"][1] = 2.0;
  EXPECT_HAS(Refusal(constant), "layer 'add' (Maximum): keras.ops.maximum is called with the constant 2.0 as 'x2'");
  json batch = Fixture("keras3_ops.json");
  Layers(batch)[5]["config"]["newshape"] = {32, 512};
  EXPECT_HAS(Refusal(batch), "layer 'reshape' (Reshape): keras.ops.reshape reshapes to [32,512]");
}

// --- Keras 2.0 and Keras 1. ---

TEST(KerasJsonFormatsTest, Keras20NestedSequentialListsGetKerasDefaultNames) {
  const json c = Translate(Fixture("keras2_0_nested_sequential.json"));
  EXPECT_EQ(c["input_shape"], json({16, 16, 3}));  // batch_input_shape on the first layer of the nested model
  EXPECT_EQ(Names(c), (std::vector<std::string>{"conv2d_1", "max_pooling2d_1", "flatten_1", "dense_1"}));
  // Keras names the inner model first: "sequential", then the outer "sequential_1".
  EXPECT_EQ(c["name"], "sequential_1");
  ExpectBuilds(c);
  // Names already taken are skipped.
  json taken = Fixture("keras2_0_nested_sequential.json");
  taken["config"][1]["config"]["name"] = "sequential";
  EXPECT_EQ(Translate(taken)["name"], "sequential_2");
  // An error inside the nested model names it by its default name.
  json bad = Fixture("keras2_0_nested_sequential.json");
  bad["config"][0]["config"][1]["class_name"] = "Lambda";
  EXPECT_HAS(Refusal(bad), "layer 'max_pooling2d_1' (Lambda)");
}

TEST(KerasJsonFormatsTest, BatchInputShapeOnTheFirstLayerOfASequential) {
  json m = Fixture("keras2_0_nested_sequential.json");
  m["config"].erase(0);  // the outer Sequential starts with Flatten, which carries the shape
  m["config"][0]["config"]["batch_input_shape"] = {nullptr, 4, 4, 2};
  const json c = Translate(m);
  EXPECT_EQ(c["input_shape"], json({4, 4, 2}));
  EXPECT_FALSE(c["layers"][0].contains("batch_input_shape"));
  ExpectBuilds(c);
}

TEST(KerasJsonFormatsTest, Keras1IsRefusedWithWhatToDo) {
  EXPECT_EQ(Refusal(Fixture("keras1_sequential.json")),
            "model.keras_json: this model JSON was written by Keras 1.2.2; ringtrain reads the JSON of Keras 2 and "
            "later: load the model with Keras 2 and save it again (model.to_json())");
  // Without keras_version (a nested model, an edited file): the layer is named.
  json m = Fixture("keras1_sequential.json");
  m.erase("keras_version");
  EXPECT_EQ(Refusal(m), "model.keras_json: layer 'convolution2d_1' (Convolution2D): a Keras 1 layer (Keras 2 replaced "
                        "it with Conv2D); ringtrain reads the JSON of Keras 2 and later: load the model with Keras 2 "
                        "and save it again (model.to_json())");
  m["config"].erase(0);
  m["config"][0]["config"]["batch_input_shape"] = {nullptr, 28, 28, 1};
  EXPECT_HAS(Refusal(m), "layer 'dense_1' (Dense): 'output_dim' is a Keras 1 argument (Keras 2 calls it 'units')");
  // Embedding's output_dim is Keras 2's and 3's argument as well.
  json embedding = Fixture("keras3_every_field.json");
  Layers(embedding)[3]["class_name"] = "Embedding";
  Layers(embedding)[3]["config"] = {{"name", "flatten"}, {"input_dim", 100}, {"output_dim", 8}};
  EXPECT_EQ(Translate(embedding)["layers"][2]["output_dim"], 8);
  json merge = Fixture("tfjs_residual.json");
  Layers(merge)[7]["class_name"] = "Merge";
  EXPECT_HAS(Refusal(merge), "layer 'add' (Merge): a Keras 1 layer (Keras 2 replaced it with the merge layers Add, "
                             "Multiply, Concatenate");
}

// --- Lambda, custom classes, subclassed models. ---

TEST(KerasJsonFormatsTest, LambdaIsRefusedWithWhatToUse) {
  json m = Fixture("keras3_every_field.json");
  Layers(m)[3]["class_name"] = "Lambda";
  Layers(m)[3]["config"]["function"] = json::parse(R"({"class_name": "__lambda__", "config": {"value": ["4wEAAA=="]}})");
  EXPECT_EQ(Refusal(m), "model.keras_json: layer 'flatten' (Lambda): a Lambda layer holds Python bytecode, which "
                        "ringtrain never runs: use a built-in layer instead (for arithmetic the merge layers Add, "
                        "Multiply, Concatenate, or Rescaling or Activation) and save the model again");
}

TEST(KerasJsonFormatsTest, CustomClassesAreRefusedNamingTheirModule) {
  // Keras 3, a class of __main__: module null, registered_name the class name.
  json main = Fixture("keras3_every_field.json");
  Layers(main)[3]["class_name"] = "MyBlock";
  Layers(main)[3]["module"] = nullptr;
  Layers(main)[3]["registered_name"] = "MyBlock";
  EXPECT_HAS(Refusal(main), "layer 'flatten' (MyBlock): a custom layer class from module __main__ (written as null);");
  // A package's class, registered.
  json pkg = Fixture("keras3_every_field.json");
  Layers(pkg)[3]["class_name"] = "MyBlock";
  Layers(pkg)[3]["module"] = "my_models.layers";
  Layers(pkg)[3]["registered_name"] = "my_models>MyBlock";
  EXPECT_HAS(Refusal(pkg), "layer 'flatten' (MyBlock): a custom layer class from module 'my_models.layers', "
                           "registered as 'my_models>MyBlock'; ringtrain builds Keras' own layers only");
  // A custom subclass named like a built-in layer is still custom.
  json dense = Fixture("keras3_every_field.json");
  Layers(dense)[4]["module"] = "my_models.layers";
  EXPECT_HAS(Refusal(dense), "layer 'logits' (Dense): a custom layer class from module 'my_models.layers'");
  // Keras' own modules are not custom.
  json own = Fixture("keras3_every_field.json");
  Layers(own)[4]["module"] = "keras.src.layers.core.dense";
  Layers(own)[4]["registered_name"] = "Dense";
  Translate(own);
}

TEST(KerasJsonFormatsTest, SubclassedModelsAreRefused) {
  // Keras 3's to_json() of a subclassed model: its __init__ arguments, no layer graph.
  const json sub = json::parse(R"({"module": "__main__", "class_name": "MyModel",
      "config": {"name": "my_model", "trainable": true, "units": 10}, "registered_name": "Custom>MyModel"})");
  EXPECT_EQ(Refusal(sub), "model.keras_json: the model is of the custom class 'MyModel' from module '__main__', "
                          "registered as 'Custom>MyModel' (a subclassed model): its JSON has no layer graph that "
                          "ringtrain can build; save it as a Functional model (keras.Model(inputs, outputs)) or a "
                          "Sequential model");
  // tf.keras 2 (no module): the class name alone.
  EXPECT_HAS(Refusal(json::parse(R"({"class_name": "MyModel", "config": {"name": "m"}})")),
             "class_name \"MyModel\" is not a model; expected Sequential, Functional or Model (the JSON that "
             "model.to_json() writes; a subclassed model's JSON has no layer graph: save it as a Functional or "
             "Sequential model)");
  // A Model class without layers.
  EXPECT_HAS(Refusal(json::parse(R"({"class_name": "Model", "config": {"name": "m", "trainable": true}})")),
             "model 'm' (Model): has no 'layers' list and 'input_layers' (a subclassed model's JSON has no layer "
             "graph");
  // A nested custom model.
  json nested = Fixture("keras3_nested.json");
  Layers(nested)[1]["module"] = "my_models";
  Layers(nested)[1]["class_name"] = "Sequential";
  EXPECT_HAS(Refusal(nested), "(Sequential): a custom model class from module 'my_models'");
}

}  // namespace
}  // namespace ringtrain::nn::keras_json_formats_test
