// Keras' fit conveniences in the trainer: lr_schedule, validation_freq, TensorBoard
// event files and the history's timing fields, on one worker and on ranks as threads.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "event_test.pb.h"
#include "rank_threads.h"
#include "store/store.h"
#include "tfrecord/record.h"
#include "train/trainer.h"
#include "testing/small_conv_job.h"

namespace ringtrain::train {
namespace {

namespace fs = std::filesystem;

// 64 training examples, batch 16: 4 steps per epoch.
config::JobConfig Job(int epochs, const std::string& extra) {
  auto job = config::ParseJobConfig(R"({
    "model": {"input_shape": [8, 8], "layers": [
      {"type": "reshape", "target_shape": [8, 8, 1]},
      {"type": "conv2d", "filters": 3, "kernel_size": 3, "activation": "relu"},
      {"type": "flatten"},
      {"type": "dense", "units": 3}]},
    "optimizer": {"type": "sgd", "learning_rate": 0.05, "momentum": 0.9},
    "data": {"train": {"format": "synthetic", "count": 64, "shape": [8, 8], "classes": 3, "seed": 5},
             "eval": {"format": "synthetic", "count": 40, "shape": [8, 8], "classes": 3, "seed": 6}},
    "batch_size_per_worker": 16, "seed": 9, "epochs": )" + std::to_string(epochs) +
                                        (extra.empty() ? "" : ", " + extra) + "}",
                                    ".");
  EXPECT_TRUE(job.ok()) << job.status().ToString();
  return *job;
}

// The seed tutorial's decay(): 1e-3 before epoch 3, 1e-4 before epoch 7, then 1e-5.
constexpr char kSeedDecay[] =
    R"("lr_schedule": {"type": "piecewise_constant", "unit": "epoch", "boundaries": [3, 7],
                       "values": [1e-3, 1e-4, 1e-5]})";


struct CloseFile {
  void operator()(FILE* f) const { std::fclose(f); }
};

struct FitRun {
  // Declared first, so it is closed after the trainer that prints to it (a later
  // Evaluate prints its line there too).
  std::unique_ptr<FILE, CloseFile> out;
  std::unique_ptr<Trainer> trainer;
  std::unique_ptr<collective::Communicator> comm;
  std::vector<backup::TrainState> backups;
  std::string output;  // what the trainer printed
};

std::string ReadAll(FILE* f) {
  std::string s;
  std::rewind(f);
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) s.append(buf, n);
  return s;
}

// Trains `job` on one worker, from `from` when given, keeping every backup.
FitRun Train(const config::JobConfig& job, const backup::TrainState* from = nullptr) {
  FitRun run;
  TrainerOptions o;
  run.out.reset(std::tmpfile());
  o.out = run.out.get();
  auto t = Trainer::Create(job, o);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  if (!t.ok()) return run;
  run.trainer = std::move(t).value();
  run.comm = ringtrain::testing::LocalCommunicator();
  EXPECT_TRUE(run.trainer->Prepare(run.comm.get()).ok());
  if (from != nullptr) {
    EXPECT_TRUE(run.trainer->Restore(*from).ok());
  }
  EXPECT_TRUE(run.trainer->SyncState(run.comm.get()).ok());
  Status st = run.trainer->Fit(run.comm.get(), [&](const backup::TrainState& s) {
    run.backups.push_back(s);
    return Status::Ok();
  });
  EXPECT_TRUE(st.ok()) << st.ToString();
  run.output = ReadAll(run.out.get());
  return run;
}

std::vector<double> Lrs(const Trainer& t) {
  std::vector<double> v;
  for (const auto& h : t.history()) v.push_back(h.learning_rate);
  return v;
}

TEST(LrScheduleTest, EpochScheduleFollowsTheSeedDecayTable) {
  FitRun run = Train(Job(8, kSeedDecay));
  EXPECT_EQ(Lrs(*run.trainer), (std::vector<double>{1e-3, 1e-3, 1e-3, 1e-4, 1e-4, 1e-4, 1e-4, 1e-5}));
  EXPECT_NE(run.output.find("Epoch 1/8 - 4/4 - "), std::string::npos) << run.output;
  EXPECT_NE(run.output.find(" - lr: 1.0000e-03 - "), std::string::npos) << run.output;
  EXPECT_NE(run.output.find(" - lr: 1.0000e-04 - "), std::string::npos) << run.output;
  EXPECT_NE(run.output.find(" - lr: 1.0000e-05 - "), std::string::npos) << run.output;
}

