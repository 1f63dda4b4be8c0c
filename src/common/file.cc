#include "common/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

namespace ringtrain {
namespace {

// An open descriptor of a regular file, closed on every way out.
class RegularFile {
 public:
  ~RegularFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  // Opens `path` without blocking (O_NONBLOCK: a FIFO without a writer would block
  // open(2) otherwise) and refuses anything that is not a regular file.
  Status Open(const std::string& path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd_ < 0) {
      const int err = errno;
      if (err == ENOENT) return NotFoundError("file '" + path + "' does not exist");
      struct stat st;
      if (err == ENXIO && ::stat(path.c_str(), &st) == 0 && !FileKind(st.st_mode).empty()) {
        return NotRegular(path, st.st_mode);  // a socket, or a device without a driver
      }
      return ErrnoError("cannot open '" + path + "'", err);
    }
    struct stat st;
    if (::fstat(fd_, &st) != 0) return ErrnoError("cannot stat '" + path + "'", errno);
    if (!S_ISREG(st.st_mode)) return NotRegular(path, st.st_mode);
    size_ = static_cast<uint64_t>(st.st_size);
    // O_NONBLOCK stays set: regular files ignore it (reads of a regular file always
    // wait for the data), and leaving it saves two fcntl calls per file, which counts
    // when an image folder's small files are read by the thousand.
    return Status::Ok();
  }

  // Appends up to `limit` bytes to *out; stops at the end of the file. Reads straight
  // into *out in chunks of at most 1 MiB; a short read past the size fstat gave is the
  // end of the file, so a small file costs one read(2), not two.
  Status ReadUpTo(const std::string& path, uint64_t limit, std::string* out) {
    constexpr uint64_t kChunk = 1 << 20;
    uint64_t done = 0;
    while (done < limit) {
      // Ask for one byte more than fstat's size (capped by the limit), so a file that
      // grew since then shows it and is read on, a chunk at a time, until its end.
      const uint64_t goal = std::min<uint64_t>(limit, done >= size_ ? done + kChunk : size_ + 1);
      const size_t want = static_cast<size_t>(std::min<uint64_t>(kChunk, goal - done));
      const size_t old = out->size();
      out->resize(old + want);
      const ssize_t n = ::read(fd_, out->data() + old, want);
      const int err = errno;
      out->resize(old + (n > 0 ? static_cast<size_t>(n) : 0));
      if (n < 0 && err == EINTR) continue;
      if (n < 0) return ErrnoError("cannot read '" + path + "'", err);
      if (n == 0) break;
      done += static_cast<uint64_t>(n);
      if (static_cast<size_t>(n) < want && done >= size_) break;  // short read at the end
    }
    return Status::Ok();
  }

  uint64_t size() const { return size_; }

 private:
  static Status NotRegular(const std::string& path, unsigned mode) {
    return InvalidArgumentError("'" + path + "' is " + FileKind(mode) + ", not a regular file");
  }
  int fd_ = -1;
  uint64_t size_ = 0;
};

Status TooLarge(const std::string& path, const std::string& size, uint64_t max_bytes, const std::string& what) {
  return InvalidArgumentError("'" + path + "' is " + size + ", more than the " + FormatBytes(max_bytes) + " " + what +
                              " may have");
}

}  // namespace

std::string FileKind(unsigned mode) {
  if (S_ISREG(mode)) return "";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

std::string FormatBytes(uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
  static const char* const kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes) / 1024;
  int u = 0;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f %s", v, kUnits[u]);
  return buf;
}

StatusOr<std::string> ReadFile(const std::string& path, uint64_t max_bytes, const std::string& what) {
  RegularFile f;
  RT_RETURN_IF_ERROR(f.Open(path));
  if (f.size() > max_bytes) return TooLarge(path, FormatBytes(f.size()), max_bytes, what);
  std::string out;
  try {
    out.reserve(static_cast<size_t>(f.size()));
    // One byte past the bound tells a file that grew while we read it.
    RT_RETURN_IF_ERROR(f.ReadUpTo(path, max_bytes == UINT64_MAX ? max_bytes : max_bytes + 1, &out));
  } catch (const std::bad_alloc&) {
    return ResourceExhaustedError("out of memory reading '" + path + "' (" + FormatBytes(f.size()) + ")");
  }
  if (out.size() > max_bytes) return TooLarge(path, "longer (it grew while being read)", max_bytes, what);
  return out;
}

StatusOr<std::string> ReadFile(const std::string& path) { return ReadFile(path, kDefaultMaxFileBytes); }

StatusOr<std::string> ReadFilePrefix(const std::string& path, size_t n, uint64_t* size) {
  RegularFile f;
  RT_RETURN_IF_ERROR(f.Open(path));
  if (size) *size = f.size();
  std::string out;
  RT_RETURN_IF_ERROR(f.ReadUpTo(path, n, &out));
  return out;
}

}  // namespace ringtrain
