// The deployment assets in deploy/, checked with the tools this machine has. PyYAML
// (check_assets.py) parses every manifest and checks that what must agree does, and runs
// the Kubernetes Jobs' TF_CONFIG snippet with sh; every TF_CONFIG an asset produces and
// every job file it names is then parsed here by ringtrain's own parsers. bash -n,
// shellcheck and systemd-analyze check the scripts and the unit; docker compose and kubectl
// run only where they can (a compose plugin, an API server), else the test says why not.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "config/job_config.h"
#include "config/tf_config.h"
#include "integration/process.h"
#include "testing/temp_dir.h"

namespace ringtrain {
namespace {

namespace fs = std::filesystem;
using testing::Process;
using testing::ProcessResult;
using testing::SourceDir;
using testing::TempDir;

constexpr const char* kPython = "/usr/bin/python3";  // the one with PyYAML (Debian's python3-yaml)
constexpr int kSkipCode = 77;                         // check_assets.py: PyYAML missing

bool Executable(const std::string& path) { return ::access(path.c_str(), X_OK) == 0; }

ProcessResult RunTool(const std::string& binary, const std::vector<std::string>& args, double timeout_s = 60) {
  Process p(binary, args);
  return p.Wait(timeout_s);
}

// Runs check_assets.py on the repository at `root`; the parsed report, or a skip reason.
struct Report {
  nlohmann::json json;
  std::string skip;  // non-empty: the checker cannot run here, and why
};

Report CheckAssets(const std::string& root, const std::string& out_dir) {
  Report report;
  if (!Executable(kPython)) {
    report.skip = std::string(kPython) + " is missing: the YAML assets cannot be parsed here";
    return report;
  }
  const std::string out = out_dir + "/report.json";
  ProcessResult r = RunTool(kPython, {SourceDir() + "/tests/deploy/check_assets.py", root, out});
  if (r.exit_code == kSkipCode) {
    report.skip = r.output;
    return report;
  }
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(out);
  report.json = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  EXPECT_TRUE(report.json.is_object()) << "no report from check_assets.py: " << r.output;
  return report;
}

class DeployAssets : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    report_ = new Report(CheckAssets(SourceDir(), dir_->path()));
  }
  static void TearDownTestSuite() {
    delete report_;
    delete dir_;
  }
  void SetUp() override {
    if (!report_->skip.empty()) GTEST_SKIP() << report_->skip;
    ASSERT_TRUE(report_->json.is_object());
  }
  static TempDir* dir_;
  static Report* report_;
};
TempDir* DeployAssets::dir_ = nullptr;
Report* DeployAssets::report_ = nullptr;

TEST_F(DeployAssets, ManifestsParseAndAgree) {
  const auto& errors = report_->json["errors"];
  for (const auto& e : errors) ADD_FAILURE() << e.get<std::string>();
  EXPECT_TRUE(errors.empty());
}

TEST_F(DeployAssets, EveryTfConfigParsesWithTheWorkersParser) {
  const auto& configs = report_->json["tf_configs"];
  // compose (2), the two Indexed Jobs (2 indexes each), the TFJob (2), the daemons'
  // StatefulSet (2 ordinals), the systemd example (1).
  ASSERT_EQ(configs.size(), 11u) << configs.dump(1);
  for (const auto& c : configs) {
    const std::string source = c["source"].get<std::string>();
    auto spec = config::ParseTfConfig(c["text"].get<std::string>());
    ASSERT_TRUE(spec.ok()) << source << ": " << spec.status().ToString();
    EXPECT_EQ(spec->task().type, "worker") << source;
    EXPECT_EQ(spec->task().index, c["index"].get<int>()) << source;
    EXPECT_EQ(spec->rank(), c["index"].get<int>()) << source;
    EXPECT_EQ(spec->chief().ToString(), "worker:0") << source;
    EXPECT_EQ(spec->environment(), c["environment"].get<std::string>()) << source;
    std::vector<std::string> workers;
    for (const auto& t : spec->training_tasks()) workers.push_back(spec->address(t).ToString());
    EXPECT_EQ(workers, c["workers"].get<std::vector<std::string>>()) << source;
  }
}

