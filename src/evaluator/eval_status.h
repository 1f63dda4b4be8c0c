// The evaluator's row in `ringtrain status` (and the chief's page). The evaluator calls
// no coordination service (it needs no cluster secret), so the chief reads what it has
// done from its history file at the job's default path (DefaultHistoryPath): the
// checkpoints' directory is shared with the chief wherever the evaluator can watch them,
// and so is the history beside the job's. An evaluator started with --eval_history
// elsewhere, or whose files the chief cannot see, shows its name and host only.
//
// Threading: pure apart from one file read. Blocking: that read.
#pragma once

#include <string>

#include "env/env.h"
#include "proto/coordination.pb.h"

namespace ringtrain::evaluator {

// The row of evaluator task `task` at TF_CONFIG address `host`, from the history at
// `history_path`: state "running" after an evaluation that was not the last, "finished"
// after the final one, "" (unknown) before any; the last record's step, epoch, loss and
// accuracy as its progress, with rank -1 (it hosts no virtual rank and has no step
// time). A history that does not read is named in failure_reason.
coordination::TaskStatus EvaluatorStatusRow(const std::string& task, const std::string& host,
                                            const std::string& history_path, env::Env* env = env::Default());

}  // namespace ringtrain::evaluator
