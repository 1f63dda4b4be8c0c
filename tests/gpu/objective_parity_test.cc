// GpuObjective (backends/cuda/objective_kernels.h) on a GPU against engine::Objective on
// the CPU (what the CPU engine computes per batch: Loss::Compute and
// Objective::Accumulate), on random outputs and labels: for every loss (each kind, from
// logits and from probabilities, with label smoothing, over one and several outputs,
// with labels the loss cannot take) and every metric (the accuracies, binary accuracy at
// other thresholds, the top-k accuracies, AUC with its options): the loss sum and every
// gradient element within a relative 1e-4, the metric sums exactly. Also: evaluation
// (no gradient), an empty batch, a batch above the reserved size, run-to-run bits, and
// the errors of a misuse.
//
// Needs a CUDA GPU; without one (or in a build without CUDA) every case skips, saying why.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backends/backend.h"
#include "engine/objective.h"
#include "gpu/op_parity.h"

#if defined(RINGTRAIN_HAVE_CUDA)
#include <cuda_runtime_api.h>

#include "backends/cuda/device_buffer.h"
#include "backends/cuda/gpu_context.h"
#include "backends/cuda/objective_kernels.h"
#endif

namespace ringtrain::gpu {
namespace {

using Json = nlohmann::json;

constexpr double kTolerance = 1e-4;

enum class Values { kLogits, kProbabilityRows, kProbabilities, kRegression, kTies };

struct Case {
  std::string label;
  Json loss;
  Json metrics;
  int n = 10;
  Values values = Values::kLogits;
  int batch = 64;
  bool bad_labels = false;  // some labels the loss cannot take
};

struct Batch {
  std::vector<float> outputs;
  std::vector<int32_t> labels;
};

// Outputs as the loss expects them (logits, softmax-like rows, independent
// probabilities with clipped edges, regression values, or quantised values with ties
// for the metrics), and labels: class indices, 0/1 with one output (any small integer
// for a regression over one output), and with bad_labels some outside what the loss takes.
Batch MakeBatch(const Case& c, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  std::uniform_int_distribution<int> pick(0, 15);
  const int n = c.n;
  Batch b;
  b.outputs.resize(static_cast<size_t>(c.batch) * n);
  b.labels.resize(c.batch);
  for (int i = 0; i < c.batch; ++i) {
    float* x = b.outputs.data() + static_cast<size_t>(i) * n;
    for (int o = 0; o < n; ++o) {
      const int r = pick(gen);
      switch (c.values) {
        case Values::kLogits: x[o] = r == 0 ? 30.0f : r == 1 ? -30.0f : -5.0f + 10.0f * u(gen); break;
        case Values::kProbabilityRows:
        case Values::kProbabilities:
          x[o] = r == 0 ? 0.0f : r == 1 ? 1.0f : r == 2 ? 1e-9f : r == 3 ? 0.99999994f : u(gen);
          break;
        case Values::kRegression: x[o] = -2.0f + 5.0f * u(gen); break;
        case Values::kTies: x[o] = r == 0 ? -0.5f : static_cast<float>(r % 5) * 0.25f; break;
      }
    }
    if (c.values == Values::kProbabilityRows) {
      float s = 0;
      for (int o = 0; o < n; ++o) s += x[o];
      for (int o = 0; o < n; ++o) x[o] = s > 0 ? x[o] / s : 1.0f / n;
    }
    int32_t y = n == 1 ? pick(gen) % 2 : pick(gen) % n;
    if (c.bad_labels && pick(gen) < 3) y = pick(gen) % 2 ? -1 : std::max(n, 2);
    b.labels[i] = y;
  }
  return b;
}

struct Result {
  double loss = 0;
  std::vector<float> grad;
  std::vector<double> sums;
};

// What the CPU engine computes for the batch (cpu_engine.cc's Stats, without the
// regularization penalty).
Result OnCpu(const engine::Objective& objective, const Batch& b, int batch, float scale, bool with_grad) {
  Result r;
  r.grad.assign(b.outputs.size(), 0.0f);
  r.loss = objective.loss().Compute(b.outputs.data(), b.labels.data(), batch, scale,
                                    with_grad ? r.grad.data() : nullptr);
  r.sums.assign(static_cast<size_t>(objective.num_sums()), 0.0);
  objective.Accumulate(b.outputs.data(), b.labels.data(), batch, r.sums.data());
  return r;
}

double RelErr(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return INFINITY;
  double diff = 0, scale = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(got[i]) || std::isnan(want[i])) return INFINITY;
    diff = std::max(diff, std::fabs(static_cast<double>(got[i]) - want[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(want[i])));
  }
  return diff / std::max(scale, 1e-6);
}

#if defined(RINGTRAIN_HAVE_CUDA)

template <typename T>
DeviceBuffer<T> Upload(const std::vector<T>& host) {
  DeviceBuffer<T> d;
  EXPECT_TRUE(d.Allocate(std::max<size_t>(host.size(), 1), "test", 0).ok());
  if (!host.empty()) {
    EXPECT_EQ(cudaMemcpy(d.get(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
  return d;
}

template <typename T>
std::vector<T> Download(const T* d, size_t n) {
  std::vector<T> host(n);
  if (n > 0) {
    EXPECT_EQ(cudaMemcpy(host.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
  }
  return host;
}

// One GPU context for the whole suite (cuDNN and cuBLAS handles are slow to make).
GpuContext* Context() {
  static std::unique_ptr<GpuContext> ctx = [] {
    auto made = GpuContext::Create(0);
    EXPECT_TRUE(made.ok()) << made.status().ToString();
    return made.ok() ? std::move(made).value() : nullptr;
  }();
  return ctx.get();
}

// GpuObjective::Run and Collect on the batch (outputs and labels uploaded; the gradient
// buffer poisoned first, so a gradient never written shows).
Result OnGpu(GpuObjective& objective, const Batch& b, int batch, float scale, bool with_grad) {
  GpuContext* ctx = Context();
  DeviceBuffer<float> outputs = Upload(b.outputs);
  DeviceBuffer<int32_t> labels = Upload(b.labels);
  DeviceBuffer<float> grad = Upload(std::vector<float>(std::max<size_t>(b.outputs.size(), 1), NAN));
  Result r;
  const Status run = objective.Run(outputs.get(), labels.get(), batch, scale, with_grad ? grad.get() : nullptr);
  EXPECT_TRUE(run.ok()) << run.ToString();
  const Status sync = ctx->SyncCompute("the objective under test");
  EXPECT_TRUE(sync.ok()) << sync.ToString();
  auto stats = objective.Collect();
  EXPECT_TRUE(stats.ok()) << stats.status().ToString();
  if (!stats.ok()) return r;
  r.loss = stats->loss_sum;
  r.sums = stats->metric_sums;
  r.grad = with_grad ? Download(grad.get(), b.outputs.size()) : std::vector<float>(b.outputs.size(), 0.0f);
  return r;
}

#endif  // RINGTRAIN_HAVE_CUDA

// Runs `c` on the GPU and the CPU and compares them; also evaluation (no gradient) and
// a second run's bits.
void CheckCase(const Case& c, uint32_t seed) {
  SCOPED_TRACE(c.label + ": loss " + c.loss.dump() + ", metrics " + c.metrics.dump() + ", " + std::to_string(c.n) +
               " outputs, batch " + std::to_string(c.batch));
#if defined(RINGTRAIN_HAVE_CUDA)
  auto objective = engine::Objective::FromJson(c.loss, c.metrics, c.n);
  ASSERT_TRUE(objective.ok()) << objective.status().ToString();
  GpuContext* ctx = Context();
  ASSERT_NE(ctx, nullptr);
  auto gpu = GpuObjective::Create(*objective, c.n, ctx);
  ASSERT_TRUE(gpu.ok()) << gpu.status().ToString();
  ASSERT_TRUE((*gpu)->Reserve(c.batch).ok());
  const Batch b = MakeBatch(c, seed);
  const float scale = 1.0f / static_cast<float>(2 * c.batch);

  const Result want = OnCpu(*objective, b, c.batch, scale, true);
  const Result got = OnGpu(**gpu, b, c.batch, scale, true);
  if (std::isnan(want.loss)) {
    EXPECT_TRUE(std::isnan(got.loss)) << "the CPU's loss sum is NaN, the GPU's " << got.loss;
  } else {
    EXPECT_LE(std::fabs(got.loss - want.loss) / std::max(std::fabs(want.loss), 1e-6), kTolerance)
        << "loss sum " << got.loss << " vs the CPU's " << want.loss;
  }
  EXPECT_LE(RelErr(got.grad, want.grad), kTolerance) << "output gradient";
  ASSERT_EQ(got.sums.size(), want.sums.size());
  for (size_t s = 0; s < want.sums.size(); ++s) {
    EXPECT_EQ(got.sums[s], want.sums[s]) << "metric sum " << s << " (" << (*gpu)->Describe() << ")";
  }

  // Evaluation: no gradient, the same sums.
  const Result eval = OnGpu(**gpu, b, c.batch, 0.0f, false);
  EXPECT_EQ(std::memcmp(&eval.loss, &got.loss, sizeof(double)), 0) << "evaluation's loss sum";
  EXPECT_EQ(eval.sums, got.sums);

  // Run to run: the same bits.
  const Result again = OnGpu(**gpu, b, c.batch, scale, true);
  EXPECT_EQ(std::memcmp(&again.loss, &got.loss, sizeof(double)), 0) << "a second run's loss sum";
  EXPECT_EQ(std::memcmp(again.grad.data(), got.grad.data(), got.grad.size() * sizeof(float)), 0)
      << "a second run's gradient";
  EXPECT_EQ(again.sums, got.sums);
#else
  (void)seed;
  FAIL() << ::ringtrain::testing::DeviceUnavailable(backends::Device::kCuda);
#endif
}

const Json kSparseLogits = {{"type", "sparse_categorical_crossentropy"}, {"from_logits", true}};
const Json kBinaryLogits = {{"type", "binary_crossentropy"}, {"from_logits", true}};

TEST(ObjectiveParity, EveryLoss) {
  SKIP_IF_DEVICE_UNAVAILABLE(backends::Device::kCuda);
  std::vector<Case> cases;
  for (bool bad : {false, true}) {
    const std::string b = bad ? ", bad labels" : "";
    auto add = [&](const std::string& label, Json loss, Json metrics, int n, Values v) {
      Case c;
      c.label = label + b;
      c.loss = std::move(loss);
      c.metrics = std::move(metrics);
      c.n = n;
      c.values = v;
      c.bad_labels = bad;
      cases.push_back(c);
    };
    for (bool logits : {true, false}) {
      const Values v = logits ? Values::kLogits : Values::kProbabilityRows;
      const std::string from = logits ? " from logits" : " from probabilities";
      add("sparse CE" + from, {{"type", "sparse_categorical_crossentropy"}, {"from_logits", logits}}, {"accuracy"},
          10, v);
      for (double s : {0.0, 0.1}) {
        add("categorical CE" + from + " smoothing " + std::to_string(s),
            {{"type", "categorical_crossentropy"}, {"from_logits", logits}, {"label_smoothing", s}}, {"accuracy"}, 10,
            v);
      }
      for (int n : {1, 4}) {
        for (double s : {0.0, 0.2}) {
          add("binary CE" + from + " smoothing " + std::to_string(s),
              {{"type", "binary_crossentropy"}, {"from_logits", logits}, {"label_smoothing", s}}, {"accuracy"}, n,
              logits ? Values::kLogits : Values::kProbabilities);
        }
      }
    }
    for (int n : {1, 3}) {
      add("mse", "mse", {"accuracy"}, n, Values::kRegression);
      add("mae", {{"class_name", "MeanAbsoluteError"}, {"config", nlohmann::json::object()}}, {"accuracy"}, n,
          Values::kRegression);
    }
  }
  // Many classes: the per-example loops over a long row.
  Case wide;
  wide.label = "sparse CE from logits, 1000 classes";
  wide.loss = kSparseLogits;
  wide.metrics = {"accuracy", {{"type", "sparse_top_k_categorical_accuracy"}, {"k", 5}}};
  wide.n = 1000;
  wide.batch = 32;
  cases.push_back(wide);
  uint32_t seed = 1;
  for (const Case& c : cases) CheckCase(c, seed++);
}

TEST(ObjectiveParity, EveryMetric) {
  SKIP_IF_DEVICE_UNAVAILABLE(backends::Device::kCuda);
  std::vector<Case> cases;
  auto add = [&](const std::string& label, Json loss, Json metrics, int n, Values v, int batch = 200) {
    Case c;
    c.label = label;
    c.loss = std::move(loss);
    c.metrics = std::move(metrics);
    c.n = n;
    c.values = v;
    c.batch = batch;
    cases.push_back(c);
  };
  add("argmax accuracies with ties", kSparseLogits,
      {"accuracy", "sparse_categorical_accuracy", {{"type", "categorical_accuracy"}, {"name", "ca"}}}, 6,
      Values::kTies);
  add("categorical accuracy", "categorical_crossentropy", {"accuracy"}, 5, Values::kProbabilityRows);
  add("binary accuracy over one output", kBinaryLogits, {"accuracy", {{"type", "binary_accuracy"}, {"threshold", 0}}},
      1, Values::kLogits);
  add("binary accuracy over several outputs", kBinaryLogits,
      {{{"type", "binary_accuracy"}, {"threshold", 0.3}}, {{"type", "binary_accuracy"}, {"threshold", 0.25},
                                                           {"name", "b25"}}},
      4, Values::kTies);
  add("top-k accuracies with ties", kSparseLogits,
      {"top_k_categorical_accuracy", {{"type", "sparse_top_k_categorical_accuracy"}, {"k", 2}},
       {{"type", "top_k_categorical_accuracy"}, {"k", 1}, {"name", "top1"}},
       {{"type", "top_k_categorical_accuracy"}, {"k", 20}, {"name", "top20"}}},
      8, Values::kTies);
  add("auc default", "binary_crossentropy", {"auc"}, 1, Values::kProbabilities);
  add("auc from logits", kBinaryLogits, {{{"type", "auc"}, {"from_logits", true}}}, 1, Values::kLogits);
  add("auc options", "binary_crossentropy",
      {{{"type", "auc"}, {"num_thresholds", 1000}, {"curve", "PR"}, {"name", "pr"}},
       {{"type", "auc"}, {"num_thresholds", 3}, {"summation_method", "minoring"}, {"name", "a3"}},
       {{"type", "AUC"}, {"num_thresholds", 2}, {"name", "a2"}}},
      1, Values::kProbabilities);
  add("auc on ties, a large batch", "binary_crossentropy", {"auc", "accuracy"}, 1, Values::kTies, 5000);
  add("every metric at once", "mse", {"accuracy", "binary_accuracy", "top_k_categorical_accuracy"}, 3,
      Values::kRegression);
  uint32_t seed = 1000;
  for (const Case& c : cases) CheckCase(c, seed++);
}

TEST(ObjectiveParity, EmptyAndGrowingBatches) {
  SKIP_IF_DEVICE_UNAVAILABLE(backends::Device::kCuda);
#if defined(RINGTRAIN_HAVE_CUDA)
  auto objective = engine::Objective::FromJson(kBinaryLogits, {"accuracy", "auc"}, 1);
  ASSERT_TRUE(objective.ok());
  auto gpu = GpuObjective::Create(*objective, 1, Context());
  ASSERT_TRUE(gpu.ok()) << gpu.status().ToString();
  EXPECT_EQ((*gpu)->Collect().status().code(), Code::kFailedPrecondition) << "Collect before Run";
  ASSERT_TRUE((*gpu)->Reserve(8).ok());
  Case c;
  c.n = 1;
  for (int batch : {0, 8, 100, 3}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    c.batch = batch;
    const Batch b = MakeBatch(c, 77 + batch);
    const Result want = OnCpu(*objective, b, batch, 0.5f, true);
    const Result got = OnGpu(**gpu, b, batch, 0.5f, true);
    EXPECT_LE(std::fabs(got.loss - want.loss) / std::max(std::fabs(want.loss), 1e-6), kTolerance);
    EXPECT_LE(RelErr(got.grad, want.grad), kTolerance);
    EXPECT_EQ(got.sums, want.sums);
  }
  // The model's outputs must be the loss's.
  EXPECT_EQ(GpuObjective::Create(*objective, 2, Context()).status().code(), Code::kInvalidArgument);
  EXPECT_EQ((*gpu)->Run(nullptr, nullptr, -1, 1.0f, nullptr).code(), Code::kInvalidArgument);
#endif
}

// The default objective (a job that names neither loss nor metrics).
TEST(ObjectiveParity, DefaultObjective) {
  SKIP_IF_DEVICE_UNAVAILABLE(backends::Device::kCuda);
#if defined(RINGTRAIN_HAVE_CUDA)
  for (int n : {1, 10}) {
    const engine::Objective objective = engine::Objective::Default(n);
    auto gpu = GpuObjective::Create(objective, n, Context());
    ASSERT_TRUE(gpu.ok()) << gpu.status().ToString();
    Case c;
    c.n = n;
    c.values = n == 1 ? Values::kRegression : Values::kLogits;
    const Batch b = MakeBatch(c, 5 + n);
    const Result want = OnCpu(objective, b, c.batch, 1.0f / 64, true);
    const Result got = OnGpu(**gpu, b, c.batch, 1.0f / 64, true);
    EXPECT_LE(std::fabs(got.loss - want.loss) / std::max(std::fabs(want.loss), 1e-6), kTolerance);
    EXPECT_LE(RelErr(got.grad, want.grad), kTolerance);
    EXPECT_EQ(got.sums, want.sums);
  }
#endif
}

}  // namespace
}  // namespace ringtrain::gpu
