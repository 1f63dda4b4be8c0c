// Sharding policies and source-spec validation.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "data/dataset.h"
#include "data/synthetic.h"
#include "data_test_util.h"

namespace ringtrain::data {
namespace {

using json = nlohmann::json;
using testing::ExampleId;
using testing::IdxImages;
using testing::IdxLabelsFor;
using testing::WriteBytes;

// Example ids, in shard order, of a loaded shard of the test IDX files.
std::vector<int> Ids(const Dataset& d) {
  std::vector<int> ids;
  for (size_t k = 0; k < d.size(); ++k) ids.push_back(ExampleId(d.images.data() + k * d.example_size));
  return ids;
}

class LoadShardTest : public ::testing::Test {
 protected:
  // Files f0..f3 holding 7, 5, 11, 4 examples with consecutive ids 0..26.
  void SetUp() override {
    dir_ = tmp_.path();
    uint32_t id = 0;
    for (uint32_t f = 0; f < 4; ++f) {
      const uint32_t n = kSizes[f];
      WriteBytes(dir_ + "/img" + std::to_string(f), IdxImages(n, 2, 3, id));
      WriteBytes(dir_ + "/lbl" + std::to_string(f), IdxLabelsFor(n, id));
      id += n;
    }
  }
  json Spec(int files) {
    json images = json::array(), labels = json::array();
    for (int f = 0; f < files; ++f) {
      images.push_back("img" + std::to_string(f));
      labels.push_back("lbl" + std::to_string(f));
    }
    return {{"format", "mnist_idx"}, {"images", images}, {"labels", labels}};
  }
  StatusOr<ShardResult> Load(const json& spec, ShardPolicy p, int index, int n) {
    return LoadShard(spec, dir_, p, index, n, "data.train");
  }
  static constexpr uint32_t kSizes[4] = {7, 5, 11, 4};
  testing::TempDir tmp_;
  std::string dir_;
};

TEST_F(LoadShardTest, DataShardingCoversEveryExampleOnce) {
  json spec = Spec(3);  // 23 examples
  spec["first"] = 2;
  spec["count"] = 19;  // ids 2..20, across all three files
  for (int n = 1; n <= 5; ++n) {
    std::multiset<int> seen;
    for (int k = 0; k < n; ++k) {
      auto r = Load(spec, ShardPolicy::kData, k, n);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(r->applied, n == 1 ? ShardPolicy::kOff : ShardPolicy::kData);
      std::vector<int> ids = Ids(r->data);
      for (size_t j = 0; j < ids.size(); ++j) {
        EXPECT_EQ((ids[j] - 2) % n, k) << "n=" << n;  // element i of the range goes to worker i mod n
        EXPECT_EQ(r->data.labels[j], ids[j] % 10);     // labels travel with their images
        if (j > 0) {
          EXPECT_LT(ids[j - 1], ids[j]);
        }
      }
      seen.insert(ids.begin(), ids.end());
    }
    std::multiset<int> want;
    for (int id = 2; id <= 20; ++id) want.insert(id);
    EXPECT_EQ(seen, want) << "n=" << n;
  }
}

TEST_F(LoadShardTest, DataShardingDescriptionSaysWhatWasRead) {
  auto r = Load(Spec(1), ShardPolicy::kAuto, 1, 2);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->applied, ShardPolicy::kData);
  EXPECT_EQ(r->description, "AUTO -> DATA (1 file for 2 workers): worker 1 reads 3 of 7 examples");
}

TEST_F(LoadShardTest, FileShardingGivesWorkersAlternateFiles) {
  auto w0 = Load(Spec(4), ShardPolicy::kFile, 0, 2);
  auto w1 = Load(Spec(4), ShardPolicy::kFile, 1, 2);
  ASSERT_TRUE(w0.ok()) << w0.status().ToString();
  ASSERT_TRUE(w1.ok()) << w1.status().ToString();
  EXPECT_EQ(w0->applied, ShardPolicy::kFile);
  std::vector<int> want0, want1;
  for (int id = 0; id < 7; ++id) want0.push_back(id);    // file 0
  for (int id = 12; id < 23; ++id) want0.push_back(id);  // file 2
  for (int id = 7; id < 12; ++id) want1.push_back(id);   // file 1
  for (int id = 23; id < 27; ++id) want1.push_back(id);  // file 3
  EXPECT_EQ(Ids(w0->data), want0);
  EXPECT_EQ(Ids(w1->data), want1);
  EXPECT_EQ(w0->description, "FILE (4 files for 2 workers): worker 0 reads files 0, 2 of 4 (18 examples)");
}

TEST_F(LoadShardTest, FileShardingWithTooFewFilesFailsClearly) {
  auto r = Load(Spec(2), ShardPolicy::kFile, 0, 3);
  ASSERT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "FILE sharding needs at least 3 files but data.train has 2; use DATA or AUTO");
}

