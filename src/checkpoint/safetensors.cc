// Encoding and decoding of the safetensors format (F32 tensors only).
#include "checkpoint/safetensors.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstring>
#include <limits>

#include <nlohmann/json.hpp>

#include "common/json.h"

namespace ringtrain::checkpoint {
namespace {

using json = nlohmann::json;

// The file stores little-endian floats; memcpy to and from the host is only right on
// a little-endian host. (Every platform ringtrain targets is.)
static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes a little-endian host");

constexpr const char* kMetadataKey = "__metadata__";
// kMaxHeaderBytes (safetensors.h): the reference implementation refuses headers above
// 100 MB; so do we, which also keeps a corrupt length from making us allocate gigabytes.

// Types the format defines that ringtrain does not read (it only writes F32).
bool IsKnownDtype(const std::string& d) {
  static const char* const kKnown[] = {"BOOL", "U8",  "I8",  "F8_E5M2", "F8_E4M3", "I16", "U16", "F16",
                                       "BF16", "I32", "U32", "F32",     "F64",     "I64", "U64"};
  return std::find(std::begin(kKnown), std::end(kKnown), d) != std::end(kKnown);
}

uint64_t Product(const std::vector<int64_t>& shape) {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

struct Entry {
  std::string name;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;
};

// Validates one tensor's header entry against the size of the data section.
Status ParseEntry(const std::string& name, const json& info, uint64_t data_size, Entry* e) {
  const std::string where = "tensor '" + name + "'";
  if (!info.is_object()) return DataLossError(where + ": header entry is not an object");
  if (!info.contains("dtype") || !info["dtype"].is_string()) return DataLossError(where + ": missing dtype");
  const std::string dtype = info["dtype"].get<std::string>();
  if (dtype != "F32") {
    if (IsKnownDtype(dtype)) {
      return UnimplementedError(where + " has dtype " + dtype + "; ringtrain reads only F32 tensors");
    }
    return DataLossError(where + " has unknown dtype \"" + dtype + "\"");
  }
  if (!info.contains("shape") || !info["shape"].is_array()) return DataLossError(where + ": missing shape");
  e->name = name;
  uint64_t elements = 1;
  for (const json& d : info["shape"]) {
    if (!d.is_number_unsigned()) return DataLossError(where + ": shape " + info["shape"].dump() + " is not a list of sizes");
    const uint64_t v = d.get<uint64_t>();
    // Dimensions are int64 in memory (and in the reference implementation's usize on
    // 64-bit hosts they are used as such); a zero elsewhere in the shape would
    // otherwise let any size through the check below.
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return DataLossError(where + ": shape " + info["shape"].dump() + " has a dimension beyond 2^63 - 1");
    }
    if (v > 0 && elements > data_size / v) {  // also catches overflow
      return DataLossError(where + ": shape " + info["shape"].dump() + " is larger than the file's data");
    }
    elements *= v;
    e->shape.push_back(static_cast<int64_t>(v));
  }
  const json& off = info.contains("data_offsets") ? info["data_offsets"] : json();
  if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned()) {
    return DataLossError(where + ": data_offsets must be [begin, end]");
  }
  e->begin = off[0].get<uint64_t>();
  e->end = off[1].get<uint64_t>();
  if (e->begin > e->end || e->end > data_size) {
    return DataLossError(where + ": data_offsets [" + std::to_string(e->begin) + ", " + std::to_string(e->end) +
                         "] lie outside the " + std::to_string(data_size) + "-byte data section (truncated file?)");
  }
  if (e->end - e->begin != elements * sizeof(float)) {
    return DataLossError(where + ": shape " + info["shape"].dump() + " needs " +
                         std::to_string(elements * sizeof(float)) + " bytes but data_offsets span " +
                         std::to_string(e->end - e->begin));
  }
  return Status::Ok();
}

Status DecodeImpl(const std::string& bytes, std::map<std::string, Tensor>* tensors,
                  std::map<std::string, std::string>* metadata) {
  if (bytes.size() < 8) {
    return DataLossError("file is " + std::to_string(bytes.size()) + " bytes, too short for a safetensors header");
  }
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[i]);
  if (n > kMaxHeaderBytes || n > bytes.size() - 8) {
    return DataLossError("header length " + std::to_string(n) + " exceeds the " + std::to_string(bytes.size() - 8) +
                         " bytes after it (truncated or not a safetensors file)");
  }
  auto parsed = ParseJson(std::string_view(bytes.data() + 8, static_cast<size_t>(n)), "header");
  if (!parsed.ok()) return DataLossError("header is not a JSON object (" + parsed.status().message() + ")");
  const json header = std::move(parsed).value();
  if (!header.is_object()) return DataLossError("header is not a JSON object");
  const uint64_t data_size = bytes.size() - 8 - n;
  const char* data = bytes.data() + 8 + n;

