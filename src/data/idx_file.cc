#include "data/idx_file.h"

#include <algorithm>
#include <cstdio>

#include "common/file.h"
#include "common/memory_bound.h"

namespace ringtrain::data {
namespace {

constexpr uint32_t kImagesMagic = kIdxImagesMagic;
constexpr uint32_t kLabelsMagic = kIdxLabelsMagic;
constexpr uint64_t kMaxDecompressed = kMaxIdxDataBytes;

uint32_t BigEndian32(const std::string& b, size_t at) {
  auto u = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(b[at + i])); };
  return (u(0) << 24) | (u(1) << 16) | (u(2) << 8) | u(3);
}

std::string Hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08x", v);
  return buf;
}

Status MagicError(const std::string& path, uint32_t magic, uint32_t want_magic) {
  const std::string what = want_magic == kImagesMagic ? "images" : "labels";
  std::string hint = "is it an IDX " + what + " file?";
  if (magic == kImagesMagic || magic == kLabelsMagic) {
    hint = std::string("it looks like an IDX ") + (magic == kImagesMagic ? "images" : "labels") +
           " file; are 'images' and 'labels' swapped?";
  }
  return DataLossError("'" + path + "' has IDX magic number " + std::to_string(magic) + " (" + Hex32(magic) +
                       "), expected " + std::to_string(want_magic) + " for " + what + "; " + hint);
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
  if (magic != want_magic) return MagicError(path, magic, want_magic);
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

// The first bytes of a file to look at: enough for any gzip header (unless it carries
// a huge name or comment, when more is read) and any IDX header (at most 1024 bytes).
constexpr size_t kPeekBytes = 64 << 10;
constexpr size_t kMaxPeekBytes = 16 << 20;
constexpr size_t kMaxIdxHeader = 4 + 4 * 255;
// deflate cannot compress better than about 1032:1 (a 258-byte match in 2 bits).
constexpr uint64_t kMaxDeflateRatio = 1032;

// Bytes per element of the IDX type code (the magic's third byte); 0 for unknown codes.
uint64_t IdxElementSize(unsigned char type) {
  switch (type) {
    case 0x08: case 0x09: return 1;  // unsigned / signed byte
    case 0x0B: return 2;             // short
    case 0x0C: case 0x0D: return 4;  // int, float
    case 0x0E: return 8;             // double
  }
  return 0;
}

bool IsGzip(const std::string& bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

Status FileError(const Status& s, const std::string& path, const std::string& field) {
  if (s.code() == Code::kNotFound) {
    return NotFoundError("data file '" + path + "' does not exist (" + field +
                         "); check the path -- relative paths are resolved against the job file's directory")
        .About(Subject::kData);
  }
  return s.WithContext(field).About(Subject::kData);
}

}  // namespace

StatusOr<IdxHeader> ReadIdxHeader(const std::string& path, const std::string& field) {
  IdxHeader h;
  auto prefix = ReadFilePrefix(path, kPeekBytes, &h.file_bytes);
  if (!prefix.ok()) return FileError(prefix.status(), path, field);
  std::string head = std::move(prefix).value();
  h.gzipped = IsGzip(head);
  if (h.gzipped) {
    auto decoded = GunzipPrefix(head, path, kMaxIdxHeader);
    if (decoded.ok() && decoded->size() < kMaxIdxHeader && head.size() < h.file_bytes) {
      // The gzip header itself is long (a name or comment field): look further.
      auto more = ReadFilePrefix(path, kMaxPeekBytes);
      if (!more.ok()) return FileError(more.status(), path, field);
      decoded = GunzipPrefix(*more, path, kMaxIdxHeader);
    }
    if (!decoded.ok()) return decoded.status().About(Subject::kData);
    head = std::move(decoded).value();
  }
  if (head.size() < 4) return h;
  h.has_magic = true;
  h.magic = BigEndian32(head, 0);
  if (head[0] != 0 || head[1] != 0) return h;
  const uint64_t element = IdxElementSize(static_cast<unsigned char>(head[2]));
  const size_t ndims = static_cast<unsigned char>(head[3]);
  if (element == 0 || ndims == 0) return h;
  h.looks_like_idx = true;
  h.header_bytes = 4 + 4 * ndims;
  if (head.size() < h.header_bytes) return h;  // truncated: the parser says so
  h.data_bytes = element;
  for (size_t d = 0; d < ndims; ++d) {
    h.dims.push_back(BigEndian32(head, 4 + 4 * d));
    h.data_bytes = SatMul(h.data_bytes, h.dims.back());
  }
  return h;
}

Status CheckIdxHeader(const IdxHeader& h, const std::string& path, const std::string& field, uint32_t want_magic) {
  if (want_magic != 0 && h.has_magic && h.magic != want_magic) {
    return MagicError(path, h.magic, want_magic).About(Subject::kData);
  }
  if (!h.looks_like_idx || h.dims.empty()) return Status::Ok();  // the parser names what is wrong
  const auto bad = [&](const std::string& what) { return DataLossError("'" + path + "' " + what).About(Subject::kData); };
  if (h.data_bytes > kMaxDecompressed) {
    return bad("declares " + std::to_string(h.data_bytes) + " bytes of data, more than " +
               FormatBytes(kMaxDecompressed) + " (" + field + "); the header is corrupt");
  }
  const uint64_t want = h.header_bytes + h.data_bytes;
  if (!h.gzipped && h.file_bytes < want) {
    return bad("is truncated: its header declares " + std::to_string(h.data_bytes) + " data bytes but only " +
               std::to_string(h.file_bytes - std::min(h.file_bytes, h.header_bytes)) + " follow; re-download the file");
  }
  if (!h.gzipped && h.file_bytes > want) {
    return bad("has " + std::to_string(h.file_bytes - want) + " unexpected bytes after the " +
               std::to_string(h.data_bytes) + " data bytes its header declares");
  }
  if (h.gzipped && want > SatAdd(SatMul(h.file_bytes, kMaxDeflateRatio), 1 << 10)) {
    return bad("declares " + std::to_string(h.data_bytes) + " bytes of data, but a gzip file of " +
               std::to_string(h.file_bytes) + " bytes cannot hold more than about " +
               std::to_string(kMaxDeflateRatio) + " times that (" + field + "); the header is corrupt");
  }
  return Status::Ok();
}

StatusOr<std::string> ReadMaybeGzipped(const std::string& path, const std::string& field, uint32_t want_magic) {
  RT_ASSIGN_OR_RETURN(const IdxHeader h, ReadIdxHeader(path, field));
  RT_RETURN_IF_ERROR(CheckIdxHeader(h, path, field, want_magic));
  // Read no further than the header declares: a gzip bomb, or a stream that never
  // ends, stops there. A file that does not look like IDX is read only as far as the
  // parser needs to say so.
  const bool declared = h.looks_like_idx && !h.dims.empty();
  const uint64_t want = declared ? h.header_bytes + h.data_bytes : 16;
  if (!h.gzipped) {
    auto raw = declared ? ReadFile(path, want, "an IDX file whose header declares " + std::to_string(want) + " bytes")
                        : ReadFilePrefix(path, static_cast<size_t>(want));
    if (!raw.ok()) return FileError(raw.status(), path, field);
    return raw;
  }
  // gzip stores incompressible data with a few bytes per 64 KiB block; twice the
  // declared size (plus room for headers) bounds any honest file.
  auto compressed = ReadFile(path, SatAdd(SatMul(want, 2), 1 << 20), "a gzip file whose IDX header declares " +
                                                                         std::to_string(want) + " bytes");
  if (!compressed.ok()) return FileError(compressed.status(), path, field);
  if (!declared) {
    auto head = GunzipPrefix(*compressed, path, static_cast<size_t>(want));
    if (!head.ok()) return head.status().About(Subject::kData);
    return head;
  }
  auto out = Gunzip(*compressed, path, want);
  if (!out.ok()) {
    Status s = out.status();
    if (s.message().find("decompresses to more than") != std::string::npos) {
      s = DataLossError("'" + path + "' decompresses to more than the " + std::to_string(want) +
                        " bytes its IDX header declares; the file is corrupt");
    }
    return s.About(Subject::kData);
  }
  return out;
}

StatusOr<IdxImages> ParseIdxImages(const std::string& bytes, const std::string& path) {
  std::vector<uint32_t> dims;
  if (Status s = ParseIdxHeader(bytes, path, kImagesMagic, 3, "images", &dims); !s.ok()) return s.About(Subject::kData);
  IdxImages out;
  out.count = dims[0];
  out.rows = dims[1];
  out.cols = dims[2];
  out.pixels.assign(bytes.begin() + 16, bytes.end());
  return out;
}

StatusOr<IdxLabels> ParseIdxLabels(const std::string& bytes, const std::string& path) {
  std::vector<uint32_t> dims;
  if (Status s = ParseIdxHeader(bytes, path, kLabelsMagic, 1, "labels", &dims); !s.ok()) return s.About(Subject::kData);
  IdxLabels out;
  out.labels.assign(bytes.begin() + 8, bytes.end());
  return out;
}

}  // namespace ringtrain::data
