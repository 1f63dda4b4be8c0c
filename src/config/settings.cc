#include "config/settings.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <sstream>

namespace ringtrain::config {

const std::vector<SettingInfo>& SettingTable() {
  static const std::vector<SettingInfo> table = {
      {"RINGTRAIN_RENDEZVOUS_TIMEOUT_S", "300"},
      {"RINGTRAIN_HEARTBEAT_INTERVAL_MS", "1000"},
      {"RINGTRAIN_HEARTBEAT_TIMEOUT_MS", "10000"},
      {"RINGTRAIN_COLLECTIVE_TIMEOUT_S", "300"},
      {"RINGTRAIN_SHUTDOWN_TIMEOUT_S", "60"},
      {"RINGTRAIN_PREEMPT_GRACE_S", "25"},
      {"RINGTRAIN_EVALUATOR_TIMEOUT_S", "3600"},
      {"RINGTRAIN_NUM_THREADS", "0"},
      {"RINGTRAIN_JOB_PORT_SPAN", "16"},
      {"RINGTRAIN_CHUNK_BYTES", "262144"},
      {"RINGTRAIN_STRAGGLER_SHARE", "0.2"},
      {"RINGTRAIN_STRAGGLER_STEPS", "10"},
      {"RINGTRAIN_FAULT_COMPUTE_DELAY_MS", "0"},
      {"RINGTRAIN_METRICS_PORT", "0"},
      {"RINGTRAIN_MAX_MEMORY_MB", "physical memory"},
      {"RINGTRAIN_ALLOW_INSECURE", "0"},
      {"RINGTRAIN_BIND_ALL", "0"},
      {"RINGTRAIN_CHECK_PEER_ADDRESS", "1"},
      {"RINGTRAIN_DATA_HOST", "the task's host"},
      {"RINGTRAIN_PROGRESS", "auto"},
      {"RINGTRAIN_TRANSPORT", "auto"},
      {"RINGTRAIN_LOG_LEVEL", "INFO"},
      {"RINGTRAIN_KERNELS", "auto"},
      {"RINGTRAIN_CONV_ALGO", "auto"},
      {"RINGTRAIN_CLUSTER_SECRET", "none"},
      {"RINGTRAIN_CLUSTER_SECRET_FILE", "none"},
  };
  return table;
}

namespace {

// The one reader of RINGTRAIN_* variables: only names in SettingTable() (nullptr for
// any other, which tests/config/settings_table_test.cc keeps from happening).
const char* Env(const char* name) {
  const auto& t = SettingTable();
  if (std::none_of(t.begin(), t.end(), [&](const SettingInfo& i) { return i.name == name; })) return nullptr;
  return std::getenv(name);
}

// Durations beyond a year are no deadline at all, and would overflow the deadline
// arithmetic (milliseconds in 64 bits) near 10^16 seconds.
constexpr double kMaxSeconds = 365.0 * 24 * 3600;

Status ReadDouble(const char* name, double min, double max, double* out) {
  const char* v = Env(name);
  if (v == nullptr || *v == '\0') return Status::Ok();
  char* end = nullptr;
  double d = std::strtod(v, &end);
  // !(d >= min) also refuses NaN; strtod gives inf for "inf" and for 1e400.
  if (end == v || *end != '\0' || !(d >= min) || !(d <= max)) {
    std::ostringstream range;
    range << "a number from " << min << " to " << max;
    return InvalidArgumentError(std::string(name) + "='" + v + "' is not " + range.str()).About(Subject::kConfig);
  }
  *out = d;
  return Status::Ok();
}

Status ReadInt(const char* name, int min, int max, int* out) {
  double d = *out;
  RT_RETURN_IF_ERROR(ReadDouble(name, min, max, &d));  // within [min, max]: the cast below is exact
  if (d != static_cast<int>(d)) {
    return InvalidArgumentError(std::string(name) + " must be an integer").About(Subject::kConfig);
  }
  *out = static_cast<int>(d);
  return Status::Ok();
}

// This machine's physical memory in MiB (sysconf), or 0 when it cannot be told.
uint64_t PhysicalMemoryMiB() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 0;
  return static_cast<uint64_t>(pages) / (uint64_t{1} << 20) * static_cast<uint64_t>(page) +
         static_cast<uint64_t>(pages) % (uint64_t{1} << 20) * static_cast<uint64_t>(page) / (uint64_t{1} << 20);
}

Status ReadBool(const char* name, bool* out) {
  const char* v = Env(name);
  if (v == nullptr || *v == '\0') return Status::Ok();
  std::string t(v);
  if (t == "1" || t == "true") {
    *out = true;
  } else if (t == "0" || t == "false") {
    *out = false;
  } else {
    return InvalidArgumentError(std::string(name) + "='" + t + "' must be 1 or 0").About(Subject::kConfig);
  }
  return Status::Ok();
}

}  // namespace

