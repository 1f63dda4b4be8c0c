#include "config/tf_config.h"

#include <cstdlib>
#include <set>

#include <nlohmann/json.hpp>

#include "common/file.h"
#include "common/json.h"

namespace ringtrain::config {
namespace {

const char kHint[] = " (see docs/guide/running-workers.md)";

Status BadTfConfig(const std::string& what) {
  return InvalidArgumentError("TF_CONFIG: " + what + kHint).About(Subject::kConfig);
}

}  // namespace

std::string HostPort::ToString() const {
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

StatusOr<HostPort> ParseHostPort(const std::string& text) {
  HostPort hp;
  std::string port_text;
  if (!text.empty() && text[0] == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return InvalidArgumentError("'" + text + "' is not a valid [ipv6]:port address");
    }
    hp.host = text.substr(1, close - 1);
    port_text = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string::npos) {
      return InvalidArgumentError("'" + text + "' is not a host:port address (the port is missing)");
    }
    hp.host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
    if (hp.host.find(':') != std::string::npos) {
      return InvalidArgumentError("'" + text + "' is not a host:port address (write IPv6 hosts as [addr]:port)");
    }
  }
  if (hp.host.empty()) return InvalidArgumentError("'" + text + "' has an empty host");
  for (char c : hp.host) {
    bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_' || c == ':' || c == '%';
    if (!ok) return InvalidArgumentError("'" + text + "' has an invalid character in its host");
  }
  if (port_text.empty() || port_text.size() > 5 ||
      port_text.find_first_not_of("0123456789") != std::string::npos) {
    return InvalidArgumentError("'" + text + "' has an invalid port '" + port_text + "'");
  }
  hp.port = std::stoi(port_text);
  if (hp.port < 1 || hp.port > 65535) {
    return InvalidArgumentError("'" + text + "' has port " + port_text + ", outside 1..65535");
  }
  return hp;
}

int ClusterSpec::rank() const {
  for (size_t i = 0; i < training_tasks_.size(); ++i) {
    if (training_tasks_[i] == task_) return static_cast<int>(i);
  }
  return -1;
}

ClusterSpec ClusterSpec::AsTrainingTask(int rank) const {
  ClusterSpec spec = *this;
  spec.task_ = training_tasks_.at(static_cast<size_t>(rank));
  return spec;
}

HostPort ClusterSpec::address(const TaskId& t) const { return jobs_.at(t.type).at(t.index); }

ClusterSpec ClusterSpec::SingleLocalWorker() {
  ClusterSpec spec;
  spec.jobs_["worker"] = {HostPort{"127.0.0.1", 0}};
  spec.task_ = TaskId{"worker", 0};
  spec.training_tasks_ = {spec.task_};
  return spec;
}

