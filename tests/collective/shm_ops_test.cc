// Broadcast, AllGather and Barrier over shared memory, alone and interleaved with
// AllReduce so that every kind of collective follows every other.
#include <atomic>
#include <random>
#include <vector>

#include "shm_test_util.h"

namespace ringtrain::collective {
namespace {

using shm_testing::CreateShmRanks;
using shm_testing::RunOnRanks;
using shm_testing::ShmOptions;

float Value(int rank, size_t i) { return static_cast<float>(rank * 100000 + static_cast<int>(i % 99991)); }

TEST(ShmOpsTest, BroadcastFromEveryRoot) {
  for (int size : {1, 2, 3, 5, 8}) {
    store::InMemoryStore store;
    auto comms = CreateShmRanks(size, ShmOptions(std::chrono::seconds(30), 4096), &store);
    ASSERT_FALSE(HasFailure());
    for (int root = 0; root < size; ++root) {
      for (size_t count : {size_t{0}, size_t{1}, size_t{1023}, size_t{1024}, size_t{1025}, size_t{5000}}) {
        std::vector<std::vector<float>> data(size);
        RunOnRanks(size, [&](int r) {
          data[r].resize(count);
          for (size_t i = 0; i < count; ++i) data[r][i] = Value(r, i);
          Status s = comms[r]->Broadcast(data[r].data(), count, root);
          EXPECT_TRUE(s.ok()) << s.ToString();
        });
        for (int r = 0; r < size; ++r) {
          for (size_t i = 0; i < count; ++i) {
            ASSERT_EQ(data[r][i], Value(root, i)) << "size " << size << " root " << root << " rank " << r;
          }
        }
      }
    }
  }
}

TEST(ShmOpsTest, BroadcastRejectsBadRoot) {
  store::InMemoryStore store;
  auto comms = CreateShmRanks(2, ShmOptions(), &store);
  ASSERT_FALSE(HasFailure());
  float x = 0;
  EXPECT_EQ(comms[0]->Broadcast(&x, 1, 2).code(), Code::kInvalidArgument);
  EXPECT_EQ(comms[0]->Broadcast(&x, 1, -1).code(), Code::kInvalidArgument);
}

TEST(ShmOpsTest, AllGatherIncludingInPlace) {
  for (int size : {1, 2, 3, 7}) {
    store::InMemoryStore store;
    auto comms = CreateShmRanks(size, ShmOptions(std::chrono::seconds(30), 4096), &store);
    ASSERT_FALSE(HasFailure());
    for (bool in_place : {false, true}) {
      for (size_t count : {size_t{0}, size_t{1}, size_t{1000}, size_t{1024}, size_t{3001}}) {
        std::vector<std::vector<float>> out(size);
        RunOnRanks(size, [&](int r) {
          out[r].assign(count * static_cast<size_t>(size), -1.0f);
          std::vector<float> in(count);
          for (size_t i = 0; i < count; ++i) in[i] = Value(r, i);
          const float* src = in.data();
          if (in_place) {
            std::copy(in.begin(), in.end(), out[r].begin() + static_cast<long>(count) * r);
            src = out[r].data() + count * static_cast<size_t>(r);
          }
          Status s = comms[r]->AllGather(src, count, out[r].data());
          EXPECT_TRUE(s.ok()) << s.ToString();
        });
        for (int r = 0; r < size; ++r) {
          for (int q = 0; q < size; ++q) {
            for (size_t i = 0; i < count; ++i) {
              ASSERT_EQ(out[r][q * count + i], Value(q, i))
                  << "size " << size << " rank " << r << " block " << q << " in_place " << in_place;
            }
          }
        }
      }
    }
  }
}

// No rank leaves a barrier before every rank has entered it.
TEST(ShmOpsTest, BarrierWaitsForEveryRank) {
  const int size = 4;
  store::InMemoryStore store;
  auto comms = CreateShmRanks(size, ShmOptions(), &store);
  ASSERT_FALSE(HasFailure());
  for (int round = 1; round <= 20; ++round) {
    std::atomic<int> entered{0};
    std::vector<int> seen(size);
    RunOnRanks(size, [&](int r) {
      if (r == round % size) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      entered.fetch_add(1);
      EXPECT_TRUE(comms[r]->Barrier().ok());
      seen[r] = entered.load();
    });
    for (int r = 0; r < size; ++r) EXPECT_EQ(seen[r], size) << "round " << round << " rank " << r;
  }
}

// Every collective after every other, sizes changing, checked each time.
TEST(ShmOpsTest, InterleavedCollectivesStayInStep) {
  const int size = 3;
  store::InMemoryStore store;
  auto comms = CreateShmRanks(size, ShmOptions(std::chrono::seconds(30), 4096), &store);
  ASSERT_FALSE(HasFailure());
  std::mt19937 gen(11);
  struct Step {
    int kind;
    size_t count;
    int root;
  };
  std::vector<Step> steps;
  for (int i = 0; i < 200; ++i) steps.push_back({static_cast<int>(gen() % 4), gen() % 3000, static_cast<int>(gen() % 3)});
  std::vector<int> errors(size, 0);
  RunOnRanks(size, [&](int r) {
    std::vector<float> a, out;
    for (size_t k = 0; k < steps.size(); ++k) {
      const Step& st = steps[k];
      a.resize(st.count);
      for (size_t i = 0; i < st.count; ++i) a[i] = Value(r, i + k);
      Status s;
      switch (st.kind) {
        case 0:
          s = comms[r]->AllReduce(a.data(), st.count, collective::ReduceOp::kSum);
          for (size_t i = 0; s.ok() && i < st.count; ++i) {
            float want = 0;
            for (int q = 0; q < size; ++q) want += Value(q, i + k);
            errors[r] += a[i] != want;
          }
          break;
        case 1:
          s = comms[r]->Broadcast(a.data(), st.count, st.root);
          for (size_t i = 0; s.ok() && i < st.count; ++i) errors[r] += a[i] != Value(st.root, i + k);
          break;
        case 2:
          out.assign(st.count * size, 0.0f);
          s = comms[r]->AllGather(a.data(), st.count, out.data());
          for (int q = 0; s.ok() && q < size; ++q) {
            for (size_t i = 0; i < st.count; ++i) errors[r] += out[q * st.count + i] != Value(q, i + k);
          }
          break;
        default: s = comms[r]->Barrier();
      }
      if (!s.ok()) {
        ADD_FAILURE() << "rank " << r << " step " << k << ": " << s.ToString();
        return;
      }
    }
  });
  for (int r = 0; r < size; ++r) EXPECT_EQ(errors[r], 0) << "rank " << r;
}

}  // namespace
}  // namespace ringtrain::collective
