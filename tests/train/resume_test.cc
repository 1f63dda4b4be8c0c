// Snapshot/Restore/SyncState: a run resumed from any backup point ends bit-for-bit
// where the uninterrupted run ends, in one process and across ranks.
#include <gtest/gtest.h>

#include <cstring>

#include "backup/backup.h"
#include "rank_threads.h"
#include "store/store.h"
#include "testing/small_conv_job.h"
#include "train/trainer.h"

namespace ringtrain::train {
namespace {

config::JobConfig Job(const std::string& optimizer, int save_freq) {
  nlohmann::json j = testing::SmallConvJob(250);
  j["optimizer"] = nlohmann::json::parse(optimizer);
  j["backup_and_restore"] = {{"backup_dir", "unused"}, {"save_freq", save_freq}};
  return testing::ParseTestJob(j);
}


std::unique_ptr<Trainer> NewTrainer(const config::JobConfig& job, int rank = 0, int n = 1) {
  TrainerOptions o;
  o.rank = rank;
  o.num_workers = n;
  o.is_chief = rank == 0;
  o.out = std::tmpfile();  // left to the process's exit: the trainer prints until destroyed
  auto t = Trainer::Create(job, o);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return std::move(t).value();
}

struct RunRecord {
  uint64_t fingerprint = 0;
  std::vector<double> losses;
  std::vector<backup::TrainState> backups;
};

RunRecord Uninterrupted(const config::JobConfig& job) {
  RunRecord run;
  auto t = NewTrainer(job);
  auto comm = ringtrain::testing::LocalCommunicator();
  EXPECT_TRUE(t->Prepare(comm.get()).ok());
  EXPECT_TRUE(t->SyncState(comm.get()).ok());
  Status st = t->Fit(comm.get(), [&](const backup::TrainState& s) {
    run.backups.push_back(s);
    return Status::Ok();
  });
  EXPECT_TRUE(st.ok()) << st.ToString();
  run.fingerprint = t->WeightsFingerprint();
  for (const auto& h : t->history()) run.losses.push_back(h.loss);
  return run;
}

class ResumeTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ResumeTest, FromEveryBackupPointEndsIdentical) {
  const auto job = Job(GetParam(), 4);  // 250 / 16 = 15 steps per epoch: backups mid-epoch too
  RunRecord full = Uninterrupted(job);
  ASSERT_EQ(full.backups.size(), 45u / 4);
  ASSERT_EQ(full.losses.size(), 3u);
  for (size_t k = 0; k < full.backups.size(); k += 3) {
    auto t = NewTrainer(job);
    auto comm = ringtrain::testing::LocalCommunicator();
    ASSERT_TRUE(t->Prepare(comm.get()).ok());
    ASSERT_TRUE(t->Restore(full.backups[k]).ok());
    EXPECT_EQ(t->global_step(), full.backups[k].global_step);
    ASSERT_TRUE(t->Fit(comm.get()).ok());
    EXPECT_EQ(t->WeightsFingerprint(), full.fingerprint) << "resumed at step " << full.backups[k].global_step;
    std::vector<double> losses;
    for (const auto& h : t->history()) losses.push_back(h.loss);
    EXPECT_EQ(losses, full.losses) << "resumed at step " << full.backups[k].global_step;
  }
}

TEST_P(ResumeTest, ThroughTheBackupEncodingEndsIdentical) {
  const auto job = Job(GetParam(), 7);
  RunRecord full = Uninterrupted(job);
  ASSERT_GE(full.backups.size(), 3u);
  auto t = NewTrainer(job);
  auto comm = ringtrain::testing::LocalCommunicator();
  ASSERT_TRUE(t->Prepare(comm.get()).ok());
  auto enc = backup::EncodeBackup(t->Identity(), full.backups[2]);
  ASSERT_TRUE(enc.ok()) << enc.status().ToString();
  auto decoded = backup::DecodeBackup(t->Identity(), *enc);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  ASSERT_TRUE(t->Restore(*decoded).ok());
  ASSERT_TRUE(t->Fit(comm.get()).ok());
  EXPECT_EQ(t->WeightsFingerprint(), full.fingerprint);
}

// The job's metrics are summed like the loss: a run resumed mid-epoch (through the
// backup encoding, which carries the epoch's partial metric sums) reports every metric
// exactly as the uninterrupted run does; the regularized loss too.
TEST(ResumeTest, MetricsAndRegularizedLossResumeExactly) {
  nlohmann::json j = testing::SmallConvJob(250);
  j["model"]["layers"][1]["kernel_regularizer"] = {{"class_name", "L2"}, {"config", {{"l2", 0.01}}}};
  j["metrics"] = {"accuracy", {{"type", "sparse_top_k_categorical_accuracy"}, {"k", 2}, {"name", "top2"}}};
  j["backup_and_restore"] = {{"backup_dir", "unused"}, {"save_freq", 4}};
  const auto job = testing::ParseTestJob(j);
  auto full_trainer = NewTrainer(job);
  std::vector<backup::TrainState> backups;
  {
    auto comm = ringtrain::testing::LocalCommunicator();
    ASSERT_TRUE(full_trainer->Prepare(comm.get()).ok());
    ASSERT_TRUE(full_trainer->SyncState(comm.get()).ok());
    ASSERT_TRUE(full_trainer->Fit(comm.get(), [&](const backup::TrainState& s) {
      backups.push_back(s);
      return Status::Ok();
    }).ok());
  }
  const auto& full = full_trainer->history();
  ASSERT_EQ(full.size(), 3u);
  ASSERT_EQ(full[0].metrics.size(), 2u);
  EXPECT_EQ(full[0].metrics[0].first, "accuracy");
  EXPECT_EQ(full[0].metrics[1].first, "top2");
  EXPECT_EQ(full[0].accuracy, full[0].metrics[0].second);
  EXPECT_GE(full[0].metrics[1].second, full[0].metrics[0].second) << "top-2 is at least top-1";
  for (size_t k : {size_t{1}, size_t{5}}) {  // steps 8 and 24: inside epochs 1 and 2
    ASSERT_LT(k, backups.size());
    ASSERT_FALSE(backups[k].epoch_metric_sums.empty());
    auto t = NewTrainer(job);
    auto comm = ringtrain::testing::LocalCommunicator();
    ASSERT_TRUE(t->Prepare(comm.get()).ok());
    auto enc = backup::EncodeBackup(t->Identity(), backups[k]);
    ASSERT_TRUE(enc.ok()) << enc.status().ToString();
    auto decoded = backup::DecodeBackup(t->Identity(), *enc);
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    EXPECT_EQ(decoded->epoch_metric_sums, backups[k].epoch_metric_sums);
    ASSERT_TRUE(t->Restore(*decoded).ok());
    ASSERT_TRUE(t->Fit(comm.get()).ok());
    ASSERT_EQ(t->history().size(), full.size());
    for (size_t e = 0; e < full.size(); ++e) {
      EXPECT_EQ(t->history()[e].loss, full[e].loss) << "epoch " << e + 1 << ", resumed at step " << backups[k].global_step;
      EXPECT_EQ(t->history()[e].metrics, full[e].metrics) << "epoch " << e + 1;
    }
  }
  // A state whose metric sums do not fit the job's metrics is refused.
  backup::TrainState wrong = backups[1];
  wrong.epoch_metric_sums.push_back(1.0);
  auto t = NewTrainer(job);
  EXPECT_EQ(t->Restore(wrong).code(), Code::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Optimizers, ResumeTest,
                         ::testing::Values(R"({"type": "sgd", "learning_rate": 0.05, "momentum": 0.9})",
                                           R"({"type": "adam", "learning_rate": 0.01})",
                                           R"({"type": "AdamW", "learning_rate": 0.01, "amsgrad": true,
                                               "clipnorm": 0.5})",
                                           R"({"type": "RMSprop", "momentum": 0.5, "centered": true,
                                               "global_clipnorm": 1.0})",
                                           R"({"type": "adagrad", "learning_rate": 0.05, "clipvalue": 0.1})",
                                           R"({"type": "nadam", "learning_rate": 0.01, "weight_decay": 0.01})"));

