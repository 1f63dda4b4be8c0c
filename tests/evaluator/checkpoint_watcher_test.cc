// Which files count as complete checkpoints, in which order, and what is final.
#include "evaluator/checkpoint_watcher.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "evaluator/sidecar_evaluator.h"
#include "evaluator/test_job.h"
#include "testing/temp_dir.h"

namespace ringtrain::evaluator {
namespace {

using testing::TempDir;
namespace fs = std::filesystem;

WatchOptions OptionsFor(const config::JobConfig& job, const nn::Model& model) {
  return WatchOptionsFor(job, model, /*num_workers=*/2);
}

std::optional<Checkpoint> NextOf(CheckpointWatcher& w, Position after) {
  auto next = w.Next(after);
  EXPECT_TRUE(next.ok()) << next.status().ToString();
  return next.ok() ? std::move(next).value() : std::nullopt;
}

void Truncate(const std::string& path, size_t keep) {
  std::string bytes = ReadBytes(path);
  bytes.resize(keep);
  WriteBytes(path, bytes);
}

TEST(CheckpointWatcherTest, NothingToWatchIsABadJob) {
  TempDir tmp;
  config::JobConfig job = ParseJob(EvalTestJobJson(tmp.path()));
  auto model = ModelWith(job, 0.5f);
  auto w = CheckpointWatcher::Create(OptionsFor(job, *model));
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().subject(), Subject::kConfig);
  EXPECT_NE(w.status().message().find("add model_checkpoint"), std::string::npos);
}

TEST(CheckpointWatcherTest, ModelCheckpointsInEpochOrderOnlyWhenWhole) {
  TempDir tmp;
  nlohmann::json j = EvalTestJobJson(tmp.path());
  j["model_checkpoint"] = {{"filepath", tmp.path() + "/ckpt/ckpt_{epoch}.safetensors"}};
  config::JobConfig job = ParseJob(j);
  auto model = ModelWith(job, 0.5f);
  auto w = CheckpointWatcher::Create(OptionsFor(job, *model));
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_FALSE(NextOf(*w, {}));  // nothing written yet

  const std::string ckpt1 = tmp.path() + "/ckpt/ckpt_1.safetensors";
  fs::create_directories(tmp.path() + "/ckpt");
  WriteModelFile(*model, ckpt1, 1, 4);
  // Being written (here: cut short): not complete, found again later.
  const std::string whole = ReadBytes(ckpt1);
  Truncate(ckpt1, whole.size() - 3);
  EXPECT_FALSE(NextOf(*w, {}));
  WriteBytes(ckpt1, whole);
  auto c1 = NextOf(*w, {});
  ASSERT_TRUE(c1);
  EXPECT_EQ(c1->epoch, 1);
  EXPECT_EQ(c1->step, 4);
  EXPECT_FALSE(c1->final);
  EXPECT_EQ(c1->path, ckpt1);
  EXPECT_EQ(c1->source, Source::kModelCheckpoint);
  EXPECT_EQ(c1->weights.size(), model->param_infos().size());
  EXPECT_EQ(c1->weights.begin()->second.data[0], 0.5f);
  // After epoch 1 it is not handed out again.
  EXPECT_FALSE(NextOf(*w, {1, 4, false}));

  // Epochs 2 and 3 both there: 2 first, then 3, which is final.
  WriteModelFile(*model, tmp.path() + "/ckpt/ckpt_2.safetensors", 2, 8);
  WriteModelFile(*model, tmp.path() + "/ckpt/ckpt_3.safetensors", 3, 12);
  auto c2 = NextOf(*w, {1, 4, false});
  ASSERT_TRUE(c2);
  EXPECT_EQ(c2->epoch, 2);
  auto c3 = NextOf(*w, {2, 8, false});
  ASSERT_TRUE(c3);
  EXPECT_EQ(c3->epoch, 3);
  EXPECT_TRUE(c3->final);
  EXPECT_FALSE(NextOf(*w, {3, 12, true}));

  // A broken epoch 2 with a whole epoch 3 after it is skipped (it will not get better).
  Truncate(tmp.path() + "/ckpt/ckpt_2.safetensors", 20);
  auto skip = NextOf(*w, {1, 4, false});
  ASSERT_TRUE(skip);
  EXPECT_EQ(skip->epoch, 3);
}

TEST(CheckpointWatcherTest, OneFileRewrittenEveryEpochIsReadByItsEpoch) {
  TempDir tmp;
  nlohmann::json j = EvalTestJobJson(tmp.path());
  j["model_checkpoint"] = {{"filepath", tmp.path() + "/latest.safetensors"}};
  config::JobConfig job = ParseJob(j);
  auto model = ModelWith(job, 0.25f);
  auto w = CheckpointWatcher::Create(OptionsFor(job, *model));
  ASSERT_TRUE(w.ok());
  WriteModelFile(*model, tmp.path() + "/latest.safetensors", 1, 4);
  auto c = NextOf(*w, {});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->epoch, 1);
  EXPECT_FALSE(NextOf(*w, {1, 4, false}));  // not rewritten yet
  WriteModelFile(*model, tmp.path() + "/latest.safetensors", 2, 8);
  c = NextOf(*w, {1, 4, false});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->epoch, 2);
}

