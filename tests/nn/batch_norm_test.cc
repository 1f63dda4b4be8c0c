// BatchNormalization against double-precision references of Keras' formulas, central
// differences, the moving statistics' update and their MEAN over replicas, synchronized
// BatchNormalization across replicas run as threads (equal to one model on the whole
// batch), and the refusals. The TensorFlow.js comparisons are in norm_tfjs_test.cc.
#include <cmath>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "nn/layers/batch_norm.h"
#include "nn/layers/dropout.h"
#include "nn/keras/keras_json.h"
#include "nn/model.h"
#include "norm_test_util.h"
#include "testing/source_dir.h"
#include "testing/tfjs_oracle.h"

namespace ringtrain::nn {
namespace {

using nlohmann::json;
using ::ringtrain::testing::AllClose;
using testing::Bind;
using testing::RandomVector;

// Per-channel batch mean and biased variance, in double.
void Moments(const std::vector<float>& x, int c, std::vector<double>* mean, std::vector<double>* var) {
  const size_t rows = x.size() / static_cast<size_t>(c);
  mean->assign(static_cast<size_t>(c), 0.0);
  var->assign(static_cast<size_t>(c), 0.0);
  for (size_t r = 0; r < rows; ++r) {
    for (int k = 0; k < c; ++k) (*mean)[k] += x[r * c + k];
  }
  for (double& m : *mean) m /= static_cast<double>(rows);
  for (size_t r = 0; r < rows; ++r) {
    for (int k = 0; k < c; ++k) (*var)[k] += (x[r * c + k] - (*mean)[k]) * (x[r * c + k] - (*mean)[k]);
  }
  for (double& v : *var) v /= static_cast<double>(rows);
}


TEST(BatchNormTest, TrainingUsesBatchMomentsAndBiasedVariance) {
  auto b = Bind(BatchNorm::Create({{"type", "BatchNormalization"}}, "bn", {3, 2, 4}, "t"));
  ASSERT_NE(b, nullptr);
  b->Set("gamma", RandomVector(4, 1, 0.5f));
  b->Set("beta", RandomVector(4, 2, 0.5f));
  const int batch = 3, c = 4;
  const std::vector<float> x = testing::Shifted(RandomVector(batch * 24, 3), 2.0f, 3.0f);
  const float* out = b->Forward(x.data(), batch, true);
  std::vector<double> mean, var;
  Moments(x, c, &mean, &var);
  for (size_t i = 0; i < x.size(); ++i) {
    const int k = static_cast<int>(i % c);
    const double want = b->param("gamma")[k] * (x[i] - mean[k]) / std::sqrt(var[k] + 0.001) + b->param("beta")[k];
    ASSERT_NEAR(out[i], want, 1e-5 * std::max(1.0, std::abs(want))) << i;
  }
  // The reduced statistics: this batch's mean and biased variance.
  for (int k = 0; k < c; ++k) {
    EXPECT_NEAR(b->stats()[k], mean[k], 1e-6 * std::max(1.0, std::abs(mean[k])));
    EXPECT_NEAR(b->stats()[c + k], var[k], 1e-6 * std::max(1.0, var[k]));
  }
  // Keras: moving = moving * 0.99 + batch * 0.01, from zeros and ones.
  b->ApplyReducedStats(1);
  for (int k = 0; k < c; ++k) {
    EXPECT_NEAR(b->param("moving_mean")[k], 0.01 * mean[k], 1e-6);
    EXPECT_NEAR(b->param("moving_variance")[k], 0.99 + 0.01 * var[k], 1e-6);
  }
}

TEST(BatchNormTest, TrainingGradientsMatchCentralDifferences) {
  for (json config : {json{{"type", "BatchNormalization"}}, json{{"type", "BatchNormalization"}, {"center", false}},
                      json{{"type", "BatchNormalization"}, {"scale", false}, {"epsilon", 0.01}}}) {
    SCOPED_TRACE(config.dump());
    auto b = Bind(BatchNorm::Create(config, "bn", {2, 3, 3}, "t"));
    ASSERT_NE(b, nullptr);
    if (b->layer->ParamSpecs()[0].suffix == "gamma") b->Set("gamma", testing::Shifted(RandomVector(3, 5), 0.5f, 1.0f));
    CheckTrainingGradients(*b, testing::Shifted(RandomVector(4 * 18, 6), 1.5f, 0.5f), 4, 7);
  }
}

TEST(BatchNormTest, InferenceUsesMovingStatistics) {
  auto b = Bind(BatchNorm::Create({{"type", "batch_normalization"}, {"epsilon", 0.01}}, "bn", {5}, "t"));
  ASSERT_NE(b, nullptr);
  b->Set("gamma", RandomVector(5, 1));
  b->Set("beta", RandomVector(5, 2));
  b->Set("moving_mean", RandomVector(5, 3));
  b->Set("moving_variance", testing::Shifted(RandomVector(5, 4), 0.4f, 0.6f));
  const std::vector<float> x = RandomVector(2 * 5, 5, 3.0f);
  const float* out = b->Forward(x.data(), 2, false);
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t k = i % 5;
    const double want = b->param("gamma")[k] * (x[i] - b->param("moving_mean")[k]) /
                            std::sqrt(b->param("moving_variance")[k] + 0.01) + b->param("beta")[k];
    EXPECT_NEAR(out[i], want, 1e-5 * std::max(1.0, std::abs(want))) << i;
  }
}

// Keras 2+: a frozen BatchNormalization runs in inference mode even in training, updates
// no statistics and has no gradients; its input gradient is dy * gamma / sqrt(var + eps).
TEST(BatchNormTest, FrozenRunsInInferenceModeWithoutStatistics) {
  auto b = Bind(BatchNorm::Create({{"type", "BatchNormalization"}}, "bn", {2, 3}, "t"), /*trainable=*/false);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->layer->ReducedStatsSize(), 0u);
  b->Set("gamma", RandomVector(3, 1));
  b->Set("moving_mean", RandomVector(3, 2));
  b->Set("moving_variance", testing::Shifted(RandomVector(3, 3), 0.4f, 0.6f));
  const std::vector<float> x = RandomVector(4 * 6, 4, 2.0f), dy = RandomVector(4 * 6, 5);
  const float* out = b->Forward(x.data(), 4, true);
  const std::vector<float> out_train(out, out + x.size());
  const float* out_inf = b->Forward(x.data(), 4, false);
  EXPECT_EQ(out_train, std::vector<float>(out_inf, out_inf + x.size()));
  b->Forward(x.data(), 4, true);
  const float* din = b->Backward(dy.data(), true);
  ASSERT_NE(din, nullptr);
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t k = i % 3;
    EXPECT_NEAR(din[i], dy[i] * b->param("gamma")[k] / std::sqrt(b->param("moving_variance")[k] + 0.001), 1e-5);
  }
  EXPECT_EQ(b->Backward(dy.data(), false), nullptr);
}

