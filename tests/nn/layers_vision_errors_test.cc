// The vision layers' argument errors: each refused with INVALID_ARGUMENT naming the field,
// and their Keras JSON (as tf.keras 2 and Keras 3 write these layers) translated and built.
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "nn/keras/keras_json.h"
#include "nn/model.h"

namespace ringtrain::nn {
namespace {

using nlohmann::json;

struct ErrorCase {
  const char* name;
  std::vector<int> input;
  json layer;          // the first layer; a Flatten follows
  const char* needle;  // what the message must name
};
void PrintTo(const ErrorCase& c, std::ostream* os) { *os << c.name; }

class VisionErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(VisionErrorTest, RefusedNamingTheField) {
  const ErrorCase& c = GetParam();
  auto m = Model::FromJson({{"input_shape", c.input}, {"layers", {c.layer, {{"type", "Flatten"}}}}}, 1);
  ASSERT_FALSE(m.ok()) << c.layer.dump();
  EXPECT_EQ(m.status().code(), Code::kInvalidArgument);
  const std::string msg = m.status().ToString();
  EXPECT_NE(msg.find(c.needle), std::string::npos) << msg;
  EXPECT_NE(msg.find("model.layers[0]"), std::string::npos) << msg;
}

INSTANTIATE_TEST_SUITE_P(
    Args, VisionErrorTest,
    ::testing::Values(
        ErrorCase{"cropping_negative", {8, 8, 2}, {{"type", "Cropping2D"}, {"cropping", -1}}, "cropping"},
        ErrorCase{"cropping_three", {8, 8, 2}, {{"type", "Cropping2D"}, {"cropping", {1, 2, 3}}}, "cropping"},
        ErrorCase{"cropping_everything", {4, 8, 2}, {{"type", "Cropping2D"}, {"cropping", {{2, 2}, {0, 0}}}},
                  "cropping"},
        ErrorCase{"cropping_flat_input", {8, 2}, {{"type", "Cropping2D"}, {"cropping", 1}}, "cropping2d"},
        ErrorCase{"upsampling_size_zero", {4, 4, 2}, {{"type", "UpSampling2D"}, {"size", 0}}, "size"},
        ErrorCase{"upsampling_bicubic", {4, 4, 2}, {{"type", "UpSampling2D"}, {"interpolation", "bicubic"}},
                  "interpolation"},
        ErrorCase{"conv_t_no_filters", {4, 4, 2}, {{"type", "Conv2DTranspose"}, {"kernel_size", 3}}, "filters"},
        ErrorCase{"conv_t_output_padding_stride", {4, 4, 2},
                  {{"type", "Conv2DTranspose"}, {"filters", 2}, {"kernel_size", 3}, {"strides", 2},
                   {"output_padding", 2}},
                  "output_padding"},
        ErrorCase{"conv_t_output_padding_bad", {4, 4, 2},
                  {{"type", "Conv2DTranspose"}, {"filters", 2}, {"kernel_size", 3}, {"output_padding", "x"}},
                  "output_padding"},
        // k 4, stride 2, 'same', output_padding 0: a 6-row output, whose convolution gives 3 rows, not 4.
        ErrorCase{"conv_t_output_padding_not_invertible", {4, 4, 2},
                  {{"type", "Conv2DTranspose"}, {"filters", 2}, {"kernel_size", 4}, {"strides", 2},
                   {"padding", "same"}, {"output_padding", 0}},
                  "output_padding"},
        ErrorCase{"conv_t_groups", {4, 4, 2}, {{"type", "Conv2DTranspose"}, {"filters", 2}, {"kernel_size", 3},
                                               {"groups", 2}},
                  "groups"},
        ErrorCase{"conv_t_dilation_with_strides", {4, 4, 2},
                  {{"type", "Conv2DTranspose"}, {"filters", 2}, {"kernel_size", 3}, {"strides", 2},
                   {"dilation_rate", 2}},
                  "dilation_rate"},
        ErrorCase{"permute_missing", {4, 4, 2}, {{"type", "Permute"}}, "dims"},
        ErrorCase{"permute_repeated", {4, 4, 2}, {{"type", "Permute"}, {"dims", {1, 1, 2}}}, "dims"},
        ErrorCase{"permute_zero_based", {4, 4, 2}, {{"type", "Permute"}, {"dims", {0, 1, 2}}}, "dims"},
        ErrorCase{"permute_wrong_rank", {4, 4, 2}, {{"type", "Permute"}, {"dims", {2, 1}}}, "dims"},
        ErrorCase{"resizing_no_height", {4, 4, 2}, {{"type", "Resizing"}, {"width", 3}}, "height"},
        ErrorCase{"resizing_bicubic", {4, 4, 2}, {{"type", "Resizing"}, {"height", 2}, {"width", 2},
                                                  {"interpolation", "bicubic"}},
                  "interpolation"},
        ErrorCase{"resizing_pad_to_aspect", {4, 4, 2}, {{"type", "Resizing"}, {"height", 2}, {"width", 3},
                                                        {"pad_to_aspect_ratio", true}},
                  "pad_to_aspect_ratio"},
        ErrorCase{"resizing_antialias", {4, 4, 2}, {{"type", "Resizing"}, {"height", 2}, {"width", 3},
                                                    {"antialias", true}},
                  "antialias"},
        ErrorCase{"center_crop_zero", {4, 4, 2}, {{"type", "CenterCrop"}, {"height", 0}, {"width", 2}}, "height"},
        ErrorCase{"center_crop_unknown", {4, 4, 2}, {{"type", "CenterCrop"}, {"height", 2}, {"width", 2},
                                                     {"interpolation", "nearest"}},
                  "interpolation"}),
    [](const auto& info) { return std::string(info.param.name); });

// A Keras 3 Sequential of the six layers, as model.to_json() writes it (configs trimmed to
// the keys these layers write), translates and builds with Keras' shapes and weights.
TEST(VisionKerasJsonTest, Keras3SequentialBuilds) {
  auto layer = [](const char* cls, json config) {
    config["trainable"] = true;
    config["dtype"] = "float32";
    return json{{"module", "keras.layers"}, {"class_name", cls}, {"config", config}, {"registered_name", nullptr}};
  };
  json layers = json::array();
  layers.push_back({{"module", "keras.layers"}, {"class_name", "InputLayer"},
                    {"config", {{"batch_shape", {nullptr, 9, 8, 3}}, {"dtype", "float32"}, {"name", "input"}}}});
  layers.push_back(
      layer("Cropping2D", {{"name", "crop"}, {"cropping", {{1, 0}, {1, 1}}}, {"data_format", "channels_last"}}));
  layers.push_back(layer("Conv2DTranspose",
                         {{"name", "up"}, {"filters", 4}, {"kernel_size", {3, 3}}, {"strides", {2, 2}},
                          {"padding", "same"}, {"output_padding", nullptr}, {"data_format", "channels_last"},
                          {"dilation_rate", {1, 1}}, {"activation", "relu"}, {"use_bias", true},
                          {"kernel_initializer", {{"module", "keras.initializers"}, {"class_name", "GlorotUniform"},
                                                  {"config", {{"seed", nullptr}}}, {"registered_name", nullptr}}},
                          {"bias_initializer", {{"module", "keras.initializers"}, {"class_name", "Zeros"},
                                                {"config", json::object()}, {"registered_name", nullptr}}},
                          {"kernel_regularizer", nullptr}, {"bias_regularizer", nullptr},
                          {"activity_regularizer", nullptr}, {"kernel_constraint", nullptr},
                          {"bias_constraint", nullptr}}));
  layers.push_back(layer("UpSampling2D", {{"name", "ups"}, {"size", {1, 2}}, {"data_format", "channels_last"},
                                          {"interpolation", "bilinear"}}));
  layers.push_back(
      layer("CenterCrop", {{"name", "cc"}, {"height", 12}, {"width", 20}, {"data_format", "channels_last"}}));
  layers.push_back(layer("Resizing", {{"name", "rs"}, {"height", 6}, {"width", 5}, {"interpolation", "bilinear"},
                                      {"crop_to_aspect_ratio", false}, {"pad_to_aspect_ratio", false},
                                      {"fill_mode", "constant"}, {"fill_value", 0.0}, {"antialias", false},
                                      {"data_format", "channels_last"}}));
  layers.push_back(layer("Permute", {{"name", "perm"}, {"dims", {3, 1, 2}}}));
  layers.push_back(layer("Flatten", {{"name", "flat"}, {"data_format", "channels_last"}}));
  layers.push_back(layer("Dense", {{"name", "out"}, {"units", 3}, {"activation", "softmax"}, {"use_bias", true}}));
  json model = {{"module", "keras"}, {"class_name", "Sequential"},
                {"config", {{"name", "vision"}, {"trainable", true}, {"dtype", "float32"}, {"layers", layers}}}};
  auto compact = KerasJsonToCompact(model);
  ASSERT_TRUE(compact.ok()) << compact.status().ToString();
  auto m = Model::FromJson(*compact, 1);
  ASSERT_TRUE(m.ok()) << m.status().ToString() << "\n" << compact->dump();
  // 9x8x3 -> crop 8x6x3 -> transpose 16x12x4 -> up 16x24x4 -> centre 12x20x4 -> 6x5x4 -> 4x6x5.
  EXPECT_EQ((*m)->num_classes(), 3);
  int found = 0;
  for (const ParamInfo& p : (*m)->param_infos()) {
    if (p.name == "up/kernel") {
      ++found;
      EXPECT_EQ(p.shape, (std::vector<int64_t>{3, 3, 4, 3}));  // [kh, kw, filters, in]
    } else if (p.name == "out/kernel") {
      ++found;
      EXPECT_EQ(p.shape, (std::vector<int64_t>{4 * 6 * 5, 3}));  // the Permute's output, flattened
    }
  }
  EXPECT_EQ(found, 2);
}

}  // namespace
}  // namespace ringtrain::nn
