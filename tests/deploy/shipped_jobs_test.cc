// Every job file shipped in deploy/jobs/ loads with ringtrain's own parser and its model
// builds; the ResNet-20 and VGG16 models have the published sizes (ResNet-20: 0.27 M parameters,
// He et al. 2016; VGG16 without its top: Keras' 14,714,688) and VGG16's frozen base
// leaves only the head trainable.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "config/job_config.h"
#include "nn/model.h"
#include "testing/source_dir.h"

namespace ringtrain {
namespace {

namespace fs = std::filesystem;

std::string JobPath(const std::string& name) { return testing::TestSourceDir() + "/deploy/jobs/" + name; }

TEST(ShippedJobs, EveryJobFileLoadsAndItsModelBuilds) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(testing::TestSourceDir() + "/deploy/jobs")) {
    if (e.path().extension() == ".json") names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  ASSERT_GE(names.size(), 12u);
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    auto job = config::LoadJobConfig(JobPath(name));
    ASSERT_TRUE(job.ok()) << job.status().ToString();
    auto model = nn::Model::FromJson(job->model, job->seed);
    ASSERT_TRUE(model.ok()) << model.status().ToString();
  }
}

TEST(ShippedJobs, ResNet20AndVgg16HaveThePublishedSizes) {
  auto resnet = config::LoadJobConfig(JobPath("resnet20_cifar_shape.json"));
  ASSERT_TRUE(resnet.ok()) << resnet.status().ToString();
  auto r = nn::Model::FromJson(resnet->model, 1);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // 272,474 trainable + BatchNormalization's 1,568 moving statistics.
  EXPECT_EQ((*r)->num_params(), 274042u);
  EXPECT_EQ((*r)->num_trainable(), 272474u);

  auto vgg = config::LoadJobConfig(JobPath("vgg16_transfer.json"));
  ASSERT_TRUE(vgg.ok()) << vgg.status().ToString();
  auto v = nn::Model::FromJson(vgg->model, 1);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  const size_t head = 7 * 7 * 512 * 10 + 10;
  EXPECT_EQ((*v)->num_params(), 14714688u + head);
  // Blocks 1-4 frozen (Keras' base_model.layers[:15]): block 5's three convolutions and the head train.
  const size_t block5 = 3 * (3 * 3 * 512 * 512 + 512);
  EXPECT_EQ((*v)->num_trainable(), block5 + head);
}

}  // namespace
}  // namespace ringtrain
