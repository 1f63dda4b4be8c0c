// Reading whole files named by a user, with errors converted to Status at this edge.
//
// Only regular files are read. A directory, a FIFO, a character or block device
// (/dev/zero, /dev/urandom, a terminal) or a socket is refused with one line naming the
// path and what it is, before a single byte is read: such "files" may never end, or may
// block forever. The file is opened with O_NONBLOCK so that opening a FIFO that has no
// writer returns at once instead of blocking in open(2); fstat(2) on the open
// descriptor then decides (no race with a rename between a stat and the open).
//
// Every read has a size bound chosen by the caller for the kind of file (the bounds
// ringtrain uses are listed in docs/reference/bad-input.md): a longer file is refused
// naming the bound, and a file that grows while it is read stops at the bound too.
//
// Blocking: disk I/O only. Threading: any thread.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace ringtrain {

// The bound of the one-argument ReadFile: above any file ringtrain writes itself (a
// backup of the largest model, 2^31 parameters with Adam's two slots, is 24 GiB).
constexpr uint64_t kDefaultMaxFileBytes = uint64_t{64} << 30;

// What a path is when it is not a regular file ("a directory", "a FIFO (named pipe)",
// "a character device", "a block device", "a socket", "a symbolic link"), or "" for a
// regular file. `mode` is a struct stat's st_mode.
std::string FileKind(unsigned mode);

// "1.5 GiB", "512 KiB", "17 bytes": sizes in messages.
std::string FormatBytes(uint64_t bytes);

// The file's bytes, at most `max_bytes` of them.
// NOT_FOUND: the path does not exist ("file 'p' does not exist").
// INVALID_ARGUMENT: not a regular file ("'p' is a directory, not a regular file"), or
//   longer than max_bytes ("'p' is 20.0 MiB, more than the 16.0 MiB a job file may
//   have"; `what` names the kind of file, default "a file").
// Other errors carry errno's text (ErrnoError's codes).
StatusOr<std::string> ReadFile(const std::string& path, uint64_t max_bytes, const std::string& what = "a file");
// ReadFile(path, kDefaultMaxFileBytes).
StatusOr<std::string> ReadFile(const std::string& path);

// The first `n` bytes of the regular file at `path` (fewer when it is shorter), with
// ReadFile's checks of what the path is; and its size in *size when not null.
StatusOr<std::string> ReadFilePrefix(const std::string& path, size_t n, uint64_t* size = nullptr);

}  // namespace ringtrain
