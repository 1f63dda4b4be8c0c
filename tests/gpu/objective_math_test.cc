// backends/cuda/objective_math.h on the host against the CPU's losses (nn/losses) and
// metrics (nn/metrics) as engine::Objective builds them. The GPU objective's kernels
// (objective_kernels.cu) are loops over these functions and CI has no GPU, so this is
// where their arithmetic is proven: each test runs the functions in the kernels' loops
// (one example per thread, one gradient element per thread, the sums in example order
// from 0, AUC's counts per threshold) and expects the CPU's bits. Also the recovery of
// a metric's parameters from its sums (om::IdentifyMetric), which GpuObjective::Create
// relies on, and its refusal of a metric it cannot reproduce.
#include "backends/cuda/objective_math.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/objective.h"
#include "nn/losses/loss.h"
#include "nn/metrics/metric_auc.h"
#include "nn/metrics/metrics.h"

namespace ringtrain::gpu {
namespace {

using Json = nlohmann::json;

// Equal bits, or both NaN (a NaN's payload is not part of the contract).
bool SameDouble(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::memcmp(&a, &b, sizeof a) == 0;
}
bool SameFloat(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::memcmp(&a, &b, sizeof a) == 0;
}

// GpuObjective's DescribeLoss (objective_kernels.cc), which the host cannot link.
om::LossParams ParamsOf(const nn::LossConfig& c) {
  om::LossFamily family = om::LossFamily::kSparseCategorical;
  switch (c.kind) {
    case nn::LossKind::kSparseCategoricalCrossentropy: family = om::LossFamily::kSparseCategorical; break;
    case nn::LossKind::kCategoricalCrossentropy: family = om::LossFamily::kCategorical; break;
    case nn::LossKind::kBinaryCrossentropy: family = om::LossFamily::kBinary; break;
    case nn::LossKind::kMeanSquaredError: family = om::LossFamily::kSquared; break;
    case nn::LossKind::kMeanAbsoluteError: family = om::LossFamily::kAbsolute; break;
  }
  return om::MakeLossParams(family, c.from_logits, c.label_smoothing, c.num_outputs);
}

engine::Objective MakeObjective(const Json& loss, const Json& metrics, int n) {
  auto o = engine::Objective::FromJson(loss, metrics, n);
  EXPECT_TRUE(o.ok()) << loss.dump() << " " << metrics.dump() << ": " << o.status().ToString();
  return std::move(o).value();
}

// ---------------------------------------------------------------- batches

struct Batch {
  int size = 0;
  std::vector<float> outputs;
  std::vector<int32_t> labels;
};

enum class Values { kLogits, kProbabilityRows, kProbabilities, kRegression };

// Outputs as each loss expects them, with the edges that matter: ties, clipped
// probabilities (0, 1, below eps, above 1 - eps), large logits. Labels valid for the
// loss, or with `bad_labels` some the loss cannot take.
Batch MakeBatch(const om::LossParams& p, Values values, int size, uint32_t seed, bool bad_labels) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  std::uniform_int_distribution<int> pick(0, 15);
  const int n = p.n;
  Batch b;
  b.size = size;
  b.outputs.resize(static_cast<size_t>(size) * n);
  b.labels.resize(size);
  for (int i = 0; i < size; ++i) {
    float* x = b.outputs.data() + static_cast<size_t>(i) * n;
    for (int o = 0; o < n; ++o) {
      const int r = pick(gen);
      switch (values) {
        case Values::kLogits:
          x[o] = r == 0 ? 40.0f : r == 1 ? -35.0f : r == 2 ? 1.25f : -6.0f + 12.0f * u(gen);
          break;
        case Values::kProbabilities:
        case Values::kProbabilityRows:
          x[o] = r == 0 ? 0.0f : r == 1 ? 1.0f : r == 2 ? 1e-9f : r == 3 ? 0.99999994f : r == 4 ? 1e-7f : u(gen);
          break;
        case Values::kRegression:
          x[o] = r == 0 ? 0.0f : r == 1 ? 1.0f : -2.0f + 5.0f * u(gen);
          break;
      }
    }
    if (values == Values::kProbabilityRows && pick(gen) < 12) {
      // Most rows a softmax-like distribution (what a softmax layer gives).
      float s = 0;
      for (int o = 0; o < n; ++o) s += x[o];
      for (int o = 0; o < n; ++o) x[o] = s > 0 ? x[o] / s : 1.0f / n;
    }
    int32_t y;
    if (n == 1) {
      y = p.family == om::LossFamily::kBinary ? pick(gen) % 2 : pick(gen) - 5;  // regression: any number
    } else {
      y = pick(gen) % n;
    }
    if (bad_labels && pick(gen) < 4) y = pick(gen) % 2 == 0 ? -1 : n + (n == 1 ? 1 : 0);
    b.labels[i] = y;
  }
  return b;
}

// ---------------------------------------------------------------- losses

struct LossRun {
  double loss = 0;
  std::vector<float> grad;
};

// The kernels' loops: LossRowKernel (one example per thread), LossGradKernel (one
// element per thread), OrderedSumKernel (example order from 0).
LossRun RunLikeKernels(const om::LossParams& p, const Batch& b, float grad_scale) {
  const int n = p.n;
  std::vector<double> rows(b.size);
  std::vector<om::RowStats> stats(b.size);
  for (int i = 0; i < b.size; ++i) {
    om::RowStats st;
    rows[i] = om::LossRow(p, b.outputs.data() + static_cast<size_t>(i) * n, b.labels[i], &st);
    stats[i] = st;
  }
  LossRun r;
  for (int i = 0; i < b.size; ++i) r.loss += rows[i];
  r.grad.resize(b.outputs.size());
  for (size_t e = 0; e < r.grad.size(); ++e) {
    const size_t row = e / n;
    const int c = static_cast<int>(e - row * n);
    r.grad[e] = om::LossGrad(p, b.outputs.data() + row * n, c, b.labels[row], stats[row], grad_scale);
  }
  return r;
}

struct LossCase {
  Json loss;
  int n;
  Values values;
};

std::vector<LossCase> LossCases() {
  std::vector<LossCase> cases;
  for (int n : {2, 7}) {
    for (bool logits : {true, false}) {
      const Values v = logits ? Values::kLogits : Values::kProbabilityRows;
      cases.push_back({{{"type", "sparse_categorical_crossentropy"}, {"from_logits", logits}}, n, v});
      for (double s : {0.0, 0.1}) {
        cases.push_back(
            {{{"type", "categorical_crossentropy"}, {"from_logits", logits}, {"label_smoothing", s}}, n, v});
      }
    }
  }
  for (int n : {1, 4}) {
    for (bool logits : {true, false}) {
      for (double s : {0.0, 0.2}) {
        cases.push_back({{{"type", "binary_crossentropy"}, {"from_logits", logits}, {"label_smoothing", s}},
                         n,
                         logits ? Values::kLogits : Values::kProbabilities});
      }
    }
    cases.push_back({"mse", n, Values::kRegression});
    cases.push_back({"mae", n, Values::kRegression});
  }
  return cases;
}

TEST(ObjectiveMathLosses, ClipBoundsAreTheCpus) {
  EXPECT_EQ(om::kProbabilityEpsilon, nn::kProbabilityEpsilon);
  EXPECT_EQ(om::kProbabilityOneMinusEpsilon, nn::kProbabilityOneMinusEpsilon);
  EXPECT_TRUE(om::IsFinite(om::kFloatMax));
  EXPECT_FALSE(om::IsFinite(INFINITY));
  EXPECT_FALSE(om::IsFinite(NAN));
  EXPECT_TRUE(om::IsNan(NAN));
}

TEST(ObjectiveMathLosses, MakeLossParamsPicksTheCpusCodePath) {
  using om::LossFamily;
  using om::LossForm;
  EXPECT_EQ(om::MakeLossParams(LossFamily::kSparseCategorical, true, 0, 3).form, LossForm::kSoftmax);
  EXPECT_EQ(om::MakeLossParams(LossFamily::kSparseCategorical, false, 0, 3).form, LossForm::kSparseProbs);
  EXPECT_EQ(om::MakeLossParams(LossFamily::kCategorical, true, 0, 3).form, LossForm::kSoftmax);
  EXPECT_EQ(om::MakeLossParams(LossFamily::kCategorical, true, 0.1, 3).form, LossForm::kSoftmaxSmoothed);
  EXPECT_EQ(om::MakeLossParams(LossFamily::kCategorical, false, 0.1, 3).form, LossForm::kCategoricalProbs);
  EXPECT_EQ(om::MakeLossParams(LossFamily::kBinary, true, 0, 1).form, LossForm::kBinaryLogits);
  EXPECT_EQ(om::MakeLossParams(LossFamily::kBinary, false, 0, 1).form, LossForm::kBinaryProbs);
  EXPECT_EQ(om::MakeLossParams(LossFamily::kSquared, false, 0, 1).form, LossForm::kSquared);
  EXPECT_EQ(om::MakeLossParams(LossFamily::kAbsolute, false, 0, 1).form, LossForm::kAbsolute);
}

// Every loss the CPU has, with and without from_logits and label smoothing, over one
// and several outputs: the loss sum and every gradient element are the CPU's bits,
// with valid labels and with labels the loss cannot take (a NaN sum, the CPU's rows).
TEST(ObjectiveMathLosses, EveryLossIsTheCpusBits) {
  uint32_t seed = 1;
  for (const LossCase& c : LossCases()) {
    for (bool bad : {false, true}) {
      SCOPED_TRACE(c.loss.dump() + " over " + std::to_string(c.n) + (bad ? " outputs, bad labels" : " outputs"));
      const engine::Objective objective = MakeObjective(c.loss, nullptr, c.n);
      const om::LossParams p = ParamsOf(objective.loss().config());
      const Batch b = MakeBatch(p, c.values, 53, seed++, bad);
      const float scale = 1.0f / 96;
      std::vector<float> want_grad(b.outputs.size(), -7.0f);
      const double want = objective.loss().Compute(b.outputs.data(), b.labels.data(), b.size, scale, want_grad.data());
      const LossRun got = RunLikeKernels(p, b, scale);
      EXPECT_TRUE(SameDouble(got.loss, want)) << "loss sum " << got.loss << " vs the CPU's " << want;
      bool any_bad = false;
      for (int32_t y : b.labels) any_bad = any_bad || !om::LabelValid(p, y);
      // The regression losses over one output take any number as the label.
      const bool any_label =
          p.n == 1 && (p.family == om::LossFamily::kSquared || p.family == om::LossFamily::kAbsolute);
      EXPECT_EQ(any_bad, bad && !any_label);
      EXPECT_EQ(std::isnan(want), any_bad) << "a label the loss cannot take makes the sum NaN";
      for (size_t e = 0; e < want_grad.size(); ++e) {
        ASSERT_TRUE(SameFloat(got.grad[e], want_grad[e]))
            << "gradient " << e << ": " << got.grad[e] << " vs the CPU's " << want_grad[e];
      }
      // No gradient (evaluation): the same sum.
      EXPECT_TRUE(SameDouble(objective.loss().Compute(b.outputs.data(), b.labels.data(), b.size, 0.0f, nullptr), want));
    }
  }
}

// ---------------------------------------------------------------- metrics

struct MetricCase {
  Json loss;
  Json metric;
  int n;
  om::MetricParams expect;  // n filled in by the test
};

om::MetricParams Argmax() { return om::MetricParams{}; }
om::MetricParams Binary(double threshold) {
  om::MetricParams m;
  m.form = om::MetricForm::kBinaryAccuracy;
  m.threshold = threshold;
  return m;
}
om::MetricParams TopK(int k) {
  om::MetricParams m;
  m.form = om::MetricForm::kTopK;
  m.k = k;
  return m;
}
om::MetricParams Auc(int t, bool logits) {
  om::MetricParams m;
  m.form = om::MetricForm::kAuc;
  m.num_thresholds = t;
  m.from_logits = logits;
  return m;
}

std::vector<MetricCase> MetricCases() {
  const Json sparse = {{"type", "sparse_categorical_crossentropy"}, {"from_logits", true}};
  const Json categorical = "categorical_crossentropy";
  const Json binary = {{"type", "binary_crossentropy"}, {"from_logits", true}};
  std::vector<MetricCase> cases;
  for (int n : {2, 5}) {
    cases.push_back({sparse, "accuracy", n, Argmax()});
    cases.push_back({sparse, "acc", n, Argmax()});
    cases.push_back({categorical, "accuracy", n, Argmax()});
    cases.push_back({sparse, "sparse_categorical_accuracy", n, Argmax()});
    cases.push_back({sparse, {{"class_name", "CategoricalAccuracy"}, {"config", {{"name", "ca"}}}}, n, Argmax()});
    cases.push_back({binary, "binary_accuracy", n, Binary(0.5)});
  }
  cases.push_back({binary, "accuracy", 1, Binary(0.5)});
  cases.push_back({binary, "sparse_categorical_accuracy", 1, Argmax()});
  for (int n : {1, 3}) {
    for (double t : {0.5, 0.0, 0.3, -2.5, 0.7, 1e-8, 123.456}) {
      cases.push_back({binary, {{"type", "binary_accuracy"}, {"threshold", t}}, n, Binary(t)});
    }
  }
  for (int n : {1, 4, 6}) {
    for (int k : {1, 2, 3, 5, 10}) {
      cases.push_back({n == 1 ? binary : sparse,
                       {{"type", k % 2 ? "top_k_categorical_accuracy" : "sparse_top_k_categorical_accuracy"}, {"k", k}},
                       n,
                       TopK(std::min(k, n))});
    }
  }
  cases.push_back({sparse, "top_k_categorical_accuracy", 7, TopK(5)});
  for (int t : {2, 3, 4, 7, 200, 1000}) {
    for (bool logits : {false, true}) {
      // Over two thresholds a sigmoid moves no example between buckets: from_logits
      // changes no sum and is recovered as false.
      cases.push_back({binary, {{"type", "auc"}, {"num_thresholds", t}, {"from_logits", logits}}, 1,
                       Auc(t, logits && t >= 3)});
    }
  }
  cases.push_back({binary, {{"type", "auc"}, {"curve", "PR"}, {"summation_method", "majoring"}}, 1, Auc(200, false)});
  cases.push_back({binary, "auc", 1, Auc(200, false)});
  return cases;
}

om::AccumulateFn AccumulateOf(const nn::Metric& metric) {
  return [&metric](const float* outputs, const int32_t* labels, int batch, double* sums) {
    metric.Accumulate(outputs, labels, batch, sums);
  };
}

// Random batches unlike om::CheckBatches' (another generator, other mixes).
Batch MetricBatch(int n, int size, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-0.25f, 1.25f);
  std::uniform_int_distribution<int> pick(0, 31);
  Batch b;
  b.size = size;
  b.outputs.resize(static_cast<size_t>(size) * n);
  b.labels.resize(size);
  for (float& x : b.outputs) {
    const int r = pick(gen);
    x = r == 0 ? NAN : r == 1 ? INFINITY : r == 2 ? -INFINITY : r < 8 ? static_cast<float>(r % 3) * 0.5f : u(gen);
  }
  for (int32_t& y : b.labels) {
    const int r = pick(gen);
    y = r == 0 ? -1 : r == 1 ? n : r == 2 ? 3 : (n == 1 ? r % 2 : r % n);
  }
  return b;
}

