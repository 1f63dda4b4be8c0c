// Metrics on crafted batches: Keras' accuracies and their ties, in_top_k, AUC against
// an exact rank AUC and against Keras' summation formulas on crafted counts.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "nn/initializers/init.h"
#include "nn/metrics/metric_auc.h"
#include "nn/metrics/metrics.h"

namespace ringtrain::nn {
namespace {

using Json = nlohmann::json;

std::vector<std::unique_ptr<Metric>> Make(const Json& metrics, const Json& loss, int n) {
  auto m = MetricsFromJson(metrics, loss, n);
  EXPECT_TRUE(m.ok()) << metrics.dump() << ": " << m.status().ToString();
  return m.ok() ? std::move(*m) : std::vector<std::unique_ptr<Metric>>{};
}

double Evaluate(const Metric& m, const std::vector<float>& out, const std::vector<int32_t>& labels) {
  std::vector<double> sums(m.num_sums(), 0.0);
  m.Accumulate(out.data(), labels.data(), labels.size(), sums.data());
  return m.Result(sums.data());
}

const Json kSparse = {{"type", "sparse_categorical_crossentropy"}, {"from_logits", true}};

TEST(MetricsTest, CategoricalAccuraciesTakeTheFirstMaximum) {
  // Ties go to the first index, as tf.argmax.
  const std::vector<float> out = {0.3f, 0.3f, 0.1f,   // label 0: hit (argmax 0)
                                  0.3f, 0.3f, 0.1f,   // label 1: miss
                                  0.1f, 0.2f, 0.7f,   // label 2: hit
                                  0.5f, 0.4f, 0.1f};  // label 1: miss
  const std::vector<int32_t> labels = {0, 1, 2, 1};
  for (const char* type : {"sparse_categorical_accuracy", "categorical_accuracy", "accuracy", "CategoricalAccuracy"}) {
    auto m = Make(Json::array({type}), kSparse, 3);
    ASSERT_EQ(m.size(), 1u);
    EXPECT_EQ(Evaluate(*m[0], out, labels), 0.5) << type;
  }
  // A label out of range matches nothing.
  EXPECT_EQ(Evaluate(*NewAccuracy(AccuracyKind::kSparseCategorical, "a", 3), {0.9f, 0.0f, 0.0f}, {5}), 0.0);
}

TEST(MetricsTest, AccuracyResolvesAsKerasCompile) {
  auto sparse = Make({"accuracy", "acc"}, kSparse, 3);
  EXPECT_EQ(sparse[0]->name(), "accuracy");
  EXPECT_EQ(sparse[1]->name(), "acc");
  // One output: binary accuracy at 0.5, whatever from_logits says (Keras does the
  // same): a logit of 0.4 counts as negative, 0.6 as positive.
  auto binary = Make({"accuracy"}, {{"type", "binary_crossentropy"}, {"from_logits", true}}, 1);
  EXPECT_EQ(Evaluate(*binary[0], {0.4f, 0.6f, 0.5f, -3.0f}, {0, 1, 1, 0}), 0.75);
  auto categorical = Make({"accuracy"}, {{"type", "categorical_crossentropy"}}, 2);
  EXPECT_EQ(Evaluate(*categorical[0], {0.2f, 0.8f, 0.6f, 0.4f}, {1, 1}), 0.5);
}

TEST(MetricsTest, BinaryAccuracyThresholdIsStrict) {
  auto m = Make({"binary_accuracy"}, "binary_crossentropy", 1);
  EXPECT_EQ(m[0]->name(), "binary_accuracy");
  // 0.5 is not > 0.5: predicted 0.
  EXPECT_EQ(Evaluate(*m[0], {0.5f, 0.51f, 0.2f, 0.9f}, {1, 1, 0, 0}), 0.5);
  auto logits = Make({{{"type", "binary_accuracy"}, {"threshold", 0}, {"name", "acc0"}}}, "binary_crossentropy", 1);
  EXPECT_EQ(logits[0]->name(), "acc0");
  EXPECT_EQ(Evaluate(*logits[0], {-0.1f, 0.1f, 0.0f}, {0, 1, 1}), 2.0 / 3);
  // Several outputs: the one-hot target per output, a mean per example.
  auto multi = NewAccuracy(AccuracyKind::kBinary, "b", 3);
  EXPECT_DOUBLE_EQ(Evaluate(*multi, {0.6f, 0.7f, 0.1f, 0.0f, 0.0f, 0.9f}, {1, 2}), (2.0 / 3 + 1.0) / 2);
}

TEST(MetricsTest, TopKFollowsInTopKTies) {
  auto m = Make({{{"type", "sparse_top_k_categorical_accuracy"}, {"k", 1}}}, kSparse, 4);
  EXPECT_EQ(m[0]->name(), "sparse_top_k_categorical_accuracy");
  // All tied at the top: every tied class is in the top 1.
  EXPECT_EQ(Evaluate(*m[0], {0.5f, 0.5f, 0.5f, 0.1f}, {2}), 1.0);
  EXPECT_EQ(Evaluate(*m[0], {0.5f, 0.5f, 0.5f, 0.1f}, {3}), 0.0);
  auto k2 = NewTopKAccuracy("t", 4, 2);
  EXPECT_EQ(Evaluate(*k2, {0.9f, 0.5f, 0.5f, 0.1f, 0.9f, 0.8f, 0.5f, 0.1f}, {2, 2}), 0.5);
  // A non-finite output in the row is a miss.
  EXPECT_EQ(Evaluate(*k2, {NAN, 0.5f, 0.9f, 0.1f}, {2}), 0.0);
  EXPECT_EQ(Evaluate(*k2, {INFINITY, 0.5f, 0.9f, 0.1f}, {2}), 0.0);
  // Default k = 5 of 10.
  auto k5 = Make({"top_k_categorical_accuracy"}, {{"type", "categorical_crossentropy"}}, 10);
  std::vector<float> row = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0};
  EXPECT_EQ(Evaluate(*k5[0], row, {4}), 1.0);
  EXPECT_EQ(Evaluate(*k5[0], row, {5}), 0.0);
}

TEST(MetricsTest, SumsAddAcrossBatches) {
  auto m = NewAccuracy(AccuracyKind::kSparseCategorical, "a", 2);
  const std::vector<float> out = {1, 0, 0, 1, 1, 0};
  const std::vector<int32_t> labels = {0, 0, 1};
  std::vector<double> one(2, 0.0), split(2, 0.0);
  m->Accumulate(out.data(), labels.data(), 3, one.data());
  m->Accumulate(out.data(), labels.data(), 1, split.data());
  m->Accumulate(out.data() + 2, labels.data() + 1, 2, split.data());
  EXPECT_EQ(one, split);
  EXPECT_EQ(m->Result(one.data()), 1.0 / 3);
  std::vector<double> none(2, 0.0);
  EXPECT_EQ(m->Result(none.data()), 0.0);
}

// The exact ROC AUC: the fraction of (positive, negative) pairs ranked right, ties 1/2.
double RankAuc(const std::vector<float>& p, const std::vector<int32_t>& y) {
  double right = 0, pairs = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    for (size_t j = 0; j < p.size(); ++j) {
      if (y[i] != 1 || y[j] != 0) continue;
      pairs += 1;
      right += p[i] > p[j] ? 1.0 : p[i] == p[j] ? 0.5 : 0.0;
    }
  }
  return right / pairs;
}

