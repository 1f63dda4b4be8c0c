// The op parity suite for Dropout and the augmentation ops (tests/gpu/op_parity.h):
// RandomFlip, RandomCrop, RandomRotation, RandomTranslation, each case on every device
// against the CPU layer. The draws come from the step context (OpCase::train_step
// varies them), so a device that drew differently fails the forward check outright.
#include <vector>

#include <nlohmann/json.hpp>

#include "gpu/op_parity.h"

namespace ringtrain::testing {
namespace {

using nlohmann::json;

// A model of one layer under test on an input of `shape`.
json One(json layer, json shape) { return {{"input_shape", shape}, {"layers", json::array({layer})}}; }

json Dropout(double rate, json seed = nullptr) { return {{"type", "dropout"}, {"rate", rate}, {"seed", seed}}; }
json Flip(const char* mode) { return {{"type", "random_flip"}, {"mode", mode}}; }
json Crop(int height, int width) { return {{"type", "random_crop"}, {"height", height}, {"width", width}}; }
json Rotation(json factor, const char* fill_mode, const char* interpolation = "bilinear", double fill_value = 0.0) {
  return {{"type", "random_rotation"}, {"factor", factor}, {"fill_mode", fill_mode},
          {"interpolation", interpolation}, {"fill_value", fill_value}};
}
json Translation(json height, json width, const char* fill_mode, const char* interpolation = "bilinear",
                 double fill_value = 0.0) {
  return {{"type", "random_translation"}, {"height_factor", height}, {"width_factor", width},
          {"fill_mode", fill_mode}, {"interpolation", interpolation}, {"fill_value", fill_value}};
}

// OpCase's fields in order: label, model, batch, training, step (input rounding), train_step.
OpCase Case(const char* label, json model, int batch = 4, bool training = true, int64_t train_step = 3) {
  OpCase c;
  c.label = label;
  c.model = std::move(model);
  c.batch = batch;
  c.training = training;
  c.train_step = train_step;
  return c;
}

class RandomParity : public OpParityTest {};

TEST_P(RandomParity, Dropout) {
  SKIP_IF_DEVICE_UNAVAILABLE(GetParam());
  const std::vector<OpCase> cases = {
      Case("rate 0.25", One(Dropout(0.25), {33}), 5),
      Case("rate 0.5", One(Dropout(0.5), {6, 5, 4}), 4),
      Case("rate 0.25 seed 7", One(Dropout(0.25, 7), {33}), 5),
      Case("rate 0.5 seed 7 step 11", One(Dropout(0.5, 7), {6, 5, 4}), 4, true, 11),
      Case("rate 0.5 step 0", One(Dropout(0.5), {6, 5, 4}), 4, true, 0),
      Case("rate 0.5, 1.2M elements", One(Dropout(0.5), {4096}), 300, true, 7),
      Case("rate 0 (identity)", One(Dropout(0.0), {17}), 3),
      Case("inference (identity)", One(Dropout(0.5), {17}), 3, false),
  };
  for (const OpCase& c : cases) CheckOp(GetParam(), c);
}

TEST_P(RandomParity, RandomFlip) {
  SKIP_IF_DEVICE_UNAVAILABLE(GetParam());
  const std::vector<OpCase> cases = {
      Case("horizontal", One(Flip("horizontal"), {5, 7, 3}), 8),
      Case("vertical", One(Flip("vertical"), {5, 7, 3}), 8),
      Case("horizontal_and_vertical", One(Flip("horizontal_and_vertical"), {6, 4, 2}), 8),
      Case("horizontal_and_vertical step 12", One(Flip("horizontal_and_vertical"), {6, 4, 2}), 8, true, 12),
      Case("horizontal_and_vertical c1 step 0", One(Flip("horizontal_and_vertical"), {28, 28, 1}), 16, true, 0),
      Case("inference (identity)", One(Flip("horizontal_and_vertical"), {5, 7, 3}), 4, false),
  };
  for (const OpCase& c : cases) CheckOp(GetParam(), c);
}

TEST_P(RandomParity, RandomCrop) {
  SKIP_IF_DEVICE_UNAVAILABLE(GetParam());
  const std::vector<OpCase> cases = {
      Case("28x28 -> 24x24", One(Crop(24, 24), {28, 28, 1}), 8),
      Case("10x12 -> 7x9 c3", One(Crop(7, 9), {10, 12, 3}), 6),
      Case("10x12 -> 7x9 c3 step 9", One(Crop(7, 9), {10, 12, 3}), 6, true, 9),
      Case("9x5 -> 2x5 (full width)", One(Crop(2, 5), {9, 5, 2}), 5),
      Case("6x10 -> 6x8 inference (centre window)", One(Crop(6, 8), {6, 10, 2}), 3, false),
      Case("10x12 -> 7x9 inference (resize)", One(Crop(7, 9), {10, 12, 3}), 3, false),
      Case("5x6 -> 8x7 training (input smaller: resize)", One(Crop(8, 7), {5, 6, 2}), 3),
      Case("4x9 -> 6x4 training (taller than the input: resize)", One(Crop(6, 4), {4, 9, 3}), 3),
  };
  for (const OpCase& c : cases) CheckOp(GetParam(), c);
}

TEST_P(RandomParity, RandomRotation) {
  SKIP_IF_DEVICE_UNAVAILABLE(GetParam());
  const std::vector<OpCase> cases = {
      Case("0.1 reflect", One(Rotation(0.1, "reflect"), {9, 11, 3}), 6),
      Case("[-0.25, 0.05] wrap step 8", One(Rotation(json::array({-0.25, 0.05}), "wrap"), {9, 11, 3}), 6, true, 8),
      Case("0.5 constant 0.5", One(Rotation(0.5, "constant", "bilinear", 0.5), {8, 8, 2}), 5),
      Case("0.2 nearest", One(Rotation(0.2, "nearest"), {8, 8, 2}), 5),
      Case("1.0 reflect nearest interpolation", One(Rotation(1.0, "reflect", "nearest"), {7, 9, 1}), 5),
      Case("0.3 constant -1 nearest interpolation", One(Rotation(0.3, "constant", "nearest", -1.0), {7, 9, 3}), 5),
      Case("0.15 reflect batch 70 (two launches)", One(Rotation(0.15, "reflect"), {6, 6, 1}), 70, true, 5),
      Case("inference (identity)", One(Rotation(0.3, "reflect"), {7, 9, 3}), 3, false),
  };
  for (const OpCase& c : cases) CheckOp(GetParam(), c);
}

TEST_P(RandomParity, RandomTranslation) {
  SKIP_IF_DEVICE_UNAVAILABLE(GetParam());
  const std::vector<OpCase> cases = {
      Case("0.2 x 0.2 reflect", One(Translation(0.2, 0.2, "reflect"), {9, 11, 3}), 6),
      Case("[-0.3, 0.1] x 0.5 wrap step 2", One(Translation(json::array({-0.3, 0.1}), 0.5, "wrap"), {9, 11, 3}), 6,
           true, 2),
      Case("1.0 x 1.0 constant 0.25", One(Translation(1.0, 1.0, "constant", "bilinear", 0.25), {8, 8, 2}), 5),
      Case("0.4 x [0, 0.3] nearest", One(Translation(0.4, json::array({0.0, 0.3}), "nearest"), {8, 8, 2}), 5),
      Case("0.25 x 0.25 reflect nearest interpolation", One(Translation(0.25, 0.25, "reflect", "nearest"), {7, 9, 1}),
           5),
      Case("0.6 x 0.1 constant 2 nearest interpolation",
           One(Translation(0.6, 0.1, "constant", "nearest", 2.0), {7, 9, 3}), 5),
      Case("inference (identity)", One(Translation(0.2, 0.2, "reflect"), {7, 9, 3}), 3, false),
  };
  for (const OpCase& c : cases) CheckOp(GetParam(), c);
}

RT_OP_PARITY_ON_EVERY_DEVICE(RandomParity);

}  // namespace
}  // namespace ringtrain::testing