TEST_F(LoadShardTest, FileShardingRejectsFirstCount) {
  json spec = Spec(4);
  spec["count"] = 10;
  auto r = Load(spec, ShardPolicy::kFile, 0, 2);
  ASSERT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_NE(r.status().message().find("first/count cannot be combined with FILE sharding; use DATA"),
            std::string::npos);
}

TEST_F(LoadShardTest, AutoPicksFileOrData) {
  auto file = Load(Spec(4), ShardPolicy::kAuto, 1, 2);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ(file->applied, ShardPolicy::kFile);
  EXPECT_EQ(file->description.rfind("AUTO -> FILE (4 files for 2 workers)", 0), 0u) << file->description;

  auto data = Load(Spec(2), ShardPolicy::kAuto, 1, 3);
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  EXPECT_EQ(data->applied, ShardPolicy::kData);
  EXPECT_EQ(data->description.rfind("AUTO -> DATA (2 files for 3 workers)", 0), 0u) << data->description;

  json ranged = Spec(4);
  ranged["first"] = 1;
  auto r = Load(ranged, ShardPolicy::kAuto, 0, 2);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->applied, ShardPolicy::kData);
  EXPECT_EQ(r->data.size(), 13u);  // ids 1..26, even positions
}

TEST_F(LoadShardTest, OffAndSingleWorkerGiveEverything) {
  for (ShardPolicy p : {ShardPolicy::kOff, ShardPolicy::kAuto, ShardPolicy::kFile, ShardPolicy::kData}) {
    auto single = Load(Spec(4), p, 0, 1);
    ASSERT_TRUE(single.ok()) << single.status().ToString();
    EXPECT_EQ(single->data.size(), 27u) << ShardPolicyName(p);
    EXPECT_EQ(single->applied, ShardPolicy::kOff);
  }
  for (int k = 0; k < 3; ++k) {
    auto r = Load(Spec(4), ShardPolicy::kOff, k, 3);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->applied, ShardPolicy::kOff);
    EXPECT_EQ(r->data.size(), 27u);
    EXPECT_EQ(Ids(r->data).back(), 26);
  }
}

TEST_F(LoadShardTest, FirstCountOutOfRangeNamesTheField) {
  json spec = Spec(1);  // 7 examples
  spec["first"] = 7;
  auto r = Load(spec, ShardPolicy::kData, 0, 1);
  ASSERT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(r.status().message().rfind("data.train.first:", 0), 0u) << r.status().message();
  spec["first"] = 3;
  spec["count"] = 5;
  r = Load(spec, ShardPolicy::kData, 0, 1);
  ASSERT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(r.status().message().rfind("data.train.count:", 0), 0u) << r.status().message();
  spec["count"] = 4;  // exactly to the end
  EXPECT_TRUE(Load(spec, ShardPolicy::kData, 0, 1).ok());
}

TEST_F(LoadShardTest, EmptyShardIsAnError) {
  json spec = Spec(1);
  spec["count"] = 2;
  auto r = Load(spec, ShardPolicy::kData, 2, 3);
  ASSERT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_NE(r.status().message().find("no examples"), std::string::npos) << r.status().message();
}

TEST_F(LoadShardTest, BadSpecsNameTheField) {
  struct Case {
    json spec;
    std::string field;
  };
  std::vector<Case> cases = {
      {{{"format", "mnist_idx"}, {"images", "img0"}, {"labels", "lbl0"}, {"cuont", 3}}, "data.train.cuont"},
      {{{"format", "mnist_idx"}, {"images", "img0"}, {"labels", "lbl0"}, {"count", "3"}}, "data.train.count"},
      {{{"format", "mnist_idx"}, {"images", "img0"}, {"labels", "lbl0"}, {"count", 0}}, "data.train.count"},
      {{{"format", "mnist_idx"}, {"images", "img0"}, {"labels", "lbl0"}, {"first", -1}}, "data.train.first"},
      {{{"format", "mnist_idx"}, {"images", 5}, {"labels", "lbl0"}}, "data.train.images"},
      {{{"format", "mnist_idx"}, {"images", {"img0", 3}}, {"labels", {"lbl0", "lbl1"}}}, "data.train.images[1]"},
      {{{"format", "mnist_idx"}, {"images", {"img0", "img1"}}, {"labels", "lbl0"}}, "data.train.labels"},
      {{{"format", "mnist_idx"}, {"labels", "lbl0"}}, "data.train.images"},
      {{{"format", "csv"}}, "data.train.format"},
      {{{"images", "img0"}}, "data.train.format"},
      {json::array(), "data.train"},
      {{{"format", "synthetic"}}, "data.train.count"},
      {{{"format", "synthetic"}, {"count", 10}, {"shape", {28}}}, "data.train.shape"},
      {{{"format", "synthetic"}, {"count", 10}, {"shape", {28, 2}}}, "data.train.shape[1]"},
      {{{"format", "synthetic"}, {"count", 10}, {"classes", 1}}, "data.train.classes"},
      {{{"format", "synthetic"}, {"count", 10}, {"seed", -4}}, "data.train.seed"},
      {{{"format", "synthetic"}, {"count", 10}, {"task", 1.5}}, "data.train.task"},
      {{{"format", "synthetic"}, {"count", 10}, {"noise", 1.5}}, "data.train.noise"},
      {{{"format", "synthetic"}, {"count", 10}, {"files", 11}}, "data.train.files"},
      {{{"format", "synthetic"}, {"count", 10}, {"images", "x"}}, "data.train.images"},
      {{{"format", "synthetic"}, {"count", int64_t{1} << 40}}, "data.train.count"},
  };
  for (const Case& c : cases) {
    auto r = Load(c.spec, ShardPolicy::kAuto, 0, 1);
    ASSERT_EQ(r.status().code(), Code::kInvalidArgument) << c.spec.dump();
    EXPECT_EQ(r.status().message().rfind(c.field + ":", 0), 0u) << c.spec.dump() << " -> " << r.status().message();
  }
  auto r = Load({{"format", "csv"}}, ShardPolicy::kAuto, 0, 1);
  EXPECT_NE(r.status().message().find("\"mnist_idx\", \"synthetic\""), std::string::npos) << r.status().message();
}

