// A small model's backup identity and a training state with awkward float values,
// shared by the backup tests.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backup/backup.h"

namespace ringtrain::backup::testing {

// Three parameters whose buffer order differs from their name order.
inline BackupIdentity MakeIdentity() {
  BackupIdentity id;
  id.job_fingerprint = "fp-1234";
  id.num_workers = 2;
  id.steps_per_epoch = 10;
  id.optimizer_name = "adam";
  id.params = {{"dense/kernel", {3, 4}, 0}, {"dense/bias", {4}, 12}, {"out/kernel", {4, 2}, 16}};
  return id;
}

inline float FloatFromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

// A state distinct for every step, with -0.0, a denormal and the largest float among
// the parameters (NaN and infinity are refused on decode: a diverged run is not one to
// resume), Adam's two slots, metrics that need all 17 digits,
// and a history.
inline TrainState MakeState(const BackupIdentity& id, int64_t step) {
  TrainState s;
  s.global_step = step;
  const size_t n = id.num_params();
  for (size_t i = 0; i < n; ++i) s.params.push_back(static_cast<float>(step) * 0.001f + static_cast<float>(i) * 0.1f);
  s.params[1] = -0.0f;
  s.params[2] = std::numeric_limits<float>::denorm_min();
  s.params[3] = FloatFromBits(0x7f7fffffu);  // the largest finite float
  s.params[4] = -std::numeric_limits<float>::max();
  std::vector<float> m(n), v(n);
  for (size_t i = 0; i < n; ++i) {
    m[i] = std::sin(static_cast<float>(i + step));
    v[i] = std::cos(static_cast<float>(i + step)) * 1e-30f;
  }
  s.optimizer_slots = {{"m", m}, {"v", v}};
  s.optimizer_iterations = step;
  s.epoch_loss_sum = 0.1 + 0.2 + static_cast<double>(step);
  s.epoch_correct = (int64_t{1} << 53) + 1 + step;  // not a double: counts are exact
  s.epoch_examples = 123456789 + step;
  s.history = nlohmann::json::array();
  for (int64_t e = 0; e < step / id.steps_per_epoch; ++e) {
    s.history.push_back({{"epoch", e}, {"loss", 1.0 / static_cast<double>(e + 3)}});
  }
  return s;
}

inline bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

// Every field equal, floats bit for bit.
inline void ExpectSameState(const TrainState& a, const TrainState& b) {
  EXPECT_EQ(a.global_step, b.global_step);
  EXPECT_TRUE(SameBits(a.params, b.params));
  ASSERT_EQ(a.optimizer_slots.size(), b.optimizer_slots.size());
  for (size_t i = 0; i < a.optimizer_slots.size(); ++i) {
    EXPECT_EQ(a.optimizer_slots[i].first, b.optimizer_slots[i].first);
    EXPECT_TRUE(SameBits(a.optimizer_slots[i].second, b.optimizer_slots[i].second)) << a.optimizer_slots[i].first;
  }
  EXPECT_EQ(a.optimizer_iterations, b.optimizer_iterations);
  // Bitwise, not ==: "exact" includes the last bit.
  EXPECT_EQ(std::memcmp(&a.epoch_loss_sum, &b.epoch_loss_sum, sizeof(double)), 0);
  EXPECT_EQ(a.epoch_correct, b.epoch_correct);
  EXPECT_EQ(a.epoch_examples, b.epoch_examples);
  EXPECT_EQ(a.history, b.history);
}

// The names in `dir`, sorted.
inline std::vector<std::string> List(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace ringtrain::backup::testing
