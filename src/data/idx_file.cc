#include "data/idx_file.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>

#include "common/file.h"

namespace ringtrain::data {
namespace {

constexpr uint32_t kImagesMagic = 2051;  // 0x00000803: unsigned bytes, 3 dimensions
constexpr uint32_t kLabelsMagic = 2049;  // 0x00000801: unsigned bytes, 1 dimension
// The decompressed size we are willing to hold; MNIST's training images are 47 MB.
constexpr size_t kMaxDecompressed = size_t{4} << 30;

uint32_t BigEndian32(const std::string& b, size_t at) {
  auto u = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(b[at + i])); };
  return (u(0) << 24) | (u(1) << 16) | (u(2) << 8) | u(3);
}

std::string Hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08x", v);
  return buf;
}

// Checks the magic and returns the dimensions of an IDX file of unsigned bytes.
Status ParseIdxHeader(const std::string& bytes, const std::string& path, uint32_t want_magic, int want_dims,
                      const char* what, std::vector<uint32_t>* dims) {
  const size_t header = 4 + 4 * static_cast<size_t>(want_dims);
  if (bytes.size() < 4) {
    return DataLossError("'" + path + "' is truncated: " + std::to_string(bytes.size()) +
                         " bytes, too short for an IDX header; re-download the file");
  }
  const uint32_t magic = BigEndian32(bytes, 0);
  if (magic != want_magic) {
    std::string hint = "is it an IDX " + std::string(what) + " file?";
    if (magic == kImagesMagic || magic == kLabelsMagic) {
      hint = std::string("it looks like an IDX ") + (magic == kImagesMagic ? "images" : "labels") +
             " file; are 'images' and 'labels' swapped?";
    }
    return DataLossError("'" + path + "' has IDX magic number " + std::to_string(magic) + " (" + Hex32(magic) +
                         "), expected " + std::to_string(want_magic) + " for " + what + "; " + hint);
  }
  if (bytes.size() < header) {
    return DataLossError("'" + path + "' is truncated: " + std::to_string(bytes.size()) +
                         " bytes, shorter than its " + std::to_string(header) + "-byte IDX header");
  }
  dims->clear();
  uint64_t elements = 1;
  for (int d = 0; d < want_dims; ++d) {
    dims->push_back(BigEndian32(bytes, 4 + 4 * static_cast<size_t>(d)));
    elements *= dims->back();  // at most 3 factors below 2^32 each: checked below
    if (d > 0 && dims->back() == 0) {
      return DataLossError("'" + path + "' declares dimension " + std::to_string(d) + " of size 0");
    }
    if (elements > kMaxDecompressed) {
      return DataLossError("'" + path + "' declares more than " + std::to_string(kMaxDecompressed) +
                           " bytes of data; the header is corrupt");
    }
  }
  const size_t have = bytes.size() - header;
  if (have < elements) {
    return DataLossError("'" + path + "' is truncated: its header declares " + std::to_string(elements) +
                         " data bytes but only " + std::to_string(have) + " follow; re-download the file");
  }
  if (have > elements) {
    return DataLossError("'" + path + "' has " + std::to_string(have - elements) +
                         " unexpected bytes after the " + std::to_string(elements) +
                         " data bytes its header declares");
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::string> Gunzip(const std::string& compressed, const std::string& path) {
  z_stream zs;
  std::memset(&zs, 0, sizeof(zs));
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) {  // 16: expect a gzip wrapper
    return InternalError("zlib inflateInit2 failed while reading '" + path + "'");
  }
  const auto* in = reinterpret_cast<const Bytef*>(compressed.data());
  size_t in_pos = 0;
  std::string out(std::clamp<size_t>(compressed.size() * 4, 1 << 16, kMaxDecompressed), '\0');
  size_t out_pos = 0;
  Status status;
  for (;;) {
    if (zs.avail_in == 0 && in_pos < compressed.size()) {
      // avail_in is 32 bits wide; feed larger inputs in pieces.
      zs.next_in = const_cast<Bytef*>(in + in_pos);
      zs.avail_in = static_cast<uInt>(std::min<size_t>(compressed.size() - in_pos, UINT_MAX / 2));
      in_pos += zs.avail_in;
    }
    if (out_pos == out.size()) {
      if (out.size() >= kMaxDecompressed) {
        status = DataLossError("'" + path + "' decompresses to more than " + std::to_string(kMaxDecompressed) +
                               " bytes; refusing to read it");
        break;
      }
      out.resize(std::min(out.size() * 2, kMaxDecompressed));
    }
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + out_pos);
    zs.avail_out = static_cast<uInt>(std::min<size_t>(out.size() - out_pos, UINT_MAX / 2));
    const uInt avail_before = zs.avail_out;
    const int rc = inflate(&zs, Z_NO_FLUSH);
    out_pos += avail_before - zs.avail_out;
    if (rc == Z_STREAM_END) {
      // A gzip file may hold several members back to back (as `cat a.gz b.gz` makes).
      const size_t next = in_pos - zs.avail_in;
      if (next + 2 <= compressed.size() && static_cast<unsigned char>(compressed[next]) == 0x1f &&
          static_cast<unsigned char>(compressed[next + 1]) == 0x8b) {
        inflateReset(&zs);
        continue;
      }
      break;  // like gzip(1), ignore trailing padding after the last member
    }
    if (rc == Z_OK) continue;
    if (rc == Z_BUF_ERROR && zs.avail_out == 0) continue;  // the loop grows the output
    if (rc == Z_BUF_ERROR) {  // no output space missing, so the input ran out mid-stream
      status = DataLossError("'" + path + "' is a truncated gzip file (the compressed stream ends after " +
                             std::to_string(out_pos) + " decompressed bytes); re-download the file");
      break;
    }
    status = DataLossError("'" + path + "' is a corrupt gzip file: " + (zs.msg ? zs.msg : "zlib error " +
                                                                                              std::to_string(rc)));
    break;
  }
  inflateEnd(&zs);
  if (!status.ok()) return status;
  out.resize(out_pos);
  return out;
}

StatusOr<std::string> ReadMaybeGzipped(const std::string& path, const std::string& field) {
  StatusOr<std::string> read = ReadFile(path);
  if (!read.ok()) {
    if (read.status().code() == Code::kNotFound) {
      return NotFoundError("data file '" + path + "' does not exist (" + field +
                           "); check the path -- relative paths are resolved against the job file's directory");
    }
    return read.status().WithContext(field);
  }
  const std::string& bytes = read.value();
  if (bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
      static_cast<unsigned char>(bytes[1]) == 0x8b) {
    return Gunzip(bytes, path);
  }
  return read;
}

StatusOr<IdxImages> ParseIdxImages(const std::string& bytes, const std::string& path) {
  std::vector<uint32_t> dims;
  RT_RETURN_IF_ERROR(ParseIdxHeader(bytes, path, kImagesMagic, 3, "images", &dims));
  IdxImages out;
  out.count = dims[0];
  out.rows = dims[1];
  out.cols = dims[2];
  out.pixels.assign(bytes.begin() + 16, bytes.end());
  return out;
}

StatusOr<IdxLabels> ParseIdxLabels(const std::string& bytes, const std::string& path) {
  std::vector<uint32_t> dims;
  RT_RETURN_IF_ERROR(ParseIdxHeader(bytes, path, kLabelsMagic, 1, "labels", &dims));
  IdxLabels out;
  out.labels.assign(bytes.begin() + 8, bytes.end());
  return out;
}

}  // namespace ringtrain::data
