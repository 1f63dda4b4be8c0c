// What `ringtrain launch` prints, end to end through the binary: by default what
// Keras' fit() shows for one process (the chief's model summary, one line per epoch;
// no INFO lines, nothing that reads as an error, no carriage return without a
// terminal), one log file per task holding the INFO lines and the settings once; -v
// adds the INFO lines; --output all shows every task's lines prefixed, as before; and a
// worker killed under recovery in place gives one "lost" and one "recovered" line.
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <regex>
#include <sstream>
#include <thread>

#include "process.h"
#include "test_jobs.h"

namespace ringtrain::testing {
namespace {

const std::map<std::string, std::string> kEnv = FastFailureEnv();

// A glog INFO line ("I1124 12:00:00.000000 ..."), prefixed with a task or not.
const std::regex kInfoLine(R"((^|\] )I\d{4} \d\d:\d\d:\d\d)");

size_t InfoLines(const std::string& output) {
  size_t n = 0;
  for (const auto& line : Lines(output)) n += std::regex_search(line, kInfoLine) ? 1 : 0;
  return n;
}

struct LaunchRun {
  ProcessResult result;
  std::string dir;
};

LaunchRun Launch(const std::string& dir, const std::vector<std::string>& flags) {
  std::filesystem::create_directories(dir);
  WriteFile(dir + "/job.json", SmallSyntheticJob(dir).dump());
  std::vector<std::string> args = {"launch", "--workers", "2", "--job", dir + "/job.json"};
  args.insert(args.end(), flags.begin(), flags.end());
  Process p(RingtrainBinary(), args, kEnv);
  return {p.Wait(120), dir};
}

TEST(ConsoleTest, DefaultOutputIsTheSummaryAndOneLinePerEpoch) {
  TempDir tmp;
  LaunchRun run = Launch(tmp.path() + "/run", {});
  const std::string& out = run.result.output;
  ASSERT_FALSE(run.result.timed_out) << out;
  ASSERT_EQ(run.result.exit_code, 0) << out;
  EXPECT_EQ(Count(out, "Model: \"sequential\""), 1u) << out;
  EXPECT_EQ(Count(out, "Epoch 1/2 - 12/12"), 1u) << out;  // the chief's, not one per worker
  EXPECT_EQ(Count(out, "Epoch 2/2 - 12/12"), 1u) << out;
  EXPECT_EQ(Count(out, "[worker:"), 0u) << out;  // a healthy run: no task has anything to say
  EXPECT_EQ(InfoLines(out), 0u) << out;
  EXPECT_EQ(out.find("refused"), std::string::npos) << out;
  EXPECT_EQ(out.find("error"), std::string::npos) << out;
  EXPECT_EQ(out.find('\r'), std::string::npos) << out;
  // Before the first epoch line: the summary and nothing else.
  const std::string before = out.substr(0, out.find("Epoch 1/2"));
  EXPECT_EQ(before.rfind("Model: \"sequential\"", 0), 0u) << out;
  EXPECT_NE(before.find("Total params"), std::string::npos) << out;
  EXPECT_EQ(before.find("launched"), std::string::npos) << out;

  // The INFO lines are in one file per task, next to the job; the settings once each.
  for (const char* task : {"worker:0", "worker:1"}) {
    const std::string log = ReadFileOrEmpty(run.dir + "/logs/" + task + ".log");
    ASSERT_FALSE(log.empty()) << task << "'s log file is missing or empty; output:\n" << out;
    EXPECT_EQ(Count(log, "RINGTRAIN_PROGRESS="), 1u) << task << ":\n" << log;
    EXPECT_EQ(Count(log, "final weights fingerprint"), 1u) << task << ":\n" << log;
    EXPECT_EQ(log.find("Connection refused"), std::string::npos) << log;
    EXPECT_EQ(log.find("generation after -1"), std::string::npos) << log;
  }
  // Beside them, the cluster for `ringtrain status --tf_config DIR/cluster.json`.
  const auto cluster = nlohmann::json::parse(ReadFileOrEmpty(run.dir + "/logs/cluster.json"), nullptr, false);
  ASSERT_TRUE(cluster.is_object()) << "no logs/cluster.json";
  ASSERT_EQ(cluster["cluster"]["worker"].size(), 2u) << cluster.dump();
  EXPECT_EQ(cluster["cluster"]["worker"][0].get<std::string>().rfind("127.0.0.1:", 0), 0u) << cluster.dump();
}

TEST(ConsoleTest, VerboseAddsEveryTasksInfoLinesAndLogDirMovesTheFiles) {
  TempDir tmp;
  LaunchRun run = Launch(tmp.path() + "/run", {"-v", "--log_dir", tmp.path() + "/elsewhere"});
  const std::string& out = run.result.output;
  ASSERT_EQ(run.result.exit_code, 0) << out;
  EXPECT_GT(InfoLines(out), 0u) << out;
  EXPECT_NE(out.find("[worker:0] I"), std::string::npos) << out;  // prefixed with the task
  EXPECT_NE(out.find("[worker:1] I"), std::string::npos) << out;
  EXPECT_EQ(Count(out, "final weights fingerprint"), 2u) << out;
  EXPECT_EQ(Count(out, "Epoch 2/2 - 12/12"), 1u) << out;
  EXPECT_FALSE(ReadFileOrEmpty(tmp.path() + "/elsewhere/worker:1.log").empty());
  EXPECT_FALSE(std::filesystem::exists(run.dir + "/logs"));
}

TEST(ConsoleTest, OutputAllShowsEveryTasksLinesPrefixed) {
  TempDir tmp;
  LaunchRun run = Launch(tmp.path() + "/run", {"--output", "all"});
  const std::string& out = run.result.output;
  ASSERT_EQ(run.result.exit_code, 0) << out;
  EXPECT_NE(out.find("launched 2 workers"), std::string::npos) << out;
  EXPECT_EQ(Count(out, "[worker:0] Epoch 2/2 - 12/12"), 1u) << out;
  EXPECT_EQ(Count(out, "[worker:1] Epoch 2/2 - 12/12"), 1u) << out;
  EXPECT_EQ(Count(out, "final weights fingerprint"), 2u) << out;
  EXPECT_EQ(out.find('\r'), std::string::npos) << out;
  // Every line whole: each starts with a task's prefix, or is launch's own.
  for (const auto& line : Lines(out)) {
    EXPECT_TRUE(line.rfind("[worker:0] ", 0) == 0 || line.rfind("[worker:1] ", 0) == 0 ||
                line.rfind("launched ", 0) == 0)
        << line;
  }
}

TEST(ConsoleTest, BadOutputFlagIsOneClearLine) {
  TempDir tmp;
  LaunchRun run = Launch(tmp.path() + "/run", {"--output", "everything"});
  EXPECT_EQ(run.result.exit_code, 2) << run.result.output;
  EXPECT_EQ(Lines(run.result.output).size(), 1u) << run.result.output;
  EXPECT_NE(run.result.output.find("--output must be default"), std::string::npos) << run.result.output;
}

TEST(ConsoleTest, AKilledWorkerGivesOneLostAndOneRecoveredLine) {
  TempDir tmp;
  auto job = RecoveryJob(tmp.path(), 10);
  job["epochs"] = 40;  // long enough that the kill lands before the end, even on a fast machine
  WriteFile(tmp.path() + "/job.json", job.dump());
  Process launch(RingtrainBinary(),
                 {"launch", "--workers", "2", "--max_restarts", "1", "--job", tmp.path() + "/job.json"}, kEnv);
  ASSERT_TRUE(launch.WaitForOutput("Epoch 2/40", 60)) << launch.Wait(1).output;
  pid_t victim = FindLaunchedTask(launch.pid(), 1, 10);
  ASSERT_GT(victim, 0);
  ASSERT_EQ(::kill(victim, SIGKILL), 0);
  ProcessResult r = launch.Wait(120);
  ASSERT_FALSE(r.timed_out) << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(Count(r.output, "restarting it (restart 1 of 1)"), 1u) << r.output;
  EXPECT_EQ(Count(r.output, "lost generation 0"), 1u) << r.output;
  // On the console as Python's logging prints a warning; the task's log file keeps the full line.
  EXPECT_EQ(Count(r.output, "[worker:0] WARNING: lost generation 0"), 1u) << r.output;
  const std::string log = ReadFileOrEmpty(tmp.path() + "/logs/worker:0.log");
  EXPECT_TRUE(std::regex_search(log, std::regex("\\nW[0-9]{4} [0-9:.]+ worker:0 [a-z_]+\\.cc:[0-9]+\\] lost generation 0")))
      << log;
  EXPECT_EQ(Count(r.output, "recovered in place in "), 1u) << r.output;
  EXPECT_EQ(Count(r.output, "Epoch 40/40 - 30/30"), 1u) << r.output;
  EXPECT_EQ(r.output.find("is broken"), std::string::npos) << r.output;  // said once, by the lost line
  EXPECT_EQ(InfoLines(r.output), 0u) << r.output;
}

}  // namespace
}  // namespace ringtrain::testing
