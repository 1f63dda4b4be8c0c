// A job's "loss", "metrics" and a weight regularizer through `ringtrain launch` with two
// real worker processes: binary cross-entropy on one logit with binary_accuracy, AUC and
// an L2 kernel regularizer. The history, the epoch lines and the final evaluation carry
// Keras' keys, and the run is the same bits twice.
#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <set>

#include "process.h"
#include "test_jobs.h"

namespace ringtrain::testing {
namespace {

nlohmann::json BinaryJob(const std::string& dir) {
  auto job = SmallSyntheticJob(dir);
  job["data"]["train"]["classes"] = 2;
  job["data"]["eval"]["classes"] = 2;
  auto& layers = job["model"]["layers"];
  layers[4]["kernel_regularizer"] = {{"class_name", "L2"}, {"config", {{"l2", 0.01}}}};
  layers[5]["units"] = 1;
  layers[5]["bias_regularizer"] = "l1";
  job["loss"] = {{"class_name", "BinaryCrossentropy"}, {"config", {{"from_logits", true}}}};
  job["metrics"] = {{{"type", "binary_accuracy"}, {"threshold", 0}}, "auc"};
  job["validation_freq"] = 1;
  return job;
}

struct LaunchRun {
  std::string output;
  std::vector<nlohmann::json> history;
  std::string model;
};

LaunchRun Launch(const std::string& dir) {
  LaunchRun run;
  WriteFile(dir + "/job.json", BinaryJob(dir).dump());
  Process p(RingtrainBinary(), {"launch", "--output", "all", "--workers", "2", "--job", dir + "/job.json"},
            {{"RINGTRAIN_RENDEZVOUS_TIMEOUT_S", "60"}, {"RINGTRAIN_NUM_THREADS", "1"}});
  ProcessResult r = p.Wait(240);
  EXPECT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  run.output = r.output;
  run.history = ReadJsonLines(dir + "/history.jsonl");
  run.model = ReadFileOrEmpty(dir + "/model.safetensors");
  return run;
}

TEST(LossesMetricsTest, BinaryCrossentropyAucAndL2OnTwoWorkers) {
  TempDir a, b;
  LaunchRun first = Launch(a.path());
  LaunchRun second = Launch(b.path());
  ASSERT_EQ(first.history.size(), 3u) << first.output;  // 2 epochs, then the final evaluation

  for (int e = 0; e < 2; ++e) {
    const auto& h = first.history[static_cast<size_t>(e)];
    for (const char* key : {"loss", "binary_accuracy", "auc", "val_loss", "val_binary_accuracy", "val_auc"}) {
      ASSERT_TRUE(h.contains(key)) << key << " missing in " << h.dump();
      EXPECT_TRUE(std::isfinite(h[key].get<double>())) << key;
    }
    EXPECT_FALSE(h.contains("accuracy")) << "the job did not ask for it: " << h.dump();
    EXPECT_GE(h["auc"].get<double>(), 0.0);
    EXPECT_LE(h["auc"].get<double>(), 1.0);
    EXPECT_GE(h["binary_accuracy"].get<double>(), 0.0);
    EXPECT_LE(h["binary_accuracy"].get<double>(), 1.0);
  }
  const auto& evaluation = first.history[2]["evaluation"];
  ASSERT_TRUE(evaluation.contains("auc")) << evaluation.dump();
  ASSERT_TRUE(evaluation.contains("binary_accuracy")) << evaluation.dump();
  // The last validation and the final evaluation see the same weights and data.
  EXPECT_EQ(evaluation["loss"].get<double>(), first.history[1]["val_loss"].get<double>());
  EXPECT_EQ(evaluation["auc"].get<double>(), first.history[1]["val_auc"].get<double>());

  // Both workers print the metrics by their keys on every epoch line.
  std::regex line(R"(\[(worker:\d)\] Epoch 2/2 .* - loss: [0-9.]+ - binary_accuracy: [0-9.]+ - auc: [0-9.]+ - )"
                  R"(val_loss: [0-9.]+ - val_binary_accuracy: [0-9.]+ - val_auc: [0-9.]+)");
  std::set<std::string> workers;
  for (std::sregex_iterator it(first.output.begin(), first.output.end(), line), end; it != end; ++it) {
    workers.insert((*it)[1]);
  }
  EXPECT_EQ(workers, (std::set<std::string>{"worker:0", "worker:1"})) << first.output;

  // Deterministic: the same model bytes and the same history values twice.
  ASSERT_FALSE(first.model.empty());
  EXPECT_TRUE(first.model == second.model) << "the two runs saved different model bytes";
  ASSERT_EQ(second.history.size(), first.history.size());
  for (size_t e = 0; e < 2; ++e) {
    for (const char* key : {"loss", "binary_accuracy", "auc", "val_loss", "val_auc"}) {
      EXPECT_EQ(first.history[e][key].get<double>(), second.history[e][key].get<double>()) << key << " epoch " << e;
    }
  }
}

// What the model cannot take is refused when the model is built, with the job's exit code.
TEST(LossesMetricsTest, AucOnSeveralOutputsIsAConfigError) {
  TempDir tmp;
  auto job = SmallSyntheticJob(tmp.path());
  job["metrics"] = {"accuracy", "auc"};  // the model has 4 outputs
  WriteFile(tmp.path() + "/job.json", job.dump());
  Process p(RingtrainBinary(), {"launch", "--output", "all", "--workers", "1", "--job", tmp.path() + "/job.json"},
            {{"RINGTRAIN_RENDEZVOUS_TIMEOUT_S", "60"}, {"RINGTRAIN_NUM_THREADS", "1"}});
  ProcessResult r = p.Wait(120);
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("metrics[1]"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace ringtrain::testing
