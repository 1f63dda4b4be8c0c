// Every source trains, end to end, on two local workers:
//   - the same MNIST examples in the same order give the same model bytes whatever the
//     source: mnist_idx, an npz and a TFRecord of raw uint8 records;
//   - a run resumed from a backup mid-pass (epoch 1 ends inside the first pass) ends with
//     the uninterrupted run's model bytes, for every source, the PNG class folder too, whose
//     resumed run also decodes with another number of threads;
//   - bad data stops the job with exit code 3 and one line naming the file.
// The files are made from ../shared/data/mnist (skipped when it is not beside the checkout)
// with /usr/bin/python3 and the converters in deploy/.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "process.h"

namespace ringtrain::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr int kExamples = 1000;  // MNIST examples 0..999; each worker's shard is 500 (DATA)

std::string MnistDir() { return SourceDir() + "/../shared/data/mnist"; }

int Shell(const std::string& cmd) { return std::system(cmd.c_str()); }

// 10 steps of 2 x 32 examples per epoch: epoch 1 ends at example 320 of each worker's 500.
json Job(const std::string& dir, const json& train, int epochs, bool backup) {
  json job = {
      {"model", {{"input_shape", {28, 28, 1}},
                 {"layers", json::array({json{{"type", "flatten"}}, json{{"type", "dense"}, {"units", 32}, {"activation", "relu"}},
                                          json{{"type", "dense"}, {"units", 10}}})}}},
      {"optimizer", {{"type", "sgd"}, {"learning_rate", 0.1}}},
      {"data", {{"train", train}, {"auto_shard_policy", "DATA"}}},
      {"batch_size_per_worker", 32},
      {"epochs", epochs},
      {"steps_per_epoch", 10},
      {"seed", 7},
      {"save_model", dir + "/model.safetensors"}};
  if (backup) job["backup_and_restore"] = {{"backup_dir", dir + "/backup"}, {"delete_checkpoint", false}};
  return job;
}

struct Trained {
  ProcessResult result;
  std::string model;
};

Trained Launch(const std::string& dir, const json& job) {
  fs::create_directories(dir);
  WriteFile(dir + "/job.json", job.dump());
  Process p(RingtrainBinary(), {"launch", "--output", "all", "--workers", "2", "--job", dir + "/job.json"},
            {{"RINGTRAIN_RENDEZVOUS_TIMEOUT_S", "60"}, {"RINGTRAIN_NUM_THREADS", "1"}});
  Trained r;
  r.result = p.Wait(240);
  r.model = ReadFileOrEmpty(dir + "/model.safetensors");
  return r;
}

class SourcesTrainTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!fs::exists(MnistDir() + "/t10k-images-idx3-ubyte.gz")) return;
    if (Shell("/usr/bin/python3 -c 'import numpy, PIL' 2>/dev/null") != 0) return;
    data_ = new TempDir();
    const std::string d = data_->path(), m = MnistDir();
    const std::string npz = "/usr/bin/python3 -c \"import gzip,numpy as np;"
                            "x=np.frombuffer(gzip.open('" + m + "/t10k-images-idx3-ubyte.gz').read(),np.uint8,offset=16).reshape(-1,28,28);"
                            "y=np.frombuffer(gzip.open('" + m + "/t10k-labels-idx1-ubyte.gz').read(),np.uint8,offset=8);"
                            "np.savez('" + d + "/mnist.npz',x_train=x[:" + std::to_string(kExamples) +
                            "],y_train=y[:" + std::to_string(kExamples) + "])\"";
    ready_ = Shell(npz) == 0 &&
             Shell("/usr/bin/python3 " + SourceDir() + "/deploy/mnist_to_tfrecord.py " + m + "/t10k-images-idx3-ubyte.gz " +
                   m + "/t10k-labels-idx1-ubyte.gz " + d + "/rec --count " + std::to_string(kExamples) +
                   " --shards 2 >/dev/null") == 0 &&
             Shell("/usr/bin/python3 " + SourceDir() + "/deploy/make_mnist_png_folder.py " + d + "/png " + m +
                   " >/dev/null") == 0;
  }
  static void TearDownTestSuite() {
    delete data_;
    data_ = nullptr;
  }
  void SetUp() override {
    if (!ready_) GTEST_SKIP() << "needs ../shared/data/mnist and /usr/bin/python3 with numpy and PIL";
  }

  static json Idx() {
    return {{"format", "mnist_idx"}, {"images", MnistDir() + "/t10k-images-idx3-ubyte.gz"},
            {"labels", MnistDir() + "/t10k-labels-idx1-ubyte.gz"}, {"count", kExamples}};
  }
  static json Npz() { return {{"format", "npz"}, {"path", data_->path() + "/mnist.npz"}, {"x", "x_train"}, {"y", "y_train"}}; }
  static json TfRecord() {
    return {{"format", "tfrecord"}, {"files", data_->path() + "/rec-*-of-*.tfrecord"},
            {"features", {{"image", {{"key", "image/raw"}, {"encoding", "raw_uint8"}, {"shape", {28, 28, 1}}}},
                          {"label", {{"key", "image/class/label"}, {"num_classes", 10}}}}}};
  }
  static json Png() {
    return {{"format", "image_folder"}, {"directory", data_->path() + "/png/train"}, {"color_mode", "grayscale"},
            {"image_size", {28, 28}}, {"rescale", 1.0 / 255}, {"count", kExamples}};
  }

  // The uninterrupted run, and the run stopped after epoch 1 and resumed from its backup.
  void ExpectResumeGivesTheSameBytes(const std::string& name, const json& source, std::string* model,
                                     const json& pipeline_resumed = nullptr) {
    TempDir tmp;
    const Trained straight = Launch(tmp.path() + "/straight", Job(tmp.path() + "/straight", source, 2, false));
    ASSERT_EQ(straight.result.exit_code, 0) << name << ": " << straight.result.output;
    ASSERT_FALSE(straight.model.empty()) << straight.result.output;
    const Trained first = Launch(tmp.path() + "/split", Job(tmp.path() + "/split", source, 1, true));
    ASSERT_EQ(first.result.exit_code, 0) << name << ": " << first.result.output;
    json resumed_job = Job(tmp.path() + "/split", source, 2, true);
    if (!pipeline_resumed.is_null()) resumed_job["data"]["pipeline"] = pipeline_resumed;
    const Trained second = Launch(tmp.path() + "/split", resumed_job);
    ASSERT_EQ(second.result.exit_code, 0) << name << ": " << second.result.output;
    EXPECT_NE(second.result.output.find("from step 10"), std::string::npos)
        << name << ": the second run did not resume from the backup:\n" << second.result.output;
    EXPECT_TRUE(second.model == straight.model)
        << name << ": the run resumed mid-pass saved other model bytes than the uninterrupted run";
    *model = straight.model;
  }

  static TempDir* data_;
  static bool ready_;
};

