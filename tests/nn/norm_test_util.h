// Helpers for the normalization and dropout layer tests: a layer built by its factory
// and bound to buffers the test owns (as nn::Model would bind them), a central-difference
// gradient check in training mode, and an in-memory all-reduce for replicas run as
// threads (synchronized BatchNormalization).
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

struct BoundLayer {
  std::unique_ptr<Layer> layer;
  StepContext ctx;
  std::vector<std::vector<float>> params, grads;  // in ParamSpecs() order; grads empty where not bound
  std::vector<float> stats;                       // the reduced statistics
  std::vector<float>& param(const std::string& suffix) {
    const auto specs = layer->ParamSpecs();
    for (size_t k = 0; k < specs.size(); ++k) {
      if (specs[k].suffix == suffix) return params[k];
    }
    ADD_FAILURE() << "no weight " << suffix;
    return params[0];
  }
  // Writes into the bound buffer (the layer keeps its pointer).
  void Set(const std::string& suffix, const std::vector<float>& v) {
    std::vector<float>& p = param(suffix);
    ASSERT_EQ(p.size(), v.size()) << suffix;
    std::copy(v.begin(), v.end(), p.begin());
  }
  std::vector<float>& grad(const std::string& suffix) {
    const auto specs = layer->ParamSpecs();
    for (size_t k = 0; k < specs.size(); ++k) {
      if (specs[k].suffix == suffix) return grads[k];
    }
    ADD_FAILURE() << "no weight " << suffix;
    return grads[0];
  }
};

// Binds like nn::Model: initial values per ParamSpec::Init, a gradient only for trainable
// weights of a trainable layer (garbage-filled, so Backward must overwrite it).
inline std::unique_ptr<BoundLayer> Bind(StatusOr<std::unique_ptr<Layer>> made, bool trainable = true) {
  EXPECT_TRUE(made.ok()) << made.status().ToString();
  if (!made.ok()) return nullptr;
  auto b = std::make_unique<BoundLayer>();
  b->layer = std::move(made).value();
  b->layer->set_trainable(trainable);
  b->layer->set_context(&b->ctx);
  std::vector<float*> p, g;
  for (const ParamSpec& s : b->layer->ParamSpecs()) {
    size_t n = 1;
    for (int64_t d : s.shape) n *= static_cast<size_t>(d);
    b->params.emplace_back(n, s.init == ParamSpec::Init::kOnes ? 1.0f : 0.0f);
    const bool has_grad = trainable && s.trainable;
    b->grads.emplace_back(has_grad ? n : 0, 123.0f);
  }
  for (size_t k = 0; k < b->params.size(); ++k) {
    p.push_back(b->params[k].data());
    g.push_back(b->grads[k].empty() ? nullptr : b->grads[k].data());
  }
  b->layer->BindParams(p, g);
  b->stats.assign(b->layer->ReducedStatsSize(), std::nanf(""));
  if (!b->stats.empty()) b->layer->BindReducedStats(b->stats.data());
  return b;
}

// Central differences of L = sum(Forward(x, training=true) * r), in double, against the
// analytic gradients of every bound weight and of the input.
inline void CheckTrainingGradients(BoundLayer& b, const std::vector<float>& x0, int batch, uint64_t seed,
                                   double eps = 1e-2) {
  Layer& layer = *b.layer;
  std::vector<float> x = x0;
  const std::vector<float> r = RandomVector(batch * layer.output_size(), seed);
  layer.Forward(x.data(), batch, true);
  const float* din_ptr = layer.Backward(r.data(), true);
  ASSERT_NE(din_ptr, nullptr);
  const std::vector<float> din(din_ptr, din_ptr + x.size());
  const std::vector<std::vector<float>> analytic = b.grads;
  auto loss = [&]() { return Dot(layer.Forward(x.data(), batch, true), r); };
  auto numeric = [&](float* v) {
    const float saved = *v;
    *v = saved + static_cast<float>(eps);
    const double up = loss();
    *v = saved - static_cast<float>(eps);
    const double down = loss();
    *v = saved;
    return (up - down) / (2 * eps);
  };
  for (size_t t = 0; t < b.params.size(); ++t) {
    if (analytic[t].empty()) continue;
    for (size_t i = 0; i < b.params[t].size(); ++i) {
      ExpectClose(analytic[t][i], numeric(&b.params[t][i]), "weight " + std::to_string(t) + "[" + std::to_string(i) + "]");
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
