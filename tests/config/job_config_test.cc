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
  ExpectBad(R"({"loss": {"type": "hinge"}})", "loss: ");
  ExpectBad(R"({"loss": {"from_logits": 1}})", "'from_logits' must be true or false");
  ExpectBad(R"({"metrics": "accuracy"})", "metrics: must be a list");
  ExpectBad(R"({"metrics": ["accuracy", "f1_score"]})", "metrics[1]");
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

TEST(JobConfigTest, ElasticField) {
  auto plain = Patched("{}");
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->elastic.enabled);
  auto defaults = Patched(R"({"elastic": {}})");
  ASSERT_TRUE(defaults.ok()) << defaults.status().ToString();
  EXPECT_TRUE(defaults->elastic.enabled);
  EXPECT_EQ(defaults->elastic.min_workers, 1);
  EXPECT_EQ(defaults->elastic.wait_s, 0);
  auto job = Patched(R"({"elastic": {"min_workers": 3, "wait_s": 2.5}})");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->elastic.min_workers, 3);
  EXPECT_EQ(job->elastic.wait_s, 2.5);
  ExpectBad(R"({"elastic": 2})", "'elastic' must be an object");
  ExpectBad(R"({"elastic": {"min_workers": 0}})", "elastic.min_workers");
  ExpectBad(R"({"elastic": {"min_workers": "2"}})", "elastic.min_workers");
  ExpectBad(R"({"elastic": {"wait_s": -1}})", "'elastic.wait_s' must be a number of seconds in 0..86400");
  ExpectBad(R"({"elastic": {"wait_s": "soon"}})", "'elastic.wait_s'");
  ExpectBad(R"({"elastic": {"min": 2}})", "unknown field 'elastic.min'");
  ExpectBad(R"({"elastic": {}, "recovery": "restart"})", "'elastic' needs \"recovery\": \"in_place\"");
  // Where the ranks run does not change the trajectory: a backup moves between elastic and not.
  EXPECT_EQ(job->TrajectoryFingerprint(), plain->TrajectoryFingerprint());
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

TEST(JobConfigTest, FitOptionsDefaults) {
  auto job = Patched("{}");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_TRUE(job->lr_schedule.is_null());
  EXPECT_EQ(job->validation_freq, 0);
  EXPECT_TRUE(job->validation_epochs.empty());
  EXPECT_TRUE(job->tensorboard_dir.empty());
  for (int e = 0; e <= 5; ++e) EXPECT_FALSE(job->ValidateAfterEpoch(e)) << e;
}

TEST(JobConfigTest, LrScheduleIsKeptRaw) {
  auto job = Patched(R"({"lr_schedule": {"type": "piecewise_constant", "unit": "epoch", "boundaries": [3, 7],
                                          "values": [1e-3, 1e-4, 1e-5]}})");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  ASSERT_TRUE(job->lr_schedule.is_object());
  EXPECT_EQ(job->lr_schedule["type"], "piecewise_constant");
  EXPECT_EQ(job->lr_schedule["boundaries"], nlohmann::json::parse("[3, 7]"));
  // Its contents are nn's to check (nn::LrSchedule::FromJson); config only wants an object.
  auto unchecked = Patched(R"({"lr_schedule": {"type": "anything"}})");
  ASSERT_TRUE(unchecked.ok());
  auto null = Patched(R"({"lr_schedule": null})");  // merge_patch drops it: absent
  ASSERT_TRUE(null.ok());
  EXPECT_TRUE(null->lr_schedule.is_null());
  nlohmann::json j = nlohmann::json::parse(kSeedJob);
  j["lr_schedule"] = nullptr;  // written out as null
  auto explicit_null = ParseJobConfig(j.dump(), "/jobs");
  ASSERT_TRUE(explicit_null.ok()) << explicit_null.status().ToString();
  EXPECT_TRUE(explicit_null->lr_schedule.is_null());

  ExpectBad(R"({"lr_schedule": "piecewise"})", "'lr_schedule' must be an object");
  ExpectBad(R"({"lr_schedule": [3, 7]})", "'lr_schedule' must be an object");
  ExpectBad(R"({"lr_schedul": {}})", "unknown field 'lr_schedul'");
}

