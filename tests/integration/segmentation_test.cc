// Segmentation end to end: an image folder with masks (MNIST digits on a 32x32 canvas, the
// mask 1 under a digit below 5, 2 under one of 5 and above, 0 elsewhere) trains a small
// encoder-decoder (MaxPooling2D, UpSampling2D, Concatenate, a 1x1 Conv2D of 3 classes) on
// two workers with per-pixel sparse cross-entropy, accuracy and MeanIoU:
//   - the loss falls and the history has Keras' keys (mean_io_u), the final evaluation too;
//   - the same bits with the workers in one process and in two;
//   - an image without its mask stops the job with exit code 3, naming the image;
//   - masks for a model whose output is a vector stop it with exit code 2.
// The files are made from ../shared/data/mnist (skipped when it is not beside the checkout)
// with /usr/bin/python3 (numpy, PIL).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "process.h"

namespace ringtrain::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::string MnistDir() { return SourceDir() + "/../shared/data/mnist"; }

// 64 training and 16 evaluation examples as images/NNN.png and masks/NNN.png.
const char kMakeFolders[] = R"(
import gzip, os, sys
import numpy as np
from PIL import Image
m, out = sys.argv[1], sys.argv[2]
x = np.frombuffer(gzip.open(m + "/t10k-images-idx3-ubyte.gz").read(), np.uint8, offset=16).reshape(-1, 28, 28)
y = np.frombuffer(gzip.open(m + "/t10k-labels-idx1-ubyte.gz").read(), np.uint8, offset=8)
for split, first, n in (("train", 0, 64), ("eval", 64, 16)):
    for d in ("images", "masks"):
        os.makedirs(f"{out}/{split}/{d}", exist_ok=True)
    for i in range(first, first + n):
        r, c = (i * 7) % 5, (i * 3) % 5
        img = np.zeros((32, 32), np.uint8)
        img[r:r + 28, c:c + 28] = x[i]
        mask = np.where(img > 127, 1 if y[i] < 5 else 2, 0).astype(np.uint8)
        Image.fromarray(img, "L").save(f"{out}/{split}/images/{i:03d}.png")
        Image.fromarray(mask, "L").save(f"{out}/{split}/masks/{i:03d}.png")
)";

json Source(const std::string& root, const std::string& split) {
  return {{"format", "image_folder"}, {"directory", root + "/" + split + "/images"},
          {"masks", root + "/" + split + "/masks"}, {"num_classes", 3}, {"color_mode", "grayscale"},
          {"image_size", {32, 32}}, {"rescale", 1.0 / 255}};
}

json Layer(const std::string& name, const std::string& type, const json& inputs, json args = json::object()) {
  args["name"] = name;
  args["type"] = type;
  args["inputs"] = inputs;
  return args;
}

json Job(const std::string& dir, const std::string& data) {
  const json conv = {{"kernel_size", 3}, {"padding", "same"}, {"activation", "relu"}};
  json c1 = conv, c2 = conv, c3 = conv;
  c1["filters"] = 8, c2["filters"] = 16, c3["filters"] = 8;
  return {{"model", {{"input_shape", {32, 32, 1}},
                     {"layers", json::array({Layer("c1", "conv2d", {"input"}, c1),
                                             Layer("pool", "max_pooling2d", {"c1"}),
                                             Layer("c2", "conv2d", {"pool"}, c2),
                                             Layer("up", "up_sampling2d", {"c2"}),
                                             Layer("cat", "concatenate", {"up", "c1"}),
                                             Layer("c3", "conv2d", {"cat"}, c3),
                                             Layer("logits", "conv2d", {"c3"}, {{"filters", 3}, {"kernel_size", 1}})})}}},
          {"loss", {{"type", "sparse_categorical_crossentropy"}, {"from_logits", true}}},
          {"metrics", json::array({"accuracy", {{"type", "mean_iou"}, {"num_classes", 3}}})},
          {"optimizer", {{"type", "adam"}, {"learning_rate", 0.01}}},
          {"data", {{"train", Source(data, "train")}, {"eval", Source(data, "eval")}}},
          {"batch_size_per_worker", 8},
          {"epochs", 3},
          {"steps_per_epoch", 4},
          {"seed", 3},
          {"history_file", dir + "/history.jsonl"},
          {"save_model", dir + "/model.safetensors"}};
}

