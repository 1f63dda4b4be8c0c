// Loss objects against double-precision references of Keras' formulas
// (keras/src/backend/tensorflow/nn.py and keras/src/losses/losses.py), written here
// independently, and against central differences of those references.
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "nn/initializers/init.h"
#include "nn/losses/loss.h"

namespace ringtrain::nn {
namespace {

using Json = nlohmann::json;
// One example's Keras loss from its outputs (in double) and label.
using Reference = std::function<double(const std::vector<double>&, int32_t)>;

constexpr double kEps = 1e-7f;                               // float32(1e-7), as Keras clips
constexpr double kOneMinusEps = static_cast<float>(1 - 1e-7);

double Clip(double p) { return std::min(std::max(p, kEps), kOneMinusEps); }

std::vector<double> Targets(int32_t label, int n, double smoothing, bool binary) {
  std::vector<double> t(n);
  for (int c = 0; c < n; ++c) {
    const double hot = n == 1 ? label : (c == label ? 1.0 : 0.0);
    t[c] = binary ? hot * (1 - smoothing) + 0.5 * smoothing : hot * (1 - smoothing) + smoothing / n;
  }
  return t;
}

Reference SoftmaxCe(double smoothing) {
  return [smoothing](const std::vector<double>& x, int32_t y) {
    double e = 0;
    for (double v : x) e += std::exp(v);
    const std::vector<double> t = Targets(y, x.size(), smoothing, false);
    double l = 0;
    for (size_t c = 0; c < x.size(); ++c) l -= t[c] * (x[c] - std::log(e));
    return l;
  };
}

Reference CategoricalFromProbabilities(double smoothing) {
  return [smoothing](const std::vector<double>& p, int32_t y) {
    double s = 0;
    for (double v : p) s += v;
    const std::vector<double> t = Targets(y, p.size(), smoothing, false);
    double l = 0;
    for (size_t c = 0; c < p.size(); ++c) l -= t[c] * std::log(Clip(p[c] / s));
    return l;
  };
}

double SparseFromProbabilities(const std::vector<double>& p, int32_t y) {
  double s = 0;
  for (double v : p) s += Clip(v);
  return -std::log(Clip(p[y]) / s);
}

Reference Binary(bool logits, double smoothing) {
  return [=](const std::vector<double>& x, int32_t y) {
    const std::vector<double> t = Targets(y, x.size(), smoothing, true);
    double l = 0;
    for (size_t o = 0; o < x.size(); ++o) {
      const double p = logits ? 1 / (1 + std::exp(-x[o])) : Clip(x[o]);
      l -= t[o] * std::log(p) + (1 - t[o]) * std::log(1 - p);
    }
    return l / x.size();
  };
}

Reference MeanError(bool squared) {
  return [=](const std::vector<double>& x, int32_t y) {
    const std::vector<double> t = Targets(y, x.size(), 0, true);
    double l = 0;
    for (size_t o = 0; o < x.size(); ++o) l += squared ? (x[o] - t[o]) * (x[o] - t[o]) : std::abs(x[o] - t[o]);
    return l / x.size();
  };
}

std::unique_ptr<Loss> Make(const Json& j, int n) {
  auto loss = Loss::FromJson(j, n);
  EXPECT_TRUE(loss.ok()) << j.dump() << ": " << loss.status().ToString();
  return loss.ok() ? std::move(*loss) : nullptr;
}

// Outputs in (lo, hi): logits, or probabilities away from the clip bounds (rows
// normalised to sum 1 when `normalise`).
std::vector<float> Outputs(int batch, int n, uint64_t seed, float lo, float hi, bool normalise) {
  Rng rng(seed, 0);
  std::vector<float> v(batch * n);
  for (float& x : v) x = lo + (hi - lo) * rng.Uniform();
  if (normalise) {
    for (int i = 0; i < batch; ++i) {
      float s = 0;
      for (int c = 0; c < n; ++c) s += v[i * n + c];
      for (int c = 0; c < n; ++c) v[i * n + c] /= s;
    }
  }
  return v;
}

// The loss sum against the reference, and the gradient against the reference's
// central differences (outputs away from the clip bounds and from |e| = 0 for MAE).
void CheckLoss(Loss& loss, const std::vector<float>& out, const std::vector<int32_t>& labels, const Reference& ref,
               const std::string& what) {
  const int n = loss.num_outputs(), batch = labels.size();
  const float scale = 0.25f;
  std::vector<float> grad(out.size(), -7.0f);
  const double sum = loss.Compute(out.data(), labels.data(), batch, scale, grad.data());
  double expected = 0;
  for (int i = 0; i < batch; ++i) {
    std::vector<double> row(out.begin() + i * n, out.begin() + (i + 1) * n);
    expected += ref(row, labels[i]);
    for (int c = 0; c < n; ++c) {
      const double h = 1e-6;
      std::vector<double> up = row, down = row;
      up[c] += h;
      down[c] -= h;
      const double numeric = (ref(up, labels[i]) - ref(down, labels[i])) / (2 * h) * scale;
      EXPECT_NEAR(grad[i * n + c], numeric, 1e-6 + 1e-5 * std::abs(numeric))
          << what << " example " << i << " output " << c;
    }
  }
  EXPECT_NEAR(sum, expected, 1e-12 * (1 + std::abs(expected))) << what;
  // Null grad: same loss bits; and a second call gives the same bits.
  EXPECT_EQ(loss.Compute(out.data(), labels.data(), batch, scale, nullptr), sum) << what;
  std::vector<float> again(out.size());
  loss.Compute(out.data(), labels.data(), batch, scale, again.data());
  EXPECT_EQ(std::memcmp(again.data(), grad.data(), grad.size() * sizeof(float)), 0) << what;
}

TEST(LossesTest, CrossEntropiesFromLogitsMatchKeras) {
  const int n = 5, batch = 6;
  const std::vector<int32_t> labels = {0, 4, 2, 2, 1, 3};
  const std::vector<float> x = Outputs(batch, n, 1, -4, 4, false);
  CheckLoss(*Make({{"type", "sparse_categorical_crossentropy"}, {"from_logits", true}}, n), x, labels, SoftmaxCe(0),
            "sparse");
  CheckLoss(*Make({{"type", "categorical_crossentropy"}, {"from_logits", true}}, n), x, labels, SoftmaxCe(0),
            "categorical");
  CheckLoss(*Make({{"type", "categorical_crossentropy"}, {"from_logits", true}, {"label_smoothing", 0.1}}, n), x,
            labels, SoftmaxCe(0.1), "categorical smoothed");
  const std::vector<int32_t> bits = {0, 1, 1, 0, 1, 0};
  const std::vector<float> x1 = Outputs(batch, 1, 2, -4, 4, false);
  CheckLoss(*Make({{"type", "binary_crossentropy"}, {"from_logits", true}}, 1), x1, bits, Binary(true, 0), "binary");
  CheckLoss(*Make({{"type", "BinaryCrossentropy"}, {"from_logits", true}, {"label_smoothing", 0.2}}, 1), x1, bits,
            Binary(true, 0.2), "binary smoothed");
  CheckLoss(*Make({{"type", "binary_crossentropy"}, {"from_logits", true}}, n), x, labels, Binary(true, 0),
            "multi-label binary");
}

TEST(LossesTest, CrossEntropiesFromProbabilitiesMatchKeras) {
  const int n = 4, batch = 5;
  const std::vector<int32_t> labels = {3, 0, 1, 2, 1};
  // Rows that do not sum to 1: Keras renormalises for categorical cross-entropy.
  const std::vector<float> p = Outputs(batch, n, 3, 0.05f, 0.6f, false);
  CheckLoss(*Make({{"type", "categorical_crossentropy"}}, n), p, labels, CategoricalFromProbabilities(0), "cat");
  CheckLoss(*Make({{"type", "categorical_crossentropy"}, {"label_smoothing", 0.3}}, n), p, labels,
            CategoricalFromProbabilities(0.3), "cat smoothed");
  CheckLoss(*Make("sparse_categorical_crossentropy", n), p, labels, SparseFromProbabilities, "sparse");
  const std::vector<int32_t> bits = {1, 0, 0, 1, 1};
  const std::vector<float> p1 = Outputs(batch, 1, 4, 0.05f, 0.95f, false);
  CheckLoss(*Make({{"type", "binary_crossentropy"}}, 1), p1, bits, Binary(false, 0), "binary");
  CheckLoss(*Make({{"type", "binary_crossentropy"}, {"label_smoothing", 0.1}}, 1), p1, bits, Binary(false, 0.1),
            "binary smoothed");
  CheckLoss(*Make({{"type", "binary_crossentropy"}}, n), p, labels, Binary(false, 0), "multi-label binary");
}

TEST(LossesTest, MeanErrorsMatchKeras) {
  const int n = 3, batch = 4;
  const std::vector<int32_t> labels = {2, 0, 1, 1};
  const std::vector<float> x = Outputs(batch, n, 5, 0.1f, 0.9f, false);
  CheckLoss(*Make("mse", n), x, labels, MeanError(true), "mse one-hot");
  CheckLoss(*Make({{"type", "mean_absolute_error"}}, n), x, labels, MeanError(false), "mae one-hot");
  // One output: the label is the target value.
  const std::vector<int32_t> values = {3, -2, 0, 7};
  const std::vector<float> y = {2.5f, -1.0f, 0.25f, 9.0f};
  CheckLoss(*Make({{"type", "MeanSquaredError"}}, 1), y, values, MeanError(true), "mse value");
  CheckLoss(*Make({{"type", "mae"}}, 1), y, values, MeanError(false), "mae value");
  // MAE's gradient at a zero error is sign(0) = 0.
  const float exact[3] = {0, 1, 0};
  const int32_t one[1] = {1};
  float g[3];
  EXPECT_EQ(Make("mae", 3)->Compute(exact, one, 1, 1.0f, g), 0.0);
  EXPECT_EQ(g[0], 0.0f);
  EXPECT_EQ(g[1], 0.0f);
}

TEST(LossesTest, SparseFromLogitsKeepsTodaysBits) {
  const int n = 10, batch = 32;
  std::vector<int32_t> labels(batch);
  for (int i = 0; i < batch; ++i) labels[i] = (i * 7) % n;
  const std::vector<float> x = Outputs(batch, n, 6, -20, 20, false);
  std::vector<float> want(x.size()), got(x.size());
  const LossStats s = SparseSoftmaxCrossEntropy(x.data(), labels.data(), batch, n, 1.0f / 64, want.data());
  for (const char* type : {"sparse_categorical_crossentropy", "categorical_crossentropy"}) {
    auto loss = Make({{"type", type}, {"from_logits", true}}, n);
    std::fill(got.begin(), got.end(), 0.0f);
    const double sum = loss->Compute(x.data(), labels.data(), batch, 1.0f / 64, got.data());
    EXPECT_EQ(std::memcmp(&sum, &s.loss_sum, sizeof sum), 0) << type;
    EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0) << type;
  }
}

TEST(LossesTest, LabelSmoothingKnownValues) {
  // Binary: p = 0.3, label 1, smoothing 0.2 -> t = 0.9.
  const float p[1] = {0.3f};
  const int32_t one[1] = {1};
  const double want = -(0.9 * std::log(double{0.3f}) + 0.1 * std::log(1 - double{0.3f}));
  EXPECT_NEAR(Make({{"type", "binary_crossentropy"}, {"label_smoothing", 0.2}}, 1)->Compute(p, one, 1, 1, nullptr),
              want, 1e-15);
  // Categorical, 4 classes, smoothing 0.4 -> t = {0.1, 0.7, 0.1, 0.1}; uniform
  // probabilities give log 4 whatever the target.
  const float u[4] = {0.25f, 0.25f, 0.25f, 0.25f};
  EXPECT_NEAR(Make({{"type", "categorical_crossentropy"}, {"label_smoothing", 0.4}}, 4)->Compute(u, one, 1, 1, nullptr),
              std::log(4.0), 1e-15);
  // Full smoothing (1.0) from logits: the target is uniform and the gradient is
  // softmax - 1/n, zero for equal logits.
  const float z[4] = {2, 2, 2, 2};
  float g[4];
  Make({{"type", "categorical_crossentropy"}, {"from_logits", true}, {"label_smoothing", 1.0}}, 4)
      ->Compute(z, one, 1, 1, g);
  for (float v : g) EXPECT_NEAR(v, 0.0f, 1e-7);
}

TEST(LossesTest, ClippingEdgeCases) {
  const double log_eps = std::log(kEps), log_hi = std::log(kOneMinusEps);
  float g[3];
  // Binary from probabilities at p = 0 and p = 1: the clipped loss, and no gradient.
  const float p[4] = {0.0f, 1.0f, 0.0f, 1.0f};
  const int32_t y[4] = {1, 1, 0, 0};
  float g4[4];
  const double l = Make("binary_crossentropy", 1)->Compute(p, y, 4, 1, g4);
  EXPECT_NEAR(l, -log_eps - log_hi - std::log(1 - kEps) - std::log(1 - kOneMinusEps), 1e-9);
  for (float v : g4) EXPECT_EQ(v, 0.0f);
  // Categorical from probabilities with the label's probability 0: -log(1e-7); the
  // clipped output passes no gradient and the others' terms are zero.
  const float q[3] = {0.0f, 0.5f, 0.5f};
  const int32_t zero[1] = {0};
  EXPECT_NEAR(Make("categorical_crossentropy", 3)->Compute(q, zero, 1, 1, g), -log_eps, 1e-9);
  for (float v : g) EXPECT_EQ(v, 0.0f);
  // Sparse from probabilities, the label's probability 1 and the others 0: the clipped
  // row renormalised, log(hi + 2 eps) - log(hi); the label's gradient 1/s - 1/r.
  const float r[3] = {1.0f, 0.0f, 0.0f};
  EXPECT_NEAR(Make("sparse_categorical_crossentropy", 3)->Compute(r, zero, 1, 1, g),
              std::log(kOneMinusEps + 2 * kEps) - log_hi, 1e-12);
  for (float v : g) EXPECT_EQ(v, 0.0f);  // every output was clipped
  // Logits +-100 stay finite and exact.
  const float big[2] = {100.0f, -100.0f};
  const int32_t by[2] = {0, 1};
  float gb[2];
  const double lb = Make({{"type", "binary_crossentropy"}, {"from_logits", true}}, 1)->Compute(big, by, 2, 1, gb);
  EXPECT_NEAR(lb, 200.0, 1e-9);
  EXPECT_FLOAT_EQ(gb[0], 1.0f);
  EXPECT_FLOAT_EQ(gb[1], -1.0f);
  const float row[3] = {100.0f, -100.0f, 0.0f};
  const int32_t lab[1] = {1};
  const double lc =
      Make({{"type", "categorical_crossentropy"}, {"from_logits", true}, {"label_smoothing", 0.3}}, 3)
          ->Compute(row, lab, 1, 1, g);
  // t = {0.1, 0.8, 0.1}: 0.8 * 200 + 0.1 * 100 (+ tiny terms).
  EXPECT_NEAR(lc, 0.8 * 200 + 0.1 * 100, 1e-9);
  EXPECT_NEAR(g[0], 0.9, 1e-7);
  EXPECT_NEAR(g[1], -0.8, 1e-7);
  EXPECT_NEAR(g[2], -0.1, 1e-7);
}

TEST(LossesTest, LabelsEachLossTakes) {
  const int32_t two[2] = {0, 2};
  EXPECT_TRUE(Make("binary_crossentropy", 3)->CheckLabels(two, 2).ok());
  Status st = Make("binary_crossentropy", 1)->CheckLabels(two, 2);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("label 2 of example 1 is not 0 or 1"), std::string::npos) << st.message();
  EXPECT_TRUE(Make("mse", 1)->CheckLabels(two, 2).ok());  // a value
  EXPECT_FALSE(Make("mse", 2)->CheckLabels(two, 2).ok());
  st = Make("sparse_categorical_crossentropy", 2)->CheckLabels(two, 2);
  EXPECT_NE(st.message().find("outside [0, 2)"), std::string::npos) << st.message();
  const int32_t negative[1] = {-1};
  EXPECT_FALSE(Make("categorical_crossentropy", 4)->CheckLabels(negative, 1).ok());
  // Compute on a bad label: NaN, never a crash.
  const float x[2] = {0.5f, 0.5f};
  float g[2];
  EXPECT_TRUE(std::isnan(Make("binary_crossentropy", 1)->Compute(x, two, 2, 1, g)));
  EXPECT_TRUE(std::isnan(Make("sparse_categorical_crossentropy", 2)->Compute(x, two + 1, 1, 1, g)));
  EXPECT_TRUE(std::isnan(Make("mae", 2)->Compute(x, two + 1, 1, 1, g)));
}

