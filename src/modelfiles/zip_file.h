// Zip archives in memory over libzip (Debian libzip-dev): the members of a .keras archive
// read from its bytes, and an archive built from named members. Keras writes its archives
// with Python's zipfile, uncompressed (ZIP_STORED); both stored and deflated members read.
//
// Errors: DATA_LOSS naming the member for a missing member, a member larger than the
// caller's bound, a truncated or corrupt archive (libzip's CRC check included); INTERNAL
// for a failure to build an archive. No Subject is set: the callers add the path and
// kStorage. Nothing throws. Threading: any thread; each call owns what it creates.
#pragma once

#include <cstdint>
#include <ctime>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace ringtrain::modelfiles {

inline constexpr char kZipMagic[] = "PK\x03\x04";

class ZipReader {
 public:
  // Checks the archive's central directory. `what` names it in errors.
  static StatusOr<ZipReader> Open(const std::string& bytes, const std::string& what);
  ZipReader(ZipReader&& other) noexcept;
  ZipReader& operator=(ZipReader&&) = delete;
  ~ZipReader();

  std::vector<std::string> Names() const;
  bool Has(const std::string& name) const;
  // The member's uncompressed bytes: DATA_LOSS when it is missing, larger than `max_bytes`,
  // or does not decompress to its recorded size and CRC.
  StatusOr<std::string> Read(const std::string& name, uint64_t max_bytes) const;

 private:
  ZipReader(void* archive, std::string what) : archive_(archive), what_(std::move(what)) {}
  void* archive_;  // a zip_t*, reading the caller's bytes (which must outlive it)
  std::string what_;
};

// An archive of `members` (name, bytes) in that order, stored uncompressed, every entry
// dated `mtime`: equal inputs make equal bytes.
StatusOr<std::string> BuildZip(const std::vector<std::pair<std::string, std::string>>& members, std::time_t mtime);

}  // namespace ringtrain::modelfiles
