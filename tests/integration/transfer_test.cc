// Transfer learning and the path back to Keras, end to end through the binary:
//  - "initial_weights" starts a run from another run's weights by name; a changed head
//    fails with one line (exit 6) unless "skip_mismatch" skips it, a line per tensor;
//  - `ringtrain predict --input` on an .npy and on a folder of PNGs of the same pixels
//    gives the same outputs, written by --output as .npy;
//  - tools/keras_weights.py turns the saved model into Keras' per-layer weights, and
//    TensorFlow.js (Keras' semantics) given those weights and the same model predicts
//    what ringtrain predicts, within 1e-5.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "process.h"
#include "test_jobs.h"
#include "testing/tfjs_oracle.h"

namespace ringtrain::testing {
namespace {

constexpr const char* kPython = "/usr/bin/python3";

ProcessResult Train(const std::string& job_path, const nlohmann::json& job) {
  WriteFile(job_path, job.dump());
  Process p(RingtrainBinary(), {"worker", "--job", job_path},
            {{"TF_CONFIG", LoopbackTfConfig(FreePorts(1), 0)},
             {"RINGTRAIN_RENDEZVOUS_TIMEOUT_S", "60"},
             {"RINGTRAIN_PROGRESS", "lines"},
             {"RINGTRAIN_NUM_THREADS", "1"}});
  return p.Wait(180);
}

ProcessResult Python(const std::string& script, const std::vector<std::string>& args = {}) {
  std::vector<std::string> a = {"-c", script};
  a.insert(a.end(), args.begin(), args.end());
  Process p(kPython, a, {{"PYTHONPATH", SourceDir() + "/tools"}});
  return p.Wait(120);
}

bool HavePythonNumpyPil() { return Python("import numpy, PIL").exit_code == 0; }

class TransferTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(MakeTempDir());
    base_ = new ProcessResult(Train(*dir_ + "/base.json", SmallSyntheticJob(*dir_)));
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    std::filesystem::remove_all(*dir_, ec);
    delete dir_;
    delete base_;
  }
  void SetUp() override { ASSERT_EQ(base_->exit_code, 0) << base_->output; }
  static std::string Dir() { return *dir_; }
  static std::string Model() { return *dir_ + "/model.safetensors"; }

  static std::string* dir_;
  static ProcessResult* base_;
};
std::string* TransferTest::dir_ = nullptr;
ProcessResult* TransferTest::base_ = nullptr;

// A second run from the first one's weights: with a learning rate far below float32's
// resolution of the weights, the model it saves is the one it started from.
TEST_F(TransferTest, InitialWeightsStartTheRunFromThemByName) {
  const std::string out = Dir() + "/from_base";
  std::filesystem::create_directories(out);
  auto job = SmallSyntheticJob(out);
  job["initial_weights"] = Model();
  job["optimizer"] = {{"type", "sgd"}, {"learning_rate", 1e-30}};
  job["epochs"] = 1;
  ProcessResult r = Train(out + "/job.json", job);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("loaded 6 weights by name; 0 keep their initial values"), std::string::npos) << r.output;
  EXPECT_EQ(ReadFileOrEmpty(out + "/model.safetensors"), ReadFileOrEmpty(Model()));
}

