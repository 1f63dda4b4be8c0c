// TF_CONFIG, with TensorFlow's schema:
//   {"cluster": {"chief": ["h:p"], "worker": ["h:p", ...], "evaluator": ["h:p"]},
//    "task": {"type": "worker", "index": 1}}
// plus the keys Kubeflow's operator adds ("environment", "rpc_layer"), which are accepted.
// Validation is complete before anything starts: every problem is an INVALID_ARGUMENT
// whose message is one line naming it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace ringtrain::config {

struct HostPort {
  std::string host;  // name, IPv4, or IPv6 without brackets
  int port = 0;
  std::string ToString() const;  // brackets IPv6 hosts
};
// "host:port" or "[v6]:port"; port 1..65535.
StatusOr<HostPort> ParseHostPort(const std::string& text);

struct TaskId {
  std::string type;  // "chief" | "worker" | "evaluator"
  int index = 0;
  std::string ToString() const { return type + ":" + std::to_string(index); }
  bool operator==(const TaskId& o) const { return type == o.type && index == o.index; }
};

class ClusterSpec {
 public:
  // The cluster of a process started without TF_CONFIG: one worker, worker:0, as
  // TensorFlow's strategy trains as a single local worker. Its address (127.0.0.1:0)
  // is never served: such a worker needs no coordination service.
  static ClusterSpec SingleLocalWorker();

  // The tasks that train together, in rank order: the chief task (if any), then the workers.
  const std::vector<TaskId>& training_tasks() const { return training_tasks_; }
  // The same cluster seen from training task `rank` (0..num_workers()-1): what a process
  // hosting several tasks gives each of them (`worker --host_tasks`).
  ClusterSpec AsTrainingTask(int rank) const;
  // "chief:0" if there is a chief job, else "worker:0".
  const TaskId& chief() const { return training_tasks_.front(); }
  const TaskId& task() const { return task_; }
  bool is_chief() const { return task_ == chief(); }
  bool is_evaluator() const { return task_.type == "evaluator"; }
  // Rank of this task among training_tasks(), or -1 for an evaluator.
  int rank() const;
  int num_workers() const { return static_cast<int>(training_tasks_.size()); }
  HostPort address(const TaskId& t) const;
  const std::map<std::string, std::vector<HostPort>>& jobs() const { return jobs_; }
  const std::string& environment() const { return environment_; }

 private:
  friend StatusOr<ClusterSpec> ParseTfConfig(const std::string& json_text);
  std::map<std::string, std::vector<HostPort>> jobs_;
  std::vector<TaskId> training_tasks_;
  TaskId task_;
  std::string environment_;
};

// The largest TF_CONFIG accepted, inline or in a file: a cluster of thousands of tasks
// is well under it.
constexpr uint64_t kMaxTfConfigBytes = uint64_t{1} << 20;

// Every error is an INVALID_ARGUMENT about Subject::kConfig; nothing throws.
StatusOr<ClusterSpec> ParseTfConfig(const std::string& json_text);

// The TF_CONFIG text: from `flag_value` if non-empty (inline JSON when it starts with
// '{', else a file path: a regular file of at most kMaxTfConfigBytes, never a FIFO,
// device or directory), else from the TF_CONFIG environment variable.
StatusOr<std::string> ReadTfConfigText(const std::string& flag_value);

}  // namespace ringtrain::config