// Each metric of metrics.h: its parameters are recovered from its sums, and the
// kernels' per-example functions then give exactly its sums.
TEST(ObjectiveMathMetrics, EveryMetricIsRecoveredAndIsTheCpusCounts) {
  uint32_t seed = 100;
  for (const MetricCase& c : MetricCases()) {
    SCOPED_TRACE(c.metric.dump() + " over " + std::to_string(c.n) + " outputs");
    const engine::Objective objective = MakeObjective(c.loss, Json::array({c.metric}), c.n);
    ASSERT_EQ(objective.metrics().size(), 1u);
    const nn::Metric& metric = *objective.metrics()[0];
    om::MetricParams got;
    std::string why;
    ASSERT_TRUE(om::IdentifyMetric(AccumulateOf(metric), metric.num_sums(), c.n, objective.argmax_accuracy(0), &got,
                                   &why))
        << why;
    EXPECT_EQ(got.form, c.expect.form);
    EXPECT_EQ(got.n, c.n);
    switch (c.expect.form) {
      case om::MetricForm::kArgmaxAccuracy: break;
      case om::MetricForm::kBinaryAccuracy: {
        // The float at or below the threshold: x > threshold iff x > it for every float.
        const float f = static_cast<float>(got.threshold);
        EXPECT_EQ(static_cast<double>(f), got.threshold);
        EXPECT_LE(got.threshold, c.expect.threshold);
        EXPECT_GT(static_cast<double>(std::nextafter(f, INFINITY)), c.expect.threshold);
        break;
      }
      case om::MetricForm::kTopK: EXPECT_EQ(got.k, c.expect.k); break;
      case om::MetricForm::kAuc:
        EXPECT_EQ(got.num_thresholds, c.expect.num_thresholds);
        EXPECT_EQ(got.from_logits, c.expect.from_logits);
        break;
    }
    EXPECT_EQ(om::MetricNumSums(got), metric.num_sums());
    for (int size : {1, 17, 300}) {
      const Batch b = MetricBatch(c.n, size, seed++);
      std::vector<double> want(metric.num_sums(), 0.0);
      metric.Accumulate(b.outputs.data(), b.labels.data(), b.size, want.data());
      const std::vector<double> sums = om::MetricSums(got, b.outputs.data(), b.labels.data(), b.size);
      ASSERT_EQ(sums.size(), want.size());
      for (size_t s = 0; s < want.size(); ++s) {
        ASSERT_TRUE(SameDouble(sums[s], want[s])) << "sum " << s << " of a batch of " << size << ": " << sums[s]
                                                  << " vs the CPU's " << want[s];
      }
    }
  }
}

