// Reading IDX files (the MNIST format: big-endian magic, dimensions, then raw uint8
// data), gzip-compressed or not. Compression is detected from the gzip magic bytes
// (1f 8b), never from the file name.
//
// All functions are pure apart from reading the named file; any thread may call them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace ringtrain::data {

// The bytes of `path`, decompressed if they are gzip. `field` names the job-file
// field the path came from (e.g. "data.train.images"), for error messages.
// NOT_FOUND if the file does not exist; DATA_LOSS for a truncated or corrupt gzip
// stream; INTERNAL for other I/O errors (with errno text).
StatusOr<std::string> ReadMaybeGzipped(const std::string& path, const std::string& field);

// Inflates a complete gzip stream (one or more members) held in memory.
// DATA_LOSS naming `path` if it is truncated or corrupt.
StatusOr<std::string> Gunzip(const std::string& compressed, const std::string& path);

struct IdxImages {
  uint32_t count = 0, rows = 0, cols = 0;
  std::vector<uint8_t> pixels;  // count * rows * cols, row-major
};
struct IdxLabels {
  std::vector<uint8_t> labels;
};

// Parse decoded IDX bytes (magic 2051 with 3 dimensions / magic 2049 with 1).
// DATA_LOSS naming `path` for a wrong magic number, zero dimensions, or a size that
// does not match the header (truncated or trailing bytes).
StatusOr<IdxImages> ParseIdxImages(const std::string& bytes, const std::string& path);
StatusOr<IdxLabels> ParseIdxLabels(const std::string& bytes, const std::string& path);

}  // namespace ringtrain::data
