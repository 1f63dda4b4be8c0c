// Ranks as threads for trainer tests: each gets a RING communicator (shared memory,
// as the factory picks for one host) over one in-memory store.
#pragma once

#include <chrono>
#include <functional>
#include <thread>
#include <vector>

#include "collective/communicator.h"
#include "common/status.h"
#include "store/store.h"

namespace ringtrain::train {

// Runs body(rank, comm) for n ranks at once; returns each rank's status (a
// communicator that could not be created is that rank's status).
inline std::vector<Status> RunRanks(int n, const std::function<Status(int rank, collective::Communicator* comm)>& body) {
  store::InMemoryStore store;
  std::vector<Status> result(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      collective::CommunicatorOptions co;
      co.implementation = collective::Implementation::kRing;
      co.timeout = std::chrono::seconds(60);
      auto comm = collective::CreateCommunicator(co, r, n, &store);
      result[static_cast<size_t>(r)] = comm.ok() ? body(r, comm->get()) : comm.status();
    });
  }
  for (auto& t : threads) t.join();
  return result;
}

}  // namespace ringtrain::train
