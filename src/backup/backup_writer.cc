// BackupWriter: one background thread writes the newest submitted state, so that a
// training step never waits for the disk.
#include <exception>

#include "backup/backup.h"

#include <chrono>
#include "common/logging.h"

namespace ringtrain::backup {

BackupWriter::BackupWriter(std::string dir, BackupIdentity identity, env::Env* env)
    : dir_(std::move(dir)), identity_(std::move(identity)), env_(env) {
  thread_ = std::thread([this] { Loop(); });
}

BackupWriter::~BackupWriter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  // Loop() drains the pending state before it returns: bounded by the disk.
  // Loop() has logged any failure; a destructor has no one to return it to.
  if (thread_.joinable()) thread_.join();
}

Status BackupWriter::Submit(TrainState state) {
  Status earlier;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // A waiting older state is dropped: the newer one supersedes it.
    pending_ = std::move(state);
    std::swap(earlier, error_);  // each error is reported once
  }
  cv_.notify_all();
  return earlier;
}

Status BackupWriter::Flush(Deadline deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_until(lock, deadline.when(), [this] { return !pending_ && !writing_; })) {
    return DeadlineExceededError("the backup to '" + dir_ +
                                 "' is still being written at the deadline; the disk may be slow or stalled")
        .About(Subject::kStorage);
  }
  // Kept, not cleared: the next Submit() reports it too, so a caller that only
  // submits still learns of it.
  return error_;
}

BackupWriter::Stats BackupWriter::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

int64_t BackupWriter::last_written_step() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_written_;
}

void BackupWriter::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    // An idle wait for work, not for a peer: the destructor's stop_ ends it.
    cv_.wait(lock, [this] { return pending_.has_value() || stop_; });
    if (!pending_) return;  // stop_ and nothing left to write
    TrainState state = std::move(*pending_);
    pending_.reset();
    writing_ = true;
    lock.unlock();
    Status s;
    const auto start = std::chrono::steady_clock::now();
    try {
      s = WriteBackup(dir_, identity_, state, env_);
    } catch (const std::exception& e) {  // bad_alloc: keep the thread (and the process) alive
      s = InternalError(std::string("writing a backup failed: ") + e.what());
    }
    if (!s.ok()) RT_LOG(WARNING) << "Backup of step " << state.global_step << " failed: " << s.ToString();
    lock.lock();
    writing_ = false;
    if (s.ok()) {
      last_written_ = state.global_step;
      ++stats_.written;
      stats_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    } else if (error_.ok()) {
      error_ = s;  // the first error is the informative one
    }
    cv_.notify_all();
  }
}

}  // namespace ringtrain::backup
