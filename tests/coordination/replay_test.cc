// Calls that cannot be replayed or redirected: a real client's calls are
// captured on their way to a real chief (a forwarding gRPC proxy records the
// ringtrain-auth header and the request's bytes, as an eavesdropper on the wire would),
// then sent again -- as they were, with a changed body, or naming another task -- and the
// chief must refuse each with UNAUTHENTICATED and change nothing. Also the replay cache
// and the body and task checks on plain values.
#include <future>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include "coordination/call_auth.h"
#include "coordination/call_guard.h"
#include "coordination/coordination_client.h"
#include "coordination/coordination_server.h"
#include "coordination/replay_cache.h"
#include "proto/coordination.grpc.pb.h"
#include "testing/text.h"

namespace ringtrain::coordination {
namespace {

using std::chrono::milliseconds;

const char* kReplayJob = R"({"model": "mlp"})";
const int64_t kReplayNow = 1'700'000'000'000;

security::ClusterSecret ReplaySecret() {
  auto s = security::ClusterSecret::FromValue("0123456789abcdef0123456789abcdef");
  EXPECT_TRUE(s.ok());
  return s.ok() ? *s : security::ClusterSecret();
}

using ringtrain::testing::Contains;

// ---- on plain values --------------------------------------------------------------

TEST(ReplayCacheTest, ANonceIsAdmittedOnceWithinTheWindow) {
  ReplayCache cache(100, milliseconds(1000));
  EXPECT_TRUE(cache.Admit("a", kReplayNow, kReplayNow));
  EXPECT_FALSE(cache.Admit("a", kReplayNow, kReplayNow));
  EXPECT_FALSE(cache.Admit("a", kReplayNow, kReplayNow + 1000));
  EXPECT_TRUE(cache.Admit("b", kReplayNow, kReplayNow));
  // Past the window its entry goes (the clock check refuses such a token anyway).
  EXPECT_TRUE(cache.Admit("c", kReplayNow + 2000, kReplayNow + 2000));
  EXPECT_EQ(cache.size(), 1u);
}

TEST(ReplayCacheTest, TheBoundNeverLetsAReplayThrough) {
  ReplayCache cache(3, milliseconds(60'000));
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(cache.Admit("n" + std::to_string(i), kReplayNow + i, kReplayNow));
  // Full: the oldest (n0 at kReplayNow) is forced out, and with it every token not newer.
  EXPECT_TRUE(cache.Admit("n3", kReplayNow + 3, kReplayNow));
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_FALSE(cache.Admit("n0", kReplayNow, kReplayNow));      // forgotten, but refused all the same
  EXPECT_FALSE(cache.Admit("fresh", kReplayNow, kReplayNow));   // as old as what was forced out
  EXPECT_FALSE(cache.Admit("n3", kReplayNow + 3, kReplayNow));  // still remembered
  EXPECT_TRUE(cache.Admit("n4", kReplayNow + 4, kReplayNow));
}

TEST(CallGuardReplayTest, ProofIsSingleUseAndBoundToBodyAndTask) {
  CallGuardOptions o;
  o.secret = ReplaySecret();
  o.cluster_hosts = {"127.0.0.1"};
  CallGuard guard(std::move(o));
  const std::string peer = "ipv4:127.0.0.1:41000";
  RegisterRequest req;
  req.set_task("worker:1");
  req.set_incarnation(7);
  const std::string body = req.SerializeAsString();
  const std::string token = MakeAuthToken(ReplaySecret(), "worker:1", method::kRegister, body, kReplayNow);

  AuthCheck auth;
  ASSERT_TRUE(guard.CheckCall(peer, token, method::kRegister, kReplayNow, &auth).ok());
  EXPECT_TRUE(guard.CheckRequest(peer, auth, body, "worker:1").ok());
  // The same body with another incarnation, or naming another task: not what was signed.
  RegisterRequest changed = req;
  changed.set_incarnation(8);
  grpc::Status altered = guard.CheckRequest(peer, auth, changed.SerializeAsString(), "worker:1");
  EXPECT_EQ(altered.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(Contains(altered.error_message(), "request body altered")) << altered.error_message();
  // A member signing a body that names another task (it holds the secret, so the digest
  // matches): the task in the proof is compared with the task in the request.
  RegisterRequest other = req;
  other.set_task("worker:0");
  const std::string other_body = other.SerializeAsString();
  AuthCheck auth2;
  ASSERT_TRUE(guard.CheckCall(peer, MakeAuthToken(ReplaySecret(), "worker:1", method::kRegister, other_body, kReplayNow),
                              method::kRegister, kReplayNow, &auth2)
                  .ok());
  grpc::Status redirected = guard.CheckRequest(peer, auth2, other_body, "worker:0");
  EXPECT_EQ(redirected.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(Contains(redirected.error_message(), "another task")) << redirected.error_message();
  // The first token again, a second later: a replay.
  grpc::Status replayed = guard.CheckCall(peer, token, method::kRegister, kReplayNow + 1000, &auth);
  EXPECT_EQ(replayed.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(Contains(replayed.error_message(), "replayed call")) << replayed.error_message();
}

TEST(CallGuardReplayTest, ReplaysAreLoggedOnce) {
  CallGuardOptions o;
  o.secret = ReplaySecret();
  o.cluster_hosts = {"127.0.0.1"};
  CallGuard guard(std::move(o));
  const std::string token = MakeAuthToken(ReplaySecret(), "worker:1", method::kHeartbeat, "", kReplayNow);
  ASSERT_TRUE(guard.Check("ipv4:127.0.0.1:41000", token, method::kHeartbeat, kReplayNow).ok());
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(guard.Check("ipv4:127.0.0.1:" + std::to_string(42000 + i), token, method::kHeartbeat, kReplayNow).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
  }
  std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(log.find("replayed call"), log.rfind("replayed call")) << log;
  EXPECT_NE(log.find("refused a coordination call from 127.0.0.1: replayed call"), std::string::npos) << log;
}

// ---- captured from the wire, replayed against a real chief -------------------------

struct Captured {
  std::string method, token, body;
};

// A gRPC proxy in front of the chief: every call is recorded (method, ringtrain-auth,
// the request's bytes) and forwarded unchanged, and the chief's answer returned.
class RecordingProxy final : public grpc::CallbackGenericService {
 public:
  explicit RecordingProxy(int chief_port)
      : stub_(grpc::CreateChannel("127.0.0.1:" + std::to_string(chief_port), grpc::InsecureChannelCredentials())) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterCallbackGenericService(this);
    server_ = builder.BuildAndStart();
  }
  ~RecordingProxy() { server_->Shutdown(std::chrono::system_clock::now() + milliseconds(500)); }
  int port() const { return port_; }
  // The last recorded call of `method`.
  std::optional<Captured> Last(const std::string& method) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = calls_.rbegin(); it != calls_.rend(); ++it) {
      if (it->method == method) return *it;
    }
    return std::nullopt;
  }

  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* ctx) override {
    return new Forward(this, ctx);
  }

 private:
  class Forward final : public grpc::ServerGenericBidiReactor {
   public:
    Forward(RecordingProxy* proxy, grpc::GenericCallbackServerContext* ctx) : proxy_(proxy) {
      captured_.method = ctx->method();
      auto it = ctx->client_metadata().find(kAuthMetadataKey);
      if (it != ctx->client_metadata().end()) captured_.token.assign(it->second.data(), it->second.size());
      out_ctx_.set_deadline(ctx->deadline());
      if (!captured_.token.empty()) out_ctx_.AddMetadata(kAuthMetadataKey, captured_.token);
      StartRead(&in_);
    }
    void OnReadDone(bool ok) override {
      if (!ok) {
        Finish(grpc::Status(grpc::StatusCode::INTERNAL, "no request"));
        return;
      }
      std::vector<grpc::Slice> slices;
      (void)in_.Dump(&slices);
      for (auto& s : slices) captured_.body.append(reinterpret_cast<const char*>(s.begin()), s.size());
      {
        std::lock_guard<std::mutex> lock(proxy_->mu_);
        proxy_->calls_.push_back(captured_);
      }
      proxy_->stub_.UnaryCall(&out_ctx_, captured_.method, grpc::StubOptions(), &in_, &out_, [this](grpc::Status s) {
        if (s.ok()) {
          StartWriteAndFinish(&out_, grpc::WriteOptions(), s);
        } else {
          Finish(s);
        }
      });
    }
    void OnDone() override { delete this; }

   private:
    RecordingProxy* proxy_;
    Captured captured_;
    grpc::ClientContext out_ctx_;
    grpc::ByteBuffer in_, out_;
  };

  grpc::GenericStub stub_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::mutex mu_;
  std::vector<Captured> calls_;  // guarded by mu_
};

// Sends `body` as a call of `method` with `token` as its ringtrain-auth header, as an
// attacker would with what it captured.
grpc::Status Send(int port, const std::string& method, const std::string& token, const std::string& body,
                  std::string* answer = nullptr) {
  grpc::GenericStub stub(
      grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  if (!token.empty()) ctx.AddMetadata(kAuthMetadataKey, token);
  grpc::Slice slice(body);
  grpc::ByteBuffer request(&slice, 1), response;
  std::promise<grpc::Status> done;
  stub.UnaryCall(&ctx, method, grpc::StubOptions(), &request, &response,
                 [&](grpc::Status s) { done.set_value(std::move(s)); });
  grpc::Status status = done.get_future().get();  // bounded by the context's deadline
  if (answer != nullptr) {
    std::vector<grpc::Slice> slices;
    (void)response.Dump(&slices);
    for (auto& s : slices) answer->append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return status;
}

std::unique_ptr<CoordinationServer> StartChief() {
  ServerOptions o;
  o.address = "127.0.0.1:0";
  o.expected_tasks = {"worker:0", "worker:1"};
  o.reference_job_json = kReplayJob;
  o.cluster_secret = ReplaySecret();
  o.cluster_hosts = {"127.0.0.1"};
  auto server = CoordinationServer::Start(o);
  EXPECT_TRUE(server.ok()) << server.status().ToString();
  return server.ok() ? std::move(server).value() : nullptr;
}

std::unique_ptr<CoordinationClient> Client(int port, const std::string& task, uint64_t incarnation) {
  ClientOptions o;
  o.service_address = "127.0.0.1:" + std::to_string(port);
  o.task = task;
  o.incarnation = incarnation;
  o.rpc_timeout = milliseconds(5000);
  o.cluster_secret = ReplaySecret();
  return std::make_unique<CoordinationClient>(o);
}

// Both real tasks arrive for the generation after `last`; the generations they get.
std::pair<StatusOr<RendezvousResult>, StatusOr<RendezvousResult>> FormGeneration(CoordinationClient& a,
                                                                               CoordinationClient& b, int64_t last) {
  auto ra = std::async(std::launch::async, [&] { return a.Rendezvous(last, "", Deadline::After(milliseconds(15000))); });
  auto rb = b.Rendezvous(last, "", Deadline::After(milliseconds(15000)));
  return {ra.get(), std::move(rb)};
}

void ExpectRefusedUnauthenticated(const grpc::Status& s, const std::string& what) {
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << what << ": " << s.error_message();
}

// Table row 1: worker:1's Register, captured and replayed (as it was, and with a new
// incarnation); table row 2: the same header with a body naming worker:0.
TEST(ReplayEndToEndTest, CapturedRegisterReplayedOrRedirectedIsRefusedAndChangesNothing) {
  auto chief = StartChief();
  ASSERT_NE(chief, nullptr);
  RecordingProxy wire(chief->port());
  auto w0 = Client(chief->port(), "worker:0", 100);
  auto w1 = Client(wire.port(), "worker:1", 111);  // its calls go over the "wire"
  ASSERT_TRUE(w0->Register(kReplayJob, Deadline::After(milliseconds(10000))).ok());
  ASSERT_TRUE(w1->Register(kReplayJob, Deadline::After(milliseconds(10000))).ok());
  std::optional<Captured> reg = wire.Last(method::kRegister);
  ASSERT_TRUE(reg.has_value());
  ASSERT_FALSE(reg->token.empty());

  ExpectRefusedUnauthenticated(Send(chief->port(), reg->method, reg->token, reg->body), "replayed as it was");
  RegisterRequest req;
  ASSERT_TRUE(req.ParseFromString(reg->body));
  ASSERT_EQ(req.task(), "worker:1");
  req.set_incarnation(222);  // a "restart" of worker:1
  ExpectRefusedUnauthenticated(Send(chief->port(), reg->method, reg->token, req.SerializeAsString()),
                               "replayed with a new incarnation");
  req.set_task("worker:0");  // redirected at worker:0
  ExpectRefusedUnauthenticated(Send(chief->port(), reg->method, reg->token, req.SerializeAsString()),
                               "redirected to worker:0");

  // Nothing changed: both real processes are still the registered ones and form
  // generation 0 together (a replaced incarnation would be answered ABORTED).
  auto [g0, g1] = FormGeneration(*w0, *w1, -1);
  ASSERT_TRUE(g0.ok()) << g0.status().ToString();
  ASSERT_TRUE(g1.ok()) << g1.status().ToString();
  EXPECT_EQ(g0->generation, 0);
  EXPECT_EQ(g1->generation, 0);
}

// Table row 3: worker:1's Rendezvous replayed 8 times (as it was, and altered to leave
// the generation): every one refused, no generation broken.
TEST(ReplayEndToEndTest, CapturedRendezvousReplayedEightTimesBreaksNoGeneration) {
  auto chief = StartChief();
  ASSERT_NE(chief, nullptr);
  RecordingProxy wire(chief->port());
  auto w0 = Client(chief->port(), "worker:0", 100);
  auto w1 = Client(wire.port(), "worker:1", 111);
  ASSERT_TRUE(w0->Register(kReplayJob, Deadline::After(milliseconds(10000))).ok());
  ASSERT_TRUE(w1->Register(kReplayJob, Deadline::After(milliseconds(10000))).ok());
  auto [g0, g1] = FormGeneration(*w0, *w1, -1);
  ASSERT_TRUE(g0.ok() && g1.ok());
  std::optional<Captured> rdv = wire.Last(method::kRendezvous);
  ASSERT_TRUE(rdv.has_value());

  // As captured (a no-op for the service even if it were accepted), and with its body
  // altered to leave the generation worker:1 is in (which, accepted, would break it).
  RendezvousRequest leave;
  ASSERT_TRUE(leave.ParseFromString(rdv->body));
  leave.set_last_generation(0);
  leave.set_reason("replayed");
  for (int i = 0; i < 8; ++i) {
    const std::string body = i % 2 == 0 ? rdv->body : leave.SerializeAsString();
    ExpectRefusedUnauthenticated(Send(chief->port(), rdv->method, rdv->token, body),
                                 "replay " + std::to_string(i + 1));
  }

  // A fresh view of worker:0 (same process identity) asks through its heartbeat: the
  // first answer tells whether generation 0 was broken.
  auto probe = Client(chief->port(), "worker:0", 100);
  std::mutex mu;
  std::vector<ClusterEvent> events;
  probe->StartHeartbeat(milliseconds(20), milliseconds(5000), [&](const ClusterEvent& e) {
    std::lock_guard<std::mutex> lock(mu);
    events.push_back(e);
  });
  Deadline until = Deadline::After(milliseconds(10000));
  while (probe->last_known_generation() < 0 && !until.expired()) std::this_thread::sleep_for(milliseconds(10));
  probe->StopHeartbeat();  // joins: every event of the answers seen so far is delivered
  EXPECT_EQ(probe->last_known_generation(), 0);
  std::lock_guard<std::mutex> lock(mu);
  for (const auto& e : events) ADD_FAILURE() << ToString(e.kind) << ": " << e.message;
}

// Probes need no secret: the standard health check is answered SERVING without a proof
// (and without reading its request); any other method is UNIMPLEMENTED.
TEST(ReplayEndToEndTest, HealthCheckIsOpenAndOtherMethodsAreUnimplemented) {
  auto chief = StartChief();
  ASSERT_NE(chief, nullptr);
  std::string answer;
  grpc::Status health = Send(chief->port(), "/grpc.health.v1.Health/Check", "", "", &answer);
  ASSERT_TRUE(health.ok()) << health.error_message();
  EXPECT_EQ(answer, std::string("\x08\x01", 2));  // HealthCheckResponse{status: SERVING}
  EXPECT_EQ(Send(chief->port(), "/ringtrain.coordination.CoordinationService/Nope", "", "").error_code(),
            grpc::StatusCode::UNIMPLEMENTED);
}

}  // namespace
}  // namespace ringtrain::coordination
