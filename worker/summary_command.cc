// `ringtrain summary FILE [--json]`: Keras' model.summary() of the model a job file, a
// Keras model JSON (model.to_json(), also as a JSON string or a TensorFlow.js model.json),
// a .keras archive or a compact model describes (nn/model_summary.h).
// No data is read and no cluster is formed: the model is built and its table printed.
// Exit codes (common/exit_policy.h): 2 for a bad flag or file, or a model ringtrain
// cannot build (the line names the layer and field); 6 for a .keras archive that cannot
// be read.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "common/exit_policy.h"
#include "common/file.h"
#include "common/logging.h"
#include "config/job_config.h"
#include "flags.h"
#include "nn/keras/model_file.h"
#include "nn/model.h"
#include "nn/model_summary.h"

namespace ringtrain::cli {
namespace {

constexpr char kUsage[] = "usage: ringtrain summary JOB.json | MODEL.json | MODEL.keras [--json]";

Status BadFile(const std::string& path, const std::string& what) {
  return InvalidArgumentError("summary: '" + path + "' " + what).About(Subject::kConfig);
}

// The compact model (nn::Model::FromJson's form) that the file at `path` describes.
StatusOr<nlohmann::json> CompactModelOf(const std::string& path) {
  auto head = ReadFilePrefix(path, 4);
  if (head.ok() && *head == std::string("PK\x03\x04", 4)) {  // a .keras archive
    auto file = nn::ReadKerasModelFile(path, config::kMaxKerasJsonFileBytes);
    if (!file.ok()) return file.status();
    for (const std::string& line : file->info) RT_LOG(INFO) << line;
    return file->compact;
  }
  auto text = ReadFile(path, config::kMaxJobFileBytes, "a job or model file");
  if (!text.ok()) return BadFile(path, "cannot be read (" + text.status().message() + ")");
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return BadFile(path, "is not JSON; give a job file, a Keras model JSON or a compact model");
  if (j.is_object() && j.contains("model") && (j.contains("optimizer") || j.contains("data"))) {
    auto job = config::LoadJobConfig(path);
    if (!job.ok()) return job.status();
    return job->model;
  }
  // Keras' model JSON in any of the forms people have (nn/keras/model_file.h): the
  // object, the object as a JSON string, a TensorFlow.js model.json.
  if (j.is_string() || (j.is_object() && (j.contains("class_name") || j.contains("modelTopology")))) {
    auto file = nn::KerasModelFromJson(j, std::filesystem::path(path).parent_path().string());
    if (!file.ok()) {
      return Status(file.status().code(), file.status().message() + " (in '" + path + "')", Subject::kConfig);
    }
    for (const std::string& line : file->info) RT_LOG(INFO) << "'" << path << "' " << line;
    return file->compact;
  }
  if (!j.is_object()) {
    return BadFile(path, "holds a JSON " + std::string(j.type_name()) +
                             ", not an object; give a job file, a Keras model JSON or a compact model");
  }
  if (j.contains("layers")) return j;
  return BadFile(path, "is neither a job file (model, optimizer, data), a Keras model JSON (class_name, config) "
                       "nor a compact model (input_shape, layers)");
}

}  // namespace

int RunSummary(const std::vector<std::string>& args) {
  std::vector<std::string> rest = args;
  std::string path;
  if (!rest.empty() && rest[0].rfind("--", 0) != 0) {
    path = rest[0];
    rest.erase(rest.begin());
  }
  auto flags = Flags::Parse(rest, {}, {"json"});
  if (!flags.ok()) return Fail(flags.status().About(Subject::kConfig));
  if (path.empty()) return Fail(BadFlag(kUsage));
  auto compact = CompactModelOf(path);
  if (!compact.ok()) return Fail(compact.status().About(Subject::kConfig));
  auto model = nn::Model::FromJson(*compact, /*seed=*/0);
  if (!model.ok()) return Fail(model.status().WithContext("summary: the model of '" + path + "'").About(Subject::kConfig));
  const std::string name = compact->is_object() ? compact->value("name", std::string()) : std::string();
  const nn::ModelSummary summary = nn::Summarize(**model, name);
  if (flags->has("json")) {
    std::fputs((nn::SummaryJson(summary).dump(2) + "\n").c_str(), stdout);
  } else {
    std::fputs(nn::SummaryTable(summary).c_str(), stdout);
  }
  return kExitOk;
}

}  // namespace ringtrain::cli
