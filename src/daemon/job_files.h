// Where a daemon keeps a job, under its work directory:
//
//   <work_dir>/queue.json                  the chief daemon's queue (jobqueue::JobQueue)
//   <work_dir>/jobs/job-<id>/job.json       the job as submitted, with a history file added
//   <work_dir>/jobs/job-<id>/output.log     its child's stdout and stderr
//   <work_dir>/jobs/job-<id>/outcome.json   how its child ended, once it will not run again
//   <work_dir>/jobs/job-<id>/...            its outputs: relative paths in the job resolve here
//
// And what the child is given: the job text with "history_file" set when the job sets
// none (so that the chief's last epoch is the job's final metrics), and the daemons'
// TF_CONFIG with every task's port moved to the job's ports.
//
// Pure functions but the file helpers (which use env::Env); thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/status.h"
#include "daemon/job_board.h"
#include "env/env.h"

namespace ringtrain::daemon {

inline constexpr char kDefaultHistoryFile[] = "history.jsonl";

std::string JobDir(const std::string& jobs_dir, int64_t id);
std::string JobOutputPath(const std::string& jobs_dir, int64_t id);
std::string JobOutcomePath(const std::string& jobs_dir, int64_t id);

// The job text a child runs: `job_text` with "history_file" added if absent.
// INVALID_ARGUMENT (kConfig) if it is not a JSON object.
StatusOr<std::string> ChildJobText(const std::string& job_text);

// The port offset of job `id`'s children: stride * (1 + id mod span), so that the
// children of consecutive jobs never share a port (a previous job's ports may still be
// in TIME_WAIT) and, with stride = the cluster's size, tasks on consecutive ports of one
// machine do not collide.
int JobPortOffset(int64_t id, int stride, int span);
// `tf_config` (the daemons' TF_CONFIG JSON) with every address's port moved by `offset`.
// INVALID_ARGUMENT if an address has no port or the result is past 65535.
StatusOr<std::string> JobTfConfig(const std::string& tf_config, int offset);

// A job's final metrics from its history file (one JSON object per epoch, then the
// evaluation's): the last epoch's metrics as Keras' History names them ("epoch",
// "loss", "accuracy", ...; the timing fields left out) and the evaluation's as "val_"
// ones, as JSON; "" if the file has no epoch.
std::string FinalMetrics(env::Env* env, const std::string& history_path);

// outcome.json: written crash-safely once a child will not run again; read back by a
// restarted daemon so that a job its child ended is not run again.
Status WriteOutcome(env::Env* env, const std::string& path, const ChildOutcome& outcome);
std::optional<ChildOutcome> ReadOutcome(env::Env* env, const std::string& path);

}  // namespace ringtrain::daemon