TEST_F(LoadShardTest, WorkerIndexMustBeInRange) {
  EXPECT_EQ(Load(Spec(1), ShardPolicy::kData, 2, 2).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(Load(Spec(1), ShardPolicy::kData, -1, 2).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(Load(Spec(1), ShardPolicy::kData, 0, 0).status().code(), Code::kInvalidArgument);
}

TEST(ShardPolicyTest, ParsesCaseInsensitivelyAndRoundTrips) {
  for (ShardPolicy p : {ShardPolicy::kAuto, ShardPolicy::kFile, ShardPolicy::kData, ShardPolicy::kOff}) {
    auto parsed = ParseShardPolicy(ShardPolicyName(p));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, p);
  }
  EXPECT_EQ(*ParseShardPolicy("auto"), ShardPolicy::kAuto);
  EXPECT_EQ(*ParseShardPolicy("File"), ShardPolicy::kFile);
  auto bad = ParseShardPolicy("HINT");
  ASSERT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("AUTO, FILE, DATA, OFF"), std::string::npos);
}

// Synthetic sources shard the same way, by virtual file or by example.
TEST(SyntheticShardTest, FileShardingUsesContiguousVirtualFiles) {
  json spec = {{"format", "synthetic"}, {"count", 10}, {"first", 100}, {"shape", {8, 8}},
               {"seed", 3}, {"task", 5}, {"files", 4}};
  auto w1 = LoadShard(spec, "", ShardPolicy::kAuto, 1, 2);
  ASSERT_TRUE(w1.ok()) << w1.status().ToString();
  EXPECT_EQ(w1->applied, ShardPolicy::kFile);
  // Virtual files of 10 ids: [100,102) [102,105) [105,107) [107,110); worker 1 has files 1 and 3.
  SyntheticParams p;
  p.shape = {8, 8};
  p.seed = 3;
  p.task = 5;
  SyntheticGenerator gen(p);
  std::vector<float> want;
  std::vector<int32_t> want_labels;
  for (uint64_t id : {102, 103, 104, 107, 108, 109}) {
    std::vector<float> ex(gen.example_size());
    want_labels.push_back(gen.Example(id, ex.data()));
    want.insert(want.end(), ex.begin(), ex.end());
  }
  EXPECT_EQ(w1->data.images, want);
  EXPECT_EQ(w1->data.labels, want_labels);
  EXPECT_EQ(w1->data.num_classes, 10);
  EXPECT_EQ(w1->data.example_shape, (std::vector<int>{8, 8}));

  spec.erase("files");
  auto fail = LoadShard(spec, "", ShardPolicy::kFile, 0, 2, "data.eval");
  EXPECT_EQ(fail.status().message(), "FILE sharding needs at least 2 files but data.eval has 1; use DATA or AUTO");
}

TEST(SyntheticShardTest, DataShardsReassembleTheWholeSet) {
  json spec = {{"format", "synthetic"}, {"count", 23}, {"shape", {10, 9}}, {"seed", 11}};
  auto all = LoadShard(spec, "", ShardPolicy::kOff, 0, 1);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  const size_t es = all->data.example_size;
  for (int n = 2; n <= 5; ++n) {
    for (int k = 0; k < n; ++k) {
      auto r = LoadShard(spec, "", ShardPolicy::kData, k, n);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      for (size_t j = 0; j < r->data.size(); ++j) {
        const size_t i = j * n + k;
        ASSERT_LT(i, all->data.size());
        EXPECT_EQ(r->data.labels[j], all->data.labels[i]);
        EXPECT_TRUE(std::equal(r->data.images.begin() + j * es, r->data.images.begin() + (j + 1) * es,
                               all->data.images.begin() + i * es));
      }
      EXPECT_EQ(r->data.size(), (23 - k + n - 1) / static_cast<size_t>(n));
    }
  }
}

}  // namespace
}  // namespace ringtrain::data