// ---- through nn::Model ------------------------------------------------------------------------

json ConvBnModel(const json& bn) {
  json l = bn;
  l["name"] = "bn";
  return {{"input_shape", {4, 4, 2}},
          {"layers", {{{"type", "Conv2D"}, {"name", "conv"}, {"filters", 3}, {"kernel_size", 3}, {"padding", "same"}},
                      l,
                      {{"type", "Flatten"}},
                      {{"type", "Dense"}, {"name", "dense"}, {"units", 3}}}}};
}

std::unique_ptr<Model> Build(const json& j) {
  auto m = Model::FromJson(j, 7);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m).value() : nullptr;
}

std::vector<float> Weight(const Model& m, const std::string& name) {
  for (const ParamInfo& p : m.param_infos()) {
    if (p.name == name) return std::vector<float>(m.params() + p.offset, m.params() + p.offset + p.count);
  }
  ADD_FAILURE() << "no weight " << name;
  return {};
}

void SetWeight(Model& m, const std::string& name, const std::vector<float>& v) {
  for (const ParamInfo& p : m.param_infos()) {
    if (p.name == name) std::copy(v.begin(), v.end(), m.params() + p.offset);
  }
}

TEST(BatchNormModelTest, WeightsAreKerasNamedAndMovingStatisticsNotTrainable) {
  auto m = Build(ConvBnModel({{"type", "BatchNormalization"}}));
  ASSERT_NE(m, nullptr);
  std::map<std::string, bool> trainable;
  for (const ParamInfo& p : m->param_infos()) trainable[p.name] = p.trainable;
  EXPECT_TRUE(trainable.at("bn/gamma"));
  EXPECT_TRUE(trainable.at("bn/beta"));
  EXPECT_FALSE(trainable.at("bn/moving_mean"));
  EXPECT_FALSE(trainable.at("bn/moving_variance"));
  EXPECT_EQ(Weight(*m, "bn/gamma"), std::vector<float>(3, 1.0f));
  EXPECT_EQ(Weight(*m, "bn/moving_variance"), std::vector<float>(3, 1.0f));
  EXPECT_EQ(m->num_reduced() - m->num_trainable(), 6u);  // batch mean and variance of 3 channels
  EXPECT_NE(m->Summary().find("Non-trainable params: 6"), std::string::npos) << m->Summary();
  const ops::Node& bn = m->graph().nodes[1];
  EXPECT_EQ(bn.op.kind, ops::OpKind::kBatchNorm);
  EXPECT_TRUE(bn.op.training_mode);
  EXPECT_EQ(bn.class_name, "BatchNormalization");
  EXPECT_TRUE(bn.has_frozen_weights());  // the moving statistics

  auto frozen = ConvBnModel({{"type", "BatchNormalization"}});
  frozen["layers"][1]["trainable"] = false;
  auto f = Build(frozen);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->num_reduced(), f->num_trainable());  // a frozen layer contributes no statistics
}

