// The observer turns step reports and recovery hooks into the documented metrics, and
// the local status JSON into the shared schema.
#include "metrics/metrics_observer.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "train/trainer.h"

namespace ringtrain::metrics {
namespace {

train::StepReport Report(int64_t global_step) {
  train::StepReport r;
  r.global_step = global_step;
  r.epoch = 1;
  r.epochs = 3;
  r.step = static_cast<int>(global_step);
  r.steps = 10;
  r.examples = 32;
  r.num_workers = 2;
  r.rank = 1;
  r.seconds = 0.25;
  r.compute_seconds = 0.125;
  r.input_wait_seconds = 0.0625;
  r.comm_wait_seconds = 0.0625;
  r.loss = 0.5 / static_cast<double>(global_step);
  r.accuracy = 0.75;
  r.learning_rate = 0.01;
  r.allreduced_bytes = 4000;
  r.unix_time = 1000 + 0.25 * static_cast<double>(global_step);
  return r;
}

TEST(MetricsObserverTest, StepsFeedTheDocumentedMetrics) {
  auto o = MetricsObserver::Create("worker:1", "127.0.0.1:2223").value();
  for (int s = 1; s <= 4; ++s) o->OnStep(Report(s));
  o->OnBackup(4, 0.01);
  o->OnGeneration(2);
  o->OnRecovery("unavailable", "worker:0 was lost");
  const Labels t = {{"task", "worker:1"}};
  const Registry& r = o->registry();
  EXPECT_EQ(r.ValueOf("ringtrain_steps_total", t), 4);
  EXPECT_EQ(r.ValueOf("ringtrain_examples_total", t), 128);
  EXPECT_EQ(r.ValueOf("ringtrain_loss", t), 0.125);
  EXPECT_EQ(r.ValueOf("ringtrain_accuracy", t), 0.75);
  EXPECT_EQ(r.ValueOf("ringtrain_allreduce_bytes_total", t), 16000);
  EXPECT_EQ(r.ValueOf("ringtrain_generation", t), 2);
  EXPECT_EQ(r.ValueOf("ringtrain_backups_total", t), 1);
  EXPECT_EQ(r.ValueOf("ringtrain_last_step_timestamp_seconds", t), 1001);
  EXPECT_EQ(r.ValueOf("ringtrain_straggler_score", t), 1);  // the default until someone knows
  o->SetStragglerScore(1.5);
  EXPECT_EQ(r.ValueOf("ringtrain_straggler_score", t), 1.5);
  EXPECT_EQ(r.ValueOf("ringtrain_recoveries_total", {{"task", "worker:1"}, {"reason", "unavailable"}}), 1);
  EXPECT_EQ(r.ValueOf("ringtrain_recoveries_total", {{"task", "worker:1"}, {"reason", "aborted"}}), 0);

  const std::string text = o->RenderMetrics();
  EXPECT_NE(text.find("ringtrain_step_phase_seconds_count{phase=\"compute\",task=\"worker:1\"} 4\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("ringtrain_step_phase_seconds_sum{phase=\"allreduce_wait\",task=\"worker:1\"} 0.25\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("# TYPE ringtrain_backup_seconds histogram\n"), std::string::npos);
}

TEST(MetricsObserverTest, StatusJsonFollowsTheSharedSchema) {
  auto o = MetricsObserver::Create("worker:0", "127.0.0.1:2222",
                                   {{"worker:0", "127.0.0.1:2222"}, {"worker:1", "127.0.0.1:2223"}})
               .value();
  auto before = nlohmann::json::parse(o->StatusJson());
  EXPECT_TRUE(before["job"]["global_step"].is_null());
  EXPECT_EQ(before["tasks"][0]["state"], "registered");

  o->OnGeneration(0);
  for (int s = 1; s <= 5; ++s) o->OnStep(Report(s));
  auto j = nlohmann::json::parse(o->StatusJson());
  const auto& job = j["job"];
  EXPECT_EQ(job["epoch"], 1);
  EXPECT_EQ(job["epochs"], 3);
  EXPECT_EQ(job["step"], 5);
  EXPECT_EQ(job["steps_per_epoch"], 10);
  EXPECT_EQ(job["global_step"], 5);
  EXPECT_EQ(job["total_steps"], 30);
  // 4 steps of 64 examples (both workers) in 1 s; 25 steps left at 0.25 s each.
  EXPECT_DOUBLE_EQ(job["images_per_sec"].get<double>(), 256);
  EXPECT_DOUBLE_EQ(job["eta_s"].get<double>(), 6.25);
  EXPECT_EQ(job["generation"], 0);
  EXPECT_TRUE(job["last_backup_step"].is_null());
  ASSERT_EQ(j["tasks"].size(), 2u);
  const auto& row = j["tasks"][0];
  EXPECT_EQ(row["task"], "worker:0");
  EXPECT_EQ(row["state"], "running");
  EXPECT_EQ(row["host"], "127.0.0.1:2222");
  EXPECT_EQ(row["step"], 5);
  EXPECT_DOUBLE_EQ(row["compute_s"].get<double>(), 0.125);
  EXPECT_TRUE(row["heartbeat_age_s"].is_null());
  EXPECT_EQ(row["virtual_ranks"], nlohmann::json::array({1}));
  // The other task: known by name and address only.
  const auto& other = j["tasks"][1];
  EXPECT_EQ(other["task"], "worker:1");
  EXPECT_EQ(other["host"], "127.0.0.1:2223");
  EXPECT_TRUE(other["state"].is_null());
  EXPECT_TRUE(other["step"].is_null());
  EXPECT_TRUE(j["events"].is_array());
  EXPECT_TRUE(j["stragglers"].is_array());
}

TEST(MetricsObserverTest, RecoveryReasonIsTheCodeInLowerCase) {
  EXPECT_EQ(RecoveryReason(Status(Code::kDeadlineExceeded, "x")), "deadline_exceeded");
  EXPECT_EQ(RecoveryReason(Status(Code::kUnavailable, "x")), "unavailable");
}

}  // namespace
}  // namespace ringtrain::metrics