TEST(LossesTest, JsonFormsAndDefaults) {
  auto a = Make({{"type", "sparse_categorical_crossentropy"}}, 3);
  EXPECT_FALSE(a->config().from_logits);  // Keras' default
  EXPECT_EQ(a->kind(), LossKind::kSparseCategoricalCrossentropy);
  auto b = Make({{"class_name", "CategoricalCrossentropy"},
                 {"module", "keras.losses"},
                 {"registered_name", nullptr},
                 {"config",
                  {{"name", "categorical_crossentropy"}, {"reduction", "sum_over_batch_size"}, {"from_logits", true},
                   {"label_smoothing", 0.1}, {"axis", -1}}}},
                3);
  EXPECT_EQ(b->kind(), LossKind::kCategoricalCrossentropy);
  EXPECT_TRUE(b->config().from_logits);
  EXPECT_EQ(b->config().label_smoothing, 0.1);
  auto c = Make({{"class_name", "SparseCategoricalCrossentropy"},
                 {"config", {{"reduction", "auto"}, {"name", "x"}, {"from_logits", true}, {"ignore_class", nullptr}}}},
                3);
  EXPECT_TRUE(c->config().from_logits);
  EXPECT_EQ(Make("MAE", 1)->kind(), LossKind::kMeanAbsoluteError);
  EXPECT_STREQ(Make("mse", 1)->name(), "mean_squared_error");
}

