// Targets per output value, end to end on two workers: an npz whose y holds several integers
// per example, one per output value, trains with Keras' element-wise losses and metrics:
//   - multi-hot labels with binary cross-entropy, binary accuracy and AUC (Keras reduces
//     the last axis by its mean; AUC counts every value, as multi_label=False does);
//   - integer targets per value with mean squared error;
//   - float targets (y of a float dtype): regression with MSE, soft targets with binary
//     cross-entropy;
//   - targets shaped like neither the output's positions nor its values, multi-hot
//     targets above 1, and float targets for a class loss are refused with one line and
//     exit code 2; a float target that is not finite with exit code 3.
// The data is written with /usr/bin/python3's numpy (skipped without it).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "process.h"

namespace ringtrain::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// x: 512 x 8 uniform; y: `targets` (numpy on x, e.g. the first 4 inputs above 0.5) as `dtype`.
bool WriteData(const std::string& path, const std::string& targets, const std::string& dtype = "np.int64") {
  const std::string cmd = "/usr/bin/python3 -c \"import numpy as np; r = np.random.default_rng(1); "
                          "x = r.random((512, 8)).astype(np.float32); "
                          "np.savez('" + path + "', x=x, y=(" + targets + ").astype(" + dtype + "))\"";
  return std::system(cmd.c_str()) == 0;
}

json Job(const std::string& dir, const json& loss, const json& metrics, const char* activation) {
  return {{"model", {{"input_shape", {8}},
                     {"layers", json::array({json{{"type", "dense"}, {"units", 16}, {"activation", "relu"}},
                                             json{{"type", "dense"}, {"units", 4}, {"activation", activation}}})}}},
          {"loss", loss},
          {"metrics", metrics},
          {"optimizer", {{"type", "adam"}, {"learning_rate", 0.01}}},
          {"data", {{"train", {{"format", "npz"}, {"path", dir + "/data.npz"}, {"x", "x"}, {"y", "y"}}}}},
          {"batch_size_per_worker", 32},
          {"epochs", 4},
          {"seed", 1},
          {"history_file", dir + "/history.jsonl"},
          {"save_model", dir + "/model.safetensors"}};
}

ProcessResult Launch(const std::string& dir, const json& job) {
  WriteFile(dir + "/job.json", job.dump());
  Process p(RingtrainBinary(), {"launch", "--output", "all", "--workers", "2", "--job", dir + "/job.json"},
            {{"RINGTRAIN_RENDEZVOUS_TIMEOUT_S", "60"}, {"RINGTRAIN_NUM_THREADS", "1"}});
  return p.Wait(120);
}

class TargetsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::system("/usr/bin/python3 -c 'import numpy' 2>/dev/null") != 0) GTEST_SKIP() << "no numpy";
  }
  TempDir tmp_;
};

