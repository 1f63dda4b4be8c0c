// Place's decision over fabricated build and runtime infos, so that the GPU cases are
// tested on machines without one; ParseDeviceKind; LocalRank's environment variables.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <optional>
#include <string>

#include "device/device.h"

namespace ringtrain::device {
namespace {

BuildInfo GpuBuild() {
  BuildInfo b;
  b.cuda = "13.0.88";
  b.cudnn = "9.19.0";
  b.nccl = "2.28.9";
  b.gpu_engine = true;
  return b;
}

RuntimeInfo TwoGpus() {
  RuntimeInfo rt;
  rt.driver_version = 13000;
  for (int i = 0; i < 2; ++i) {
    Gpu g;
    g.ordinal = i;
    g.name = i == 0 ? "NVIDIA H200" : "NVIDIA A100";
    g.memory_gib = 80;
    g.compute_major = 9;
    g.pci_bus_id = "0000:1" + std::to_string(i) + ":00.0";
    rt.gpus.push_back(g);
  }
  return rt;
}

RuntimeInfo NoDriver() {
  RuntimeInfo rt;
  rt.unavailable_reason = "no CUDA driver is installed";
  return rt;
}

TEST(PlaceOnTest, AutoTakesTheLocalRanksGpu) {
  auto p = PlaceOn(GpuBuild(), TwoGpus(), DeviceKind::kAuto, 0);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_TRUE(p->gpu);
  EXPECT_EQ(p->ordinal, 0);
  EXPECT_EQ(p->reason, "GPU 0 (NVIDIA H200) for local rank 0 of 2 visible GPU(s)");

  p = PlaceOn(GpuBuild(), TwoGpus(), DeviceKind::kAuto, 1);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->ordinal, 1);
  EXPECT_EQ(p->reason, "GPU 1 (NVIDIA A100) for local rank 1 of 2 visible GPU(s)");

  // More workers than GPUs on the machine: they share, round robin.
  p = PlaceOn(GpuBuild(), TwoGpus(), DeviceKind::kAuto, 5);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->ordinal, 1);
  EXPECT_EQ(p->reason, "GPU 1 (NVIDIA A100) for local rank 5 of 2 visible GPU(s)");
}

TEST(PlaceOnTest, NegativeLocalRankCountsAsZero) {
  auto p = PlaceOn(GpuBuild(), TwoGpus(), DeviceKind::kAuto, -3);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->ordinal, 0);
}

TEST(PlaceOnTest, GpuKindWithGpus) {
  auto p = PlaceOn(GpuBuild(), TwoGpus(), DeviceKind::kGpu, 3);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_TRUE(p->gpu);
  EXPECT_EQ(p->ordinal, 1);
}

TEST(PlaceOnTest, CpuKindStaysOnTheCpuEvenWithGpus) {
  auto p = PlaceOn(GpuBuild(), TwoGpus(), DeviceKind::kCpu, 0);
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->gpu);
  EXPECT_EQ(p->ordinal, -1);
  EXPECT_EQ(p->reason, "the job asks for the CPU");
}

TEST(PlaceOnTest, AutoWithoutDriverTrainsOnTheCpu) {
  auto p = PlaceOn(GpuBuild(), NoDriver(), DeviceKind::kAuto, 0);
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->gpu);
  EXPECT_EQ(p->ordinal, -1);
  EXPECT_EQ(p->reason, "no CUDA driver is installed: training on the CPU");
}

TEST(PlaceOnTest, GpuKindWithoutDriverFailsSayingWhatToDo) {
  auto p = PlaceOn(GpuBuild(), NoDriver(), DeviceKind::kGpu, 0);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(p.status().message(),
            "the job asks for \"device\": \"gpu\" but no CUDA GPU is usable (no CUDA driver is installed); run it on "
            "a machine with a GPU and its driver, or set \"device\": \"auto\" or \"cpu\"");
}

TEST(PlaceOnTest, NoGpuAndNoReasonStillExplains) {
  auto p = PlaceOn(GpuBuild(), RuntimeInfo{}, DeviceKind::kAuto, 0);
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->gpu);
  EXPECT_EQ(p->reason, "no CUDA GPU is visible: training on the CPU");
}

TEST(PlaceOnTest, BuildWithoutCuda) {
  RuntimeInfo rt;
  rt.unavailable_reason = "built without CUDA";
  auto p = PlaceOn(BuildInfo{}, rt, DeviceKind::kAuto, 0);
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->gpu);
  EXPECT_EQ(p->reason, "this ringtrain was built without CUDA: training on the CPU");

  p = PlaceOn(BuildInfo{}, rt, DeviceKind::kGpu, 0);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), Code::kFailedPrecondition);
  const std::string m = p.status().message();
  EXPECT_NE(m.find("built without CUDA"), std::string::npos) << m;
  EXPECT_NE(m.find("-DRINGTRAIN_CUDA=ON"), std::string::npos) << m;
  EXPECT_NE(m.find("cuDNN"), std::string::npos) << m;
  EXPECT_NE(m.find("set \"device\": \"auto\" or \"cpu\""), std::string::npos) << m;
}

