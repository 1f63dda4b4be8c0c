// The status of a run as one JSON object: what `ringtrain status --json` prints and the
// chief's /status.json serves. The schema (docs/guide/watching.md):
//   {"job": {epoch, epochs, step, steps_per_epoch, global_step, total_steps,
//            images_per_sec, eta_s, loss, accuracy, last_backup_step, last_backup_age_s,
//            generation},
//    "tasks": [{task, state, host, incarnation, generation, step, heartbeat_age_s,
//               compute_s, input_wait_s, allreduce_wait_s, straggler, hosted_by, virtual_ranks}],
//    "events": [{unix_time, kind, task, message}],
//    "stragglers": [{task, compute_s, median_compute_s, steps}]}
// Unknown values are null. Fields may be added; none is renamed. Pure; thread-safe.
#pragma once

#include <string>

#include "proto/coordination.pb.h"

namespace ringtrain::coordination {

// `indent` < 0: one line; else pretty-printed with that indent.
std::string StatusToJson(const GetStatusResponse& status, int indent = -1);

}  // namespace ringtrain::coordination
