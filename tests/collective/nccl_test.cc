// The NCCL backend. Without a GPU (as in CI) only the build-and-selection tests run;
// the collective tests skip with a message. With a GPU they run one rank (NCCL puts
// one rank per GPU, and a GPU machine may have only one) on device buffers.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <thread>
#include <vector>

#include "collective/backends.h"
#include "collective/communicator.h"
#include "collective/nccl/nccl_info.h"
#include "store/store.h"

#ifdef RINGTRAIN_HAVE_NCCL
#include <cuda_runtime_api.h>
#endif

namespace ringtrain::collective {
namespace {

namespace ci = collective::internal;

#ifdef RINGTRAIN_HAVE_NCCL
constexpr bool kBuiltWithNccl = true;
#else
constexpr bool kBuiltWithNccl = false;
#endif

collective::CommunicatorOptions NcclOptions() {
  collective::CommunicatorOptions options;
  options.implementation = collective::Implementation::kNccl;
  options.timeout = std::chrono::seconds(60);
  return options;
}

TEST(NcclBuildTest, NcclBuiltMatchesTheBuild) {
  EXPECT_EQ(ci::NcclBuilt(), kBuiltWithNccl);
  const std::string info = NcclBuildInfo();
  if (kBuiltWithNccl) {
    EXPECT_EQ(info.rfind("NCCL 2.", 0), 0u) << info;
    EXPECT_NE(info.find("CUDA runtime"), std::string::npos) << info;
  } else {
    EXPECT_EQ(info, "NCCL: not built");
  }
}

TEST(NcclBuildTest, GpuCountIsStableAndNeverNegative) {
  const int gpus = ci::LocalGpuCount();
  EXPECT_GE(gpus, 0);
  EXPECT_EQ(ci::LocalGpuCount(), gpus);
  if (!ci::NcclBuilt()) {
    EXPECT_EQ(gpus, 0);
  }
}

TEST(NcclBuildTest, WithoutAGpuNcclIsRefusedWithAReason) {
  if (ci::LocalGpuCount() > 0) GTEST_SKIP() << "this machine has a GPU: the refusal is not reachable";
  store::InMemoryStore store;
  auto c = collective::CreateCommunicator(NcclOptions(), 0, 1, &store);
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(c.status().code() == Code::kFailedPrecondition || c.status().code() == Code::kUnimplemented)
      << c.status().ToString();
  EXPECT_NE(c.status().message().find("NCCL"), std::string::npos) << c.status().message();
  EXPECT_NE(c.status().message().find("RING"), std::string::npos) << "names the way out: " << c.status().message();

  // The backend itself refuses too, before touching the store.
  auto direct = ci::CreateNccl(NcclOptions(), 0, 1, /*local_index=*/0, &store);
  ASSERT_FALSE(direct.ok());
  EXPECT_TRUE(direct.status().code() == Code::kFailedPrecondition ||
              direct.status().code() == Code::kUnimplemented)
      << direct.status().ToString();
}

TEST(NcclBuildTest, AutoWithoutAGpuIsNeverNccl) {
  if (ci::LocalGpuCount() > 0) GTEST_SKIP() << "this machine has a GPU";
  store::InMemoryStore store;
  std::vector<std::unique_ptr<collective::Communicator>> comms(2);
  std::vector<Status> statuses(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      collective::CommunicatorOptions options;  // AUTO
      options.timeout = std::chrono::seconds(20);
      auto c = collective::CreateCommunicator(options, r, 2, &store);
      statuses[r] = c.status();
      if (c.ok()) comms[r] = std::move(c).value();
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(statuses[r].ok()) << statuses[r].ToString();
    EXPECT_STREQ(comms[r]->backend_name(), "RING");
  }
}

#ifdef RINGTRAIN_HAVE_NCCL

// A device copy of a host vector, freed at scope exit.
template <typename T = float>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t count) : count_(count) {
    EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&ptr_), std::max<size_t>(1, count) * sizeof(T)), cudaSuccess);
  }
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) {
    EXPECT_EQ(cudaMemcpy(ptr_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~DeviceBuffer() { cudaFree(ptr_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* get() { return ptr_; }
  std::vector<T> ToHost() const {
    std::vector<T> host(count_);
    EXPECT_EQ(cudaMemcpy(host.data(), ptr_, count_ * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return host;
  }

 private:
  size_t count_;
  T* ptr_ = nullptr;
};

class NcclGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (ci::LocalGpuCount() == 0) GTEST_SKIP() << "no GPU on this machine: NCCL tests skipped";
    auto c = collective::CreateCommunicator(NcclOptions(), 0, 1, &store_);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    comm_ = std::move(c).value();
    ASSERT_STREQ(comm_->backend_name(), "NCCL");
  }

  store::InMemoryStore store_;
  std::unique_ptr<collective::Communicator> comm_;
};

TEST_F(NcclGpuTest, AllReduceSumAndMeanOfOneRankKeepTheData) {
  const std::vector<float> values = {1.5f, -2.0f, 3.25f, 1e-3f, 7.0f};
  DeviceBuffer data(values);
  ASSERT_TRUE(comm_->AllReduce(data.get(), values.size(), collective::ReduceOp::kSum).ok());
  EXPECT_EQ(data.ToHost(), values);
  ASSERT_TRUE(comm_->AllReduce(data.get(), values.size(), collective::ReduceOp::kMean).ok());
  EXPECT_EQ(data.ToHost(), values);
}

TEST_F(NcclGpuTest, AllReduceOfALargeBuffer) {
  std::vector<float> values(1 << 20);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i % 1000) * 0.5f;
  DeviceBuffer data(values);
  Status s = comm_->AllReduce(data.get(), values.size(), collective::ReduceOp::kSum);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(data.ToHost(), values);
}

TEST_F(NcclGpuTest, BroadcastAllGatherAndBarrier) {
  const std::vector<float> values = {4.0f, 5.0f, 6.0f};
  DeviceBuffer data(values);
  ASSERT_TRUE(comm_->Broadcast(data.get(), values.size(), 0).ok());
  EXPECT_EQ(data.ToHost(), values);
  EXPECT_EQ(comm_->Broadcast(data.get(), values.size(), 1).code(), Code::kInvalidArgument);

  DeviceBuffer out(values.size());
  ASSERT_TRUE(comm_->AllGather(data.get(), values.size(), out.get()).ok());
  EXPECT_EQ(out.ToHost(), values);
  ASSERT_TRUE(comm_->Barrier().ok());
  ASSERT_TRUE(comm_->AllReduce(data.get(), 0, collective::ReduceOp::kSum).ok());
}

// Host buffers (what a CPU trainer that AUTO put on NCCL passes) are staged through the GPU.
TEST_F(NcclGpuTest, HostBuffersAreStagedThroughTheGpu) {
  std::vector<float> host = {1.0f, -2.5f, 3.0f};
  const std::vector<float> original = host;
  ASSERT_TRUE(comm_->AllReduce(host.data(), host.size(), collective::ReduceOp::kSum).ok());
  EXPECT_EQ(host, original);
  ASSERT_TRUE(comm_->Broadcast(host.data(), host.size(), 0).ok());
  EXPECT_EQ(host, original);

  std::vector<float> gathered(host.size(), 0.0f);
  ASSERT_TRUE(comm_->AllGather(host.data(), host.size(), gathered.data()).ok());
  EXPECT_EQ(gathered, original);

  // Mixed: device in, host out; and a larger host buffer, which grows the staging buffer.
  DeviceBuffer device_in(original);
  std::fill(gathered.begin(), gathered.end(), 0.0f);
  ASSERT_TRUE(comm_->AllGather(device_in.get(), original.size(), gathered.data()).ok());
  EXPECT_EQ(gathered, original);
  std::vector<float> big(100000, 0.25f);
  ASSERT_TRUE(comm_->AllReduce(big.data(), big.size(), collective::ReduceOp::kMean).ok());
  EXPECT_EQ(big, std::vector<float>(100000, 0.25f));
}

TEST_F(NcclGpuTest, NullBuffersAreRejectedAndLeaveTheCommunicatorUsable) {
  Status s = comm_->AllReduce(static_cast<float*>(nullptr), 4, collective::ReduceOp::kSum);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("null"), std::string::npos) << s.message();
  EXPECT_TRUE(comm_->Barrier().ok());
}

// Every data type, on device and on staged host buffers; one rank, so a sum keeps the
// values (an int64 above 2^53 to the last unit), a mean of floats divides by 1.
TEST_F(NcclGpuTest, EveryDataTypeOnDeviceAndHostBuffers) {
  EXPECT_TRUE(comm_->accepts_device_memory());
  const std::vector<int64_t> i64 = {(int64_t{1} << 53) + 1, -5, std::numeric_limits<int64_t>::max()};
  DeviceBuffer<int64_t> d64(i64);
  ASSERT_TRUE(comm_->AllReduce(d64.get(), i64.size(), ReduceOp::kSum).ok());
  EXPECT_EQ(d64.ToHost(), i64);
  std::vector<int64_t> h64 = i64;
  ASSERT_TRUE(comm_->AllReduce(h64.data(), h64.size(), ReduceOp::kSum).ok());
  EXPECT_EQ(h64, i64);

  const std::vector<double> f64 = {0.1, -1e300, 3.0};
  DeviceBuffer<double> df(f64);
  ASSERT_TRUE(comm_->AllReduce(df.get(), f64.size(), ReduceOp::kMean).ok());
  EXPECT_EQ(df.ToHost(), f64);

  const std::vector<uint8_t> u8 = {0, 200, 255, 7};
  DeviceBuffer<uint8_t> du(u8);
  ASSERT_TRUE(comm_->Broadcast(du.get(), u8.size(), 0).ok());
  EXPECT_EQ(du.ToHost(), u8);
  std::vector<uint8_t> hu = u8;
  ASSERT_TRUE(comm_->Broadcast(hu.data(), hu.size(), 0).ok());
  EXPECT_EQ(hu, u8);

  const std::vector<int32_t> i32 = {-1, 2, 1 << 30};
  std::vector<int32_t> gathered(i32.size(), 0);
  ASSERT_TRUE(comm_->AllGather(i32.data(), i32.size(), gathered.data()).ok());
  EXPECT_EQ(gathered, i32);

  EXPECT_EQ(comm_->AllReduce(d64.get(), i64.size(), ReduceOp::kMean).code(), Code::kInvalidArgument);
  EXPECT_TRUE(comm_->Barrier().ok()) << "an argument error leaves the communicator usable";
}

TEST_F(NcclGpuTest, AbortMakesLaterOperationsFailWithTheReason) {
  comm_->Abort("heartbeat lost");
  Status s = comm_->Barrier();
  EXPECT_EQ(s.code(), Code::kAborted);
  EXPECT_EQ(s.message(), "heartbeat lost");
  comm_->Abort("again");  // idempotent; the first reason stays
  EXPECT_EQ(comm_->Barrier().message(), "heartbeat lost");
}

TEST(NcclSelectionTest, AutoPicksNcclWhenEveryRankHasAGpu) {
  if (ci::LocalGpuCount() == 0) GTEST_SKIP() << "no GPU on this machine: NCCL tests skipped";
  // A size-1 AUTO job is a LocalCommunicator by design, so the choice is checked on the
  // factory's explicit NCCL path plus the AUTO rule's inputs: NCCL built, a GPU here.
  EXPECT_TRUE(ci::NcclBuilt());
  store::InMemoryStore store;
  auto c = collective::CreateCommunicator(NcclOptions(), 0, 1, &store);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_STREQ((*c)->backend_name(), "NCCL");
}

#endif  // RINGTRAIN_HAVE_NCCL

}  // namespace
}  // namespace ringtrain::collective
