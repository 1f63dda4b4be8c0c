// "model": {"keras_json": ...} in a job file: read (a path relative to the job file,
// or inline), translated into the compact model form (nn/keras/keras_json.h) at parse time,
// so that JobConfig::model and ::raw hold the compact form; errors are kConfig.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "testing/source_dir.h"

#include "config/job_config.h"
#include "testing/temp_dir.h"

namespace ringtrain::config {
namespace {

using nlohmann::json;

std::string FixtureText(const std::string& name) {
  std::string text = testing::ReadSourceFile("tests/nn/keras_json/" + name);
  EXPECT_FALSE(text.empty()) << name;
  return text;
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  ASSERT_TRUE(out.good()) << path;
}

// A job around `model`.
std::string Job(const json& model) {
  json job = {{"model", model},
              {"loss", {{"type", "sparse_categorical_crossentropy"}, {"from_logits", true}}},
              {"optimizer", {{"type", "sgd"}, {"learning_rate", 0.01}}},
              {"data", {{"train", {{"format", "mnist_idx"}, {"images", "i.gz"}, {"labels", "l.gz"}}}}},
              {"batch_size_per_worker", 32}};
  return job.dump();
}

void ExpectResidualCompact(const JobConfig& job) {
  EXPECT_EQ(job.model["name"], "residual");
  EXPECT_EQ(job.model["input_shape"], json({32, 32, 3}));
  EXPECT_EQ(job.model["input_name"], "input");
  ASSERT_EQ(job.model["layers"].size(), 11u);
  EXPECT_EQ(job.model["layers"][0]["type"], "Conv2D");
  EXPECT_EQ(job.model["layers"][6]["type"], "Add");
  EXPECT_EQ(job.model["layers"][6]["inputs"], json({"shortcut", "bn_b"}));
  EXPECT_FALSE(job.model.contains("keras_json"));
  // What workers compare and fingerprint is the model itself, not the file's path.
  EXPECT_EQ(job.raw["model"], job.model);
}

TEST(KerasJsonJobTest, APathRelativeToTheJobFile) {
  testing::TempDir dir;
  std::filesystem::create_directories(dir.path() + "/models");
  WriteFile(dir.path() + "/models/residual.json", FixtureText("tfjs_residual.json"));
  WriteFile(dir.path() + "/job.json", Job({{"keras_json", "models/residual.json"}}));
  auto job = LoadJobConfig(dir.path() + "/job.json");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  ExpectResidualCompact(*job);
}

TEST(KerasJsonJobTest, InlineKeras3Json) {
  auto job = ParseJobConfig(Job({{"keras_json", json::parse(FixtureText("keras3_residual.json"))}}), "/jobs");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  ExpectResidualCompact(*job);
}

TEST(KerasJsonJobTest, TheSameModelFromAFileOrInlineIsTheSameJob) {
  testing::TempDir dir;
  WriteFile(dir.path() + "/m.json", FixtureText("tfjs_nested.json"));
  auto from_file = ParseJobConfig(Job({{"keras_json", "m.json"}}), dir.path());
  auto inline_json = ParseJobConfig(Job({{"keras_json", json::parse(FixtureText("tfjs_nested.json"))}}), dir.path());
  ASSERT_TRUE(from_file.ok()) << from_file.status().ToString();
  ASSERT_TRUE(inline_json.ok()) << inline_json.status().ToString();
  EXPECT_EQ(from_file->TrajectoryFingerprint(), inline_json->TrajectoryFingerprint());
  EXPECT_EQ(from_file->CanonicalJson(), inline_json->CanonicalJson());
  // A different model in the same file is a different trajectory.
  WriteFile(dir.path() + "/m.json", FixtureText("tfjs_frozen.json"));
  auto changed = ParseJobConfig(Job({{"keras_json", "m.json"}}), dir.path());
  ASSERT_TRUE(changed.ok()) << changed.status().ToString();
  EXPECT_NE(changed->TrajectoryFingerprint(), from_file->TrajectoryFingerprint());
}

// The error: kConfig, one line, beginning with `prefix`.
void ExpectConfigError(const StatusOr<JobConfig>& job, const std::string& prefix) {
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().subject(), Subject::kConfig);
  EXPECT_EQ(job.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(job.status().message().find('\n'), std::string::npos);
  EXPECT_EQ(job.status().message().rfind(prefix, 0), 0u) << job.status().message();
}

TEST(KerasJsonJobTest, Refusals) {
  testing::TempDir dir;
  // Mixing keras_json with the compact form's keys.
  ExpectConfigError(ParseJobConfig(Job({{"keras_json", "m.json"}, {"input_shape", {28, 28, 1}}}), dir.path()),
                    "job: 'model.keras_json' describes the whole model: remove 'model.input_shape'");
  // A missing file, named with its resolved path.
  ExpectConfigError(ParseJobConfig(Job({{"keras_json", "missing.json"}}), dir.path()),
                    "job: 'model.keras_json' file '" + dir.path() + "/missing.json' cannot be read");
  // Not JSON.
  WriteFile(dir.path() + "/bad.json", "{\"class_name\": ");
  ExpectConfigError(ParseJobConfig(Job({{"keras_json", "bad.json"}}), dir.path()),
                    "job: model.keras_json '" + dir.path() + "/bad.json': not valid JSON");
  // Neither a path nor an object.
  ExpectConfigError(ParseJobConfig(Job({{"keras_json", 3}}), dir.path()),
                    "job: 'model.keras_json' must be the path of the file model.to_json() writes");
  // A translation error, with the file it came from.
  json m = json::parse(FixtureText("tfjs_residual.json"));
  m["config"]["layers"][1]["config"]["data_format"] = "channels_first";
  WriteFile(dir.path() + "/cf.json", m.dump());
  auto cf = ParseJobConfig(Job({{"keras_json", "cf.json"}}), dir.path());
  ExpectConfigError(cf, "job: model.keras_json: layer 'conv_a' (Conv2D): 'data_format' is \"channels_first\"");
  EXPECT_NE(cf.status().message().find("(in '" + dir.path() + "/cf.json')"), std::string::npos);
  // A directory is not a file.
  ExpectConfigError(ParseJobConfig(Job({{"keras_json", "."}}), dir.path()), "job: 'model.keras_json' file '");
}

}  // namespace
}  // namespace ringtrain::config
