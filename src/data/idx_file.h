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

// The most data bytes an IDX file may declare (MNIST's training images are 47 MB).
// The memory bound (train/memory_bound.h) is checked against the declared sizes before
// any file is read, so this is only the last line of defence.
constexpr uint64_t kMaxIdxDataBytes = uint64_t{4} << 30;
constexpr uint32_t kIdxImagesMagic = 2051;  // 0x00000803: unsigned bytes, 3 dimensions
constexpr uint32_t kIdxLabelsMagic = 2049;  // 0x00000801: unsigned bytes, 1 dimension

// The bytes of `path`, decompressed if they are gzip. `field` names the job-file
// field the path came from (e.g. "data.train.images"), for error messages. Every
// error is about Subject::kData:
// NOT_FOUND if the file does not exist; INVALID_ARGUMENT if it is not a regular file
// (a directory, FIFO or device); DATA_LOSS for a truncated or corrupt gzip stream, or a
// file longer than its IDX header declares (read only that far: a gzip bomb, or a
// stream that never ends, stops at the declared size); INTERNAL for other I/O errors.
// With `want_magic` (kIdxImagesMagic, kIdxLabelsMagic; 0: any), a file with another
// magic number is refused before its sizes are looked at, with the parsers' message.
StatusOr<std::string> ReadMaybeGzipped(const std::string& path, const std::string& field, uint32_t want_magic = 0);

// Inflates a complete gzip stream (one or more members) held in memory, at most
// `max_bytes` of output. DATA_LOSS naming `path` if it is truncated or corrupt, or
// would decompress to more than max_bytes.
StatusOr<std::string> Gunzip(const std::string& compressed, const std::string& path,
                             uint64_t max_bytes = kMaxIdxDataBytes);
// The first `n` decompressed bytes of a gzip stream that may be cut short (a prefix of
// a file); fewer when the stream ends sooner. DATA_LOSS if it is corrupt.
StatusOr<std::string> GunzipPrefix(const std::string& compressed, const std::string& path, size_t n);

// What an IDX file's header declares, read without reading its data: the first bytes
// of the file, decompressed when it is gzip.
struct IdxHeader {
  bool gzipped = false;
  uint64_t file_bytes = 0;       // on disk
  bool has_magic = false;        // the (decompressed) file has at least 4 bytes
  uint32_t magic = 0;            // its first 4 bytes, big-endian
  bool looks_like_idx = false;   // magic 00 00 <known type> <1..255 dimensions>
  std::vector<uint32_t> dims;    // as declared (when looks_like_idx and complete)
  uint64_t header_bytes = 0;     // 4 + 4 * dims
  uint64_t data_bytes = 0;       // product of dims x element size (saturated)
};
// Errors as ReadMaybeGzipped's (about kData).
StatusOr<IdxHeader> ReadIdxHeader(const std::string& path, const std::string& field);
// Whether the declared size is one the file can hold: DATA_LOSS about kData naming
// `path` when it exceeds kMaxIdxDataBytes, when a raw file is shorter (truncated) or
// longer (trailing bytes) than its header declares, or when a gzip file is too small
// to decompress to it (deflate compresses at most about 1032:1). OK for a file that
// does not look like IDX: the parsers say what is wrong with it.
// With `want_magic`, another magic number is refused first (the parsers' message,
// which says when images and labels look swapped).
Status CheckIdxHeader(const IdxHeader& header, const std::string& path, const std::string& field,
                      uint32_t want_magic = 0);

struct IdxImages {
  uint32_t count = 0, rows = 0, cols = 0;
  std::vector<uint8_t> pixels;  // count * rows * cols, row-major
};
struct IdxLabels {
  std::vector<uint8_t> labels;
};

// Parse decoded IDX bytes (magic 2051 with 3 dimensions / magic 2049 with 1).
// DATA_LOSS about kData naming `path` for a wrong magic number, zero dimensions, more
// than kMaxIdxDataBytes, or a size that does not match the header (truncated or
// trailing bytes). Never throws; sizes are checked for overflow.
StatusOr<IdxImages> ParseIdxImages(const std::string& bytes, const std::string& path);
StatusOr<IdxLabels> ParseIdxLabels(const std::string& bytes, const std::string& path);

}  // namespace ringtrain::data