StatusOr<ClusterSpec> ParseTfConfig(const std::string& json_text) {
  if (json_text.size() > kMaxTfConfigBytes) {
    return BadTfConfig("is " + FormatBytes(json_text.size()) + ", more than the " + FormatBytes(kMaxTfConfigBytes) +
               " a TF_CONFIG may have");
  }
  auto parsed = ParseJson(json_text, "TF_CONFIG");
  if (!parsed.ok()) return InvalidArgumentError(parsed.status().message() + kHint).About(Subject::kConfig);
  const nlohmann::json j = std::move(parsed).value();
  if (!j.is_object()) return BadTfConfig("must be a JSON object with \"cluster\" and \"task\"");
  static const std::set<std::string> kTopKeys = {"cluster", "task", "environment", "rpc_layer"};
  for (auto& [key, value] : j.items()) {
    if (!kTopKeys.count(key)) return BadTfConfig("unknown key \"" + key + "\"; expected cluster, task, environment, rpc_layer");
  }
  if (!j.contains("cluster")) return BadTfConfig("missing \"cluster\"");
  if (!j.contains("task")) return BadTfConfig("missing \"task\"");
  const auto& cluster = j["cluster"];
  if (!cluster.is_object() || cluster.empty()) return BadTfConfig("\"cluster\" must be a non-empty object of job name -> list of host:port");

  ClusterSpec spec;
  std::map<std::string, std::string> seen_addresses;  // address -> task
  for (auto& [job, list] : cluster.items()) {
    if (job == "ps") {
      return BadTfConfig("has a \"ps\" job; parameter-server training is not what this strategy does (it is synchronous "
                 "all-reduce): remove \"ps\" and list the machines under \"worker\"");
    }
    if (job != "chief" && job != "worker" && job != "evaluator") {
      return BadTfConfig("unknown job name \"" + job + "\"; valid jobs are chief, worker, evaluator");
    }
    if (!list.is_array() || list.empty()) return BadTfConfig("cluster." + job + " must be a non-empty list of \"host:port\"");
    if (job != "worker" && list.size() > 1) {
      return BadTfConfig("cluster." + job + " lists " + std::to_string(list.size()) + " tasks; there can be only one " + job);
    }
    std::vector<HostPort> addrs;
    for (size_t i = 0; i < list.size(); ++i) {
      std::string task = job + ":" + std::to_string(i);
      if (!list[i].is_string()) return BadTfConfig("cluster." + job + "[" + std::to_string(i) + "] must be a \"host:port\" string");
      auto hp = ParseHostPort(list[i].get<std::string>());
      if (!hp.ok()) return BadTfConfig("cluster." + job + "[" + std::to_string(i) + "]: " + hp.status().message());
      auto [it, inserted] = seen_addresses.emplace(hp->ToString(), task);
      if (!inserted) return BadTfConfig("address " + hp->ToString() + " is used by both " + it->second + " and " + task);
      addrs.push_back(*hp);
    }
    spec.jobs_[job] = std::move(addrs);
  }
  if (!spec.jobs_.count("chief") && !spec.jobs_.count("worker")) {
    return BadTfConfig("the cluster has no \"chief\" and no \"worker\" job; list the training machines under \"worker\"");
  }
  if (spec.jobs_.count("chief")) spec.training_tasks_.push_back({"chief", 0});
  if (spec.jobs_.count("worker")) {
    for (size_t i = 0; i < spec.jobs_["worker"].size(); ++i) spec.training_tasks_.push_back({"worker", static_cast<int>(i)});
  }

  const auto& task = j["task"];
  if (!task.is_object()) return BadTfConfig("\"task\" must be an object like {\"type\": \"worker\", \"index\": 0}");
  if (!task.contains("type") || !task["type"].is_string()) return BadTfConfig("task.type must be a string (chief, worker or evaluator)");
  spec.task_.type = task["type"].get<std::string>();
  if (task.contains("index")) {
    if (!task["index"].is_number_integer()) return BadTfConfig("task.index must be an integer, got " + JsonBrief(task["index"]));
    const std::optional<int64_t> idx = JsonInt(task["index"], 0, 1000000);
    if (!idx) return BadTfConfig("task.index " + JsonBrief(task["index"]) + " is out of range");
    spec.task_.index = static_cast<int>(*idx);
  } else {
    spec.task_.index = 0;  // TensorFlow's default
  }
  for (auto& [key, value] : task.items()) {
    if (key != "type" && key != "index" && key != "trial") return BadTfConfig("unknown key task." + key);
  }
  if (spec.task_.type == "ps") {
    return BadTfConfig("task.type is \"ps\"; parameter-server training is not what this strategy does");
  }
  auto job_it = spec.jobs_.find(spec.task_.type);
  if (job_it == spec.jobs_.end()) {
    return BadTfConfig("task " + spec.task_.ToString() + " is not in the cluster (there is no \"" + spec.task_.type + "\" job)");
  }
  if (spec.task_.index >= static_cast<int>(job_it->second.size())) {
    return BadTfConfig("task.index " + std::to_string(spec.task_.index) + " is out of range: cluster." + spec.task_.type +
               " has " + std::to_string(job_it->second.size()) + " task(s), indices 0.." +
               std::to_string(job_it->second.size() - 1));
  }
  if (j.contains("environment")) {
    if (!j["environment"].is_string()) return BadTfConfig("\"environment\" must be a string");
    spec.environment_ = j["environment"].get<std::string>();
  }
  if (j.contains("rpc_layer")) {
    if (!j["rpc_layer"].is_string()) return BadTfConfig("\"rpc_layer\" must be a string");
    std::string layer = j["rpc_layer"].get<std::string>();
    if (layer != "grpc" && layer != "grpc+loas" && !layer.empty()) {
      return BadTfConfig("rpc_layer \"" + layer + "\" is not supported; ringtrain speaks \"grpc\"");
    }
  }
  return spec;
}

StatusOr<std::string> ReadTfConfigText(const std::string& flag_value) {
  if (!flag_value.empty()) {
    size_t first = flag_value.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && flag_value[first] == '{') return flag_value;
    auto text = ReadFile(flag_value, kMaxTfConfigBytes, "a TF_CONFIG file");
    if (!text.ok()) {
      return InvalidArgumentError("--tf_config: cannot read file '" + flag_value + "' (" + text.status().message() +
                                  "); pass a readable file or inline JSON starting with '{'")
          .About(Subject::kConfig);
    }
    return text;
  }
  const char* env = std::getenv("TF_CONFIG");
  if (env == nullptr || *env == '\0') {
    return InvalidArgumentError(
               "TF_CONFIG is not set; set it to the cluster/task JSON (or pass --tf_config), or use "
               "`ringtrain launch --workers N --job JOB` to run local workers")
        .About(Subject::kConfig);
  }
  return std::string(env);
}

}  // namespace ringtrain::config