TEST(MetricsTest, AucEqualsRankAucWhenEveryExampleHasItsBucket) {
  // Predictions in distinct buckets (k + 0.5) / 199: the ROC curve is exact and the
  // trapezoids give the rank AUC.
  Rng rng(11, 0);
  std::vector<float> p;
  std::vector<int32_t> y;
  for (int k = 0; k < 199; k += 3) {
    p.push_back((k + 0.5f) / 199);
    y.push_back(rng.Uniform() < 0.3f + 0.4f * k / 199 ? 1 : 0);
  }
  auto m = Make({"auc"}, "binary_crossentropy", 1);
  ASSERT_EQ(m[0]->num_sums(), 800);
  EXPECT_NEAR(Evaluate(*m[0], p, y), RankAuc(p, y), 1e-12);
  // From logits: the sigmoid first; logit(p) gives the same buckets.
  std::vector<float> logits;
  for (float v : p) logits.push_back(static_cast<float>(std::log(v / (1.0 - v))));
  AucOptions o;
  o.from_logits = true;
  EXPECT_NEAR(Evaluate(*NewAuc(o), logits, y), RankAuc(p, y), 1e-12);
}

TEST(MetricsTest, AucCountsAndSummationOnCraftedCounts) {
  // T = 3: thresholds -eps, 0.5, 1 + eps. Positives at 0.7, 0.3; negatives at 0.6, 0.1;
  // 0.5 itself is not above 0.5.
  AucOptions o;
  o.num_thresholds = 3;
  std::vector<double> sums(12, 0.0);
  const std::vector<float> p = {0.7f, 0.3f, 0.6f, 0.1f, 0.5f, 1.5f, -0.5f, NAN};
  const std::vector<int32_t> y = {1, 1, 0, 0, 1, 1, 0, 0};
  NewAuc(o)->Accumulate(p.data(), y.data(), p.size(), sums.data());
  // 1.5 counts as 1 and -0.5 as 0 (clipped); NaN lies above no threshold.
  const std::vector<double> want = {4, 2, 0,    // tp
                                    3, 1, 0,    // fp (NaN counts at none)
                                    1, 3, 4,    // tn
                                    0, 2, 4};   // fn
  EXPECT_EQ(sums, want);
  // Keras' formulas on these counts, by hand. ROC: TPR {1, .5, 0}, FPR {.75, .25, 0}.
  const double roc = 0.5 * (1 + 0.5) / 2 + 0.25 * (0.5 + 0) / 2;
  EXPECT_DOUBLE_EQ(NewAuc(o)->Result(sums.data()), roc);
  o.summation = AucOptions::Summation::kMinoring;
  EXPECT_DOUBLE_EQ(NewAuc(o)->Result(sums.data()), 0.5 * 0.5 + 0.25 * 0);
  o.summation = AucOptions::Summation::kMajoring;
  EXPECT_DOUBLE_EQ(NewAuc(o)->Result(sums.data()), 0.5 * 1 + 0.25 * 0.5);
  // PR, minoring: recall {1, .5, 0}, precision {4/7, 2/3, 0 (0/0)}.
  o.pr_curve = true;
  o.summation = AucOptions::Summation::kMinoring;
  EXPECT_DOUBLE_EQ(NewAuc(o)->Result(sums.data()), 0.5 * (4.0 / 7) + 0.5 * 0);
  // PR, interpolation (interpolate_pr_auc), term by term:
  //   k=0: dtp 2, P 7 -> 3, slope 2/4, intercept 2 - 1.5 = .5, ratio 7/3, / (tp+fn)[1] = 4
  //   k=1: dtp 2, P 3 -> 0, slope 2/3, intercept 0, ratio 1 (P[2] = 0), / 4
  o.summation = AucOptions::Summation::kInterpolation;
  const double pr = 0.5 * (2 + 0.5 * std::log(7.0 / 3)) / 4 + (2.0 / 3) * 2 / 4;
  EXPECT_NEAR(NewAuc(o)->Result(sums.data()), pr, 1e-15);
  // Nothing accumulated: 0, not NaN.
  std::vector<double> zero(12, 0.0);
  EXPECT_EQ(NewAuc(o)->Result(zero.data()), 0.0);
}

