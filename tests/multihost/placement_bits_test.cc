// The same bits whatever the placement: one job on 3 (and 4) workers placed on the
// "machines" of net_hosts.h in several ways -- all on one host (shared memory), two on
// one host and one on another, alternating, one per host (TCP, which a cluster spanning
// hosts uses between every pair of ranks) -- saves the same model, byte for byte. The
// job's gradients take the all-reduce's large path (src/collective/sum_order.h).
//
// Needs root; skipped with the reason where the machine does not allow namespaces.
// Namespace names carry the pid (net_hosts.h), but it is best run alone with the other
// multi-host tests.
#include <gtest/gtest.h>

#include <unistd.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "integration/process.h"
#include "integration/test_jobs.h"
#include "multihost/net_hosts.h"

namespace ringtrain::testing {
namespace {

constexpr int kHosts = 3;
constexpr int kBasePort = 2222;  // each namespace has its own ports; workers on one host take the next ones
constexpr double kRunTimeoutS = 180;


// A placement: placement[i] is the host of worker i.
using Placement = std::vector<int>;

std::string Describe(const Placement& p) {
  std::string s = "workers on hosts {";
  for (size_t i = 0; i < p.size(); ++i) {
    if (i > 0) s += ",";
    s += std::to_string(p[i]);
  }
  return s + "}";
}

struct Trained {
  std::string model;
  std::string output;  // every worker's, for messages
  bool ok = false;
};

class MultiHostPlacementTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto hosts = NetHosts::Create(kHosts);
    if (!hosts.ok() && hosts.status().code() == Code::kFailedPrecondition) {
      GTEST_SKIP() << "multi-host test skipped: " << hosts.status().message();
    }
    ASSERT_TRUE(hosts.ok()) << "setting up the network namespaces: " << hosts.status().ToString();
    hosts_ = std::move(*hosts);
    for (int from = 0; from < kHosts; ++from) {
      for (int to = 0; to < kHosts; ++to) {
        if (from == to) continue;
        Status st = hosts_->CheckTcp(from, to, 10);
        ASSERT_TRUE(st.ok()) << st.ToString();
      }
    }
  }

  // Runs the job with worker i on host placement[i], each bound to its TF_CONFIG address.
  Trained Train(const Placement& placement) {
    TempDir tmp;
    WriteFile(tmp.path() + "/job.json", ShortBitsJob(tmp.path()).dump());
    nlohmann::json cluster = {{"worker", nlohmann::json::array()}};
    std::map<int, int> next_port;
    std::string hosts_list;
    for (int h : placement) {
      if (next_port.count(h) == 0) next_port[h] = kBasePort;
      cluster["worker"].push_back(hosts_->address(h) + ":" + std::to_string(next_port[h]++));
    }
    for (int h = 0; h < kHosts; ++h) {
      if (h > 0) hosts_list += ",";
      hosts_list += hosts_->address(h);
    }
    std::vector<std::unique_ptr<Process>> procs;
    for (size_t i = 0; i < placement.size(); ++i) {
      std::vector<std::string> argv = hosts_->ExecPrefix(placement[i]);
      const std::string ip = argv.front();
      argv.erase(argv.begin());
      for (const std::string& a : {RingtrainBinary(), std::string("worker"), std::string("--job"),
                                   tmp.path() + "/job.json"}) {
        argv.push_back(a);
      }
      std::map<std::string, std::string> env = {
          {"TF_CONFIG",
           nlohmann::json{{"cluster", cluster}, {"task", {{"type", "worker"}, {"index", static_cast<int>(i)}}}}
               .dump()},
          {"RINGTRAIN_CLUSTER_SECRET", "placement-test-secret-" + std::to_string(::getpid())},
          {"RINGTRAIN_RENDEZVOUS_TIMEOUT_S", "60"},
          {"RINGTRAIN_COLLECTIVE_TIMEOUT_S", "60"},
          {"RINGTRAIN_NUM_THREADS", "1"},
          {"no_grpc_proxy", hosts_list}};
      procs.push_back(std::make_unique<Process>(ip, argv, env));
    }
    Trained t;
    t.ok = true;
    for (size_t i = 0; i < procs.size(); ++i) {
      ProcessResult r = procs[i]->Wait(kRunTimeoutS);
      t.output += "\n--- worker " + std::to_string(i) + " (exit " + std::to_string(r.exit_code) +
                  (r.timed_out ? ", timed out" : "") + ")\n" + r.output;
      t.ok = t.ok && !r.timed_out && r.exit_code == 0;
    }
    t.model = ReadFileOrEmpty(tmp.path() + "/model.safetensors");
    return t;
  }

  // Trains each placement and expects one model for all; the first is on one host.
  void ExpectOneModel(const std::vector<Placement>& placements) {
    std::string reference;
    for (const Placement& p : placements) {
      Trained t = Train(p);
      ASSERT_TRUE(t.ok) << Describe(p) << t.output;
      ASSERT_FALSE(t.model.empty()) << Describe(p) << ": no saved model" << t.output;
      bool one_host = true;
      for (int h : p) one_host = one_host && h == p[0];
      const std::string transport = one_host ? "RING over shared memory" : "RING over TCP";
      EXPECT_EQ(Count(t.output, transport), p.size()) << Describe(p) << ": expected " << transport << t.output;
      if (reference.empty()) {
        reference = t.model;
        continue;
      }
      EXPECT_TRUE(t.model == reference) << Describe(p) << " saved another model than " << Describe(placements[0]);
    }
  }

  std::unique_ptr<NetHosts> hosts_;
};

TEST_F(MultiHostPlacementTest, ThreeWorkersOnOneTwoOrThreeHostsSaveOneModel) {
  ExpectOneModel({{0, 0, 0}, {0, 0, 1}, {0, 1, 0}, {1, 0, 0}, {0, 1, 2}});
}

TEST_F(MultiHostPlacementTest, FourWorkersOnOneOrTwoHostsSaveOneModel) {
  ExpectOneModel({{0, 0, 0, 0}, {0, 0, 1, 1}, {0, 1, 0, 1}, {0, 1, 2, 2}});
}

}  // namespace
}  // namespace ringtrain::testing
