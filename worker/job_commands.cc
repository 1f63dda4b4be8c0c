// The commands that talk to a standing cluster's job queue (`ringtrain serve`),
// asked of the chief's daemon (--chief host:port, else the chief of --tf_config or
// TF_CONFIG), authenticated as every coordination call is (RINGTRAIN_CLUSTER_SECRET(_FILE),
// --tls_cert/--tls_key/--tls_ca):
//
//   submit JOB.json [--name N]   sends the job file's contents; prints the job's id
//   jobs [--json]                every job: state, times, final metrics or error
//   logs [-f] ID                 the chief's output of the job; -f follows it to its end
//   cancel ID                    a queued job is cancelled; a running one is stopped
//
// Exit codes: 0; 2 for a bad flag, a bad job file (checked here before it is sent) or a
// refusal (unknown job, a job already over, a wrong secret); 4 when the chief's daemon
// cannot be reached; `logs -f` exits with the job's own end: 0 finished, 1 failed,
// 7 cancelled. This file only wires.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "common/exit_codes.h"
#include "common/file.h"
#include "config/job_config.h"
#include "coordination/tls.h"
#include "daemon/daemon_client.h"
#include "flags.h"
#include "security/cluster_secret.h"
#include "security_setup.h"

namespace ringtrain::cli {
namespace {

const std::set<std::string> kCommonFlags = {"tf_config", "chief", "timeout_s", "tls_cert", "tls_key", "tls_ca"};

int JobExit(const Status& s) {
  PrintError(s.message().empty() ? s.ToString() : s.message());
  return s.code() == Code::kUnavailable || s.code() == Code::kDeadlineExceeded ? kExitRendezvous : kExitBadConfig;
}

// The positional argument (JOB or ID) and the flags around it; "-f" is --follow.
StatusOr<std::pair<std::string, std::vector<std::string>>> SplitPositional(const std::vector<std::string>& args,
                                                                             const std::set<std::string>& valued) {
  std::string positional;
  std::vector<std::string> rest;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-f") {
      rest.push_back("--follow");
    } else if (a.rfind("--", 0) == 0) {
      rest.push_back(a);
      if (a.find('=') == std::string::npos && valued.count(a.substr(2)) > 0 && i + 1 < args.size()) {
        rest.push_back(args[++i]);
      }
    } else if (positional.empty()) {
      positional = a;
    } else {
      return InvalidArgumentError("unexpected argument '" + a + "'");
    }
  }
  return std::make_pair(positional, rest);
}

StatusOr<int64_t> ParseJobId(const std::string& s) {
  std::string digits = s.rfind("job-", 0) == 0 ? s.substr(4) : s;
  if (digits.empty() || digits.size() > 15 || digits.find_first_not_of("0123456789") != std::string::npos) {
    return InvalidArgumentError("'" + s + "' is not a job id (ids look like 7 or job-7; `ringtrain jobs` lists them)");
  }
  return std::stoll(digits);
}

std::string DateTime(double unix_time) {
  if (unix_time <= 0) return "-";
  std::time_t t = static_cast<std::time_t>(unix_time);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%m-%d %H:%M:%S", &tm);
  return buf;
}

std::string PadColumn(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s + " ";
}

// "loss 0.0712 - accuracy 0.9790 (epoch 3)", the error, or "".
std::string Result(const nlohmann::json& j) {
  if (j.value("state", "") == "failed") return j.value("error", "");
  const nlohmann::json& m = j["final_metrics"];
  if (!m.is_object()) return "";
  std::string out;
  for (const auto& [k, v] : m.items()) {
    if (k == "epoch" || k == "lr" || !v.is_number()) continue;
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%s%s %.4f", out.empty() ? "" : " - ", k.c_str(), v.get<double>());
    out += buf;
  }
  if (m.contains("epoch") && m["epoch"].is_number()) out += " (epoch " + m["epoch"].dump() + ")";
  return out;
}

std::string JobsTable(const std::string& jobs_json) {
  auto v = nlohmann::json::parse(jobs_json, nullptr, /*allow_exceptions=*/false);
  if (v.is_discarded() || !v.contains("jobs")) return "the chief's daemon sent a list that does not read\n";
  std::string out = PadColumn("ID", 7) + PadColumn("NAME", 24) + PadColumn("STATE", 10) +
                    PadColumn("SUBMITTED", 15) + PadColumn("STARTED", 15) + PadColumn("ENDED", 15) + "RESULT\n";
  for (const nlohmann::json& j : v["jobs"]) {
    std::string state = j.value("state", "?");
    if (state == "running" && j.value("cancel_requested", false)) state = "stopping";
    out += PadColumn("job-" + std::to_string(j.value("id", 0)), 7) + PadColumn(j.value("name", ""), 24) +
           PadColumn(state, 10) + PadColumn(DateTime(j.value("submitted_s", 0.0)), 15) +
           PadColumn(DateTime(j.value("started_s", 0.0)), 15) + PadColumn(DateTime(j.value("ended_s", 0.0)), 15) +
           Result(j) + "\n";
  }
  return out;
}

