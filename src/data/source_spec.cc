#include "data/source_spec.h"

#include <filesystem>
#include <set>

#include "common/json.h"
#include "data/entry_fields.h"

namespace ringtrain::data {
namespace {

using entry::Invalid;
using entry::CheckFormatKeys;
using entry::ResolvePath;

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr const char* kFormats =
    "\"mnist_idx\", \"synthetic\", \"image_folder\", \"tfrecord\", \"npz\", \"npy\", \"keras_dataset\"";
// Bounds that keep a typo from allocating the machine away.
constexpr int64_t kMaxSyntheticFloats = int64_t{1} << 30;  // 4 GiB of floats
constexpr int kMaxSyntheticDim = 4096;
constexpr int kMaxSyntheticClasses = 1000;

// Everything wrong with a source spec is the job file's: about kConfig.
StatusOr<int64_t> GetInt(const json& j, const std::string& field, int64_t lo, int64_t hi) {
  if (!j.is_number_integer()) return Invalid(field, "must be an integer, got " + JsonBrief(j));
  if (j.is_number_unsigned() && j.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    return Invalid(field, "must be at most " + std::to_string(hi) + ", got " + JsonBrief(j));
  }
  const int64_t v = j.get<int64_t>();
  if (v < lo || v > hi) {
    return Invalid(field, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
                              std::to_string(v));
  }
  return v;
}

// "images": "a.gz" or ["a.gz", "b.gz"] -> resolved paths and their field names.
Status GetPaths(const json& j, const std::string& field, const std::string& base_dir,
                std::vector<std::string>* paths, std::vector<std::string>* fields) {
  if (j.is_string()) {
    if (j.get<std::string>().empty()) return Invalid(field, "must not be empty");
    paths->push_back(ResolvePath(j.get<std::string>(), base_dir));
    fields->push_back(field);
    return Status::Ok();
  }
  if (!j.is_array() || j.empty()) return Invalid(field, "must be a path or a non-empty list of paths");
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string f = field + "[" + std::to_string(i) + "]";
    if (!j[i].is_string() || j[i].get<std::string>().empty()) return Invalid(f, "must be a non-empty path string");
    paths->push_back(ResolvePath(j[i].get<std::string>(), base_dir));
    fields->push_back(f);
  }
  return Status::Ok();
}

// An optional non-negative integer of up to 64 bits.
Status GetSeed(const json& s, const char* key, const std::string& field, uint64_t* out) {
  if (!s.contains(key)) return Status::Ok();
  const json& v = s[key];
  if (!v.is_number_integer() || (!v.is_number_unsigned() && v.get<int64_t>() < 0)) {
    return Invalid(field + "." + key, "must be a non-negative integer, got " + JsonBrief(v));
  }
  *out = v.get<uint64_t>();
  return Status::Ok();
}

Status ParseMnist(const json& s, const std::string& base_dir, SourceSpec* spec) {
  const std::string& f = spec->field;
  RT_RETURN_IF_ERROR(CheckFormatKeys(s, f, {"format", "images", "labels", "first", "count"}, "mnist_idx"));
  if (!s.contains("images")) return Invalid(f + ".images", "missing; name the IDX images file(s)");
  if (!s.contains("labels")) return Invalid(f + ".labels", "missing; name the IDX labels file(s)");
  RT_RETURN_IF_ERROR(GetPaths(s["images"], f + ".images", base_dir, &spec->images, &spec->image_fields));
  RT_RETURN_IF_ERROR(GetPaths(s["labels"], f + ".labels", base_dir, &spec->labels, &spec->label_fields));
  if (spec->images.size() != spec->labels.size()) {
    return Invalid(f + ".labels", "lists " + std::to_string(spec->labels.size()) + " files but " + f +
                                      ".images lists " + std::to_string(spec->images.size()) +
                                      "; they are paired by position");
  }
  if (s.contains("first")) {
    RT_ASSIGN_OR_RETURN(spec->first, GetInt(s["first"], f + ".first", 0, INT64_MAX));
  }
  if (s.contains("count")) {
    RT_ASSIGN_OR_RETURN(spec->count, GetInt(s["count"], f + ".count", 1, INT64_MAX));
  }
  return Status::Ok();
}

Status ParseSynthetic(const json& s, SourceSpec* spec) {
  const std::string& f = spec->field;
  RT_RETURN_IF_ERROR(
      CheckFormatKeys(s, f, {"format", "count", "shape", "classes", "seed", "task", "noise", "first", "files"}, "synthetic"));
  SyntheticParams& p = spec->synthetic;
  if (!s.contains("count")) return Invalid(f + ".count", "missing; a synthetic source needs its number of examples");
  RT_ASSIGN_OR_RETURN(spec->count, GetInt(s["count"], f + ".count", 1, INT64_MAX));
  spec->first = 0;
  if (s.contains("first")) {
    RT_ASSIGN_OR_RETURN(spec->first, GetInt(s["first"], f + ".first", 0, INT64_MAX - *spec->count));
  }
  if (s.contains("shape")) {
    const json& shape = s["shape"];
    if (!shape.is_array() || shape.size() < 2 || shape.size() > 3) {
      return Invalid(f + ".shape", "must be [rows, cols] or [rows, cols, channels], got " + JsonBrief(shape));
    }
    p.shape.clear();
    for (size_t i = 0; i < shape.size(); ++i) {
      const int64_t lo = i < 2 ? 8 : 1;
      RT_ASSIGN_OR_RETURN(int64_t d, GetInt(shape[i], f + ".shape[" + std::to_string(i) + "]", lo,
                                            i < 2 ? kMaxSyntheticDim : 64));
      p.shape.push_back(static_cast<int>(d));
    }
  }
  if (s.contains("classes")) {
    RT_ASSIGN_OR_RETURN(int64_t c, GetInt(s["classes"], f + ".classes", 2, kMaxSyntheticClasses));
    p.classes = static_cast<int>(c);
  }
  RT_RETURN_IF_ERROR(GetSeed(s, "seed", f, &p.seed));
  RT_RETURN_IF_ERROR(GetSeed(s, "task", f, &p.task));
  if (s.contains("noise")) {
    const std::optional<double> noise = JsonNumber(s["noise"]);
    if (!noise || *noise < 0 || *noise > 1) {
      return Invalid(f + ".noise", "must be a number in [0, 1], got " + JsonBrief(s["noise"]));
    }
    p.noise = static_cast<float>(*noise);
  }
  if (s.contains("files")) {
    RT_ASSIGN_OR_RETURN(spec->virtual_files, GetInt(s["files"], f + ".files", 1, *spec->count));
  }
  int64_t size = 1;
  for (int d : p.shape) size *= d;
  if (*spec->count > kMaxSyntheticFloats / size) {
    return Invalid(f + ".count", std::to_string(*spec->count) + " examples of " + std::to_string(size) +
                                     " floats exceed the limit of " + std::to_string(kMaxSyntheticFloats) +
                                     " floats; use fewer or smaller examples");
  }
  return Status::Ok();
}

}  // namespace

