// The benchmark's loop: one checked row per size on a real ring (ranks as threads
// over loopback), and a wrong result or a failing collective stops it with an error
// that names the size.
#include <gtest/gtest.h>

#include <thread>

#include "bench/allreduce_bench.h"
#include "collective/local_communicator.h"
#include "store/store.h"

namespace ringtrain::bench {
namespace {

// A one-rank communicator whose AllReduce goes wrong on call number `bad_call`:
// it either changes element `bad_index` or fails with `error`.
class FaultyCommunicator : public collective::LocalCommunicator {
 public:
  FaultyCommunicator(int bad_call, size_t bad_index, Status error = Status::Ok())
      : bad_call_(bad_call), bad_index_(bad_index), error_(std::move(error)) {}
  Status DoAllReduce(void* data, size_t count, collective::DataType type, collective::ReduceOp op) override {
    RT_RETURN_IF_ERROR(collective::LocalCommunicator::DoAllReduce(data, count, type, op));
    if (calls_++ != bad_call_) return Status::Ok();
    if (!error_.ok()) return error_;
    EXPECT_EQ(type, collective::DataType::kFloat32) << "the benchmark moves float32";
    if (bad_index_ < count) static_cast<float*>(data)[bad_index_] += 1;
    return Status::Ok();
  }
  int calls() const { return calls_; }

 private:
  int bad_call_;
  size_t bad_index_;
  Status error_;
  int calls_ = 0;
};

BenchOptions SmallOptions() {
  BenchOptions o;
  o.min_bytes = 4;
  o.max_bytes = 4096;
  o.iters = 3;
  o.warmup = 1;
  return o;
}

TEST(AllReduceBenchTest, OneCheckedRowPerSizeOnARing) {
  for (int size : {2, 3}) {
    store::InMemoryStore store;
    std::vector<std::vector<BenchRow>> rows(size);
    std::vector<Status> results(size);
    std::vector<std::thread> threads;
    for (int r = 0; r < size; ++r) {
      threads.emplace_back([&, r] {
        collective::CommunicatorOptions copts;
        copts.implementation = collective::Implementation::kRing;
        copts.transport = collective::Transport::kTcp;
        copts.timeout = std::chrono::seconds(30);
        auto comm = collective::CreateCommunicator(copts, r, size, &store);
        if (!comm.ok()) {
          results[r] = comm.status();
          return;
        }
        results[r] = RunAllReduceBench(comm->get(), SmallOptions(), [&](const BenchRow& row) { rows[r].push_back(row); });
      });
    }
    for (auto& t : threads) t.join();
    for (int r = 0; r < size; ++r) {
      ASSERT_TRUE(results[r].ok()) << "rank " << r << ": " << results[r].ToString();
      ASSERT_EQ(rows[r].size(), 6u);  // 4, 16, 64, 256, 1024, 4096
      for (size_t i = 0; i < rows[r].size(); ++i) {
        const BenchRow& row = rows[r][i];
        EXPECT_EQ(row.bytes, size_t{4} << (2 * i));
        EXPECT_GT(row.time_us, 0);
        EXPECT_DOUBLE_EQ(row.busbw_GBps, row.algbw_GBps * BusBandwidthFactor(size));
      }
    }
  }
}

TEST(AllReduceBenchTest, AWrongElementStopsTheBenchmarkNamingSizeAndIndex) {
  // Calls: 4 bytes x 4 (1 warm-up + 3 timed), then 16 bytes: call 6 is its 3rd.
  FaultyCommunicator comm(/*bad_call=*/6, /*bad_index=*/3);
  int rows = 0;
  Status st = RunAllReduceBench(&comm, SmallOptions(), [&](const BenchRow&) { ++rows; });
  EXPECT_EQ(st.code(), Code::kDataLoss);
  EXPECT_EQ(rows, 1);
  EXPECT_NE(st.message().find("all-reduce of 16 bytes, timed iteration 1"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("element 3 of 4"), std::string::npos) << st.message();
  EXPECT_EQ(comm.calls(), 7);  // stopped at once
}

TEST(AllReduceBenchTest, WarmUpResultsAreCheckedToo) {
  FaultyCommunicator comm(/*bad_call=*/0, /*bad_index=*/0);
  Status st = RunAllReduceBench(&comm, SmallOptions(), [](const BenchRow&) {});
  EXPECT_EQ(st.code(), Code::kDataLoss);
  EXPECT_NE(st.message().find("4 bytes, warm-up iteration 0"), std::string::npos) << st.message();
}

TEST(AllReduceBenchTest, ACollectiveErrorIsReturnedWithTheSize) {
  FaultyCommunicator comm(/*bad_call=*/9, 0, UnavailableError("connection to rank 1 closed"));
  Status st = RunAllReduceBench(&comm, SmallOptions(), [](const BenchRow&) {});
  EXPECT_EQ(st.code(), Code::kUnavailable);
  EXPECT_NE(st.message().find("all-reduce of 64 bytes"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("connection to rank 1 closed"), std::string::npos) << st.message();
}

TEST(AllReduceBenchTest, RejectsBadOptionsBeforeAnyCollective) {
  FaultyCommunicator comm(/*bad_call=*/0, 0);
  BenchOptions o = SmallOptions();
  o.max_bytes = 10;
  EXPECT_EQ(RunAllReduceBench(&comm, o, [](const BenchRow&) {}).code(), Code::kInvalidArgument);
  EXPECT_EQ(comm.calls(), 0);
}

}  // namespace
}  // namespace ringtrain::bench