TEST(PlaceOnTest, NcclOnlyBuildDoesNotTrainOnGpusItSees) {
  // CUDA and NCCL but no cuDNN: GPUs are reported, yet there is no engine to use them.
  BuildInfo b;
  b.cuda = "13.0.88";
  b.nccl = "2.28.9";
  auto p = PlaceOn(b, TwoGpus(), DeviceKind::kAuto, 0);
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->gpu);
  EXPECT_EQ(p->reason, "this ringtrain was built without the GPU engine (CUDA 13.0.88 was found, but not nvcc, "
                       "cuBLAS and cuDNN together): training on the CPU");

  p = PlaceOn(b, TwoGpus(), DeviceKind::kGpu, 0);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(p.status().message().find("without the GPU engine"), std::string::npos);
}

TEST(PlaceOnTest, ReasonsAreOneLine) {
  for (DeviceKind kind : {DeviceKind::kAuto, DeviceKind::kCpu, DeviceKind::kGpu}) {
    for (const RuntimeInfo& rt : {TwoGpus(), NoDriver()}) {
      auto p = PlaceOn(GpuBuild(), rt, kind, 0);
      const std::string text = p.ok() ? p->reason : p.status().message();
      EXPECT_FALSE(text.empty());
      EXPECT_EQ(text.find('\n'), std::string::npos) << text;
    }
  }
}

TEST(PlaceTest, CpuNeedsNothing) {
  auto p = Place(DeviceKind::kCpu, 0);
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->gpu);
  EXPECT_EQ(p->reason, "the job asks for the CPU");
}

// ---------------------------------------------------------------- device kinds
TEST(DeviceKindTest, ParsesCaseInsensitively) {
  EXPECT_EQ(*ParseDeviceKind("auto"), DeviceKind::kAuto);
  EXPECT_EQ(*ParseDeviceKind("CPU"), DeviceKind::kCpu);
  EXPECT_EQ(*ParseDeviceKind("Gpu"), DeviceKind::kGpu);
}

TEST(DeviceKindTest, RejectsOthersNamingTheChoices) {
  for (const char* bad : {"", "cuda", "gpu0", " cpu"}) {
    auto k = ParseDeviceKind(bad);
    ASSERT_FALSE(k.ok()) << bad;
    EXPECT_EQ(k.status().code(), Code::kInvalidArgument);
    const std::string m = k.status().message();
    EXPECT_NE(m.find("\"auto\""), std::string::npos) << m;
    EXPECT_NE(m.find("\"cpu\""), std::string::npos) << m;
    EXPECT_NE(m.find("\"gpu\""), std::string::npos) << m;
  }
}

TEST(DeviceKindTest, NamesRoundTrip) {
  for (DeviceKind kind : {DeviceKind::kAuto, DeviceKind::kCpu, DeviceKind::kGpu}) {
    auto parsed = ParseDeviceKind(DeviceKindName(kind));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, kind);
  }
  EXPECT_STREQ(DeviceKindName(DeviceKind::kGpu), "gpu");
}

// ---------------------------------------------------------------- LocalRank
// Saves the three variables and restores them after each test.
class LocalRankTest : public ::testing::Test {
 protected:
  static constexpr const char* kNames[] = {"LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK"};
  void SetUp() override {
    for (int i = 0; i < 3; ++i) {
      const char* v = getenv(kNames[i]);
      saved_[i] = v ? std::optional<std::string>(v) : std::nullopt;
      unsetenv(kNames[i]);
    }
  }
  void TearDown() override {
    for (int i = 0; i < 3; ++i) {
      if (saved_[i]) {
        setenv(kNames[i], saved_[i]->c_str(), 1);
      } else {
        unsetenv(kNames[i]);
      }
    }
  }
  std::optional<std::string> saved_[3];
};

TEST_F(LocalRankTest, FallbackWhenNoneIsSet) { EXPECT_EQ(LocalRank(7), 7); }

TEST_F(LocalRankTest, LocalRankFirst) {
  setenv("LOCAL_RANK", "3", 1);
  setenv("SLURM_LOCALID", "1", 1);
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "2", 1);
  EXPECT_EQ(LocalRank(0), 3);
}

TEST_F(LocalRankTest, ThenSlurmThenOpenMpi) {
  setenv("SLURM_LOCALID", "1", 1);
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "2", 1);
  EXPECT_EQ(LocalRank(0), 1);
  unsetenv("SLURM_LOCALID");
  EXPECT_EQ(LocalRank(0), 2);
}

TEST_F(LocalRankTest, IgnoresValuesThatAreNotNonNegativeIntegers) {
  for (const char* bad : {"", "-1", "x", "1x", " 2", "99999999999"}) {
    setenv("LOCAL_RANK", bad, 1);
    EXPECT_EQ(LocalRank(5), 5) << "'" << bad << "'";
  }
  setenv("LOCAL_RANK", "junk", 1);
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "4", 1);
  EXPECT_EQ(LocalRank(5), 4);
  setenv("LOCAL_RANK", "0", 1);
  EXPECT_EQ(LocalRank(5), 0);
}

}  // namespace
}  // namespace ringtrain::device