// Keras keeps the moving statistics per replica (ON_READ) and reads their MEAN: the
// model's moving statistics after summing two replicas' reduced statistics equal the mean
// of what each replica alone would hold.
TEST(BatchNormModelTest, ReducedStatisticsAverageLikeKerasMeanAggregation) {
  const json j = ConvBnModel({{"type", "BatchNormalization"}, {"momentum", 0.9}});
  auto a = Build(j), b = Build(j), alone_a = Build(j), alone_b = Build(j);
  ASSERT_TRUE(a && b && alone_a && alone_b);
  const std::vector<float> xa = testing::Shifted(RandomVector(2 * 32, 1), 1.0f, 0.5f);
  const std::vector<float> xb = testing::Shifted(RandomVector(3 * 32, 2), 2.0f, -1.0f);
  a->Forward(xa.data(), 2, true);
  b->Forward(xb.data(), 3, true);
  alone_a->Forward(xa.data(), 2, true);
  alone_b->Forward(xb.data(), 3, true);
  const size_t first = a->num_trainable(), n = a->num_reduced();
  for (size_t i = first; i < n; ++i) a->grads()[i] += b->grads()[i];  // the all-reduce (sum)
  a->ApplyReducedStats(2);
  alone_a->ApplyReducedStats(1);
  alone_b->ApplyReducedStats(1);
  for (const char* w : {"bn/moving_mean", "bn/moving_variance"}) {
    const std::vector<float> got = Weight(*a, w), wa = Weight(*alone_a, w), wb = Weight(*alone_b, w);
    std::vector<float> mean(got.size());
    for (size_t k = 0; k < got.size(); ++k) mean[k] = 0.5f * (wa[k] + wb[k]);
    EXPECT_TRUE(AllClose(got, mean, 1e-6)) << w;
    EXPECT_NE(wa, wb) << "the replicas' statistics must differ for the test to mean anything";
  }
}

