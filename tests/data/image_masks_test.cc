// The image_folder source with segmentation masks: images paired with masks by path
// without the extension, one class index per pixel (resized by nearest neighbour), and
// each bad-data case as one line: a missing mask, two masks for one image, a pixel that
// is no class below num_classes, and the configuration mistakes.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "common/exit_policy.h"
#include "data/inspect.h"
#include "data/pipeline.h"
#include "data/shard.h"
#include "data/source.h"
#include "image/test_images.h"
#include "testing/temp_dir.h"

namespace ringtrain::data {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using ringtrain::testing::MakeImages;
using ringtrain::testing::TempDir;

json File(const std::string& path, const std::string& format, const std::string& mode, const json& fill, int h = 4,
          int w = 6) {
  return {{"path", path}, {"format", format}, {"mode", mode}, {"h", h}, {"w", w}, {"fill", fill}};
}

// images/a.png (gray), images/sub/b.jpg (RGB); masks/a.png with columns of classes 0, 1, 2
// and masks/sub/b.png all class 2.
class ImageMasksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    images_ = tmp_.path() + "/images";
    masks_ = tmp_.path() + "/masks";
    for (const std::string& d : {images_ + "/sub", masks_ + "/sub"}) fs::create_directories(d);
    ASSERT_TRUE(MakeImages(json::array({File(images_ + "/a.png", "PNG", "L", "gradient"),
                                        File(images_ + "/sub/b.jpg", "JPEG", "RGB", "gradient"),
                                        File(masks_ + "/a.png", "PNG", "L", {{"columns", {0, 1, 2}}}),
                                        File(masks_ + "/sub/b.png", "PNG", "L", {2})}),
                           tmp_.path()));
  }
  json Entry(json extra = json::object()) const {
    json s = {{"format", "image_folder"}, {"directory", images_}, {"masks", masks_}, {"num_classes", 3},
              {"color_mode", "grayscale"}, {"image_size", {4, 6}}};
    s.update(extra);
    return s;
  }
  StatusOr<std::unique_ptr<Source>> Open(const json& entry) const {
    RT_ASSIGN_OR_RETURN(auto f, ParseImageFolder(entry, "", "data.train"));
    std::vector<int64_t> all;
    for (int64_t i = 0; i < f->num_files(); ++i) all.push_back(i);
    return f->Open(all);
  }
  TempDir tmp_;
  std::string images_, masks_;
};

TEST_F(ImageMasksTest, EachImageGetsItsMaskAsOneClassPerPixel) {
  auto src = Open(Entry());
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  const ExampleSpec& spec = (*src)->spec();
  EXPECT_EQ(spec.shape, (std::vector<int>{4, 6, 1}));
  EXPECT_EQ(spec.label_shape, (std::vector<int>{4, 6}));
  EXPECT_EQ(spec.label_size(), 24u);
  EXPECT_EQ(spec.num_classes, 3);
  ASSERT_EQ((*src)->size(), 2);
  EXPECT_EQ((*src)->Where(0), "a.png");
  EXPECT_EQ((*src)->Where(1), "sub/b.jpg");  // paired with sub/b.png: another extension
  std::vector<float> x(spec.size());
  std::vector<int32_t> labels(spec.label_size(), -1);
  ASSERT_TRUE((*src)->Read(0, x.data(), labels.data()).ok());
  for (int y = 0; y < 4; ++y) {
    for (int c = 0; c < 6; ++c) EXPECT_EQ(labels[static_cast<size_t>(y * 6 + c)], c % 3) << y << "," << c;
  }
  const Status second = (*src)->Read(1, x.data(), labels.data());
  ASSERT_TRUE(second.ok()) << second.ToString();
  for (int32_t l : labels) EXPECT_EQ(l, 2);
}

TEST_F(ImageMasksTest, MasksAreResizedByNearestNeighbour) {
  // 6 columns 0 1 2 0 1 2 halved to 3: nearest picks one source column each, never a blend.
  auto src = Open(Entry({{"image_size", {2, 3}}}));
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  std::vector<float> x((*src)->spec().size());
  std::vector<int32_t> labels((*src)->spec().label_size(), -1);
  ASSERT_TRUE((*src)->Read(0, x.data(), labels.data()).ok());
  ASSERT_EQ(labels.size(), 6u);
  for (int32_t l : labels) EXPECT_TRUE(l >= 0 && l <= 2) << l;
  EXPECT_EQ(labels[0], labels[3]);  // both rows alike: the mask's rows are
}

