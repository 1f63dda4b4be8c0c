// Helpers for multi-rank tests of the TCP ring: ranks run as threads in this process,
// connected over loopback, exchanging addresses through one InMemoryStore. TestOptions
// forces TCP (on one host the factory would otherwise choose shared memory).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "collective/backends.h"
#include "collective/communicator.h"
#include "collective/ring/ring_communicator.h"
#include "collective/ring/socket.h"
#include "store/store.h"

namespace ringtrain::collective {
namespace testing_util {

inline collective::CommunicatorOptions TestOptions(std::chrono::milliseconds timeout = std::chrono::seconds(10),
                                       size_t chunk_bytes = 1 << 18) {
  collective::CommunicatorOptions options;
  options.implementation = collective::Implementation::kRing;
  options.timeout = timeout;
  options.listen_host = "127.0.0.1";
  options.chunk_bytes = chunk_bytes;
  options.transport = collective::Transport::kTcp;
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
inline std::vector<std::unique_ptr<collective::Communicator>> CreateRing(int size, const collective::CommunicatorOptions& options,
                                                             store::Store* store) {
  EXPECT_EQ(options.transport, collective::Transport::kTcp) << "these are tests of the TCP ring";
  std::vector<std::unique_ptr<collective::Communicator>> comms(size);
  std::vector<Status> statuses(size);
  RunOnRanks(size, [&](int r) {
    auto c = collective::CreateCommunicator(options, r, size, store);
    statuses[r] = c.status();
    if (c.ok()) comms[r] = std::move(c).value();
  });
  for (int r = 0; r < size; ++r) {
    EXPECT_TRUE(statuses[r].ok()) << "rank " << r << ": " << statuses[r].ToString();
    if (size > 1 && comms[r] != nullptr) {
      EXPECT_NE(dynamic_cast<collective::RingCommunicator*>(comms[r].get()), nullptr) << "rank " << r << " is not on TCP";
    }
  }
  return comms;
}

// A TCP ring whose ranks start one at a time, so that a test can knock on a rank's
// listening port (published in the store) while that rank still waits for its
// predecessor. Start(r) creates rank r on a thread; JoinAll() waits for every started one.
class RingInSetUp {
 public:
  RingInSetUp(const collective::CommunicatorOptions& options, int size)
      : options_(options), comms(size), statuses(size) {}
  ~RingInSetUp() { JoinAll(); }

  void Start(int rank) {
    threads_.emplace_back([this, rank] {
      auto c = collective::internal::CreateTcpRing(options_, rank, static_cast<int>(comms.size()), &store_);
      statuses[rank] = c.status();
      if (c.ok()) comms[rank] = std::move(c).value();
    });
  }
  // Every rank but `held_back`, whose successor then waits for it in set-up.
  void StartAllBut(int held_back) {
    for (int r = 0; r < static_cast<int>(comms.size()); ++r) {
      if (r != held_back) Start(r);
    }
  }
  // Rank r's published "host:port", and its parts; fails the test when it is not
  // published within 10 s.
  std::string Address(int rank, std::string* host, int* port) {
    auto addr = store_.Get("ring/addr/" + std::to_string(rank), Deadline::After(std::chrono::seconds(10)));
    EXPECT_TRUE(addr.ok()) << addr.status().ToString();
    if (!addr.ok()) return std::string();
    EXPECT_TRUE(SplitHostPort(*addr, host, port)) << *addr;
    return *addr;
  }
  void JoinAll() {
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
  }

 private:
  collective::CommunicatorOptions options_;
  store::InMemoryStore store_;
  std::vector<std::thread> threads_;

 public:
  std::vector<std::unique_ptr<collective::Communicator>> comms;  // filled as ranks connect; read after JoinAll
  std::vector<Status> statuses;
};

}  // namespace testing_util
}  // namespace ringtrain::collective
