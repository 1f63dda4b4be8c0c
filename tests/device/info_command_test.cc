// `ringtrain --version` and `ringtrain info [--json]` run as child processes: the
// build line matches what CMake found, and `info` reports this machine (here: no
// GPU, with the reason) and exits 0 either way.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "device/device.h"
#include "integration/process.h"
#include "kernels/kernels.h"

namespace ringtrain::testing {
namespace {

ProcessResult RunRingtrain(const std::vector<std::string>& args, std::map<std::string, std::string> env = {}) {
  env["RINGTRAIN_LOG_LEVEL"] = "ERROR";
  Process p(RingtrainBinary(), args, env);
  return p.Wait(60);
}


std::string ExpectedBuildLine() {
  return "built with: " + device::BuildSummary() + " (GPU engine: " +
         (RINGTRAIN_EXPECT_GPU_ENGINE == 1 ? "yes" : "no") + "); CPU kernels: " + kernels::Implementation();
}

TEST(VersionCommandTest, PrintsVersionAndBuild) {
  for (const char* spelling : {"--version", "version"}) {
    ProcessResult r = RunRingtrain({spelling});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    std::vector<std::string> lines = Lines(r.output);
    ASSERT_EQ(lines.size(), 2u) << r.output;
    EXPECT_EQ(lines[0], std::string("ringtrain ") + RINGTRAIN_EXPECT_VERSION);
    EXPECT_EQ(lines[1], ExpectedBuildLine());
    for (const char* part : {"CUDA", "cuDNN", "NCCL"}) EXPECT_NE(lines[1].find(part), std::string::npos);
  }
}

TEST(VersionCommandTest, RejectsArguments) {
  ProcessResult r = RunRingtrain({"version", "--json"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("takes no arguments"), std::string::npos) << r.output;
}

TEST(InfoCommandTest, JsonDescribesThisMachine) {
  ProcessResult r = RunRingtrain({"info", "--json"}, {{"CUDA_VISIBLE_DEVICES", "0"}});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(j.is_object()) << r.output;
  EXPECT_EQ(j["version"], RINGTRAIN_EXPECT_VERSION);
  EXPECT_EQ(j["build"]["summary"], ExpectedBuildLine());
  EXPECT_EQ(j["build"]["gpu_engine"], RINGTRAIN_EXPECT_GPU_ENGINE == 1);
  const std::string cuda = RINGTRAIN_EXPECT_CUDA;
  EXPECT_EQ(j["build"]["cuda"], cuda.empty() ? nlohmann::json(nullptr) : nlohmann::json(cuda));
  EXPECT_EQ(j["cuda_visible_devices"], "0");
  EXPECT_EQ(j["cpu"]["kernels"], kernels::Implementation());
  EXPECT_EQ(j["cpu"]["hardware_threads"], std::thread::hardware_concurrency());
  ASSERT_TRUE(j["gpus"].is_array());
  EXPECT_EQ(j["placement"]["device"], "auto");
  ASSERT_TRUE(j["placement"]["reason"].is_string()) << j.dump();

  // The child sees the machine this test sees (CUDA_VISIBLE_DEVICES=0 keeps at most one GPU).
  const device::RuntimeInfo& rt = device::Runtime();
  if (rt.gpus.empty()) {
    EXPECT_EQ(j["gpus"], nlohmann::json::array());
    ASSERT_TRUE(j["gpus_unavailable_reason"].is_string());
    EXPECT_EQ(j["gpus_unavailable_reason"], rt.unavailable_reason);
    EXPECT_EQ(j["placement"]["gpu"], false);
    const std::string reason = j["placement"]["reason"];
    EXPECT_NE(reason.find("training on the CPU"), std::string::npos) << reason;
  } else {
    ASSERT_EQ(j["gpus"].size(), 1u);
    EXPECT_TRUE(j["gpus"][0]["name"].is_string());
    EXPECT_GT(j["gpus"][0]["memory_gib"].get<double>(), 0.0);
  }
  if (rt.driver_version == 0) {
    EXPECT_TRUE(j["cuda_driver"].is_null());
  }
}

TEST(InfoCommandTest, TextReport) {
  ProcessResult r = RunRingtrain({"info"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<std::string> lines = Lines(r.output);
  ASSERT_GE(lines.size(), 6u) << r.output;
  EXPECT_EQ(lines[0], std::string("ringtrain ") + RINGTRAIN_EXPECT_VERSION);
  EXPECT_EQ(lines[1], ExpectedBuildLine());
  EXPECT_EQ(lines[2].rfind("CUDA driver: ", 0), 0u) << lines[2];
  EXPECT_EQ(lines.back().rfind("device auto -> ", 0), 0u) << lines.back();
  const device::RuntimeInfo& rt = device::Runtime();
  if (!device::Build().gpu_engine) {
    EXPECT_EQ(lines.back().rfind("device auto -> CPU: this ringtrain was built without ", 0), 0u) << lines.back();
  } else if (rt.gpus.empty()) {
    EXPECT_NE(r.output.find("\nGPUs: none (" + rt.unavailable_reason + ")\n"), std::string::npos) << r.output;
    EXPECT_EQ(lines.back(), "device auto -> CPU: " + rt.unavailable_reason);
  } else {
    EXPECT_EQ(lines.back().rfind("device auto -> GPU ", 0), 0u) << lines.back();
  }
}

TEST(InfoCommandTest, RejectsUnknownFlags) {
  ProcessResult r = RunRingtrain({"info", "--gpus"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
}

}  // namespace
}  // namespace ringtrain::testing
