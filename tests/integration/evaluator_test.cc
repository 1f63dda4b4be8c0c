// The evaluator task (TF_CONFIG "evaluator") beside two real worker processes: it
// evaluates every epoch's model_checkpoint with the numbers `ringtrain evaluate` gives
// for that file, training saves the same model bytes whether or not it runs, and an
// evaluator killed mid-run and restarted evaluates the rest, none twice.
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>

#include "process.h"
#include "test_jobs.h"

namespace ringtrain::testing {
namespace {

constexpr int kEpochs = 4;

nlohmann::json EvaluatorJob(const std::string& dir) {
  nlohmann::json job = SmallSyntheticJob(dir);
  job["epochs"] = kEpochs;
  job["model_checkpoint"] = {{"filepath", dir + "/ckpt/ckpt_{epoch}.safetensors"}};
  job["tensorboard_dir"] = dir + "/tb";
  return job;
}

// Two workers on loopback, and an evaluator entry when `evaluator_port` > 0.
std::string TfConfig(const std::vector<int>& ports, int evaluator_port, const std::string& type, int index) {
  nlohmann::json cluster = {{"worker", {"127.0.0.1:" + std::to_string(ports[0]), "127.0.0.1:" + std::to_string(ports[1])}}};
  if (evaluator_port > 0) cluster["evaluator"] = {"127.0.0.1:" + std::to_string(evaluator_port)};
  return nlohmann::json{{"cluster", cluster}, {"task", {{"type", type}, {"index", index}}}}.dump();
}

std::map<std::string, std::string> Env(const std::string& tf_config) {
  return {{"TF_CONFIG", tf_config},
          {"RINGTRAIN_RENDEZVOUS_TIMEOUT_S", "60"},
          {"RINGTRAIN_PROGRESS", "lines"},
          {"RINGTRAIN_NUM_THREADS", "1"},
          {"RINGTRAIN_EVALUATOR_TIMEOUT_S", "120"}};
}

// `ringtrain evaluate --json` of one checkpoint file.
nlohmann::json EvaluateFile(const std::string& job, const std::string& model) {
  Process p(RingtrainBinary(), {"evaluate", "--job", job, "--model", model, "--json"},
            {{"RINGTRAIN_LOG_LEVEL", "ERROR"}});
  ProcessResult r = p.Wait(120);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return nlohmann::json::parse(r.output, nullptr, false);
}

TEST(EvaluatorTaskTest, EvaluatesEveryCheckpointOnceAcrossARestartWithoutChangingTraining) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/with";
  std::filesystem::create_directories(dir);
  const std::string job = dir + "/job.json";
  WriteFile(job, EvaluatorJob(dir).dump());
  const std::vector<int> ports = FreePorts(3);

  // The evaluator starts first and waits; then the two workers.
  auto evaluator = std::make_unique<Process>(
      RingtrainBinary(), std::vector<std::string>{"worker", "--job", job}, Env(TfConfig(ports, ports[2], "evaluator", 0)));
  Process w0(RingtrainBinary(), {"worker", "--job", job}, Env(TfConfig(ports, ports[2], "worker", 0)));
  Process w1(RingtrainBinary(), {"worker", "--job", job}, Env(TfConfig(ports, ports[2], "worker", 1)));
  // Killed after its first evaluation (training goes on), then started again.
  ASSERT_TRUE(evaluator->WaitForOutput("Evaluation of epoch 1/4", 120)) << evaluator->Wait(1).output;
  evaluator->Kill(SIGKILL);
  ProcessResult killed = evaluator->Wait(30);
  Process again(RingtrainBinary(), {"worker", "--job", job}, Env(TfConfig(ports, ports[2], "evaluator", 0)));
  ProcessResult r0 = w0.Wait(180), r1 = w1.Wait(180);
  ASSERT_EQ(r0.exit_code, 0) << r0.output;
  ASSERT_EQ(r1.exit_code, 0) << r1.output;
  ProcessResult restarted = again.Wait(180);
  ASSERT_EQ(restarted.exit_code, 0) << restarted.output;

