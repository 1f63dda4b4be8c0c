#include "daemon/daemon_loop.h"

#include <signal.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/child_env.h"
#include "common/exit_policy.h"
#include "common/logging.h"
#include "daemon/job_child.h"
#include "daemon/job_files.h"
#include "env/env.h"
#include "env/file_util.h"

namespace ringtrain::daemon {
namespace {

using Clock = std::chrono::steady_clock;

// Between an idle daemon's held polls.
constexpr std::chrono::milliseconds kIdleRepoll{5};

// The history file the child's job writes (job_files.h adds one when the job has none).
std::string HistoryPath(const std::string& job_dir, const std::string& child_job_text) {
  auto j = nlohmann::json::parse(child_job_text, nullptr, /*allow_exceptions=*/false);
  std::string h = kDefaultHistoryFile;
  if (j.is_object() && j.contains("history_file") && j["history_file"].is_string()) {
    h = j["history_file"].get<std::string>();
  }
  return !h.empty() && h[0] == '/' ? h : job_dir + "/" + h;
}

class Daemon {
 public:
  Daemon(const DaemonLoopOptions& o) : o_(o), client_(o.client), env_(env::Default()) {}

  Status Run(const std::atomic<bool>& leave) {
    RT_RETURN_IF_ERROR(env_->CreateDirectories(o_.jobs_dir).About(Subject::kStorage));
    while (!leave.load()) {
      Reap();
      const bool idle = !child_;
      auto a = client_.Poll(child_ ? job_id_ : 0, outcomes_, idle ? o_.idle_poll_wait : std::chrono::milliseconds(0));
      if (!a.ok()) {
        if (!unreachable_ && !answered_) {
          RT_LOG(INFO) << "waiting for the chief's daemon at " << o_.client.address << " (" << a.status().message()
                       << ")";
        } else if (!unreachable_) {
          RT_LOG(WARNING) << a.status().message() << (child_ ? "; its job keeps running" : "");
        }
        unreachable_ = true;
        if (a.status().code() == Code::kUnavailable) client_.Reconnect();
        // A refusal (another secret, a task the chief's cluster does not have) will not change.
        if (a.status().code() == Code::kPermissionDenied || a.status().code() == Code::kInvalidArgument) {
          return a.status();
        }
      } else {
        answered_ = true;
        if (unreachable_) RT_LOG(INFO) << "the chief's daemon answers";
        unreachable_ = false;
        RT_RETURN_IF_ERROR(Follow(*a));
        // An idle daemon's poll was held by the chief's daemon until there was work:
        // poll again soon (not at once, should it answer at once).
        if (idle && !child_ && o_.idle_poll_wait.count() > 0) {
          std::this_thread::sleep_for(kIdleRepoll);
          continue;
        }
      }
      std::this_thread::sleep_for(o_.poll_interval);
    }
    Leave();
    return Status::Ok();
  }

 private:
  // A child that ended: started again, or its final outcome recorded.
  void Reap() {
    if (!child_) return;
    if (stop_sent_ && Clock::now() > kill_at_) child_->Signal(SIGKILL);
    std::optional<int> code = child_->Poll();
    if (!code) return;
    const std::string output = JobOutputPath(o_.jobs_dir, job_id_);
    child_.reset();
    if (!stop_sent_ && *code != kExitOk && IsRestartableExit(*code) && restarts_ < o_.max_restarts) {
      ++restarts_;
      RT_LOG(WARNING) << "job-" << job_id_ << ": the child exited with code " << *code << " ("
                      << ExitCodeMeaning(*code) << "); starting it again (" << restarts_ << " of "
                      << o_.max_restarts << ")";
      Status st = StartChild();
      if (st.ok()) return;
      RT_LOG(WARNING) << st.message();
    }
    ChildOutcome out;
    out.job_id = job_id_;
    out.exit_code = *code;
    if (*code != kExitOk && *code != kExitPreempted) out.error = LastErrorLine(output);
    if (*code == kExitOk && o_.task == o_.chief_task) {
      out.metrics_json = FinalMetrics(env_, HistoryPath(JobDir(o_.jobs_dir, job_id_), child_job_text_));
    }
    Record(out);
  }

  void Record(const ChildOutcome& out) {
    Status st = WriteOutcome(env_, JobOutcomePath(o_.jobs_dir, out.job_id), out);
    if (!st.ok()) RT_LOG(WARNING) << "job-" << out.job_id << ": " << st.message();
    RT_LOG(INFO) << "job-" << out.job_id << ": the child ended with code " << out.exit_code;
    outcomes_.push_back(out);
  }

