#include "modelfiles/zip_file.h"

#include <zip.h>

#include <cstdio>

namespace ringtrain::modelfiles {
namespace {

zip_t* Z(void* p) { return static_cast<zip_t*>(p); }

std::string ZipErrorText(int code) {
  zip_error_t e;
  zip_error_init_with_code(&e, code);
  std::string s = zip_error_strerror(&e);
  zip_error_fini(&e);
  return s;
}

}  // namespace

StatusOr<ZipReader> ZipReader::Open(const std::string& bytes, const std::string& what) {
  zip_error_t err;
  zip_error_init(&err);
  zip_source_t* src = zip_source_buffer_create(bytes.data(), bytes.size(), 0, &err);
  if (src == nullptr) {
    zip_error_fini(&err);
    return InternalError("cannot read " + what + " as a zip archive (out of memory)");
  }
  zip_t* z = zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &err);
  if (z == nullptr) {
    std::string why = zip_error_strerror(&err);
    zip_source_free(src);
    zip_error_fini(&err);
    return DataLossError(what + " is not a readable zip archive (" + why + "); the file is truncated or corrupt");
  }
  zip_error_fini(&err);
  return ZipReader(z, what);
}

ZipReader::ZipReader(ZipReader&& other) noexcept : archive_(other.archive_), what_(std::move(other.what_)) {
  other.archive_ = nullptr;
}

ZipReader::~ZipReader() {
  if (archive_ != nullptr) zip_discard(Z(archive_));
}

std::vector<std::string> ZipReader::Names() const {
  std::vector<std::string> names;
  const zip_int64_t n = zip_get_num_entries(Z(archive_), 0);
  for (zip_int64_t i = 0; i < n; ++i) {
    const char* name = zip_get_name(Z(archive_), static_cast<zip_uint64_t>(i), 0);
    if (name != nullptr) names.emplace_back(name);
  }
  return names;
}

bool ZipReader::Has(const std::string& name) const { return zip_name_locate(Z(archive_), name.c_str(), 0) >= 0; }

StatusOr<std::string> ZipReader::Read(const std::string& name, uint64_t max_bytes) const {
  const std::string where = "'" + name + "' in " + what_;
  const zip_int64_t index = zip_name_locate(Z(archive_), name.c_str(), 0);
  if (index < 0) return DataLossError(where + " is missing");
  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_stat_index(Z(archive_), static_cast<zip_uint64_t>(index), 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE)) {
    return DataLossError(where + " cannot be read (corrupt archive)");
  }
  if (st.size > max_bytes) {
    return DataLossError(where + " is " + std::to_string(st.size) + " bytes, more than the " +
                         std::to_string(max_bytes) + " it can need");
  }
  zip_file_t* f = zip_fopen_index(Z(archive_), static_cast<zip_uint64_t>(index), 0);
  if (f == nullptr) {
    return DataLossError(where + " cannot be opened (" + std::string(zip_strerror(Z(archive_))) + ")");
  }
  std::string out(static_cast<size_t>(st.size), '\0');
  zip_int64_t got = 0;
  while (static_cast<uint64_t>(got) < st.size) {
    zip_int64_t n = zip_fread(f, out.data() + got, st.size - static_cast<uint64_t>(got));
    if (n <= 0) {
      std::string why = n < 0 ? zip_file_strerror(f) : "ends early";
      zip_fclose(f);
      return DataLossError(where + " is truncated or corrupt (" + why + ")");
    }
    got += n;
  }
  // One more read reaches the end, where libzip checks the CRC.
  char extra;
  const zip_int64_t tail = zip_fread(f, &extra, 1);
  std::string why = tail < 0 ? zip_file_strerror(f) : "";
  const int closed = zip_fclose(f);
  if (tail != 0 || closed != 0) {
    if (why.empty()) why = closed != 0 ? ZipErrorText(closed) : "longer than recorded";
    return DataLossError(where + " is truncated or corrupt (" + why + ")");
  }
  return out;
}

StatusOr<std::string> BuildZip(const std::vector<std::pair<std::string, std::string>>& members, std::time_t mtime) {
  zip_error_t err;
  zip_error_init(&err);
  zip_source_t* out = zip_source_buffer_create(nullptr, 0, 0, &err);
  if (out == nullptr) return InternalError("cannot build a zip archive in memory");
  zip_t* z = zip_open_from_source(out, ZIP_TRUNCATE, &err);
  if (z == nullptr) {
    zip_source_free(out);
    return InternalError("cannot build a zip archive in memory: " + std::string(zip_error_strerror(&err)));
  }
  zip_source_keep(out);  // the archive's bytes outlive zip_close
  for (const auto& [name, bytes] : members) {
    zip_source_t* s = zip_source_buffer(z, bytes.data(), bytes.size(), 0);
    const zip_int64_t index = s == nullptr ? -1 : zip_file_add(z, name.c_str(), s, ZIP_FL_ENC_UTF_8);
    if (index < 0) {
      if (s != nullptr) zip_source_free(s);
      std::string why = zip_strerror(z);
      zip_discard(z);
      zip_source_free(out);
      return InternalError("cannot add '" + name + "' to a zip archive: " + why);
    }
    zip_set_file_compression(z, static_cast<zip_uint64_t>(index), ZIP_CM_STORE, 0);
    zip_file_set_mtime(z, static_cast<zip_uint64_t>(index), mtime, 0);
  }
  if (zip_close(z) != 0) {
    std::string why = zip_strerror(z);
    zip_discard(z);
    zip_source_free(out);
    return InternalError("cannot write a zip archive in memory: " + why);
  }
  std::string bytes;
  if (zip_source_open(out) == 0) {
    zip_source_seek(out, 0, SEEK_END);
    const zip_int64_t size = zip_source_tell(out);
    zip_source_seek(out, 0, SEEK_SET);
    if (size > 0) {
      bytes.resize(static_cast<size_t>(size));
      if (zip_source_read(out, bytes.data(), static_cast<zip_uint64_t>(size)) != size) bytes.clear();
    }
    zip_source_close(out);
  }
  zip_source_free(out);
  if (bytes.empty()) return InternalError("cannot take the bytes of a zip archive built in memory");
  return bytes;
}

}  // namespace ringtrain::modelfiles
