// The CPU engine runs the step protocol of engine/engine.h on the host model and
// optimizer: the same bits as driving nn::Model and nn::Optimizer by hand.
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "engine/engine.h"
#include "store/store.h"

namespace ringtrain::engine {
namespace {

const char kModel[] = R"({"input_shape": [6, 6], "layers": [
  {"type": "reshape", "target_shape": [6, 6, 1]},
  {"type": "conv2d", "filters": 4, "kernel_size": 3, "activation": "relu"},
  {"type": "flatten"},
  {"type": "dense", "units": 5}]})";

struct Fixture {
  std::unique_ptr<nn::Model> model;
  std::unique_ptr<nn::Optimizer> optimizer;
};

Fixture Make() {
  Fixture f;
  f.model = std::move(nn::Model::FromJson(nlohmann::json::parse(kModel), 7)).value();
  f.optimizer = std::move(nn::Optimizer::FromJson({{"type", "adam"}, {"learning_rate", 0.01}})).value();
  return f;
}

void Batch(int step, int batch, float* images, int32_t* labels) {
  std::mt19937 rng(static_cast<uint32_t>(step));
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  for (int i = 0; i < batch * 36; ++i) images[i] = u(rng);
  for (int i = 0; i < batch; ++i) labels[i] = static_cast<int32_t>(rng() % 5);
}

TEST(CpuEngineTest, StepsMatchTheModelDrivenByHand) {
  constexpr int kBatch = 8, kSteps = 4;
  const float scale = 1.0f / kBatch;
  Fixture by_hand = Make();
  std::vector<float> images(kBatch * 36), grad_logits(kBatch * 5);
  std::vector<int32_t> labels(kBatch);
  double hand_loss = 0;
  for (int s = 0; s < kSteps; ++s) {
    Batch(s, kBatch, images.data(), labels.data());
    const float* logits = by_hand.model->Forward(images.data(), kBatch, true);
    hand_loss += nn::SparseSoftmaxCrossEntropy(logits, labels.data(), kBatch, 5, scale, grad_logits.data()).loss_sum;
    by_hand.model->Backward(grad_logits.data());
    by_hand.optimizer->Apply(by_hand.model->params(), by_hand.model->grads(), by_hand.model->num_params());
  }

  Fixture f = Make();
  auto engine = NewCpuEngine(f.model.get(), f.optimizer.get(), kBatch);
  EXPECT_FALSE(engine->on_gpu());
  EXPECT_NE(engine->Describe().find("CPU"), std::string::npos);
  store::InMemoryStore store;
  auto comm = collective::CreateCommunicator(collective::CommunicatorOptions{}, 0, 1, &store);
  ASSERT_TRUE(comm.ok()) << comm.status().ToString();
  EXPECT_EQ(engine->GradientBuffer(**comm), f.model->grads());
  ASSERT_TRUE(engine->LoadFromHost().ok());
  Batch(0, kBatch, engine->next_images(), engine->next_labels());
  ASSERT_TRUE(engine->SubmitBatch(kBatch).ok());
  double loss = 0;
  for (int s = 0; s < kSteps; ++s) {
    ASSERT_TRUE(engine->StartStep(scale).ok());
    if (s + 1 < kSteps) {  // the next batch is filled while the step is under way
      Batch(s + 1, kBatch, engine->next_images(), engine->next_labels());
      ASSERT_TRUE(engine->SubmitBatch(kBatch).ok());
    }
    std::vector<size_t> ready;
    auto stats = engine->FinishBackward([&](size_t offset) { ready.push_back(offset); });
    ASSERT_TRUE(stats.ok()) << stats.status().ToString();
    ASSERT_FALSE(ready.empty());
    EXPECT_EQ(ready.back(), 0u);
    loss += stats->loss_sum;
    ASSERT_TRUE(engine->ApplyUpdate().ok());
  }
  ASSERT_TRUE(engine->StoreToHost().ok());
  EXPECT_EQ(f.optimizer->iterations(), kSteps);
  EXPECT_EQ(loss, hand_loss);
  ASSERT_EQ(f.model->num_params(), by_hand.model->num_params());
  EXPECT_EQ(0, std::memcmp(f.model->params(), by_hand.model->params(), f.model->num_params() * sizeof(float)));

  // Evaluation reads the weights only.
  Batch(99, kBatch, images.data(), labels.data());
  auto eval = engine->Evaluate(images.data(), labels.data(), kBatch);
  ASSERT_TRUE(eval.ok());
  const float* logits = by_hand.model->Forward(images.data(), kBatch, false);
  nn::LossStats want = nn::SparseSoftmaxCrossEntropy(logits, labels.data(), kBatch, 5, 0.0f, nullptr);
  EXPECT_EQ(eval->loss_sum, want.loss_sum);
  // The default objective's one metric, "accuracy": [hits, examples].
  EXPECT_EQ(eval->metric_sums, (std::vector<double>{static_cast<double>(want.correct), kBatch}));
}

TEST(CpuEngineTest, ProtocolErrorsAreReported) {
  Fixture f = Make();
  auto engine = NewCpuEngine(f.model.get(), f.optimizer.get(), 4);
  EXPECT_EQ(engine->StartStep(1.0f).code(), Code::kFailedPrecondition);
  EXPECT_EQ(engine->FinishBackward(nullptr).status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(engine->SubmitBatch(5).code(), Code::kInvalidArgument);
  EXPECT_EQ(engine->SubmitBatch(0).code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace ringtrain::engine