TEST(CheckpointWatcherTest, BackupsCountOnceCommittedInStepOrder) {
  TempDir tmp;
  nlohmann::json j = EvalTestJobJson(tmp.path());
  const std::string dir = tmp.path() + "/backup";
  j["backup_and_restore"] = {{"backup_dir", dir}, {"save_freq", 2}};
  j["save_model"] = tmp.path() + "/model.safetensors";
  config::JobConfig job = ParseJob(j);
  auto model = ModelWith(job, 0.75f);
  auto w = CheckpointWatcher::Create(OptionsFor(job, *model));
  ASSERT_TRUE(w.ok());
  // A saved model from an earlier run (there before the watcher) is not this run's end.
  WriteModelFile(*model, job.save_model, 0, -1);
  auto fresh = CheckpointWatcher::Create(OptionsFor(job, *model));
  ASSERT_TRUE(fresh.ok());
  EXPECT_FALSE(NextOf(*fresh, {}));

  WriteBackupOf(job, *model, dir, 2);
  WriteBackupOf(job, *model, dir, 4);
  // Weights without their commit record (a writer killed in between) do not count.
  fs::copy_file(dir + "/ckpt-000000000004.safetensors", dir + "/ckpt-000000000006.safetensors");
  auto b = NextOf(*w, {});
  ASSERT_TRUE(b);
  EXPECT_EQ(b->source, Source::kBackup);
  EXPECT_EQ(b->step, 2);
  EXPECT_EQ(b->epoch, 0);
  EXPECT_FALSE(b->final);
  ASSERT_EQ(b->weights.size(), model->param_infos().size());
  EXPECT_EQ(b->weights.begin()->second.data.back(), 0.75f);
  b = NextOf(*w, {0, 2, false});
  ASSERT_TRUE(b);
  EXPECT_EQ(b->step, 4);
  EXPECT_EQ(b->epoch, 1);
  EXPECT_FALSE(NextOf(*w, {1, 4, false}));

  // A corrupted backup is skipped once a later one checks out.
  WriteBackupOf(job, *model, dir, 8);
  WriteBackupOf(job, *model, dir, 12);  // the job's last step: final
  std::string bytes = ReadBytes(dir + "/ckpt-000000000012.safetensors");
  fs::remove(dir + "/ckpt-000000000006.safetensors");
  b = NextOf(*w, {1, 4, false});
  ASSERT_TRUE(b);
  EXPECT_EQ(b->step, 8);
  bytes[bytes.size() - 1] ^= 0x5a;  // fails its checksum
  WriteBytes(dir + "/ckpt-000000000012.safetensors", bytes);
  EXPECT_FALSE(NextOf(*w, {2, 8, false}));
  bytes[bytes.size() - 1] ^= 0x5a;
  WriteBytes(dir + "/ckpt-000000000012.safetensors", bytes);
  b = NextOf(*w, {2, 8, false});
  ASSERT_TRUE(b);
  EXPECT_EQ(b->step, 12);
  EXPECT_TRUE(b->final);
}

