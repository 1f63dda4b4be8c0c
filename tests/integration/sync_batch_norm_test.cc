// BatchNormalization on two real worker processes, one training step on a dataset
// that is exactly the global batch (16 examples, DATA sharding: worker w reads
// examples w, w+2, ..., 8 each, all in its first batch). The model is a 1x1 Conv2D
// whose kernel starts at ones (so BatchNormalization's input is the pixels, twice, at
// the step's forward, and its backward must produce the input gradient that the conv
// trains on), BatchNormalization, Flatten and Dense:
// - synchronized true (Keras 3's argument, SyncBatchNormalization): the moving
//   statistics after the step are those of the GLOBAL batch (computed here from the
//   data), and the whole model matches a 1-worker run on the concatenated batch;
// - synchronized false: the moving statistics are the MEAN of the per-replica ones
//   (MultiWorkerMirroredStrategy's per-replica batch statistics), which differ, since
//   the two shards are made to have different means;
// - either way both workers end with identical weights (their fingerprints).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "checkpoint/safetensors.h"
#include "integration/process.h"

namespace ringtrain::testing {
namespace {

constexpr int kExamples = 16, kHeight = 4, kWidth = 4, kChannels = 2;  // the conv's filters
constexpr float kMomentum = 0.5f;

std::string BigEndian32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
}

// Pixels (uint8) of example i: worker 0's examples (even i) bright, worker 1's dark, so
// the per-replica means differ and per-replica variances miss the spread between them.
std::vector<uint8_t> MakePixels() {
  std::mt19937 rng(12345);
  std::vector<uint8_t> px(static_cast<size_t>(kExamples) * kHeight * kWidth);
  for (size_t k = 0; k < px.size(); ++k) {
    const size_t example = k / (kHeight * kWidth);
    const uint32_t base = example % 2 == 0 ? 150 : 10;
    px[k] = static_cast<uint8_t>(base + rng() % 100);
  }
  return px;
}

// Per channel of BatchNormalization's input (each channel is the pixels, at the first
// step): the mean and biased variance of the examples `pick` selects, in double.
struct Moments {
  std::vector<double> mean, var;
};
template <typename Pick>
Moments ChannelMoments(const std::vector<uint8_t>& px, Pick pick) {
  Moments m{std::vector<double>(kChannels, 0.0), std::vector<double>(kChannels, 0.0)};
  std::vector<double> n(kChannels, 0.0), sq(kChannels, 0.0);
  const int per = kHeight * kWidth;
  for (int i = 0; i < kExamples; ++i) {
    if (!pick(i)) continue;
    for (int p = 0; p < per; ++p) {
      const double v = px[static_cast<size_t>(i * per + p)] / 255.0;  // mnist_idx reads pixels / 255
      for (int c = 0; c < kChannels; ++c) {
        m.mean[c] += v;
        sq[c] += v * v;
        n[c] += 1;
      }
    }
  }
  for (int c = 0; c < kChannels; ++c) {
    m.mean[c] /= n[c];
    m.var[c] = sq[c] / n[c] - m.mean[c] * m.mean[c];
  }
  return m;
}

// "[worker:1] ... final weights fingerprint: 0123..." -> {"worker:1": "0123..."}
std::map<std::string, std::string> Fingerprints(const std::string& output) {
  std::map<std::string, std::string> out;
  std::regex re(R"(\[(worker:\d+)\].*final weights fingerprint: ([0-9a-f]{16}))");
  for (std::sregex_iterator it(output.begin(), output.end(), re), end; it != end; ++it) out[(*it)[1]] = (*it)[2];
  return out;
}

class SyncBatchNormTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pixels_ = MakePixels();
    std::string images = BigEndian32(0x803) + BigEndian32(kExamples) + BigEndian32(kHeight) + BigEndian32(kWidth);
    images.append(pixels_.begin(), pixels_.end());
    std::string labels = BigEndian32(0x801) + BigEndian32(kExamples);
    for (int i = 0; i < kExamples; ++i) labels.push_back(static_cast<char>(i % 10));  // mnist_idx has 10 classes
    WriteFile(dir_.path() + "/images.idx", images);
    WriteFile(dir_.path() + "/labels.idx", labels);
  }

  // Trains one step on `workers` workers (the global batch of 16 split among them) and
  // returns the saved model's tensors; the workers' fingerprints go to `fingerprints`.
  std::map<std::string, checkpoint::Tensor> TrainOneStep(const std::string& name, int workers, bool synchronized,
                                                         std::map<std::string, std::string>* fingerprints) {
    const std::string out = dir_.path() + "/" + name;
    const nlohmann::json source = {{"format", "mnist_idx"},
                                   {"images", dir_.path() + "/images.idx"},
                                   {"labels", dir_.path() + "/labels.idx"}};
    nlohmann::json job = {
        {"model",
         {{"input_shape", {kHeight, kWidth}},
          {"layers",
           {{{"type", "Reshape"}, {"name", "reshape"}, {"target_shape", {kHeight, kWidth, 1}}},
            {{"type", "Conv2D"}, {"name", "conv"}, {"filters", kChannels}, {"kernel_size", 1}, {"use_bias", false},
             {"kernel_initializer", "ones"}},
            {{"type", "BatchNormalization"}, {"name", "bn"}, {"momentum", kMomentum}, {"synchronized", synchronized}},
            {{"type", "Flatten"}, {"name", "flatten"}},
            {{"type", "Dense"}, {"name", "logits"}, {"units", 10}}}}}},
        {"optimizer", {{"type", "sgd"}, {"learning_rate", 0.5}}},
        {"data", {{"train", source}, {"eval", source}, {"auto_shard_policy", "DATA"}}},
        {"batch_size_per_worker", kExamples / workers},
        {"epochs", 1},
        {"steps_per_epoch", 1},
        {"seed", 7},
        {"save_model", out + "/model.safetensors"}};
    WriteFile(dir_.path() + "/" + name + ".json", job.dump());
    Process p(RingtrainBinary(), {"launch", "--output", "all", "--workers", std::to_string(workers), "--job", dir_.path() + "/" + name + ".json"},
              {{"RINGTRAIN_RENDEZVOUS_TIMEOUT_S", "60"}, {"RINGTRAIN_NUM_THREADS", "1"}});
    ProcessResult r = p.Wait(120);
    EXPECT_FALSE(r.timed_out) << r.output;
    EXPECT_EQ(r.exit_code, 0) << r.output;
    if (fingerprints != nullptr) *fingerprints = Fingerprints(r.output);
    std::map<std::string, checkpoint::Tensor> tensors;
    Status st = checkpoint::LoadSafetensors(out + "/model.safetensors", &tensors, nullptr);
    EXPECT_TRUE(st.ok()) << st.ToString() << "\n" << r.output;
    return tensors;
  }

  // The moving statistics one update from (0, 1) with batch moments m: Keras'
  // moving = moving * momentum + batch * (1 - momentum).
  static void ExpectMovingStatistics(const std::map<std::string, checkpoint::Tensor>& t, const Moments& m,
                                     const std::string& what) {
    ASSERT_EQ(t.count("bn/moving_mean"), 1u);
    ASSERT_EQ(t.count("bn/moving_variance"), 1u);
    const auto& mean = t.at("bn/moving_mean").data;
    const auto& var = t.at("bn/moving_variance").data;
    ASSERT_EQ(mean.size(), static_cast<size_t>(kChannels));
    ASSERT_EQ(var.size(), static_cast<size_t>(kChannels));
    for (int c = 0; c < kChannels; ++c) {
      EXPECT_NEAR(mean[c], (1 - kMomentum) * m.mean[c], 1e-5) << what << ", channel " << c;
      EXPECT_NEAR(var[c], kMomentum + (1 - kMomentum) * m.var[c], 1e-5) << what << ", channel " << c;
    }
  }

  static double MaxAbsDifference(const std::map<std::string, checkpoint::Tensor>& a,
                                 const std::map<std::string, checkpoint::Tensor>& b) {
    EXPECT_EQ(a.size(), b.size());
    double worst = 0;
    for (const auto& [name, ta] : a) {
      auto it = b.find(name);
      EXPECT_NE(it, b.end()) << name;
      if (it == b.end()) continue;
      EXPECT_EQ(ta.shape, it->second.shape) << name;
      if (ta.data.size() != it->second.data.size()) continue;
      for (size_t k = 0; k < ta.data.size(); ++k) {
        worst = std::max(worst, std::fabs(static_cast<double>(ta.data[k]) - it->second.data[k]));
      }
    }
    return worst;
  }

  TempDir dir_;
  std::vector<uint8_t> pixels_;
};