// Synchronized BatchNormalization on replicas run as threads equals one model on the
// concatenated batch: outputs, gradients (summed over replicas, as the all-reduce does)
// and the moving statistics.
void CheckSyncEqualsWholeBatch(const json& bn, const std::vector<int>& batches) {
  const json j = ConvBnModel(bn);
  const int replicas = static_cast<int>(batches.size());
  int total = 0;
  for (int b : batches) total += b;
  auto whole = Build(j);
  ASSERT_NE(whole, nullptr);
  SetWeight(*whole, "bn/gamma", testing::Shifted(RandomVector(3, 11), 0.5f, 1.0f));
  SetWeight(*whole, "bn/beta", RandomVector(3, 12));
  const std::vector<float> x = testing::Shifted(RandomVector(total * 32, 13), 1.5f, 0.7f);
  const std::vector<float> dy = RandomVector(total * 3, 14);
  std::vector<std::unique_ptr<Model>> models;
  for (int r = 0; r < replicas; ++r) {
    models.push_back(Build(j));
    ASSERT_NE(models.back(), nullptr);
    std::copy(whole->params(), whole->params() + whole->num_params(), models.back()->params());
  }
  const float* out = whole->Forward(x.data(), total, true);
  const std::vector<float> want_out(out, out + total * 3);
  whole->Backward(dy.data());
  whole->ApplyReducedStats(1);

  testing::ThreadAllReduce reduce(replicas);
  std::vector<std::vector<float>> outs(static_cast<size_t>(replicas));
  std::vector<std::thread> threads;
  int start = 0;
  for (int r = 0; r < replicas; ++r) {
    StepContext ctx;
    ctx.replica = r;
    ctx.num_replicas = replicas;
    ctx.all_reduce_sum = reduce.For(r);
    models[r]->set_step_context(ctx);
    threads.emplace_back([&, r, start] {
      const float* o = models[r]->Forward(x.data() + start * 32, batches[r], true);
      outs[r].assign(o, o + batches[r] * 3);
      models[r]->Backward(dy.data() + start * 3);
    });
    start += batches[r];
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(reduce.calls(), 2) << "one collective in Forward, one in Backward";
  std::vector<float> got_out;
  for (const auto& o : outs) got_out.insert(got_out.end(), o.begin(), o.end());
  EXPECT_TRUE(AllClose(got_out, want_out, 1e-5)) << "forward";
  // The gradient all-reduce (sum) and the statistics' all-reduce.
  std::vector<float> sum(models[0]->num_reduced(), 0.0f);
  for (const auto& m : models) {
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += m->grads()[i];
  }
  const size_t nt = whole->num_trainable();
  EXPECT_TRUE(AllClose(std::vector<float>(sum.begin(), sum.begin() + nt),
                       std::vector<float>(whole->grads(), whole->grads() + nt), 1e-5))
      << "gradients";
  std::copy(sum.begin(), sum.end(), models[0]->grads());
  models[0]->ApplyReducedStats(replicas);
  for (const char* w : {"bn/moving_mean", "bn/moving_variance"}) {
    EXPECT_TRUE(AllClose(Weight(*models[0], w), Weight(*whole, w), 1e-6)) << w;
  }
}

TEST(SyncBatchNormTest, TwoReplicasEqualOneModelOnTheWholeBatch) {
  CheckSyncEqualsWholeBatch({{"type", "BatchNormalization"}, {"synchronized", true}}, {2, 3});
}

TEST(SyncBatchNormTest, ThreeReplicasWithTfKeras2ClassName) {
  CheckSyncEqualsWholeBatch({{"type", "SyncBatchNormalization"}, {"momentum", 0.5}}, {1, 2, 2});
}

// Without all_reduce_sum (one replica) synchronized is plain BatchNormalization.
TEST(SyncBatchNormTest, OneReplicaIsPlainBatchNormalization) {
  auto plain = Build(ConvBnModel({{"type", "BatchNormalization"}}));
  auto sync = Build(ConvBnModel({{"type", "BatchNormalization"}, {"synchronized", true}}));
  ASSERT_TRUE(plain && sync);
  const std::vector<float> x = RandomVector(3 * 32, 1), dy = RandomVector(3 * 3, 2);
  const float* a = plain->Forward(x.data(), 3, true);
  const std::vector<float> out_a(a, a + 9);
  const float* b = sync->Forward(x.data(), 3, true);
  EXPECT_EQ(out_a, std::vector<float>(b, b + 9));
  plain->Backward(dy.data());
  sync->Backward(dy.data());
  EXPECT_EQ(std::vector<float>(plain->grads(), plain->grads() + plain->num_reduced()),
            std::vector<float>(sync->grads(), sync->grads() + sync->num_reduced()));
}

// A failed collective: the layer returns without hanging or crashing, and the trainer
// abandons the step.
TEST(SyncBatchNormTest, FailedCollectiveReturns) {
  auto m = Build(ConvBnModel({{"type", "BatchNormalization"}, {"synchronized", true}}));
  ASSERT_NE(m, nullptr);
  int calls = 0;
  StepContext ctx;
  ctx.num_replicas = 2;
  ctx.all_reduce_sum = [&](float*, size_t) { ++calls; return false; };
  m->set_step_context(ctx);
  const std::vector<float> x = RandomVector(2 * 32, 1), dy = RandomVector(2 * 3, 2);
  m->Forward(x.data(), 2, true);
  m->Backward(dy.data());
  EXPECT_EQ(calls, 2);
}

// ---- refusals ----------------------------------------------------------------------------------

TEST(BatchNormModelTest, BadArgumentsAreRefusedNamingThem) {
  const std::vector<std::pair<json, std::string>> cases = {
      {{{"axis", 1}}, "'axis'"},
      {{{"axis", {1, 2, 3}}}, "'axis'"},
      {{{"axis", 0}}, "'axis'"},
      {{{"axis", "last"}}, "'axis'"},
      {{{"momentum", 1.5}}, "'momentum'"},
      {{{"epsilon", 0}}, "'epsilon'"},
      {{{"center", "yes"}}, "'center'"},
      {{{"synchronized", 1}}, "'synchronized'"},
      {{{"gamma_initializer", "glorot_uniform"}}, "'gamma_initializer'"},
      {{{"beta_initializer", "ones"}}, "'beta_initializer'"},
      {{{"moving_variance_initializer", {{"class_name", "Constant"}, {"config", {{"value", 2}}}}}},
       "'moving_variance_initializer'"},
      {{{"beta_regularizer", {{"class_name", "L2"}, {"config", {{"l2", 0.01}}}}}}, "'beta_regularizer'"},
      {{{"gamma_constraint", "non_neg"}}, "'gamma_constraint'"},
      {{{"renorm", true}}, "'renorm'"},
      {{{"virtual_batch_size", 4}}, "'virtual_batch_size'"},
      {{{"fused", 3}}, "'fused'"},
      {{{"unknown", 1}}, "'unknown'"},
  };
  for (const auto& [args, field] : cases) {
    json bn = args;
    bn["type"] = "BatchNormalization";
    auto m = Model::FromJson(ConvBnModel(bn), 1);
    ASSERT_FALSE(m.ok()) << args.dump();
    EXPECT_NE(m.status().message().find(field), std::string::npos) << m.status().ToString();
    EXPECT_NE(m.status().message().find("(bn)"), std::string::npos) << m.status().ToString();
  }
  auto s = Model::FromJson(ConvBnModel({{"type", "SyncBatchNormalization"}, {"synchronized", false}}), 1);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("'synchronized'"), std::string::npos) << s.status().ToString();
}

