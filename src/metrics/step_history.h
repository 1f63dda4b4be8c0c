// The run's curves as the chief's page draws them (/history.json): per-step loss,
// accuracy and images/s, downsampled so that it never holds more than `max_points`
// points however long the run (each point the mean of a run of consecutive steps; when
// full, neighbouring points are merged in pairs and each new point covers twice as many
// steps), plus one entry per epoch with the epoch's global values.
//
// Threading: thread-safe (one mutex); Add is O(1) amortized and never blocks for long.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace ringtrain::metrics {

class StepHistory {
 public:
  explicit StepHistory(size_t max_points = 500);

  // One step: its global step, loss, accuracy, and the examples all workers trained in
  // `seconds` (for images/s).
  void AddStep(int64_t global_step, double loss, double accuracy, double examples, double seconds);
  void AddEpoch(int epoch, double loss, double accuracy, double images_per_sec, bool has_val, double val_loss,
                double val_accuracy);

  // {"steps_per_point": S, "points": [{"step", "loss", "accuracy", "images_per_sec"}...],
  //  "epochs": [{"epoch", "loss", "accuracy", "images_per_sec", "val_loss", "val_accuracy"}...]}
  std::string Json() const;
  size_t points() const;

 private:
  struct Point {
    int64_t step = 0;  // the last step it covers
    double loss_sum = 0, accuracy_sum = 0, examples = 0, seconds = 0;
    int64_t n = 0;
  };
  struct Epoch {
    int epoch;
    double loss, accuracy, images_per_sec;
    bool has_val;
    double val_loss, val_accuracy;
  };
  static void Merge(Point& into, const Point& later);

  mutable std::mutex mu_;
  const size_t max_points_;
  int64_t stride_ = 1;  // steps per point; guarded by mu_ as the rest
  std::vector<Point> points_;
  Point pending_;
  std::vector<Epoch> epochs_;
};

}  // namespace ringtrain::metrics
