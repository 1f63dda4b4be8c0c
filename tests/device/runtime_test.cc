// Runtime() on the machine running the test: without a driver (CI) it must say why
// there is no GPU, without crashing; with GPUs it must describe them.
#include <gtest/gtest.h>

#include <string>

#include "device/device.h"

namespace ringtrain::device {
namespace {

std::string Major(const std::string& version) { return version.substr(0, version.find('.')); }

TEST(RuntimeTest, GpusOrAReason) {
  const RuntimeInfo& rt = Runtime();
  if (rt.gpus.empty()) {
    EXPECT_FALSE(rt.unavailable_reason.empty());
    EXPECT_EQ(rt.unavailable_reason.find('\n'), std::string::npos) << rt.unavailable_reason;
  } else {
    EXPECT_TRUE(rt.unavailable_reason.empty()) << rt.unavailable_reason;
    EXPECT_GT(rt.driver_version, 0);
  }
  for (size_t i = 0; i < rt.gpus.size(); ++i) {
    const Gpu& g = rt.gpus[i];
    EXPECT_EQ(g.ordinal, static_cast<int>(i));
    EXPECT_FALSE(g.name.empty());
    EXPECT_GT(g.memory_gib, 0.0);
    EXPECT_GE(g.compute_major, 3);
    EXPECT_FALSE(g.pci_bus_id.empty());
  }
}

TEST(RuntimeTest, NamesTheMissingDriverOrBuild) {
  const RuntimeInfo& rt = Runtime();
  if (Build().cuda.empty()) {
    EXPECT_EQ(rt.unavailable_reason, "built without CUDA");
    EXPECT_EQ(rt.driver_version, 0);
    EXPECT_TRUE(rt.cuda_runtime.empty());
  } else if (rt.driver_version == 0) {
    // Not CUDA's misleading "driver version is insufficient".
    EXPECT_EQ(rt.unavailable_reason, "no CUDA driver is installed");
    EXPECT_TRUE(rt.gpus.empty());
  }
}

TEST(RuntimeTest, LoadedLibrariesMatchTheBuild) {
  const BuildInfo& b = Build();
  const RuntimeInfo& rt = Runtime();
  // The runtime's minor may differ from the toolkit's; the major may not.
  if (b.cuda.empty()) {
    EXPECT_TRUE(rt.cuda_runtime.empty());
  } else {
    EXPECT_EQ(Major(rt.cuda_runtime), Major(b.cuda)) << rt.cuda_runtime;
  }
  if (b.cudnn.empty()) {
    EXPECT_TRUE(rt.cudnn_runtime.empty());
  } else {
    EXPECT_EQ(Major(rt.cudnn_runtime), Major(b.cudnn)) << rt.cudnn_runtime;
  }
  // cuBLAS is loaded on first use (device/cublas_loader.h); asking its version loads it.
  const std::string cublas = CublasRuntimeVersion();
  EXPECT_EQ(cublas.empty(), !b.gpu_engine) << cublas;
  if (b.nccl.empty()) {
    EXPECT_TRUE(rt.nccl_runtime.empty());
  } else {
    EXPECT_EQ(Major(rt.nccl_runtime), Major(b.nccl)) << rt.nccl_runtime;
  }
}

TEST(RuntimeTest, AskedOnce) { EXPECT_EQ(&Runtime(), &Runtime()); }

TEST(RuntimeTest, PlaceUsesTheRuntime) {
  for (DeviceKind kind : {DeviceKind::kAuto, DeviceKind::kCpu, DeviceKind::kGpu}) {
    StatusOr<Placement> got = Place(kind, 1);
    StatusOr<Placement> want = PlaceOn(Build(), Runtime(), kind, 1);
    ASSERT_EQ(got.ok(), want.ok()) << DeviceKindName(kind);
    if (got.ok()) {
      EXPECT_EQ(got->gpu, want->gpu);
      EXPECT_EQ(got->ordinal, want->ordinal);
      EXPECT_EQ(got->reason, want->reason);
    } else {
      EXPECT_EQ(got.status().code(), Code::kFailedPrecondition);
      EXPECT_EQ(got.status().message(), want.status().message());
    }
  }
}

}  // namespace
}  // namespace ringtrain::device
