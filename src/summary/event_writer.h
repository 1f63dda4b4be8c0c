// Writes TensorBoard event files the way tf.summary does, so `tensorboard --logdir`
// shows ringtrain's per-epoch scalars (loss, accuracy, learning rate, ...).
//
// One EventWriter owns one file,
//   <dir>/events.out.tfevents.<unix seconds, 10 digits>.<hostname>.<pid>.<counter>.v2
// whose first record is the "brain.Event:2" file-version event. Keras' TensorBoard
// callback writes training scalars under <logdir>/train and validation ones under
// <logdir>/validation: the caller passes the full directory it wants.
//
// Thread-safety: not thread-safe; one thread at a time (the trainer's) calls it.
// Blocking: every call writes to the local file system and returns; nothing waits on a
// peer. Each AddScalars is flushed to the kernel before it returns (epochs are seconds
// apart, and TensorBoard should see them while the job runs); Close() also fsyncs.
// Files: through an env::Env (env/env.h; env::Default() unless a test passes another),
// which must outlive the writer. Errors: a file or directory that cannot be created or
// written is tagged Subject::kStorage (exit code 6); errors carry the path and errno's
// text.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"
#include "env/env.h"
#include "summary/event.h"

namespace ringtrain::summary {

class EventWriter {
 public:
  // Creates `dir` (and its parents) if missing and a new event file in it, then writes
  // the file-version record. Errors carry the path and errno's text.
  static StatusOr<std::unique_ptr<EventWriter>> Open(const std::string& dir, env::Env* env = env::Default());

  // Writes what is buffered and closes the file without fsync; logs, never throws.
  ~EventWriter();
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;

  // Appends one Event at `step` (Keras uses the epoch) holding `values` as simple_value
  // scalars, stamped with the system clock, and flushes. Empty tags are INVALID_ARGUMENT;
  // an empty `values` writes nothing.
  Status AddScalars(int64_t step, const Scalars& values);

  // Appends an already encoded Event (see event.h) and flushes; for callers that build
  // their own events or need a fixed wall time.
  Status AddEvent(const std::string& event);

  // Writes buffered bytes to the file. After a failed write the writer refuses further
  // calls with the same error, since the file may end in a partial record.
  Status Flush();

  // Flush, fsync and close. Later calls fail with FAILED_PRECONDITION.
  Status Close();

  const std::string& path() const { return path_; }

 private:
  EventWriter(std::string path, std::unique_ptr<env::WritableFile> file)
      : path_(std::move(path)), file_(std::move(file)) {}

  std::string path_;
  std::unique_ptr<env::WritableFile> file_;  // null once closed
  std::string buffer_;  // framed records not yet written
  Status error_;        // the first write error; sticky
};

}  // namespace ringtrain::summary
