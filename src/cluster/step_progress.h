// A step's report (train/step_observer.h) as the fields of the status protocol's
// TaskProgress that describe that one step: position, time split, loss and accuracy,
// rank and completion time. The heartbeat's reporter (cluster/progress_reporter.h) and a
// task's own status view (metrics/local_status.h) both describe a step this way.
// Header-only; pure.
#pragma once

#include "proto/coordination.pb.h"
#include "train/step_observer.h"

namespace ringtrain::cluster {

inline void FillStepProgress(const train::StepReport& r, coordination::TaskProgress* out) {
  out->set_global_step(r.global_step);
  out->set_epoch(r.epoch);
  out->set_epochs(r.epochs);
  out->set_step(r.step);
  out->set_steps_per_epoch(r.steps);
  out->set_rank(r.rank);
  out->set_compute_s(r.compute_seconds);
  out->set_input_wait_s(r.input_wait_seconds);
  out->set_allreduce_wait_s(r.comm_wait_seconds);
  out->set_loss(r.loss);
  out->set_accuracy(r.accuracy);
  out->set_unix_time(r.unix_time);
}

}  // namespace ringtrain::cluster
