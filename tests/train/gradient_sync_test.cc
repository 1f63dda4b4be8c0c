// Gradient packs reduced on the communication thread: every pack size gives the exact
// sums, on every rank, whatever order backward releases them in.
#include "train/gradient_sync.h"

#include <gtest/gtest.h>

#include <thread>

#include "store/store.h"

namespace ringtrain::train {
namespace {

using namespace std::chrono_literals;

// Runs `n` ranks as threads over loopback TCP; rank r's gradients are r+1+(i%5).
std::vector<std::vector<float>> ReduceInPacks(int n, size_t count, size_t bytes_per_pack) {
  store::InMemoryStore store;
  std::vector<std::vector<float>> grads(n, std::vector<float>(count));
  std::vector<Status> status(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      collective::CommunicatorOptions o;
      o.implementation = collective::Implementation::kRing;
      o.transport = collective::Transport::kTcp;
      o.timeout = 30s;
      auto comm = collective::CreateCommunicator(o, r, n, &store);
      if (!comm.ok()) {
        status[r] = comm.status();
        return;
      }
      GradientSync sync(comm->get(), grads[r].data(), count, bytes_per_pack, 30s);
      for (int step = 0; step < 2; ++step) {
        for (size_t i = 0; i < count; ++i) grads[r][i] = static_cast<float>(r + 1 + i % 5);
        sync.BeginStep();
        // Backward releases the buffer from its end, in uneven pieces.
        for (size_t ready = count; ready > 0;) {
          ready = ready > 7 ? ready - 7 : 0;
          sync.Ready(ready);
        }
        status[r] = sync.Finish();
        if (!status[r].ok()) return;
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) EXPECT_TRUE(status[r].ok()) << "rank " << r << ": " << status[r].ToString();
  return grads;
}

TEST(GradientSyncTest, EveryPackSizeGivesTheExactSumOnEveryRank) {
  const size_t count = 1001;
  for (size_t bytes_per_pack : {size_t{0}, size_t{4}, size_t{100}, size_t{4096}, count * 4 + 8}) {
    const int n = 3;
    auto grads = ReduceInPacks(n, count, bytes_per_pack);
    for (int r = 0; r < n; ++r) {
      for (size_t i = 0; i < count; ++i) {
        // sum over ranks of (r + 1 + i % 5)
        float expected = static_cast<float>(n * (n + 1) / 2 + n * static_cast<int>(i % 5));
        ASSERT_EQ(grads[r][i], expected) << "bytes_per_pack " << bytes_per_pack << " rank " << r << " i " << i;
      }
    }
  }
}

TEST(GradientSyncTest, PackCount) {
  store::InMemoryStore store;
  auto comm = collective::CreateCommunicator(collective::CommunicatorOptions{}, 0, 1, &store);
  ASSERT_TRUE(comm.ok());
  std::vector<float> g(1000);
  EXPECT_EQ(GradientSync(comm->get(), g.data(), 1000, 0, 1s).num_packs(), 1u);
  EXPECT_EQ(GradientSync(comm->get(), g.data(), 1000, 400, 1s).num_packs(), 10u);
  EXPECT_EQ(GradientSync(comm->get(), g.data(), 1000, 1000 * 4, 1s).num_packs(), 1u);
  EXPECT_EQ(GradientSync(comm->get(), g.data(), 1000, 1, 1s).num_packs(), 1000u);
}

TEST(GradientSyncTest, FailureIsReportedNotHung) {
  store::InMemoryStore store;
  std::unique_ptr<collective::Communicator> c0, c1;
  std::thread t([&] {
    collective::CommunicatorOptions o;
    o.transport = collective::Transport::kTcp;
    o.timeout = 10s;
    auto c = collective::CreateCommunicator(o, 1, 2, &store);
    if (c.ok()) c1 = std::move(c).value();
  });
  collective::CommunicatorOptions o;
  o.transport = collective::Transport::kTcp;
  o.timeout = 10s;
  auto c = collective::CreateCommunicator(o, 0, 2, &store);
  t.join();
  ASSERT_TRUE(c.ok() && c1);
  c0 = std::move(c).value();
  c1->Abort("rank 1 went away");
  std::vector<float> g(100, 1.0f);
  GradientSync sync(c0.get(), g.data(), g.size(), 40, 10s);
  sync.BeginStep();
  sync.Ready(0);
  Status st = sync.Finish();
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("gradient pack"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace ringtrain::train
