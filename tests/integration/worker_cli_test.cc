// What a new user runs first: a worker without TF_CONFIG, evaluate without --model, a
// large job file, and the exit code `launch` reports when one task's failure makes the
// others fail too.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "process.h"
#include "test_jobs.h"

namespace ringtrain::testing {
namespace {

std::string FinalFingerprint(const std::string& output) {
  std::smatch m;
  std::regex re("final weights fingerprint: ([0-9a-f]{16})");
  return std::regex_search(output, m, re) ? m[1].str() : "";
}

const std::map<std::string, std::string> kQuick = {{"RINGTRAIN_RENDEZVOUS_TIMEOUT_S", "60"},
                                                   {"RINGTRAIN_NUM_THREADS", "1"}};

std::map<std::string, std::string> Env(std::map<std::string, std::string> extra) {
  extra.insert(kQuick.begin(), kQuick.end());
  return extra;
}

TEST(WorkerCliTest, WithoutTfConfigAWorkerTrainsAloneAsOneWorkerOfACluster) {
  TempDir tmp;
  const std::string& dir = tmp.path();
  auto job = SmallSyntheticJob(dir);
  WriteFile(dir + "/job.json", job.dump());
  Process alone(RingtrainBinary(), {"worker", "--job", dir + "/job.json"}, Env({{"TF_CONFIG", ""}}));
  ProcessResult a = alone.Wait(120);
  ASSERT_EQ(a.exit_code, 0) << a.output;
  EXPECT_NE(a.output.find("TF_CONFIG is not set: training as a single local worker"), std::string::npos) << a.output;
  EXPECT_EQ(a.output.find("error"), std::string::npos) << a.output;
  const std::string model = ReadFileOrEmpty(dir + "/model.safetensors");
  ASSERT_FALSE(model.empty());

  // The same job as the one worker of a TF_CONFIG cluster: the same model, bit for bit.
  job["save_model"] = dir + "/cluster.safetensors";
  job["history_file"] = dir + "/cluster.jsonl";
  WriteFile(dir + "/cluster.json", job.dump());
  Process member(RingtrainBinary(), {"worker", "--job", dir + "/cluster.json"},
                 Env({{"TF_CONFIG", LoopbackTfConfig(FreePorts(1), 0)}}));
  ProcessResult m = member.Wait(120);
  ASSERT_EQ(m.exit_code, 0) << m.output;
  EXPECT_EQ(FinalFingerprint(a.output), FinalFingerprint(m.output));
  EXPECT_EQ(ReadFileOrEmpty(dir + "/cluster.safetensors"), model);
}

TEST(WorkerCliTest, EvaluateFindsTheJobsModelAndResolvesModelLikeTheJobsPaths) {
  TempDir tmp;
  const std::string& dir = tmp.path();
  auto job = SmallSyntheticJob(dir);
  job["save_model"] = "model.safetensors";  // relative: beside the job file
  WriteFile(dir + "/job.json", job.dump());
  Process train(RingtrainBinary(), {"worker", "--job", dir + "/job.json"}, Env({{"TF_CONFIG", ""}}));
  ASSERT_EQ(train.Wait(120).exit_code, 0);
  ASSERT_TRUE(std::filesystem::exists(dir + "/model.safetensors"));

  // No --model: the job's save_model. A relative --model: relative to the job file's
  // directory, wherever the command runs from.
  Process by_job(RingtrainBinary(), {"evaluate", "--job", dir + "/job.json", "--json"});
  ProcessResult e1 = by_job.Wait(60);
  ASSERT_EQ(e1.exit_code, 0) << e1.output;
  Process by_flag(RingtrainBinary(), {"evaluate", "--job", dir + "/job.json", "--model", "model.safetensors", "--json"});
  ProcessResult e2 = by_flag.Wait(60);
  ASSERT_EQ(e2.exit_code, 0) << e2.output;
  auto last_line = [](const std::string& out) { return Lines(out).back(); };
  EXPECT_EQ(last_line(e1.output), last_line(e2.output));
  Process predict(RingtrainBinary(), {"predict", "--job", dir + "/job.json", "--count", "3"});
  ProcessResult p = predict.Wait(60);
  EXPECT_EQ(p.exit_code, 0) << p.output;

  // A job that saves no model needs --model: one line, exit 2.
  job.erase("save_model");
  WriteFile(dir + "/nosave.json", job.dump());
  Process missing(RingtrainBinary(), {"evaluate", "--job", dir + "/nosave.json"});
  ProcessResult r = missing.Wait(60);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(Count(r.output, "error:"), 1u) << r.output;
  EXPECT_NE(r.output.find("pass --model"), std::string::npos) << r.output;
}

TEST(WorkerCliTest, AJobFileOverFourMegabytesTrains) {
  TempDir tmp;
  const std::string& dir = tmp.path();
  auto job = SmallSyntheticJob(dir);
  job["description"] = std::string(5 << 20, 'x');  // gRPC's default message limit is 4 MiB
  WriteFile(dir + "/job.json", job.dump());
  Process p(RingtrainBinary(), {"launch", "--output", "all", "--workers", "2", "--job", dir + "/job.json"}, kQuick);
  ProcessResult r = p.Wait(180);
  ASSERT_FALSE(r.timed_out) << r.output.substr(0, 4000);
  EXPECT_EQ(r.exit_code, 0) << r.output.substr(0, 4000);
}

TEST(WorkerCliTest, LaunchReportsTheChiefsStorageFailureNotThePeersReaction) {
  TempDir tmp;
  const std::string& dir = tmp.path();
  auto job = SmallSyntheticJob(dir);
  // Only the chief writes the history; a regular file where its directory must be makes
  // the first epoch's write fail (exit 6), and worker:1 then loses its peer (exit 5).
  WriteFile(dir + "/not_a_directory", "x");
  job["history_file"] = dir + "/not_a_directory/history.jsonl";
  WriteFile(dir + "/job.json", job.dump());
  Process p(RingtrainBinary(), {"launch", "--output", "all", "--workers", "2", "--job", dir + "/job.json", "--grace_s", "20"},
            Env({{"RINGTRAIN_HEARTBEAT_TIMEOUT_MS", "3000"}}));
  ProcessResult r = p.Wait(180);
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 6) << r.output;
  EXPECT_NE(r.output.find("worker:0 exited with code 6"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("history"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace ringtrain::testing
