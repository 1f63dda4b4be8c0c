// The same bits on every transport: AllReduce over the TCP ring and over shared memory,
// at 2..5 ranks, each with two chunk sizes, gives bit-identical results on every rank
// of every backend, equal to the one order of additions (sum_order.h), for counts
// smaller than the rank count, not divisible by it, on both sides of the small/large
// switch and across many chunks. The inputs span 17 orders of magnitude, so any other
// association of the additions shows in the bits (checked, so the test can fail).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "collective/communicator.h"
#include "collective/sum_order.h"
#include "ring_test_util.h"
#include "shm_test_util.h"
#include "store/store.h"

namespace ringtrain::collective {
namespace {

// Rank r's input: signed values from 1e-8 to 1e8, so that (a + b) + c and a + (b + c)
// differ in most elements.
template <typename T>
std::vector<T> Input(int rank, size_t count, uint32_t salt) {
  std::mt19937_64 gen(7919u * static_cast<uint64_t>(rank + 1) + salt);
  std::uniform_real_distribution<double> mantissa(-1.0, 1.0);
  std::vector<T> v(count);
  for (T& x : v) x = static_cast<T>(mantissa(gen) * std::pow(10.0, static_cast<int>(gen() % 17) - 8));
  return v;
}

// The definition of sum_order.h, written out independently of the code under test.
template <typename T>
std::vector<T> OneOrder(const std::vector<std::vector<T>>& in, size_t count, ReduceOp op) {
  const int n = static_cast<int>(in.size());
  const bool large = count * sizeof(T) > SmallAllReduceBytes(n);
  const size_t segs = large ? static_cast<size_t>(n) : 1;
  const size_t base = count / segs, extra = count % segs;
  std::vector<T> out(count);
  for (size_t i = 0, s = 0; i < count; ++i) {
    while (i >= (s + 1) * base + std::min(s + 1, extra)) ++s;
    T acc = in[s][i];
    for (int j = 1; j < n; ++j) acc = static_cast<T>(acc + in[(static_cast<int>(s) + j) % n][i]);
    out[i] = op == ReduceOp::kMean ? static_cast<T>(acc / static_cast<T>(n)) : acc;
  }
  return out;
}

template <typename T>
bool SameBits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

struct Backend {
  std::string name;
  std::unique_ptr<store::InMemoryStore> store;
  std::vector<std::unique_ptr<Communicator>> comms;
};

// The TCP ring and shared memory, each with a small chunk (many chunks, shared-memory
// parts that straddle the ring's segments) and the default one.
std::vector<Backend> AllBackends(int n) {
  std::vector<Backend> out;
  for (size_t chunk : {size_t{4096}, size_t{1} << 18}) {
    for (bool tcp : {true, false}) {
      Backend b;
      b.name = std::string(tcp ? "tcp" : "shm") + " chunk " + std::to_string(chunk);
      b.store = std::make_unique<store::InMemoryStore>();
      b.comms = tcp ? testing_util::CreateRing(n, testing_util::TestOptions(std::chrono::seconds(30), chunk),
                                               b.store.get())
                    : shm_testing::CreateShmRanks(n, shm_testing::ShmOptions(std::chrono::seconds(30), chunk),
                                                  b.store.get());
      out.push_back(std::move(b));
    }
  }
  return out;
}

template <typename T>
std::vector<size_t> Counts(int n) {
  const size_t small = SmallAllReduceBytes(n) / sizeof(T);  // the last count in rank order
  return {1,     static_cast<size_t>(n - 1), 7,      1000,         1001,
          small, small + 1,                  small + static_cast<size_t>(n) + 2, 3 * small + 1, 100003};
}

template <typename T>
void CheckEveryTransport(int n, std::vector<Backend>& backends) {
  uint32_t salt = 0;
  int order_mattered = 0;  // large cases where rank order gives other bits
  for (size_t count : Counts<T>(n)) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean}) {
      std::vector<std::vector<T>> in(n);
      for (int r = 0; r < n; ++r) in[r] = Input<T>(r, count, ++salt);
      const std::vector<T> expected = OneOrder(in, count, op);
      std::vector<T> plain(in[0]);  // in rank order, to check that the order shows
      for (int r = 1; r < n; ++r) {
        for (size_t i = 0; i < count; ++i) plain[i] = static_cast<T>(plain[i] + in[r][i]);
      }
      if (op == ReduceOp::kSum && count * sizeof(T) > SmallAllReduceBytes(n) && !SameBits(plain, expected)) {
        ++order_mattered;
      }
      for (Backend& b : backends) {
        std::vector<std::vector<T>> data(in);
        std::vector<Status> st(n);
        testing_util::RunOnRanks(n, [&](int r) { st[r] = b.comms[r]->AllReduce(data[r].data(), count, op); });
        for (int r = 0; r < n; ++r) {
          ASSERT_TRUE(st[r].ok()) << b.name << " rank " << r << ": " << st[r].ToString();
          size_t wrong = 0, first = 0;
          for (size_t i = 0; i < count; ++i) {
            if (std::memcmp(&data[r][i], &expected[i], sizeof(T)) != 0 && wrong++ == 0) first = i;
          }
          ASSERT_EQ(wrong, 0u) << b.name << ", " << n << " ranks, " << DataTypeName(DataTypeOf<T>()) << " "
                               << ReduceOpName(op) << " of " << count << ": rank " << r << " differs from the one "
                               << "order in " << wrong << " elements, the first at " << first;
        }
      }
    }
  }
  // With 3 or more ranks the inputs make the order show; with 2, a + b == b + a.
  if (n >= 3) {
    EXPECT_GT(order_mattered, 0) << "the inputs do not tell the orders apart";
  }
}

class TransportOrderTest : public ::testing::TestWithParam<int> {};

TEST_P(TransportOrderTest, TcpAndSharedMemoryGiveTheSameBitsOnEveryRank) {
  const int n = GetParam();
  std::vector<Backend> backends = AllBackends(n);
  ASSERT_FALSE(HasFailure()) << "creating the communicators";
  CheckEveryTransport<float>(n, backends);
  if (HasFailure()) return;
  CheckEveryTransport<double>(n, backends);
}

INSTANTIATE_TEST_SUITE_P(Ranks, TransportOrderTest, ::testing::Values(2, 3, 4, 5),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::to_string(info.param) + "Ranks";
                         });

}  // namespace
}  // namespace ringtrain::collective
