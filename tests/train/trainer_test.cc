// The trainer on one worker (a size-1 communicator) and on ranks run as threads
// over loopback: learning, determinism, and equal weights on every rank.
#include "train/trainer.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "rank_threads.h"
#include "train/step_observer.h"
#include "testing/small_conv_job.h"

namespace ringtrain::train {
namespace {

config::JobConfig SyntheticJob(int epochs, const std::string& optimizer) {
  auto job = config::ParseJobConfig(R"({
    "model": {"input_shape": [10, 10], "layers": [
      {"type": "reshape", "target_shape": [10, 10, 1]},
      {"type": "conv2d", "filters": 4, "kernel_size": 3, "padding": "same", "activation": "relu"},
      {"type": "max_pooling2d"},
      {"type": "flatten"},
      {"type": "dense", "units": 3}]},
    "optimizer": )" + optimizer + R"(,
    "data": {"train": {"format": "synthetic", "count": 600, "shape": [10, 10], "classes": 3, "seed": 11},
             "eval": {"format": "synthetic", "count": 150, "shape": [10, 10], "classes": 3, "seed": 12}},
    "batch_size_per_worker": 16, "epochs": )" + std::to_string(epochs) + R"(, "seed": 2})",
                                    ".");
  EXPECT_TRUE(job.ok()) << job.status().ToString();
  return *job;
}

// What the recovery driver does on a fresh communicator: agree, align, train.
Status Train(Trainer* t, collective::Communicator* comm) {
  RT_RETURN_IF_ERROR(t->Prepare(comm));
  RT_RETURN_IF_ERROR(t->SyncState(comm).status());
  return t->Fit(comm);
}


TEST(TrainerTest, LearnsOnOneWorker) {
  TrainerOptions o;
  o.out = std::tmpfile();
  auto t = Trainer::Create(SyntheticJob(4, R"({"type": "adam", "learning_rate": 0.01})"), o);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  auto comm = ringtrain::testing::LocalCommunicator();
  ASSERT_TRUE(Train(t->get(), comm.get()).ok());
  const auto& h = (*t)->history();
  ASSERT_EQ(h.size(), 4u);
  EXPECT_EQ(h[0].steps, 600 / 16);
  EXPECT_LT(h[3].loss, h[0].loss);
  auto eval = (*t)->Evaluate(comm.get());
  ASSERT_TRUE(eval.ok()) << eval.status().ToString();
  EXPECT_EQ(eval->examples, 150);
  EXPECT_GT(eval->accuracy, 0.6);  // 3 classes: chance is 0.33
  std::fclose(o.out);
}

TEST(TrainerTest, SameSeedSameBits) {
  uint64_t fp[2];
  for (int run = 0; run < 2; ++run) {
    TrainerOptions o;
    o.out = std::tmpfile();
    auto t = Trainer::Create(SyntheticJob(1, R"({"type": "sgd", "learning_rate": 0.05, "momentum": 0.9})"), o);
    ASSERT_TRUE(t.ok());
    auto comm = ringtrain::testing::LocalCommunicator();
    ASSERT_TRUE(Train(t->get(), comm.get()).ok());
    fp[run] = (*t)->WeightsFingerprint();
    std::fclose(o.out);
  }
  EXPECT_EQ(fp[0], fp[1]);
}

// Records what the trainer reports.
class Recorder final : public StepObserver {
 public:
  void OnStep(const StepReport& r) override { steps.push_back(r); }
  void OnEpoch(const EpochResult& r) override { epochs.push_back(r.epoch); }
  std::vector<StepReport> steps;
  std::vector<int> epochs;
};

// Every step and epoch is reported, with a consistent time split, and watching does not
// change the model's bits.
TEST(TrainerTest, ObserversSeeEveryStepAndChangeNothing) {
  uint64_t fp[2];
  Recorder rec;
  for (int run = 0; run < 2; ++run) {
    TrainerOptions o;
    o.out = std::tmpfile();
    if (run == 1) o.observers = {&rec};
    auto t = Trainer::Create(SyntheticJob(2, R"({"type": "sgd", "learning_rate": 0.05})"), o);
    ASSERT_TRUE(t.ok());
    auto comm = ringtrain::testing::LocalCommunicator();
    ASSERT_TRUE(Train(t->get(), comm.get()).ok());
    fp[run] = (*t)->WeightsFingerprint();
    std::fclose(o.out);
  }
  EXPECT_EQ(fp[0], fp[1]);
  const int steps = 600 / 16;
  ASSERT_EQ(rec.steps.size(), static_cast<size_t>(2 * steps));
  EXPECT_EQ(rec.epochs, (std::vector<int>{1, 2}));
  for (size_t i = 0; i < rec.steps.size(); ++i) {
    const StepReport& r = rec.steps[i];
    EXPECT_EQ(r.global_step, static_cast<int64_t>(i) + 1);
    EXPECT_EQ(r.epoch, static_cast<int>(i) / steps + 1);
    EXPECT_EQ(r.step, static_cast<int>(i) % steps + 1);
    EXPECT_EQ(r.steps, steps);
    EXPECT_EQ(r.examples, 16);
    EXPECT_EQ(r.allreduced_bytes, 0u);  // one worker
    EXPECT_GT(r.seconds, 0.0);
    EXPECT_NEAR(r.compute_seconds + r.input_wait_seconds + r.comm_wait_seconds, r.seconds, 1e-9);
    EXPECT_GT(r.loss, 0.0);
    EXPECT_GT(r.unix_time, 1.6e9);
  }
}

// Ranks as threads over loopback, with and without gradient packs overlapping backward.
class TrainerRanksTest : public ::testing::TestWithParam<int> {};

TEST_P(TrainerRanksTest, ThreeRanksOverLoopbackEndIdentical) {
  const int bytes_per_pack = GetParam();
  const int n = 3;
  std::vector<uint64_t> fp(n);
  std::vector<Status> result = RunRanks(n, [&](int r, collective::Communicator* comm) {
    TrainerOptions o;
    o.rank = r;
    o.num_workers = n;
    o.is_chief = r == 0;
    o.out = std::tmpfile();
    auto job = SyntheticJob(2, R"({"type": "sgd", "learning_rate": 0.05})");
    job.communication.bytes_per_pack = static_cast<size_t>(bytes_per_pack);
    auto t = Trainer::Create(job, o);
    Status st = t.ok() ? Train(t->get(), comm) : t.status();
    if (t.ok()) fp[r] = (*t)->WeightsFingerprint();
    std::fclose(o.out);
    return st;
  });
  for (int r = 0; r < n; ++r) ASSERT_TRUE(result[r].ok()) << "rank " << r << ": " << result[r].ToString();
  EXPECT_EQ(fp[0], fp[1]);
  EXPECT_EQ(fp[0], fp[2]);
}

INSTANTIATE_TEST_SUITE_P(Packs, TrainerRanksTest, ::testing::Values(0, 64, 1000));

TEST(TrainerTest, MismatchedInputShapeIsAClearError) {
  auto job = SyntheticJob(1, R"({"type": "sgd"})");
  job.train_data["shape"] = {12, 12};
  TrainerOptions o;
  auto t = Trainer::Create(job, o);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), Code::kInvalidArgument);
  EXPECT_NE(t.status().message().find("input_shape"), std::string::npos) << t.status().message();
}

}  // namespace
}  // namespace ringtrain::train
