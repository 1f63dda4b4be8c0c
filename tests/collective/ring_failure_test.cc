// Failures: a peer that disappears, aborts, or never shows up; Abort() from another
// thread; and strangers on the listening port during set-up. Short timeouts keep the
// tests fast; assertions are on status codes and messages, never on timing.
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <thread>

#include "collective/backends.h"
#include "collective/communicator.h"
#include "collective/ring/socket.h"
#include "ring_test_util.h"

namespace ringtrain::collective {
namespace {

using namespace std::chrono_literals;
using testing_util::CreateRing;
using testing_util::RingInSetUp;
using testing_util::RunOnRanks;
using testing_util::TestOptions;

bool Contains(const Status& s, const std::string& text) { return s.message().find(text) != std::string::npos; }

// All three ranks finish one AllReduce; then rank 2 leaves (via `leave`) and ranks 0
// and 1 attempt a second one, which must fail promptly (well before the 30 s timeout
// would make them fail otherwise) naming a peer.
// `comms` is filled with the ring so the caller can inspect rank 2 afterwards.
void CheckSurvivorsFailAfterRankTwoLeaves(const std::function<void(std::unique_ptr<collective::Communicator>&)>& leave,
                                          std::vector<std::unique_ptr<collective::Communicator>>& comms) {
  store::InMemoryStore store;
  comms = CreateRing(3, TestOptions(30s), &store);
  ASSERT_FALSE(::testing::Test::HasFailure());
  std::vector<float> warmup[3];
  RunOnRanks(3, [&](int r) {
    warmup[r].assign(1000, 1.0f);
    EXPECT_TRUE(comms[r]->AllReduce(warmup[r].data(), warmup[r].size(), collective::ReduceOp::kSum).ok());
  });
  leave(comms[2]);
  std::vector<Status> statuses(2);
  RunOnRanks(2, [&](int r) {
    std::vector<float> data(1 << 20, 1.0f);
    statuses[r] = comms[r]->AllReduce(data.data(), data.size(), collective::ReduceOp::kSum);
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(statuses[r].code(), Code::kUnavailable) << statuses[r].ToString();
    EXPECT_TRUE(Contains(statuses[r], "rank ")) << statuses[r].ToString();
  }
  // Rank 0 receives from rank 2, so it sees rank 2 go and names it.
  EXPECT_TRUE(Contains(statuses[0], "connection to rank 2 (127.0.0.1:")) << statuses[0].ToString();
  EXPECT_TRUE(Contains(statuses[0], "closed")) << statuses[0].ToString();
  // Broken for good: the next operation fails at once with the same error.
  float x = 1;
  Status again = comms[0]->AllReduce(&x, 1, collective::ReduceOp::kSum);
  EXPECT_EQ(again.code(), statuses[0].code());
  EXPECT_EQ(again.message(), statuses[0].message());
  EXPECT_EQ(comms[0]->Barrier().code(), statuses[0].code());
}

TEST(RingFailureTest, DestroyedPeerFailsTheOthersNamingIt) {
  std::vector<std::unique_ptr<collective::Communicator>> comms;
  CheckSurvivorsFailAfterRankTwoLeaves([](std::unique_ptr<collective::Communicator>& c) { c.reset(); }, comms);
}

TEST(RingFailureTest, AbortedPeerFailsTheOthersAndItselfWithAborted) {
  std::vector<std::unique_ptr<collective::Communicator>> comms;
  CheckSurvivorsFailAfterRankTwoLeaves([](std::unique_ptr<collective::Communicator>& c) { c->Abort("heartbeat lost"); },
                                       comms);
  ASSERT_EQ(comms.size(), 3u);
  float x = 1;
  Status s = comms[2]->AllReduce(&x, 1, collective::ReduceOp::kSum);
  EXPECT_EQ(s.code(), Code::kAborted);
  EXPECT_EQ(s.message(), "heartbeat lost");
}

TEST(RingFailureTest, PeerThatNeverCallsGivesDeadlineExceededNamingIt) {
  for (size_t count : {size_t{100}, size_t{1} << 20}) {  // small and large algorithm
    store::InMemoryStore store;
    auto comms = CreateRing(3, TestOptions(500ms), &store);
    ASSERT_FALSE(HasFailure());
    std::vector<Status> statuses(2);
    RunOnRanks(2, [&](int r) {  // rank 2 never calls
      std::vector<float> data(count, 1.0f);
      statuses[r] = comms[r]->AllReduce(data.data(), data.size(), collective::ReduceOp::kSum);
    });
    EXPECT_EQ(statuses[0].code(), Code::kDeadlineExceeded) << statuses[0].ToString();
    EXPECT_TRUE(Contains(statuses[0], "waiting for data from rank 2")) << statuses[0].ToString();
    EXPECT_FALSE(statuses[1].ok());
    EXPECT_TRUE(Contains(statuses[1], "rank ")) << statuses[1].ToString();
  }
}

TEST(RingFailureTest, AbortFromAnotherThreadUnblocksAllReduce) {
  store::InMemoryStore store;
  auto comms = CreateRing(2, TestOptions(60s), &store);
  ASSERT_FALSE(HasFailure());
  std::thread aborter([&] {
    std::this_thread::sleep_for(100ms);  // usually lands mid-operation; ABORTED either way
    comms[0]->Abort("job cancelled");
  });
  // Large enough that rank 0 cannot finish its part without rank 1: rank 1 must not
  // complete its later call from what rank 0 sent before it aborted.
  std::vector<float> data(1 << 20, 1.0f);
  Status s = comms[0]->AllReduce(data.data(), data.size(), collective::ReduceOp::kSum);  // rank 1 never joins
  aborter.join();
  EXPECT_EQ(s.code(), Code::kAborted) << s.ToString();
  EXPECT_EQ(s.message(), "job cancelled");
  // Abort shut the connections down, so rank 1 fails at once too, naming rank 0.
  Status peer = comms[1]->AllReduce(data.data(), data.size(), collective::ReduceOp::kSum);
  EXPECT_EQ(peer.code(), Code::kUnavailable) << peer.ToString();
  EXPECT_TRUE(Contains(peer, "rank 0")) << peer.ToString();
}

TEST(RingSetupTest, StrangersOnTheListeningPortDoNotBreakSetUp) {
  const int n = 3;
  RingInSetUp ring(TestOptions(10s), n);  // the TCP set-up itself
  auto& comms = ring.comms;
  auto& statuses = ring.statuses;
  // Ranks 1 and 2 start; rank 0 (rank 1's legitimate peer) starts only after the
  // strangers have connected to rank 1, so rank 1 must sort them out first.
  ring.StartAllBut(0);
  std::string host;
  int port = 0;
  ASSERT_FALSE(ring.Address(1, &host, &port).empty());
  auto connect = [&] {
    auto fd = ConnectTcp(host, port, Deadline::After(5s), "rank 1");
    EXPECT_TRUE(fd.ok()) << fd.status().ToString();
    return fd.ok() ? std::move(fd).value() : Fd();
  };
  auto send = [&](const Fd& fd, const void* p, size_t len) {
    EXPECT_TRUE(SendAll(fd.get(), p, len, Deadline::After(5s), -1, "rank 1").ok());
  };
  const char http[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  Fd garbage = connect();
  send(garbage, http, sizeof(http) - 1);
  // Right magic, wrong protocol version.
  const uint8_t bad_version[16] = {'R', 'T', 'R', 'G', 99, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0};
  Fd versioned = connect();
  send(versioned, bad_version, sizeof(bad_version));
  // A valid hello, but from a rank that is not rank 1's predecessor.
  const uint8_t wrong_rank[16] = {'R', 'T', 'R', 'G', 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0};
  Fd impostor = connect();
  send(impostor, wrong_rank, sizeof(wrong_rank));
  // Half a hello, then silence, held open for the whole set-up.
  Fd silent = connect();
  send(silent, "RTR", 3);
  Fd closer = connect();
  closer.reset();

  ring.Start(0);
  ring.JoinAll();
  for (int r = 0; r < n; ++r) ASSERT_TRUE(statuses[r].ok()) << "rank " << r << ": " << statuses[r].ToString();

  // Set-up was not fooled: no stranger got the answer meant for rank 0; each was closed.
  for (Fd* stranger : {&garbage, &versioned, &impostor, &silent}) {
    char byte;
    Status s = RecvAll(stranger->get(), &byte, 1, Deadline::After(5s), -1, "rank 1");
    EXPECT_EQ(s.code(), Code::kUnavailable) << s.ToString();
  }

  std::vector<float> data[n];
  RunOnRanks(n, [&](int r) {
    data[r].assign(5, static_cast<float>(r + 1));
    Status s = comms[r]->AllReduce(data[r].data(), data[r].size(), collective::ReduceOp::kSum);
    EXPECT_TRUE(s.ok()) << s.ToString();
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(data[r], std::vector<float>(5, 6.0f));
}

TEST(RingSetupTest, MissingPeerGivesDeadlineExceededNamingIt) {
  store::InMemoryStore store;
  auto c = collective::CreateCommunicator(TestOptions(200ms), 0, 2, &store);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Code::kDeadlineExceeded) << c.status().ToString();
  EXPECT_TRUE(Contains(c.status(), "rank 1")) << c.status().ToString();
}

}  // namespace
}  // namespace ringtrain::collective
