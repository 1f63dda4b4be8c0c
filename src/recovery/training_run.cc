#include "recovery/training_run.h"

#include <chrono>
#include <cstdio>

#include "common/exit_policy.h"
#include "common/logging.h"

namespace ringtrain::recovery {
namespace {

std::string StepText(int64_t step, int steps_per_epoch) {
  if (steps_per_epoch <= 0) return "step " + std::to_string(step);
  return "step " + std::to_string(step) + " (epoch " + std::to_string(step / steps_per_epoch + 1) + ", step " +
         std::to_string(step % steps_per_epoch) + " of " + std::to_string(steps_per_epoch) + " done)";
}

double SteadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string FixedText(double v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

}  // namespace

TrainingRun::TrainingRun(train::Trainer* trainer, cluster::Session* session, RunOptions options)
    : trainer_(trainer), session_(session), options_(std::move(options)) {}

TrainingRun::~TrainingRun() = default;  // the writer's destructor finishes its write

RunResult TrainingRun::Train() {
  RunResult result;
  int64_t last_generation = -1;
  std::string reason;
  while (true) {
    auto formed = session_->Rendezvous(last_generation, reason);
    if (!formed.ok()) {
      result.status = formed.status();
      return result;
    }
    if (formed->job_finished) {
      RT_LOG(INFO) << "the other tasks have already finished the job; nothing left to do";
      return result;
    }
    last_generation = formed->generation;
    if (options_.on_generation) options_.on_generation(last_generation);
    auto comm = session_->CreateCommunicator(options_.comm, last_generation);
    Status st;
    if (!comm.ok()) {
      st = comm.status().WithContext("forming the ring of generation " + std::to_string(last_generation));
    } else {
      RT_LOG(INFO) << "ring of " << session_->size() << " formed (" << (*comm)->backend_name() << "), generation "
                   << last_generation;
      st = RunGeneration(comm->get());
      session_->Detach();
    }
    if (st.ok()) return result;
    if (trainer_->preemption().global_step >= 0) {
      Status stopped = AfterPreemption(st, &result);
      if (result.preempted || !IsTransient(stopped)) {  // this task stopped (7), or its backup failed (6)
        result.status = stopped;
        return result;
      }
      st = stopped;  // a peer asked to stop: handled below as for any lost peer
    }

    // The generation failed: why, as precisely as anyone knows.
    std::string why = session_->failure();
    if (!why.empty() && st.message().find(why) == std::string::npos) st = st.WithContext(why);
    if (!IsTransient(st)) {  // this task's configuration, data or disk: meeting again would not help
      result.status = st;
      return result;
    }
    // Both ways out below are about the peers (exit 5, restartable) whatever failed first.
    if (session_->evicted()) {
      result.status = Status(st.code(), "the coordination service declared this task failed; restart it: " +
                                            st.message(), Subject::kPeers);
      return result;
    }
    const int64_t back_to = snapshot_ ? snapshot_->global_step : 0;
    if (options_.mode == config::RecoveryMode::kRestart) {
      result.status = Status(st.code(),
                             "recovery is \"restart\": exiting so that the supervisor restarts every task; they "
                             "resume from the last backup: " +
                                 st.message(),
                             Subject::kPeers);
      return result;
    }
    ++result.recoveries;
    if (options_.on_recovery) options_.on_recovery(st);
    // One line for the console (the chief's; launch shows only warnings), the same at
    // INFO in every other task's log.
    if (recovery_since_ < 0) recovery_since_ = SteadySeconds();
    const LogLevel level = session_->is_chief() ? LogLevel::kWarning : LogLevel::kInfo;
    LogMessage(level, __FILE__, __LINE__).stream()
        << "lost generation " << last_generation << ": " << st.message() << "; recovering in place from "
        << StepText(back_to, trainer_->steps_per_epoch()) << " when every task has rejoined";
    reason = st.message();
  }
}

Status TrainingRun::RunGeneration(collective::Communicator* comm) {
  RT_RETURN_IF_ERROR(trainer_->Prepare(comm));
  if (!snapshot_) {
    // This process has no state of its own yet: the backup on disk, if any. Until it
    // has been loaded once, every generation tries again (a generation may break
    // before it gets here), so that a backup is never skipped and later overwritten.
    RT_RETURN_IF_ERROR(LoadFromDisk());
    snapshot_ = trainer_->Snapshot();
  } else {
    Status st = trainer_->Restore(*snapshot_);
    // This process took the snapshot itself: failing to restore it is a bug.
    if (!st.ok()) return InternalError("restoring this task's own snapshot: " + st.message());
  }
  // The state comes from the task furthest along: a failure here is that exchange's.
  StatusOr<bool> received = trainer_->SyncState(comm);
  if (!received.ok()) return received.status().About(Subject::kPeers);
  if (*received) snapshot_ = trainer_->Snapshot();  // else snapshot_ is still this state
  if (recovery_since_ >= 0) {
    const LogLevel level = session_->is_chief() ? LogLevel::kWarning : LogLevel::kInfo;
    LogMessage(level, __FILE__, __LINE__).stream()
        << "recovered in place in " << FixedText(SteadySeconds() - recovery_since_, 1) << " s: " << comm->size()
        << " workers resume at " << StepText(snapshot_->global_step, trainer_->steps_per_epoch());
    recovery_since_ = -1;
  }
  if (!writer_ && options_.backup.enabled() && session_->is_chief()) {
    writer_ = std::make_unique<backup::BackupWriter>(options_.backup.backup_dir, trainer_->Identity(), options_.env);
  }
  RT_RETURN_IF_ERROR(trainer_->Fit(comm, [this](const backup::TrainState& s) { return OnBackup(s); }));
  if (options_.evaluate) return trainer_->Evaluate(comm).status();
  return Status::Ok();
}

Status TrainingRun::AfterPreemption(const Status& fit_status, RunResult* result) {
  const train::Preemption& p = trainer_->preemption();
  // The chief makes sure the boundary's backup is on disk before anyone is told to go:
  // the same crash-safe write as always, waited for.
  std::string saved;
  if (writer_) {
    const auto t0 = std::chrono::steady_clock::now();
    Status st = writer_->Flush(Deadline::AfterSeconds(options_.shutdown_timeout_s));
    if (!st.ok()) {
      return st.WithContext("writing the backup of step " + std::to_string(p.global_step) + " before stopping")
          .About(Subject::kStorage);
    }
    const double seconds = p.backup_seconds + std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.2f", seconds);
    saved = std::string("backup written in ") + buf + " s";
  } else if (options_.backup.enabled()) {
    saved = "the chief writes the backup";
  } else {
    saved = "no backup (the job has no backup_and_restore: a restart begins again)";
  }
  // A task whose signal came just after its vote (every task signalled at once, say) stops
  // too: it holds the same step, and it was asked to stop.
  if (p.asked_here || trainer_->stop_requested()) {
    result->preempted = true;
    const std::string where = "preempted at step " + std::to_string(p.global_step) + " (epoch " +
                              std::to_string(p.epoch) + ", step " + std::to_string(p.step) + "/" +
                              std::to_string(p.steps) + ")";
    return Status(Code::kAborted, where + "; " + saved + "; restart to resume");
  }
  if (!saved.empty() && writer_) RT_LOG(WARNING) << fit_status.message() << "; " << saved;
  return fit_status;
}

Status TrainingRun::LoadFromDisk() {
  if (!options_.backup.enabled()) return Status::Ok();
  std::vector<std::string> warnings;
  auto loaded = backup::LoadNewestBackup(options_.backup.backup_dir, trainer_->Identity(), &warnings, options_.env);
  if (options_.on_event) {
    for (const std::string& w : warnings) options_.on_event("backup_fallback", w);
  }
  if (!loaded.ok()) return loaded.status().About(Subject::kStorage);
  if (!loaded->has_value()) {
    RT_LOG(INFO) << "no backup in " << options_.backup.backup_dir
                 << (warnings.empty() ? "" : " that can be used") << "; starting from the beginning";
    return Status::Ok();
  }
  Status st = trainer_->Restore((*loaded)->state);
  if (!st.ok()) return st.WithContext((*loaded)->path).About(Subject::kStorage);
  RT_LOG(INFO) << "restored the backup " << (*loaded)->path << " at "
               << StepText((*loaded)->state.global_step, trainer_->steps_per_epoch());
  return Status::Ok();
}

Status TrainingRun::OnBackup(const backup::TrainState& state) {
  snapshot_ = state;
  if (!writer_) return Status::Ok();
  Status st = writer_->Submit(state);
  if (st.ok()) return st;
  // The disk's problem, not a peer's: recovering would not help (kStorage: exit code 6).
  // The message (WriteBackup's) names the directory and what to do.
  return st.About(Subject::kStorage);
}

void TrainingRun::Finish(bool cluster_done) {
  if (!writer_) return;
  Status st = writer_->Flush(Deadline::AfterSeconds(options_.shutdown_timeout_s));
  if (!st.ok()) RT_LOG(WARNING) << "the last backup: " << st.ToString();
  const auto stats = writer_->stats();
  const double fit = trainer_->fit_seconds();
  RT_LOG(INFO) << "backups: " << stats.written << " written by the background writer in "
               << static_cast<int>(stats.seconds * 1000) << " ms; the training thread spent "
               << static_cast<int>(trainer_->backup_seconds() * 1000) << " ms at backup points ("
               << (fit > 0 ? 100.0 * trainer_->backup_seconds() / fit : 0.0) << "% of "
               << static_cast<int>(fit * 1000) << " ms of training)";
  writer_.reset();
  if (cluster_done && options_.backup.delete_checkpoint) {
    st = backup::DeleteBackups(options_.backup.backup_dir, options_.env);
    if (st.ok()) {
      RT_LOG(INFO) << "deleted the backups in " << options_.backup.backup_dir << " (delete_checkpoint)";
    } else {
      RT_LOG(WARNING) << "could not delete the backups: " << st.ToString();
    }
  }
}

}  // namespace ringtrain::recovery