TEST(LossesTest, BadFieldsAreRefusedNamingThem) {
  struct Case {
    Json loss;
    int n;
    const char* needle;
  };
  const Case cases[] = {
      {{{"type", "hinge"}}, 3, "unknown 'type' \"hinge\""},
      {{{"from_logits", true}}, 3, "'type'"},
      {42, 3, "must be a loss name"},
      {{{"type", "sparse_categorical_crossentropy"}, {"label_smoothing", 0.1}}, 3, "unknown field 'label_smoothing'"},
      {{{"type", "mse"}, {"from_logits", true}}, 3, "unknown field 'from_logits'"},
      {{{"type", "categorical_crossentropy"}, {"label_smoothing", 1.5}}, 3, "'label_smoothing'"},
      {{{"type", "categorical_crossentropy"}, {"from_logits", "yes"}}, 3, "'from_logits' must be true or false"},
      {{{"type", "categorical_crossentropy"}, {"axis", 1}}, 3, "'axis' must be -1"},
      {{{"type", "binary_crossentropy"}, {"reduction", "sum"}}, 1, "'reduction'"},
      {{{"type", "sparse_categorical_crossentropy"}, {"ignore_class", 0}}, 3, "'ignore_class'"},
      {{{"type", "categorical_crossentropy"}, {"dtype", "float16"}}, 3, "'dtype'"},
      {{{"type", "categorical_crossentropy"}}, 1, "at least 2"},
      {{{"type", "sparse_categorical_crossentropy"}}, 1, "binary_crossentropy"},
      {{{"class_name", "MeanSquaredError"}, {"config", {{"delta", 1}}}}, 1, "unknown field 'delta'"},
      {{{"class_name", "MeanSquaredError"}, {"cfg", {}}}, 1, "unknown field 'cfg'"},
  };
  for (const Case& c : cases) {
    auto loss = Loss::FromJson(c.loss, c.n);
    ASSERT_FALSE(loss.ok()) << c.loss.dump();
    EXPECT_EQ(loss.status().code(), Code::kInvalidArgument) << c.loss.dump();
    EXPECT_EQ(loss.status().subject(), Subject::kConfig) << c.loss.dump();
    EXPECT_NE(loss.status().message().find(c.needle), std::string::npos)
        << c.loss.dump() << " -> " << loss.status().message();
    EXPECT_EQ(loss.status().message().rfind("loss", 0), 0u) << loss.status().message();
  }
}

