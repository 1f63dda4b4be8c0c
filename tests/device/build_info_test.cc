// Build(): the versions cmake/cuda.cmake found, as the configure step saw them.
#include <gtest/gtest.h>

#include "device/device.h"

namespace ringtrain::device {
namespace {

TEST(BuildInfoTest, ReportsWhatCMakeFound) {
  const BuildInfo& b = Build();
  EXPECT_EQ(b.cuda, RINGTRAIN_EXPECT_CUDA);
  EXPECT_EQ(b.cudnn, RINGTRAIN_EXPECT_CUDNN);
  EXPECT_EQ(b.nccl, RINGTRAIN_EXPECT_NCCL);
  EXPECT_EQ(b.gpu_engine, RINGTRAIN_EXPECT_GPU_ENGINE == 1);
  EXPECT_EQ(&Build(), &b);
}

TEST(BuildInfoTest, GpuEngineNeedsCudaAndCudnn) {
  const BuildInfo& b = Build();
  if (b.gpu_engine) {
    EXPECT_FALSE(b.cuda.empty());
    EXPECT_FALSE(b.cudnn.empty());
  }
  if (!b.nccl.empty()) {
    EXPECT_FALSE(b.cuda.empty());
  }
}

TEST(BuildInfoTest, SummaryNamesEveryPart) {
  auto part = [](const std::string& name, const std::string& v) {
    return v.empty() ? name + ": absent" : name + " " + v;
  };
  const std::string expected = part("CUDA", RINGTRAIN_EXPECT_CUDA) + ", " + part("cuDNN", RINGTRAIN_EXPECT_CUDNN) +
                               ", " + part("NCCL", RINGTRAIN_EXPECT_NCCL);
  EXPECT_EQ(BuildSummary(), expected);
}

TEST(BuildInfoTest, CudaVersionText) {
  EXPECT_EQ(CudaVersionText(13000), "13.0");
  EXPECT_EQ(CudaVersionText(12040), "12.4");
  EXPECT_EQ(CudaVersionText(11080), "11.8");
  EXPECT_EQ(CudaVersionText(0), "none");
  EXPECT_EQ(CudaVersionText(-1), "none");
}

}  // namespace
}  // namespace ringtrain::device
