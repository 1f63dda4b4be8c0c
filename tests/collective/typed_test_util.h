// Helpers for the typed-collective tests: one way to build ranks of any host backend
// (TCP ring, shared memory, the one-rank communicator) as threads of this process,
// inputs of each element type that make order and wrap-around matter, and the result
// each backend must produce, computed here in the order its header documents.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "collective/communicator.h"
#include "collective/ring/ring_communicator.h"
#include "ring_test_util.h"
#include "shm_test_util.h"
#include "store/store.h"

namespace ringtrain::collective {
namespace typed_testing {

enum class Backend { kTcp, kShm, kLocal };

inline const char* BackendName(Backend b) {
  switch (b) {
    case Backend::kTcp: return "tcp";
    case Backend::kShm: return "shm";
    case Backend::kLocal: return "local";
  }
  return "?";
}

// The backends and rank counts every typed test covers.
struct RankSetup {
  Backend backend;
  int ranks;
};
inline std::vector<RankSetup> AllSetups() {
  return {{Backend::kLocal, 1}, {Backend::kTcp, 2}, {Backend::kTcp, 3}, {Backend::kTcp, 4},
          {Backend::kShm, 2},   {Backend::kShm, 3}, {Backend::kShm, 4}};
}
inline std::string Describe(const RankSetup& s) {
  return std::string(BackendName(s.backend)) + " with " + std::to_string(s.ranks) + " rank(s)";
}

// `n` connected communicators of `backend` (kLocal: n must be 1); small chunks so that
// large operations cross many chunk boundaries. Fails the test if any creation fails.
inline std::vector<std::unique_ptr<Communicator>> MakeRanks(const RankSetup& s, store::Store* store,
                                                            size_t chunk_bytes = 1 << 14) {
  switch (s.backend) {
    case Backend::kLocal: {
      std::vector<std::unique_ptr<Communicator>> comms;
      auto c = CreateCommunicator({}, 0, 1, nullptr);
      EXPECT_TRUE(c.ok()) << c.status().ToString();
      if (c.ok()) comms.push_back(std::move(c).value());
      return comms;
    }
    case Backend::kTcp:
      return testing_util::CreateRing(s.ranks, testing_util::TestOptions(std::chrono::seconds(20), chunk_bytes), store);
    case Backend::kShm:
      return shm_testing::CreateShmRanks(s.ranks, shm_testing::ShmOptions(std::chrono::seconds(30), chunk_bytes),
                                         store);
  }
  return {};
}

// Rank `rank`'s input: floats of many magnitudes (so the order of additions shows in the
// bits), integers over their whole range (so sums wrap), and int64 values above 2^53
// (which a double cannot hold).
template <typename T>
std::vector<T> Inputs(int rank, size_t count, uint32_t salt = 0) {
  std::mt19937_64 gen(1000003u * static_cast<uint64_t>(rank + 1) + salt);
  std::vector<T> v(count);
  for (size_t i = 0; i < count; ++i) {
    if constexpr (std::is_floating_point_v<T>) {
      std::uniform_real_distribution<T> dist(T(-1), T(1));
      v[i] = dist(gen) * static_cast<T>(std::pow(10.0, static_cast<int>(gen() % 7) - 3));
    } else if constexpr (std::is_same_v<T, int64_t>) {
      v[i] = i % 2 == 0 ? static_cast<int64_t>(gen())
                        : (int64_t{1} << 53) + 2 * static_cast<int64_t>(i + static_cast<size_t>(rank)) + 1;
    } else {
      v[i] = static_cast<T>(gen());
    }
  }
  return v;
}

template <typename T>
bool SameBits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

// What AllReduce must give, on every host backend alike (sum_order.h, written out here
// independently). Integers: the sum modulo 2^bits. Floats: above the small/large switch
// segment s's elements are added in ring order s, s+1, ...; at or below it (and for
// one rank) in rank order 0..n-1; the mean divides that sum by n.
template <typename T>
std::vector<T> Expected(const std::vector<std::vector<T>>& in, Backend backend, size_t count, ReduceOp op) {
  const int n = static_cast<int>(in.size());
  std::vector<T> out(count);
  const bool ring_order =
      n > 1 && count * sizeof(T) > RingCommunicator::SmallAllReduceBytes(n);
  const size_t base = count / static_cast<size_t>(n), extra = count % static_cast<size_t>(n);
  int segment = 0;
  for (size_t i = 0; i < count; ++i) {
    if constexpr (std::is_floating_point_v<T>) {
      while (ring_order && i >= (segment + 1) * base + std::min<size_t>(segment + 1, extra)) ++segment;
      const int first = ring_order ? segment : 0;
      T acc = in[first][i];
      for (int j = 1; j < n; ++j) acc += in[(first + j) % n][i];
      out[i] = op == ReduceOp::kMean ? acc / static_cast<T>(n) : acc;
    } else {
      using U = std::make_unsigned_t<T>;
      U acc = 0;
      for (int r = 0; r < n; ++r) acc = static_cast<U>(acc + static_cast<U>(in[r][i]));
      out[i] = static_cast<T>(acc);
    }
  }
  return out;
}

}  // namespace typed_testing
}  // namespace ringtrain::collective