TEST(CheckpointWatcherTest, SavedModelIsFinalOnceTrainingDeletedItsBackups) {
  TempDir tmp;
  nlohmann::json j = EvalTestJobJson(tmp.path());
  const std::string dir = tmp.path() + "/backup";
  j["backup_and_restore"] = {{"backup_dir", dir}};
  j["save_model"] = tmp.path() + "/model.safetensors";
  config::JobConfig job = ParseJob(j);
  auto model = ModelWith(job, 0.5f);
  auto w = CheckpointWatcher::Create(OptionsFor(job, *model));
  ASSERT_TRUE(w.ok());
  WriteBackupOf(job, *model, dir, 4);
  auto b = NextOf(*w, {});
  ASSERT_TRUE(b);
  EXPECT_EQ(b->step, 4);
  // Training finished: the model saved, the backups deleted before the evaluator saw step 12.
  WriteModelFile(*model, job.save_model, 0, -1);
  ASSERT_TRUE(backup::DeleteBackups(dir).ok());
  auto s = NextOf(*w, {1, 4, false});
  ASSERT_TRUE(s);
  EXPECT_EQ(s->source, Source::kSavedModel);
  EXPECT_TRUE(s->final);
  EXPECT_EQ(s->epoch, 3);
  EXPECT_EQ(s->step, 12);
}

TEST(CheckpointWatcherTest, AModelSavedAfterTheWatcherStartedEndsARunWhoseBackupsWereNeverSeen) {
  TempDir tmp;
  nlohmann::json j = EvalTestJobJson(tmp.path());
  j["backup_and_restore"] = {{"backup_dir", tmp.path() + "/backup"}};
  j["save_model"] = tmp.path() + "/model.safetensors";
  config::JobConfig job = ParseJob(j);
  auto model = ModelWith(job, 0.5f);
  WriteModelFile(*model, job.save_model, 0, -1);  // an earlier run's
  auto w = CheckpointWatcher::Create(OptionsFor(job, *model));
  ASSERT_TRUE(w.ok());
  EXPECT_FALSE(NextOf(*w, {}));
  // A short run trains, backs up, saves and deletes its backups between two polls.
  WriteModelFile(*model, job.save_model, 0, -1);  // renamed onto the old one: a new file
  auto s = NextOf(*w, {});
  ASSERT_TRUE(s);
  EXPECT_EQ(s->source, Source::kSavedModel);
  EXPECT_TRUE(s->final);
  EXPECT_EQ(s->step, 12);  // the job's 3 epochs of 4 steps
}

TEST(CheckpointWatcherTest, AnotherJobsBackupIsRefused) {
  TempDir tmp;
  nlohmann::json j = EvalTestJobJson(tmp.path());
  const std::string dir = tmp.path() + "/backup";
  j["backup_and_restore"] = {{"backup_dir", dir}};
  config::JobConfig job = ParseJob(j);
  auto model = ModelWith(job, 0.5f);
  WriteBackupOf(job, *model, dir, 4, /*num_workers=*/3);  // this cluster has 2
  auto w = CheckpointWatcher::Create(OptionsFor(job, *model));
  ASSERT_TRUE(w.ok());
  auto next = w->Next({});
  ASSERT_FALSE(next.ok());
  EXPECT_EQ(next.status().subject(), Subject::kStorage);
  EXPECT_NE(next.status().message().find("num_workers"), std::string::npos) << next.status().message();
}

}  // namespace
}  // namespace ringtrain::evaluator
