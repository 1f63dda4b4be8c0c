#include "coordination/status_json.h"

#include <cstdio>

#include <nlohmann/json.hpp>

namespace ringtrain::coordination {
namespace {

// In the schema's order (docs/guide/watching.md), not sorted: easier to read by eye.
using OrderedJson = nlohmann::ordered_json;

OrderedJson OrNull(bool known, OrderedJson value) { return known ? std::move(value) : OrderedJson(nullptr); }

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

OrderedJson JobJson(const JobProgress& j) {
  const bool k = j.known();
  return {{"epoch", OrNull(k, j.epoch())},
          {"epochs", OrNull(k, j.epochs())},
          {"step", OrNull(k, j.step())},
          {"steps_per_epoch", OrNull(k, j.steps_per_epoch())},
          {"global_step", OrNull(k, j.global_step())},
          {"total_steps", OrNull(k, j.total_steps())},
          {"images_per_sec", OrNull(k, j.images_per_sec())},
          {"eta_s", OrNull(k && j.eta_s() >= 0, j.eta_s())},
          {"loss", OrNull(k, j.loss())},
          {"accuracy", OrNull(k, j.accuracy())},
          {"last_backup_step", OrNull(j.last_backup_step() >= 0, j.last_backup_step())},
          {"last_backup_age_s", OrNull(j.last_backup_step() >= 0, j.last_backup_age_s())},
          {"generation", OrNull(j.generation() >= 0, j.generation())}};
}

OrderedJson TaskJson(const TaskStatus& t) {
  const bool p = t.has_progress();
  const TaskProgress& pr = t.progress();
  const bool trains = p && pr.rank() >= 0;  // rank -1: a task outside the ring (the evaluator)
  return {{"task", t.task()},
          {"state", OrNull(!t.state().empty(), t.state())},
          {"host", OrNull(!t.host().empty(), t.host())},
          {"incarnation", OrNull(t.incarnation() != 0, Hex(t.incarnation()))},
          {"generation", OrNull(t.generation() >= 0, t.generation())},
          {"step", OrNull(p, pr.global_step())},
          {"heartbeat_age_s", OrNull(t.heartbeat_age_s() >= 0, t.heartbeat_age_s())},
          {"compute_s", OrNull(trains, pr.compute_s())},
          {"input_wait_s", OrNull(trains, pr.input_wait_s())},
          {"allreduce_wait_s", OrNull(trains, pr.allreduce_wait_s())},
          {"loss", OrNull(p, pr.loss())},
          {"accuracy", OrNull(p, pr.accuracy())},
          {"images_per_sec", OrNull(trains, pr.images_per_sec())},
          {"straggler", t.straggler()},
          {"failure_reason", OrNull(!t.failure_reason().empty(), t.failure_reason())},
          {"hosted_by", OrNull(!t.hosted_by().empty(), t.hosted_by())},
          {"virtual_ranks", trains ? OrderedJson::array({pr.rank()}) : OrderedJson(nullptr)}};
}

}  // namespace

std::string StatusToJson(const GetStatusResponse& status, int indent) {
  OrderedJson tasks = OrderedJson::array(), events = OrderedJson::array(), stragglers = OrderedJson::array();
  for (const TaskStatus& t : status.tasks()) tasks.push_back(TaskJson(t));
  for (const StatusEvent& e : status.events()) {
    events.push_back({{"unix_time", e.unix_time()},
                      {"kind", e.kind()},
                      {"task", OrNull(!e.task().empty(), e.task())},
                      {"message", e.message()}});
  }
  for (const Straggler& s : status.stragglers()) {
    stragglers.push_back({{"task", s.task()},
                          {"compute_s", s.compute_s()},
                          {"median_compute_s", s.median_compute_s()},
                          {"steps", s.steps()}});
  }
  OrderedJson out = {{"unix_time", status.unix_time()},
              {"job", JobJson(status.job())},
              {"tasks", std::move(tasks)},
              {"events", std::move(events)},
              {"stragglers", std::move(stragglers)}};
  // Task names and messages come from the cluster; replace anything not UTF-8 rather than throw.
  return out.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace ringtrain::coordination
