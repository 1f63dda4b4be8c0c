#include "config/slurm_resolver.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace ringtrain::config {
namespace {

using Names = std::vector<std::string>;

Names Hosts(const std::string& text) {
  auto hosts = ExpandSlurmHostlist(text, "SLURM_STEP_NODELIST");
  EXPECT_TRUE(hosts.ok()) << hosts.status().ToString();
  return hosts.ok() ? *hosts : Names{};
}

std::vector<int> Counts(const std::string& text) {
  auto counts = ExpandSlurmTasksPerNode(text, "SLURM_STEP_TASKS_PER_NODE");
  EXPECT_TRUE(counts.ok()) << counts.status().ToString();
  return counts.ok() ? *counts : std::vector<int>{};
}

void ExpectBadStatus(const Status& s, const std::vector<std::string>& fragments) {
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  for (const auto& f : fragments) {
    EXPECT_NE(s.message().find(f), std::string::npos) << "message '" << s.message() << "' lacks '" << f << "'";
  }
  EXPECT_EQ(s.message().find('\n'), std::string::npos) << "one line";
}

void ExpectBadHostlist(const std::string& text, const std::string& fragment) {
  auto hosts = ExpandSlurmHostlist(text, "SLURM_STEP_NODELIST");
  ASSERT_FALSE(hosts.ok()) << "accepted: " << text;
  ExpectBadStatus(hosts.status(), {"SLURM_STEP_NODELIST", "'" + text + "'", fragment});
}

void ExpectBadCounts(const std::string& text, const std::string& fragment) {
  auto counts = ExpandSlurmTasksPerNode(text, "SLURM_TASKS_PER_NODE");
  ASSERT_FALSE(counts.ok()) << "accepted: " << text;
  ExpectBadStatus(counts.status(), {"SLURM_TASKS_PER_NODE", "'" + text + "'", fragment});
}

SlurmEnvironment StepEnv(const std::string& procid, const std::string& ntasks, const std::string& nodelist,
                         const std::string& per_node) {
  return {{"SLURM_PROCID", procid},
          {"SLURM_STEP_NUM_TASKS", ntasks},
          {"SLURM_STEP_NODELIST", nodelist},
          {"SLURM_STEP_TASKS_PER_NODE", per_node}};
}

Names Addresses(const SlurmCluster& c) {
  Names out;
  for (const auto& w : c.workers) out.push_back(w.ToString());
  return out;
}

TEST(SlurmHostlistTest, PlainNamesAndRanges) {
  EXPECT_EQ(Hosts("n1"), (Names{"n1"}));
  EXPECT_EQ(Hosts("n[1-3],m5"), (Names{"n1", "n2", "n3", "m5"}));
  EXPECT_EQ(Hosts("a,b.example.com,c-d_e"), (Names{"a", "b.example.com", "c-d_e"}));
  EXPECT_EQ(Hosts("n[7]"), (Names{"n7"}));
}

TEST(SlurmHostlistTest, ZeroPaddingFollowsTheLowerBound) {
  EXPECT_EQ(Hosts("node[01-03]"), (Names{"node01", "node02", "node03"}));
  EXPECT_EQ(Hosts("node[098-101]"), (Names{"node098", "node099", "node100", "node101"}));
  EXPECT_EQ(Hosts("n[9-11]"), (Names{"n9", "n10", "n11"}));
  EXPECT_EQ(Hosts("n[0-1]"), (Names{"n0", "n1"}));
}

TEST(SlurmHostlistTest, ListsInsideBracketsWithSuffix) {
  EXPECT_EQ(Hosts("a[1,3-4]b"), (Names{"a1b", "a3b", "a4b"}));
  EXPECT_EQ(Hosts("gpu[1,3-4].cluster,login"), (Names{"gpu1.cluster", "gpu3.cluster", "gpu4.cluster", "login"}));
  EXPECT_EQ(Hosts("x[2,02]"), (Names{"x2", "x02"}));
}

TEST(SlurmHostlistTest, SeveralBracketGroupsMultiply) {
  EXPECT_EQ(Hosts("r[1-2]n[1-2]"), (Names{"r1n1", "r1n2", "r2n1", "r2n2"}));
  EXPECT_EQ(Hosts("r[1-2]n[01,03]x,y[5-6]"), (Names{"r1n01x", "r1n03x", "r2n01x", "r2n03x", "y5", "y6"}));
}

TEST(SlurmHostlistTest, MalformedIsRejectedNamingTheVariableAndText) {
  ExpectBadHostlist("", "empty");
  ExpectBadHostlist("n[1-3", "without a matching ']'");
  ExpectBadHostlist("n1-3]", "without a matching '['");
  ExpectBadHostlist("n[1-[2]]", "inside brackets");
  ExpectBadHostlist("n[3-1]", "reversed range '3-1'");
  ExpectBadHostlist("n[]", "empty item");
  ExpectBadHostlist("n[1,,2]", "empty item");
  ExpectBadHostlist("n[1-]", "'1-'");
  ExpectBadHostlist("n[a-b]", "'a-b'");
  ExpectBadHostlist("n[1-2-3]", "'1-2-3'");
  ExpectBadHostlist("n1,,n2", "empty host name");
  ExpectBadHostlist("n1,", "empty host name");
  ExpectBadHostlist("n1 n2", "character ' '");
  ExpectBadHostlist("n[1-99999999999]", "more than");
}

TEST(SlurmTasksPerNodeTest, Forms) {
  EXPECT_EQ(Counts("4"), (std::vector<int>{4}));
  EXPECT_EQ(Counts("2,2"), (std::vector<int>{2, 2}));
  EXPECT_EQ(Counts("3(x2),2"), (std::vector<int>{3, 3, 2}));
  EXPECT_EQ(Counts("1,2(x3),1(x1)"), (std::vector<int>{1, 2, 2, 2, 1}));
}

TEST(SlurmTasksPerNodeTest, MalformedIsRejected) {
  ExpectBadCounts("", "empty");
  ExpectBadCounts("3(x2", "N(xM)");
  ExpectBadCounts("3(2)", "N(xM)");
  ExpectBadCounts("3(x)", "N(xM)");
  ExpectBadCounts("(x2)", "N(xM)");
  ExpectBadCounts("0", "at least 1");
  ExpectBadCounts("2(x0)", "at least 1");
  ExpectBadCounts("2,,2", "'2,,2'");
  ExpectBadCounts("-1", "at least 1");
  ExpectBadCounts("two", "at least 1");
}

TEST(SlurmResolverTest, BlockLayoutAndPorts) {
  auto cluster = ResolveSlurmCluster(StepEnv("4", "9", "n[1-3],m5", "3(x2),2,1"), 8888);
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  EXPECT_EQ(Addresses(*cluster), (Names{"n1:8888", "n1:8889", "n1:8890", "n2:8888", "n2:8889", "n2:8890",
                                        "n3:8888", "n3:8889", "m5:8888"}));
  EXPECT_EQ(cluster->task_index, 4);
  EXPECT_EQ(cluster->num_nodes, 4);
}

TEST(SlurmResolverTest, TfConfigTextParsesAsThisTask) {
  auto text = SlurmTfConfigText(StepEnv("4", "9", "n[1-3],m5", "3(x2),2,1"), 20000);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  auto j = nlohmann::json::parse(*text);
  EXPECT_EQ(j["task"]["type"], "worker");
  EXPECT_EQ(j["task"]["index"], 4);
  EXPECT_EQ(j["cluster"]["worker"].size(), 9u);
  EXPECT_EQ(j["cluster"]["worker"][0], "n1:20000");
  EXPECT_EQ(j.size(), 2u) << "only cluster and task";

  auto spec = ParseTfConfig(*text);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->num_workers(), 9);
  EXPECT_EQ(spec->rank(), 4);
  EXPECT_EQ(spec->chief().ToString(), "worker:0");
  EXPECT_FALSE(spec->is_chief());
  EXPECT_EQ(spec->address(spec->task()).ToString(), "n2:20001");
  EXPECT_EQ(spec->address(spec->chief()).ToString(), "n1:20000");
}

