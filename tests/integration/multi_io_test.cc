// Several inputs and outputs end to end: deploy/jobs/multi_io.json (the MNIST image and its
// quadrants' ink in; the digit and "5 or more" out, a loss per output with loss_weights) on
// mnist.npz as deploy/make_mnist_npz.py writes it, two workers:
//   - the history has Keras' keys per output, the loss is the sum of the outputs' losses
//     (each logged times its weight, as Keras 3 does), and it falls;
//   - the same bits with the workers in one process and in two;
//   - data that does not name the model's inputs or outputs, and a loss for an output the
//     model does not have, stop the job with one line and exit code 2.
// The npz is made from ../shared/data/mnist (skipped when it is not beside the checkout)
// with /usr/bin/python3's numpy.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "process.h"

namespace ringtrain::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

class MultiIoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string mnist = SourceDir() + "/../shared/data/mnist";
    if (!fs::exists(mnist + "/t10k-images-idx3-ubyte.gz")) GTEST_SKIP() << "no MNIST files in " << mnist;
    if (std::system("/usr/bin/python3 -c 'import numpy' 2>/dev/null") != 0) GTEST_SKIP() << "no numpy";
    for (const char* f : {"t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"}) {
      fs::copy_file(mnist + "/" + f, tmp_.path() + "/" + f);
    }
    const std::string cmd = "/usr/bin/python3 " + SourceDir() + "/deploy/make_mnist_npz.py " + tmp_.path() + " >/dev/null";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  }

  // The shipped job, reading this test's npz, writing here, 2 epochs of 10 steps.
  json Job(const std::string& out) const {
    json job = json::parse(ReadFileOrEmpty(SourceDir() + "/deploy/jobs/multi_io.json"));
    for (const char* split : {"train", "eval"}) job["data"][split]["path"] = tmp_.path() + "/mnist.npz";
    job["epochs"] = 2;
    job["steps_per_epoch"] = 10;
    job["validation_freq"] = 1;
    job["save_model"] = out + "/model.safetensors";
    job["history_file"] = out + "/history.jsonl";
    return job;
  }

  ProcessResult Launch(const json& job, const std::string& processes = "2") const {
    const std::string path = tmp_.path() + "/job.json";
    WriteFile(path, job.dump());
    Process p(RingtrainBinary(), {"launch", "--output", "all", "--workers", "2", "--processes", processes, "--job", path},
              {{"RINGTRAIN_RENDEZVOUS_TIMEOUT_S", "60"}, {"RINGTRAIN_NUM_THREADS", "1"}});
    return p.Wait(180);
  }

  TempDir tmp_;
};