int Follow(daemon::DaemonClient& client, int64_t id, bool follow) {
  int64_t offset = 0;
  while (true) {
    auto chunk = client.JobLog(id, offset);
    if (!chunk.ok()) return JobExit(chunk.status());
    std::fwrite(chunk->data.data(), 1, chunk->data.size(), stdout);
    std::fflush(stdout);
    offset += static_cast<int64_t>(chunk->data.size());
    const bool over = chunk->state == "finished" || chunk->state == "failed" || chunk->state == "cancelled";
    if (!follow || (over && offset >= chunk->size)) {
      if (!follow) return kExitOk;
      return chunk->state == "finished" ? kExitOk : chunk->state == "cancelled" ? kExitPreempted : kExitInternal;
    }
    if (offset >= chunk->size) std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}

}  // namespace

int RunJobCommand(const std::string& command, const std::vector<std::string>& args) {
  std::set<std::string> known = kCommonFlags;
  std::set<std::string> booleans;
  if (command == "submit") known.insert("name");
  if (command == "jobs") booleans.insert("json");
  if (command == "logs") booleans.insert("follow");
  auto split = SplitPositional(args, known);
  if (!split.ok()) return JobExit(split.status());
  const std::string positional = split->first;
  auto flags = Flags::Parse(split->second, known, booleans);
  if (!flags.ok()) return JobExit(flags.status());
  if (command == "jobs" && !positional.empty()) return JobExit(InvalidArgumentError("jobs takes no argument"));
  if (command != "jobs" && positional.empty()) {
    return JobExit(InvalidArgumentError(command == "submit" ? "usage: ringtrain submit JOB.json [--name N]"
                                                            : "usage: ringtrain " + command + " JOB_ID"));
  }
  auto chief = ChiefAddress(*flags);
  if (!chief.ok()) return JobExit(chief.status());
  daemon::DaemonClientOptions opts;
  opts.address = *chief;
  auto secret = LoadClusterSecret();
  if (!secret.ok()) return JobExit(secret.status());
  opts.cluster_secret = *secret;
  auto tls = coordination::LoadTlsCredentials(flags->get("tls_cert"), flags->get("tls_key"), flags->get("tls_ca"));
  if (!tls.ok()) return JobExit(tls.status());
  opts.tls = *tls;
  auto timeout_s = flags->get_int("timeout_s", 10, 1, 3600);
  if (!timeout_s.ok()) return JobExit(timeout_s.status());
  opts.timeout = std::chrono::seconds(*timeout_s);
  opts.wait_for_ready = true;  // a daemon started a moment ago is waited for, within --timeout_s
  daemon::DaemonClient client(opts);

  if (command == "submit") {
    auto text = ReadFile(positional, config::kMaxJobFileBytes, "the job file");
    if (!text.ok()) return JobExit(text.status());
    // Checked here first, so that a bad job is one line now, not a failed job later.
    const size_t slash = positional.rfind('/');
    auto job = config::ParseJobConfig(*text, slash == std::string::npos ? "." : positional.substr(0, slash));
    if (!job.ok()) return JobExit(job.status().WithContext(positional));
    std::string name = flags->get("name");
    if (name.empty()) name = slash == std::string::npos ? positional : positional.substr(slash + 1);
    auto id = client.Submit(name, *text);
    if (!id.ok()) return JobExit(id.status());
    std::fprintf(stdout, "%lld\n", static_cast<long long>(*id));
    std::fprintf(stderr, "ringtrain submit: queued %s as job-%lld\n", name.c_str(), static_cast<long long>(*id));
    return kExitOk;
  }
  if (command == "jobs") {
    auto list = client.ListJobs();
    if (!list.ok()) return JobExit(list.status());
    const std::string out = flags->has("json") ? *list + "\n" : JobsTable(*list);
    std::fputs(out.c_str(), stdout);
    return kExitOk;
  }
  auto id = ParseJobId(positional);
  if (!id.ok()) return JobExit(id.status());
  if (command == "cancel") {
    auto state = client.Cancel(*id);
    if (!state.ok()) return JobExit(state.status());
    std::fprintf(stdout, "job-%lld %s\n", static_cast<long long>(*id),
                 *state == "cancelled" ? "cancelled" : "is being stopped (its daemons stop it at a step boundary)");
    return kExitOk;
  }
  return Follow(client, *id, flags->has("follow"));
}

}  // namespace ringtrain::cli