TEST(JobConfigTest, ValidationFreqEveryKEpochs) {
  auto job = Patched(R"({"validation_freq": 2})");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->validation_freq, 2);
  EXPECT_TRUE(job->validation_epochs.empty());
  const bool expected[7] = {false, false, true, false, true, false, true};  // epochs 0 (none) .. 6
  for (int e = 0; e <= 6; ++e) EXPECT_EQ(job->ValidateAfterEpoch(e), expected[e]) << e;

  auto every = Patched(R"({"validation_freq": 1})");
  ASSERT_TRUE(every.ok());
  for (int e = 1; e <= 4; ++e) EXPECT_TRUE(every->ValidateAfterEpoch(e)) << e;

  auto off = Patched(R"({"validation_freq": 0, "data": {"eval": null}})");  // 0 needs no data.eval
  ASSERT_TRUE(off.ok()) << off.status().ToString();
  EXPECT_FALSE(off->ValidateAfterEpoch(1));
}

TEST(JobConfigTest, ValidationFreqListOfEpochs) {
  auto job = Patched(R"({"validation_freq": [1, 3, 10]})");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->validation_freq, 0);
  EXPECT_EQ(job->validation_epochs, (std::vector<int>{1, 3, 10}));
  for (int e = 0; e <= 11; ++e) EXPECT_EQ(job->ValidateAfterEpoch(e), e == 1 || e == 3 || e == 10) << e;

  auto empty = Patched(R"({"validation_freq": [], "data": {"eval": null}})");
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  EXPECT_FALSE(empty->ValidateAfterEpoch(1));
}

TEST(JobConfigTest, BadValidationFreq) {
  ExpectBad(R"({"validation_freq": -1})", "'validation_freq' must be an integer k >= 0");
  ExpectBad(R"({"validation_freq": "2"})", "'validation_freq' must be");
  ExpectBad(R"({"validation_freq": 1.5})", "'validation_freq' must be");
  ExpectBad(R"({"validation_freq": {"every": 2}})", "'validation_freq' must be");
  ExpectBad(R"({"validation_freq": [0, 2]})", "entry 0 is not a positive integer");
  ExpectBad(R"({"validation_freq": [1, "2"]})", "entry \"2\" is not a positive integer");
  ExpectBad(R"({"validation_freq": [3, 2]})", "strictly increasing");
  ExpectBad(R"({"validation_freq": [2, 2]})", "strictly increasing");
  ExpectBad(R"({"validation_freq": 1, "data": {"eval": null}})", "add a 'data.eval' section");
  ExpectBad(R"({"validation_freq": [2], "data": {"eval": null}})", "'validation_freq' needs evaluation data");
}

TEST(JobConfigTest, TensorboardDir) {
  auto job = Patched(R"({"tensorboard_dir": "logs"})");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->tensorboard_dir, "/jobs/logs");
  auto abs = Patched(R"({"tensorboard_dir": "/tmp/tb"})");
  ASSERT_TRUE(abs.ok());
  EXPECT_EQ(abs->tensorboard_dir, "/tmp/tb");
  ExpectBad(R"({"tensorboard_dir": ""})", "'tensorboard_dir' must be a non-empty string");
  ExpectBad(R"({"tensorboard_dir": true})", "'tensorboard_dir' must be a non-empty string");
}

TEST(JobConfigTest, Device) {
  auto job = Patched("{}");
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->device, "auto");
  for (const char* d : {"auto", "cpu", "gpu"}) {
    auto j = Patched(std::string(R"({"device": ")") + d + "\"}");
    ASSERT_TRUE(j.ok()) << d << ": " << j.status().ToString();
    EXPECT_EQ(j->device, d);
  }
  auto upper = Patched(R"({"device": "GPU"})");
  ASSERT_TRUE(upper.ok());
  EXPECT_EQ(upper->device, "gpu");
  ExpectBad(R"({"device": "cuda"})", "'device' must be \"auto\", \"cpu\" or \"gpu\", got \"cuda\"");
  ExpectBad(R"({"device": 1})", "'device'");
  // A backup moves between CPU and GPU: the device is not part of the trajectory.
  EXPECT_EQ(Patched(R"({"device": "gpu"})")->TrajectoryFingerprint(), job->TrajectoryFingerprint());
}

