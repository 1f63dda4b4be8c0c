// Bad input gets one clear line and a documented exit code, and nothing starts.
#include <gtest/gtest.h>

#include "process.h"
#include "test_jobs.h"

namespace ringtrain::testing {
namespace {

int CountErrorLines(const std::string& output) {
  int n = 0;
  for (size_t pos = 0; (pos = output.find("error:", pos)) != std::string::npos; ++pos) ++n;
  return n;
}

TEST(BadInputTest, MalformedTfConfigExits2WithOneLine) {
  TempDir tmp;
  const std::string& dir = tmp.path();
  WriteFile(dir + "/job.json", SmallSyntheticJob(dir).dump());
  Process p(RingtrainBinary(), {"worker", "--job", dir + "/job.json"}, {{"TF_CONFIG", "{\"cluster\": "}});
  ProcessResult r = p.Wait(30);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("TF_CONFIG: not valid JSON"), std::string::npos) << r.output;
  EXPECT_EQ(CountErrorLines(r.output), 1) << r.output;
}

TEST(BadInputTest, PsJobIsRefused) {
  TempDir tmp;
  const std::string& dir = tmp.path();
  WriteFile(dir + "/job.json", SmallSyntheticJob(dir).dump());
  Process p(RingtrainBinary(), {"worker", "--job", dir + "/job.json", "--tf_config",
                                R"({"cluster": {"worker": ["127.0.0.1:1"], "ps": ["127.0.0.1:2"]},
                                    "task": {"type": "worker", "index": 0}})"});
  ProcessResult r = p.Wait(30);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("parameter-server training is not what this strategy does"), std::string::npos);
}

TEST(BadInputTest, MissingDataFileExits3) {
  TempDir tmp;
  const std::string& dir = tmp.path();
  auto job = SmallSyntheticJob(dir);
  job["model"]["input_shape"] = {28, 28};
  job["model"]["layers"][0]["target_shape"] = {28, 28, 1};
  job["data"]["train"] = {{"format", "mnist_idx"}, {"images", "nope-images.gz"}, {"labels", "nope-labels.gz"}};
  job["data"].erase("eval");
  WriteFile(dir + "/job.json", job.dump());
  auto ports = FreePorts(1);
  Process p(RingtrainBinary(), {"worker", "--job", dir + "/job.json"}, {{"TF_CONFIG", LoopbackTfConfig(ports, 0)}});
  ProcessResult r = p.Wait(30);
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("nope-images.gz"), std::string::npos) << r.output;
}

TEST(BadInputTest, UnknownJobFieldExits2) {
  TempDir tmp;
  const std::string& dir = tmp.path();
  auto job = SmallSyntheticJob(dir);
  job["epoch"] = 3;
  WriteFile(dir + "/job.json", job.dump());
  Process p(RingtrainBinary(), {"worker", "--job", dir + "/job.json"}, {{"TF_CONFIG", LoopbackTfConfig(FreePorts(1), 0)}});
  ProcessResult r = p.Wait(30);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("unknown field 'epoch'"), std::string::npos) << r.output;
}

// "device": "gpu" where no GPU is usable (no driver here, or a build without CUDA) is a
// configuration error that says why and what to do; "auto" trains on the CPU instead.
TEST(BadInputTest, GpuDeviceWithoutAGpuExits2) {
  TempDir tmp;
  const std::string& dir = tmp.path();
  auto job = SmallSyntheticJob(dir);
  job["device"] = "gpu";
  WriteFile(dir + "/job.json", job.dump());
  Process p(RingtrainBinary(), {"worker", "--job", dir + "/job.json"}, {{"TF_CONFIG", LoopbackTfConfig(FreePorts(1), 0)}});
  ProcessResult r = p.Wait(30);
  if (r.output.find("device gpu: GPU") != std::string::npos) GTEST_SKIP() << "this machine has a usable GPU";
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("\"device\": \"gpu\""), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\"auto\" or \"cpu\""), std::string::npos) << r.output;
  EXPECT_EQ(CountErrorLines(r.output), 1) << r.output;
}

// The tutorial's flow: worker 0 first, then worker 1 -- here with a different job,
// which the chief refuses, naming the field; the chief gives up at its deadline.
TEST(BadInputTest, WorkerWithDifferentJobIsRefused) {
  TempDir tmp;
  const std::string& dir = tmp.path();
  auto job = SmallSyntheticJob(dir);
  WriteFile(dir + "/a.json", job.dump());
  job["optimizer"]["learning_rate"] = 0.5;
  WriteFile(dir + "/b.json", job.dump());
  auto ports = FreePorts(2);
  Process chief(RingtrainBinary(), {"worker", "--job", dir + "/a.json"},
                {{"TF_CONFIG", LoopbackTfConfig(ports, 0)}, {"RINGTRAIN_RENDEZVOUS_TIMEOUT_S", "8"}});
  Process other(RingtrainBinary(), {"worker", "--job", dir + "/b.json"},
                {{"TF_CONFIG", LoopbackTfConfig(ports, 1)}, {"RINGTRAIN_RENDEZVOUS_TIMEOUT_S", "30"}});
  ProcessResult refused = other.Wait(60);
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find("/optimizer/learning_rate"), std::string::npos) << refused.output;
  ProcessResult c = chief.Wait(60);
  EXPECT_EQ(c.exit_code, 4) << c.output;
  EXPECT_NE(c.output.find("worker:1"), std::string::npos) << c.output;
}

}  // namespace
}  // namespace ringtrain::testing
