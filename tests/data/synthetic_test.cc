// The synthetic dataset: deterministic, well-formed, and learnable.
#include "data/synthetic.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "data/dataset.h"

namespace ringtrain::data {
namespace {

using json = nlohmann::json;

Dataset LoadSynthetic(const json& spec) {
  auto r = LoadShard(spec, "", ShardPolicy::kOff, 0, 1, "data.train");
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r->data) : Dataset();
}

TEST(SyntheticTest, SameSeedSameBitsDifferentSeedDifferentData) {
  json spec = {{"format", "synthetic"}, {"count", 64}, {"seed", 7}};
  Dataset a = LoadSynthetic(spec), b = LoadSynthetic(spec);
  ASSERT_EQ(a.size(), 64u);
  EXPECT_EQ(a.example_shape, (std::vector<int>{28, 28}));  // the defaults
  EXPECT_EQ(a.example_size, 784u);
  EXPECT_EQ(a.num_classes, 10);
  EXPECT_EQ(0, std::memcmp(a.images.data(), b.images.data(), a.images.size() * sizeof(float)));
  EXPECT_EQ(a.labels, b.labels);
  spec["seed"] = 8;
  Dataset c = LoadSynthetic(spec);
  EXPECT_NE(a.images, c.images);
  EXPECT_NE(a.labels, c.labels);
}

TEST(SyntheticTest, ExampleDependsOnlyOnSeedAndId) {
  json spec = {{"format", "synthetic"}, {"count", 8}, {"first", 40}, {"seed", 5}};
  Dataset shifted = LoadSynthetic(spec);
  spec["first"] = 0;
  spec["count"] = 48;
  Dataset all = LoadSynthetic(spec);
  EXPECT_TRUE(std::equal(shifted.images.begin(), shifted.images.end(), all.images.begin() + 40 * 784));
  EXPECT_TRUE(std::equal(shifted.labels.begin(), shifted.labels.end(), all.labels.begin() + 40));
}

TEST(SyntheticTest, ValuesInRangeAndLabelsBalanced) {
  json spec = {{"format", "synthetic"}, {"count", 4000}, {"seed", 1}, {"classes", 8}, {"shape", {16, 12, 2}}};
  Dataset d = LoadSynthetic(spec);
  ASSERT_EQ(d.size(), 4000u);
  EXPECT_EQ(d.example_size, 16u * 12 * 2);
  EXPECT_EQ(d.num_classes, 8);
  auto [lo, hi] = std::minmax_element(d.images.begin(), d.images.end());
  EXPECT_GE(*lo, 0.f);
  EXPECT_LE(*hi, 1.f);
  EXPECT_GT(*hi, 0.9f);  // strokes are drawn, not just noise
  std::vector<int> counts(8);
  for (int32_t l : d.labels) {
    ASSERT_GE(l, 0);
    ASSERT_LT(l, 8);
    ++counts[l];
  }
  for (int c : counts) {
    EXPECT_GT(c, 500 * 0.8) << "class counts should be near 4000/8";
    EXPECT_LT(c, 500 * 1.2);
  }
}

TEST(SyntheticTest, NoiseControlsTheBackground) {
  // Away from the strokes a noise-free image is black; noise lifts about half of
  // those pixels (the other half clip to 0).
  auto zero_fraction = [](const Dataset& d) {
    return std::count_if(d.images.begin(), d.images.end(), [](float v) { return v < 0.01f; }) /
           static_cast<double>(d.images.size());
  };
  const double clean = zero_fraction(LoadSynthetic({{"format", "synthetic"}, {"count", 200}, {"seed", 2}, {"noise", 0}}));
  const double noisy = zero_fraction(LoadSynthetic({{"format", "synthetic"}, {"count", 200}, {"seed", 2}}));
  EXPECT_GT(clean, 0.6) << "noisy " << noisy;
  // A black pixel stays below 0.01 with probability (0.35 + 0.01) / 0.7 = 0.51;
  // faint stroke tails add a little more.
  EXPECT_GT(noisy, clean * 0.45);
  EXPECT_LT(noisy, clean * 0.75);
}

// Nearest-class-mean accuracy on `test` of class means from `train`.
double NearestClassMeanAccuracy(const Dataset& train, const Dataset& test) {
  const size_t es = train.example_size;
  const int classes = train.num_classes;
  std::vector<double> mean(classes * es, 0.0);
  std::vector<int> n(classes, 0);
  for (size_t k = 0; k < train.size(); ++k) {
    ++n[train.labels[k]];
    for (size_t p = 0; p < es; ++p) mean[train.labels[k] * es + p] += train.images[k * es + p];
  }
  for (int c = 0; c < classes; ++c) {
    for (size_t p = 0; p < es; ++p) mean[c * es + p] /= std::max(1, n[c]);
  }
  int correct = 0;
  for (size_t k = 0; k < test.size(); ++k) {
    int best = -1;
    double best_d = 1e300;
    for (int c = 0; c < classes; ++c) {
      double d2 = 0;
      for (size_t p = 0; p < es; ++p) {
        const double e = test.images[k * es + p] - mean[c * es + p];
        d2 += e * e;
      }
      if (d2 < best_d) best_d = d2, best = c;
    }
    correct += best == test.labels[k];
  }
  return correct / static_cast<double>(test.size());
}

json Source(uint64_t task, uint64_t seed, int first, int count) {
  return {{"format", "synthetic"}, {"task", task}, {"seed", seed}, {"first", first}, {"count", count}};
}

// Far above chance (10%) on held-out examples, but far from perfect.
TEST(SyntheticTest, LearnableButNotTrivial) {
  for (uint64_t task : {0u, 2u}) {
    Dataset train = LoadSynthetic(Source(task, 7, 0, 3000));
    Dataset held_out = LoadSynthetic(Source(task, 7, 3000, 1000));  // later ids, same seed
    const double acc = NearestClassMeanAccuracy(train, held_out);
    EXPECT_GT(acc, 0.6) << "task " << task;
    EXPECT_LT(acc, 0.95) << "task " << task;
  }
}

TEST(SyntheticTest, SeedDrawsExamplesTaskDecidesTheClasses) {
  Dataset train = LoadSynthetic(Source(0, 7, 0, 3000));
  // Another seed: fresh examples of the same task, so what was learnt carries over.
  const double same_task = NearestClassMeanAccuracy(train, LoadSynthetic(Source(0, 8, 0, 1000)));
  EXPECT_GT(same_task, 0.6);
  // Another task: the classes look different, so it does not.
  const double other_task = NearestClassMeanAccuracy(train, LoadSynthetic(Source(1, 7, 0, 1000)));
  EXPECT_LT(other_task, 0.3);
}

}  // namespace
}  // namespace ringtrain::data
