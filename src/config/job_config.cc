#include "config/job_config.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace ringtrain::config {
namespace {

Status Bad(const std::string& what) { return InvalidArgumentError("job: " + what); }

Status CheckKeys(const nlohmann::json& obj, const std::string& where, const std::set<std::string>& allowed) {
  for (auto& [key, value] : obj.items()) {
    if (!allowed.count(key)) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      return Bad("unknown field '" + where + key + "'; known fields here: " + list);
    }
  }
  return Status::Ok();
}

StatusOr<int> PositiveInt(const nlohmann::json& j, const std::string& name) {
  if (!j.is_number_integer() || j.get<long long>() <= 0 || j.get<long long>() > 1000000000) {
    return Bad("'" + name + "' must be a positive integer, got " + j.dump());
  }
  return static_cast<int>(j.get<long long>());
}

StatusOr<std::string> String(const nlohmann::json& j, const std::string& name) {
  if (!j.is_string() || j.get<std::string>().empty()) return Bad("'" + name + "' must be a non-empty string");
  return j.get<std::string>();
}

Status ParseInto(const nlohmann::json& j, JobConfig* job) {
  static const std::set<std::string> kTop = {
      "model", "loss", "optimizer", "data", "batch_size_per_worker", "epochs", "steps_per_epoch", "seed",
      "communication", "save_model", "history_file", "name", "description"};
  RT_RETURN_IF_ERROR(CheckKeys(j, "", kTop));
  for (const char* required : {"model", "optimizer", "data", "batch_size_per_worker"}) {
    if (!j.contains(required)) return Bad(std::string("missing required field '") + required + "'");
  }
  if (!j["model"].is_object()) return Bad("'model' must be an object with input_shape and layers");
  job->model = j["model"];
  if (!j["optimizer"].is_object()) return Bad("'optimizer' must be an object like {\"type\": \"sgd\", ...}");
  job->optimizer = j["optimizer"];

  job->loss = j.value("loss", nlohmann::json{{"type", "sparse_categorical_crossentropy"}, {"from_logits", true}});
  if (!job->loss.is_object()) return Bad("'loss' must be an object");
  RT_RETURN_IF_ERROR(CheckKeys(job->loss, "loss.", {"type", "from_logits"}));
  if (job->loss.value("type", "") != "sparse_categorical_crossentropy") {
    return Bad("loss.type must be \"sparse_categorical_crossentropy\" (the only loss this version trains with)");
  }
  if (!job->loss.value("from_logits", false)) {
    return Bad("loss.from_logits must be true: the model's last layer outputs logits (no softmax layer)");
  }

  const auto& data = j["data"];
  if (!data.is_object()) return Bad("'data' must be an object with 'train' (and optionally 'eval')");
  RT_RETURN_IF_ERROR(CheckKeys(data, "data.", {"train", "eval", "auto_shard_policy"}));
  if (!data.contains("train") || !data["train"].is_object()) return Bad("missing required object 'data.train'");
  job->train_data = data["train"];
  if (data.contains("eval")) {
    if (!data["eval"].is_object()) return Bad("'data.eval' must be an object");
    job->eval_data = data["eval"];
  }
  if (data.contains("auto_shard_policy")) {
    RT_ASSIGN_OR_RETURN(job->auto_shard_policy, String(data["auto_shard_policy"], "data.auto_shard_policy"));
  }

  RT_ASSIGN_OR_RETURN(job->batch_size_per_worker, PositiveInt(j["batch_size_per_worker"], "batch_size_per_worker"));
  if (j.contains("epochs")) {
    RT_ASSIGN_OR_RETURN(job->epochs, PositiveInt(j["epochs"], "epochs"));
  }
  if (j.contains("steps_per_epoch") && !j["steps_per_epoch"].is_null()) {
    RT_ASSIGN_OR_RETURN(job->steps_per_epoch, PositiveInt(j["steps_per_epoch"], "steps_per_epoch"));
  }
  if (j.contains("seed")) {
    if (!j["seed"].is_number_integer() || j["seed"].get<long long>() < 0) return Bad("'seed' must be a non-negative integer");
    job->seed = j["seed"].get<uint64_t>();
  }
  if (j.contains("communication")) {
    const auto& c = j["communication"];
    if (!c.is_object()) return Bad("'communication' must be an object like {\"implementation\": \"AUTO\"}");
    RT_RETURN_IF_ERROR(CheckKeys(c, "communication.", {"implementation", "timeout_seconds", "bytes_per_pack"}));
    if (c.contains("bytes_per_pack")) {
      if (!c["bytes_per_pack"].is_number_integer() || c["bytes_per_pack"].get<long long>() < 0) {
        return Bad("'communication.bytes_per_pack' must be an integer >= 0 (0 = one pack)");
      }
      job->communication.bytes_per_pack = c["bytes_per_pack"].get<size_t>();
    }
    if (c.contains("implementation")) {
      RT_ASSIGN_OR_RETURN(job->communication.implementation, String(c["implementation"], "communication.implementation"));
    }
    if (c.contains("timeout_seconds")) {
      if (!c["timeout_seconds"].is_number() || c["timeout_seconds"].get<double>() < 0) {
        return Bad("'communication.timeout_seconds' must be a number >= 0 (0 = the default)");
      }
      job->communication.timeout_seconds = c["timeout_seconds"].get<double>();
    }
  }
  if (j.contains("save_model")) {
    RT_ASSIGN_OR_RETURN(std::string p, String(j["save_model"], "save_model"));
    job->save_model = job->Resolve(p);
  }
  if (j.contains("history_file")) {
    RT_ASSIGN_OR_RETURN(std::string p, String(j["history_file"], "history_file"));
    job->history_file = job->Resolve(p);
  }
  return Status::Ok();
}

}  // namespace

std::string JobConfig::Resolve(const std::string& path) const {
  std::filesystem::path p(path);
  if (p.is_absolute()) return path;
  return (std::filesystem::path(base_dir) / p).lexically_normal().string();
}

StatusOr<JobConfig> ParseJobConfig(const std::string& text, const std::string& base_dir) {
  JobConfig job;
  job.base_dir = base_dir.empty() ? "." : base_dir;
  try {
    job.raw = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    return Bad(std::string("not valid JSON (") + e.what() + ")");
  }
  if (!job.raw.is_object()) return Bad("the job file must hold a JSON object");
  try {
    RT_RETURN_IF_ERROR(ParseInto(job.raw, &job));
  } catch (const nlohmann::json::exception& e) {
    return Bad(std::string("malformed field (") + e.what() + ")");
  }
  return job;
}

StatusOr<JobConfig> LoadJobConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return InvalidArgumentError("job file '" + path + "' cannot be read; check the path given to --job");
  }
  std::stringstream ss;
  ss << in.rdbuf();
  std::filesystem::path dir = std::filesystem::absolute(path).parent_path();
  auto job = ParseJobConfig(ss.str(), dir.string());
  if (!job.ok()) return job.status().WithContext(path);
  return job;
}

}  // namespace ringtrain::config
