// Only members get in, with real worker processes on loopback: a stranger calling the
// chief's coordination service during training is refused (UNAUTHENTICATED), logged
// once, and changes nothing (the same model bytes as a run without it); a bad secret
// stops a worker at start (exit 2); a worker whose secret differs from the chief's
// cannot join; the loopback rule; and mutual TLS (certificates made with the openssl
// CLI), where a client without a certificate is refused. No secret is ever printed.
#include <gtest/gtest.h>

#include <signal.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <future>

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include "coordination/call_auth.h"
#include "process.h"
#include "proto/coordination.grpc.pb.h"
#include "security/cluster_secret.h"
#include "test_jobs.h"
#include "testing/sanitizers.h"
#include "testing/text.h"

namespace ringtrain::testing {
namespace {

const std::string kSecret = "6f1c2a9be04d7735a1c08e5f2b9d4e6a";       // what the cluster has
const std::string kWrongSecret = "a stranger's guess at the secret value";  // what a stranger has

// A job with enough epochs that training is still going on when the stranger calls.
std::string WriteJob(const std::string& dir, int epochs) {
  auto job = SmallSyntheticJob(dir);
  job["epochs"] = epochs;
  WriteFile(dir + "/job.json", job.dump());
  return dir + "/job.json";
}

std::map<std::string, std::string> SecureEnv(const std::vector<int>& ports, int index, const std::string& secret) {
  std::map<std::string, std::string> env = {{"TF_CONFIG", LoopbackTfConfig(ports, index)},
                                            {"RINGTRAIN_RENDEZVOUS_TIMEOUT_S", "60"},
                                            {"RINGTRAIN_NUM_THREADS", "1"}};
  if (!secret.empty()) env["RINGTRAIN_CLUSTER_SECRET"] = secret;
  return env;
}


using ringtrain::testing::Contains;

// Calls the chief's KvSet, KvGet and Register through a raw stub with `token` as the
// ringtrain-auth metadata (none if empty); returns the status codes.
std::vector<grpc::StatusCode> StrangerCalls(const std::shared_ptr<grpc::Channel>& channel,
                                            const std::string& token_secret) {
  auto stub = coordination::CoordinationService::NewStub(channel);
  std::vector<grpc::StatusCode> codes;
  auto secret = security::ClusterSecret::FromValue(token_secret);
  auto prepare = [&](grpc::ClientContext* ctx, const char* method, const google::protobuf::MessageLite& req) {
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    if (secret.ok()) {
      ctx->AddMetadata(coordination::kAuthMetadataKey,
                       coordination::MakeAuthToken(*secret, "worker:1", method, req.SerializeAsString(),
                                                   coordination::UnixMillisNow()));
    }
  };
  for (int i = 0; i < 3; ++i) {
    {
      grpc::ClientContext ctx;
      coordination::KvSetRequest req;
      req.set_key("ring/0/rank1");  // what a stranger would poison: a data-plane endpoint
      req.set_value("127.0.0.1:1");
      prepare(&ctx, coordination::method::kKvSet, req);
      coordination::KvSetResponse resp;
      codes.push_back(stub->KvSet(&ctx, req, &resp).error_code());
    }
    {
      grpc::ClientContext ctx;
      coordination::KvGetRequest req;
      req.set_key("ring/0/rank0");
      prepare(&ctx, coordination::method::kKvGet, req);
      coordination::KvGetResponse resp;
      codes.push_back(stub->KvGet(&ctx, req, &resp).error_code());
    }
    {
      grpc::ClientContext ctx;
      coordination::RegisterRequest req;
      req.set_task("worker:1");
      req.set_incarnation(99);
      prepare(&ctx, coordination::method::kRegister, req);
      coordination::RegisterResponse resp;
      codes.push_back(stub->Register(&ctx, req, &resp).error_code());
    }
  }
  return codes;
}

std::shared_ptr<grpc::Channel> PlainChannel(int port) {
  return grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials());
}

struct TwoWorkerRun {
  ProcessResult chief, worker;
  std::string model;
  std::vector<grpc::StatusCode> stranger_codes;
};

// Two workers with the cluster secret; with `stranger`, a raw client with a wrong secret
// calls the chief's service once the chief trains.
TwoWorkerRun RunTwoWorkers(bool stranger, const std::vector<std::string>& extra_args = {},
                           std::function<std::shared_ptr<grpc::Channel>(int)> stranger_channel = PlainChannel) {
  TempDir tmp;
  std::string job = WriteJob(tmp.path(), 200);
  auto ports = FreePorts(2);
  std::vector<std::string> args = {"worker", "--job", job};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  Process chief(RingtrainBinary(), args, SecureEnv(ports, 0, kSecret));
  Process worker(RingtrainBinary(), args, SecureEnv(ports, 1, kSecret));
  TwoWorkerRun run;
  if (stranger) {
    EXPECT_TRUE(chief.WaitForOutput("Epoch 1/200", 120));
    run.stranger_codes = StrangerCalls(stranger_channel(ports[0]), kWrongSecret);
  }
  run.chief = chief.Wait(180);
  run.worker = worker.Wait(60);
  run.model = ReadFileOrEmpty(tmp.path() + "/model.safetensors");
  return run;
}

void ExpectNoSecretIn(const std::string& output) {
  EXPECT_FALSE(Contains(output, kSecret)) << output;
  EXPECT_FALSE(Contains(output, kWrongSecret)) << output;
}

TEST(SecurityTest, StrangerWithAWrongSecretIsRefusedAndChangesNothing) {
  TwoWorkerRun quiet = RunTwoWorkers(/*stranger=*/false);
  ASSERT_EQ(quiet.chief.exit_code, 0) << quiet.chief.output;
  ASSERT_EQ(quiet.worker.exit_code, 0) << quiet.worker.output;
  ASSERT_FALSE(quiet.model.empty());

  TwoWorkerRun visited = RunTwoWorkers(/*stranger=*/true);
  ASSERT_EQ(visited.chief.exit_code, 0) << visited.chief.output;
  ASSERT_EQ(visited.worker.exit_code, 0) << visited.worker.output;
  ASSERT_EQ(visited.stranger_codes.size(), 9u);
  for (grpc::StatusCode c : visited.stranger_codes) EXPECT_EQ(c, grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(visited.model == quiet.model) << "the stranger's calls changed the trained model";

  // One line for the stranger's nine calls, naming its address and the reason.
  EXPECT_EQ(Count(visited.chief.output, "refused a coordination call"), 1u) << visited.chief.output;
  EXPECT_TRUE(Contains(visited.chief.output, "refused a coordination call from 127.0.0.1: wrong cluster secret"))
      << visited.chief.output;
  EXPECT_EQ(Count(quiet.chief.output, "refused"), 0u) << quiet.chief.output;
  // The fingerprint is logged (the same on both tasks); the secret never.
  auto fp = security::ClusterSecret::FromValue(kSecret)->Fingerprint();
  EXPECT_TRUE(Contains(visited.chief.output, "cluster secret: fingerprint " + fp)) << visited.chief.output;
  EXPECT_TRUE(Contains(visited.worker.output, "cluster secret: fingerprint " + fp)) << visited.worker.output;
  for (const auto* r : {&quiet.chief, &quiet.worker, &visited.chief, &visited.worker}) ExpectNoSecretIn(r->output);
}

// A /proc/<pid>/status field in KiB ("VmRSS", "VmHWM"); -1 if unreadable.
long StatusKb(int pid, const std::string& field) {
  for (const std::string& line : Lines(ReadFileOrEmpty("/proc/" + std::to_string(pid) + "/status"))) {
    if (line.rfind(field + ":", 0) == 0) return std::atol(line.c_str() + field.size() + 1);
  }
  return -1;
}

// Sends `body` as one request without any proof to the chief's Register (the method
// with the largest legal message), gzip-compressed (a gigabyte of one byte repeated is a
// few MB on the wire, and a receiver that reads it inflates it); returns the status.
grpc::Status SendUnauthenticated(int port, const grpc::Slice& body) {
  grpc::ChannelArguments args;
  args.SetMaxSendMessageSize(-1);
  grpc::GenericStub stub(grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port),
                                                   grpc::InsecureChannelCredentials(), args));
  grpc::ByteBuffer request(&body, 1), response;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  ctx.set_compression_algorithm(GRPC_COMPRESS_GZIP);
  std::promise<grpc::Status> done;
  stub.UnaryCall(&ctx, coordination::method::kRegister, grpc::StubOptions(), &request, &response,
                 [&](grpc::Status s) { done.set_value(std::move(s)); });
  return done.get_future().get();  // bounded by the context's deadline
}

