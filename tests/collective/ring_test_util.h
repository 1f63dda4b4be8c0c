// Helpers for multi-rank tests of the TCP ring: ranks run as threads in this process,
// connected over loopback, exchanging addresses through one InMemoryStore. TestOptions
// forces TCP (on one host the factory would otherwise choose shared memory).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "collective/communicator.h"
#include "collective/ring_communicator.h"
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
  options.transport = Transport::kTcp;
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
  EXPECT_EQ(options.transport, Transport::kTcp) << "these are tests of the TCP ring";
  std::vector<std::unique_ptr<Communicator>> comms(size);
  std::vector<Status> statuses(size);
  RunOnRanks(size, [&](int r) {
    auto c = CreateCommunicator(options, r, size, store);
    statuses[r] = c.status();
    if (c.ok()) comms[r] = std::move(c).value();
  });
  for (int r = 0; r < size; ++r) {
    EXPECT_TRUE(statuses[r].ok()) << "rank " << r << ": " << statuses[r].ToString();
    if (size > 1 && comms[r] != nullptr) {
      EXPECT_NE(dynamic_cast<RingCommunicator*>(comms[r].get()), nullptr) << "rank " << r << " is not on TCP";
    }
  }
  return comms;
}

}  // namespace testing_util
}  // namespace ringtrain