TEST(LrScheduleTest, StepScheduleRecordsTheLastStepsRate) {
  // Steps 0..3 in epoch 1 (t <= 5: 0.1), 4..7 in epoch 2 (the last, t = 7 > 5: 0.01).
  FitRun run = Train(Job(3, R"("lr_schedule": {"type": "piecewise_constant", "boundaries": [5],
                                            "values": [0.1, 0.01]})"));
  EXPECT_EQ(Lrs(*run.trainer), (std::vector<double>{0.1, 0.01, 0.01}));
}

TEST(LrScheduleTest, WithoutAScheduleTheOptimizersRateIsRecorded) {
  FitRun run = Train(Job(2, ""));
  EXPECT_EQ(Lrs(*run.trainer), (std::vector<double>{0.05, 0.05}));
}

TEST(LrScheduleTest, TheScheduleChangesTheTrajectory) {
  FitRun with = Train(Job(4, kSeedDecay));
  FitRun without = Train(Job(4, ""));
  EXPECT_NE(with.trainer->WeightsFingerprint(), without.trainer->WeightsFingerprint());
}

TEST(LrScheduleTest, ABadScheduleIsAnInvalidArgumentNamingTheField) {
  TrainerOptions o;
  auto t = Trainer::Create(Job(1, R"("lr_schedule": {"type": "piecewise_constant", "boundaries": [3],
                                                      "values": [0.1]})"), o);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), Code::kInvalidArgument);
  EXPECT_NE(t.status().message().find("lr_schedule"), std::string::npos) << t.status().ToString();
}

TEST(LrScheduleTest, ResumingMidRunGivesTheSameRates) {
  auto job = Job(8, std::string(kSeedDecay) + R"(, "validation_freq": 2,
      "backup_and_restore": {"backup_dir": "unused", "save_freq": 3})");
  FitRun full = Train(job);
  ASSERT_EQ(full.backups.size(), 32u / 3);
  for (size_t k : {size_t{1}, size_t{3}, size_t{6}}) {  // steps 6, 12, 21: mid-epoch
    FitRun resumed = Train(job, &full.backups[k]);
    EXPECT_EQ(Lrs(*resumed.trainer), Lrs(*full.trainer)) << "from step " << full.backups[k].global_step;
    EXPECT_EQ(resumed.trainer->WeightsFingerprint(), full.trainer->WeightsFingerprint());
    // Validation metrics after a restore are those of the uninterrupted run.
    ASSERT_EQ(resumed.trainer->history().size(), full.trainer->history().size());
    for (size_t e = 0; e < full.trainer->history().size(); ++e) {
      const auto& a = full.trainer->history()[e];
      const auto& b = resumed.trainer->history()[e];
      EXPECT_EQ(a.has_val, b.has_val) << "epoch " << e + 1;
      EXPECT_EQ(a.val_loss, b.val_loss) << "epoch " << e + 1;
      EXPECT_EQ(a.val_accuracy, b.val_accuracy) << "epoch " << e + 1;
    }
  }
}

TEST(ValidationTest, MetricsEqualASeparateEvaluateAtThatEpoch) {
  FitRun run = Train(Job(3, R"("validation_freq": 1)"));
  const auto& h = run.trainer->history();
  ASSERT_EQ(h.size(), 3u);
  EXPECT_NE(run.output.find(" - val_loss: "), std::string::npos) << run.output;
  for (int epochs = 1; epochs <= 3; ++epochs) {
    FitRun plain = Train(Job(epochs, ""));
    auto eval = plain.trainer->Evaluate(plain.comm.get());
    ASSERT_TRUE(eval.ok()) << eval.status().ToString();
    EXPECT_TRUE(h[epochs - 1].has_val);
    EXPECT_EQ(h[epochs - 1].val_loss, eval->loss) << "epoch " << epochs;
    EXPECT_EQ(h[epochs - 1].val_accuracy, eval->accuracy) << "epoch " << epochs;
  }
}

TEST(ValidationTest, DoesNotChangeTheTrainingTrajectory) {
  FitRun with = Train(Job(3, R"("validation_freq": 1)"));
  FitRun without = Train(Job(3, ""));
  EXPECT_EQ(with.trainer->WeightsFingerprint(), without.trainer->WeightsFingerprint());
  for (size_t e = 0; e < 3; ++e) {
    EXPECT_EQ(with.trainer->history()[e].loss, without.trainer->history()[e].loss);
    EXPECT_FALSE(without.trainer->history()[e].has_val);
  }
  EXPECT_EQ(without.output.find("val_loss"), std::string::npos);
}