// Float targets travel as the float32 bits of the label words: MSE and MAE read any finite
// value, binary cross-entropy a soft target in [0, 1]; anything else makes the loss NaN.
TEST(LossesTest, FloatTargetsAreTheLabelWordsBits) {
  auto word = [](float t) {
    int32_t w;
    std::memcpy(&w, &t, sizeof(w));
    return w;
  };
  LossConfig c;
  c.kind = LossKind::kMeanSquaredError;
  c.num_outputs = 1;
  c.float_targets = true;
  auto mse = Loss::Create(c);
  ASSERT_TRUE(mse.ok()) << mse.status().ToString();
  const std::vector<float> out = {1.5f, -2.0f};
  const std::vector<int32_t> labels = {word(0.5f), word(1.0f)};
  std::vector<float> grad(2);
  EXPECT_DOUBLE_EQ((*mse)->Compute(out.data(), labels.data(), 2, 0.5f, grad.data()), 1.0 + 9.0);
  EXPECT_FLOAT_EQ(grad[0], 2.0f * 1.0f * 0.5f);
  EXPECT_FLOAT_EQ(grad[1], 2.0f * -3.0f * 0.5f);
  const std::vector<int32_t> nan = {word(std::nanf("")), word(1.0f)};
  EXPECT_TRUE(std::isnan((*mse)->Compute(out.data(), nan.data(), 2, 0.5f, grad.data())));

  c.kind = LossKind::kBinaryCrossentropy;
  auto bce = Loss::Create(c);
  ASSERT_TRUE(bce.ok()) << bce.status().ToString();
  const std::vector<float> p = {0.25f};
  const std::vector<int32_t> soft = {word(0.75f)};
  const double r = static_cast<double>(0.25f);
  EXPECT_NEAR((*bce)->Compute(p.data(), soft.data(), 1, 1.0f, nullptr),
              -(0.75 * std::log(r) + 0.25 * std::log(1.0 - r)), 1e-12);
  const std::vector<int32_t> above = {word(1.5f)};
  EXPECT_TRUE(std::isnan((*bce)->Compute(p.data(), above.data(), 1, 1.0f, nullptr)));

  c.kind = LossKind::kSparseCategoricalCrossentropy;
  c.num_outputs = 3;
  EXPECT_FALSE(Loss::Create(c).ok()) << "a class loss takes no float targets";
}

}  // namespace
}  // namespace ringtrain::nn