TEST(MetricsTest, JsonFormsAndErrors) {
  auto m = Make({{{"class_name", "AUC"}, {"config", {{"num_thresholds", 50}, {"curve", "PR"}, {"name", "pr_auc"}}}},
                 "AUC"},
                "binary_crossentropy", 1);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0]->name(), "pr_auc");
  EXPECT_EQ(m[0]->num_sums(), 200);
  EXPECT_EQ(m[1]->name(), "auc");
  EXPECT_TRUE(Make(nullptr, kSparse, 3).empty());

  struct Case {
    Json metrics;
    Json loss;
    int n;
    const char* needle;
  };
  const Case cases[] = {
      {{"f1_score"}, kSparse, 3, "metrics[0]: unknown metric 'type' \"f1_score\""},
      {"accuracy", kSparse, 3, "must be a list"},
      {{"accuracy", 7}, kSparse, 3, "metrics[1]: must be a metric name"},
      {{"accuracy", "accuracy"}, kSparse, 3, "a second metric named \"accuracy\""},
      {{{{"type", "top_k_categorical_accuracy"}, {"k", 0}}}, kSparse, 3, "'k' must be a positive integer"},
      {{{{"type", "accuracy"}, {"threshold", 0}}}, kSparse, 3, "unknown field 'threshold'"},
      {{{{"type", "auc"}, {"num_thresholds", 1}}}, "binary_crossentropy", 1, "'num_thresholds' must be > 1"},
      {{{{"type", "auc"}, {"curve", "DET"}}}, "binary_crossentropy", 1, "'curve'"},
      {{{{"type", "auc"}, {"summation_method", "simpson"}}}, "binary_crossentropy", 1, "'summation_method'"},
      {{{{"type", "auc"}, {"multi_label", true}}}, "binary_crossentropy", 1, "'multi_label'"},
      {{{{"type", "auc"}, {"thresholds", {0.5}}}}, "binary_crossentropy", 1, "'thresholds'"},
      {{"auc"}, kSparse, 3, "one unit"},
      {{"accuracy"}, "hinge", 3, "loss: unknown 'type'"},
  };
  for (const Case& c : cases) {
    auto r = MetricsFromJson(c.metrics, c.loss, c.n);
    ASSERT_FALSE(r.ok()) << c.metrics.dump();
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
    EXPECT_EQ(r.status().subject(), Subject::kConfig);
    EXPECT_NE(r.status().message().find(c.needle), std::string::npos)
        << c.metrics.dump() << " -> " << r.status().message();
  }
}