// lr_schedule changes the updates; validation and TensorBoard only read or write around them.
TEST(JobConfigTest, TrajectoryFingerprintOfFitOptions) {
  auto base = Patched("{}");
  ASSERT_TRUE(base.ok());
  const std::string fp = base->TrajectoryFingerprint();
  for (const char* same : {R"({"validation_freq": 2})", R"({"validation_freq": [1, 3]})",
                           R"({"tensorboard_dir": "logs"})", R"({"lr_schedule": null})"}) {
    auto j = Patched(same);
    ASSERT_TRUE(j.ok()) << same << ": " << j.status().ToString();
    EXPECT_EQ(j->TrajectoryFingerprint(), fp) << same;
  }
  nlohmann::json explicit_null = nlohmann::json::parse(kSeedJob);
  explicit_null["lr_schedule"] = nullptr;
  auto n = ParseJobConfig(explicit_null.dump(), "/jobs");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->TrajectoryFingerprint(), fp);

  const char kDecay[] = R"({"lr_schedule": {"type": "piecewise_constant", "unit": "epoch", "boundaries": [3, 7],
                                             "values": [1e-3, 1e-4, 1e-5]}})";
  auto decay = Patched(kDecay);
  ASSERT_TRUE(decay.ok());
  EXPECT_NE(decay->TrajectoryFingerprint(), fp);
  auto other = Patched(R"({"lr_schedule": {"type": "piecewise_constant", "unit": "epoch", "boundaries": [3, 8],
                                            "values": [1e-3, 1e-4, 1e-5]}})");
  ASSERT_TRUE(other.ok());
  EXPECT_NE(other->TrajectoryFingerprint(), decay->TrajectoryFingerprint());
  // The same schedule with validation and TensorBoard added still matches its backups.
  nlohmann::json with_extras = nlohmann::json::parse(kDecay);
  with_extras["validation_freq"] = 1;
  with_extras["tensorboard_dir"] = "logs";
  auto extras = Patched(with_extras.dump());
  ASSERT_TRUE(extras.ok()) << extras.status().ToString();
  EXPECT_EQ(extras->TrajectoryFingerprint(), decay->TrajectoryFingerprint());
}

TEST(JobConfigTest, DataPipeline) {
  nlohmann::json j = nlohmann::json::parse(kSeedJob);
  auto plain = ParseJobConfig(j.dump(), "/jobs");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->pipeline.num_parallel_calls, data::kAutotune);
  EXPECT_EQ(plain->pipeline.cache, data::PipelineOptions::Cache::kNone);
  j["data"]["pipeline"] = {{"num_parallel_calls", 3}, {"prefetch", "AUTOTUNE"}, {"cache", "input.cache"}};
  auto job = ParseJobConfig(j.dump(), "/jobs");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->pipeline.num_parallel_calls, 3);
  EXPECT_EQ(job->pipeline.prefetch, data::kAutotune);
  EXPECT_EQ(job->pipeline.cache, data::PipelineOptions::Cache::kFile);
  EXPECT_EQ(job->pipeline.cache_path, "/jobs/input.cache");
  // How fast batches come is not part of the trajectory: a backup moves between settings.
  EXPECT_EQ(job->TrajectoryFingerprint(), plain->TrajectoryFingerprint());
  j["data"]["pipeline"] = {{"prefetch", -2}};
  auto bad = ParseJobConfig(j.dump(), "/jobs");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().subject(), Subject::kConfig);
  EXPECT_NE(bad.status().message().find("data.pipeline.prefetch: must be \"AUTOTUNE\" or an integer in [0, 1024]"),
            std::string::npos);
}