  std::vector<Entry> entries;
  for (const auto& item : header.items()) {
    if (item.key() == kMetadataKey) {
      if (!item.value().is_object()) return DataLossError("__metadata__ is not an object");
      for (const auto& m : item.value().items()) {
        if (!m.value().is_string()) return DataLossError("__metadata__['" + m.key() + "'] is not a string");
        if (metadata) (*metadata)[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    entries.emplace_back();
    RT_RETURN_IF_ERROR(ParseEntry(item.key(), item.value(), data_size, &entries.back()));
  }
  // Like the reference implementation: the tensors must tile the data section
  // exactly, with no gaps, overlaps or trailing bytes.
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t expect = 0;
  for (const Entry& e : entries) {
    if (e.begin != expect) {
      return DataLossError("tensor '" + e.name + "' starts at data offset " + std::to_string(e.begin) +
                           " but the previous tensor ends at " + std::to_string(expect) +
                           " (overlapping or non-contiguous data_offsets)");
    }
    expect = e.end;
  }
  if (expect != data_size) {
    return DataLossError("the tensors cover " + std::to_string(expect) + " bytes but the data section has " +
                         std::to_string(data_size));
  }
  for (const Entry& e : entries) {
    Tensor t;
    t.shape = e.shape;
    t.data.resize((e.end - e.begin) / sizeof(float));
    if (!t.data.empty()) std::memcpy(t.data.data(), data + e.begin, e.end - e.begin);
    (*tensors)[e.name] = std::move(t);
  }
  return Status::Ok();
}

}  // namespace

std::string EncodeSafetensors(const std::vector<TensorView>& tensors,
                              const std::map<std::string, std::string>& metadata) {
  std::vector<const TensorView*> sorted;
  for (const TensorView& t : tensors) sorted.push_back(&t);
  std::sort(sorted.begin(), sorted.end(), [](const TensorView* a, const TensorView* b) { return a->name < b->name; });

  json header = json::object();  // std::map underneath: keys come out sorted
  if (!metadata.empty()) header[kMetadataKey] = metadata;
  uint64_t offset = 0;
  for (const TensorView* t : sorted) {
    assert(t->name != kMetadataKey && !header.contains(t->name) && "tensor names must be unique");
    const uint64_t bytes = Product(t->shape) * sizeof(float);
    header[t->name] = {{"dtype", "F32"}, {"shape", t->shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  // Names are expected to be UTF-8; replace, rather than throw on, anything else.
  std::string text = header.dump(-1, ' ', false, json::error_handler_t::replace);
  text.append((8 - text.size() % 8) % 8, ' ');  // keeps the data 8-byte aligned, as the reference does

  std::string out;
  out.reserve(8 + text.size() + offset);
  const uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  out += text;
  for (const TensorView* t : sorted) {
    const size_t bytes = Product(t->shape) * sizeof(float);
    if (bytes) out.append(reinterpret_cast<const char*>(t->data), bytes);
  }
  return out;
}

Status DecodeSafetensors(const std::string& bytes, std::map<std::string, Tensor>* tensors,
                         std::map<std::string, std::string>* metadata) {
  tensors->clear();
  if (metadata) metadata->clear();
  Status s;
  try {
    s = DecodeImpl(bytes, tensors, metadata);
  } catch (const std::exception& e) {  // nlohmann type errors, bad_alloc
    s = DataLossError(std::string("malformed safetensors header: ") + e.what());
  }
  if (!s.ok()) {
    tensors->clear();
    if (metadata) metadata->clear();
  }
  return s;
}

}  // namespace ringtrain::checkpoint