TEST(SlurmResolverTest, RankZeroIsTheChief) {
  auto text = SlurmTfConfigText(StepEnv("0", "4", "node[01-02]", "2(x2)"), 8888);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  auto spec = ParseTfConfig(*text);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_TRUE(spec->is_chief());
  EXPECT_EQ(spec->address(spec->training_tasks()[3]).ToString(), "node02:8889");
}

TEST(SlurmResolverTest, FallsBackToJobLevelVariables) {
  SlurmEnvironment env = {{"SLURM_PROCID", "1"},
                          {"SLURM_NTASKS", "2"},
                          {"SLURM_JOB_NODELIST", "a[1-2]"},
                          {"SLURM_TASKS_PER_NODE", "1(x2)"}};
  auto cluster = ResolveSlurmCluster(env, 8888);
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  EXPECT_EQ(Addresses(*cluster), (Names{"a1:8888", "a2:8888"}));

  // The step's own values win over the job's when both are set.
  env["SLURM_STEP_NUM_TASKS"] = "1";
  env["SLURM_STEP_NODELIST"] = "b7";
  env["SLURM_STEP_TASKS_PER_NODE"] = "1";
  env["SLURM_PROCID"] = "0";
  cluster = ResolveSlurmCluster(env, 8888);
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  EXPECT_EQ(Addresses(*cluster), (Names{"b7:8888"}));
}

