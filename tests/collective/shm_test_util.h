// Helpers for tests of the shared-memory backend: ranks as threads of this process,
// meeting through one InMemoryStore and calling collective::internal::CreateShm directly
// (CreateCommunicator would also pick it, but these tests must not depend on the choice).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "collective/backends.h"
#include "collective/communicator.h"
#include "ring_test_util.h"
#include "store/store.h"

namespace ringtrain::collective {
namespace shm_testing {

inline collective::CommunicatorOptions ShmOptions(std::chrono::milliseconds timeout = std::chrono::seconds(20),
                                      size_t chunk_bytes = 1 << 18) {
  collective::CommunicatorOptions options;
  options.implementation = collective::Implementation::kRing;
  options.timeout = timeout;
  options.chunk_bytes = chunk_bytes;
  return options;
}

using testing_util::RunOnRanks;

// `size` connected shared-memory communicators; fails the test if any creation fails.
inline std::vector<std::unique_ptr<collective::Communicator>> CreateShmRanks(int size, const collective::CommunicatorOptions& options,
                                                                 store::Store* store) {
  std::vector<std::unique_ptr<collective::Communicator>> comms(size);
  std::vector<Status> statuses(size);
  RunOnRanks(size, [&](int r) {
    auto c = collective::internal::CreateShm(options, r, size, store);
    statuses[r] = c.status();
    if (c.ok()) comms[r] = std::move(c).value();
  });
  for (int r = 0; r < size; ++r) EXPECT_TRUE(statuses[r].ok()) << "rank " << r << ": " << statuses[r].ToString();
  return comms;
}

inline bool Contains(const Status& s, const std::string& text) {
  return s.message().find(text) != std::string::npos;
}

inline bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

}  // namespace shm_testing
}  // namespace ringtrain::collective