StatusOr<Settings> LoadSettings() {
  Settings s;
  constexpr int kMaxInt = std::numeric_limits<int>::max();
  RT_RETURN_IF_ERROR(ReadDouble("RINGTRAIN_RENDEZVOUS_TIMEOUT_S", 0.1, kMaxSeconds, &s.rendezvous_timeout_s));
  RT_RETURN_IF_ERROR(ReadInt("RINGTRAIN_HEARTBEAT_INTERVAL_MS", 10, kMaxInt, &s.heartbeat_interval_ms));
  RT_RETURN_IF_ERROR(ReadInt("RINGTRAIN_HEARTBEAT_TIMEOUT_MS", 50, kMaxInt, &s.heartbeat_timeout_ms));
  RT_RETURN_IF_ERROR(ReadDouble("RINGTRAIN_COLLECTIVE_TIMEOUT_S", 0.1, kMaxSeconds, &s.collective_timeout_s));
  RT_RETURN_IF_ERROR(ReadDouble("RINGTRAIN_SHUTDOWN_TIMEOUT_S", 0.1, kMaxSeconds, &s.shutdown_timeout_s));
  RT_RETURN_IF_ERROR(ReadDouble("RINGTRAIN_PREEMPT_GRACE_S", 0.1, kMaxSeconds, &s.preempt_grace_s));
  RT_RETURN_IF_ERROR(ReadDouble("RINGTRAIN_EVALUATOR_TIMEOUT_S", 0.1, kMaxSeconds, &s.evaluator_timeout_s));
  RT_RETURN_IF_ERROR(ReadInt("RINGTRAIN_NUM_THREADS", 0, 4096, &s.num_threads));
  RT_RETURN_IF_ERROR(ReadInt("RINGTRAIN_JOB_PORT_SPAN", 1, 1000, &s.job_port_span));
  RT_RETURN_IF_ERROR(ReadInt("RINGTRAIN_CHUNK_BYTES", 4096, 1 << 30, &s.chunk_bytes));
  RT_RETURN_IF_ERROR(ReadDouble("RINGTRAIN_STRAGGLER_SHARE", 0.0, 1000.0, &s.straggler_share));
  RT_RETURN_IF_ERROR(ReadInt("RINGTRAIN_STRAGGLER_STEPS", 1, 1000000, &s.straggler_steps));
  RT_RETURN_IF_ERROR(ReadInt("RINGTRAIN_FAULT_COMPUTE_DELAY_MS", 0, 3600 * 1000, &s.fault_compute_delay_ms));
  RT_RETURN_IF_ERROR(ReadInt("RINGTRAIN_METRICS_PORT", 0, 65535, &s.metrics_port));
  s.max_memory_mb = PhysicalMemoryMiB();
  if (const char* v = Env("RINGTRAIN_MAX_MEMORY_MB"); v != nullptr && *v != '\0') {
    double mb = 0;
    RT_RETURN_IF_ERROR(ReadDouble("RINGTRAIN_MAX_MEMORY_MB", 1, 1e12, &mb));
    s.max_memory_mb = static_cast<uint64_t>(mb);
    s.max_memory_from_environment = true;
  }
  RT_RETURN_IF_ERROR(ReadBool("RINGTRAIN_ALLOW_INSECURE", &s.allow_insecure));
  RT_RETURN_IF_ERROR(ReadBool("RINGTRAIN_BIND_ALL", &s.bind_all));
  RT_RETURN_IF_ERROR(ReadBool("RINGTRAIN_CHECK_PEER_ADDRESS", &s.check_peer_address));
  if (const char* v = Env("RINGTRAIN_DATA_HOST")) s.data_host = v;
  // "stream" (the bar as marked lines, train/progress.h) is what launch sets for its chief.
  if (const char* v = Env("RINGTRAIN_PROGRESS")) {
    s.progress = v;
    if (s.progress != "auto" && s.progress != "bar" && s.progress != "lines" && s.progress != "stream") {
      return InvalidArgumentError("RINGTRAIN_PROGRESS must be auto, bar, lines or stream (set by launch), not '" + s.progress + "'")
          .About(Subject::kConfig);
    }
  }
  if (const char* v = Env("RINGTRAIN_TRANSPORT")) {
    s.transport = v;
    if (s.transport != "auto" && s.transport != "tcp") {
      return InvalidArgumentError("RINGTRAIN_TRANSPORT must be auto or tcp, not '" + s.transport + "'")
          .About(Subject::kConfig);
    }
  }
  if (s.heartbeat_timeout_ms <= s.heartbeat_interval_ms) {
    return InvalidArgumentError("RINGTRAIN_HEARTBEAT_TIMEOUT_MS must be larger than RINGTRAIN_HEARTBEAT_INTERVAL_MS")
        .About(Subject::kConfig);
  }
  return s;
}

