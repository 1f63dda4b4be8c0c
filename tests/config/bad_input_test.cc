// The job file and TF_CONFIG as a careless or hostile user writes them: numbers out of
// range, integers that are not integers, files that are not files. Every case is one
// INVALID_ARGUMENT line about the configuration (exit 2), never an exception.
#include <stdlib.h>
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "common/exit_policy.h"
#include "config/job_config.h"
#include "config/settings.h"
#include "config/tf_config.h"
#include "testing/temp_dir.h"

namespace ringtrain::config {
namespace {

using ::ringtrain::testing::Quoted;

const char kJob[] = R"({
  "model": {"input_shape": [4], "layers": [{"type": "dense", "units": 2}]},
  "optimizer": {"type": "sgd", "learning_rate": 0.1},
  "data": {"train": {"format": "synthetic", "count": 64, "shape": [8, 8]}},
  "batch_size_per_worker": 16, "epochs": 2, "seed": 5
})";

// The job with `field` (a top-level key) set to the raw JSON text `value`.
std::string JobWith(const std::string& field, const std::string& value) {
  nlohmann::json j = nlohmann::json::parse(kJob);
  j[field] = nullptr;
  std::string text = j.dump();
  const std::string key = "\"" + field + "\":null";
  return text.replace(text.find(key), key.size(), "\"" + field + "\":" + value);
}

void ExpectBadText(const std::string& text, const std::string& want) {
  auto job = ParseJobConfig(text, "/jobs");
  ASSERT_FALSE(job.ok()) << text;
  EXPECT_EQ(job.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(ExitCodeFor(job.status()), kExitBadConfig);
  EXPECT_EQ(job.status().subject(), Subject::kConfig);
  EXPECT_NE(job.status().message().find(want), std::string::npos) << job.status().message();
  EXPECT_EQ(job.status().message().find('\n'), std::string::npos);
}

TEST(JobNumbersTest, NumbersOutOfRangeAreOneLine) {
  ExpectBadText(JobWith("epochs", "1e400"), "a number is out of range");
  ExpectBadText(JobWith("epochs", "-1e400"), "a number is out of range");
  ExpectBadText(JobWith("seed", std::string(400, '7')), "a number is out of range");
}

TEST(JobNumbersTest, IntegerFieldsTakeOnlyIntegersInRange) {
  for (const char* v : {"1e30", "-5", "2.5", "0", "99999999999999999999", "18446744073709551615", "\"16\"", "1e9"}) {
    ExpectBadText(JobWith("batch_size_per_worker", v), "'batch_size_per_worker' must be a positive integer (at most 10^9)");
  }
  ExpectBadText(JobWith("epochs", "1000000001"), "'epochs' must be a positive integer");
  ExpectBadText(JobWith("steps_per_epoch", "-1"), "'steps_per_epoch' must be a positive integer");
  ExpectBadText(JobWith("validation_freq", "1e30"), "'validation_freq' must be an integer k >= 0");
  ExpectBadText(JobWith("seed", "-1"), "'seed' must be a non-negative integer below 2^64");
  ExpectBadText(JobWith("seed", "1.5"), "'seed' must be a non-negative integer below 2^64");
  // The whole 64-bit range is a seed.
  auto job = ParseJobConfig(JobWith("seed", "18446744073709551615"), "/jobs");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->seed, 18446744073709551615u);
}

TEST(JobNumbersTest, CommunicationNumbersAreBounded) {
  ExpectBadText(JobWith("communication", R"({"timeout_seconds": 1e300})"), "'communication.timeout_seconds' must be");
  ExpectBadText(JobWith("communication", R"({"timeout_seconds": -1})"), "'communication.timeout_seconds' must be");
  ExpectBadText(JobWith("communication", R"({"bytes_per_pack": 1e30})"), "'communication.bytes_per_pack' must be");
  ExpectBadText(JobWith("communication", R"({"bytes_per_pack": 18446744073709551615})"),
            "'communication.bytes_per_pack' must be");
  EXPECT_TRUE(ParseJobConfig(JobWith("communication", R"({"timeout_seconds": 30.5})"), "/j").ok());
}

TEST(JobNumbersTest, WrongTypesAreOneLine) {
  ExpectBadText(JobWith("loss", R"({"type": 5})"), "loss: 'type' must name the loss");
  ExpectBadText(JobWith("loss", R"({"type": "sparse_categorical_crossentropy", "from_logits": "yes"})"),
            "'from_logits' must be true or false");
  ExpectBadText(JobWith("metrics", R"([7])"), "metrics[0]");
  ExpectBadText(JobWith("recovery", "[1]"), "'recovery' must be");
  ExpectBadText(JobWith("device", "7"), "'device' must be a non-empty string");
  ExpectBadText("[" + std::string(200, '[') + std::string(201, ']'), "nested deeper than");
}