// Keras' MeanIoU docstring: y_true [0, 0, 1, 1], y_pred [0, 1, 0, 1] give the confusion
// matrix [[1, 1], [1, 1]] and a mean IoU of 1/3; here y_pred is the argmax of the scores.
TEST(MetricsTest, MeanIouAsKerasDocuments) {
  auto m = Make(Json::array({{{"type", "mean_iou"}, {"num_classes", 2}}}), "sparse_categorical_crossentropy", 2);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0]->name(), "mean_io_u");
  EXPECT_NEAR(Evaluate(*m[0], {0.9f, 0.1f, 0.2f, 0.8f, 0.6f, 0.4f, 0.3f, 0.7f}, {0, 0, 1, 1}), 1.0 / 3.0, 1e-12);
  // A class absent from labels and predictions does not count; one predicted but never true
  // does (IoU 0): 3 classes, truth 0 0 1, predicted 0 2 1 -> IoU 1/2, 1, 0 -> mean 1/2.
  auto three = Make(Json::array({{{"class_name", "MeanIoU"}, {"config", {{"num_classes", 3}, {"name", "miou"}}}}}),
                    "sparse_categorical_crossentropy", 3);
  ASSERT_EQ(three.size(), 1u);
  EXPECT_EQ(three[0]->name(), "miou");
  EXPECT_NEAR(Evaluate(*three[0], {1, 0, 0, 0, 0, 1, 0, 1, 0}, {0, 0, 1}), 0.5, 1e-12);
  // ignore_class skips those labels; equal maxima take the first (tf.argmax).
  auto ignoring = Make(Json::array({{{"type", "mean_iou"}, {"num_classes", 2}, {"ignore_class", 1}}}),
                       "sparse_categorical_crossentropy", 2);
  ASSERT_EQ(ignoring.size(), 1u);
  EXPECT_NEAR(Evaluate(*ignoring[0], {0.5f, 0.5f, 0.0f, 1.0f}, {0, 1}), 1.0, 1e-12);
}

TEST(MetricsTest, MeanIouRefusesWhatItCannotCompute) {
  for (const auto& [entry, says] : std::vector<std::pair<Json, std::string>>{
           {{{"type", "mean_iou"}}, "'num_classes' is required"},
           {{{"type", "mean_iou"}, {"num_classes", 3}}, "'num_classes' is 3 but the model's output has 2"},
           {{{"type", "mean_iou"}, {"num_classes", 2}, {"sparse_y_pred", true}}, "'sparse_y_pred' must be false"},
           {{{"type", "mean_iou"}, {"num_classes", 2}, {"axis", 1}}, "'axis' must be -1"}}) {
    auto m = MetricsFromJson(Json::array({entry}), "sparse_categorical_crossentropy", 2);
    ASSERT_FALSE(m.ok()) << entry.dump();
    EXPECT_NE(m.status().message().find(says), std::string::npos) << m.status().message();
  }
}

}  // namespace
}  // namespace ringtrain::nn
