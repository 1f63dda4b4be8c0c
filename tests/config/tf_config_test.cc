#include "config/tf_config.h"

#include <gtest/gtest.h>

namespace ringtrain::config {
namespace {

void ExpectBadTfConfig(const std::string& json, const std::string& fragment) {
  auto spec = ParseTfConfig(json);
  ASSERT_FALSE(spec.ok()) << "accepted: " << json;
  EXPECT_EQ(spec.status().code(), Code::kInvalidArgument);
  EXPECT_NE(spec.status().message().find(fragment), std::string::npos)
      << "message '" << spec.status().message() << "' lacks '" << fragment << "'";
  EXPECT_EQ(spec.status().message().find('\n'), std::string::npos) << "one line";
}

TEST(TfConfigTest, TutorialTwoWorkers) {
  auto spec = ParseTfConfig(
      R"({"cluster": {"worker": ["localhost:12345", "localhost:23456"]}, "task": {"type": "worker", "index": 1}})");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->num_workers(), 2);
  EXPECT_EQ(spec->chief().ToString(), "worker:0");
  EXPECT_EQ(spec->task().ToString(), "worker:1");
  EXPECT_FALSE(spec->is_chief());
  EXPECT_EQ(spec->rank(), 1);
  EXPECT_EQ(spec->address(spec->chief()).port, 12345);
}

TEST(TfConfigTest, ChiefIsRankZeroAndEvaluatorIsNotTraining) {
  auto spec = ParseTfConfig(R"({"cluster": {"chief": ["c:1"], "worker": ["w0:2", "w1:3"], "evaluator": ["e:4"]},
                                "task": {"type": "chief", "index": 0}})");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->num_workers(), 3);
  EXPECT_TRUE(spec->is_chief());
  EXPECT_EQ(spec->rank(), 0);
  EXPECT_EQ(spec->training_tasks()[1].ToString(), "worker:0");
  EXPECT_EQ(spec->training_tasks()[2].ToString(), "worker:1");
}

TEST(TfConfigTest, KubeflowForm) {
  auto spec = ParseTfConfig(
      R"({"cluster": {"worker": ["job-worker-0.ns.svc:2222", "job-worker-1.ns.svc:2222"]},
          "task": {"type": "worker", "index": 1}, "environment": "cloud", "rpc_layer": "grpc"})");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->environment(), "cloud");
  EXPECT_EQ(spec->address(spec->task()).host, "job-worker-1.ns.svc");
}

TEST(TfConfigTest, Ipv6) {
  auto spec = ParseTfConfig(R"({"cluster": {"worker": ["[::1]:5000"]}, "task": {"type": "worker", "index": 0}})");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->address(spec->task()).host, "::1");
  EXPECT_EQ(spec->address(spec->task()).ToString(), "[::1]:5000");
}

TEST(TfConfigTest, BadConfigurations) {
  ExpectBadTfConfig("{not json", "not valid JSON");
  ExpectBadTfConfig(R"({"task": {"type": "worker", "index": 0}})", "missing \"cluster\"");
  ExpectBadTfConfig(R"({"cluster": {"worker": ["a:1"]}})", "missing \"task\"");
  ExpectBadTfConfig(R"({"cluster": {"trainer": ["a:1"]}, "task": {"type": "trainer", "index": 0}})", "unknown job name \"trainer\"");
  ExpectBadTfConfig(R"({"cluster": {"chief": ["a:1", "b:2"], "worker": ["c:3"]}, "task": {"type": "worker", "index": 0}})",
            "only one chief");
  ExpectBadTfConfig(R"({"cluster": {"worker": ["a:1", "b:2"]}, "task": {"type": "worker", "index": 2}})", "out of range");
  ExpectBadTfConfig(R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": -1}})", "out of range");
  ExpectBadTfConfig(R"({"cluster": {"worker": ["a"]}, "task": {"type": "worker", "index": 0}})", "port is missing");
  ExpectBadTfConfig(R"({"cluster": {"worker": ["a:99999"]}, "task": {"type": "worker", "index": 0}})", "outside 1..65535");
  ExpectBadTfConfig(R"({"cluster": {"worker": ["a:x1"]}, "task": {"type": "worker", "index": 0}})", "invalid port");
  ExpectBadTfConfig(R"({"cluster": {"worker": [":80"]}, "task": {"type": "worker", "index": 0}})", "empty host");
  ExpectBadTfConfig(R"({"cluster": {"worker": ["a:1", "a:1"]}, "task": {"type": "worker", "index": 0}})",
            "used by both worker:0 and worker:1");
  ExpectBadTfConfig(R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "chief", "index": 0}})", "not in the cluster");
  ExpectBadTfConfig(R"({"cluster": {"worker": ["a:1"], "ps": ["p:2"]}, "task": {"type": "worker", "index": 0}})",
            "parameter-server training is not what this strategy does");
  ExpectBadTfConfig(R"({"cluster": {"evaluator": ["e:1"]}, "task": {"type": "evaluator", "index": 0}})", "no \"worker\"");
  ExpectBadTfConfig(R"([1, 2])", "JSON object");
  ExpectBadTfConfig(R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": "0"}})", "integer");
}

TEST(HostPortTest, Parses) {
  auto hp = ParseHostPort("127.0.0.1:8080");
  ASSERT_TRUE(hp.ok());
  EXPECT_EQ(hp->host, "127.0.0.1");
  EXPECT_EQ(hp->port, 8080);
  EXPECT_FALSE(ParseHostPort("::1:80").ok());
  EXPECT_FALSE(ParseHostPort("[::1]80").ok());
  EXPECT_FALSE(ParseHostPort("a b:80").ok());
}

}  // namespace
}  // namespace ringtrain::config
