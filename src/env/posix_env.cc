// The POSIX Env: open/write/fsync/rename/unlink/rmdir on the local file system, each
// error converted to a Status (common's ErrnoError) naming the path.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <system_error>

#include "common/file.h"
#include "common/logging.h"
#include "env/descriptors.h"
#include "env/env.h"

namespace ringtrain::env {
namespace {

class PosixWritableFile : public WritableFile {
 public:
  PosixWritableFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0 && ::close(fd_) != 0) {
      RT_LOG(WARNING) << "closing '" << path_ << "' failed: " << ErrnoError("close", errno).message();
    }
    RefillReserve();
  }

  Status Append(std::string_view data) override {
    if (fd_ < 0) return Closed();
    size_t done = 0;
    while (done < data.size()) {
      const ssize_t n = ::write(fd_, data.data() + done, data.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return ErrnoError("cannot write '" + path_ + "'", errno);
      done += static_cast<size_t>(n);
    }
    return Status::Ok();
  }

  Status Flush() override { return fd_ < 0 ? Closed() : Status::Ok(); }

  Status Sync() override {
    if (fd_ < 0) return Closed();
    if (::fsync(fd_) != 0) return ErrnoError("cannot fsync '" + path_ + "'", errno);
    return Status::Ok();
  }

  Status Close() override {
    if (fd_ < 0) return Closed();
    const int rc = ::close(fd_);
    fd_ = -1;  // closed even when close(2) fails: retrying could close another file
    RefillReserve();
    if (rc != 0) return ErrnoError("cannot close '" + path_ + "'", errno);
    return Status::Ok();
  }

  const std::string& path() const override { return path_; }

 private:
  Status Closed() const { return FailedPreconditionError("file '" + path_ + "' is already closed"); }

  const std::string path_;
  int fd_;  // -1 once closed
};

class PosixEnv : public Env {
 public:
  Status CreateDirectories(const std::string& dir) override {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return ErrnoError("cannot create directory '" + dir + "'", ec.value());
    return Status::Ok();
  }

  StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    return Open(path, O_TRUNC);
  }

  StatusOr<std::unique_ptr<WritableFile>> NewExclusiveFile(const std::string& path) override {
    return Open(path, O_EXCL);
  }

  Status RenameFile(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) {
      return ErrnoError("cannot rename '" + from + "' to '" + to + "'", errno);
    }
    return Status::Ok();
  }

  Status DeleteFile(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) {
      const int err = errno;
      if (err == ENOENT) return NotFoundError("cannot delete '" + path + "': it does not exist");
      return ErrnoError("cannot delete '" + path + "'", err);
    }
    return Status::Ok();
  }

  Status DeleteDir(const std::string& dir) override {
    if (::rmdir(dir.c_str()) != 0) {
      const int err = errno;
      if (err == ENOTEMPTY || err == EEXIST) {
        return FailedPreconditionError("cannot remove directory '" + dir + "': it is not empty");
      }
      if (err == ENOENT) return NotFoundError("cannot remove directory '" + dir + "': it does not exist");
      return ErrnoError("cannot remove directory '" + dir + "'", err);
    }
    return Status::Ok();
  }

  StatusOr<std::vector<std::string>> GetChildren(const std::string& dir) override {
    const int fd = OpenWithReserve([&] { return ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); });
    if (fd < 0) return ErrnoError("cannot list directory '" + dir + "'", errno);
    DIR* d = ::fdopendir(fd);
    if (d == nullptr) {
      const int err = errno;
      ::close(fd);
      RefillReserve();
      return ErrnoError("cannot list directory '" + dir + "'", err);
    }
    std::vector<std::string> names;
    for (;;) {
      errno = 0;
      const dirent* e = ::readdir(d);
      if (e == nullptr) break;
      const std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    const int err = errno;
    ::closedir(d);
    RefillReserve();
    if (err != 0) return ErrnoError("cannot list directory '" + dir + "'", err);
    std::sort(names.begin(), names.end());
    return names;
  }

  StatusOr<bool> FileExists(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) == 0) return true;
    if (errno == ENOENT || errno == ENOTDIR) return false;
    return ErrnoError("cannot inspect '" + path + "'", errno);
  }

  StatusOr<bool> IsDirectory(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) == 0) return S_ISDIR(st.st_mode);
    if (errno == ENOENT || errno == ENOTDIR) return false;
    return ErrnoError("cannot inspect '" + path + "'", errno);
  }

  Status SyncDir(const std::string& dir) override {
    const int fd = OpenWithReserve([&] { return ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); });
    if (fd < 0) return ErrnoError("cannot open directory '" + dir + "' to fsync it", errno);
    const int rc = ::fsync(fd) == 0 ? 0 : errno;
    ::close(fd);
    RefillReserve();
    if (rc != 0) return ErrnoError("cannot fsync directory '" + dir + "'", rc);
    return Status::Ok();
  }

  StatusOr<std::string> ReadFile(const std::string& path) override { return ringtrain::ReadFile(path); }

 private:
  static StatusOr<std::unique_ptr<WritableFile>> Open(const std::string& path, int mode) {
    const int fd =
        OpenWithReserve([&] { return ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | mode, 0644); });
    if (fd < 0) {
      const int err = errno;
      if (err == EEXIST) return FailedPreconditionError("cannot create '" + path + "': it already exists");
      return ErrnoError("cannot create '" + path + "'", err);
    }
    return std::unique_ptr<WritableFile>(new PosixWritableFile(path, fd));
  }
};

}  // namespace

Env* Default() {
  static Env* const env = new PosixEnv;  // never destroyed: see env.h
  return env;
}

}  // namespace ringtrain::env
