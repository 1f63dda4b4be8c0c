// A small job for the evaluator's tests: 8x8 synthetic examples of 3 classes through one
// dense layer, 3 epochs of 4 steps. Header only.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backup/backup.h"
#include "checkpoint/safetensors.h"
#include "config/job_config.h"
#include "nn/model.h"

namespace ringtrain::evaluator {

inline std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

inline nlohmann::json EvalTestJobJson(const std::string& dir) {
  nlohmann::json j = nlohmann::json::parse(R"({
    "model": {"input_shape": [8, 8], "layers": [{"type": "flatten"}, {"type": "dense", "units": 3}]},
    "optimizer": {"type": "sgd", "learning_rate": 0.1},
    "data": {"train": {"format": "synthetic", "count": 64, "shape": [8, 8], "classes": 3, "seed": 5},
             "eval": {"format": "synthetic", "count": 40, "shape": [8, 8], "classes": 3, "seed": 6}},
    "batch_size_per_worker": 8, "epochs": 3, "steps_per_epoch": 4, "seed": 9})");
  j["history_file"] = dir + "/history.jsonl";
  return j;
}

inline config::JobConfig ParseJob(const nlohmann::json& j) {
  auto job = config::ParseJobConfig(j.dump(), ".");
  EXPECT_TRUE(job.ok()) << job.status().ToString();
  return job.ok() ? *job : config::JobConfig{};
}

// The job's model with every weight set to `value` (so that files differ by value).
inline std::unique_ptr<nn::Model> ModelWith(const config::JobConfig& job, float value) {
  auto m = nn::Model::FromJson(job.model, job.seed);
  EXPECT_TRUE(m.ok());
  std::fill((*m)->params(), (*m)->params() + (*m)->num_params(), value);
  return std::move(m).value();
}

// The job's model with its initial (random) weights times `factor`: different outputs.
inline std::unique_ptr<nn::Model> ScaledModel(const config::JobConfig& job, float factor) {
  auto m = nn::Model::FromJson(job.model, job.seed);
  EXPECT_TRUE(m.ok());
  for (size_t i = 0; i < (*m)->num_params(); ++i) (*m)->params()[i] *= factor;
  return std::move(m).value();
}

// Writes a model file as the trainer's model_checkpoint does (metadata epoch, global_step).
inline void WriteModelFile(const nn::Model& model, const std::string& path, int epoch, int64_t step) {
  std::vector<checkpoint::TensorView> views;
  for (const auto& p : model.param_infos()) views.push_back({p.name, p.shape, model.params() + p.offset});
  std::map<std::string, std::string> meta = {{"format", "ringtrain"}, {"epoch", std::to_string(epoch)}};
  if (step >= 0) meta["global_step"] = std::to_string(step);
  ASSERT_TRUE(checkpoint::SaveSafetensors(path, views, meta).ok());
}

inline backup::BackupIdentity IdentityOf(const config::JobConfig& job, const nn::Model& model, int num_workers) {
  backup::BackupIdentity id;
  id.job_fingerprint = job.TrajectoryFingerprint();
  id.num_workers = num_workers;
  id.steps_per_epoch = job.steps_per_epoch;
  id.optimizer_name = "sgd";
  for (const auto& p : model.param_infos()) id.params.push_back({p.name, p.shape, p.offset});
  return id;
}

inline void WriteBackupOf(const config::JobConfig& job, const nn::Model& model, const std::string& dir, int64_t step,
                          int num_workers = 2) {
  backup::TrainState s;
  s.global_step = step;
  s.params.assign(model.params(), model.params() + model.num_params());
  ASSERT_TRUE(backup::WriteBackup(dir, IdentityOf(job, model, num_workers), s).ok());
}

}  // namespace ringtrain::evaluator
