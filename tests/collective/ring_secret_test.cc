// The data plane admits only members: with a cluster secret, every ring connection
// starts with a mutual challenge-response. Rings with the secret give the same bits as
// without; strangers on a listening port during set-up (garbage, silence, no secret, a
// wrong secret) are refused and logged once each while the ring forms; ranks with
// different secrets fail with an error that says so; no secret reaches the log.
#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>

#include "collective/backends.h"
#include "collective/ring/handshake.h"
#include "collective/ring/handshake_wire.h"
#include "collective/ring/socket.h"
#include "ring_test_util.h"
#include "security/cluster_secret.h"

namespace ringtrain::collective {
namespace {

using namespace std::chrono_literals;
using security::ClusterSecret;
using testing_util::CreateRing;
using testing_util::RingInSetUp;
using testing_util::RunOnRanks;
using testing_util::TestOptions;
namespace ci = collective::internal;

constexpr char kSecretValue[] = "ringtrain-test-secret-7f3a9c";
constexpr char kOtherSecretValue[] = "some-other-cluster-secret-42";

ClusterSecret Secret(const char* value) {
  auto s = ClusterSecret::FromValue(value);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? *s : ClusterSecret();
}

collective::CommunicatorOptions SecuredOptions(const char* secret, std::chrono::milliseconds timeout = 10s) {
  collective::CommunicatorOptions o = TestOptions(timeout, /*chunk_bytes=*/4096);  // small chunks: many pipelined pieces
  o.cluster_secret = Secret(secret);
  return o;
}

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

size_t CountLinesWith(const std::string& log, const std::string& part) {
  size_t n = 0, start = 0;
  while (start < log.size()) {
    size_t end = log.find('\n', start);
    if (end == std::string::npos) end = log.size();
    if (std::string_view(log).substr(start, end - start).find(part) != std::string_view::npos) ++n;
    start = end + 1;
  }
  return n;
}

// What the log must never hold: either secret, raw or hex-encoded.
void ExpectNoSecretIn(const std::string& log) {
  for (const char* s : {kSecretValue, kOtherSecretValue}) {
    EXPECT_FALSE(Contains(log, s)) << "a cluster secret appears in the log";
    EXPECT_FALSE(Contains(log, security::Hex(s))) << "a cluster secret appears (hex) in the log";
  }
}

std::string LocalAddress(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "?";
  char ip[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &addr.sin_addr, ip, sizeof(ip));
  return std::string(ip) + ":" + std::to_string(ntohs(addr.sin_port));
}

// Reads and discards until the other end closes (true) or `within` passes (false).
bool ClosedByPeer(int fd, std::chrono::milliseconds within = 5s) {
  Deadline deadline = Deadline::After(within);
  char sink[256];
  while (!deadline.expired()) {
    ssize_t n = ::recv(fd, sink, sizeof(sink), 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) return true;
    if (n < 0) {
      pollfd p{fd, POLLIN, 0};
      ::poll(&p, 1, deadline.remaining_ms_for_poll());
    }
  }
  return false;
}

std::vector<float> RandomData(size_t n, int seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// AllReduce (sum, mean), Broadcast and AllGather on every rank; returns everything
// every rank ended with, in one vector per rank.
std::vector<std::vector<float>> RunOps(std::vector<std::unique_ptr<collective::Communicator>>& comms) {
  const int n = static_cast<int>(comms.size());
  const size_t count = 10007;  // not a multiple of the ring size or the chunk
  std::vector<std::vector<float>> out(n);
  RunOnRanks(n, [&](int r) {
    std::vector<float> sum = RandomData(count, 100 + r), mean = RandomData(count, 200 + r);
    std::vector<float> bcast = RandomData(count, 300 + r), gathered(count * n);
    EXPECT_TRUE(comms[r]->AllReduce(sum.data(), count, collective::ReduceOp::kSum).ok());
    EXPECT_TRUE(comms[r]->AllReduce(mean.data(), count, collective::ReduceOp::kMean).ok());
    EXPECT_TRUE(comms[r]->Broadcast(bcast.data(), count, n - 1).ok());
    std::vector<float> mine = RandomData(count, 400 + r);
    EXPECT_TRUE(comms[r]->AllGather(mine.data(), count, gathered.data()).ok());
    for (auto* v : {&sum, &mean, &bcast, &gathered}) out[r].insert(out[r].end(), v->begin(), v->end());
  });
  return out;
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(RingSecretTest, SecuredRingGivesTheSameBitsAsAPlainOne) {
  for (int n : {2, 3}) {
    SCOPED_TRACE("ranks: " + std::to_string(n));
    store::InMemoryStore plain_store;
    auto plain = CreateRing(n, TestOptions(10s, 4096), &plain_store);
    ASSERT_FALSE(::testing::Test::HasFailure());
    std::vector<std::vector<float>> expected = RunOps(plain);

    ::testing::internal::CaptureStderr();
    store::InMemoryStore store;
    auto secured = CreateRing(n, SecuredOptions(kSecretValue), &store);
    std::vector<std::vector<float>> got;
    if (!::testing::Test::HasFailure()) got = RunOps(secured);
    std::string log = ::testing::internal::GetCapturedStderr();
    ASSERT_FALSE(::testing::Test::HasFailure()) << log;

    for (int r = 0; r < n; ++r) {
      EXPECT_TRUE(SameBits(got[r], expected[r])) << "rank " << r;
      EXPECT_TRUE(SameBits(got[r], got[0])) << "rank " << r << " differs from rank 0";
    }
    EXPECT_EQ(CountLinesWith(log, "authenticated with the cluster secret (fingerprint " +
                                      Secret(kSecretValue).Fingerprint() + ")"),
              static_cast<size_t>(n))
        << log;
    EXPECT_EQ(CountLinesWith(log, "refused"), 0u) << log;
    ExpectNoSecretIn(log);
  }
}

TEST(RingSecretTest, StrangersAreRefusedOnceEachAndTheRingStillForms) {
  ::testing::internal::CaptureStderr();
  const int n = 3;
  RingInSetUp ring(SecuredOptions(kSecretValue), n);
  auto& comms = ring.comms;
  auto& statuses = ring.statuses;
  // Ranks 1 and 2 start; rank 0 (rank 1's member predecessor) only after every stranger
  // has been dealt with by rank 1, which is then accepting and serving its own challenge.
  ring.StartAllBut(0);
  std::string host;
  int port = 0;
  const std::string addr = ring.Address(1, &host, &port);
  ASSERT_FALSE(addr.empty());
  const std::string target = "rank 1 (" + addr + ")";

  // (a) Garbage: an HTTP request.
  auto garbage = ConnectTcp(host, port, Deadline::After(5s), target);
  ASSERT_TRUE(garbage.ok()) << garbage.status().ToString();
  const char http[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_TRUE(SendAll(garbage->get(), http, sizeof(http) - 1, Deadline::After(5s), -1, target).ok());
  const std::string garbage_addr = LocalAddress(garbage->get());
  EXPECT_TRUE(ClosedByPeer(garbage->get()));

  // (b) Silent: connects and says nothing, held open through set-up.
  auto silent = ConnectTcp(host, port, Deadline::After(5s), target);
  ASSERT_TRUE(silent.ok()) << silent.status().ToString();
  const std::string silent_addr = LocalAddress(silent->get());

  // (c) A process with a different secret, claiming to be rank 0 and running the real
  // protocol: refused, and told nothing that would let it pass for a member.
  auto wrong = OutgoingHandshake::Start(host, port, 0, n, 1, Secret(kOtherSecretValue), Deadline::After(5s));
  ASSERT_TRUE(wrong.ok()) << wrong.status().ToString();
  const std::string wrong_addr = LocalAddress(wrong->fd());
  auto wrong_done = wrong->Finish(Deadline::After(5s));
  EXPECT_EQ(wrong_done.status().code(), Code::kPermissionDenied) << wrong_done.status().ToString();
  EXPECT_TRUE(Contains(wrong_done.status().message(), "not a member of this cluster (cluster secret mismatch)"))
      << wrong_done.status().ToString();
  EXPECT_TRUE(Contains(wrong_done.status().message(), addr)) << wrong_done.status().ToString();

  // (d) A process with no secret at all (the plain protocol), claiming to be rank 0.
  auto none = OutgoingHandshake::Start(host, port, 0, n, 1, ClusterSecret(), Deadline::After(5s));
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  const std::string none_addr = LocalAddress(none->fd());
  auto none_done = none->Finish(Deadline::After(5s));
  // It reads our challenge where it expects a hello, and says what that probably means.
  EXPECT_FALSE(none_done.ok());
  EXPECT_TRUE(Contains(none_done.status().message(), "cluster secret")) << none_done.status().ToString();

  ring.Start(0);
  ring.JoinAll();
  EXPECT_TRUE(ClosedByPeer(silent->get()));
  for (int r = 0; r < n; ++r) EXPECT_TRUE(statuses[r].ok()) << "rank " << r << ": " << statuses[r].ToString();
  std::vector<std::vector<float>> got;
  if (!::testing::Test::HasFailure()) got = RunOps(comms);
  std::string log = ::testing::internal::GetCapturedStderr();
  ASSERT_FALSE(::testing::Test::HasFailure()) << log;

  // The results are those of an undisturbed ring.
  store::InMemoryStore plain_store;
  auto plain = CreateRing(n, TestOptions(10s, 4096), &plain_store);
  ASSERT_FALSE(::testing::Test::HasFailure());
  std::vector<std::vector<float>> expected = RunOps(plain);
  for (int r = 0; r < n; ++r) EXPECT_TRUE(SameBits(got[r], expected[r])) << "rank " << r;

  // One warning line per stranger, naming its address.
  for (const std::string& a : {garbage_addr, silent_addr, wrong_addr, none_addr}) {
    EXPECT_EQ(CountLinesWith(log, "refused a data-plane connection from " + a + ": "), 1u) << a << "\n" << log;
    EXPECT_EQ(CountLinesWith(log, a), 1u) << a << "\n" << log;
  }
  EXPECT_EQ(CountLinesWith(log, "refused a data-plane connection from " + wrong_addr +
                                    ": wrong or missing cluster secret"),
            1u)
      << log;
  EXPECT_EQ(CountLinesWith(log, "refused a data-plane connection from " + none_addr +
                                    ": wrong or missing cluster secret"),
            1u)
      << log;
  ExpectNoSecretIn(log);
}

TEST(RingSecretTest, ASilentStrangerIsDroppedAndSetUpGoesOn) {
  ::testing::internal::CaptureStderr();
  const int n = 3;
  RingInSetUp ring(SecuredOptions(kSecretValue, 60s), n);
  auto& comms = ring.comms;
  auto& statuses = ring.statuses;
  // Rank 1 accepts while its member predecessor, rank 0, has not started yet.
  ring.StartAllBut(0);
  std::string host;
  int port = 0;
  ASSERT_FALSE(ring.Address(1, &host, &port).empty());
  auto silent = ConnectTcp(host, port, Deadline::After(5s), "rank 1");
  ASSERT_TRUE(silent.ok()) << silent.status().ToString();
  const std::string silent_addr = LocalAddress(silent->get());
  // Rank 1 gives it kCandidateTimeout to prove itself, then drops it on its own.
  EXPECT_TRUE(ClosedByPeer(silent->get(), kCandidateTimeout + 30s));
  ring.Start(0);
  ring.JoinAll();
  std::string log = ::testing::internal::GetCapturedStderr();
  for (int r = 0; r < n; ++r) ASSERT_TRUE(statuses[r].ok()) << "rank " << r << ": " << statuses[r].ToString();
  std::vector<float> data[n];
  RunOnRanks(n, [&](int r) {
    data[r].assign(3, static_cast<float>(r + 1));
    EXPECT_TRUE(comms[r]->AllReduce(data[r].data(), data[r].size(), collective::ReduceOp::kSum).ok());
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(data[r], std::vector<float>(3, 6.0f));
  EXPECT_EQ(CountLinesWith(log, "refused a data-plane connection from " + silent_addr +
                                    ": it did not complete the handshake within 5 s"),
            1u)
      << log;
  EXPECT_EQ(CountLinesWith(log, silent_addr), 1u) << log;
}

TEST(RingSecretTest, RanksWithDifferentSecretsFailSayingSo) {
  for (int n : {2, 3}) {
    SCOPED_TRACE("ranks: " + std::to_string(n));
    ::testing::internal::CaptureStderr();
    store::InMemoryStore store;
    std::vector<Status> statuses(n);
    RunOnRanks(n, [&](int r) {
      // Rank 0 alone has another secret.
      auto c = collective::CreateCommunicator(SecuredOptions(r == 0 ? kOtherSecretValue : kSecretValue, 5s), r, n, &store);
      statuses[r] = c.status();
    });
    std::string log = ::testing::internal::GetCapturedStderr();
    int denied = 0;
    for (int r = 0; r < n; ++r) {
      const Status& s = statuses[r];
      ASSERT_FALSE(s.ok()) << "rank " << r << " formed a ring with a rank of another secret";
      // With two ranks, each either was refused (it says so) or saw its peer close on
      // it after that peer was refused; neither waits for the deadline. With three,
      // rank 1 waits for a member rank 0 until the deadline, naming the refusal, and
      // rank 2 may find rank 0 gone already (connection refused).
      if (n == 2) {
        EXPECT_NE(s.code(), Code::kDeadlineExceeded) << "rank " << r << ": " << s.ToString();
      }
      if (n == 2 || r == 1) {
        EXPECT_TRUE(Contains(s.message(), "cluster secret")) << "rank " << r << ": " << s.ToString();
      }
      if (s.code() == Code::kPermissionDenied) {
        ++denied;
        EXPECT_TRUE(Contains(s.message(), "not a member of this cluster (cluster secret mismatch)")) << s.ToString();
        EXPECT_TRUE(Contains(s.message(), "127.0.0.1:")) << s.ToString();
      }
    }
    EXPECT_GE(denied, 1);
    EXPECT_GE(CountLinesWith(log, "wrong or missing cluster secret"), 1u) << log;
    ExpectNoSecretIn(log);
  }
}

TEST(RingSecretTest, ARankWithoutTheSecretIsRefusedAndToldWhy) {
  ::testing::internal::CaptureStderr();
  store::InMemoryStore store;
  std::vector<Status> statuses(2);
  RunOnRanks(2, [&](int r) {
    collective::CommunicatorOptions o = r == 0 ? SecuredOptions(kSecretValue, 2s) : TestOptions(2s);
    statuses[r] = collective::CreateCommunicator(o, r, 2, &store).status();
  });
  std::string log = ::testing::internal::GetCapturedStderr();
  for (int r = 0; r < 2; ++r) {
    EXPECT_FALSE(statuses[r].ok()) << "rank " << r;
    EXPECT_TRUE(Contains(statuses[r].message(), "cluster secret")) << "rank " << r << ": " << statuses[r].ToString();
  }
  // Rank 1 (without) refuses rank 0's secured hello. Rank 0 (with) refuses rank 1's
  // plain hello if it reads it before it gives up on rank 1's refusal.
  EXPECT_LE(CountLinesWith(log, "wrong or missing cluster secret (it connected without one"), 1u) << log;
  EXPECT_EQ(CountLinesWith(log, "it uses a cluster secret and this worker has none"), 1u) << log;
  ExpectNoSecretIn(log);
}

TEST(HandshakeWireTest, ProofsAreBoundToRoleNoncesAndRanks) {
  const std::string a(32, 'a'), c(32, 'c'), other(32, 'x');
  const std::string base = ci::ProofMessage("connect", a, c, 0, 1, 3);
  EXPECT_NE(base, ci::ProofMessage("accept", a, c, 0, 1, 3));
  EXPECT_NE(base, ci::ProofMessage("connect", other, c, 0, 1, 3));
  EXPECT_NE(base, ci::ProofMessage("connect", a, other, 0, 1, 3));
  EXPECT_NE(base, ci::ProofMessage("connect", a, c, 1, 0, 3));
  EXPECT_NE(base, ci::ProofMessage("connect", a, c, 0, 1, 4));
  ClusterSecret secret = Secret(kSecretValue);
  std::string proof = secret.Proof(ci::kDataPlaneContext, base);
  EXPECT_EQ(proof.size(), ci::kProofBytes);
  EXPECT_TRUE(secret.Verify(ci::kDataPlaneContext, base, proof));
  EXPECT_FALSE(Secret(kOtherSecretValue).Verify(ci::kDataPlaneContext, base, proof));
  EXPECT_FALSE(secret.Verify("grpc", base, proof));
}

TEST(HandshakeWireTest, HelloKindMismatchIsNamed) {
  uint8_t hello[ci::kHelloBytes];
  ci::EncodeHello(ci::HelloKind::kSecured, kRingProtocolVersion, 2, 3, hello);
  EXPECT_EQ(ci::CheckHello(hello, ci::HelloKind::kSecured, kRingProtocolVersion, 3, 2), "");
  EXPECT_TRUE(Contains(ci::CheckHello(hello, ci::HelloKind::kPlain, kRingProtocolVersion, 3, 2),
                       "uses a cluster secret and this worker has none"));
  EXPECT_TRUE(Contains(ci::CheckHello(hello, ci::HelloKind::kSecured, kRingProtocolVersion, 3, 1),
                       "expected rank 1"));
  ci::EncodeHello(ci::HelloKind::kPlain, kRingProtocolVersion, 2, 3, hello);
  EXPECT_EQ(ci::CheckHello(hello, ci::HelloKind::kPlain, kRingProtocolVersion, 3, 2), "");
  EXPECT_TRUE(Contains(ci::CheckHello(hello, ci::HelloKind::kSecured, kRingProtocolVersion, 3, 2),
                       "wrong or missing cluster secret"));
}

}  // namespace
}  // namespace ringtrain::collective