// A metric no form reproduces is refused, saying why; so is one given the wrong hint.
class MeanOfFirstOutput : public nn::Metric {
 public:
  std::string name() const override { return "mean_of_first_output"; }
  int num_sums() const override { return 2; }
  void Accumulate(const float* outputs, const int32_t*, int batch, double* sums) const override {
    for (int i = 0; i < batch; ++i) sums[0] += outputs[i * 3];
    sums[1] += batch;
  }
  double Result(const double* sums) const override { return sums[1] == 0 ? 0 : sums[0] / sums[1]; }
};

class SixSums : public nn::Metric {
 public:
  std::string name() const override { return "six_sums"; }
  int num_sums() const override { return 6; }
  void Accumulate(const float*, const int32_t*, int batch, double* sums) const override { sums[0] += batch; }
  double Result(const double*) const override { return 0; }
};

TEST(ObjectiveMathMetrics, UnknownMetricsAreRefused) {
  om::MetricParams got;
  std::string why;
  MeanOfFirstOutput mean;
  EXPECT_FALSE(om::IdentifyMetric(AccumulateOf(mean), mean.num_sums(), 3, false, &got, &why));
  EXPECT_NE(why.find("differ"), std::string::npos) << why;
  EXPECT_FALSE(om::IdentifyMetric(AccumulateOf(mean), mean.num_sums(), 3, true, &got, &why));
  SixSums six;
  EXPECT_FALSE(om::IdentifyMetric(AccumulateOf(six), six.num_sums(), 1, false, &got, &why));
  EXPECT_NE(why.find("6 sums"), std::string::npos) << why;
  // Top-k said to be an argmax accuracy: ties tell them apart.
  auto top = nn::NewTopKAccuracy("t", 4, 1);
  EXPECT_FALSE(om::IdentifyMetric(AccumulateOf(*top), top->num_sums(), 4, true, &got, &why));
}

