// The evaluator's row in `ringtrain status`, read from its history file.
#include "evaluator/eval_status.h"

#include <fstream>

#include <gtest/gtest.h>

#include "coordination/status_json.h"
#include "evaluator/eval_history.h"
#include "testing/temp_dir.h"

namespace ringtrain::evaluator {
namespace {

using testing::TempDir;

TEST(EvaluatorStatusRowTest, NoHistoryYetIsNameAndHostOnly) {
  TempDir tmp;
  const coordination::TaskStatus row = EvaluatorStatusRow("evaluator:0", "10.0.0.3:2222", tmp.path() + "/h.jsonl");
  EXPECT_EQ(row.task(), "evaluator:0");
  EXPECT_EQ(row.host(), "10.0.0.3:2222");
  EXPECT_EQ(row.state(), "");
  EXPECT_FALSE(row.has_progress());
  EXPECT_EQ(row.generation(), -1);
  EXPECT_LT(row.heartbeat_age_s(), 0);
  EXPECT_TRUE(row.failure_reason().empty());
}

TEST(EvaluatorStatusRowTest, TheLastRecordIsItsProgressAndTheFinalOneFinishesIt) {
  TempDir tmp;
  const std::string path = tmp.path() + "/h.eval.jsonl";
  auto h = EvalHistory::Open(path);
  ASSERT_TRUE(h.ok());
  ASSERT_TRUE(h->Append({{"epoch", 1}, {"step", 12}, {"final", false}, {"loss", 1.25}, {"accuracy", 0.5},
                         {"unix_time", 1795494978.5}})
                  .ok());
  ASSERT_TRUE(h->Append({{"epoch", 2}, {"step", 24}, {"final", false}, {"loss", 0.75}, {"accuracy", 0.625},
                         {"unix_time", 1795494990.0}})
                  .ok());
  coordination::TaskStatus row = EvaluatorStatusRow("evaluator:0", "127.0.0.1:2224", path);
  EXPECT_EQ(row.state(), "running");
  ASSERT_TRUE(row.has_progress());
  EXPECT_EQ(row.progress().global_step(), 24);
  EXPECT_EQ(row.progress().epoch(), 2);
  EXPECT_EQ(row.progress().loss(), 0.75);
  EXPECT_EQ(row.progress().accuracy(), 0.625);
  EXPECT_EQ(row.progress().unix_time(), 1795494990.0);
  EXPECT_EQ(row.progress().rank(), -1);

  // In the status JSON: its step and numbers, no step times and no virtual rank.
  coordination::GetStatusResponse r;
  *r.add_tasks() = row;
  auto j = nlohmann::json::parse(coordination::StatusToJson(r))["tasks"][0];
  EXPECT_EQ(j["task"], "evaluator:0");
  EXPECT_EQ(j["state"], "running");
  EXPECT_EQ(j["step"], 24);
  EXPECT_EQ(j["loss"], 0.75);
  EXPECT_TRUE(j["compute_s"].is_null());
  EXPECT_TRUE(j["images_per_sec"].is_null());
  EXPECT_TRUE(j["virtual_ranks"].is_null());
  EXPECT_TRUE(j["generation"].is_null());

  ASSERT_TRUE(h->Append({{"epoch", 3}, {"step", 36}, {"final", true}, {"loss", 0.5}, {"accuracy", 0.75}}).ok());
  row = EvaluatorStatusRow("evaluator:0", "127.0.0.1:2224", path);
  EXPECT_EQ(row.state(), "finished");
  EXPECT_EQ(row.progress().global_step(), 36);
}

TEST(EvaluatorStatusRowTest, AHistoryThatDoesNotReadIsNamed) {
  TempDir tmp;
  const std::string path = tmp.path() + "/h.eval.jsonl";
  std::ofstream(path) << "not a record\n";
  const coordination::TaskStatus row = EvaluatorStatusRow("evaluator:0", "127.0.0.1:2224", path);
  EXPECT_EQ(row.state(), "");
  EXPECT_FALSE(row.has_progress());
  EXPECT_NE(row.failure_reason().find(path), std::string::npos) << row.failure_reason();
}

}  // namespace
}  // namespace ringtrain::evaluator