// One unauthenticated 1 GB message, were its body read, would take the chief from
// 256 MB to 1,318 MB (and leave it at 611 MB). It is refused on its headers, before its
// body is read: the chief's peak memory does not move, and it goes on training. (The job
// is long and stopped by the test: gzip-compressing the gigabyte takes the client seconds.)
TEST(SecurityTest, AnUnauthenticatedGigabyteCostsTheChiefNothing) {
  // ASan's quarantine and shadow memory move the chief's RSS by more than the bound.
  if (kAddressSanitizer) GTEST_SKIP() << "the RSS bound is for the normal build";
  grpc::Slice gigabyte(size_t{1} << 30);  // filled in place: the test process holds one copy
  std::memset(const_cast<uint8_t*>(gigabyte.begin()), 'x', gigabyte.size());
  TempDir tmp;
  std::string job = WriteJob(tmp.path(), 100000);  // training all along; stopped below
  auto ports = FreePorts(2);
  Process chief(RingtrainBinary(), {"worker", "--job", job}, SecureEnv(ports, 0, kSecret));
  Process worker(RingtrainBinary(), {"worker", "--job", job}, SecureEnv(ports, 1, kSecret));
  ASSERT_TRUE(chief.WaitForOutput("Epoch 2/100000", 120));
  const long peak_before = StatusKb(chief.pid(), "VmHWM");
  ASSERT_GT(peak_before, 0);
  grpc::Status s = SendUnauthenticated(ports[0], gigabyte);
  const long peak_after = StatusKb(chief.pid(), "VmHWM");
  const long rss_after = StatusKb(chief.pid(), "VmRSS");
  std::cout << "chief's peak RSS " << peak_before << " KiB -> " << peak_after << " KiB, RSS after " << rss_after
            << " KiB\n";
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << s.error_message();
  ASSERT_GT(peak_after, 0) << "the chief is gone";
  // A refusal costs a few KB of headers; 16 MB leaves room for what training itself
  // allocates meanwhile, and is 1/64 of what the message would have cost.
  EXPECT_LT(peak_after - peak_before, 16 * 1024);
  // Refused and logged; the chief is still there (peak_after > 0) and still training.
  EXPECT_TRUE(chief.WaitForOutput("refused a coordination call from 127.0.0.1: missing cluster secret proof", 30));
  chief.Kill(SIGKILL);
  worker.Kill(SIGKILL);
  chief.Wait(30);
  worker.Wait(30);
}

