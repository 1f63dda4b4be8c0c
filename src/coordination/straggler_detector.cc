#include "coordination/straggler_detector.h"

#include <algorithm>
#include <cstdio>
#include <utility>

namespace ringtrain::coordination {
namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

template <class... Args>
std::string Format(const char* fmt, Args... args) {
  char buf[160];
  std::snprintf(buf, sizeof(buf), fmt, args...);
  return buf;
}

}  // namespace

std::string StragglerChange::Line() const {
  const double ratio = info.median_compute_s > 0 ? info.compute_s / info.median_compute_s : 0.0;
  if (kind == Kind::kNamed) {
    return "straggler: " + info.task +
           Format(" computes %.3f s per step, %.1fx the median %.3f s", info.compute_s, ratio, info.median_compute_s) +
           ", for " + std::to_string(info.steps) + " steps";
  }
  return "straggler: " + info.task + " recovered after " + std::to_string(info.steps) +
         " slow steps" + Format(": %.3f s per step, the median %.3f s", info.compute_s, info.median_compute_s);
}

StragglerDetector::StragglerDetector(std::vector<std::string> tasks, StragglerSettings settings)
    : tasks_(std::move(tasks)), settings_(settings) {}

std::vector<StragglerChange> StragglerDetector::Add(const std::string& task, int64_t step, double compute_s) {
  if (tasks_.size() < 2 || std::find(tasks_.begin(), tasks_.end(), task) == tasks_.end()) return {};
  auto& times = pending_[step];
  times[task] = compute_s;
  if (times.size() < tasks_.size()) {
    if (pending_.size() > kMaxPendingSteps) pending_.erase(pending_.begin());
    return {};
  }
  std::map<std::string, double> complete = std::move(times);
  // Earlier steps still incomplete were skipped by some task: they never will be.
  pending_.erase(pending_.begin(), std::next(pending_.find(step)));
  return Judge(complete);
}

std::vector<StragglerChange> StragglerDetector::Judge(const std::map<std::string, double>& times) {
  std::vector<double> values;
  for (const auto& [task, s] : times) values.push_back(s);
  const double median = Median(values);
  std::vector<StragglerChange> changes;
  for (const std::string& task : tasks_) {  // in rank order, so changes come in a stable order
    const double s = times.at(task);
    scores_[task] = median > 0 ? s / median : 1.0;
    Run& run = runs_[task];
    const bool slow = s > median * (1.0 + settings_.share) && s - median > kNoiseFloorSeconds;
    if (slow) {
      ++run.slow_steps;
      run.sum_compute += s;
      run.sum_median += median;
      if (!run.named && run.slow_steps >= settings_.steps) {
        run.named = true;
        StragglerInfo info{task, run.sum_compute / run.slow_steps, run.sum_median / run.slow_steps, run.slow_steps};
        changes.push_back({StragglerChange::Kind::kNamed, info});
      }
      continue;
    }
    if (run.named) changes.push_back({StragglerChange::Kind::kRecovered, StragglerInfo{task, s, median, run.slow_steps}});
    run = Run{};
  }
  return changes;
}

std::vector<StragglerInfo> StragglerDetector::Stragglers() const {
  std::vector<StragglerInfo> out;
  for (const std::string& task : tasks_) {
    auto it = runs_.find(task);
    if (it == runs_.end() || !it->second.named) continue;
    const Run& r = it->second;
    out.push_back({task, r.sum_compute / r.slow_steps, r.sum_median / r.slow_steps, r.slow_steps});
  }
  return out;
}

bool StragglerDetector::IsStraggler(const std::string& task) const {
  auto it = runs_.find(task);
  return it != runs_.end() && it->second.named;
}

}  // namespace ringtrain::coordination
