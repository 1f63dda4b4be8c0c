#include "config/job_config.h"

#include <gtest/gtest.h>

namespace ringtrain::config {
namespace {

const char kSeedJob[] = R"({
  "model": {"input_shape": [28, 28], "layers": [
    {"type": "reshape", "target_shape": [28, 28, 1]},
    {"type": "conv2d", "filters": 32, "kernel_size": 3, "activation": "relu"},
    {"type": "flatten"},
    {"type": "dense", "units": 128, "activation": "relu"},
    {"type": "dense", "units": 10}]},
  "loss": {"type": "sparse_categorical_crossentropy", "from_logits": true},
  "optimizer": {"type": "sgd", "learning_rate": 0.001},
  "data": {
    "train": {"format": "mnist_idx", "images": "t10k-images-idx3-ubyte.gz",
              "labels": "t10k-labels-idx1-ubyte.gz", "first": 0, "count": 8000},
    "eval":  {"format": "mnist_idx", "images": "t10k-images-idx3-ubyte.gz",
              "labels": "t10k-labels-idx1-ubyte.gz", "first": 8000, "count": 2000},
    "auto_shard_policy": "AUTO"},
  "batch_size_per_worker": 64, "epochs": 3, "steps_per_epoch": 70, "seed": 1,
  "communication": {"implementation": "AUTO"},
  "save_model": "model.safetensors",
  "history_file": "history.jsonl"
})";

TEST(JobConfigTest, ParsesTheSeedJob) {
  auto job = ParseJobConfig(kSeedJob, "/jobs");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->batch_size_per_worker, 64);
  EXPECT_EQ(job->epochs, 3);
  EXPECT_EQ(job->steps_per_epoch, 70);
  EXPECT_EQ(job->seed, 1u);
  EXPECT_EQ(job->communication.implementation, "AUTO");
  EXPECT_EQ(job->auto_shard_policy, "AUTO");
  EXPECT_EQ(job->save_model, "/jobs/model.safetensors");
  EXPECT_EQ(job->history_file, "/jobs/history.jsonl");
  EXPECT_TRUE(job->eval_data.is_object());
  EXPECT_EQ(job->Resolve("/abs/x"), "/abs/x");
}

TEST(JobConfigTest, CanonicalJsonIgnoresKeyOrderAndWhitespace) {
  auto a = ParseJobConfig(kSeedJob, "/a");
  auto b = ParseJobConfig(nlohmann::json::parse(kSeedJob).dump(2), "/b");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->CanonicalJson(), b->CanonicalJson());
}

void ExpectBad(const std::string& patch_json, const std::string& fragment) {
  nlohmann::json j = nlohmann::json::parse(kSeedJob);
  j.merge_patch(nlohmann::json::parse(patch_json));
  auto job = ParseJobConfig(j.dump(), "/jobs");
  ASSERT_FALSE(job.ok()) << patch_json;
  EXPECT_EQ(job.status().code(), Code::kInvalidArgument);
  EXPECT_NE(job.status().message().find(fragment), std::string::npos) << job.status().message();
}

TEST(JobConfigTest, BadJobs) {
  ExpectBad(R"({"epoch": 3})", "unknown field 'epoch'");
  ExpectBad(R"({"batch_size_per_worker": 0})", "batch_size_per_worker");
  ExpectBad(R"({"batch_size_per_worker": null})", "missing required field 'batch_size_per_worker'");
  ExpectBad(R"({"epochs": "3"})", "'epochs' must be a positive integer");
  ExpectBad(R"({"loss": {"from_logits": false}})", "from_logits must be true");
  ExpectBad(R"({"communication": {"implementaton": "RING"}})", "unknown field 'communication.implementaton'");
  ExpectBad(R"({"data": {"train": null}})", "data.train");
  ExpectBad(R"({"seed": -1})", "seed");
  auto job = ParseJobConfig("{\"model\": ", ".");
  ASSERT_FALSE(job.ok());
  EXPECT_NE(job.status().message().find("not valid JSON"), std::string::npos);
}

