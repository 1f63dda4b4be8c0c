// The same bits on every transport, end to end: the same job launched on 2..5 local
// workers over shared memory (the default on one host) and over TCP
// (RINGTRAIN_TRANSPORT=tcp, 127.0.0.1) saves the same model, byte for byte. The job's
// gradients (about 100k floats) take the all-reduce's large path, where the order of
// additions is the ring's segments (src/collective/sum_order.h).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "process.h"
#include "test_jobs.h"

namespace ringtrain::testing {
namespace {


struct Trained {
  ProcessResult result;
  std::string model;
};

Trained Launch(int workers, bool tcp) {
  TempDir tmp;
  WriteFile(tmp.path() + "/job.json", ShortBitsJob(tmp.path()).dump());
  std::map<std::string, std::string> env = {{"RINGTRAIN_RENDEZVOUS_TIMEOUT_S", "60"}, {"RINGTRAIN_NUM_THREADS", "1"}};
  env["RINGTRAIN_TRANSPORT"] = tcp ? "tcp" : "auto";
  Process p(RingtrainBinary(), {"launch", "--output", "all", "--workers", std::to_string(workers), "--job", tmp.path() + "/job.json"},
            env);
  Trained run;
  run.result = p.Wait(240);
  run.model = ReadFileOrEmpty(tmp.path() + "/model.safetensors");
  return run;
}

class TransportBitsTest : public ::testing::TestWithParam<int> {};

TEST_P(TransportBitsTest, SharedMemoryAndTcpSaveTheSameModelBytes) {
  const int workers = GetParam();
  const Trained shm = Launch(workers, /*tcp=*/false);
  ASSERT_FALSE(shm.result.timed_out) << shm.result.output;
  ASSERT_EQ(shm.result.exit_code, 0) << shm.result.output;
  // Each run used the transport it is meant to test, on every worker.
  EXPECT_EQ(Count(shm.result.output, "RING over shared memory"), static_cast<size_t>(workers)) << shm.result.output;
  const Trained tcp = Launch(workers, /*tcp=*/true);
  ASSERT_FALSE(tcp.result.timed_out) << tcp.result.output;
  ASSERT_EQ(tcp.result.exit_code, 0) << tcp.result.output;
  EXPECT_EQ(Count(tcp.result.output, "RING over TCP"), static_cast<size_t>(workers)) << tcp.result.output;

  ASSERT_FALSE(shm.model.empty()) << shm.result.output;
  ASSERT_FALSE(tcp.model.empty()) << tcp.result.output;
  EXPECT_TRUE(shm.model == tcp.model) << workers << " workers: the model saved over shared memory ("
                                      << shm.model.size() << " bytes) differs from the one saved over TCP ("
                                      << tcp.model.size() << " bytes)";
}

INSTANTIATE_TEST_SUITE_P(Workers, TransportBitsTest, ::testing::Values(2, 3, 4, 5),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::to_string(info.param) + "Workers";
                         });

}  // namespace
}  // namespace ringtrain::testing