TEST_F(TransferTest, ANewHeadIsOneErrorOrWithSkipMismatchALinePerTensor) {
  const std::string out = Dir() + "/new_head";
  std::filesystem::create_directories(out);
  auto job = SmallSyntheticJob(out);
  job["model"]["layers"].back()["units"] = 6;  // dense_1: [16, 6] and [6] instead of [16, 4], [4]
  job["initial_weights"] = Model();
  ProcessResult r = Train(out + "/job.json", job);
  EXPECT_EQ(r.exit_code, 6) << r.output;
  EXPECT_NE(r.output.find("weight 'dense_1/kernel' has shape [16, 6] in the model but [16, 4] in initial_weights"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(std::filesystem::exists(out + "/model.safetensors"));

  job["skip_mismatch"] = true;
  r = Train(out + "/job.json", job);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(Count(r.output, "(skip_mismatch): it keeps its initial value"), 2u) << r.output;
  EXPECT_NE(r.output.find("skipped weight 'dense_1/bias' has shape [6]"), std::string::npos) << r.output;
}

TEST_F(TransferTest, PredictOnAnNpyAndOnAFolderOfTheSameImagesAgree) {
  if (!HavePythonNumpyPil()) GTEST_SKIP() << kPython << " lacks numpy or PIL (Debian: python3-numpy python3-pil)";
  const std::string d = Dir() + "/predict";
  std::filesystem::create_directories(d + "/images/sub");
  // Five 12x12 grayscale images of whole pixel values, as PNGs (one in a sub-folder) and as one .npy.
  ProcessResult py = Python(R"(
import sys, numpy as np
from PIL import Image
d = sys.argv[1]
x = np.random.RandomState(3).randint(0, 256, size=(5, 12, 12)).astype(np.uint8)
names = ["a.png", "b.png", "c.png", "d.png", "sub/e.png"]
for img, n in zip(x, names):
    Image.fromarray(img, mode="L").save(d + "/images/" + n)
np.save(d + "/x.npy", x.astype(np.float32))
)",
                            {d});
  ASSERT_EQ(py.exit_code, 0) << py.output;
  Process npy(RingtrainBinary(), {"predict", "--job", Dir() + "/base.json", "--input", d + "/x.npy", "--output",
                                  d + "/npy_out.npy"});
  ProcessResult a = npy.Wait(60);
  ASSERT_EQ(a.exit_code, 0) << a.output;
  EXPECT_NE(a.output.find("4 class="), std::string::npos) << a.output;
  Process folder(RingtrainBinary(), {"predict", "--job", Dir() + "/base.json", "--input", d + "/images",
                                     "--output", d + "/folder_out.npy", "--json"});
  ProcessResult b = folder.Wait(60);
  ASSERT_EQ(b.exit_code, 0) << b.output;
  EXPECT_NE(b.output.find("\"input\":\"sub/e.png\""), std::string::npos) << b.output;
  const std::string outs = ReadFileOrEmpty(d + "/npy_out.npy");
  ASSERT_FALSE(outs.empty());
  EXPECT_EQ(outs, ReadFileOrEmpty(d + "/folder_out.npy"));
  py = Python("import numpy as np, sys; a = np.load(sys.argv[1]); assert a.shape == (5, 4) and a.dtype == np.float32, "
              "(a.shape, a.dtype)",
              {d + "/npy_out.npy"});
  EXPECT_EQ(py.exit_code, 0) << py.output;

  Process bad(RingtrainBinary(), {"predict", "--job", Dir() + "/base.json", "--input", Model()});
  ProcessResult c = bad.Wait(60);
  EXPECT_EQ(c.exit_code, 3) << c.output;  // not an .npy: a data error, one line
  EXPECT_EQ(Count(c.output, "\n"), 1u) << c.output;
}

// SmallSyntheticJob's model as Keras writes it (tf.keras 2 Sequential JSON).
nlohmann::json KerasModelJson() {
  return nlohmann::json::parse(R"({"class_name": "Sequential", "config": {"name": "sequential", "layers": [
    {"class_name": "Reshape", "config": {"name": "reshape", "target_shape": [12, 12, 1],
                                         "batch_input_shape": [null, 12, 12]}},
    {"class_name": "Conv2D", "config": {"name": "conv2d", "filters": 4, "kernel_size": [3, 3],
                                        "activation": "relu"}},
    {"class_name": "MaxPooling2D", "config": {"name": "max_pooling2d"}},
    {"class_name": "Flatten", "config": {"name": "flatten"}},
    {"class_name": "Dense", "config": {"name": "dense", "units": 16, "activation": "relu"}},
    {"class_name": "Dense", "config": {"name": "dense_1", "units": 4}}]}})");
}

TEST_F(TransferTest, KerasGivenTheToolsWeightsPredictsWhatRingtrainPredicts) {
  RT_REQUIRE_TFJS();
  if (!HavePythonNumpyPil()) GTEST_SKIP() << kPython << " lacks numpy";
  const std::string d = Dir() + "/keras";
  std::filesystem::create_directories(d);
  // The tool's npz, then the flat list model.set_weights() takes, as tfjs' weights by name.
  ProcessResult py = Python(R"(
import json, sys, numpy as np, keras_weights
d, model = sys.argv[1], sys.argv[2]
assert keras_weights.main(["keras_weights.py", "to-npz", model, d + "/w.npz"]) == 0
z = np.load(d + "/w.npz")
tensors = {k: z[k] for k in z.files if k != "__layers__"}
layers = ["reshape", "conv2d", "max_pooling2d", "flatten", "dense", "dense_1"]
flat = keras_weights.weights_for_layers(tensors, layers)
names = ["conv2d/kernel", "conv2d/bias", "dense/kernel", "dense/bias", "dense_1/kernel", "dense_1/bias"]
assert len(flat) == len(names), len(flat)
w = {n: {"shape": list(a.shape), "values": [float(v) for v in a.ravel()]} for n, a in zip(names, flat)}
x = np.random.RandomState(5).rand(6, 12, 12).astype(np.float32)
np.save(d + "/x.npy", x)
json.dump({"weights": w, "x": {"shape": [6, 12, 12], "values": [float(v) for v in x.ravel()]}},
          open(d + "/keras.json", "w"))
)",
                            {d, Model()});
  ASSERT_EQ(py.exit_code, 0) << py.output;
  const nlohmann::json keras = nlohmann::json::parse(ReadFileOrEmpty(d + "/keras.json"));
  auto r = RunTfjs({{"kind", "model"},
                    {"model", KerasModelJson()},
                    {"weights", keras["weights"]},
                    {"inputs", {keras["x"]}},
                    {"training", false}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const std::vector<float> want = TfjsValues((*r)["outputs"][0], {6, 4});

  Process p(RingtrainBinary(), {"predict", "--job", Dir() + "/base.json", "--input", d + "/x.npy", "--output",
                                d + "/out.npy"});
  ProcessResult pr = p.Wait(60);
  ASSERT_EQ(pr.exit_code, 0) << pr.output;
  py = Python("import numpy as np, sys, json; print(json.dumps([float(v) for v in np.load(sys.argv[1]).ravel()]))",
              {d + "/out.npy"});
  ASSERT_EQ(py.exit_code, 0) << py.output;
  const auto got = nlohmann::json::parse(py.output).get<std::vector<float>>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], 1e-5 * std::max(1.0f, std::fabs(want[i]))) << "output " << i;
  }
}

}  // namespace
}  // namespace ringtrain::testing
