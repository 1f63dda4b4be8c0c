// Who gets into the coordination service: the proof of the cluster secret on every
// call (call_auth.h), the caller's address (peer_filter.h), the once-per-caller log of
// refusals (call_guard.h), and all of it end to end over loopback gRPC in one process.
#include <future>
#include <thread>

#include <gtest/gtest.h>
#include <grpcpp/grpcpp.h>

#include "coordination/call_auth.h"
#include "coordination/call_guard.h"
#include "coordination/coordination_client.h"
#include "coordination/coordination_server.h"
#include "coordination/peer_filter.h"
#include "proto/coordination.grpc.pb.h"
#include "testing/text.h"

namespace ringtrain::coordination {
namespace {

using std::chrono::milliseconds;

const char* kSecurityJob = R"({"model": "mlp"})";
const std::string kSecretText = "0123456789abcdef0123456789abcdef";
const int64_t kNow = 1'700'000'000'000;

security::ClusterSecret Secret(const std::string& text = kSecretText) {
  auto s = security::ClusterSecret::FromValue(text);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? *s : security::ClusterSecret();
}

using ringtrain::testing::Contains;

// ---- the proof ------------------------------------------------------------------

const std::string kBody = "a request's bytes";
const std::string kNonce = "00112233445566778899aabbccddeeff";

TEST(CallAuthTest, TokenHasTimestampTaskNonceBodyDigestAndHexProof) {
  std::string token = MakeAuthToken(Secret(), "worker:1", method::kRegister, kBody, kNow, kNonce);
  const std::string digest = security::Hex(security::Sha256(kBody));
  const std::string signed_part = "1700000000000.worker:1." + kNonce + "." + digest;
  EXPECT_EQ(token.rfind(signed_part + ".", 0), 0u) << token;
  std::string hex = token.substr(token.rfind('.') + 1);
  EXPECT_EQ(hex.size(), 64u);  // HMAC-SHA256
  EXPECT_EQ(hex, security::Hex(Secret().Proof("grpc", signed_part + "." + std::string(method::kRegister))));
  EXPECT_FALSE(Contains(token, kSecretText));
  EXPECT_TRUE(MakeAuthToken(security::ClusterSecret(), "worker:1", method::kRegister, kBody, kNow).empty());
  // Without a nonce of its own, every token gets a fresh random one.
  EXPECT_NE(MakeAuthToken(Secret(), "worker:1", method::kRegister, kBody, kNow),
            MakeAuthToken(Secret(), "worker:1", method::kRegister, kBody, kNow));
}

TEST(CallAuthTest, ValidTokenPassesWithinTheSkew) {
  std::string token = MakeAuthToken(Secret(), "chief:0", method::kKvGet, kBody, kNow);
  EXPECT_TRUE(CheckAuthToken(Secret(), token, method::kKvGet, kNow).ok);
  EXPECT_TRUE(CheckAuthToken(Secret(), token, method::kKvGet, kNow + 299'000).ok);
  EXPECT_TRUE(CheckAuthToken(Secret(), token, method::kKvGet, kNow - 299'000).ok);
}

TEST(CallAuthTest, ClockSkewBeyondFiveMinutesIsRefused) {
  std::string token = MakeAuthToken(Secret(), "chief:0", method::kKvGet, kBody, kNow);
  AuthCheck late = CheckAuthToken(Secret(), token, method::kKvGet, kNow + 301'000);
  EXPECT_FALSE(late.ok);
  EXPECT_TRUE(Contains(late.reason, "behind the chief's")) << late.reason;
  AuthCheck early = CheckAuthToken(Secret(), token, method::kKvGet, kNow - 301'000);
  EXPECT_FALSE(early.ok);
  EXPECT_TRUE(Contains(early.reason, "ahead of the chief's")) << early.reason;
}

TEST(CallAuthTest, WrongSecretOtherMethodOrEditedTokenIsRefused) {
  std::string token = MakeAuthToken(Secret(), "worker:0", method::kRegister, kBody, kNow);
  AuthCheck wrong = CheckAuthToken(Secret("another secret of 32 bytes......"), token, method::kRegister, kNow);
  EXPECT_FALSE(wrong.ok);
  EXPECT_EQ(wrong.reason, "wrong cluster secret");
  // A proof for Register is worth nothing for KvSet.
  EXPECT_FALSE(CheckAuthToken(Secret(), token, method::kKvSet, kNow).ok);
  // The timestamp or the task are part of what is signed.
  std::string later = token;
  later.replace(0, 13, "1700000000001");
  EXPECT_FALSE(CheckAuthToken(Secret(), later, method::kRegister, kNow).ok);
  std::string other_task = token;
  other_task.replace(other_task.find("worker:0"), 8, "worker:1");
  EXPECT_FALSE(CheckAuthToken(Secret(), other_task, method::kRegister, kNow).ok);
}

TEST(CallAuthTest, MissingOrMalformedTokenIsRefused) {
  EXPECT_EQ(CheckAuthToken(Secret(), std::nullopt, method::kRegister, kNow).reason, "missing cluster secret proof");
  EXPECT_EQ(CheckAuthToken(Secret(), "", method::kRegister, kNow).reason, "missing cluster secret proof");
  const std::string n = kNonce, d = security::Hex(security::Sha256(kBody)), p(64, 'a');
  for (std::string bad : {std::string("garbage"), std::string("1.2"), "x.worker:0." + n + "." + d + "." + p,
                          "1700000000000.worker:0." + n + "." + d + ".zz", "1700000000000.." + n + "." + d + "." + p,
                          "1700000000000.WORKER\n0." + n + "." + d + "." + p,
                          "1700000000000.worker:0." + n.substr(2) + "." + d + "." + p,  // short nonce
                          "1700000000000.worker:0." + n + "." + d.substr(2) + "." + p,  // short digest
                          "1700000000000.worker:0." + d + "." + p}) {                  // no nonce
    AuthCheck r = CheckAuthToken(Secret(), bad, method::kRegister, kNow);
    EXPECT_FALSE(r.ok) << bad;
    EXPECT_EQ(r.reason, "malformed cluster secret proof") << bad;
  }
}

TEST(CallAuthTest, WithoutASecretEveryCallPasses) {
  EXPECT_TRUE(CheckAuthToken(security::ClusterSecret(), std::nullopt, method::kRegister, kNow).ok);
}

// ---- addresses ------------------------------------------------------------------

TEST(PeerFilterTest, ParsesGrpcPeerUris) {
  EXPECT_EQ(PeerIp("ipv4:10.0.0.9:5000"), "10.0.0.9");
  EXPECT_EQ(PeerIp("ipv6:[::1]:5000"), "::1");
  EXPECT_EQ(PeerIp("ipv6:%5B::1%5D:5000"), "::1");
  EXPECT_EQ(PeerIp("ipv6:[::ffff:10.1.2.3]:80"), "10.1.2.3");
  EXPECT_EQ(PeerIp("ipv6:[fe80::1%25eth0]:80"), "fe80::1");  // the zone does not change the machine
  EXPECT_EQ(PeerIp("ipv6:[2001:DB8::0001]:1"), "2001:db8::1");
  EXPECT_EQ(PeerIp("unix:/tmp/sock"), std::nullopt);
  EXPECT_EQ(PeerIp("ipv4:not-an-ip:1"), std::nullopt);
  EXPECT_EQ(PeerIp("ipv4:10.0.0.9"), std::nullopt);
  EXPECT_EQ(PeerIp(""), std::nullopt);
}

TEST(PeerFilterTest, LoopbackAddresses) {
  EXPECT_TRUE(IsLoopbackIp("127.0.0.1"));
  EXPECT_TRUE(IsLoopbackIp("127.3.2.1"));
  EXPECT_TRUE(IsLoopbackIp("::1"));
  EXPECT_FALSE(IsLoopbackIp("10.0.0.1"));
  EXPECT_FALSE(IsLoopbackIp("::2"));
  EXPECT_FALSE(IsLoopbackIp("localhost"));  // a name, not an address
  EXPECT_EQ(FirstNonLoopbackHost({"127.0.0.1", "localhost", "::1", "127.0.0.5"}, milliseconds(2000)), std::nullopt);
  EXPECT_EQ(FirstNonLoopbackHost({"127.0.0.1", "10.0.0.2", "10.0.0.3"}, milliseconds(2000)), "10.0.0.2");
  // A name that does not resolve cannot be shown to be loopback.
  EXPECT_EQ(FirstNonLoopbackHost({"no-such-host.invalid"}, milliseconds(5000)), "no-such-host.invalid");
}

TEST(PeerFilterTest, AdmitsTheClusterHostsOnly) {
  PeerFilter cluster({"10.0.0.1", "10.0.0.2", "[fd00::7]"});
  EXPECT_FALSE(cluster.loopback_cluster());
  EXPECT_TRUE(cluster.Admits("10.0.0.1"));
  EXPECT_TRUE(cluster.Admits("10.0.0.2"));
  EXPECT_TRUE(cluster.Admits("fd00::7"));
  EXPECT_FALSE(cluster.Admits("10.0.0.9"));
  EXPECT_FALSE(cluster.Admits("127.0.0.1"));  // not on loopback: neither are its callers
}

TEST(PeerFilterTest, LoopbackClusterAdmitsLoopbackCallers) {
  PeerFilter cluster({"127.0.0.2", "127.0.0.3"});
  EXPECT_TRUE(cluster.loopback_cluster());
  EXPECT_TRUE(cluster.Admits("127.0.0.1"));
  EXPECT_TRUE(cluster.Admits("::1"));
  EXPECT_FALSE(cluster.Admits("10.0.0.9"));
  PeerFilter by_name({"localhost"});
  EXPECT_TRUE(by_name.Admits("127.0.0.1"));
  PeerFilter none({});  // no hosts known: loopback only
  EXPECT_TRUE(none.Admits("127.0.0.1"));
  EXPECT_FALSE(none.Admits("10.0.0.1"));
}

// ---- the guard and its log ------------------------------------------------------

TEST(RefusalLogTest, OneLinePerCallerAndReasonThenSilence) {
  RefusalLog log(3);
  std::string first = log.LineFor("10.0.0.9", "wrong cluster secret");
  EXPECT_EQ(first, "refused a coordination call from 10.0.0.9: wrong cluster secret (further refusals of it are not "
                   "logged)");
  EXPECT_EQ(log.LineFor("10.0.0.9", "wrong cluster secret"), "");
  EXPECT_NE(log.LineFor("10.0.0.9", "address not in the cluster"), "");  // another reason
  EXPECT_NE(log.LineFor("10.0.0.8", "wrong cluster secret"), "");
  // The bound is reached: one line says so, then nothing more.
  EXPECT_TRUE(Contains(log.LineFor("10.0.0.7", "wrong cluster secret"), "further refusals are not logged"));
  EXPECT_EQ(log.LineFor("10.0.0.6", "wrong cluster secret"), "");
  EXPECT_EQ(log.LineFor("10.0.0.9", "wrong cluster secret"), "");
}

CallGuardOptions GuardOptions(std::vector<std::string> hosts) {
  CallGuardOptions o;
  o.secret = Secret();
  o.cluster_hosts = std::move(hosts);
  return o;
}

TEST(CallGuardTest, SecretThenAddress) {
  CallGuard guard(GuardOptions({"10.0.0.1", "10.0.0.2"}));
  std::string good = MakeAuthToken(Secret(), "worker:1", method::kBarrier, kBody, kNow);
  EXPECT_TRUE(guard.Check("ipv4:10.0.0.2:41000", good, method::kBarrier, kNow).ok());

  grpc::Status no_proof = guard.Check("ipv4:10.0.0.2:41000", std::nullopt, method::kBarrier, kNow);
  EXPECT_EQ(no_proof.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(Contains(no_proof.error_message(), "cluster secret")) << no_proof.error_message();

  // A stranger with a wrong secret learns nothing about addresses: the secret comes first.
  std::string bad =
      MakeAuthToken(Secret("a stranger's guess at the secret"), "worker:1", method::kBarrier, kBody, kNow);
  EXPECT_EQ(guard.Check("ipv4:10.0.0.9:41000", bad, method::kBarrier, kNow).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);

  // The right secret from outside the cluster.
  grpc::Status outside = guard.Check("ipv4:10.0.0.9:41000", good, method::kBarrier, kNow);
  EXPECT_EQ(outside.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_TRUE(Contains(outside.error_message(), "10.0.0.9")) << outside.error_message();
  EXPECT_EQ(guard.Check("unix:/tmp/x", good, method::kBarrier, kNow).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
}

TEST(CallGuardTest, AddressCheckCanBeTurnedOff) {
  CallGuardOptions o = GuardOptions({"10.0.0.1"});
  o.check_peer_address = false;
  CallGuard guard(std::move(o));
  std::string good = MakeAuthToken(Secret(), "worker:1", method::kKvSet, kBody, kNow);
  EXPECT_TRUE(guard.Check("ipv4:192.0.2.7:41000", good, method::kKvSet, kNow).ok());
  EXPECT_EQ(guard.Check("ipv4:192.0.2.7:41000", std::nullopt, method::kKvSet, kNow).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
}

TEST(CallGuardTest, RefusalsAreLoggedOncePerCallerWithoutTheProof) {
  CallGuard guard(GuardOptions({"127.0.0.1"}));
  std::string bad =
      MakeAuthToken(Secret("a stranger's guess at the secret"), "worker:1", method::kKvGet, kBody, kNow);
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 5; ++i) {
    guard.Check("ipv4:127.0.0.1:" + std::to_string(40000 + i), bad, method::kKvGet, kNow);
  }
  std::string log = ::testing::internal::GetCapturedStderr();
  size_t first = log.find("refused a coordination call from 127.0.0.1: wrong cluster secret");
  ASSERT_NE(first, std::string::npos) << log;
  EXPECT_EQ(log.find("refused", first + 1), std::string::npos) << log;
  EXPECT_FALSE(Contains(log, bad.substr(bad.rfind('.') + 1))) << log;
  EXPECT_FALSE(Contains(log, kSecretText)) << log;
}

// ---- end to end over loopback gRPC ----------------------------------------------

std::unique_ptr<CoordinationServer> StartServer(const security::ClusterSecret& secret,
                                                std::vector<std::string> hosts = {"127.0.0.1"}) {
  ServerOptions o;
  o.address = "127.0.0.1:0";
  o.expected_tasks = {"worker:0", "worker:1"};
  o.reference_job_json = kSecurityJob;
  o.cluster_secret = secret;
  o.cluster_hosts = std::move(hosts);
  auto server = CoordinationServer::Start(o);
  EXPECT_TRUE(server.ok()) << server.status().ToString();
  return server.ok() ? std::move(server).value() : nullptr;
}

std::unique_ptr<CoordinationClient> Client(int port, const std::string& task, const security::ClusterSecret& secret) {
  ClientOptions o;
  o.service_address = "127.0.0.1:" + std::to_string(port);
  o.task = task;
  o.incarnation = 7;
  o.rpc_timeout = milliseconds(3000);
  o.cluster_secret = secret;
  return std::make_unique<CoordinationClient>(o);
}

TEST(SecuredServiceTest, MembersWithTheSecretWorkTogether) {
  auto server = StartServer(Secret());
  ASSERT_NE(server, nullptr);
  auto a = Client(server->port(), "worker:0", Secret());
  auto b = Client(server->port(), "worker:1", Secret());
  ASSERT_TRUE(a->Register(kSecurityJob, Deadline::After(milliseconds(10000))).ok());
  ASSERT_TRUE(b->Register(kSecurityJob, Deadline::After(milliseconds(10000))).ok());
  ASSERT_TRUE(a->Set("k", "v").ok());
  auto v = b->Get("k", Deadline::After(milliseconds(5000)));
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(*v, "v");
  std::thread t([&] { EXPECT_TRUE(a->Barrier("both", Deadline::After(milliseconds(10000))).ok()); });
  EXPECT_TRUE(b->Barrier("both", Deadline::After(milliseconds(10000))).ok());
  t.join();
  auto r0 = std::async(std::launch::async,
                       [&] { return a->Rendezvous(-1, "start", Deadline::After(milliseconds(10000))); });
  auto r1 = b->Rendezvous(-1, "start", Deadline::After(milliseconds(10000)));
  ASSERT_TRUE(r1.ok()) << r1.status().ToString();
  ASSERT_TRUE(r0.get().ok());
  EXPECT_TRUE(a->Shutdown(Deadline::After(milliseconds(5000))).ok());
  EXPECT_TRUE(b->Shutdown(Deadline::After(milliseconds(5000))).ok());
}

TEST(SecuredServiceTest, WrongOrNoSecretCannotRegisterAndSaysWhy) {
  auto server = StartServer(Secret());
  ASSERT_NE(server, nullptr);
  for (auto secret : {Secret("a stranger's guess at the secret"), security::ClusterSecret()}) {
    auto stranger = Client(server->port(), "worker:1", secret);
    Status s = stranger->Register(kSecurityJob, Deadline::After(milliseconds(30000)));
    EXPECT_EQ(s.code(), Code::kPermissionDenied) << s.ToString();
    EXPECT_TRUE(Contains(s.message(), "cluster secret")) << s.ToString();
    EXPECT_FALSE(Contains(s.message(), kSecretText));
    // The store is closed to it too.
    EXPECT_EQ(stranger->Set("ring/0/rank0", "evil").code(), Code::kPermissionDenied);
  }
  // Nothing the strangers sent reached the state: the key is not set.
  auto member = Client(server->port(), "worker:0", Secret());
  ASSERT_TRUE(member->Register(kSecurityJob, Deadline::After(milliseconds(10000))).ok());
  EXPECT_EQ(member->Get("ring/0/rank0", Deadline::After(milliseconds(300))).status().code(),
            Code::kDeadlineExceeded);
}

TEST(SecuredServiceTest, RawStubWithoutMetadataOrWithAReplayedProofIsUnauthenticated) {
  auto server = StartServer(Secret());
  ASSERT_NE(server, nullptr);
  auto stub = CoordinationService::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string(server->port()),
                                                               grpc::InsecureChannelCredentials()));
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    KvSetRequest req;
    req.set_key("x");
    KvSetResponse resp;
    grpc::Status s = stub->KvSet(&ctx, req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << s.error_message();
  }
  {
    // A valid proof for Heartbeat does not open KvSet.
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    KvSetRequest req;
    req.set_key("x");
    ctx.AddMetadata(kAuthMetadataKey,
                    MakeAuthToken(Secret(), "worker:0", method::kHeartbeat, req.SerializeAsString(), UnixMillisNow()));
    KvSetResponse resp;
    EXPECT_EQ(stub->KvSet(&ctx, req, &resp).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  }
  {
    // The same with its own method's proof is served: the method names match the wire.
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    KvSetRequest req;
    req.set_key("x");
    ctx.AddMetadata(kAuthMetadataKey,
                    MakeAuthToken(Secret(), "worker:0", method::kKvSet, req.SerializeAsString(), UnixMillisNow()));
    KvSetResponse resp;
    grpc::Status s = stub->KvSet(&ctx, req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
  }
}

TEST(SecuredServiceTest, CallersOutsideTheClusterAreDenied) {
  // The cluster lives on 10.0.0.x; this test's client calls from 127.0.0.1.
  auto server = StartServer(Secret(), {"10.0.0.1", "10.0.0.2"});
  ASSERT_NE(server, nullptr);
  auto c = Client(server->port(), "worker:0", Secret());
  Status s = c->Register(kSecurityJob, Deadline::After(milliseconds(10000)));
  EXPECT_EQ(s.code(), Code::kPermissionDenied) << s.ToString();
  EXPECT_TRUE(Contains(s.message(), "127.0.0.1")) << s.ToString();
}

TEST(SecuredServiceTest, NoSecretOnALoopbackClusterWorksAsBefore) {
  auto server = StartServer(security::ClusterSecret());
  ASSERT_NE(server, nullptr);
  auto a = Client(server->port(), "worker:0", security::ClusterSecret());
  EXPECT_TRUE(a->Register(kSecurityJob, Deadline::After(milliseconds(10000))).ok());
  EXPECT_TRUE(a->Set("k", "v").ok());
}

}  // namespace
}  // namespace ringtrain::coordination
