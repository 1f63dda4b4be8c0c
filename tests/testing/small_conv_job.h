// The small job that the trainer and recovery tests train: 8x8 synthetic examples of
// 3 classes through a 3x3 convolution and a dense layer, Adam, batch 16, 3 epochs,
// seed 9. Callers add or replace fields, then parse it. Header only.
#ifndef RINGTRAIN_TESTS_TESTING_SMALL_CONV_JOB_H_
#define RINGTRAIN_TESTS_TESTING_SMALL_CONV_JOB_H_

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "collective/communicator.h"
#include "config/job_config.h"
#include "store/store.h"

namespace ringtrain::testing {

inline nlohmann::json SmallConvJob(int train_count) {
  nlohmann::json j = nlohmann::json::parse(R"({
    "model": {"input_shape": [8, 8], "layers": [
      {"type": "reshape", "target_shape": [8, 8, 1]},
      {"type": "conv2d", "filters": 3, "kernel_size": 3, "activation": "relu"},
      {"type": "flatten"},
      {"type": "dense", "units": 3}]},
    "optimizer": {"type": "adam", "learning_rate": 0.01},
    "data": {"train": {"format": "synthetic", "shape": [8, 8], "classes": 3, "seed": 5}},
    "batch_size_per_worker": 16, "epochs": 3, "seed": 9})");
  j["data"]["train"]["count"] = train_count;
  return j;
}

// Parses a test job (paths relative to the working directory); a bad one fails the test.
inline config::JobConfig ParseTestJob(const nlohmann::json& j) {
  auto job = config::ParseJobConfig(j.dump(), ".");
  EXPECT_TRUE(job.ok()) << job.status().ToString();
  return job.ok() ? *job : config::JobConfig{};
}

// A communicator of one rank.
inline std::unique_ptr<collective::Communicator> LocalCommunicator() {
  store::InMemoryStore store;
  auto c = collective::CreateCommunicator(collective::CommunicatorOptions{}, 0, 1, &store);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return std::move(c).value();
}

}  // namespace ringtrain::testing

#endif  // RINGTRAIN_TESTS_TESTING_SMALL_CONV_JOB_H_