// AUC's per-threshold counting (AucSumsKernel's loop) against the CPU's segment sums and
// cumulative sums, at bucket edges where float32 rounding decides.
TEST(ObjectiveMathMetrics, AucBucketEdges) {
  for (int t : {3, 200}) {
    for (bool logits : {false, true}) {
      auto metric = nn::NewAuc(nn::AucOptions{"auc", t, false, nn::AucOptions::Summation::kInterpolation, logits});
      om::MetricParams m = Auc(t, logits);
      m.n = 1;
      Batch b;
      for (int k = 0; k < t; ++k) {
        const float edge = static_cast<float>(k) / static_cast<float>(t - 1);
        for (float v : {edge, std::nextafter(edge, 2.0f), std::nextafter(edge, -1.0f)}) {
          b.outputs.push_back(logits ? std::log(v / (1 - v)) : v);
          b.labels.push_back(k % 2);
        }
      }
      b.size = static_cast<int>(b.labels.size());
      std::vector<double> want(metric->num_sums(), 0.0);
      metric->Accumulate(b.outputs.data(), b.labels.data(), b.size, want.data());
      const std::vector<double> got = om::MetricSums(m, b.outputs.data(), b.labels.data(), b.size);
      for (size_t s = 0; s < want.size(); ++s) ASSERT_EQ(got[s], want[s]) << "T " << t << " sum " << s;
    }
  }
}

