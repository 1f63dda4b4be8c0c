// Job files for the multi-process tests.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ringtrain::testing {

// A small synthetic job that trains in a few seconds on two workers.
inline nlohmann::json SmallSyntheticJob(const std::string& out_dir) {
  return nlohmann::json::parse(R"({
    "model": {"input_shape": [12, 12], "layers": [
      {"type": "reshape", "target_shape": [12, 12, 1]},
      {"type": "conv2d", "filters": 4, "kernel_size": 3, "activation": "relu"},
      {"type": "max_pooling2d"},
      {"type": "flatten"},
      {"type": "dense", "units": 16, "activation": "relu"},
      {"type": "dense", "units": 4}]},
    "optimizer": {"type": "adam", "learning_rate": 0.01},
    "data": {
      "train": {"format": "synthetic", "count": 1024, "shape": [12, 12], "classes": 4, "seed": 3},
      "eval":  {"format": "synthetic", "count": 256, "shape": [12, 12], "classes": 4, "seed": 4}},
    "batch_size_per_worker": 16, "epochs": 2, "steps_per_epoch": 12, "seed": 5
  })")
      .patch(nlohmann::json::array({
          {{"op", "add"}, {"path", "/save_model"}, {"value", out_dir + "/model.safetensors"}},
          {{"op", "add"}, {"path", "/history_file"}, {"value", out_dir + "/history.jsonl"}},
      }));
}

// Hundreds of steps of a few milliseconds each: seconds of training to interrupt.
inline nlohmann::json RecoveryJob(const std::string& dir, int save_freq) {
  auto job = nlohmann::json::parse(R"({
    "model": {"input_shape": [16, 16], "layers": [
      {"type": "reshape", "target_shape": [16, 16, 1]},
      {"type": "conv2d", "filters": 16, "kernel_size": 3, "activation": "relu"},
      {"type": "max_pooling2d"},
      {"type": "flatten"},
      {"type": "dense", "units": 128, "activation": "relu"},
      {"type": "dense", "units": 4}]},
    "optimizer": {"type": "adam", "learning_rate": 0.001},
    "data": {
      "train": {"format": "synthetic", "count": 2048, "shape": [16, 16], "classes": 4, "seed": 3},
      "eval":  {"format": "synthetic", "count": 256, "shape": [16, 16], "classes": 4, "seed": 4}},
    "batch_size_per_worker": 32, "epochs": 8, "steps_per_epoch": 30, "seed": 5})");
  job["save_model"] = dir + "/model.safetensors";
  job["backup_and_restore"] = {{"backup_dir", dir + "/backup"}, {"save_freq", save_freq}};
  return job;
}

// RecoveryJob's model (conv 16 and dense 128 on 16x16: 100,548 weights, so the
// all-reduce takes its large path) for 8 steps, without backups: the jobs whose model
// bytes are compared across transports and placements.
inline nlohmann::json ShortBitsJob(const std::string& dir) {
  auto job = RecoveryJob(dir, 1);
  job.erase("backup_and_restore");
  job["epochs"] = 2;
  job["steps_per_epoch"] = 4;
  job["batch_size_per_worker"] = 16;
  return job;
}

// What the multi-process tests run their tasks with: failures noticed in 2 s (200 ms
// heartbeats), a minute to rendezvous, one compute thread.
inline std::map<std::string, std::string> FastFailureEnv() {
  return {{"RINGTRAIN_RENDEZVOUS_TIMEOUT_S", "60"},
          {"RINGTRAIN_HEARTBEAT_INTERVAL_MS", "200"},
          {"RINGTRAIN_HEARTBEAT_TIMEOUT_MS", "2000"},
          {"RINGTRAIN_NUM_THREADS", "1"}};
}

// TF_CONFIG for worker `index` of a cluster of workers on 127.0.0.1 `ports`.
inline std::string LoopbackTfConfig(const std::vector<int>& ports, int index) {
  nlohmann::json cluster = {{"worker", nlohmann::json::array()}};
  for (int p : ports) cluster["worker"].push_back("127.0.0.1:" + std::to_string(p));
  return nlohmann::json{{"cluster", cluster}, {"task", {{"type", "worker"}, {"index", index}}}}.dump();
}

}  // namespace ringtrain::testing
