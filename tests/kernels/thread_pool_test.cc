#include "kernels/thread_pool.h"

#include "kernels/kernels.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace ringtrain::kernels {
namespace {

TEST(ThreadPool, RangesCoverEveryIndexOnce) {
  for (int threads : {1, 2, 5}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (int64_t n : {0, 1, 2, 3, 7, 100}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      auto body = [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) hits[static_cast<size_t>(i)]++;
      };
      using Body = decltype(body);
      pool.ParallelFor(n, [](void* ctx, int64_t b, int64_t e) { (*static_cast<Body*>(ctx))(b, e); }, &body);
      for (int64_t i = 0; i < n; ++i) EXPECT_EQ(hits[static_cast<size_t>(i)].load(), 1) << threads << " " << n;
    }
  }
}

TEST(ThreadPool, ProcessPoolFollowsSetNumThreads) {
  ::ringtrain::kernels::SetNumThreads(3);
  EXPECT_EQ(NumThreads(), 3);
  std::atomic<int64_t> sum{0};
  ParallelFor(1000, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) sum += i;
  });
  EXPECT_EQ(sum.load(), 999 * 1000 / 2);
  ::ringtrain::kernels::SetNumThreads(1);
  EXPECT_EQ(NumThreads(), 1);
}

// Several trainers in one process (ranks as threads in tests) share the pool: a caller
// that finds it busy runs its work inline, and every caller gets all of its ranges.
TEST(ThreadPool, ConcurrentCallersEachCoverTheirRange) {
  ::ringtrain::kernels::SetNumThreads(2);
  std::vector<std::thread> callers;
  std::vector<int64_t> sums(4, 0);
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&, c] {
      for (int round = 0; round < 200; ++round) {
        std::atomic<int64_t> sum{0};
        ParallelFor(100, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) sum += i;
        });
        sums[static_cast<size_t>(c)] += sum.load();
      }
    });
  }
  for (auto& t : callers) t.join();
  for (int64_t s : sums) EXPECT_EQ(s, 200 * (99 * 100 / 2));
  ::ringtrain::kernels::SetNumThreads(1);
}

}  // namespace
}  // namespace ringtrain::kernels