class JobFileTest : public ::testing::Test {
 protected:
  std::string Path(const std::string& name) { return tmp_.path() + "/" + name; }
  void ExpectUnreadable(const std::string& path, const std::string& what) {
    auto job = LoadJobConfig(path);
    ASSERT_FALSE(job.ok()) << path;
    EXPECT_EQ(ExitCodeFor(job.status()), kExitBadConfig);
    EXPECT_EQ(job.status().message(),
              "job file '" + path + "' cannot be read (" + what + "); check the path given to --job");
  }
  testing::TempDir tmp_;
};

TEST_F(JobFileTest, SpecialFilesAreRefusedAtOnce) {
  ExpectUnreadable("/dev/zero", "'/dev/zero' is a character device, not a regular file");
  ExpectUnreadable(tmp_.path(), Quoted(tmp_.path()) + " is a directory, not a regular file");
  ASSERT_EQ(::mkfifo(Path("fifo").c_str(), 0600), 0);
  ExpectUnreadable(Path("fifo"), Quoted(Path("fifo")) + " is a FIFO (named pipe), not a regular file");
  ExpectUnreadable(Path("nope.json"), "file '" + Path("nope.json") + "' does not exist");
}

TEST_F(JobFileTest, AJobFileOverTheBoundIsRefused) {
  {
    std::ofstream f(Path("big.json"));
    f << JobWith("description", "\"" + std::string(kMaxJobFileBytes, 'x') + "\"");
  }
  ExpectUnreadable(Path("big.json"),
                   Quoted(Path("big.json")) + " is 16.0 MiB, more than the 16.0 MiB a job file may have");
}

TEST_F(JobFileTest, TfConfigFilesAreReadTheSameWay) {
  ASSERT_EQ(::mkfifo(Path("fifo").c_str(), 0600), 0);
  for (const std::string& path : {Path("fifo"), tmp_.path(), std::string("/dev/urandom")}) {
    auto text = ReadTfConfigText(path);
    ASSERT_FALSE(text.ok()) << path;
    EXPECT_EQ(ExitCodeFor(text.status()), kExitBadConfig);
    EXPECT_NE(text.status().message().find("not a regular file"), std::string::npos) << text.status().message();
  }
}

TEST(TfConfigNumbersTest, OutOfRangeAndOversizedAreOneLine) {
  for (const char* index : {"1e400", "18446744073709551615", "-1", "1.5", "1e30"}) {
    auto spec = ParseTfConfig(std::string(R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": )") +
                              index + "}}");
    ASSERT_FALSE(spec.ok()) << index;
    EXPECT_EQ(ExitCodeFor(spec.status()), kExitBadConfig);
    EXPECT_EQ(spec.status().message().find("TF_CONFIG: "), 0u) << spec.status().message();
  }
  auto big = ParseTfConfig("{\"x\": \"" + std::string(kMaxTfConfigBytes, 'x') + "\"}");
  EXPECT_NE(big.status().message().find("more than the 1.0 MiB a TF_CONFIG may have"), std::string::npos)
      << big.status().message();
}

TEST(SettingsNumbersTest, InfinityNanAndHugeValuesAreRefused) {
  for (const char* v : {"inf", "nan", "1e400", "1e300", "-1"}) {
    ::setenv("RINGTRAIN_COLLECTIVE_TIMEOUT_S", v, 1);
    auto s = LoadSettings();
    EXPECT_FALSE(s.ok()) << v;
    EXPECT_EQ(ExitCodeFor(s.status()), kExitBadConfig);
  }
  ::unsetenv("RINGTRAIN_COLLECTIVE_TIMEOUT_S");
  for (const char* v : {"1e400", "3000000000", "nan"}) {
    ::setenv("RINGTRAIN_HEARTBEAT_TIMEOUT_MS", v, 1);
    EXPECT_FALSE(LoadSettings().ok()) << v;
  }
  ::unsetenv("RINGTRAIN_HEARTBEAT_TIMEOUT_MS");
}

TEST(SettingsNumbersTest, MemoryBoundDefaultsToPhysicalMemory) {
  ::unsetenv("RINGTRAIN_MAX_MEMORY_MB");
  auto s = LoadSettings();
  ASSERT_TRUE(s.ok());
  EXPECT_GT(s->max_memory_mb, 0u);
  EXPECT_FALSE(s->max_memory_from_environment);
  ::setenv("RINGTRAIN_MAX_MEMORY_MB", "2048", 1);
  s = LoadSettings();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->max_memory_mb, 2048u);
  EXPECT_EQ(MemoryBoundOf(*s).bytes, uint64_t{2048} << 20);
  EXPECT_TRUE(MemoryBoundOf(*s).from_environment);
  EXPECT_NE(Describe(*s).find("RINGTRAIN_MAX_MEMORY_MB=2048"), std::string::npos);
  ::setenv("RINGTRAIN_MAX_MEMORY_MB", "lots", 1);
  EXPECT_FALSE(LoadSettings().ok());
  ::unsetenv("RINGTRAIN_MAX_MEMORY_MB");
}

}  // namespace
}  // namespace ringtrain::config