TEST(ResumeTest, RestoreRefusesAStateOfAnotherShape) {
  auto t = NewTrainer(Job(R"({"type": "sgd"})", 4));
  auto comm = ringtrain::testing::LocalCommunicator();
  ASSERT_TRUE(t->Prepare(comm.get()).ok());
  backup::TrainState s = t->Snapshot();
  s.params.pop_back();
  EXPECT_EQ(t->Restore(s).code(), Code::kInvalidArgument);
}

// Three ranks: rank 2 "restarted" from scratch, ranks 0 and 1 rolled back to a backup.
// SyncState gives rank 2 their state, and the run ends as an uninterrupted one.
TEST(ResumeTest, SyncStateCatchesUpARestartedRank) {
  const int n = 3;
  const auto job = Job(R"({"type": "adam", "learning_rate": 0.01})", 5);
  std::vector<int> received(n, -1);
  auto run_ranks = [&](const backup::TrainState* from, std::vector<uint64_t>* fp, std::vector<int64_t>* start,
                       std::vector<backup::TrainState>* backups) {
    std::vector<Status> result = RunRanks(n, [&](int r, collective::Communicator* comm) {
      auto t = NewTrainer(job, r, n);
      Status st = t->Prepare(comm);
      if (st.ok() && from != nullptr && r != 2) st = t->Restore(*from);
      if (st.ok()) {
        StatusOr<bool> got = t->SyncState(comm);
        st = got.status();
        if (got.ok()) received[static_cast<size_t>(r)] = *got ? 1 : 0;
      }
      (*start)[r] = t->global_step();
      if (st.ok()) {
        st = t->Fit(comm, [&](const backup::TrainState& s) {
          if (r == 0 && backups != nullptr) backups->push_back(s);
          return Status::Ok();
        });
      }
      (*fp)[r] = t->WeightsFingerprint();
      return st;
    });
    for (int r = 0; r < n; ++r) ASSERT_TRUE(result[r].ok()) << "rank " << r << ": " << result[r].ToString();
  };
  std::vector<uint64_t> full(n), resumed(n);
  std::vector<int64_t> start(n);
  std::vector<backup::TrainState> backups;
  run_ranks(nullptr, &full, &start, &backups);
  // A fresh start: every rank built the same state, so none was sent.
  EXPECT_EQ(received, (std::vector<int>{0, 0, 0}));
  ASSERT_GE(backups.size(), 2u);
  EXPECT_EQ(full[0], full[1]);
  EXPECT_EQ(full[0], full[2]);
  const backup::TrainState& mid = backups[1];
  run_ranks(&mid, &resumed, &start, nullptr);
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(start[r], mid.global_step) << "rank " << r;
    EXPECT_EQ(resumed[r], full[0]) << "rank " << r;
  }
  // Rank 0 is the root (the lowest of the furthest); a state that is sent replaces every other's.
  EXPECT_EQ(received, (std::vector<int>{0, 1, 1}));
}

