#include "jobqueue/job_queue.h"

#include <utility>

#include "env/file_util.h"

namespace ringtrain::jobqueue {
namespace {

constexpr const char* kFormat = "ringtrain-job-queue";
constexpr int kVersion = 1;

constexpr JobState kStates[] = {JobState::kQueued, JobState::kRunning, JobState::kFinished, JobState::kFailed,
                                JobState::kCancelled};

}  // namespace

nlohmann::json RecordToJson(const JobRecord& j) {
  return {{"id", j.id},
          {"name", j.name},
          {"job", j.job_text},
          {"state", JobStateName(j.state)},
          {"submitted_s", j.submitted_s},
          {"started_s", j.started_s},
          {"ended_s", j.ended_s},
          {"attempts", j.attempts},
          {"cancel_requested", j.cancel_requested},
          {"error", j.error},
          {"final_metrics", j.final_metrics}};
}

namespace {

// The record `v` (job number `k` in the file), or what is wrong with it.
StatusOr<JobRecord> FromJson(const nlohmann::json& v, size_t k) {
  const std::string where = "job #" + std::to_string(k + 1);
  if (!v.is_object()) return DataLossError(where + " is not an object");
  auto field = [&](const char* key, nlohmann::json::value_t type) -> StatusOr<const nlohmann::json*> {
    auto it = v.find(key);
    const bool number = type == nlohmann::json::value_t::number_float;
    if (it == v.end() || (number ? !it->is_number() : it->type() != type)) {
      return DataLossError(where + ": '" + key + "' is missing or of the wrong type");
    }
    return &*it;
  };
  using T = nlohmann::json::value_t;
  JobRecord j;
  RT_ASSIGN_OR_RETURN(const nlohmann::json* id, field("id", T::number_unsigned));
  j.id = id->get<int64_t>();
  RT_ASSIGN_OR_RETURN(const nlohmann::json* name, field("name", T::string));
  j.name = name->get<std::string>();
  RT_ASSIGN_OR_RETURN(const nlohmann::json* job, field("job", T::string));
  j.job_text = job->get<std::string>();
  RT_ASSIGN_OR_RETURN(const nlohmann::json* state, field("state", T::string));
  bool known = false;
  for (JobState s : kStates) {
    if (state->get<std::string>() == JobStateName(s)) {
      j.state = s;
      known = true;
    }
  }
  if (!known) return DataLossError(where + ": unknown state '" + state->get<std::string>() + "'");
  RT_ASSIGN_OR_RETURN(const nlohmann::json* submitted, field("submitted_s", T::number_float));
  RT_ASSIGN_OR_RETURN(const nlohmann::json* started, field("started_s", T::number_float));
  RT_ASSIGN_OR_RETURN(const nlohmann::json* ended, field("ended_s", T::number_float));
  j.submitted_s = submitted->get<double>();
  j.started_s = started->get<double>();
  j.ended_s = ended->get<double>();
  RT_ASSIGN_OR_RETURN(const nlohmann::json* attempts, field("attempts", T::number_unsigned));
  j.attempts = attempts->get<int>();
  RT_ASSIGN_OR_RETURN(const nlohmann::json* cancel, field("cancel_requested", T::boolean));
  j.cancel_requested = cancel->get<bool>();
  RT_ASSIGN_OR_RETURN(const nlohmann::json* error, field("error", T::string));
  j.error = error->get<std::string>();
  auto metrics = v.find("final_metrics");
  if (metrics == v.end()) return DataLossError(where + ": 'final_metrics' is missing");
  j.final_metrics = *metrics;
  return j;
}

}  // namespace

const char* JobStateName(JobState state) {
  switch (state) {
    case JobState::kQueued: return "queued";
    case JobState::kRunning: return "running";
    case JobState::kFinished: return "finished";
    case JobState::kFailed: return "failed";
    case JobState::kCancelled: return "cancelled";
  }
  return "unknown";
}

bool IsDone(JobState state) {
  return state == JobState::kFinished || state == JobState::kFailed || state == JobState::kCancelled;
}

StatusOr<std::unique_ptr<JobQueue>> JobQueue::Open(env::Env* env, const std::string& path) {
  std::unique_ptr<JobQueue> q(new JobQueue(env, path));
  RT_ASSIGN_OR_RETURN(bool exists, env->FileExists(path));
  if (!exists) {
    std::lock_guard<std::mutex> lock(q->mu_);
    Status st = q->PersistLocked();
    if (!st.ok()) return st.WithContext("creating the job queue");
    return q;
  }
  auto text = env->ReadFile(path);
  if (!text.ok()) return text.status().WithContext("reading the job queue").About(Subject::kStorage);
  const std::string what = "the job queue " + path;
  const std::string fix = "; move it aside to start an empty queue (its jobs are then forgotten)";
  auto v = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (v.is_discarded() || !v.is_object()) {
    return Status(Code::kDataLoss, what + " is not JSON (damaged?)" + fix, Subject::kStorage);
  }
  if (!v.contains("format") || !v["format"].is_string() || v["format"].get<std::string>() != kFormat) {
    return Status(Code::kDataLoss, what + " is not a ringtrain job queue (no \"format\": \"" + kFormat + "\")" + fix,
                  Subject::kStorage);
  }
  if (!v.contains("version") || !v["version"].is_number_integer() || v["version"].get<int>() != kVersion) {
    return Status(Code::kDataLoss,
                  what + " has version " + (v.contains("version") ? v["version"].dump() : "(none)") +
                      "; this ringtrain reads version " + std::to_string(kVersion) + fix,
                  Subject::kStorage);
  }
  if (!v.contains("next_id") || !v["next_id"].is_number_unsigned() || !v.contains("jobs") || !v["jobs"].is_array()) {
    return Status(Code::kDataLoss, what + ": 'next_id' or 'jobs' is missing or of the wrong type" + fix,
                  Subject::kStorage);
  }
  q->next_id_ = v["next_id"].get<int64_t>();
  int64_t last_id = 0;
  for (size_t k = 0; k < v["jobs"].size(); ++k) {
    auto j = FromJson(v["jobs"][k], k);
    if (!j.ok()) return Status(Code::kDataLoss, what + ": " + j.status().message() + fix, Subject::kStorage);
    if (j->id <= last_id || j->id >= q->next_id_) {
      return Status(Code::kDataLoss, what + ": job ids out of order at job #" + std::to_string(k + 1) + fix,
                    Subject::kStorage);
    }
    last_id = j->id;
    q->jobs_.push_back(std::move(j).value());
  }
  return q;
}

Status JobQueue::PersistLocked() {
  nlohmann::json jobs = nlohmann::json::array();
  for (const JobRecord& j : jobs_) jobs.push_back(RecordToJson(j));
  const nlohmann::json v = {{"format", kFormat}, {"version", kVersion}, {"next_id", next_id_}, {"jobs", jobs}};
  // Replaced invalid UTF-8 (a job file's bytes are the user's) rather than a throw.
  return env::WriteFileAtomically(env_, path_, v.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

JobRecord* JobQueue::FindLocked(int64_t id) {
  for (JobRecord& j : jobs_) {
    if (j.id == id) return &j;
  }
  return nullptr;
}

template <typename Change>
Status JobQueue::ChangeLocked(int64_t id, const Change& change) {
  JobRecord* j = FindLocked(id);
  if (j == nullptr) return NotFoundError("no job " + std::to_string(id) + " in the queue");
  const JobRecord before = *j;
  RT_RETURN_IF_ERROR(change(*j));
  Status st = PersistLocked();
  if (!st.ok()) *j = before;
  return st;
}

StatusOr<int64_t> JobQueue::Submit(const std::string& name, const std::string& job_text, double now_s) {
  std::lock_guard<std::mutex> lock(mu_);
  JobRecord j;
  j.id = next_id_;
  j.name = name;
  j.job_text = job_text;
  j.submitted_s = now_s;
  jobs_.push_back(j);
  ++next_id_;
  Status st = PersistLocked();
  if (!st.ok()) {
    jobs_.pop_back();
    --next_id_;
    return st.WithContext("recording the submission");
  }
  return j.id;
}

StatusOr<std::optional<JobRecord>> JobQueue::StartNext(double now_s) {
  std::lock_guard<std::mutex> lock(mu_);
  JobRecord* next = nullptr;
  for (JobRecord& j : jobs_) {
    if (j.state == JobState::kRunning) {
      next = &j;
      break;
    }
    if (j.state == JobState::kQueued && next == nullptr) next = &j;
  }
  if (next == nullptr) return std::optional<JobRecord>();
  Status st = ChangeLocked(next->id, [now_s](JobRecord& j) {
    if (j.state == JobState::kQueued) j.started_s = now_s;
    j.state = JobState::kRunning;
    ++j.attempts;
    return Status::Ok();
  });
  if (!st.ok()) return st.WithContext("starting the next job");
  return std::optional<JobRecord>(*next);
}

// The running job `id` ends in state `to` (`what`: "finished", for the error when it
// is not running), after `extra` (which may refuse) fills in what that end records.
template <typename Extra>
Status JobQueue::EndLocked(int64_t id, JobState to, const char* what, double now_s, const Extra& extra) {
  return ChangeLocked(id, [&](JobRecord& j) {
    if (j.state != JobState::kRunning) {
      return FailedPreconditionError(j.Label() + " is " + JobStateName(j.state) + ", not running: it cannot be " +
                                     what);
    }
    RT_RETURN_IF_ERROR(extra(j));
    j.state = to;
    j.ended_s = now_s;
    return Status::Ok();
  });
}

Status JobQueue::Finish(int64_t id, const nlohmann::json& final_metrics, double now_s) {
  std::lock_guard<std::mutex> lock(mu_);
  return EndLocked(id, JobState::kFinished, "finished", now_s, [&](JobRecord& j) {
    j.final_metrics = final_metrics;
    return Status::Ok();
  });
}

Status JobQueue::Fail(int64_t id, const std::string& error, double now_s) {
  std::lock_guard<std::mutex> lock(mu_);
  return EndLocked(id, JobState::kFailed, "failed", now_s, [&](JobRecord& j) {
    j.error = error;
    return Status::Ok();
  });
}

StatusOr<JobState> JobQueue::Cancel(int64_t id, double now_s) {
  std::lock_guard<std::mutex> lock(mu_);
  JobState after = JobState::kQueued;
  Status st = ChangeLocked(id, [&](JobRecord& j) {
    if (IsDone(j.state)) {
      return FailedPreconditionError(j.Label() + " is already " + JobStateName(j.state) + ": nothing to cancel");
    }
    if (j.state == JobState::kQueued) {
      j.state = JobState::kCancelled;
      j.ended_s = now_s;
    } else {
      j.cancel_requested = true;
    }
    after = j.state;
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return after;
}

Status JobQueue::MarkCancelled(int64_t id, double now_s) {
  std::lock_guard<std::mutex> lock(mu_);
  return EndLocked(id, JobState::kCancelled, "marked cancelled", now_s, [](JobRecord& j) {
    return j.cancel_requested ? Status::Ok() : FailedPreconditionError(j.Label() + " was not asked to cancel");
  });
}

std::optional<JobRecord> JobQueue::Get(int64_t id) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const JobRecord& j : jobs_) {
    if (j.id == id) return j;
  }
  return std::nullopt;
}

std::vector<JobRecord> JobQueue::List() const {
  std::lock_guard<std::mutex> lock(mu_);
  return jobs_;
}

}  // namespace ringtrain::jobqueue