TEST_F(SyncBatchNormTest, SynchronizedUsesTheGlobalBatchPerReplicaDoesNot) {
  const Moments global = ChannelMoments(pixels_, [](int) { return true; });
  const Moments w0 = ChannelMoments(pixels_, [](int i) { return i % 2 == 0; });
  const Moments w1 = ChannelMoments(pixels_, [](int i) { return i % 2 == 1; });
  Moments replicas{std::vector<double>(kChannels), std::vector<double>(kChannels)};
  for (int c = 0; c < kChannels; ++c) {
    replicas.mean[c] = (w0.mean[c] + w1.mean[c]) / 2;
    replicas.var[c] = (w0.var[c] + w1.var[c]) / 2;
    // The data is made so that the two can be told apart: the shards' means differ.
    ASSERT_GT(global.var[c] - replicas.var[c], 0.05) << "channel " << c;
  }

  std::map<std::string, std::string> fp_sync, fp_local;
  auto sync = TrainOneStep("sync", 2, /*synchronized=*/true, &fp_sync);
  auto local = TrainOneStep("local", 2, /*synchronized=*/false, &fp_local);
  auto one = TrainOneStep("one_worker", 1, /*synchronized=*/true, nullptr);

  // (a) Both workers hold the same weights, bit for bit.
  ASSERT_EQ(fp_sync.size(), 2u);
  EXPECT_EQ(fp_sync["worker:0"], fp_sync["worker:1"]);
  ASSERT_EQ(fp_local.size(), 2u);
  EXPECT_EQ(fp_local["worker:0"], fp_local["worker:1"]);

  // (b) The moving statistics: the global batch's when synchronized, the mean of the
  // replicas' otherwise (their means agree, as the shards are equal in size; the
  // variances do not).
  ExpectMovingStatistics(sync, global, "synchronized");
  ExpectMovingStatistics(local, replicas, "per replica");
  ExpectMovingStatistics(one, global, "one worker");

  // (c) Synchronized, two workers train what one worker does on the whole batch (the
  // forward and backward sums only ordered differently); per replica they do not.
  EXPECT_LE(MaxAbsDifference(sync, one), 1e-5);
  EXPECT_GT(MaxAbsDifference(local, one), 1e-3);
  // Including the conv below BatchNormalization, which trains on the input gradient
  // that the synchronized backward all-reduces.
  ASSERT_EQ(sync.count("conv/kernel"), 1u);
  ASSERT_EQ(local.count("conv/kernel"), 1u);
  const auto conv = [](const std::map<std::string, checkpoint::Tensor>& t) {
    return std::map<std::string, checkpoint::Tensor>{{"conv/kernel", t.at("conv/kernel")}};
  };
  EXPECT_GT(MaxAbsDifference(conv(local), conv(one)), 1e-3);
}

}  // namespace
}  // namespace ringtrain::testing