// At step 0 a rank whose state differs in one bit (of a weight, of an optimizer slot)
// is sent rank 0's: the fingerprints differ, so the state is not taken as the same.
TEST(ResumeTest, SyncStateSendsAStateThatDiffersInOneBitAtTheStart) {
  const int n = 2;
  const auto job = Job(R"({"type": "sgd", "learning_rate": 0.01, "momentum": 0.9})", 5);
  for (const bool in_slot : {false, true}) {
    std::vector<int> received(n, -1);
    std::vector<uint64_t> fp(n);
    std::vector<Status> result = RunRanks(n, [&](int r, collective::Communicator* comm) {
      auto t = NewTrainer(job, r, n);
      RT_RETURN_IF_ERROR(t->Prepare(comm));
      if (r == 1) {
        backup::TrainState s = t->Snapshot();
        std::vector<float>& v = in_slot ? s.optimizer_slots[0].second : s.params;
        uint32_t bits;
        std::memcpy(&bits, &v[v.size() / 2], 4);
        bits ^= 1u;
        std::memcpy(&v[v.size() / 2], &bits, 4);
        RT_RETURN_IF_ERROR(t->Restore(s));
      }
      RT_ASSIGN_OR_RETURN(const bool got, t->SyncState(comm));
      received[static_cast<size_t>(r)] = got ? 1 : 0;
      fp[static_cast<size_t>(r)] = t->StateFingerprint();
      return Status::Ok();
    });
    for (int r = 0; r < n; ++r) ASSERT_TRUE(result[r].ok()) << "rank " << r << ": " << result[r].ToString();
    EXPECT_EQ(received, (std::vector<int>{0, 1})) << (in_slot ? "slot" : "weight");
    EXPECT_EQ(fp[0], fp[1]) << "rank 1 holds rank 0's state afterwards";
  }
}

}  // namespace
}  // namespace ringtrain::train