TEST(SecurityTest, ABadSecretStopsTheWorkerAtStart) {
  TempDir tmp;
  std::string job = WriteJob(tmp.path(), 1);
  auto ports = FreePorts(2);
  const std::string too_short = "hunter2hunter2";  // 14 bytes
  Process p(RingtrainBinary(), {"worker", "--job", job}, SecureEnv(ports, 0, too_short));
  ProcessResult r = p.Wait(60);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(Contains(r.output, "RINGTRAIN_CLUSTER_SECRET")) << r.output;
  EXPECT_TRUE(Contains(r.output, "at least 16")) << r.output;
  EXPECT_FALSE(Contains(r.output, too_short)) << r.output;
  EXPECT_EQ(Count(r.output, "error:"), 1u) << r.output;

  auto env = SecureEnv(ports, 0, "");
  env["RINGTRAIN_CLUSTER_SECRET_FILE"] = tmp.path() + "/no-such-secret";
  Process missing(RingtrainBinary(), {"worker", "--job", job}, env);
  ProcessResult m = missing.Wait(60);
  EXPECT_EQ(m.exit_code, 2) << m.output;
  EXPECT_TRUE(Contains(m.output, "no-such-secret")) << m.output;
}

TEST(SecurityTest, AWorkerWithAnotherSecretCannotJoin) {
  TempDir tmp;
  std::string job = WriteJob(tmp.path(), 1);
  auto ports = FreePorts(2);
  auto chief_env = SecureEnv(ports, 0, kSecret);
  chief_env["RINGTRAIN_RENDEZVOUS_TIMEOUT_S"] = "20";
  Process chief(RingtrainBinary(), {"worker", "--job", job}, chief_env);
  Process worker(RingtrainBinary(), {"worker", "--job", job}, SecureEnv(ports, 1, kWrongSecret));
  ProcessResult w = worker.Wait(60);
  chief.Kill(SIGTERM);
  ProcessResult c = chief.Wait(30);
  EXPECT_EQ(w.exit_code, 2) << w.output;
  EXPECT_TRUE(Contains(w.output, "cluster secret")) << w.output;
  EXPECT_TRUE(Contains(w.output, "RINGTRAIN_CLUSTER_SECRET")) << w.output;
  EXPECT_EQ(Count(c.output, "refused a coordination call from 127.0.0.1: wrong cluster secret"), 1u) << c.output;
  ExpectNoSecretIn(w.output);
  ExpectNoSecretIn(c.output);
}