TEST(BatchNormModelTest, KerasDefaultsInEveryFormAreAccepted) {
  const json keras = {{"type", "BatchNormalization"}, {"axis", {3}}, {"momentum", 0.99}, {"epsilon", 0.001},
                      {"center", true}, {"scale", true},
                      {"beta_initializer", {{"class_name", "Zeros"}, {"config", json::object()}}},
                      {"gamma_initializer", {{"module", "keras.initializers"}, {"class_name", "Ones"},
                                             {"config", json::object()}, {"registered_name", nullptr}}},
                      {"moving_mean_initializer", "zeros"}, {"moving_variance_initializer", "Ones"},
                      {"beta_regularizer", nullptr}, {"gamma_regularizer", nullptr},
                      {"beta_constraint", nullptr}, {"gamma_constraint", nullptr}, {"synchronized", false},
                      {"renorm", false}, {"renorm_clipping", nullptr}, {"renorm_momentum", 0.99},
                      {"fused", nullptr}, {"virtual_batch_size", nullptr}, {"adjustment", nullptr}};
  EXPECT_NE(Build(ConvBnModel(keras)), nullptr);
  EXPECT_NE(Build(ConvBnModel({{"type", "batch_normalization"}, {"axis", -1}})), nullptr);
}

// Keras 3's own config of BatchNormalization and Dropout (tests/nn/keras_json's
// residual fixture, written by Keras 3), translated to the compact form, builds.
TEST(BatchNormModelTest, Keras3FixtureConfigsBuild) {
  const json keras = json::parse(ringtrain::testing::ReadSourceFile("tests/nn/keras_json/keras3_residual.json"),
                                 nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(keras.is_discarded()) << "tests/nn/keras_json/keras3_residual.json";
  auto compact = KerasJsonToCompact(keras);
  ASSERT_TRUE(compact.ok()) << compact.status().ToString();
  int found = 0;
  for (json l : (*compact)["layers"]) {
    const std::string type = l["type"];
    if (type != "BatchNormalization" && type != "Dropout") continue;
    ++found;
    SCOPED_TRACE(l.dump());
    l.erase("inputs");
    l.erase("trainable");
    const std::string name = l["name"];
    auto made = type == "Dropout" ? Dropout::Create(l, name, {8, 8, 4}, "t") : BatchNorm::Create(l, name, {8, 8, 4}, "t");
    EXPECT_TRUE(made.ok()) << made.status().ToString();
  }
  EXPECT_EQ(found, 3);
}

}  // namespace
}  // namespace ringtrain::nn