TEST_F(DeployAssets, EveryJobFileLoadsWithBackupsAndItsRecoveryMode) {
  const auto& jobs = report_->json["job_files"];
  ASSERT_GE(jobs.size(), 6u) << jobs.dump(1);
  for (const auto& j : jobs) {
    const std::string where = j["source"].get<std::string>() + " -> " + j["path"].get<std::string>();
    auto job = config::LoadJobConfig(SourceDir() + "/" + j["path"].get<std::string>());
    ASSERT_TRUE(job.ok()) << where << ": " << job.status().ToString();
    EXPECT_TRUE(job->backup.enabled()) << where;
    const auto want = j["recovery"] == "restart" ? config::RecoveryMode::kRestart : config::RecoveryMode::kInPlace;
    EXPECT_EQ(job->recovery, want) << where;
  }
}

// The checker is not a test that cannot fail: a copy of deploy/ with the Indexed Job asking
// for three workers but the snippet building two, the Dockerfile missing a package, a
// systemd stop timeout shorter than the preemption grace, a unit that does not restart exit 7,
// and the daemons' StatefulSet asking for three replicas but the snippet building two.
TEST(DeployAssetsChecker, FindsBrokenAssets) {
  TempDir dir;
  fs::copy(SourceDir() + "/deploy", dir.path() + "/deploy", fs::copy_options::recursive);
  auto edit = [&](const std::string& rel, const std::string& from, const std::string& to) {
    const std::string path = dir.path() + "/" + rel;
    std::string text = testing::ReadFileOrEmpty(path);
    ASSERT_NE(text.find(from), std::string::npos) << rel << " has no '" << from << "'";
    testing::WriteFile(path, std::regex_replace(text, std::regex(from), to));
  };
  edit("deploy/k8s/job-in-place.yaml", "parallelism: 2", "parallelism: 3");
  edit("deploy/docker/Dockerfile", " zlib1g-dev", "");
  // SIGKILL before the workers' own preemption grace (25 s) could end.
  edit("deploy/systemd/ringtrain-worker@.service", "TimeoutStopSec=40s", "TimeoutStopSec=20s");
  edit("deploy/systemd/ringtrain-worker@.service", "RestartForceExitStatus=7", "RestartForceExitStatus=5");
  edit("deploy/k8s/serve-statefulset.yaml", "replicas: 2 ", "replicas: 3 ");
  Report report = CheckAssets(dir.path(), dir.path());
  if (!report.skip.empty()) GTEST_SKIP() << report.skip;
  const std::string errors = report.json["errors"].dump(1);
  EXPECT_NE(errors.find("job-in-place.yaml: completions 2, parallelism 3"), std::string::npos) << errors;
  EXPECT_NE(errors.find("Dockerfile: the build stage's packages"), std::string::npos) << errors;
  EXPECT_NE(errors.find("ringtrain-worker@.service: the SIGKILL grace 20 s"), std::string::npos) << errors;
  EXPECT_NE(errors.find("RestartForceExitStatus does not list 7"), std::string::npos) << errors;
  EXPECT_NE(errors.find("serve-statefulset.yaml: replicas 3 and DAEMONS 2 differ"), std::string::npos) << errors;
}

