// `ringtrain bench allreduce` end to end: local processes (--workers) and TF_CONFIG
// tasks produce one checked row per size; mismatched or bad flags are refused.
#include <gtest/gtest.h>

#include <sstream>

#include <nlohmann/json.hpp>

#include "process.h"
#include "test_jobs.h"

namespace ringtrain::testing {
namespace {


TEST(BenchAllReduceTest, LocalWorkersPrintOneJsonObjectPerSize) {
  for (const std::string backend : {"tcp", "ring"}) {
    Process p(RingtrainBinary(), {"bench", "allreduce", "--workers", "3", "--backend", backend, "--max_bytes", "4096",
                                  "--iters", "3", "--warmup", "1", "--json"});
    ProcessResult r = p.Wait(120);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    // Only rank 0's rows: the other ranks and every log line stay quiet on success.
    auto lines = Lines(r.output);
    ASSERT_EQ(lines.size(), 6u) << r.output;
    for (size_t i = 0; i < lines.size(); ++i) {
      auto j = nlohmann::json::parse(lines[i], nullptr, false);
      ASSERT_FALSE(j.is_discarded()) << lines[i];
      EXPECT_EQ(j.value("bytes", 0), 4 << (2 * i)) << lines[i];
      EXPECT_EQ(j.value("workers", 0), 3) << lines[i];
      EXPECT_GT(j.value("time_us", 0.0), 0.0) << lines[i];
      EXPECT_NEAR(j.value("busbw_GBps", 0.0), j.value("algbw_GBps", 0.0) * 4.0 / 3.0, 0.002) << lines[i];
      EXPECT_FALSE(j.value("backend", "").empty());
    }
  }
}

TEST(BenchAllReduceTest, TfConfigTasksRendezvousThroughTheChief) {
  auto ports = FreePorts(2);
  std::vector<std::string> args = {"bench", "allreduce", "--backend", "tcp", "--max_bytes", "1024", "--iters", "2"};
  Process chief(RingtrainBinary(), args, {{"TF_CONFIG", LoopbackTfConfig(ports, 0)}});
  Process other(RingtrainBinary(), args, {{"TF_CONFIG", LoopbackTfConfig(ports, 1)}});
  ProcessResult rc = chief.Wait(120), ro = other.Wait(120);
  ASSERT_EQ(rc.exit_code, 0) << rc.output;
  ASSERT_EQ(ro.exit_code, 0) << ro.output;
  EXPECT_NE(rc.output.find("# ringtrain bench allreduce: 2 ranks"), std::string::npos) << rc.output;
  EXPECT_NE(rc.output.find("busbw_GBps"), std::string::npos) << rc.output;
  EXPECT_NE(rc.output.find("\n        1024 "), std::string::npos) << rc.output;
  EXPECT_EQ(ro.output.find("busbw_GBps"), std::string::npos) << ro.output;  // rows from rank 0 only
}

TEST(BenchAllReduceTest, TaskWithDifferentFlagsIsRefused) {
  auto ports = FreePorts(2);
  std::map<std::string, std::string> env0 = {{"TF_CONFIG", LoopbackTfConfig(ports, 0)},
                                             {"RINGTRAIN_RENDEZVOUS_TIMEOUT_S", "20"}};
  std::map<std::string, std::string> env1 = {{"TF_CONFIG", LoopbackTfConfig(ports, 1)},
                                             {"RINGTRAIN_RENDEZVOUS_TIMEOUT_S", "20"}};
  Process chief(RingtrainBinary(), {"bench", "allreduce", "--max_bytes", "64", "--iters", "2"}, env0);
  Process other(RingtrainBinary(), {"bench", "allreduce", "--max_bytes", "64", "--iters", "3"}, env1);
  ProcessResult ro = other.Wait(60);
  EXPECT_EQ(ro.exit_code, 2) << ro.output;
  EXPECT_NE(ro.output.find("/iters"), std::string::npos) << ro.output;
  chief.Kill(SIGKILL);
}

TEST(BenchAllReduceTest, BadFlagsExitTwo) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"bench", "allreduce", "--workers", "2", "--max_bytes", "6"},
           {"bench", "allreduce", "--workers", "2", "--backend", "gloo"},
           {"bench", "allreduce", "--workers", "0"},
           {"bench", "allreduce", "--iterations", "3"},
           {"bench", "reduce"}}) {
    Process p(RingtrainBinary(), args);
    ProcessResult r = p.Wait(30);
    EXPECT_EQ(r.exit_code, 2) << args.back() << ": " << r.output;
    EXPECT_NE(r.output.find("error"), std::string::npos) << r.output;
  }
}

}  // namespace
}  // namespace ringtrain::testing
