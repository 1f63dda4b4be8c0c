// Keras' fit conveniences through `ringtrain launch` with two real worker processes:
// a learning-rate schedule, validation after every epoch and TensorBoard event files.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <sstream>

#include "process.h"
#include "tfrecord/record.h"
#include "test_jobs.h"

namespace ringtrain::testing {
namespace {

namespace fs = std::filesystem;

// "[worker:1] Epoch 2/3 - ... - val_loss: 1.2345 - val_accuracy: 0.5000 - lr: ..." ->
// worker:1 -> {"2": "val_loss: 1.2345 - val_accuracy: 0.5000 - lr: 1.0000e-03"}
std::map<std::string, std::map<std::string, std::string>> ValidationByWorker(const std::string& output) {
  std::map<std::string, std::map<std::string, std::string>> out;
  std::regex re(R"(\[(worker:\d+)\] Epoch (\d+)/\d+ .*(val_loss: [0-9.]+ - val_accuracy: [0-9.]+ - lr: [0-9.e+-]+))");
  for (std::sregex_iterator it(output.begin(), output.end(), re), end; it != end; ++it) {
    out[(*it)[1]][(*it)[2]] = (*it)[3];
  }
  return out;
}

std::vector<std::string> EventRecords(const fs::path& dir) {
  std::vector<fs::path> files;
  if (fs::is_directory(dir)) {
    for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path());
  }
  EXPECT_EQ(files.size(), 1u) << dir;
  if (files.size() != 1) return {};
  EXPECT_EQ(files[0].filename().string().rfind("events.out.tfevents.", 0), 0u) << files[0];
  std::vector<std::string> records;
  Status st = tfrecord::ReadRecords(files[0].string(), &records);  // checks the framing and both CRCs
  EXPECT_TRUE(st.ok()) << st.ToString();
  return records;
}

TEST(KerasFeaturesTest, ScheduleValidationAndTensorBoardOnTwoWorkers) {
  TempDir tmp;
  const std::string& dir = tmp.path();
  auto job = SmallSyntheticJob(dir);
  job["epochs"] = 3;
  job["lr_schedule"] = {{"type", "piecewise_constant"}, {"unit", "epoch"}, {"boundaries", {1, 2}},
                        {"values", {1e-2, 1e-3, 1e-4}}};
  job["validation_freq"] = 1;
  job["tensorboard_dir"] = dir + "/tb";
  WriteFile(dir + "/job.json", job.dump());
  Process p(RingtrainBinary(), {"launch", "--output", "all", "--workers", "2", "--job", dir + "/job.json"},
            {{"RINGTRAIN_RENDEZVOUS_TIMEOUT_S", "60"}, {"RINGTRAIN_NUM_THREADS", "1"}});
  ProcessResult r = p.Wait(240);
  ASSERT_FALSE(r.timed_out) << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;

  // The chief's history: every epoch has the schedule's rate, validation and timing.
  auto history = ReadJsonLines(dir + "/history.jsonl");
  ASSERT_EQ(history.size(), 4u) << r.output;  // 3 epochs, then the final evaluation
  const double want_lr[] = {1e-2, 1e-3, 1e-4};
  for (int e = 0; e < 3; ++e) {
    const auto& h = history[static_cast<size_t>(e)];
    EXPECT_EQ(h["epoch"], e + 1);
    for (const char* key : {"lr", "val_loss", "val_accuracy", "step_ms", "comm_wait_share", "images_per_sec"}) {
      ASSERT_TRUE(h.contains(key)) << key << " missing in " << h.dump();
    }
    EXPECT_EQ(h["lr"].get<double>(), want_lr[e]);
    EXPECT_GT(h["step_ms"].get<double>(), 0.0);
    EXPECT_GE(h["comm_wait_share"].get<double>(), 0.0);
    EXPECT_LE(h["comm_wait_share"].get<double>(), 1.0);
    EXPECT_GE(h["val_accuracy"].get<double>(), 0.0);
    EXPECT_LE(h["val_accuracy"].get<double>(), 1.0);
  }
  ASSERT_TRUE(history[3].contains("evaluation"));
  // The last validation and the final evaluation see the same weights and data.
  EXPECT_EQ(history[3]["evaluation"]["loss"].get<double>(), history[2]["val_loss"].get<double>());

  // Both workers print the same validation metrics on every epoch line.
  auto val = ValidationByWorker(r.output);
  ASSERT_EQ(val.size(), 2u) << r.output;
  ASSERT_EQ(val["worker:0"].size(), 3u) << r.output;
  EXPECT_EQ(val["worker:0"], val["worker:1"]);
  EXPECT_NE(val["worker:0"]["2"].find("lr: 1.0000e-03"), std::string::npos) << val["worker:0"]["2"];

  // TensorBoard: the chief's train and validation files, file_version then one event per epoch.
  auto train = EventRecords(fs::path(dir) / "tb" / "train");
  auto validation = EventRecords(fs::path(dir) / "tb" / "validation");
  ASSERT_EQ(train.size(), 4u);
  ASSERT_EQ(validation.size(), 4u);
  EXPECT_NE(train[0].find("brain.Event:2"), std::string::npos);
  EXPECT_NE(validation[0].find("brain.Event:2"), std::string::npos);
  for (size_t i = 1; i < 4; ++i) {
    for (const char* tag : {"epoch_loss", "epoch_accuracy", "epoch_learning_rate", "epoch_images_per_sec"}) {
      EXPECT_NE(train[i].find(tag), std::string::npos) << tag << " in train event " << i;
    }
    EXPECT_NE(validation[i].find("epoch_loss"), std::string::npos);
    EXPECT_NE(validation[i].find("epoch_accuracy"), std::string::npos);
    EXPECT_EQ(validation[i].find("epoch_learning_rate"), std::string::npos);
  }
}

}  // namespace
}  // namespace ringtrain::testing
