// The op parity suite for the normalization ops (tests/gpu/op_parity.h): BatchNormalization
// (training, frozen, inference, synchronized on one replica) and LayerNormalization on
// every device, against the CPU layer: outputs, input and weight gradients, BatchNorm's
// reduced statistics and the moving statistics updated from them.
#include <vector>

#include <nlohmann/json.hpp>

#include "gpu/op_parity.h"

namespace ringtrain::testing {
namespace {

using nlohmann::json;

// A model of one layer under test on an input of `shape`.
json One(json layer, json shape) { return {{"input_shape", shape}, {"layers", json::array({layer})}}; }

json Bn(json extra = json::object()) {
  json j = {{"type", "batch_normalization"}};
  j.update(extra);
  return j;
}

json Ln(json extra = json::object()) {
  json j = {{"type", "layer_normalization"}};
  j.update(extra);
  return j;
}

class NormParity : public OpParityTest {};

TEST_P(NormParity, BatchNormTraining) {
  SKIP_IF_DEVICE_UNAVAILABLE(GetParam());
  const std::vector<OpCase> cases = {
      {"rank 4", One(Bn(), {6, 5, 4})},
      {"rank 2", One(Bn(), {7}), 9},
      {"rank 3 momentum 0.5 epsilon 0.1", One(Bn({{"momentum", 0.5}, {"epsilon", 0.1}}), {3, 8})},
      {"rank 4 no center", One(Bn({{"center", false}}), {4, 4, 3})},
      {"rank 4 no scale", One(Bn({{"scale", false}}), {4, 4, 3})},
      {"rank 4 no center no scale", One(Bn({{"center", false}, {"scale", false}}), {4, 4, 3})},
      {"rank 2 no center no scale", One(Bn({{"center", false}, {"scale", false}}), {5}), 6},
      {"one channel", One(Bn(), {3, 3, 1}), 2},
      // 5 x 32 x 32 = 5,120 rows per channel: the statistics' many-chunk sums.
      {"rank 4 long columns", One(Bn(), {32, 32, 3}), 5},
      {"batch 1", One(Bn(), {2, 2, 6}), 1},
  };
  for (const OpCase& c : cases) CheckOp(GetParam(), c);
}

TEST_P(NormParity, BatchNormFrozenAndInference) {
  SKIP_IF_DEVICE_UNAVAILABLE(GetParam());
  const std::vector<OpCase> cases = {
      // A frozen layer runs on the moving statistics in a training step too (Keras 2+).
      {"frozen rank 4", One(Bn({{"trainable", false}}), {5, 4, 3})},
      {"frozen rank 2 no center no scale", One(Bn({{"trainable", false}, {"center", false}, {"scale", false}}), {6})},
      // An evaluation Forward of a training layer.
      {"inference forward", One(Bn(), {5, 4, 3}), 4, /*training=*/false},
      {"inference forward no scale", One(Bn({{"scale", false}}), {8}), 3, false},
  };
  for (const OpCase& c : cases) CheckOp(GetParam(), c);
}

TEST_P(NormParity, BatchNormSynchronizedOneReplica) {
  SKIP_IF_DEVICE_UNAVAILABLE(GetParam());
  const std::vector<OpCase> cases = {
      {"synchronized", One(Bn({{"synchronized", true}}), {4, 3, 5})},
      {"SyncBatchNormalization", One({{"type", "SyncBatchNormalization"}, {"momentum", 0.9}}, {6})},
  };
  for (const OpCase& c : cases) CheckOp(GetParam(), c);
}

TEST_P(NormParity, LayerNorm) {
  SKIP_IF_DEVICE_UNAVAILABLE(GetParam());
  const std::vector<OpCase> cases = {
      {"last axis", One(Ln(), {5, 12})},
      {"flat", One(Ln(), {17}), 6},
      {"two axes", One(Ln({{"axis", {-2, -1}}}), {4, 5, 6})},
      {"three axes epsilon 0.1", One(Ln({{"axis", {-3, -2, -1}}, {"epsilon", 0.1}}), {3, 4, 5})},
      {"no center", One(Ln({{"center", false}}), {3, 10})},
      {"no scale", One(Ln({{"scale", false}}), {3, 10})},
      {"no center no scale", One(Ln({{"center", false}, {"scale", false}}), {3, 10})},
      {"rows wider than a block", One(Ln(), {600}), 3},
      {"inference forward", One(Ln({{"axis", {-2, -1}}}), {4, 5, 6}), 4, /*training=*/false},
      {"frozen", One(Ln({{"trainable", false}}), {4, 9})},
  };
  for (const OpCase& c : cases) CheckOp(GetParam(), c);
}

RT_OP_PARITY_ON_EVERY_DEVICE(NormParity);

}  // namespace
}  // namespace ringtrain::testing
