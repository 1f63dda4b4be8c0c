#include "summary/event_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include "common/logging.h"
#include "summary/record.h"

namespace ringtrain::summary {
namespace {

// Process-wide, like TensorFlow's, so two writers opened in the same second (train and
// validation) never pick the same name.
std::atomic<uint64_t> g_file_counter{0};

double WallTimeSeconds() {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  return std::chrono::duration<double>(now).count();
}

std::string Hostname() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == '\0') return "localhost";
  std::string name(buf);
  for (char& c : name) {
    if (c == '/') c = '_';  // a hostname never holds '/', but a file name must not
  }
  return name;
}

std::string FileName(int64_t seconds, const std::string& host, long pid, uint64_t counter) {
  char stamp[32];
  std::snprintf(stamp, sizeof(stamp), "%010lld", static_cast<long long>(seconds));
  return std::string("events.out.tfevents.") + stamp + "." + host + "." + std::to_string(pid) + "." +
         std::to_string(counter) + ".v2";
}

}  // namespace

StatusOr<std::unique_ptr<EventWriter>> EventWriter::Open(const std::string& dir) {
  if (dir.empty()) {
    return InvalidArgumentError("event file directory is empty; pass the log directory, e.g. <logdir>/train");
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return ErrnoError("cannot create event file directory '" + dir + "'", ec.value());
  }
  const double now = WallTimeSeconds();
  const std::string host = Hostname();
  const long pid = static_cast<long>(::getpid());
  // O_EXCL: never append to another writer's file. A clash is only possible with a file
  // left by an earlier process with the same pid in the same second; take the next counter.
  for (int attempt = 0; attempt < 100; ++attempt) {
    const std::string path =
        dir + "/" + FileName(static_cast<int64_t>(now), host, pid, g_file_counter.fetch_add(1));
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
      const int err = errno;
      if (err == EEXIST) continue;
      return ErrnoError("cannot create event file '" + path + "'", err);
    }
    std::unique_ptr<EventWriter> writer(new EventWriter(path, fd));
    RT_RETURN_IF_ERROR(writer->AddEvent(EncodeFileVersionEvent(now)));
    return writer;
  }
  return InternalError("cannot create an event file in '" + dir +
                       "': 100 names in a row already exist; clean the directory");
}

EventWriter::~EventWriter() {
  if (fd_ < 0) return;
  const Status s = Flush();
  if (!s.ok()) RT_LOG(WARNING) << "event file not fully written: " << s.ToString();
  ::close(fd_);
}

Status EventWriter::AddScalars(int64_t step, const Scalars& values) {
  if (values.empty()) return Status::Ok();
  for (const auto& [tag, value] : values) {
    if (tag.empty()) {
      return InvalidArgumentError("scalar with an empty tag for event file '" + path_ +
                                  "'; give every scalar a name such as 'epoch_loss'");
    }
  }
  return AddEvent(EncodeScalarEvent(WallTimeSeconds(), step, values));
}

Status EventWriter::AddEvent(const std::string& event) {
  if (fd_ < 0) return FailedPreconditionError("event file '" + path_ + "' is closed");
  if (!error_.ok()) return error_;
  buffer_ += FrameRecord(event);
  return Flush();
}

Status EventWriter::Flush() {
  if (fd_ < 0) return FailedPreconditionError("event file '" + path_ + "' is closed");
  if (!error_.ok()) return error_;
  size_t done = 0;
  while (done < buffer_.size()) {
    const ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error_ = ErrnoError("cannot write event file '" + path_ + "'", errno);
      buffer_.clear();
      return error_;
    }
    done += static_cast<size_t>(n);
  }
  buffer_.clear();
  return Status::Ok();
}

Status EventWriter::Close() {
  if (fd_ < 0) return FailedPreconditionError("event file '" + path_ + "' is already closed");
  Status s = Flush();
  if (s.ok() && ::fsync(fd_) != 0) s = ErrnoError("cannot fsync event file '" + path_ + "'", errno);
  if (::close(fd_) != 0 && s.ok()) s = ErrnoError("cannot close event file '" + path_ + "'", errno);
  fd_ = -1;
  return s;
}

}  // namespace ringtrain::summary