// ---------------------------------------------------------------- whole objective

// GpuObjective::Run's work on the host (the loss, then each metric into its sums, laid
// out as Objective lays them) against the CPU engine's (cpu_engine.cc's Stats).
TEST(ObjectiveMathObjective, WholeObjectiveIsTheCpuEngines) {
  struct Case {
    Json loss;
    Json metrics;
    int n;
  };
  const std::vector<Case> cases = {
      {{{"type", "sparse_categorical_crossentropy"}, {"from_logits", true}},
       {"accuracy", {{"type", "sparse_top_k_categorical_accuracy"}, {"k", 2}}},
       5},
      {{{"type", "categorical_crossentropy"}, {"label_smoothing", 0.1}},
       {"categorical_accuracy", {{"type", "binary_accuracy"}, {"threshold", 0.2}}, "top_k_categorical_accuracy"},
       6},
      {{{"type", "binary_crossentropy"}, {"from_logits", true}},
       {"accuracy",
        {{"type", "auc"}, {"from_logits", true}},
        {{"type", "auc"}, {"num_thresholds", 50}, {"name", "a50"}}},
       1},
      {"mse", {"accuracy", "auc"}, 1},
      {"mae", {"accuracy"}, 3},
  };
  uint32_t seed = 500;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.loss.dump() + " " + c.metrics.dump());
    const engine::Objective objective = MakeObjective(c.loss, c.metrics, c.n);
    const om::LossParams p = ParamsOf(objective.loss().config());
    std::vector<om::MetricParams> metrics;
    for (size_t m = 0; m < objective.metrics().size(); ++m) {
      const nn::Metric& metric = *objective.metrics()[m];
      om::MetricParams params;
      std::string why;
      ASSERT_TRUE(om::IdentifyMetric(AccumulateOf(metric), metric.num_sums(), c.n, objective.argmax_accuracy(m),
                                     &params, &why))
          << why;
      metrics.push_back(params);
    }
    const Values values = p.form == om::LossForm::kSoftmax || p.form == om::LossForm::kBinaryLogits
                              ? Values::kLogits
                              : p.form == om::LossForm::kCategoricalProbs ? Values::kProbabilityRows
                                                                          : Values::kRegression;
    const Batch b = MakeBatch(p, values, 64, seed++, false);
    const float scale = 1.0f / 64;

    std::vector<float> want_grad(b.outputs.size());
    const double want_loss =
        objective.loss().Compute(b.outputs.data(), b.labels.data(), b.size, scale, want_grad.data());
    std::vector<double> want_sums(objective.num_sums(), 0.0);
    objective.Accumulate(b.outputs.data(), b.labels.data(), b.size, want_sums.data());

    const LossRun got = RunLikeKernels(p, b, scale);
    std::vector<double> got_sums;
    for (const om::MetricParams& m : metrics) {
      const std::vector<double> s = om::MetricSums(m, b.outputs.data(), b.labels.data(), b.size);
      got_sums.insert(got_sums.end(), s.begin(), s.end());
    }
    EXPECT_TRUE(SameDouble(got.loss, want_loss));
    for (size_t e = 0; e < want_grad.size(); ++e) ASSERT_TRUE(SameFloat(got.grad[e], want_grad[e])) << e;
    ASSERT_EQ(got_sums.size(), want_sums.size());
    for (size_t s = 0; s < want_sums.size(); ++s) ASSERT_TRUE(SameDouble(got_sums[s], want_sums[s])) << "sum " << s;
  }
}

}  // namespace
}  // namespace ringtrain::gpu