TEST_F(MultiIoTest, TrainsWithALossPerOutputAndTheSameBitsInOneProcessOrTwo) {
  const std::string a = tmp_.path() + "/a", b = tmp_.path() + "/b";
  ProcessResult r = Launch(Job(a), "2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("outputs: digit (class indices), large (class indices)"), std::string::npos) << r.output;
  std::vector<json> h = ReadJsonLines(a + "/history.jsonl");
  ASSERT_EQ(h.size(), 3u) << r.output;  // two epochs, then the final evaluation
  ASSERT_TRUE(h[2].contains("evaluation")) << h[2].dump();
  for (const char* key : {"loss", "digit_loss", "large_loss", "digit_accuracy", "large_accuracy"}) {
    EXPECT_TRUE(h[2]["evaluation"].contains(key)) << key << " in " << h[2].dump();
  }
  h.pop_back();
  for (const char* key : {"loss", "digit_loss", "large_loss", "digit_accuracy", "large_accuracy", "val_loss",
                          "val_digit_loss", "val_large_accuracy"}) {
    ASSERT_TRUE(h[1].contains(key)) << key << " in " << h[1].dump();
  }
  for (const json& e : h) {
    // Keras 3's total: the outputs' losses, each logged times its loss_weight (digit 1, large 0.5).
    EXPECT_NEAR(e["loss"].get<double>(), e["digit_loss"].get<double>() + e["large_loss"].get<double>(), 1e-6);
  }
  EXPECT_LT(h[1]["loss"].get<double>(), h[0]["loss"].get<double>());
  EXPECT_GT(h[1]["digit_accuracy"].get<double>(), 0.5);

  r = Launch(Job(b), "1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(ReadFileOrEmpty(a + "/model.safetensors"), ReadFileOrEmpty(b + "/model.safetensors"));

  // `evaluate` reads one array of examples and one of labels: it sends these to the job.
  const std::string path = tmp_.path() + "/job.json";
  WriteFile(path, Job(a).dump());
  Process evaluate(RingtrainBinary(), {"evaluate", "--job", path, "--model", a + "/model.safetensors"}, {});
  r = evaluate.Wait(60);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("a source with arrays named per model input or output is read through the input pipeline "
                          "only"),
            std::string::npos)
      << r.output;
}

// A shared layer in training: quadrant_features made square (4 -> 4) and called again on its
// own output ({"shares": ...}); two workers, the same bits in one process or two, one set of
// weights in the saved model.
TEST_F(MultiIoTest, ASharedLayerTrainsWithTheSameBitsInOneProcessOrTwo) {
  const std::string a = tmp_.path() + "/a", b = tmp_.path() + "/b";
  json job = Job(a);
  json& layers = job["model"]["layers"];
  layers[3]["units"] = 4;
  layers.insert(layers.begin() + 4, json{{"shares", "quadrant_features"}, {"name", "again"}, {"inputs", {"quadrant_features"}}});
  layers[5]["inputs"] = {"flat", "again"};
  ProcessResult r = Launch(job, "2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<json> h = ReadJsonLines(a + "/history.jsonl");
  ASSERT_GE(h.size(), 2u) << r.output;
  EXPECT_LT(h[1]["loss"].get<double>(), h[0]["loss"].get<double>());
  json other = job;
  other["save_model"] = b + "/model.safetensors";
  other["history_file"] = b + "/history.jsonl";
  r = Launch(other, "1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string saved = ReadFileOrEmpty(a + "/model.safetensors");
  EXPECT_EQ(saved, ReadFileOrEmpty(b + "/model.safetensors"));
  EXPECT_NE(saved.find("quadrant_features/kernel"), std::string::npos);
  EXPECT_EQ(saved.find("again/kernel"), std::string::npos) << "a shared layer's weights are saved once";
}

// The reduce layer (tf.math.reduce_mean over the channels) in training on two workers; a
// .keras save_model, which cannot describe it, is refused when the job starts.
TEST_F(MultiIoTest, AReduceLayerTrainsAndAKerasArchiveOfItIsRefusedAtTheStart) {
  const std::string out = tmp_.path() + "/out";
  json job = Job(out);
  json& layers = job["model"]["layers"];
  layers.insert(layers.begin() + 2, json{{"type", "reduce"}, {"op", "mean"}, {"axis", -1}, {"keepdims", true},
                                         {"name", "channel_mean"}, {"inputs", {"pool"}}});
  ProcessResult r = Launch(job);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::vector<json> h = ReadJsonLines(out + "/history.jsonl");
  ASSERT_GE(h.size(), 2u) << r.output;
  EXPECT_LT(h[1]["loss"].get<double>(), h[0]["loss"].get<double>());
  job["save_model"] = out + "/model.keras";
  r = Launch(job);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("save_model: the model cannot be written as a .keras archive"), std::string::npos) << r.output;
  EXPECT_EQ(Count(r.output, "Epoch 1/"), 0u) << "refused before training";
}

// `data inspect` says what each output's labels are, instead of counting them as one class list.
TEST_F(MultiIoTest, DataInspectDescribesEachOutputsLabels) {
  const std::string path = tmp_.path() + "/job.json";
  WriteFile(path, Job(tmp_.path() + "/out").dump());
  Process p(RingtrainBinary(), {"data", "inspect", path}, {});
  ProcessResult r = p.Wait(60);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("labels:     one array per output: digit (1 per example, 10 classes) large (1 per example, "
                          "2 classes)"),
            std::string::npos)
      << r.output;
}

TEST_F(MultiIoTest, DataAndLossesThatDoNotNameTheModelsInputsAndOutputsAreRefused) {
  const std::string out = tmp_.path() + "/out";
  json job = Job(out);
  job["data"]["train"]["x"].erase("quadrants");
  ProcessResult r = Launch(job);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("data.train gives 1 (\"image\") but the model has 2 inputs (\"image\", \"quadrants\"); name "
                          "one array per input in \"x\""),
            std::string::npos)
      << r.output;

  job = Job(out);
  job["data"]["train"]["y"] = {{"digit", "y_train"}, {"big", "large_train"}};
  r = Launch(job);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("data.train.y names no labels for the model output \"large\" (it names \"big\", \"digit\")"),
            std::string::npos)
      << r.output;

  job = Job(out);
  job["loss"]["larger"] = "mse";
  r = Launch(job);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("loss: names \"larger\", which is not an output of the model (its outputs: \"digit\", "
                          "\"large\")"),
            std::string::npos)
      << r.output;

  job = Job(out);
  job["model"]["layers"].erase(3);  // quadrant_features: nothing reads "quadrants"
  job["model"]["layers"][3]["inputs"] = {"flat", "flat"};
  r = Launch(job);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("model: the input \"quadrants\" is not used by any layer"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace ringtrain::testing