TempDir* SourcesTrainTest::data_ = nullptr;
bool SourcesTrainTest::ready_ = false;

TEST_F(SourcesTrainTest, NpzAndTfRecordTrainToTheMnistIdxModelAndResumeExactly) {
  std::string idx, npz, rec;
  ExpectResumeGivesTheSameBytes("mnist_idx", Idx(), &idx);
  ExpectResumeGivesTheSameBytes("npz", Npz(), &npz);
  ExpectResumeGivesTheSameBytes("tfrecord", TfRecord(), &rec);
  EXPECT_TRUE(npz == idx) << "the npz of the same examples trained to other model bytes than mnist_idx";
  EXPECT_TRUE(rec == idx) << "the TFRecord of the same examples trained to other model bytes than mnist_idx";
}

TEST_F(SourcesTrainTest, PngFolderResumesExactlyWithAnotherThreadCount) {
  std::string png;
  // The first runs decode with the default pipeline, the resumed one on three threads
  // with a deeper prefetch and a cache: the batches, and so the bytes, do not depend on it.
  ExpectResumeGivesTheSameBytes("image_folder", Png(), &png,
                                json{{"num_parallel_calls", 3}, {"prefetch", 4}, {"cache", true}});
}

TEST_F(SourcesTrainTest, ACorruptImageStopsTheJobWithExitCode3NamingTheFile) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/png";
  ASSERT_EQ(Shell("cp -r " + data_->path() + "/png/train " + dir), 0);
  // A PNG whose header is fine and whose pixel data is cut off: the first of class 0, among
  // the 64 examples the job reads, so an epoch surely decodes it.
  std::string victim;
  for (const auto& e : fs::directory_iterator(dir + "/0")) {
    if (victim.empty() || e.path().string() < victim) victim = e.path().string();
  }
  ASSERT_FALSE(victim.empty());
  std::string bytes = ReadFileOrEmpty(victim);
  std::ofstream(victim, std::ios::binary | std::ios::trunc) << bytes.substr(0, 60);
  json source = Png();
  source["directory"] = dir;
  source["count"] = 64;
  const Trained r = Launch(tmp.path() + "/run", Job(tmp.path() + "/run", source, 1, false));
  EXPECT_EQ(r.result.exit_code, 3) << r.result.output;
  EXPECT_NE(r.result.output.find(fs::path(victim).filename().string()), std::string::npos) << r.result.output;
  EXPECT_TRUE(r.model.empty());
}

TEST_F(SourcesTrainTest, ATfRecordCrcMismatchStopsTheJobBeforeTrainingNamingFileAndOffset) {
  TempDir tmp;
  ASSERT_EQ(Shell("cp " + data_->path() + "/rec-* " + tmp.path()), 0);
  const std::string file = tmp.path() + "/rec-00001-of-00002.tfrecord";
  std::string bytes = ReadFileOrEmpty(file);
  ASSERT_GT(bytes.size(), 2000u);
  // Record 1's length CRC: found when the file is indexed, before the first step.
  uint64_t len0 = 0;
  for (int i = 7; i >= 0; --i) len0 = len0 << 8 | static_cast<unsigned char>(bytes[i]);
  const size_t record1 = 12 + len0 + 4;
  bytes[record1 + 8] ^= 0x40;
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
  json source = TfRecord();
  source["files"] = tmp.path() + "/rec-*-of-*.tfrecord";
  const Trained r = Launch(tmp.path() + "/run", Job(tmp.path() + "/run", source, 1, false));
  EXPECT_EQ(r.result.exit_code, 3) << r.result.output;
  EXPECT_NE(r.result.output.find("rec-00001-of-00002.tfrecord"), std::string::npos) << r.result.output;
  EXPECT_NE(r.result.output.find("byte " + std::to_string(record1)), std::string::npos) << r.result.output;
  EXPECT_EQ(r.result.output.find("step 1 completed"), std::string::npos) << r.result.output;
}

}  // namespace
}  // namespace ringtrain::testing