TEST(ValidationTest, FrequencyAndListChooseTheEpochs) {
  for (const auto& [extra, want] : std::vector<std::pair<std::string, std::vector<bool>>>{
           {R"("validation_freq": 2)", {false, true, false, true}},
           {R"("validation_freq": [1, 3])", {true, false, true, false}}}) {
    FitRun run = Train(Job(4, extra));
    std::vector<bool> got;
    for (const auto& h : run.trainer->history()) got.push_back(h.has_val);
    EXPECT_EQ(got, want) << extra;
  }
}

TEST(HistoryTimingTest, EveryRecordHasTheBenchFields) {
  const fs::path dir = fs::path(::testing::TempDir()) / "keras_history_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto job = Job(2, R"("validation_freq": 1, "history_file": ")" + (dir / "h.jsonl").string() + "\"");
  FitRun run = Train(job);
  FILE* f = std::fopen((dir / "h.jsonl").c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::string text = ReadAll(f);
  std::fclose(f);
  int lines = 0;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    auto rec = nlohmann::json::parse(text.substr(start, end - start));
    for (const char* key : {"epoch", "loss", "accuracy", "images_per_sec", "lr", "step_ms", "comm_wait_share",
                            "input_wait_share", "val_loss", "val_accuracy"}) {
      EXPECT_TRUE(rec.contains(key)) << key << " missing in " << rec.dump();
    }
    EXPECT_GT(rec["step_ms"].get<double>(), 0.0);
    EXPECT_EQ(rec["comm_wait_share"].get<double>(), 0.0);  // one worker waits for nobody
    EXPECT_EQ(rec["input_wait_share"].get<double>(), 0.0);  // an in-memory source is copied, never waited for
    EXPECT_EQ(rec["lr"].get<double>(), 0.05);
    ++lines;
    start = end + 1;
  }
  EXPECT_EQ(lines, 2);
  fs::remove_all(dir);
}

std::vector<ringtrain_test::Event> ReadEvents(const fs::path& dir) {
  std::vector<ringtrain_test::Event> events;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path());
  EXPECT_EQ(files.size(), 1u) << dir;
  if (files.size() != 1) return events;
  EXPECT_EQ(files[0].filename().string().rfind("events.out.tfevents.", 0), 0u) << files[0];
  std::vector<std::string> records;
  Status st = tfrecord::ReadRecords(files[0].string(), &records);
  EXPECT_TRUE(st.ok()) << st.ToString();
  for (const auto& r : records) {
    ringtrain_test::Event e;
    EXPECT_TRUE(e.ParseFromString(r));
    events.push_back(e);
  }
  return events;
}

void ExpectScalars(const ringtrain_test::Event& e, int64_t step,
                   const std::vector<std::pair<std::string, double>>& want) {
  EXPECT_EQ(e.step(), step);
  ASSERT_TRUE(e.has_summary());
  ASSERT_EQ(e.summary().value_size(), static_cast<int>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(e.summary().value(static_cast<int>(i)).tag(), want[i].first);
    EXPECT_EQ(e.summary().value(static_cast<int>(i)).simple_value(), static_cast<float>(want[i].second))
        << want[i].first << " at step " << step;
  }
}

TEST(TensorBoardTest, TheChiefWritesKerasEpochScalars) {
  const fs::path dir = fs::path(::testing::TempDir()) / "keras_tb_test";
  fs::remove_all(dir);
  FitRun run = Train(Job(3, std::string(kSeedDecay) + R"(, "validation_freq": 2, "tensorboard_dir": ")" +
                             dir.string() + "\""));
  run.trainer.reset();  // closes the event files
  auto train = ReadEvents(dir / "train");
  ASSERT_EQ(train.size(), 4u);  // file_version, then one event per epoch
  EXPECT_EQ(train[0].file_version(), "brain.Event:2");
  auto validation = ReadEvents(dir / "validation");
  ASSERT_EQ(validation.size(), 2u);  // only epoch 2 validates
  EXPECT_EQ(validation[0].file_version(), "brain.Event:2");
  fs::remove_all(dir);
}

