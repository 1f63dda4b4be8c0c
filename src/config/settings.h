// Every run-time knob of a worker in one place: its environment variable, its
// default, and what it does. Logged once at start-up (Describe()).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/memory_bound.h"
#include "common/status.h"

namespace ringtrain::config {

struct Settings {
  // RINGTRAIN_RENDEZVOUS_TIMEOUT_S: how long a task waits for the whole cluster to register.
  double rendezvous_timeout_s = 300;
  // RINGTRAIN_HEARTBEAT_INTERVAL_MS / RINGTRAIN_HEARTBEAT_TIMEOUT_MS: liveness of every task.
  int heartbeat_interval_ms = 1000;
  int heartbeat_timeout_ms = 10000;
  // RINGTRAIN_COLLECTIVE_TIMEOUT_S: deadline of each collective operation when the job's
  // communication.timeout_seconds is 0.
  double collective_timeout_s = 300;
  // RINGTRAIN_SHUTDOWN_TIMEOUT_S: how long the chief waits for every task's orderly shutdown.
  double shutdown_timeout_s = 60;
  // RINGTRAIN_PREEMPT_GRACE_S: after SIGTERM/SIGINT, how long a task may take to stop at a
  // step boundary and save (then it exits at once); fits Kubernetes' default 30 s.
  double preempt_grace_s = 25;
  // RINGTRAIN_NUM_THREADS: compute threads per worker; 0 = cores / training tasks on this host.
  int num_threads = 0;
  // RINGTRAIN_DATA_HOST: the address the data plane listens on; empty = the task's TF_CONFIG host.
  std::string data_host;
  // RINGTRAIN_TRANSPORT: "auto" (shared memory between workers on one host, TCP
  // between hosts) or "tcp" (TCP everywhere).
  std::string transport = "auto";
  // RINGTRAIN_CHUNK_BYTES: the pipelined chunk of the ring's transfers.
  int chunk_bytes = 1 << 18;
  // RINGTRAIN_PROGRESS: "auto" (a live bar when stdout is a terminal), "bar", or "lines".
  std::string progress = "auto";
  // RINGTRAIN_METRICS_PORT: serve Prometheus /metrics (and on the chief the live page) on
  // this port of the task's own address; 0 = off. `ringtrain worker --metrics_port` wins.
  int metrics_port = 0;

  // RINGTRAIN_STRAGGLER_SHARE / RINGTRAIN_STRAGGLER_STEPS: the chief names a rank a
  // straggler when its compute time per step exceeds the median over the ranks by more
  // than this share for this many consecutive steps (coordination/straggler_detector.h).
  double straggler_share = 0.2;
  int straggler_steps = 10;
  // RINGTRAIN_FAULT_COMPUTE_DELAY_MS (testing only): this task sleeps this long in every
  // step after its backward pass, before it waits for the all-reduce: a slow rank.
  int fault_compute_delay_ms = 0;

  // RINGTRAIN_EVALUATOR_TIMEOUT_S (or the evaluator task's --eval_timeout_s): how long
  // the evaluator task waits for a new checkpoint before it gives up (exit 5).
  double evaluator_timeout_s = 3600;

  // Who may join (docs/deploy/security.md). The cluster secret is read apart, by
  // LoadClusterSecretSource below, and never logged.
  // RINGTRAIN_ALLOW_INSECURE=1: run without a cluster secret on a cluster that is not on
  // loopback (a trusted network only); without it such a worker refuses to start.
  bool allow_insecure = false;
  // RINGTRAIN_BIND_ALL=1: the chief's coordination service listens on every interface,
  // not only on its TF_CONFIG address (containers whose TF_CONFIG name is not local).
  bool bind_all = false;
  // RINGTRAIN_CHECK_PEER_ADDRESS=0: the coordination service admits calls from any
  // address, not only the cluster's hosts (callers behind NAT); the secret still applies.
  bool check_peer_address = true;
  // `ringtrain serve`: a job's tasks listen on their daemon's port moved by
  // stride * (1 + job id mod RINGTRAIN_JOB_PORT_SPAN), stride the cluster's size
  // (daemon/job_files.h), so consecutive jobs never share a port.
  int job_port_span = 16;

  // RINGTRAIN_MAX_MEMORY_MB: the memory (MiB) a job may plan to use on this process --
  // weights, gradients, optimizer state, activations, input batches and the data set.
  // A job, or an evaluate/predict batch, that would need more is refused before
  // anything large is allocated, naming the field to change (train/memory_bound.h).
  // Default: this machine's physical memory (0 when it cannot be told: no bound).
  uint64_t max_memory_mb = 0;
  bool max_memory_from_environment = false;  // set by RINGTRAIN_MAX_MEMORY_MB, not the default
};

// One row of the settings table: every RINGTRAIN_* environment variable that any part
// of ringtrain reads, with its default as docs/reference/settings.md shows it. Every
// read of such a variable goes through this file, and tests/config/settings_table_test.cc
// checks that the documentation's table and this one name the same variables with the
// same defaults, and that no other source file reads one.
struct SettingInfo {
  std::string_view name;
  std::string_view default_text;
};
const std::vector<SettingInfo>& SettingTable();

// Defaults overridden by the environment. INVALID_ARGUMENT about Subject::kConfig names
// a malformed or out-of-range variable (NaN, inf and 1e400 are refused, as are
// timeouts beyond a year).
StatusOr<Settings> LoadSettings();
// The memory bound the settings give (common/memory_bound.h).
MemoryBound MemoryBoundOf(const Settings& s);
// One line per knob: "NAME=value (default D)".
std::string Describe(const Settings& s);

// What the process as a whole applies before any command runs (worker/main.cc), each
// as the variable spells it: RINGTRAIN_LOG_LEVEL (DEBUG, INFO, WARNING, ERROR),
// RINGTRAIN_KERNELS (auto, portable) and RINGTRAIN_CONV_ALGO (auto, direct, winograd,
// winograd2, winograd4). A value outside those is replaced by the default, and
// `warnings` says so, one line each (the process keeps running, as it always has).
struct ProcessSettings {
  std::string log_level = "INFO";
  std::string kernels = "auto";
  std::string conv_algo = "auto";
};
ProcessSettings LoadProcessSettings(std::vector<std::string>* warnings);

// Where the cluster secret comes from: RINGTRAIN_CLUSTER_SECRET (the value) or
// RINGTRAIN_CLUSTER_SECRET_FILE (a file holding it); each unset when the variable is
// unset. security::ClusterSecret::FromSource turns it into a secret. The value is
// never logged.
struct ClusterSecretSource {
  std::optional<std::string> value;
  std::optional<std::string> file;
};
ClusterSecretSource LoadClusterSecretSource();

}  // namespace ringtrain::config
