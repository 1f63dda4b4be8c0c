// Crash-safe whole-file writes and reads, and the safetensors file helpers.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <set>

#include "checkpoint/safetensors.h"

namespace ringtrain::checkpoint {
namespace {

namespace fs = std::filesystem;

// Returns 0 or the errno of the failed write.
int WriteAll(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    done += static_cast<size_t>(n);
  }
  return 0;
}

// fsync on the directory makes the rename itself durable.
int SyncDirectory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errno;
  const int rc = ::fsync(fd) == 0 ? 0 : errno;
  ::close(fd);
  return rc;
}

}  // namespace

Status WriteFileAtomically(const std::string& path, const std::string& bytes) {
  if (path.empty()) return InvalidArgumentError("cannot write a file with an empty path");
  fs::path p(path);
  const std::string dir = p.has_parent_path() ? p.parent_path().string() : ".";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    return ErrnoError("cannot create directory '" + dir + "' for '" + path + "'", ec.value());
  }
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("cannot create '" + tmp + "' to write '" + path + "'", errno);

  auto fail = [&](const std::string& what, int err) {
    ::unlink(tmp.c_str());
    return ErrnoError(what + " '" + tmp + "' (writing '" + path + "')", err);
  };
  if (const int err = WriteAll(fd, bytes); err != 0) {
    ::close(fd);
    return fail("cannot write", err);
  }
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    return fail("cannot fsync", err);
  }
  if (::close(fd) != 0) return fail("cannot close", errno);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return fail("cannot rename onto the target", errno);
  if (const int err = SyncDirectory(dir); err != 0) {
    // The data is in place; only its durability across a power cut is in doubt.
    return ErrnoError("wrote '" + path + "' but cannot fsync its directory '" + dir + "'", err);
  }
  return Status::Ok();
}

Status SaveSafetensors(const std::string& path, const std::vector<TensorView>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  std::set<std::string> names;
  for (const TensorView& t : tensors) {
    if (t.name.empty() || t.name == "__metadata__" || !names.insert(t.name).second) {
      return InvalidArgumentError("cannot save '" + path + "': tensor name '" + t.name +
                                  "' is empty, reserved or repeated; names must be unique");
    }
    int64_t elements = 1;
    for (int64_t d : t.shape) {
      if (d < 0) {
        return InvalidArgumentError("cannot save '" + path + "': tensor '" + t.name + "' has a negative dimension");
      }
      elements *= d;
    }
    if (elements > 0 && t.data == nullptr) {
      return InvalidArgumentError("cannot save '" + path + "': tensor '" + t.name + "' has no data");
    }
  }
  return WriteFileAtomically(path, EncodeSafetensors(tensors, metadata));
}

Status LoadSafetensors(const std::string& path, std::map<std::string, Tensor>* tensors,
                       std::map<std::string, std::string>* metadata) {
  RT_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  Status s = DecodeSafetensors(bytes, tensors, metadata);
  if (!s.ok()) return s.WithContext("checkpoint '" + path + "'");
  return Status::Ok();
}

}  // namespace ringtrain::checkpoint
