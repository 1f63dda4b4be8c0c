// Real worker processes on loopback: the launcher, identical weights on every worker,
// determinism across runs, and the seed tutorial's curve on MNIST.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <sstream>

#include "process.h"
#include "test_jobs.h"

namespace ringtrain::testing {
namespace {

// "[worker:1] ... final weights fingerprint: 0123..." -> {"worker:1": "0123..."}
std::map<std::string, std::string> Fingerprints(const std::string& output) {
  std::map<std::string, std::string> out;
  std::regex re(R"(\[(worker:\d+)\].*final weights fingerprint: ([0-9a-f]{16}))");
  for (std::sregex_iterator it(output.begin(), output.end(), re), end; it != end; ++it) {
    out[(*it)[1]] = (*it)[2];
  }
  return out;
}

ProcessResult Launch(const std::string& job_path, int workers, double timeout_s) {
  Process p(RingtrainBinary(), {"launch", "--output", "all", "--workers", std::to_string(workers), "--job", job_path},
            {{"RINGTRAIN_RENDEZVOUS_TIMEOUT_S", "60"}, {"RINGTRAIN_NUM_THREADS", "1"}});
  return p.Wait(timeout_s);
}

TEST(TwoWorkersTest, TrainToIdenticalWeightsAndWriteModelAndHistory) {
  TempDir tmp;
  const std::string& dir = tmp.path();
  WriteFile(dir + "/job.json", SmallSyntheticJob(dir).dump());
  ProcessResult r = Launch(dir + "/job.json", 2, 180);
  ASSERT_FALSE(r.timed_out) << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("[worker:0] Epoch 2/2 - 12/12"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("[worker:1] Epoch 2/2 - 12/12"), std::string::npos) << r.output;
  auto fp = Fingerprints(r.output);
  ASSERT_EQ(fp.size(), 2u) << r.output;
  EXPECT_EQ(fp["worker:0"], fp["worker:1"]);

  auto history = ReadJsonLines(dir + "/history.jsonl");
  ASSERT_EQ(history.size(), 3u);
  EXPECT_EQ(history[0]["epoch"], 1);
  EXPECT_TRUE(history[1].contains("accuracy"));
  EXPECT_TRUE(history[1].contains("images_per_sec"));
  ASSERT_TRUE(history[2].contains("evaluation"));
  EXPECT_GT(history[2]["evaluation"]["accuracy"].get<double>(), 0.25);  // better than chance (4 classes)
  EXPECT_TRUE(std::filesystem::exists(dir + "/model.safetensors"));
  // The non-chief's temporary copy is gone.
  EXPECT_FALSE(std::filesystem::exists(dir + "/.workertemp_1"));

  // Same job, same seed, same worker count: the same model, bit for bit.
  std::string first_model = ReadFileOrEmpty(dir + "/model.safetensors");
  ProcessResult again = Launch(dir + "/job.json", 2, 180);
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(Fingerprints(again.output)["worker:0"], fp["worker:0"]);
  EXPECT_EQ(ReadFileOrEmpty(dir + "/model.safetensors"), first_model);
}

TEST(TwoWorkersTest, ThreeWorkersAgree) {
  TempDir tmp;
  const std::string& dir = tmp.path();
  WriteFile(dir + "/job.json", SmallSyntheticJob(dir).dump());
  ProcessResult r = Launch(dir + "/job.json", 3, 180);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto fp = Fingerprints(r.output);
  ASSERT_EQ(fp.size(), 3u) << r.output;
  EXPECT_EQ(fp["worker:0"], fp["worker:1"]);
  EXPECT_EQ(fp["worker:0"], fp["worker:2"]);
}

// The seed tutorial's job (deploy/jobs/mnist_w1.json, which reads data/mnist in the
// checkout: deploy/get_mnist.sh) reading ../shared/data/mnist instead, with its outputs
// in `dir`, optionally with another seed.
std::string WriteMnistW1Job(const std::string& dir, int seed) {
  auto job = nlohmann::json::parse(ReadFileOrEmpty(SourceDir() + "/deploy/jobs/mnist_w1.json"));
  for (const char* split : {"train", "eval"}) {
    for (const char* f : {"images", "labels"}) {
      const std::string rel = job["data"][split][f];
      job["data"][split][f] = SourceDir() + "/../shared/data/mnist/" + std::filesystem::path(rel).filename().string();
    }
  }
  job["seed"] = seed;
  job["save_model"] = dir + "/model.safetensors";
  job["history_file"] = dir + "/history.jsonl";
  WriteFile(dir + "/job.json", job.dump());
  return dir + "/job.json";
}

bool HaveMnist() {
  return std::filesystem::exists(SourceDir() + "/../shared/data/mnist/t10k-images-idx3-ubyte.gz");
}

// The seed MultiWorkerMirroredStrategy tutorial's job, as written (seed 1), on two
// workers: identical weights everywhere, and the tutorial's falling loss and rising
// accuracy (it reports 2.2766, 2.2172, 2.1471 / 0.17, 0.42, 0.59).
TEST(TwoWorkersTest, SeedTutorialJobOnMnist) {
  if (!HaveMnist()) GTEST_SKIP() << "MNIST not found beside the source tree";
  TempDir tmp;
  const std::string& dir = tmp.path();
  ProcessResult r = Launch(WriteMnistW1Job(dir, 1), 2, 600);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto fp = Fingerprints(r.output);
  ASSERT_EQ(fp.size(), 2u) << r.output;
  EXPECT_EQ(fp["worker:0"], fp["worker:1"]);
  auto history = ReadJsonLines(dir + "/history.jsonl");
  ASSERT_EQ(history.size(), 4u) << r.output;
  for (int e = 1; e < 3; ++e) {
    EXPECT_LT(history[e]["loss"].get<double>(), history[e - 1]["loss"].get<double>());
    EXPECT_GT(history[e]["accuracy"].get<double>(), history[e - 1]["accuracy"].get<double>());
  }
  EXPECT_LE(history[2]["loss"].get<double>(), 2.20);
  EXPECT_GT(history[2]["accuracy"].get<double>(), 0.30);
}

// With SGD at 0.001 for 210 steps the curve depends on the initial draw (for one
// seed the last accuracy lands anywhere in about 0.40..0.60, in PyTorch too), so the
// curve's level is checked on the median over five seeds: last epoch loss <= 2.20
// and accuracy >= 0.45.
TEST(TwoWorkersTest, SeedTutorialCurveMedianOverSeeds) {
  if (!HaveMnist()) GTEST_SKIP() << "MNIST not found beside the source tree";
  std::vector<double> losses, accuracies;
  for (int seed = 1; seed <= 5; ++seed) {
    TempDir tmp;
    const std::string& dir = tmp.path();
    ProcessResult r = Launch(WriteMnistW1Job(dir, seed), 2, 600);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    auto history = ReadJsonLines(dir + "/history.jsonl");
    ASSERT_EQ(history.size(), 4u) << r.output;
    losses.push_back(history[2]["loss"]);
    accuracies.push_back(history[2]["accuracy"]);
  }
  std::sort(losses.begin(), losses.end());
  std::sort(accuracies.begin(), accuracies.end());
  EXPECT_LE(losses[2], 2.20);
  EXPECT_GE(accuracies[2], 0.45);
}

}  // namespace
}  // namespace ringtrain::testing
