#include "metrics/step_history.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace ringtrain::metrics {

StepHistory::StepHistory(size_t max_points) : max_points_(std::max<size_t>(max_points, 2)) {}

void StepHistory::Merge(Point& into, const Point& later) {
  into.step = later.step;
  into.loss_sum += later.loss_sum;
  into.accuracy_sum += later.accuracy_sum;
  into.examples += later.examples;
  into.seconds += later.seconds;
  into.n += later.n;
}

void StepHistory::AddStep(int64_t global_step, double loss, double accuracy, double examples, double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  Merge(pending_, Point{global_step, loss, accuracy, examples, seconds, 1});
  if (pending_.n < stride_) return;
  points_.push_back(pending_);
  pending_ = Point{};
  if (points_.size() < max_points_) return;
  // Full: halve the resolution.
  std::vector<Point> merged;
  merged.reserve(max_points_ / 2 + 1);
  for (size_t i = 0; i < points_.size(); i += 2) {
    Point p = points_[i];
    if (i + 1 < points_.size()) Merge(p, points_[i + 1]);
    merged.push_back(p);
  }
  points_ = std::move(merged);
  stride_ *= 2;
}

void StepHistory::AddEpoch(int epoch, double loss, double accuracy, double images_per_sec, bool has_val,
                           double val_loss, double val_accuracy) {
  std::lock_guard<std::mutex> lock(mu_);
  epochs_.push_back({epoch, loss, accuracy, images_per_sec, has_val, val_loss, val_accuracy});
}

size_t StepHistory::points() const {
  std::lock_guard<std::mutex> lock(mu_);
  return points_.size() + (pending_.n > 0 ? 1 : 0);
}

std::string StepHistory::Json() const {
  using nlohmann::json;
  std::lock_guard<std::mutex> lock(mu_);
  json points = json::array();
  auto add = [&](const Point& p) {
    const double n = static_cast<double>(p.n);
    points.push_back({{"step", p.step},
                      {"loss", p.loss_sum / n},
                      {"accuracy", p.accuracy_sum / n},
                      {"images_per_sec", p.seconds > 0 ? json(p.examples / p.seconds) : json(nullptr)}});
  };
  for (const Point& p : points_) add(p);
  if (pending_.n > 0) add(pending_);
  json epochs = json::array();
  for (const Epoch& e : epochs_) {
    epochs.push_back({{"epoch", e.epoch},
                      {"loss", e.loss},
                      {"accuracy", e.accuracy},
                      {"images_per_sec", e.images_per_sec},
                      {"val_loss", e.has_val ? json(e.val_loss) : json(nullptr)},
                      {"val_accuracy", e.has_val ? json(e.val_accuracy) : json(nullptr)}});
  }
  // Non-finite numbers (a diverged loss) become null rather than invalid JSON.
  return json{{"steps_per_point", stride_}, {"points", points}, {"epochs", epochs}}.dump(
      -1, ' ', false, json::error_handler_t::replace);
}

}  // namespace ringtrain::metrics
