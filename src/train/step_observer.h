// What the training loop tells whoever watches it (status reports to the chief, the
// Prometheus metrics, the console): one report per completed step, per epoch and per
// backup point. Observers are called on the training thread, between steps, and must
// return at once (no blocking I/O): copy what they need under their own lock and let
// their own threads publish it. They never change the training: a run with and without
// observers gives the same model bytes.
#pragma once

#include <cstdint>

#include "train/progress.h"

namespace ringtrain::train {

struct EpochResult;  // train/trainer.h

// One completed step of this worker.
struct StepReport {
  int64_t global_step = 0;       // steps completed (1 after the first)
  int epoch = 0, epochs = 0;     // 1-based epoch, of `epochs`
  int step = 0, steps = 0;       // 1-based step within the epoch, of `steps`
  int64_t examples = 0;          // this worker's examples in the step (its batch)
  int num_workers = 1;           // workers in the ring for this step
  int rank = 0;                  // this worker's rank in the ring
  // Wall time of the step, split: waiting for the input pipeline, waiting for the
  // gradients' all-reduce after backward finished, and the rest (compute: forward,
  // backward and the update, with whatever overlapped communication they hid).
  double seconds = 0, input_wait_seconds = 0, comm_wait_seconds = 0, compute_seconds = 0;
  double loss = 0;               // this worker's batch mean loss (regularization included)
  double accuracy = 0;           // this worker's batch value of "accuracy"/"acc" (0 without one)
  double learning_rate = 0;
  uint64_t allreduced_bytes = 0; // gradient bytes this step all-reduced (0 on one worker)
  double unix_time = 0;          // when the step completed (seconds since the epoch, system clock)
};

class StepObserver {
 public:
  virtual ~StepObserver() = default;  // never throws
  virtual void OnStep(const StepReport& report) = 0;
  // An epoch ended: the global (all-reduced) values the epoch line shows.
  virtual void OnEpoch(const EpochResult& result) { (void)result; }
  // A backup point: `seconds` the training thread spent on it (snapshot and hook).
  virtual void OnBackup(int64_t global_step, double seconds) {
    (void)global_step;
    (void)seconds;
  }
};

}  // namespace ringtrain::train