TEST_F(ImageMasksTest, ThePipelineBatchesEveryPixelsLabel) {
  auto shard = OpenShard(Entry(), "", ShardPolicy::kOff, 0, 1, "data.train");
  ASSERT_TRUE(shard.ok()) << shard.status().ToString();
  for (const bool cache : {false, true}) {
    PipelineOptions o;
    o.num_parallel_calls = 2;
    o.cache = cache ? PipelineOptions::Cache::kMemory : PipelineOptions::Cache::kNone;
    Pipeline p(&*shard, 2, 1, /*shuffle=*/false, o);
    std::vector<float> x(2 * 24);
    std::vector<int32_t> labels(2 * 24, -1);
    for (int pass = 0; pass < 2; ++pass) {  // the second pass from the cache when there is one
      ASSERT_TRUE(p.Next(x.data(), labels.data()).ok());
      for (int k = 0; k < 24; ++k) EXPECT_EQ(labels[static_cast<size_t>(k)], (k % 6) % 3) << cache << " " << k;
      for (int k = 24; k < 48; ++k) EXPECT_EQ(labels[static_cast<size_t>(k)], 2) << cache << " " << k;
    }
  }
}

// `data inspect` counts every pixel's class: a.png's 24 pixels are 8 of each of 0, 1, 2, and
// sub/b.png's 24 are all 2.
TEST_F(ImageMasksTest, InspectCountsEveryPixelsClass) {
  auto in = Inspect(Entry(), "", InspectOptions{});
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  ASSERT_EQ(in->classes.size(), 3u);
  EXPECT_EQ(in->classes[0].count, 8);
  EXPECT_EQ(in->classes[1].count, 8);
  EXPECT_EQ(in->classes[2].count, 32);
  EXPECT_NE(FormatInspection(*in).find("32   66.7%"), std::string::npos) << FormatInspection(*in);
}

TEST_F(ImageMasksTest, AnImageWithoutAMaskIsNamed) {
  fs::remove(masks_ + "/sub/b.png");
  auto f = ParseImageFolder(Entry(), "", "data.train");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(ExitCodeFor(f.status()), 3) << f.status().ToString();
  EXPECT_NE(f.status().message().find("data.train.masks: no mask for image '" + images_ + "/sub/b.jpg'"),
            std::string::npos)
      << f.status().message();
  EXPECT_NE(f.status().message().find("add its mask or remove the image"), std::string::npos);
}

TEST_F(ImageMasksTest, TwoMasksForOneImageAreRefused) {
  ASSERT_TRUE(MakeImages(json::array({File(masks_ + "/a.bmp", "BMP", "L", {0})}), tmp_.path()));
  auto f = ParseImageFolder(Entry(), "", "data.train");
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("are both the mask of 'a.*'"), std::string::npos) << f.status().message();
}

TEST_F(ImageMasksTest, APixelThatIsNoClassIsNamedWithItsPosition) {
  auto src = Open(Entry({{"num_classes", 2}}));
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  std::vector<float> x((*src)->spec().size());
  std::vector<int32_t> labels((*src)->spec().label_size());
  const Status s = (*src)->Read(0, x.data(), labels.data());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(ExitCodeFor(s), 3) << s.ToString();
  EXPECT_NE(s.message().find("mask '" + masks_ + "/a.png': pixel (0, 2) after resizing holds 2, not a class index "
                             "below num_classes 2"),
            std::string::npos)
      << s.message();
}

TEST_F(ImageMasksTest, ConfigurationMistakesAreOneLineEach) {
  struct Case {
    json entry;
    const char* says;
  };
  json no_classes = Entry();
  no_classes.erase("num_classes");
  json no_masks = Entry();
  no_masks.erase("masks");
  for (const Case& c : {Case{no_classes, "data.train.num_classes: with masks, must give the number of classes"},
                        Case{Entry({{"class_names", {"a"}}}), "data.train.masks: takes its labels from the masks"},
                        Case{no_masks, "data.train.num_classes: goes with masks"},
                        Case{Entry({{"masks", tmp_.path() + "/nowhere"}}), "is not a directory"}}) {
    auto f = ParseImageFolder(c.entry, "", "data.train");
    ASSERT_FALSE(f.ok()) << c.entry.dump();
    EXPECT_NE(f.status().message().find(c.says), std::string::npos) << f.status().message();
    EXPECT_EQ(f.status().message().find('\n'), std::string::npos);
  }
}

}  // namespace
}  // namespace ringtrain::data