// A cluster beyond loopback (192.0.2.1 is TEST-NET-1: documentation only, never contacted
// here) needs a secret, or an explicit RINGTRAIN_ALLOW_INSECURE=1.
TEST(SecurityTest, LoopbackRule) {
  TempDir tmp;
  std::string job = WriteJob(tmp.path(), 1);
  auto ports = FreePorts(1);
  const std::string tf_config =
      R"({"cluster": {"worker": ["127.0.0.1:)" + std::to_string(ports[0]) +
      R"(", "192.0.2.1:2222"]}, "task": {"type": "worker", "index": 0}})";
  std::map<std::string, std::string> env = {{"TF_CONFIG", tf_config}, {"RINGTRAIN_RENDEZVOUS_TIMEOUT_S", "2"}};
  {
    Process p(RingtrainBinary(), {"worker", "--job", job}, env);
    ProcessResult r = p.Wait(60);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_TRUE(Contains(r.output, "192.0.2.1")) << r.output;
    EXPECT_TRUE(Contains(r.output, "RINGTRAIN_CLUSTER_SECRET")) << r.output;
    EXPECT_TRUE(Contains(r.output, "RINGTRAIN_ALLOW_INSECURE=1")) << r.output;
    EXPECT_EQ(Count(r.output, "error:"), 1u) << r.output;
  }
  {
    // Allowed explicitly: one warning, then the chief waits for worker:1 (which never
    // comes) until the rendezvous timeout: exit 4, not 2.
    auto insecure = env;
    insecure["RINGTRAIN_ALLOW_INSECURE"] = "1";
    Process p(RingtrainBinary(), {"worker", "--job", job}, insecure);
    ProcessResult r = p.Wait(60);
    EXPECT_EQ(r.exit_code, 4) << r.output;
    EXPECT_EQ(Count(r.output, "RINGTRAIN_ALLOW_INSECURE=1: no cluster secret"), 1u) << r.output;
  }
  {
    auto bad = env;
    bad["RINGTRAIN_ALLOW_INSECURE"] = "yes please";
    Process p(RingtrainBinary(), {"worker", "--job", job}, bad);
    ProcessResult r = p.Wait(60);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_TRUE(Contains(r.output, "RINGTRAIN_ALLOW_INSECURE")) << r.output;
  }
}

