// `ringtrain status [--tf_config JSON|FILE | --chief host:port] [--watch [--interval_s S]]
// [--json]`: asks the chief's coordination service how the run is going (GetStatus)
// and prints a table of the tasks, the job's progress, the stragglers and the last
// events; --json prints the status JSON (coordination/status_json.h). The cluster
// secret and TLS are read as a worker reads them (RINGTRAIN_CLUSTER_SECRET(_FILE),
// --tls_cert/--tls_key/--tls_ca). An unreachable chief is one line and exit 4.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "common/exit_codes.h"
#include "config/tf_config.h"
#include "coordination/status_client.h"
#include "coordination/status_json.h"
#include "coordination/tls.h"
#include "flags.h"
#include "security/cluster_secret.h"
#include "security_setup.h"

namespace ringtrain::cli {
namespace {

std::string Fmt(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

std::string Duration(double s) {
  if (s < 0) return "?";
  const long t = static_cast<long>(s + 0.5);
  char buf[32];
  if (t >= 3600) {
    std::snprintf(buf, sizeof(buf), "%ldh%02ldm", t / 3600, t / 60 % 60);
  } else if (t >= 60) {
    std::snprintf(buf, sizeof(buf), "%ldm%02lds", t / 60, t % 60);
  } else {
    std::snprintf(buf, sizeof(buf), "%lds", t);
  }
  return buf;
}

std::string Pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

std::string TimeOfDay(double unix_time) {
  std::time_t t = static_cast<std::time_t>(unix_time);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%H:%M:%S", &tm);
  return buf;
}

std::string JobLine(const coordination::GetStatusResponse& r) {
  const coordination::JobProgress& j = r.job();
  std::string line = "job: ";
  if (!j.known()) {
    line += "no step completed yet";
  } else {
    line += "epoch " + std::to_string(j.epoch()) + "/" + std::to_string(j.epochs()) + ", step " +
            std::to_string(j.step()) + "/" + std::to_string(j.steps_per_epoch()) + " (global " +
            std::to_string(j.global_step()) + "/" + std::to_string(j.total_steps()) + "), " +
            Fmt("%.1f", j.images_per_sec()) + " images/s, ETA " + Duration(j.eta_s()) + ", loss " +
            Fmt("%.4f", j.loss()) + ", accuracy " + Fmt("%.4f", j.accuracy());
  }
  line += j.last_backup_step() >= 0
              ? ", last backup step " + std::to_string(j.last_backup_step()) + " (" +
                    Fmt("%.1f", j.last_backup_age_s()) + " s ago)"
              : ", no backup yet";
  line += ", generation " + (j.generation() >= 0 ? std::to_string(j.generation()) : std::string("none yet"));
  return line;
}

std::string Table(const coordination::GetStatusResponse& r) {
  const std::vector<std::pair<std::string, size_t>> cols = {
      {"TASK", 13}, {"STATE", 11}, {"HOST", 22}, {"INCARNATION", 13}, {"GEN", 5}, {"STEP", 8},
      {"HEARTBEAT", 11}, {"COMPUTE", 10}, {"INPUT", 10}, {"ALLREDUCE", 11}, {"", 0}};
  std::string out = JobLine(r) + "\n\n";
  std::string header;
  for (const auto& [name, w] : cols) header += Pad(name, w);
  while (!header.empty() && header.back() == ' ') header.pop_back();
  out += header + "\n";
  for (const coordination::TaskStatus& t : r.tasks()) {
    const bool p = t.has_progress();
    const bool trains = p && t.progress().rank() >= 0;  // rank -1: the evaluator
    char inc[24];
    std::snprintf(inc, sizeof(inc), "%08llx", static_cast<unsigned long long>(t.incarnation() >> 32));
    const std::vector<std::string> cells = {
        t.task(),
        t.state().empty() ? "-" : t.state(),
        !t.hosted_by().empty() ? "in " + t.hosted_by() + "'s process" : t.host().empty() ? "-" : t.host(),
        t.incarnation() != 0 ? inc : "-",
        t.generation() >= 0 ? std::to_string(t.generation()) : "-",
        p ? std::to_string(t.progress().global_step()) : "-",
        t.heartbeat_age_s() >= 0 ? Fmt("%.1f s", t.heartbeat_age_s()) : "-",
        trains ? Fmt("%.1f ms", t.progress().compute_s() * 1000) : "-",
        trains ? Fmt("%.1f ms", t.progress().input_wait_s() * 1000) : "-",
        trains ? Fmt("%.1f ms", t.progress().allreduce_wait_s() * 1000) : "-",
        t.straggler() ? "STRAGGLER" : ""};
    std::string row;
    for (size_t i = 0; i < cells.size(); ++i) row += Pad(cells[i], cols[i].second);
    while (!row.empty() && row.back() == ' ') row.pop_back();
    out += row + "\n";
    if (!t.failure_reason().empty()) out += "    " + t.failure_reason() + "\n";
    if (p && !trains) {
      out += "    last evaluation: epoch " + std::to_string(t.progress().epoch()) + " (step " +
             std::to_string(t.progress().global_step()) + ") - loss: " + Fmt("%.4f", t.progress().loss()) +
             " - accuracy: " + Fmt("%.4f", t.progress().accuracy()) + "\n";
    }
  }
  for (const coordination::Straggler& s : r.stragglers()) {
    out += "\nstraggler: " + s.task() + " computes " + Fmt("%.3f s", s.compute_s()) + " per step, " +
           Fmt("%.1fx", s.median_compute_s() > 0 ? s.compute_s() / s.median_compute_s() : 0.0) + " the median " +
           Fmt("%.3f s", s.median_compute_s()) + ", for " + std::to_string(s.steps()) + " steps";
  }
  if (r.stragglers_size() > 0) out += "\n";
  if (r.events_size() > 0) {
    out += "\nevents:\n";
    const int first = std::max(0, r.events_size() - 10);
    for (int i = first; i < r.events_size(); ++i) {
      const coordination::StatusEvent& e = r.events(i);
      out += "  " + TimeOfDay(e.unix_time()) + "  " + Pad(e.kind(), 12) + e.message() + "\n";
    }
  }
  return out;
}

int StatusExit(const Status& s) {
  PrintError(s.message().empty() ? s.ToString() : s.message());
  return s.code() == Code::kUnavailable || s.code() == Code::kDeadlineExceeded ? kExitRendezvous : kExitBadConfig;
}

}  // namespace

// The chief's address: --chief, else the chief of --tf_config / TF_CONFIG (which need
// not name this caller's task).
StatusOr<std::string> ChiefAddress(const Flags& flags) {
  if (flags.has("chief")) {
    if (flags.has("tf_config")) return InvalidArgumentError("give --chief or --tf_config, not both");
    return flags.get("chief");
  }
  std::string text;
  if (flags.has("tf_config")) {
    RT_ASSIGN_OR_RETURN(text, config::ReadTfConfigText(flags.get("tf_config")));
  } else {
    const char* env = std::getenv("TF_CONFIG");
    if (env == nullptr || *env == '\0') {
      return InvalidArgumentError("no chief to ask: give --chief host:port or --tf_config, or set TF_CONFIG");
    }
    text = env;
  }
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && !j.contains("task")) {
    j["task"] = {{"type", j.contains("cluster") && j["cluster"].is_object() && j["cluster"].contains("chief")
                              ? "chief"
                              : "worker"},
                 {"index", 0}};
    text = j.dump();
  }
  RT_ASSIGN_OR_RETURN(config::ClusterSpec spec, config::ParseTfConfig(text));
  return spec.address(spec.chief()).ToString();
}

int RunStatus(const std::vector<std::string>& args) {
  auto flags = Flags::Parse(args, {"tf_config", "chief", "interval_s", "timeout_s", "tls_cert",
                                   "tls_key", "tls_ca"},
                            {"watch", "json"});
  if (!flags.ok()) return StatusExit(flags.status());
  auto chief = ChiefAddress(*flags);
  if (!chief.ok()) return StatusExit(chief.status());
  coordination::StatusClientOptions opts;
  opts.chief_address = *chief;
  auto secret = LoadClusterSecret();
  if (!secret.ok()) return StatusExit(secret.status());
  opts.cluster_secret = *secret;
  auto tls = coordination::LoadTlsCredentials(flags->get("tls_cert"), flags->get("tls_key"), flags->get("tls_ca"));
  if (!tls.ok()) return StatusExit(tls.status());
  opts.tls = *tls;
  auto timeout_s = flags->get_int("timeout_s", 5, 1, 3600);
  if (!timeout_s.ok()) return StatusExit(timeout_s.status());
  opts.timeout = std::chrono::seconds(*timeout_s);
  auto interval_s = flags->get_int("interval_s", 2, 1, 3600);
  if (!interval_s.ok()) return StatusExit(interval_s.status());
  const bool watch = flags->has("watch"), json = flags->has("json");
  const bool terminal = ::isatty(STDOUT_FILENO) == 1;
  while (true) {
    auto status = coordination::GetClusterStatus(opts);
    if (!status.ok()) return StatusExit(status.status());
    std::string text = json ? coordination::StatusToJson(*status, watch ? -1 : 2) + "\n" : Table(*status);
    if (watch && terminal) text = "\x1b[H\x1b[2J" + text;  // redraw in place
    if (watch && !terminal && !json) text += "\n";
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
    if (!watch) return kExitOk;
    std::this_thread::sleep_for(std::chrono::seconds(*interval_s));
  }
}

}  // namespace ringtrain::cli