TEST(JobConfigTest, CategoricalCrossentropyNeedsCategoricalLabels) {
  nlohmann::json j = nlohmann::json::parse(kSeedJob);
  j["loss"]["type"] = "categorical_crossentropy";
  auto mismatch = ParseJobConfig(j.dump(), "/jobs");
  ASSERT_FALSE(mismatch.ok());
  EXPECT_EQ(mismatch.status().subject(), Subject::kConfig);
  EXPECT_NE(mismatch.status().message().find("loss.type \"categorical_crossentropy\" needs one-hot labels but "
                                             "data.train.label_mode is \"int\""),
            std::string::npos);
  j["data"]["train"] = {{"format", "npz"}, {"path", "mnist.npz"}, {"label_mode", "categorical"}};
  auto ok = ParseJobConfig(j.dump(), "/jobs");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  j["loss"]["type"] = "sparse_categorical_crossentropy";
  auto sparse = ParseJobConfig(j.dump(), "/jobs");
  ASSERT_FALSE(sparse.ok());
  EXPECT_NE(sparse.status().message().find("needs integer labels but data.train.label_mode is \"categorical\""),
            std::string::npos);
  j["loss"]["type"] = "mean_squared_error";
  EXPECT_FALSE(ParseJobConfig(j.dump(), "/jobs").ok());
}

// "loss" as Keras takes it; absent, the compact form's sparse cross-entropy from logits.
TEST(JobConfigTest, LossAndMetricsAsKerasTakesThem) {
  nlohmann::json j = nlohmann::json::parse(kSeedJob);
  j.erase("loss");
  auto absent = ParseJobConfig(j.dump(), "/jobs");
  ASSERT_TRUE(absent.ok()) << absent.status().ToString();
  EXPECT_EQ(absent->loss, (nlohmann::json{{"type", "sparse_categorical_crossentropy"}, {"from_logits", true}}));
  EXPECT_EQ(absent->metrics, nlohmann::json::array({"accuracy"}));

  j["loss"] = "binary_crossentropy";
  j["metrics"] = {"accuracy", "auc"};  // auc needs one output: fits a model the loss allows
  auto binary = ParseJobConfig(j.dump(), "/jobs");
  ASSERT_TRUE(binary.ok()) << binary.status().ToString();
  EXPECT_EQ(binary->loss, "binary_crossentropy");
  EXPECT_EQ(binary->metrics, (nlohmann::json{"accuracy", "auc"}));

  j["loss"] = {{"class_name", "CategoricalCrossentropy"}, {"config", {{"from_logits", true}, {"label_smoothing", 0.1}}}};
  j["metrics"] = nullptr;
  j["data"]["train"]["label_mode"] = "categorical";
  auto keras = ParseJobConfig(j.dump(), "/jobs");
  ASSERT_TRUE(keras.ok()) << keras.status().ToString();
  EXPECT_TRUE(keras->metrics.is_array() && keras->metrics.empty());

  // The loss's own name decides the label check whatever form it is given in.
  j["data"]["train"]["label_mode"] = "int";
  auto mismatch = ParseJobConfig(j.dump(), "/jobs");
  ASSERT_FALSE(mismatch.ok());
  EXPECT_NE(mismatch.status().message().find("needs one-hot labels"), std::string::npos);

  // Errors are one "loss: ..." / "metrics[i]: ..." line about the job (exit code 2).
  j = nlohmann::json::parse(kSeedJob);
  j["loss"] = {{"type", "binary_crossentropy"}, {"label_smoothing", 2}};
  auto bad = ParseJobConfig(j.dump(), "/jobs");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().subject(), Subject::kConfig);
  EXPECT_EQ(bad.status().message().rfind("loss", 0), 0u) << bad.status().message();
  EXPECT_NE(bad.status().message().find("label_smoothing"), std::string::npos) << bad.status().message();
  j["loss"] = "sparse_categorical_crossentropy";
  j["metrics"] = {"accuracy", {{"type", "top_k_categorical_accuracy"}, {"k", 0}}};
  bad = ParseJobConfig(j.dump(), "/jobs");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().subject(), Subject::kConfig);
  EXPECT_EQ(bad.status().message().rfind("metrics[1]", 0), 0u) << bad.status().message();
}

TEST(JobConfigTest, MissingFileIsClear) {
  auto job = LoadJobConfig("/nonexistent/job.json");
  ASSERT_FALSE(job.ok());
  EXPECT_NE(job.status().message().find("/nonexistent/job.json"), std::string::npos);
}

}  // namespace
}  // namespace ringtrain::config
