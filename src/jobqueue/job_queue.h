// The daemon's job queue: jobs submitted to a standing cluster, run one at a
// time, first in first out, with their states and times. Durable: every change is on disk
// before the call returns (the whole queue rewritten with env::WriteFileAtomically: a
// temporary file, fsync, rename, fsync of the directory), so a chief daemon killed at any
// moment and started again finds every submission it acknowledged and every state it
// reported, and never a half-written file.
//
// States and the moves between them:
//
//   queued --StartNext--> running --Finish--> finished
//      |                     |----Fail----> failed
//      |                     '--Cancel: cancel_requested; the runner stops it, then
//      |                        MarkCancelled--> cancelled
//      '--Cancel--> cancelled
//
// A job left `running` by a daemon that was killed is what StartNext hands out again
// first, with `attempts` counting the starts: the runner resumes it from its own backups
// (recovery in place), so it is not run from the beginning a second time. Finished,
// failed and cancelled jobs stay listed with their times, final metrics or error.
//
// The file is JSON ({"format": "ringtrain-job-queue", "version": 1, ...}); one that does
// not read (damaged, or not a queue) is refused with one line naming it and what is wrong,
// about Subject::kStorage, and is left as it is.
//
// Thread-safety: every method may be called from any thread (one mutex). A change whose
// write fails is undone in memory too, and its error returned: memory never runs ahead
// of the disk.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "env/env.h"

namespace ringtrain::jobqueue {

enum class JobState { kQueued, kRunning, kFinished, kFailed, kCancelled };

// "queued", "running", "finished", "failed", "cancelled": the names `ringtrain jobs` shows.
const char* JobStateName(JobState state);
// True for finished, failed and cancelled: nothing more happens to the job.
bool IsDone(JobState state);

struct JobRecord {
  int64_t id = 0;             // 1, 2, ... in submission order, never reused
  std::string name;           // --name, or the job file's name
  std::string job_text;       // the job file's contents as submitted
  JobState state = JobState::kQueued;
  double submitted_s = 0;     // Unix times in seconds; 0: not yet
  double started_s = 0;       // the first start
  double ended_s = 0;
  int attempts = 0;           // how many times StartNext handed it out
  bool cancel_requested = false;
  std::string error;          // failed: the one-line error
  nlohmann::json final_metrics;  // finished: what the runner reported (null if nothing)

  // "job-7".
  std::string Label() const { return "job-" + std::to_string(id); }
};

// A record as the queue file holds it: {"id", "name", "job" (the text), "state", ...}.
nlohmann::json RecordToJson(const JobRecord& record);

class JobQueue {
 public:
  // Reads the queue at `path`, or starts an empty one when there is no file (writing it
  // at once, so that an unwritable place fails here, not at the first submission).
  static StatusOr<std::unique_ptr<JobQueue>> Open(env::Env* env, const std::string& path);

  // Appends a queued job; returns its id once it is on disk.
  StatusOr<int64_t> Submit(const std::string& name, const std::string& job_text, double now_s);

  // The job to run next, now `running`: the one already running (a restarted daemon
  // resumes it), else the oldest queued; nothing when none is waiting.
  StatusOr<std::optional<JobRecord>> StartNext(double now_s);

  // A running job ended: finished with its final metrics, or failed with its error.
  // FAILED_PRECONDITION if the job is not running; NOT_FOUND for an unknown id.
  Status Finish(int64_t id, const nlohmann::json& final_metrics, double now_s);
  Status Fail(int64_t id, const std::string& error, double now_s);

  // A queued job is cancelled at once; a running one gets cancel_requested (the runner
  // stops it and calls MarkCancelled). Returns the state after the call. A job already
  // done: FAILED_PRECONDITION naming its state.
  StatusOr<JobState> Cancel(int64_t id, double now_s);
  Status MarkCancelled(int64_t id, double now_s);

  std::optional<JobRecord> Get(int64_t id) const;
  std::vector<JobRecord> List() const;  // in submission order
  const std::string& path() const { return path_; }

 private:
  JobQueue(env::Env* env, std::string path) : env_(env), path_(std::move(path)) {}
  Status PersistLocked();
  // Applies `change` to the job `id` and persists; on a failed write restores the job.
  template <typename Change>
  Status ChangeLocked(int64_t id, const Change& change);
  template <typename Extra>
  Status EndLocked(int64_t id, JobState to, const char* what, double now_s, const Extra& extra);
  JobRecord* FindLocked(int64_t id);

  env::Env* env_;
  std::string path_;
  mutable std::mutex mu_;
  int64_t next_id_ = 1;           // guarded by mu_
  std::vector<JobRecord> jobs_;   // guarded by mu_
};

}  // namespace ringtrain::jobqueue
