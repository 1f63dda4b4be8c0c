// The evaluator's history: where a restarted evaluator goes on, and crash-safe rewrites.
#include "evaluator/eval_history.h"

#include <gtest/gtest.h>

#include "evaluator/sidecar_evaluator.h"
#include "evaluator/test_job.h"
#include "testing/fault_injection_env.h"
#include "testing/temp_dir.h"

namespace ringtrain::evaluator {
namespace {

using testing::TempDir;

TEST(EvalHistoryTest, MissingFileIsEmptyAndRecordsGiveThePosition) {
  TempDir tmp;
  const std::string path = tmp.path() + "/h.eval.jsonl";
  auto h = EvalHistory::Open(path);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_TRUE(h->records().empty());
  EXPECT_EQ(h->position().epoch, 0);
  EXPECT_EQ(h->position().step, -1);
  ASSERT_TRUE(h->Append({{"epoch", 1}, {"step", 4}, {"final", false}, {"loss", 0.5}}).ok());
  ASSERT_TRUE(h->Append({{"epoch", 2}, {"step", 8}, {"final", false}, {"loss", 0.25}}).ok());
  EXPECT_FALSE(h->Append({{"epoch", 3}}).ok());  // not a record

  // A restarted evaluator reads where it was.
  auto again = EvalHistory::Open(path);
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->records().size(), 2u);
  EXPECT_EQ(again->records()[1]["loss"], 0.25);
  EXPECT_EQ(again->position().epoch, 2);
  EXPECT_EQ(again->position().step, 8);
  EXPECT_FALSE(again->position().final);
  ASSERT_TRUE(again->Append({{"epoch", 3}, {"step", 12}, {"final", true}}).ok());
  EXPECT_TRUE(EvalHistory::Open(path)->position().final);
}

TEST(EvalHistoryTest, AForeignFileIsRefusedWithWhatToDo) {
  TempDir tmp;
  const std::string path = tmp.path() + "/h.eval.jsonl";
  WriteBytes(path, "{\"epoch\": 1, \"step\": 4, \"final\": false}\nnot json\n");
  auto h = EvalHistory::Open(path);
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().subject(), Subject::kStorage);
  EXPECT_NE(h.status().message().find("line 2"), std::string::npos) << h.status().message();
  EXPECT_NE(h.status().message().find("delete the file"), std::string::npos);
}

TEST(EvalHistoryTest, AFailedWriteLeavesTheFileAsItWas) {
  TempDir tmp;
  const std::string path = tmp.path() + "/h.eval.jsonl";
  testing::FaultInjectionEnv env(env::Default());
  auto h = EvalHistory::Open(path, &env);
  ASSERT_TRUE(h.ok());
  ASSERT_TRUE(h->Append({{"epoch", 1}, {"step", 4}, {"final", false}}).ok());
  const std::string before = ReadBytes(path);
  env.FailRenamesMatching();
  Status s = h->Append({{"epoch", 2}, {"step", 8}, {"final", false}});
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.subject(), Subject::kStorage);
  EXPECT_EQ(ReadBytes(path), before);
  EXPECT_EQ(h->records().size(), 1u);
}

TEST(EvalHistoryTest, DefaultPathSitsBesideTheTrainingHistory) {
  TempDir tmp;
  nlohmann::json j = EvalTestJobJson(tmp.path());
  EXPECT_EQ(DefaultHistoryPath(ParseJob(j)), tmp.path() + "/history.eval.jsonl");
  j.erase("history_file");
  EXPECT_EQ(DefaultHistoryPath(ParseJob(j)), "./eval_history.jsonl");
}

}  // namespace
}  // namespace ringtrain::evaluator