StatusOr<SourceSpec> ParseSourceSpec(const json& source, const std::string& base_dir, const std::string& field) {
  SourceSpec spec;
  spec.field = field;
  try {
    if (!source.is_object()) return Invalid(field, "must be an object with a \"format\" key, got " + JsonBrief(source));
    if (!source.contains("format") || !source["format"].is_string()) {
      return Invalid(field + ".format", std::string("missing or not a string; valid formats: ") + kFormats);
    }
    const std::string format = source["format"].get<std::string>();
    if (format == "mnist_idx") {
      spec.format = SourceSpec::Format::kMnistIdx;
      RT_RETURN_IF_ERROR(ParseMnist(source, base_dir, &spec));
    } else if (format == "synthetic") {
      spec.format = SourceSpec::Format::kSynthetic;
      RT_RETURN_IF_ERROR(ParseSynthetic(source, &spec));
    } else if (format == "image_folder" || format == "tfrecord" || format == "npz" || format == "npy" ||
               format == "keras_dataset") {
      // A caller bug, not the job's: these formats decode on demand (data/shard.h).
      return InternalError(field + ".format: \"" + format +
                           "\" is opened with data::OpenShard, not loaded whole with LoadShard");
    } else {
      return Invalid(field + ".format", "unknown format \"" + format + "\"; valid formats: " + kFormats);
    }
  } catch (const std::exception& e) {  // nlohmann::json::exception, std::bad_alloc
    return Invalid(field, std::string("malformed source: ") + e.what());
  }
  return spec;
}

}  // namespace ringtrain::data