TEST(SlurmResolverTest, MissingVariablesNameThemAndSayWhatToDo) {
  SlurmEnvironment full = StepEnv("0", "2", "n[1-2]", "1(x2)");
  struct Case {
    std::string remove;
    std::string fragment;
  };
  for (const Case& c : std::vector<Case>{{"SLURM_PROCID", "SLURM_PROCID is not set"},
                                         {"SLURM_STEP_NUM_TASKS", "neither SLURM_STEP_NUM_TASKS nor SLURM_NTASKS"},
                                         {"SLURM_STEP_NODELIST", "neither SLURM_STEP_NODELIST nor SLURM_JOB_NODELIST"},
                                         {"SLURM_STEP_TASKS_PER_NODE",
                                          "neither SLURM_STEP_TASKS_PER_NODE nor SLURM_TASKS_PER_NODE"}}) {
    SlurmEnvironment env = full;
    env.erase(c.remove);
    auto cluster = ResolveSlurmCluster(env, 8888);
    ASSERT_FALSE(cluster.ok()) << "accepted without " << c.remove;
    ExpectBadStatus(cluster.status(), {c.fragment, "srun", "TF_CONFIG"});
  }
  auto none = ResolveSlurmCluster({}, 8888);
  ASSERT_FALSE(none.ok());
  ExpectBadStatus(none.status(), {"SLURM_PROCID", "srun"});
}

TEST(SlurmResolverTest, InconsistentVariablesAreRejected) {
  // 4 nodes but 3 counts.
  auto r = ResolveSlurmCluster(StepEnv("0", "8", "n[1-3],m5", "3(x2),2"), 8888);
  ASSERT_FALSE(r.ok());
  ExpectBadStatus(r.status(), {"SLURM_STEP_NODELIST='n[1-3],m5'", "SLURM_STEP_TASKS_PER_NODE='3(x2),2'", "4 nodes",
                               "3 per-node"});
  // Counts sum to 9, not 8.
  r = ResolveSlurmCluster(StepEnv("0", "8", "n[1-3],m5", "3(x2),2,1"), 8888);
  ASSERT_FALSE(r.ok());
  ExpectBadStatus(r.status(), {"SLURM_STEP_NODELIST", "SLURM_STEP_TASKS_PER_NODE", "9 tasks",
                               "SLURM_STEP_NUM_TASKS=8"});
  // Rank out of range, bad numbers.
  r = ResolveSlurmCluster(StepEnv("2", "2", "n[1-2]", "1(x2)"), 8888);
  ExpectBadStatus(r.status(), {"SLURM_PROCID='2'", "0..1"});
  r = ResolveSlurmCluster(StepEnv("x", "2", "n[1-2]", "1(x2)"), 8888);
  ExpectBadStatus(r.status(), {"SLURM_PROCID='x'"});
  r = ResolveSlurmCluster(StepEnv("0", "0", "n[1-2]", "1(x2)"), 8888);
  ExpectBadStatus(r.status(), {"SLURM_STEP_NUM_TASKS='0'"});
  r = ResolveSlurmCluster(StepEnv("0", "-2", "n[1-2]", "1(x2)"), 8888);
  ExpectBadStatus(r.status(), {"SLURM_STEP_NUM_TASKS='-2'"});
  // The same node twice would give two tasks one address.
  r = ResolveSlurmCluster(StepEnv("0", "2", "n1,n[1]", "1(x2)"), 8888);
  ExpectBadStatus(r.status(), {"SLURM_STEP_NODELIST", "'n1' twice"});
  // A malformed hostlist names the variable it came from, also on fallback.
  SlurmEnvironment env = {{"SLURM_PROCID", "0"},
                          {"SLURM_NTASKS", "2"},
                          {"SLURM_JOB_NODELIST", "a[2-1]"},
                          {"SLURM_TASKS_PER_NODE", "1(x2)"}};
  r = ResolveSlurmCluster(env, 8888);
  ExpectBadStatus(r.status(), {"SLURM_JOB_NODELIST='a[2-1]'", "reversed"});
}