  Status Follow(const Assignment& a) {
    // Outcomes of jobs the chief daemon has ended are not sent again.
    std::erase_if(outcomes_, [&](const ChildOutcome& o) { return o.job_id != a.job_id; });
    if (child_ && job_id_ != a.job_id) {  // the job is over without this child (it cannot be)
      RT_LOG(WARNING) << "job-" << job_id_ << " is no longer the chief daemon's job; stopping its child";
      StopChild();
      return Status::Ok();
    }
    if (a.job_id == 0) return Status::Ok();
    if (child_) {
      if (a.stop && !stop_sent_) StopChild();
      return Status::Ok();
    }
    const bool reported = std::any_of(outcomes_.begin(), outcomes_.end(),
                                      [&](const ChildOutcome& o) { return o.job_id == a.job_id; });
    if (reported) return Status::Ok();
    if (std::optional<ChildOutcome> done = ReadOutcome(env_, JobOutcomePath(o_.jobs_dir, a.job_id))) {
      if (done->job_id == a.job_id) {
        outcomes_.push_back(*done);  // ended before this daemon restarted: not run again
        return Status::Ok();
      }
    }
    if (a.stop) {  // stopped before it started here
      ChildOutcome out;
      out.job_id = a.job_id;
      out.exit_code = kExitPreempted;
      Record(out);
      return Status::Ok();
    }
    job_id_ = a.job_id;
    restarts_ = 0;
    auto text = ChildJobText(a.job_text);
    if (!text.ok()) {
      ChildOutcome out;
      out.job_id = a.job_id;
      out.exit_code = kExitBadConfig;
      out.error = text.status().message();
      Record(out);
      return Status::Ok();
    }
    child_job_text_ = *text;
    const std::string dir = JobDir(o_.jobs_dir, a.job_id);
    RT_RETURN_IF_ERROR(env_->CreateDirectories(dir).About(Subject::kStorage));
    RT_RETURN_IF_ERROR(env::WriteFileAtomically(env_, dir + "/job.json", child_job_text_ + "\n").About(Subject::kStorage));
    Status st = StartChild();
    if (!st.ok()) {
      ChildOutcome out;
      out.job_id = a.job_id;
      out.exit_code = ExitCodeFor(st);
      out.error = st.message();
      Record(out);
    }
    return Status::Ok();
  }

  Status StartChild() {
    const std::string dir = JobDir(o_.jobs_dir, job_id_);
    RT_ASSIGN_OR_RETURN(std::string tf_config,
                        JobTfConfig(o_.tf_config, JobPortOffset(job_id_, o_.port_stride, o_.port_span)));
    ChildSpec spec;
    spec.exe = o_.exe;
    spec.args = {"worker", "--job", dir + "/job.json"};
    spec.args.insert(spec.args.end(), o_.worker_flags.begin(), o_.worker_flags.end());
    spec.env = WorkerAllocatorEnv();
    spec.env.emplace_back("TF_CONFIG", tf_config);
    spec.cwd = dir;
    spec.output_path = JobOutputPath(o_.jobs_dir, job_id_);
    RT_ASSIGN_OR_RETURN(child_, JobChild::Start(spec));
    stop_sent_ = false;
    RT_LOG(INFO) << "job-" << job_id_ << ": started " << o_.task << "'s child (pid " << child_->pid() << ")";
    return Status::Ok();
  }

  void StopChild() {
    if (!child_ || stop_sent_) return;
    child_->Signal(SIGTERM);
    stop_sent_ = true;
    kill_at_ = Clock::now() + o_.preempt_grace;
    RT_LOG(INFO) << "job-" << job_id_ << ": stopping the child";
  }

  void Leave() {
    if (!child_) return;
    RT_LOG(INFO) << "leaving: job-" << job_id_ << "'s child is told to stop (it saves its step)";
    child_->Signal(SIGTERM);
    const Clock::time_point kill_at = Clock::now() + o_.preempt_grace;
    while (!child_->Poll()) {
      if (Clock::now() > kill_at) child_->Signal(SIGKILL);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    RT_LOG(INFO) << "job-" << job_id_ << "'s child exited with code " << *child_->Poll();
    child_.reset();
  }

  const DaemonLoopOptions& o_;
  DaemonClient client_;
  env::Env* env_;
  std::unique_ptr<JobChild> child_;
  int64_t job_id_ = 0;  // the job of child_ (or of the last child)
  std::string child_job_text_;
  int restarts_ = 0;
  bool stop_sent_ = false;
  Clock::time_point kill_at_{};
  std::vector<ChildOutcome> outcomes_;
  bool unreachable_ = false;
  bool answered_ = false;
};

}  // namespace

Status RunDaemonLoop(const DaemonLoopOptions& options, const std::atomic<bool>& leave) {
  Daemon daemon(options);
  return daemon.Run(leave);
}

}  // namespace ringtrain::daemon
