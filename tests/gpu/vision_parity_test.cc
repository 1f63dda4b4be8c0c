// The op parity suite for the vision ops (tests/gpu/op_parity.h): Cropping2D,
// UpSampling2D, Conv2DTranspose, Permute, Reduce, Resizing and CenterCrop, each case on every
// device against the CPU kernel. The cuda cases skip, saying why, without a GPU.
#include <vector>

#include <nlohmann/json.hpp>

#include "gpu/op_parity.h"

namespace ringtrain::testing {
namespace {

using nlohmann::json;

// A model of one layer under test on an input of `shape`.
json One(json layer, json shape) { return {{"input_shape", shape}, {"layers", json::array({layer})}}; }

class VisionParity : public OpParityTest {};

TEST_P(VisionParity, Cropping2D) {
  SKIP_IF_DEVICE_UNAVAILABLE(GetParam());
  const std::vector<OpCase> cases = {
      {"int 1", One({{"type", "cropping2d"}, {"cropping", 1}}, {5, 6, 3})},
      {"((2, 0), (1, 3))", One({{"type", "cropping2d"}, {"cropping", {{2, 0}, {1, 3}}}}, {7, 8, 4}), 3},
  };
  for (const OpCase& c : cases) CheckOp(GetParam(), c);
}

TEST_P(VisionParity, UpSampling2D) {
  SKIP_IF_DEVICE_UNAVAILABLE(GetParam());
  const std::vector<OpCase> cases = {
      {"nearest 2", One({{"type", "up_sampling2d"}}, {4, 5, 3})},
      {"nearest (3, 2)", One({{"type", "up_sampling2d"}, {"size", {3, 2}}}, {3, 4, 2})},
      {"bilinear 2", One({{"type", "up_sampling2d"}, {"interpolation", "bilinear"}}, {4, 5, 3})},
      {"bilinear (3, 4) c16", One({{"type", "up_sampling2d"}, {"size", {3, 4}}, {"interpolation", "bilinear"}},
                                  {5, 3, 16}), 3},
  };
  for (const OpCase& c : cases) CheckOp(GetParam(), c);
}

TEST_P(VisionParity, Conv2DTranspose) {
  SKIP_IF_DEVICE_UNAVAILABLE(GetParam());
  auto ct = [](json extra) {
    json l = {{"type", "conv2d_transpose"}, {"filters", 4}, {"kernel_size", 3}};
    if (extra.is_object()) l.update(extra);
    return l;
  };
  const std::vector<OpCase> cases = {
      {"valid 3x3", One(ct({}), {5, 6, 3})},
      {"same s2 relu", One(ct({{"strides", 2}, {"padding", "same"}, {"activation", "relu"}}), {4, 5, 3})},
      {"same k4 s2", One(ct({{"kernel_size", 4}, {"strides", 2}, {"padding", "same"}}), {4, 4, 2})},
      {"same k2 s1 (asymmetric padding)", One(ct({{"kernel_size", 2}, {"padding", "same"}}), {4, 5, 2})},
      {"valid s(3,2) output_padding (2,1) tanh",
       One(ct({{"strides", {3, 2}}, {"output_padding", {2, 1}}, {"activation", "tanh"}}), {3, 4, 2})},
      {"dilation 2 same no bias", One(ct({{"dilation_rate", 2}, {"padding", "same"}, {"use_bias", false}}), {6, 5, 3})},
      {"inference", One(ct({{"strides", 2}}), {4, 4, 3}), 4, false},
  };
  for (const OpCase& c : cases) CheckOp(GetParam(), c);
}

TEST_P(VisionParity, Permute) {
  SKIP_IF_DEVICE_UNAVAILABLE(GetParam());
  const std::vector<OpCase> cases = {
      {"(3, 1, 2)", One({{"type", "permute"}, {"dims", {3, 1, 2}}}, {4, 5, 3})},
      {"(2, 1)", One({{"type", "permute"}, {"dims", {2, 1}}}, {6, 7})},
      {"(2, 3, 1) batch 7", One({{"type", "permute"}, {"dims", {2, 3, 1}}}, {3, 4, 5}), 7},
  };
  for (const OpCase& c : cases) CheckOp(GetParam(), c);
}

TEST_P(VisionParity, Reduce) {
  SKIP_IF_DEVICE_UNAVAILABLE(GetParam());
  const std::vector<OpCase> cases = {
      {"sum over (1, 2)", One({{"type", "reduce"}, {"op", "sum"}, {"axis", {1, 2}}}, {4, 5, 3})},
      {"mean over -1 keepdims", One({{"type", "reduce"}, {"op", "mean"}, {"axis", -1}, {"keepdims", true}}, {4, 5, 6})},
      {"mean over (1, 3) batch 5", One({{"type", "reduce"}, {"op", "mean"}, {"axis", {1, 3}}}, {3, 4, 5}), 5},
  };
  for (const OpCase& c : cases) CheckOp(GetParam(), c);
}

TEST_P(VisionParity, Resizing) {
  SKIP_IF_DEVICE_UNAVAILABLE(GetParam());
  auto rs = [](int h, int w, json extra) {
    json l = {{"type", "resizing"}, {"height", h}, {"width", w}};
    if (extra.is_object()) l.update(extra);
    return l;
  };
  const std::vector<OpCase> cases = {
      {"bilinear down", One(rs(4, 3, {}), {9, 7, 3})},
      {"bilinear up", One(rs(11, 6, {}), {4, 5, 2})},
      {"nearest", One(rs(5, 9, {{"interpolation", "nearest"}}), {7, 4, 3})},
      {"crop to aspect", One(rs(4, 4, {{"crop_to_aspect_ratio", true}}), {6, 10, 2})},
      {"same size", One(rs(5, 6, {}), {5, 6, 2})},
  };
  for (const OpCase& c : cases) CheckOp(GetParam(), c);
}

TEST_P(VisionParity, CenterCrop) {
  SKIP_IF_DEVICE_UNAVAILABLE(GetParam());
  const std::vector<OpCase> cases = {
      {"crop", One({{"type", "center_crop"}, {"height", 3}, {"width", 4}}, {8, 7, 3})},
      {"upsize (smart_resize)", One({{"type", "center_crop"}, {"height", 9}, {"width", 4}}, {5, 6, 2})},
  };
  for (const OpCase& c : cases) CheckOp(GetParam(), c);
}

RT_OP_PARITY_ON_EVERY_DEVICE(VisionParity);

}  // namespace
}  // namespace ringtrain::testing
