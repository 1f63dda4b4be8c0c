// Inflating gzip streams held in memory, with a bound on what comes out.
#include <zlib.h>

#include <algorithm>
#include <climits>
#include <cstring>

#include "data/idx_file.h"

namespace ringtrain::data {
namespace {

// Inflates `compressed` (one or more gzip members). With `stop_at_limit`, output past
// `limit` bytes is not an error: inflation stops there (used to peek at a header);
// without it, more than `limit` bytes is DATA_LOSS. A stream cut short is DATA_LOSS
// unless stopping at the limit.
StatusOr<std::string> Inflate(const std::string& compressed, const std::string& path, uint64_t limit,
                              bool stop_at_limit) {
  z_stream zs;
  std::memset(&zs, 0, sizeof(zs));
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) {  // 16: expect a gzip wrapper
    return InternalError("zlib inflateInit2 failed while reading '" + path + "'");
  }
  const auto* in = reinterpret_cast<const Bytef*>(compressed.data());
  size_t in_pos = 0;
  // Room for one byte past the limit, which tells "more than the limit" from "exactly".
  const uint64_t cap = limit == UINT64_MAX ? limit : limit + 1;
  std::string out;
  Status status;
  try {
    out.resize(static_cast<size_t>(std::min<uint64_t>(std::clamp<uint64_t>(compressed.size() * 4, 1 << 16, cap), cap)));
  } catch (const std::bad_alloc&) {
    inflateEnd(&zs);
    return ResourceExhaustedError("out of memory decompressing '" + path + "'");
  }
  size_t out_pos = 0;
  for (;;) {
    if (zs.avail_in == 0 && in_pos < compressed.size()) {
      // avail_in is 32 bits wide; feed larger inputs in pieces.
      zs.next_in = const_cast<Bytef*>(in + in_pos);
      zs.avail_in = static_cast<uInt>(std::min<size_t>(compressed.size() - in_pos, UINT_MAX / 2));
      in_pos += zs.avail_in;
    }
    if (out_pos == out.size()) {
      if (out.size() >= cap) {
        if (!stop_at_limit) {
          status = DataLossError("'" + path + "' decompresses to more than " + std::to_string(limit) +
                                 " bytes; refusing to read it (a corrupt file, or not what it claims to be)");
        }
        break;
      }
      try {
        out.resize(static_cast<size_t>(std::min<uint64_t>(out.size() * uint64_t{2}, cap)));
      } catch (const std::bad_alloc&) {
        status = ResourceExhaustedError("out of memory decompressing '" + path + "' (" +
                                        std::to_string(out.size()) + " bytes so far)");
        break;
      }
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
      if (!stop_at_limit) {
        status = DataLossError("'" + path + "' is a truncated gzip file (the compressed stream ends after " +
                               std::to_string(out_pos) + " decompressed bytes); re-download the file");
      }
      break;
    }
    status = DataLossError("'" + path + "' is a corrupt gzip file: " +
                           (zs.msg ? zs.msg : "zlib error " + std::to_string(rc)));
    break;
  }
  inflateEnd(&zs);
  if (!status.ok()) return status;
  out.resize(std::min<uint64_t>(out_pos, limit));
  return out;
}

}  // namespace

StatusOr<std::string> Gunzip(const std::string& compressed, const std::string& path, uint64_t max_bytes) {
  return Inflate(compressed, path, max_bytes, /*stop_at_limit=*/false);
}

StatusOr<std::string> GunzipPrefix(const std::string& compressed, const std::string& path, size_t n) {
  return Inflate(compressed, path, n, /*stop_at_limit=*/true);
}

}  // namespace ringtrain::data
