#include "train/progress.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "train/history.h"
#include "common/file.h"

namespace ringtrain::train {
namespace {

// The end of an epoch: step == steps.
EpochLine Line(int epoch, int epochs, int steps, double seconds, double loss) {
  EpochLine l;
  l.epoch = epoch;
  l.epochs = epochs;
  l.step = steps;
  l.steps = steps;
  l.seconds = seconds;
  l.loss = loss;
  return l;
}

TEST(ProgressTest, KerasLikeEpochLine) {
  EpochLine l = Line(2, 3, 70, 3.14, 2.21723);
  l.metrics = {{"accuracy", 0.41571}};
  l.images_per_sec = 2873.4;
  EXPECT_EQ(FormatEpochLine(l), "Epoch 2/3 - 70/70 - 3.1s - loss: 2.2172 - accuracy: 0.4157 - 2873 images/s");
}

TEST(ProgressTest, EveryMetricAndItsValidationValueByKerasKey) {
  EpochLine l = Line(1, 2, 5, 1, 0.5);
  l.metrics = {{"binary_accuracy", 0.75}, {"auc", 0.875}};
  l.has_val = true;
  l.val_loss = 0.625;
  l.val_metrics = {{"binary_accuracy", 0.5}, {"auc", 0.8}};
  l.images_per_sec = 100;
  EXPECT_EQ(FormatEpochLine(l),
            "Epoch 1/2 - 5/5 - 1.0s - loss: 0.5000 - binary_accuracy: 0.7500 - auc: 0.8750 - val_loss: 0.6250 - "
            "val_binary_accuracy: 0.5000 - val_auc: 0.8000 - 100 images/s");
}

TEST(ProgressTest, LinesModeWritesOnlyFinishedEpochs) {
  FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  ProgressPrinter p(f, "lines");
  EpochLine l;
  l.epoch = 1;
  l.epochs = 1;
  l.steps = 2;
  l.step = 1;
  p.Update(l);
  l.step = 2;
  p.Finish(l);
  std::rewind(f);
  char buf[256] = {};
  size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  std::string out(buf, n);
  EXPECT_EQ(out.find('\r'), std::string::npos);
  EXPECT_EQ(out.rfind("Epoch 1/1 - 2/2", 0), 0u) << out;
}

// Under launch the chief streams its bar as marked lines that launch's console draws:
// whole lines, never a carriage return, and the epoch's line after them.
TEST(ProgressTest, StreamModeWritesTheBarAsMarkedLines) {
  FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  ProgressPrinter p(f, "stream");
  EXPECT_TRUE(p.drawing());
  EpochLine l = Line(1, 1, 2, 1, 0.25);
  l.step = 1;
  l.metrics = {{"accuracy", 0.5}};
  p.Update(l);
  l.step = 2;
  p.Finish(l);
  std::rewind(f);
  char buf[512] = {};
  size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  std::string out(buf, n);
  EXPECT_EQ(out.find('\r'), std::string::npos) << out;
  EXPECT_EQ(out.rfind(std::string(kProgressMarker) + "Epoch 1/1 1/2 [===============>..............] - loss: 0.2500 - "
                                                     "accuracy: 0.5000\nEpoch 1/1 - 2/2",
                      0),
            0u)
      << out;
}

TEST(HistoryTest, EpochLinesThenEvaluation) {
  std::string path = ::testing::TempDir() + "/history_test.jsonl";
  HistoryFile h(path);
  ASSERT_TRUE(h.AppendEpoch({{"epoch", 1}, {"loss", 2.5}}).ok());
  ASSERT_TRUE(h.AppendEpoch({{"epoch", 2}, {"loss", 2.0}}).ok());
  ASSERT_TRUE(h.SetEvaluation({{"loss", 1.9}, {"accuracy", 0.5}}).ok());
  auto text = ReadFile(path);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text,
            "{\"epoch\":1,\"loss\":2.5}\n{\"epoch\":2,\"loss\":2.0}\n{\"evaluation\":{\"accuracy\":0.5,\"loss\":1.9}}\n");
}

}  // namespace
}  // namespace ringtrain::train