TEST(SlurmResolverTest, WhereSrunPutTheTaskMustMatchTheBlockLayout) {
  // Block layout: rank 4 of n[1-3],m5 with 3(x2),2,1 is n2's task 1.
  SlurmEnvironment env = StepEnv("4", "9", "n[1-3],m5", "3(x2),2,1");
  env["SLURMD_NODENAME"] = "n2";
  env["SLURM_LOCALID"] = "1";
  auto ok = ResolveSlurmCluster(env, 8888);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->workers[4].ToString(), "n2:8889");

  // Under --distribution=cyclic rank 4 would run on n2 as its task 0, or on another node.
  env["SLURM_LOCALID"] = "0";
  auto r = ResolveSlurmCluster(env, 8888);
  ExpectBadStatus(r.status(), {"SLURM_LOCALID='0'", "SLURM_PROCID=4", "'n2'", "task 1", "--distribution=cyclic"});
  env["SLURM_LOCALID"] = "1";
  env["SLURMD_NODENAME"] = "n1";
  r = ResolveSlurmCluster(env, 8888);
  ExpectBadStatus(r.status(), {"SLURMD_NODENAME='n1'", "'n2'", "block distribution"});
}

TEST(SlurmResolverTest, PortsMustStayInRange) {
  // Three tasks on a node from 65533 use 65533..65535: fine.
  auto ok = ResolveSlurmCluster(StepEnv("0", "3", "n1", "3"), 65533);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->workers.back().port, 65535);
  // Four would need 65536.
  auto r = ResolveSlurmCluster(StepEnv("0", "4", "n1", "4"), 65533);
  ExpectBadStatus(r.status(), {"above 65535", "--base_port", "SLURM_STEP_TASKS_PER_NODE='4'"});
  r = ResolveSlurmCluster(StepEnv("0", "1", "n1", "1"), 0);
  ExpectBadStatus(r.status(), {"base port 0"});
  r = ResolveSlurmCluster(StepEnv("0", "1", "n1", "1"), 70000);
  ExpectBadStatus(r.status(), {"base port 70000"});
}

// Kubeflow's training operator (TFJob) sets TF_CONFIG itself, in exactly this form.
TEST(KubeflowTfConfigTest, TfJobFormParses) {
  auto spec = ParseTfConfig(
      R"({"cluster": {"worker": ["mnist-worker-0.default.svc:2222", "mnist-worker-1.default.svc:2222", "mnist-worker-2.default.svc:2222"]}, "task": {"type": "worker", "index": 1}, "environment": "cloud"})");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->rank(), 1);
  EXPECT_EQ(spec->num_workers(), 3);
  EXPECT_EQ(spec->chief().ToString(), "worker:0");
  EXPECT_FALSE(spec->is_chief());
  EXPECT_EQ(spec->environment(), "cloud");
  EXPECT_EQ(spec->address(spec->task()).ToString(), "mnist-worker-1.default.svc:2222");
}

}  // namespace
}  // namespace ringtrain::config