StatusOr<JobConfig> Patched(const std::string& patch_json) {
  nlohmann::json j = nlohmann::json::parse(kSeedJob);
  j.merge_patch(nlohmann::json::parse(patch_json));
  return ParseJobConfig(j.dump(), "/jobs");
}

TEST(JobConfigTest, FaultToleranceFields) {
  auto plain = Patched("{}");
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->backup.enabled());
  EXPECT_EQ(plain->recovery, RecoveryMode::kInPlace);

  auto job = Patched(R"({"backup_and_restore": {"backup_dir": "bk", "save_freq": 25, "delete_checkpoint": false},
                         "model_checkpoint": {"filepath": "ckpt/ckpt_{epoch}.safetensors"}, "recovery": "restart"})");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->backup.backup_dir, "/jobs/bk");
  EXPECT_EQ(job->backup.save_freq_steps, 25);
  EXPECT_FALSE(job->backup.delete_checkpoint);
  EXPECT_EQ(job->model_checkpoint, "/jobs/ckpt/ckpt_{epoch}.safetensors");
  EXPECT_EQ(job->recovery, RecoveryMode::kRestart);

  auto epoch = Patched(R"({"backup_and_restore": {"backup_dir": "bk", "save_freq": "epoch"}})");
  ASSERT_TRUE(epoch.ok());
  EXPECT_EQ(epoch->backup.save_freq_steps, 0);
  EXPECT_TRUE(epoch->backup.delete_checkpoint);

  ExpectBad(R"({"backup_and_restore": {"save_freq": 5}})", "backup_and_restore.backup_dir");
  ExpectBad(R"({"backup_and_restore": {"backup_dir": "bk", "save_freq": "batch"}})", "save_freq");
  ExpectBad(R"({"backup_and_restore": {"backup_dir": "bk", "save_freq": 0}})", "save_freq");
  ExpectBad(R"({"backup_and_restore": {"backup_dir": "bk", "keep": 3}})", "unknown field 'backup_and_restore.keep'");
  ExpectBad(R"({"model_checkpoint": {}})", "model_checkpoint.filepath");
  ExpectBad(R"({"recovery": "elastic"})", "'recovery' must be");
}

// Backups are matched by the fields that decide the trajectory, not by epochs or paths.
TEST(JobConfigTest, TrajectoryFingerprint) {
  auto base = Patched("{}");
  ASSERT_TRUE(base.ok());
  const std::string fp = base->TrajectoryFingerprint();
  for (const char* same : {R"({"epochs": 10})", R"({"save_model": "elsewhere.safetensors"})",
                           R"({"communication": {"implementation": "RING"}})", R"({"recovery": "restart"})",
                           R"({"backup_and_restore": {"backup_dir": "x"}})", R"({"data": {"eval": null}})",
                           R"({"loss": null})"}) {
    auto j = Patched(same);
    ASSERT_TRUE(j.ok()) << same << ": " << j.status().ToString();
    EXPECT_EQ(j->TrajectoryFingerprint(), fp) << same;
  }
  for (const char* different : {R"({"optimizer": {"learning_rate": 0.002}})", R"({"seed": 2})",
                                R"({"batch_size_per_worker": 32})", R"({"steps_per_epoch": 71})",
                                R"({"data": {"auto_shard_policy": "DATA"}})"}) {
    auto j = Patched(different);
    ASSERT_TRUE(j.ok()) << different;
    EXPECT_NE(j->TrajectoryFingerprint(), fp) << different;
  }
}

TEST(JobConfigTest, MissingFileIsClear) {
  auto job = LoadJobConfig("/nonexistent/job.json");
  ASSERT_FALSE(job.ok());
  EXPECT_NE(job.status().message().find("/nonexistent/job.json"), std::string::npos);
}

}  // namespace
}  // namespace ringtrain::config