TEST(DeploySlurm, SbatchScriptIsValidBash) {
  ProcessResult r = RunTool("/bin/bash", {"-n", SourceDir() + "/deploy/slurm/train.sbatch"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "");
}

TEST(DeploySlurm, ShellcheckFindsNothing) {
  if (!Executable("/usr/bin/shellcheck")) GTEST_SKIP() << "/usr/bin/shellcheck is not installed";
  ProcessResult r = RunTool("/usr/bin/shellcheck", {SourceDir() + "/deploy/slurm/train.sbatch"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// systemd-analyze verify loads a unit as systemd would, offline. It needs an instance of
// the template and an ExecStart binary that exists: /bin/true stands in for the installed one.
void VerifyUnit(const std::string& name, const std::string& exec_start) {
  if (!Executable("/usr/bin/systemd-analyze")) GTEST_SKIP() << "/usr/bin/systemd-analyze is not installed";
  TempDir dir;
  std::string unit = testing::ReadFileOrEmpty(SourceDir() + "/deploy/systemd/" + name + "@.service");
  ASSERT_NE(unit.find(exec_start), std::string::npos) << name;
  const std::string path = dir.path() + "/" + name + "@w0.service";
  testing::WriteFile(path, std::regex_replace(unit, std::regex("/usr/local/bin/ringtrain"), "/bin/true"));
  ProcessResult r = RunTool("/usr/bin/systemd-analyze", {"verify", "--man=no", path});
  if (r.exit_code != 0 && r.output.find(name + "@w0") == std::string::npos) {
    GTEST_SKIP() << "systemd-analyze verify cannot run here: " << r.output;
  }
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // Unknown or misspelt settings are only warned about ("..., ignoring"): none may be.
  EXPECT_EQ(r.output.find("ignoring"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("nknown"), std::string::npos) << r.output;
}

TEST(DeploySystemd, UnitVerifies) {
  VerifyUnit("ringtrain-worker", "ExecStart=/usr/local/bin/ringtrain worker");
}

TEST(DeploySystemd, DaemonUnitVerifies) {
  VerifyUnit("ringtrain-serve", "ExecStart=/usr/local/bin/ringtrain serve");
}

TEST(DeployDocker, ComposeConfigIsValid) {
  const std::string docker = "/usr/local/bin/docker";
  if (!Executable(docker)) GTEST_SKIP() << docker << " is not installed";
  if (RunTool(docker, {"compose", "version"}).exit_code != 0) {
    GTEST_SKIP() << "docker has no compose plugin here: `docker compose config` cannot check compose.yaml";
  }
  // The secret file is made by hand before `up` (see docs/deploy/docker.md); config only needs it to exist.
  TempDir dir;
  fs::copy(SourceDir() + "/deploy", dir.path() + "/deploy", fs::copy_options::recursive);
  testing::WriteFile(dir.path() + "/deploy/docker/cluster_secret", "0123456789abcdef0123456789abcdef\n");
  ProcessResult r = RunTool(docker, {"compose", "-f", dir.path() + "/deploy/docker/compose.yaml", "config", "--quiet"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// kubectl's client-side dry run still asks the API server for the kinds' schemas.
TEST(DeployKubernetes, ManifestsPassKubectlDryRun) {
  const std::string kubectl = "/usr/bin/kubectl";
  if (!Executable(kubectl)) GTEST_SKIP() << kubectl << " is not installed";
  ProcessResult versions = RunTool(kubectl, {"api-versions", "--request-timeout=5s"});
  if (versions.exit_code != 0) {
    GTEST_SKIP() << "kubectl reaches no API server (needed even for --dry-run=client): " << versions.output;
  }
  const std::string k8s = SourceDir() + "/deploy/k8s/";
  std::vector<std::string> files = {"service.yaml", "job-in-place.yaml", "job-restart.yaml", "serve-statefulset.yaml"};
  if (versions.output.find("kubeflow.org/v1") != std::string::npos) files.push_back("tfjob.yaml");
  for (const auto& f : files) {
    ProcessResult r = RunTool(kubectl, {"apply", "--dry-run=client", "-f", k8s + f});
    EXPECT_EQ(r.exit_code, 0) << f << ": " << r.output;
  }
}

}  // namespace
}  // namespace ringtrain