TEST(TensorBoardTest, ValuesAndStepsMatchTheHistory) {
  const fs::path dir = fs::path(::testing::TempDir()) / "keras_tb_values_test";
  fs::remove_all(dir);
  FitRun run = Train(Job(3, std::string(kSeedDecay) + R"(, "validation_freq": 1, "tensorboard_dir": ")" +
                             dir.string() + "\""));
  const std::vector<EpochResult> h = run.trainer->history();
  run.trainer.reset();
  auto train = ReadEvents(dir / "train");
  auto validation = ReadEvents(dir / "validation");
  ASSERT_EQ(train.size(), 4u);
  ASSERT_EQ(validation.size(), 4u);
  for (int e = 0; e < 3; ++e) {
    ExpectScalars(train[e + 1], e,
                  {{"epoch_loss", h[e].loss}, {"epoch_accuracy", h[e].accuracy},
                   {"epoch_learning_rate", h[e].learning_rate}, {"epoch_images_per_sec", h[e].images_per_sec}});
    ExpectScalars(validation[e + 1], e, {{"epoch_loss", h[e].val_loss}, {"epoch_accuracy", h[e].val_accuracy}});
  }
  fs::remove_all(dir);
}

TEST(TensorBoardTest, AnUnwritableDirectoryFailsAtCreate) {
  const fs::path dir = fs::path(::testing::TempDir()) / "keras_tb_blocked";
  fs::remove_all(dir);
  fs::create_directories(dir.parent_path());
  FILE* f = std::fopen(dir.c_str(), "w");  // a file where the directory should be
  ASSERT_NE(f, nullptr);
  std::fclose(f);
  TrainerOptions o;
  auto t = Trainer::Create(Job(1, R"("tensorboard_dir": ")" + dir.string() + "\""), o);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().ToString().find("tensorboard_dir"), std::string::npos) << t.status().ToString();
  fs::remove(dir);
}

TEST(TensorBoardTest, OnlyTheChiefWrites) {
  const fs::path dir = fs::path(::testing::TempDir()) / "keras_tb_worker";
  fs::remove_all(dir);
  TrainerOptions o;
  o.rank = 1;
  o.num_workers = 2;
  o.is_chief = false;
  auto t = Trainer::Create(Job(1, R"("tensorboard_dir": ")" + dir.string() + "\""), o);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_FALSE(fs::exists(dir));
}

// Two ranks as threads: every worker validates its own shard and all get the same
// all-reduced metrics, equal to a one-process evaluation of the whole eval split.
TEST(ValidationRanksTest, TwoRanksAgreeOnValidationMetrics) {
  const int n = 2;
  std::vector<std::vector<EpochResult>> history(n);
  std::vector<uint64_t> fp(n);
  std::vector<Status> result = RunRanks(n, [&](int r, collective::Communicator* comm) {
    TrainerOptions o;
    o.rank = r;
    o.num_workers = n;
    o.is_chief = r == 0;
    FILE* out = std::tmpfile();
    o.out = out;
    auto t = Trainer::Create(Job(2, std::string(kSeedDecay) + R"(, "validation_freq": 1)"), o);
    Status st = t.ok() ? Status::Ok() : t.status();
    if (st.ok()) st = (*t)->Prepare(comm);
    if (st.ok()) st = (*t)->SyncState(comm).status();
    if (st.ok()) st = (*t)->Fit(comm);
    if (t.ok()) {
      history[r] = (*t)->history();
      fp[r] = (*t)->WeightsFingerprint();
      t->reset();
    }
    std::fclose(out);
    return st;
  });
  for (int r = 0; r < n; ++r) ASSERT_TRUE(result[r].ok()) << "rank " << r << ": " << result[r].ToString();
  EXPECT_EQ(fp[0], fp[1]);
  ASSERT_EQ(history[0].size(), 2u);
  ASSERT_EQ(history[1].size(), 2u);
  for (int e = 0; e < 2; ++e) {
    EXPECT_TRUE(history[0][e].has_val);
    EXPECT_EQ(history[0][e].val_loss, history[1][e].val_loss);
    EXPECT_EQ(history[0][e].val_accuracy, history[1][e].val_accuracy);
    EXPECT_GE(history[0][e].comm_wait_share, 0.0);
    EXPECT_LE(history[0][e].comm_wait_share, 1.0);
    EXPECT_EQ(history[0][e].learning_rate, 1e-3);
  }
}

}  // namespace
}  // namespace ringtrain::train