  // Every epoch once, in order, the last one final; the restarted task did not redo any
  // the killed one had recorded.
  auto history = ReadJsonLines(dir + "/history.eval.jsonl");
  ASSERT_EQ(history.size(), static_cast<size_t>(kEpochs)) << killed.output << restarted.output;
  for (int e = 1; e <= kEpochs; ++e) {
    const nlohmann::json& rec = history[e - 1];
    EXPECT_EQ(rec["epoch"], e);
    EXPECT_EQ(rec["step"], e * 12);
    EXPECT_EQ(rec["source"], "model_checkpoint");
    EXPECT_EQ(rec["final"], e == kEpochs);
    const std::string ckpt = dir + "/ckpt/ckpt_" + std::to_string(e) + ".safetensors";
    EXPECT_EQ(rec["checkpoint"], ckpt);
    // The same numbers, to the bit, as `ringtrain evaluate` on that file.
    nlohmann::json ref = EvaluateFile(job, ckpt);
    ASSERT_TRUE(ref.is_object());
    EXPECT_EQ(rec["examples"], ref["examples"]);
    EXPECT_EQ(rec["loss"].get<double>(), ref["loss"].get<double>()) << "epoch " << e;
    EXPECT_EQ(rec["accuracy"].get<double>(), ref["accuracy"].get<double>()) << "epoch " << e;
    const std::string line = "Evaluation of epoch " + std::to_string(e) + "/4";
    // (A task killed between its record and its line prints none for that epoch.)
    EXPECT_LE(Count(killed.output + restarted.output, line), 1u) << line << "\n" << killed.output << restarted.output;
  }
  EXPECT_EQ(Count(restarted.output, "Evaluation of epoch 1/4"), 0u) << restarted.output;
  // TensorBoard scalars under <tensorboard_dir>/eval.
  size_t event_files = 0;
  for (const auto& f : std::filesystem::directory_iterator(dir + "/tb/eval")) {
    event_files += f.path().filename().string().rfind("events.out.tfevents.", 0) == 0 ? 1 : 0;
    EXPECT_NE(ReadFileOrEmpty(f.path().string()).find("accuracy"), std::string::npos);
  }
  EXPECT_EQ(event_files, 2u);  // one per evaluator process

  // Done: a third start has nothing left to do.
  Process third(RingtrainBinary(), {"worker", "--job", job}, Env(TfConfig(ports, ports[2], "evaluator", 0)));
  ProcessResult t = third.Wait(60);
  EXPECT_EQ(t.exit_code, 0) << t.output;
  EXPECT_NE(t.output.find("nothing is left to evaluate"), std::string::npos) << t.output;
  EXPECT_EQ(ReadJsonLines(dir + "/history.eval.jsonl").size(), static_cast<size_t>(kEpochs));

