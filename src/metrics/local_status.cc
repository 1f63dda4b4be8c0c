#include "metrics/local_status.h"

#include <nlohmann/json.hpp>

namespace ringtrain::metrics {
namespace {

constexpr size_t kRateWindow = 20;  // steps
constexpr size_t kMaxEvents = 20;

}  // namespace

LocalStatus::LocalStatus(std::string task, std::string host, std::vector<std::pair<std::string, std::string>> cluster)
    : task_(std::move(task)), host_(std::move(host)), cluster_(std::move(cluster)) {}

void LocalStatus::OnStep(const train::StepReport& r) {
  std::lock_guard<std::mutex> lock(mu_);
  last_ = r;
  has_step_ = true;
  state_ = "running";
  window_.push_back({r.unix_time, static_cast<double>(r.examples) * r.num_workers});
  if (window_.size() > kRateWindow) window_.pop_front();
}

void LocalStatus::OnBackup(int64_t global_step, double unix_time) {
  std::lock_guard<std::mutex> lock(mu_);
  last_backup_step_ = global_step;
  last_backup_time_ = unix_time;
}

void LocalStatus::OnGeneration(int64_t generation) {
  std::lock_guard<std::mutex> lock(mu_);
  generation_ = generation;
}

void LocalStatus::AddEvent(double unix_time, const std::string& kind, const std::string& message) {
  std::lock_guard<std::mutex> lock(mu_);
  events_.push_back({unix_time, kind, message});
  if (events_.size() > kMaxEvents) events_.pop_front();
}

void LocalStatus::SetState(const std::string& state) {
  std::lock_guard<std::mutex> lock(mu_);
  state_ = state;
}

std::string LocalStatus::Json(double now) const {
  using nlohmann::json;
  std::lock_guard<std::mutex> lock(mu_);
  const json null = nullptr;
  json job = {{"epoch", null},        {"epochs", null},           {"step", null},
              {"steps_per_epoch", null}, {"global_step", null},   {"total_steps", null},
              {"images_per_sec", null}, {"eta_s", null},          {"loss", null},
              {"accuracy", null},      {"last_backup_step", null}, {"last_backup_age_s", null},
              {"generation", generation_ >= 0 ? json(generation_) : null}};
  json row = {{"task", task_},
              {"state", state_},
              {"host", host_.empty() ? null : json(host_)},
              {"incarnation", null},
              {"generation", generation_ >= 0 ? json(generation_) : null},
              {"step", null},
              {"heartbeat_age_s", null},
              {"compute_s", null},
              {"input_wait_s", null},
              {"allreduce_wait_s", null},
              {"straggler", null},
              {"virtual_ranks", null}};
  if (has_step_) {
    const train::StepReport& r = last_;
    const int64_t total = static_cast<int64_t>(r.epochs) * r.steps;
    job["epoch"] = r.epoch;
    job["epochs"] = r.epochs;
    job["step"] = r.step;
    job["steps_per_epoch"] = r.steps;
    job["global_step"] = r.global_step;
    job["total_steps"] = total;
    job["loss"] = r.loss;
    job["accuracy"] = r.accuracy;
    if (window_.size() >= 2) {
      const double span = window_.back().unix_time - window_.front().unix_time;
      double examples = 0;
      for (size_t i = 1; i < window_.size(); ++i) examples += window_[i].examples;
      if (span > 0) {
        job["images_per_sec"] = examples / span;
        const double step_s = span / static_cast<double>(window_.size() - 1);
        job["eta_s"] = static_cast<double>(std::max<int64_t>(0, total - r.global_step)) * step_s;
      }
    }
    row["step"] = r.global_step;
    row["compute_s"] = r.compute_seconds;
    row["input_wait_s"] = r.input_wait_seconds;
    row["allreduce_wait_s"] = r.comm_wait_seconds;
    row["virtual_ranks"] = json::array({r.rank});
  }
  if (last_backup_step_ >= 0) {
    job["last_backup_step"] = last_backup_step_;
    job["last_backup_age_s"] = std::max(0.0, now - last_backup_time_);
  }
  json events = json::array();
  for (const Event& e : events_) {
    events.push_back({{"unix_time", e.unix_time}, {"kind", e.kind}, {"task", task_}, {"message", e.message}});
  }
  json tasks = json::array();
  bool listed = false;
  for (const auto& [name, host] : cluster_) {
    if (name == task_) {
      tasks.push_back(row);
      listed = true;
      continue;
    }
    json other = row;
    for (auto& value : other) value = nullptr;
    other["task"] = name;
    other["host"] = host;
    tasks.push_back(other);
  }
  if (!listed) tasks.insert(tasks.begin(), row);
  json out = {{"job", job}, {"tasks", tasks}, {"events", events}, {"stragglers", json::array()}};
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace ringtrain::metrics
