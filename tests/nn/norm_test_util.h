// Helpers for the normalization and dropout layer tests: a layer built by its factory
// and run through its CPU kernel on buffers the test owns, laid out as nn::Model lays
// them out (cpu_run.h), a central-difference gradient check in training mode, and an
// in-memory all-reduce for replicas run as threads (synchronized BatchNormalization).
#pragma once

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/status.h"
#include "nn/layer.h"
#include "test_util.h"

namespace ringtrain::nn::testing {

// A layer and its CPU kernel with the buffers it runs on (CpuRun), the weights found by
// their Keras names.
struct BoundLayer : CpuRun {
  BoundLayer(std::unique_ptr<Layer> made, bool trainable) : CpuRun(*made, trainable), layer(std::move(made)) {}
  std::unique_ptr<Layer> layer;
  // The weight named `suffix` ("gamma", "moving_variance") in the parameter buffer.
  float* param(const std::string& suffix) { return CpuRun::param(index(suffix)); }
  // Writes into the parameter buffer (the kernel reads it on each call).
  void Set(const std::string& suffix, const std::vector<float>& v) {
    const size_t k = index(suffix);
    ASSERT_EQ(count(k), v.size()) << suffix;
    std::copy(v.begin(), v.end(), CpuRun::param(k));
  }
  // Its gradient, null when it has none.
  float* grad(const std::string& suffix) { return CpuRun::grad(index(suffix)); }
};

// Runs like nn::Model (CpuRun): initial values per ParamSpec::Init, a gradient only for
// trainable weights of a trainable layer (garbage-filled, so Backward must overwrite it).
inline std::unique_ptr<BoundLayer> Bind(StatusOr<std::unique_ptr<Layer>> made, bool trainable = true) {
  EXPECT_TRUE(made.ok()) << made.status().ToString();
  if (!made.ok()) return nullptr;
  return std::make_unique<BoundLayer>(std::move(made).value(), trainable);
}

// Central differences of L = sum(Forward(x, training=true) * r), in double, against the
// analytic gradients of every weight with a gradient and of the input.
inline void CheckTrainingGradients(BoundLayer& b, const std::vector<float>& x0, int batch, uint64_t seed,
                                   double eps = 1e-2) {
  Layer& layer = *b.layer;
  std::vector<float> x = x0;
  const std::vector<float> r = RandomVector(batch * layer.output_size(), seed);
  b.Forward(x.data(), batch, true);
  const float* din_ptr = b.Backward(r.data(), true);
  ASSERT_NE(din_ptr, nullptr);
  const std::vector<float> din(din_ptr, din_ptr + x.size());
  std::vector<std::vector<float>> analytic;
  for (size_t t = 0; t < b.num_weights(); ++t) analytic.push_back(b.grad_values(t));
  auto loss = [&]() { return Dot(b.Forward(x.data(), batch, true), r); };
  auto numeric = [&](float* v) {
    const float saved = *v;
    *v = saved + static_cast<float>(eps);
    const double up = loss();
    *v = saved - static_cast<float>(eps);
    const double down = loss();
    *v = saved;
    return (up - down) / (2 * eps);
  };
  for (size_t t = 0; t < b.num_weights(); ++t) {
    if (analytic[t].empty()) continue;
    for (size_t i = 0; i < b.count(t); ++i) {
      ExpectClose(analytic[t][i], numeric(b.CpuRun::param(t) + i),
                  "weight " + std::to_string(t) + "[" + std::to_string(i) + "]");
    }
  }
  for (size_t i = 0; i < x.size(); ++i) ExpectClose(din[i], numeric(&x[i]), "input[" + std::to_string(i) + "]");
}

// StepContext::all_reduce_sum for `replicas` threads: each call waits (at most 10 s) for
// every replica's call, then all get sum(replica 0 + 1 + ...) in that order.
class ThreadAllReduce {
 public:
  explicit ThreadAllReduce(int replicas) : ptrs_(static_cast<size_t>(replicas)), sizes_(ptrs_.size()) {}
  bool Reduce(int rank, float* data, size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    const int gen = generation_;
    ptrs_[static_cast<size_t>(rank)] = data;
    sizes_[static_cast<size_t>(rank)] = n;
    if (++arrived_ == static_cast<int>(ptrs_.size())) {
      ok_ = true;
      for (size_t k = 0; k < sizes_.size(); ++k) ok_ = ok_ && sizes_[k] == n;
      if (ok_) {
        sum_.assign(ptrs_[0], ptrs_[0] + n);
        for (size_t k = 1; k < ptrs_.size(); ++k) {
          for (size_t i = 0; i < n; ++i) sum_[i] += ptrs_[k][i];
        }
        for (float* p : ptrs_) std::copy(sum_.begin(), sum_.end(), p);
      }
      arrived_ = 0;
      ++generation_;
      ++calls_;
      cv_.notify_all();
      return ok_;
    }
    if (!cv_.wait_for(lock, std::chrono::seconds(10), [&] { return generation_ != gen; })) return false;
    return ok_;
  }
  std::function<bool(float*, size_t)> For(int rank) {
    return [this, rank](float* d, size_t n) { return Reduce(rank, d, n); };
  }
  int calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<float*> ptrs_;
  std::vector<size_t> sizes_;
  std::vector<float> sum_;
  int arrived_ = 0, generation_ = 0, calls_ = 0;
  bool ok_ = true;
};

}  // namespace ringtrain::nn::testing