// ---- mutual TLS -------------------------------------------------------------------

// A CA and one certificate for 127.0.0.1 signed by it (EC P-256: quick to make).
bool MakeCertificates(const std::string& dir) {
  std::string ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
  std::string cmd = "cd '" + dir + "' && "
      "openssl req -x509 " + ec + " -keyout ca.key -out ca.pem -days 2 -subj /CN=ringtrain-test-ca && "
      "openssl req " + ec + " -keyout node.key -out node.csr -subj /CN=ringtrain-node && "
      "printf 'subjectAltName=IP:127.0.0.1\\n' > san.cnf && "
      "openssl x509 -req -in node.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out node.pem -days 2 "
      "-extfile san.cnf";
  return std::system(("(" + cmd + ") > '" + dir + "/openssl.log' 2>&1").c_str()) == 0;
}

TEST(SecurityTest, MutualTlsTrainsAndRefusesAClientWithoutACertificate) {
  if (std::system("openssl version > /dev/null 2>&1") != 0) GTEST_SKIP() << "the openssl CLI is not installed";
  TempDir certs;
  ASSERT_TRUE(MakeCertificates(certs.path())) << ReadFileOrEmpty(certs.path() + "/openssl.log");
  const std::string ca = certs.path() + "/ca.pem";
  std::vector<std::string> tls = {"--tls_cert", certs.path() + "/node.pem", "--tls_key", certs.path() + "/node.key",
                                  "--tls_ca", ca};
  // A client that trusts the CA but has no certificate of its own, and one with the
  // right secret but no TLS at all: both are refused before any handler runs.
  std::string ca_pem = ReadFileOrEmpty(ca);
  std::vector<grpc::StatusCode> no_cert, plain;
  TwoWorkerRun run = RunTwoWorkers(/*stranger=*/true, tls, [&](int port) {
    grpc::SslCredentialsOptions o;
    o.pem_root_certs = ca_pem;
    plain = StrangerCalls(PlainChannel(port), kSecret);
    return grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::SslCredentials(o));
  });
  no_cert = run.stranger_codes;
  ASSERT_EQ(run.chief.exit_code, 0) << run.chief.output;
  ASSERT_EQ(run.worker.exit_code, 0) << run.worker.output;
  EXPECT_FALSE(run.model.empty());
  EXPECT_TRUE(Contains(run.chief.output, "mutual TLS")) << run.chief.output;
  ASSERT_FALSE(no_cert.empty());
  for (grpc::StatusCode c : no_cert) EXPECT_EQ(c, grpc::StatusCode::UNAVAILABLE);
  ASSERT_FALSE(plain.empty());
  for (grpc::StatusCode c : plain) EXPECT_EQ(c, grpc::StatusCode::UNAVAILABLE);
  // Refused by the TLS handshake: no handler ran, so nothing was logged as refused.
  EXPECT_EQ(Count(run.chief.output, "refused a coordination call"), 0u) << run.chief.output;
  ExpectNoSecretIn(run.chief.output);
}

TEST(SecurityTest, IncompleteOrMissingTlsFilesStopTheWorker) {
  TempDir tmp;
  std::string job = WriteJob(tmp.path(), 1);
  auto ports = FreePorts(2);
  {
    Process p(RingtrainBinary(), {"worker", "--job", job, "--tls_cert", tmp.path() + "/a.pem"}, SecureEnv(ports, 0, ""));
    ProcessResult r = p.Wait(60);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_TRUE(Contains(r.output, "missing --tls_key, --tls_ca")) << r.output;
  }
  {
    Process p(RingtrainBinary(),
              {"worker", "--job", job, "--tls_cert", tmp.path() + "/a.pem", "--tls_key", tmp.path() + "/a.key",
               "--tls_ca", tmp.path() + "/ca.pem"},
              SecureEnv(ports, 0, ""));
    ProcessResult r = p.Wait(60);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_TRUE(Contains(r.output, "a.pem")) << r.output;
  }
}

}  // namespace
}  // namespace ringtrain::testing
