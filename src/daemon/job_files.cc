#include "daemon/job_files.h"

#include <charconv>

#include <nlohmann/json.hpp>

#include "env/file_util.h"

namespace ringtrain::daemon {

std::string JobDir(const std::string& jobs_dir, int64_t id) { return jobs_dir + "/job-" + std::to_string(id); }
std::string JobOutputPath(const std::string& jobs_dir, int64_t id) { return JobDir(jobs_dir, id) + "/output.log"; }
std::string JobOutcomePath(const std::string& jobs_dir, int64_t id) {
  return JobDir(jobs_dir, id) + "/outcome.json";
}

StatusOr<std::string> ChildJobText(const std::string& job_text) {
  auto j = nlohmann::json::parse(job_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return Status(Code::kInvalidArgument, "the submitted job is not a JSON object", Subject::kConfig);
  }
  if (!j.contains("history_file")) j["history_file"] = kDefaultHistoryFile;
  return j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace);
}

int JobPortOffset(int64_t id, int stride, int span) {
  if (stride < 1) stride = 1;
  if (span < 1) span = 1;
  return stride * (1 + static_cast<int>(id % span));
}

StatusOr<std::string> JobTfConfig(const std::string& tf_config, int offset) {
  auto j = nlohmann::json::parse(tf_config, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("cluster") || !j["cluster"].is_object()) {
    return InvalidArgumentError("TF_CONFIG has no \"cluster\" object");
  }
  for (auto& [type, list] : j["cluster"].items()) {
    if (!list.is_array()) return InvalidArgumentError("TF_CONFIG cluster." + type + " is not a list");
    for (auto& a : list) {
      if (!a.is_string()) return InvalidArgumentError("TF_CONFIG cluster." + type + " has an address that is not a string");
      const std::string addr = a.get<std::string>();
      const size_t colon = addr.rfind(':');
      int port = 0;
      const char* first = addr.data() + colon + 1;
      const char* last = addr.data() + addr.size();
      if (colon == std::string::npos || std::from_chars(first, last, port).ptr != last || port <= 0) {
        return InvalidArgumentError("TF_CONFIG address '" + addr + "' has no port");
      }
      if (port + offset > 65535) {
        return InvalidArgumentError("the job port of '" + addr + "' would be " + std::to_string(port + offset) +
                                    ", past 65535: give the daemons lower ports or a smaller RINGTRAIN_JOB_PORT_SPAN");
      }
      a = addr.substr(0, colon + 1) + std::to_string(port + offset);
    }
  }
  return j.dump();
}

std::string FinalMetrics(env::Env* env, const std::string& history_path) {
  auto text = env->ReadFile(history_path);
  if (!text.ok()) return "";
  nlohmann::json last_epoch, evaluation;
  size_t start = 0;
  while (start < text->size()) {
    size_t end = text->find('\n', start);
    if (end == std::string::npos) end = text->size();
    auto line = nlohmann::json::parse(text->substr(start, end - start), nullptr, /*allow_exceptions=*/false);
    start = end + 1;
    if (!line.is_object()) continue;
    if (line.contains("epoch")) last_epoch = line;
    if (line.contains("evaluation") && line["evaluation"].is_object()) evaluation = line["evaluation"];
  }
  if (!last_epoch.is_object()) return "";
  nlohmann::json m = nlohmann::json::object();
  for (const auto& [k, v] : last_epoch.items()) {
    if (k == "images_per_sec" || k == "step_ms" || k == "comm_wait_share" || k == "input_wait_share") continue;
    m[k] = v;
  }
  if (evaluation.is_object()) {
    for (const auto& [k, v] : evaluation.items()) m["val_" + k] = v;
  }
  return m.dump();
}

Status WriteOutcome(env::Env* env, const std::string& path, const ChildOutcome& o) {
  const nlohmann::json j = {{"job_id", o.job_id}, {"exit_code", o.exit_code}, {"error", o.error},
                            {"metrics", o.metrics_json}};
  return env::WriteFileAtomically(env, path, j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

std::optional<ChildOutcome> ReadOutcome(env::Env* env, const std::string& path) {
  auto text = env->ReadFile(path);
  if (!text.ok()) return std::nullopt;
  auto j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("job_id") || !j["job_id"].is_number_integer() ||
      !j.contains("exit_code") || !j["exit_code"].is_number_integer()) {
    return std::nullopt;  // damaged: the child runs again (it resumes from the job's backups)
  }
  ChildOutcome o;
  o.job_id = j["job_id"].get<int64_t>();
  o.exit_code = j["exit_code"].get<int>();
  if (j.contains("error") && j["error"].is_string()) o.error = j["error"].get<std::string>();
  if (j.contains("metrics") && j["metrics"].is_string()) o.metrics_json = j["metrics"].get<std::string>();
  return o;
}

}  // namespace ringtrain::daemon
