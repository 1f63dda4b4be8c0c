// The real MNIST test set, from /work/shared/data/mnist (beside the source tree, or RINGTRAIN_SOURCE_DIR).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "data/dataset.h"

namespace ringtrain::data {
namespace {

using json = nlohmann::json;

class MnistTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* src = std::getenv("RINGTRAIN_SOURCE_DIR");
    dir_ = std::string(src ? src : RINGTRAIN_TEST_SOURCE_DIR) + "/../shared/data/mnist";
    if (!std::filesystem::exists(dir_ + "/t10k-images-idx3-ubyte.gz")) {
      GTEST_SKIP() << "MNIST test set not found in " << dir_;
    }
  }
  json Spec() const {
    return {{"format", "mnist_idx"}, {"images", "t10k-images-idx3-ubyte.gz"}, {"labels", "t10k-labels-idx1-ubyte.gz"}};
  }
  std::string dir_;
};

TEST_F(MnistTest, LoadsTheWholeTestSet) {
  auto r = LoadShard(Spec(), dir_, ShardPolicy::kAuto, 0, 1, "data.eval");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Dataset& d = r->data;
  EXPECT_EQ(d.size(), 10000u);
  EXPECT_EQ(d.example_shape, (std::vector<int>{28, 28}));
  EXPECT_EQ(d.example_size, 784u);
  EXPECT_EQ(d.num_classes, 10);
  EXPECT_EQ(d.labels[0], 7);
  EXPECT_EQ(d.labels[1], 2);
  EXPECT_EQ(d.labels[2], 1);
  auto [lo, hi] = std::minmax_element(d.images.begin(), d.images.end());
  EXPECT_EQ(*lo, 0.f);
  EXPECT_EQ(*hi, 1.f);
  std::vector<int> counts(10);
  for (int32_t l : d.labels) ++counts[l];
  EXPECT_EQ(counts[0], 980);  // the t10k set's well-known class counts
  EXPECT_EQ(counts[1], 1135);
}

TEST_F(MnistTest, FirstCountSelectsTheEvaluationSplit) {
  auto all = LoadShard(Spec(), dir_, ShardPolicy::kAuto, 0, 1);
  json spec = Spec();
  spec["first"] = 8000;
  spec["count"] = 2000;
  auto eval = LoadShard(spec, dir_, ShardPolicy::kAuto, 0, 1);
  ASSERT_TRUE(all.ok() && eval.ok());
  ASSERT_EQ(eval->data.size(), 2000u);
  EXPECT_TRUE(std::equal(eval->data.labels.begin(), eval->data.labels.end(), all->data.labels.begin() + 8000));
  EXPECT_TRUE(std::equal(eval->data.images.begin(), eval->data.images.end(), all->data.images.begin() + 8000 * 784));
}

TEST_F(MnistTest, TrainingSplitShardedAcrossTwoWorkers) {
  json spec = Spec();
  spec["count"] = 8000;
  auto w1 = LoadShard(spec, dir_, ShardPolicy::kAuto, 1, 2, "data.train");
  ASSERT_TRUE(w1.ok()) << w1.status().ToString();
  EXPECT_EQ(w1->data.size(), 4000u);
  EXPECT_EQ(w1->data.labels[0], 2);  // example 1
  EXPECT_EQ(w1->description, "AUTO -> DATA (1 file for 2 workers): worker 1 reads 4000 of 8000 examples");
}

}  // namespace
}  // namespace ringtrain::data
