// Every bad model description is an INVALID_ARGUMENT that names the layer and field.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "nn/model.h"

namespace ringtrain::nn {
namespace {

using nlohmann::json;

struct BadModel {
  const char* name;
  const char* model;  // JSON text
  const char* message;
};
void PrintTo(const BadModel& c, std::ostream* os) { *os << c.name; }


class ModelErrorTest : public ::testing::TestWithParam<BadModel> {};

TEST_P(ModelErrorTest, NamesTheLayerAndField) {
  auto m = Model::FromJson(json::parse(GetParam().model), 1);
  ASSERT_FALSE(m.ok()) << GetParam().model;
  EXPECT_EQ(m.status().code(), Code::kInvalidArgument);
  EXPECT_NE(m.status().message().find(GetParam().message), std::string::npos) << m.status().message();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ModelErrorTest,
    ::testing::Values(
        BadModel{"NotAnObject", R"([1, 2])", "model: must be a JSON object"},
        BadModel{"MissingInputShape", R"({"layers": [{"type": "flatten"}]})", "model: missing 'input_shape'"},
        BadModel{"BadInputShape", R"({"input_shape": [28, 0], "layers": []})", "model: 'input_shape' must be"},
        BadModel{"UnknownModelField", R"({"input_shape": [2], "layer": []})", "model: unknown field 'layer'"},
        BadModel{"NoLayers", R"({"input_shape": [2], "layers": []})", "model: 'layers' must be a non-empty array"},
        BadModel{"LayerNotObject", R"({"input_shape": [2], "layers": [3]})", "model.layers[0]: must be a JSON object"},
        BadModel{"MissingType", R"({"input_shape": [2], "layers": [{"units": 3}]})", "model.layers[0]: missing 'type'"},
        BadModel{"UnknownType", R"({"input_shape": [2], "layers": [{"type": "lstm"}]})",
                 "model.layers[0]: unknown 'type' \"lstm\""},
        BadModel{"ZeroUnits", R"({"input_shape": [4, 4, 2], "layers": [{"type": "flatten"}, {"type": "dense", "units": 8},
                 {"type": "dense", "units": 0}]})",
                 "model.layers[2] (dense_1): 'units' must be a positive integer"},
        BadModel{"FractionalUnits", R"({"input_shape": [3], "layers": [{"type": "dense", "units": 2.5}]})",
                 "model.layers[0] (dense): 'units' must be a positive integer"},
        BadModel{"MissingUnits", R"({"input_shape": [3], "layers": [{"type": "dense"}]})",
                 "model.layers[0] (dense): missing 'units'"},
        BadModel{"TypoField", R"({"input_shape": [3], "layers": [{"type": "dense", "unit": 10}]})",
                 "model.layers[0] (dense): unknown field 'unit'"},
        BadModel{"UnknownActivation", R"({"input_shape": [3], "layers": [{"type": "dense", "units": 2, "activation": "tahn"}]})",
                 "model.layers[0] (dense): unknown 'activation' \"tahn\" (supported: \"linear\", \"relu\""},
        BadModel{"HardSigmoidActivation",
                 R"({"input_shape": [3], "layers": [{"type": "dense", "units": 2, "activation": "hard_sigmoid"}]})",
                 "unknown 'activation' \"hard_sigmoid\""},
        BadModel{"UseBiasNotBool", R"({"input_shape": [3], "layers": [{"type": "dense", "units": 2, "use_bias": 1}]})",
                 "'use_bias' must be true or false"},
        BadModel{"DenseOnImage", R"({"input_shape": [4, 4, 2], "layers": [{"type": "dense", "units": 2}]})",
                 "model.layers[0] (dense): dense needs a flat input per example, got [4, 4, 2]; add {\"type\": \"flatten\"}"},
        BadModel{"ConvOnRank2", R"({"input_shape": [28, 28], "layers": [{"type": "conv2d", "filters": 2, "kernel_size": 3}]})",
                 "add {\"type\": \"reshape\", \"target_shape\": [28, 28, 1]}"},
        BadModel{"ConvMissingFilters", R"({"input_shape": [4, 4, 1], "layers": [{"type": "conv2d", "kernel_size": 3}]})",
                 "model.layers[0] (conv2d): missing 'filters'"},
        BadModel{"ConvBadKernel", R"({"input_shape": [4, 4, 1], "layers": [{"type": "conv2d", "filters": 1, "kernel_size": "3"}]})",
                 "model.layers[0] (conv2d): 'kernel_size' must be"},
        BadModel{"ConvKernelTriple",
                 R"({"input_shape": [4, 4, 1], "layers": [{"type": "conv2d", "filters": 1, "kernel_size": [3, 3, 3]}]})",
                 "'kernel_size' must be"},
        BadModel{"ConvBadStrides",
                 R"({"input_shape": [4, 4, 1], "layers": [{"type": "conv2d", "filters": 1, "kernel_size": 3, "strides": 0}]})",
                 "'strides' must be"},
        BadModel{"ConvUnknownPadding",
                 R"({"input_shape": [4, 4, 1], "layers": [{"type": "conv2d", "filters": 1, "kernel_size": 3, "padding": "full"}]})",
                 "model.layers[0] (conv2d): unknown 'padding' \"full\""},
        BadModel{"ConvKernelTooLarge",
                 R"({"input_shape": [4, 4, 1], "layers": [{"type": "conv2d", "filters": 1, "kernel_size": [3, 5]}]})",
                 "model.layers[0] (conv2d): the kernel width 5 is larger than the input width 4"},
        BadModel{"PoolTooLarge",
                 R"({"input_shape": [1, 4, 1], "layers": [{"type": "max_pooling2d"}, {"type": "flatten"}]})",
                 "model.layers[0] (max_pooling2d): the pool size height 2 is larger than the input height 1"},
        BadModel{"PoolOnFlat", R"({"input_shape": [16], "layers": [{"type": "max_pooling2d"}]})",
                 "max_pooling2d needs a 3-D input"},
        BadModel{"ReshapeMismatch", R"({"input_shape": [28, 28], "layers": [{"type": "reshape", "target_shape": [28, 27, 1]}]})",
                 "model.layers[0] (reshape): 'target_shape' has 756 values but the input [28, 28] has 784"},
        BadModel{"ReshapeMissing", R"({"input_shape": [4], "layers": [{"type": "reshape"}]})",
                 "model.layers[0] (reshape): missing 'target_shape'"},
        BadModel{"ReshapeTwoWildcards", R"({"input_shape": [4], "layers": [{"type": "reshape", "target_shape": [-1, -1]}]})",
                 "'target_shape' must be"},
        BadModel{"DuplicateName", R"({"input_shape": [4], "layers": [{"type": "dense", "units": 3, "name": "a"},
                 {"type": "dense", "units": 3, "name": "a"}]})",
                 "model.layers[1] (dense): 'name' \"a\" is used by an earlier layer"},
        BadModel{"SlashInName", R"({"input_shape": [4], "layers": [{"type": "dense", "units": 3, "name": "a/b"}]})",
                 "'name' must be a non-empty string without '/'"}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace ringtrain::nn