  // The same job with the evaluator in TF_CONFIG but never started: training does not
  // wait for it, and saves the same model bytes.
  const std::string solo = tmp.path() + "/without";
  std::filesystem::create_directories(solo);
  WriteFile(solo + "/job.json", EvaluatorJob(solo).dump());
  const std::vector<int> ports2 = FreePorts(3);
  Process s0(RingtrainBinary(), {"worker", "--job", solo + "/job.json"}, Env(TfConfig(ports2, ports2[2], "worker", 0)));
  Process s1(RingtrainBinary(), {"worker", "--job", solo + "/job.json"}, Env(TfConfig(ports2, ports2[2], "worker", 1)));
  ASSERT_EQ(s0.Wait(180).exit_code, 0);
  ASSERT_EQ(s1.Wait(180).exit_code, 0);
  const std::string with_bytes = ReadFileOrEmpty(dir + "/model.safetensors");
  EXPECT_FALSE(with_bytes.empty());
  EXPECT_EQ(ReadFileOrEmpty(solo + "/model.safetensors"), with_bytes);
}

// Without model_checkpoint it watches the backups; its last record is the final model,
// whether it caught the last backup or training had already deleted it (save_model).
TEST(EvaluatorTaskTest, WatchesBackupsAndEndsWithTheFinalModel) {
  TempDir tmp;
  const std::string& dir = tmp.path();
  nlohmann::json j = SmallSyntheticJob(dir);
  j["backup_and_restore"] = {{"backup_dir", dir + "/backup"}, {"save_freq", 4}};
  const std::string job = dir + "/job.json";
  WriteFile(job, j.dump());
  const std::vector<int> ports = FreePorts(3);
  Process ev(RingtrainBinary(), {"worker", "--job", job}, Env(TfConfig(ports, ports[2], "evaluator", 0)));
  // Watching before training starts: a model saved before the evaluator looked would be
  // an earlier run's.
  ASSERT_TRUE(ev.WaitForOutput("evaluator: watching", 120)) << ev.Wait(1).output;
  Process w0(RingtrainBinary(), {"worker", "--job", job}, Env(TfConfig(ports, ports[2], "worker", 0)));
  Process w1(RingtrainBinary(), {"worker", "--job", job}, Env(TfConfig(ports, ports[2], "worker", 1)));
  ASSERT_EQ(w0.Wait(180).exit_code, 0);
  ASSERT_EQ(w1.Wait(180).exit_code, 0);
  ProcessResult r = ev.Wait(180);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto history = ReadJsonLines(dir + "/history.eval.jsonl");
  ASSERT_FALSE(history.empty()) << r.output;
  int64_t last_step = -1;
  for (const auto& rec : history) {
    EXPECT_GT(rec["step"].get<int64_t>(), last_step);  // in order, none twice
    last_step = rec["step"].get<int64_t>();
    EXPECT_TRUE(rec["source"] == "backup" || rec["source"] == "save_model") << rec;
  }
  EXPECT_EQ(history.back()["final"], true);
  EXPECT_EQ(history.back()["step"], 24);  // 2 epochs of 12 steps
  nlohmann::json ref = EvaluateFile(job, dir + "/model.safetensors");
  ASSERT_TRUE(ref.is_object());
  EXPECT_EQ(history.back()["loss"].get<double>(), ref["loss"].get<double>());
  EXPECT_EQ(history.back()["accuracy"].get<double>(), ref["accuracy"].get<double>());
}

TEST(EvaluatorTaskTest, NothingToWatchIsABadJob) {
  TempDir tmp;
  const std::string job = tmp.path() + "/job.json";
  WriteFile(job, SmallSyntheticJob(tmp.path()).dump());  // no model_checkpoint, no backups
  const std::vector<int> ports = FreePorts(3);
  Process p(RingtrainBinary(), {"worker", "--job", job}, Env(TfConfig(ports, ports[2], "evaluator", 0)));
  ProcessResult r = p.Wait(60);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("the evaluator has nothing to watch"), std::string::npos) << r.output;
}

TEST(EvaluatorTaskTest, GivesUpWithOneLineWhenNoCheckpointComes) {
  TempDir tmp;
  const std::string job = tmp.path() + "/job.json";
  WriteFile(job, EvaluatorJob(tmp.path()).dump());
  const std::vector<int> ports = FreePorts(3);
  Process p(RingtrainBinary(), {"worker", "--job", job, "--eval_timeout_s", "0.5"},
            Env(TfConfig(ports, ports[2], "evaluator", 0)));
  ProcessResult r = p.Wait(60);
  EXPECT_EQ(r.exit_code, 5) << r.output;
  EXPECT_NE(r.output.find("saw no new checkpoint for 0.5 s"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("ckpt_1.safetensors"), std::string::npos) << r.output;

  // The evaluator's flags are refused for a training task.
  Process w(RingtrainBinary(), {"worker", "--job", job, "--eval_timeout_s", "5"}, Env(TfConfig(ports, 0, "worker", 0)));
  ProcessResult wr = w.Wait(60);
  EXPECT_EQ(wr.exit_code, 2) << wr.output;
  EXPECT_NE(wr.output.find("applies only to the evaluator task"), std::string::npos) << wr.output;
}

}  // namespace
}  // namespace ringtrain::testing
