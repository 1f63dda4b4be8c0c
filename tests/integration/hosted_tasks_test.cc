// Several training tasks in one process (`worker --host_tasks`, `launch --processes`),
// end to end through the binary: N workers run in P processes save the model bytes of
// N processes, over shared memory and over TCP; a process hosting two tasks that is
// SIGKILLed is restarted and the job still ends with the uninterrupted run's bytes; and
// what cannot be hosted is refused with one line and exit 2.
#include <gtest/gtest.h>

#include <signal.h>

#include <filesystem>
#include <map>
#include <string>
#include <tuple>

#include "process.h"
#include "test_jobs.h"

namespace ringtrain::testing {
namespace {

const std::map<std::string, std::string> kEnv = FastFailureEnv();

struct Trained {
  ProcessResult result;
  std::string model;
};

// ShortBitsJob on 4 workers, in `processes` processes (0: launch's default, one each).
Trained Launch(int processes, bool tcp) {
  TempDir tmp;
  WriteFile(tmp.path() + "/job.json", ShortBitsJob(tmp.path()).dump());
  std::map<std::string, std::string> env = kEnv;
  env["RINGTRAIN_TRANSPORT"] = tcp ? "tcp" : "auto";
  std::vector<std::string> args = {"launch", "--output", "all", "--workers", "4", "--job", tmp.path() + "/job.json"};
  if (processes > 0) {
    args.push_back("--processes");
    args.push_back(std::to_string(processes));
  }
  Process p(RingtrainBinary(), args, env);
  Trained run;
  run.result = p.Wait(240);
  run.model = ReadFileOrEmpty(tmp.path() + "/model.safetensors");
  return run;
}

// The 4-process run's model, once for the whole suite.
const Trained& FourProcesses() {
  static const Trained run = Launch(0, /*tcp=*/false);
  return run;
}

class HostedTasksTest : public ::testing::TestWithParam<std::tuple<int, bool>> {};

TEST_P(HostedTasksTest, FourWorkersInFewerProcessesSaveTheFourProcessModel) {
  const auto [processes, tcp] = GetParam();
  const Trained& want = FourProcesses();
  ASSERT_EQ(want.result.exit_code, 0) << want.result.output;
  ASSERT_FALSE(want.model.empty()) << want.result.output;

  const Trained got = Launch(processes, tcp);
  ASSERT_FALSE(got.result.timed_out) << got.result.output;
  ASSERT_EQ(got.result.exit_code, 0) << got.result.output;
  const std::string announced = "launched 4 workers in " + std::to_string(processes) +
                                (processes == 1 ? " process" : " processes") + " on 127.0.0.1 ports";
  EXPECT_NE(got.result.output.find(announced), std::string::npos) << got.result.output;
  // Every task formed its own endpoint of the 4-rank ring, on the transport asked for.
  EXPECT_EQ(Count(got.result.output, tcp ? "RING over TCP" : "RING over shared memory"), 4u) << got.result.output;
  // Keras' output once per process (--output all shows every process's): from its first
  // task; the other hosted tasks' would repeat it.
  EXPECT_EQ(Count(got.result.output, "Epoch 2/2 - 4/4"), static_cast<size_t>(processes)) << got.result.output;
  EXPECT_TRUE(got.model == want.model) << processes << " processes" << (tcp ? " over TCP" : "")
                                       << ": the model (" << got.model.size()
                                       << " bytes) differs from the 4-process run's (" << want.model.size() << ")";
}

INSTANTIATE_TEST_SUITE_P(Processes, HostedTasksTest,
                         ::testing::Values(std::make_tuple(1, false), std::make_tuple(2, false),
                                           std::make_tuple(3, false), std::make_tuple(2, true)),
                         [](const ::testing::TestParamInfo<std::tuple<int, bool>>& info) {
                           return std::to_string(std::get<0>(info.param)) + "Processes" +
                                  (std::get<1>(info.param) ? "Tcp" : "");
                         });

// Losing a process loses every task it hosts: the launcher restarts it, both tasks
// rejoin, the cluster recovers in place, and the model is the uninterrupted run's.
TEST(HostedTasksRecoveryTest, AKilledProcessHostingTwoTasksIsRestartedAndTheBytesAreKept) {
  TempDir tmp;
  std::string models[2];
  for (int run = 0; run < 2; ++run) {
    const std::string dir = tmp.path() + "/run" + std::to_string(run);
    std::filesystem::create_directories(dir);
    auto job = RecoveryJob(dir, 10);
    job["epochs"] = 4;
    WriteFile(dir + "/job.json", job.dump());
    std::vector<std::string> args = {"launch", "--output", "all", "--workers", "4", "--max_restarts", "1",
                                     "--job", dir + "/job.json"};
    if (run == 1) args.insert(args.end() - 2, {"--processes", "2"});
    Process launch(RingtrainBinary(), args, kEnv);
    if (run == 1) {
      ASSERT_TRUE(launch.WaitForOutput("[worker:0..worker:1] Epoch 2/4", 120)) << launch.Wait(1).output;
      const pid_t victim = FindLaunchedTask(launch.pid(), 2, 10);  // the process hosting tasks 2 and 3
      ASSERT_GT(victim, 0) << "no child of the launcher hosts tasks 2 and 3";
      ASSERT_EQ(::kill(victim, SIGKILL), 0);
    }
    ProcessResult r = launch.Wait(240);
    ASSERT_FALSE(r.timed_out) << r.output;
    ASSERT_EQ(r.exit_code, 0) << r.output;
    if (run == 1) {
      EXPECT_NE(r.output.find("launch: worker:2..worker:3 exited with code 137 (killed by signal 9); restarting it"),
                std::string::npos)
          << r.output;
    }
    models[run] = ReadFileOrEmpty(dir + "/model.safetensors");
  }
  EXPECT_FALSE(models[0].empty());
  EXPECT_TRUE(models[0] == models[1]) << "the run whose process was killed saved other bytes";
}

TEST(HostedTasksRefusalTest, WhatCannotBeHostedIsOneLineAndExit2) {
  TempDir tmp;
  WriteFile(tmp.path() + "/job.json", ShortBitsJob(tmp.path()).dump());
  const std::string job = tmp.path() + "/job.json";
  const std::string tf = LoopbackTfConfig(FreePorts(4), 2);
  struct Case {
    std::vector<std::string> args;
    std::map<std::string, std::string> env;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"worker", "--job", job, "--host_tasks", "3"},
       {{"TF_CONFIG", tf}},
       "--host_tasks 3 from worker:2 (rank 2) goes past the cluster's 4 training tasks; at most 2 from there"},
      {{"worker", "--job", job, "--host_tasks", "2"}, {{"TF_CONFIG", ""}}, "--host_tasks applies to a training task"},
      {{"worker", "--job", job, "--host_tasks", "0"}, {{"TF_CONFIG", tf}}, "--host_tasks"},
      {{"launch", "--workers", "4", "--processes", "5", "--job", job}, {}, "--processes"},
      {{"launch", "--workers", "4", "--processes", "0", "--job", job}, {}, "--processes"},
  };
  for (const Case& c : cases) {
    Process p(RingtrainBinary(), c.args, c.env);
    ProcessResult r = p.Wait(30);
    SCOPED_TRACE(c.args[0] + " " + c.args[c.args.size() - 1]);
    EXPECT_FALSE(r.timed_out) << r.output;
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(c.says), std::string::npos) << r.output;
    EXPECT_EQ(Count(r.output, "error:"), 1u) << r.output;
  }
}

}  // namespace
}  // namespace ringtrain::testing