TEST_F(TargetsTest, MultiHotLabelsTrainWithBinaryCrossentropyAccuracyAndAuc) {
  const std::string d = tmp_.path();
  ASSERT_TRUE(WriteData(d + "/data.npz", "x[:, :4] > 0.5"));
  ProcessResult r = Launch(d, Job(d, "binary_crossentropy", json::array({"accuracy", "auc"}), "sigmoid"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("4 targets per example, one per output value (None, 4)"), std::string::npos) << r.output;
  const std::vector<json> h = ReadJsonLines(d + "/history.jsonl");
  ASSERT_EQ(h.size(), 4u) << r.output;
  for (const char* key : {"loss", "accuracy", "auc"}) ASSERT_TRUE(h[3].contains(key)) << h[3].dump();
  EXPECT_LT(h[3]["loss"].get<double>(), h[0]["loss"].get<double>());
  EXPECT_GT(h[3]["accuracy"].get<double>(), 0.75);
  EXPECT_GT(h[3]["auc"].get<double>(), 0.85);
}

TEST_F(TargetsTest, IntegerTargetsPerValueTrainWithMeanSquaredError) {
  const std::string d = tmp_.path();
  ASSERT_TRUE(WriteData(d + "/data.npz", "np.rint(3 * x[:, :4])"));  // 0 .. 3
  ProcessResult r = Launch(d, Job(d, "mse", json::array(), "linear"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::vector<json> h = ReadJsonLines(d + "/history.jsonl");
  ASSERT_EQ(h.size(), 4u) << r.output;
  EXPECT_LT(h[3]["loss"].get<double>(), 0.5 * h[0]["loss"].get<double>());
}

TEST_F(TargetsTest, TargetsOfAnotherShapeOrAboveOneForBinaryCrossentropyAreRefused) {
  const std::string d = tmp_.path();
  ASSERT_TRUE(WriteData(d + "/data.npz", "x[:, :3] > 0.5"));  // 3 targets for 4 outputs
  ProcessResult r = Launch(d, Job(d, "binary_crossentropy", json::array({"accuracy"}), "sigmoid"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("data.train gives 3 label(s) per example but the model's output (None, 4) takes a class index "
                          "per position (1) or a target per value (4)"),
            std::string::npos)
      << r.output;
  ASSERT_TRUE(WriteData(d + "/data.npz", "2 * (x[:, :4] > 0.5)"));
  r = Launch(d, Job(d, "binary_crossentropy", json::array({"accuracy"}), "sigmoid"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("data.train's targets hold values up to 2; binary_crossentropy over every output value "
                          "takes multi-hot targets, 0 and 1"),
            std::string::npos)
      << r.output;
}

// Float targets: y of a float dtype is a target per output value, as Keras' y_true.
TEST_F(TargetsTest, FloatTargetsTrainWithMeanSquaredErrorAndSoftTargetsWithBinaryCrossentropy) {
  const std::string d = tmp_.path();
  ASSERT_TRUE(WriteData(d + "/data.npz", "2.5 * x[:, :4] - 1.0", "np.float32"));
  ProcessResult r = Launch(d, Job(d, "mse", json::array(), "linear"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("4 float targets per example, one per output value (None, 4)"), std::string::npos) << r.output;
  std::vector<json> h = ReadJsonLines(d + "/history.jsonl");
  ASSERT_EQ(h.size(), 4u) << r.output;
  EXPECT_LT(h[3]["loss"].get<double>(), 0.5 * h[0]["loss"].get<double>());

  ASSERT_TRUE(WriteData(d + "/data.npz", "x[:, :4]", "np.float64"));  // soft targets in [0, 1)
  r = Launch(d, Job(d, "binary_crossentropy", json::array({"accuracy"}), "sigmoid"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  h = ReadJsonLines(d + "/history.jsonl");
  ASSERT_EQ(h.size(), 4u) << r.output;
  EXPECT_LT(h[3]["loss"].get<double>(), h[0]["loss"].get<double>());
  EXPECT_TRUE(h[3].contains("accuracy")) << h[3].dump();
}

TEST_F(TargetsTest, FloatTargetsForAClassLossOrOfAnotherShapeOrNotFiniteAreRefused) {
  const std::string d = tmp_.path();
  ASSERT_TRUE(WriteData(d + "/data.npz", "x[:, :4]", "np.float32"));
  ProcessResult r = Launch(d, Job(d, "sparse_categorical_crossentropy", json::array(), "softmax"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("data.train gives a float target per output value (None, 4), which takes an element-wise "
                          "loss"),
            std::string::npos)
      << r.output;
  ASSERT_TRUE(WriteData(d + "/data.npz", "x[:, 0]", "np.float32"));  // one target for 4 outputs
  r = Launch(d, Job(d, "mse", json::array(), "linear"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("data.train's labels are float targets, 1 per example, but the model's output (None, 4) "
                          "holds 4 values; float targets need one per output value"),
            std::string::npos)
      << r.output;
  ASSERT_TRUE(WriteData(d + "/data.npz", "np.where(x[:, :4] > 0.9, np.nan, x[:, :4])", "np.float32"));
  r = Launch(d, Job(d, "mse", json::array(), "linear"));
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("float targets must be finite float32 values"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace ringtrain::testing
