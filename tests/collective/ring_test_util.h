// Helpers for multi-rank tests: ranks run as threads in this process, connected over
// loopback, exchanging addresses through one InMemoryStore.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "collective/communicator.h"
#include "store/store.h"

namespace ringtrain {
namespace testing_util {

inline CommunicatorOptions TestOptions(std::chrono::milliseconds timeout = std::chrono::seconds(10),
                                       size_t chunk_bytes = 1 << 18) {
  CommunicatorOptions options;
  options.implementation = Implementation::kRing;
  options.timeout = timeout;
  options.listen_host = "127.0.0.1";
  options.chunk_bytes = chunk_bytes;
  return options;
}

// Runs fn(rank) on `size` threads and joins them.
inline void RunOnRanks(int size, const std::function<void(int)>& fn) {
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) threads.emplace_back(fn, r);
  for (auto& t : threads) t.join();
}

// Creates `size` connected communicators (creation blocks until all ranks join, so
// each is created on its own thread). Fails the test if any creation fails.
inline std::vector<std::unique_ptr<Communicator>> CreateRing(int size, const CommunicatorOptions& options,
                                                             Store* store) {
  std::vector<std::unique_ptr<Communicator>> comms(size);
  std::vector<Status> statuses(size);
  RunOnRanks(size, [&](int r) {
    auto c = CreateCommunicator(options, r, size, store);
    statuses[r] = c.status();
    if (c.ok()) comms[r] = std::move(c).value();
  });
  for (int r = 0; r < size; ++r) EXPECT_TRUE(statuses[r].ok()) << "rank " << r << ": " << statuses[r].ToString();
  return comms;
}

}  // namespace testing_util
}  // namespace ringtrain