ProcessResult Launch(const std::string& dir, const json& job, int processes) {
  fs::create_directories(dir);
  WriteFile(dir + "/job.json", job.dump());
  Process p(RingtrainBinary(), {"launch", "--output", "all", "--workers", "2", "--processes",
                                std::to_string(processes), "--job", dir + "/job.json"},
            {{"RINGTRAIN_RENDEZVOUS_TIMEOUT_S", "60"}, {"RINGTRAIN_NUM_THREADS", "1"}});
  return p.Wait(300);
}

class SegmentationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(MnistDir() + "/t10k-images-idx3-ubyte.gz")) GTEST_SKIP() << "no MNIST beside the checkout";
    WriteFile(tmp_.path() + "/make.py", kMakeFolders);
    if (std::system(("/usr/bin/python3 " + tmp_.path() + "/make.py " + MnistDir() + " " + tmp_.path() + "/seg").c_str()) !=
        0) {
      GTEST_SKIP() << "/usr/bin/python3 with numpy and PIL is needed to write the folders";
    }
    data_ = tmp_.path() + "/seg";
  }
  TempDir tmp_;
  std::string data_;
};

TEST_F(SegmentationTest, TrainsPerPixelOnTwoWorkersWithTheSameBitsInOneProcessOrTwo) {
  const std::string a = tmp_.path() + "/a", b = tmp_.path() + "/b";
  ProcessResult two = Launch(a, Job(a, data_), 2);
  ASSERT_EQ(two.exit_code, 0) << two.output;
  ProcessResult one = Launch(b, Job(b, data_), 1);
  ASSERT_EQ(one.exit_code, 0) << one.output;
  const std::string model = ReadFileOrEmpty(a + "/model.safetensors");
  ASSERT_FALSE(model.empty());
  EXPECT_TRUE(model == ReadFileOrEmpty(b + "/model.safetensors")) << "processes 2 and 1 trained other bits";
  // The 3 epochs, then the final evaluation of data.eval.
  const std::vector<json> history = ReadJsonLines(a + "/history.jsonl");
  ASSERT_EQ(history.size(), 4u) << two.output;
  for (const char* key : {"loss", "accuracy", "mean_io_u"}) {
    ASSERT_TRUE(history[2].contains(key)) << key << " missing in " << history[2].dump();
    ASSERT_TRUE(history[3]["evaluation"].contains(key)) << key << " missing in " << history[3].dump();
  }
  EXPECT_LT(history[2]["loss"].get<double>(), 0.8 * history[0]["loss"].get<double>());
  // Most pixels are background, so accuracy is high early; MeanIoU counts the digits' classes too.
  EXPECT_GT(history[2]["accuracy"].get<double>(), 0.8);
  EXPECT_GT(history[3]["evaluation"]["mean_io_u"].get<double>(), 0.25);
}

TEST_F(SegmentationTest, AnImageWithoutItsMaskStopsTheJobNamingIt) {
  fs::remove(data_ + "/train/masks/005.png");
  const std::string dir = tmp_.path() + "/run";
  ProcessResult r = Launch(dir, Job(dir, data_), 2);
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("data.train.masks: no mask for image '" + data_ + "/train/images/005.png'"),
            std::string::npos)
      << r.output;
}

TEST_F(SegmentationTest, MasksForAVectorOutputAreRefused) {
  const std::string dir = tmp_.path() + "/run";
  json job = Job(dir, data_);
  job["model"]["layers"].push_back(Layer("gap", "global_average_pooling2d", {"logits"}));
  job["metrics"] = json::array({"accuracy"});
  ProcessResult r = Launch(dir, job, 2);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("data.train gives 1024 labels per example (masks of 32 x 32) but the model's output (None, 3) "
                          "takes one"),
            std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace ringtrain::testing