MemoryBound MemoryBoundOf(const Settings& s) {
  MemoryBound b;
  b.bytes = SatMul(s.max_memory_mb, uint64_t{1} << 20);
  b.from_environment = s.max_memory_from_environment;
  return b;
}

std::string Describe(const Settings& s) {
  Settings d;
  std::ostringstream o;
  o << "settings: RINGTRAIN_RENDEZVOUS_TIMEOUT_S=" << s.rendezvous_timeout_s << " (default " << d.rendezvous_timeout_s
    << "), RINGTRAIN_HEARTBEAT_INTERVAL_MS=" << s.heartbeat_interval_ms << " (default " << d.heartbeat_interval_ms
    << "), RINGTRAIN_HEARTBEAT_TIMEOUT_MS=" << s.heartbeat_timeout_ms << " (default " << d.heartbeat_timeout_ms
    << "), RINGTRAIN_COLLECTIVE_TIMEOUT_S=" << s.collective_timeout_s << " (default " << d.collective_timeout_s
    << "), RINGTRAIN_SHUTDOWN_TIMEOUT_S=" << s.shutdown_timeout_s << " (default " << d.shutdown_timeout_s
    << "), RINGTRAIN_PREEMPT_GRACE_S=" << s.preempt_grace_s << " (default " << d.preempt_grace_s
    << "), RINGTRAIN_NUM_THREADS=" << s.num_threads << " (default 0 = auto), RINGTRAIN_DATA_HOST='" << s.data_host
    << "' (default: the task's own host), RINGTRAIN_TRANSPORT=" << s.transport
    << " (default auto), RINGTRAIN_CHUNK_BYTES=" << s.chunk_bytes << " (default " << d.chunk_bytes << "), RINGTRAIN_PROGRESS=" << s.progress << " (default auto)"
    << ", RINGTRAIN_STRAGGLER_SHARE=" << s.straggler_share << " (default " << d.straggler_share
    << "), RINGTRAIN_STRAGGLER_STEPS=" << s.straggler_steps << " (default " << d.straggler_steps << ")"
    << (s.fault_compute_delay_ms > 0 ? ", RINGTRAIN_FAULT_COMPUTE_DELAY_MS=" + std::to_string(s.fault_compute_delay_ms) +
                                           " (testing: every step is slowed by as much)"
                                     : std::string())
    << ", RINGTRAIN_ALLOW_INSECURE=" << s.allow_insecure << " (default 0), RINGTRAIN_BIND_ALL=" << s.bind_all
    << " (default 0), RINGTRAIN_CHECK_PEER_ADDRESS=" << s.check_peer_address << " (default 1)"
    << ", RINGTRAIN_JOB_PORT_SPAN=" << s.job_port_span << " (default " << d.job_port_span << ")"
    << ", RINGTRAIN_EVALUATOR_TIMEOUT_S=" << s.evaluator_timeout_s << " (default " << d.evaluator_timeout_s << ")"
    << ", RINGTRAIN_MAX_MEMORY_MB=" << s.max_memory_mb << " (default: this machine's physical memory, "
    << PhysicalMemoryMiB() << ")";
  o << ", RINGTRAIN_METRICS_PORT=" << s.metrics_port << " (default 0 = off)";
  return o.str();
}

namespace {

// `name`'s value when it is one of `allowed`; otherwise `fallback`, and a warning
// when the variable was set to something else.
std::string OneOf(const char* name, std::initializer_list<const char*> allowed, const char* fallback,
                  std::vector<std::string>* warnings) {
  const char* v = Env(name);
  if (v == nullptr || *v == '\0') return fallback;
  for (const char* a : allowed) {
    if (std::string_view(v) == a) return v;
  }
  if (warnings != nullptr) {
    std::string list;
    for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
    warnings->push_back(std::string(name) + "=" + v + " is not one of " + list + ": using " + fallback);
  }
  return fallback;
}

}  // namespace

ProcessSettings LoadProcessSettings(std::vector<std::string>* warnings) {
  ProcessSettings p;
  p.log_level = OneOf("RINGTRAIN_LOG_LEVEL", {"DEBUG", "INFO", "WARNING", "ERROR"}, "INFO", warnings);
  p.kernels = OneOf("RINGTRAIN_KERNELS", {"auto", "portable"}, "auto", warnings);
  p.conv_algo =
      OneOf("RINGTRAIN_CONV_ALGO", {"auto", "direct", "winograd", "winograd2", "winograd4"}, "auto", warnings);
  return p;
}

ClusterSecretSource LoadClusterSecretSource() {
  ClusterSecretSource s;
  if (const char* v = Env("RINGTRAIN_CLUSTER_SECRET")) s.value = v;
  if (const char* v = Env("RINGTRAIN_CLUSTER_SECRET_FILE")) s.file = v;
  return s;
}

}  // namespace ringtrain::config
