// ParseTfRecord: the "tfrecord" entry of a job, validated, its files listed (globs
// expanded). tfrecord_source.h documents the keys.
#include <glob.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "common/json.h"
#include "data/entry_fields.h"
#include "data/tfrecord_source.h"

namespace ringtrain::data {
namespace {

using entry::Invalid;
using entry::kMaxNumClasses;
using entry::CheckKeys;
using entry::ResolvePath;

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr int kMaxDim = 1 << 16;
constexpr int64_t kMaxExampleFloats = int64_t{1} << 28;  // 1 GiB of floats per example

StatusOr<std::string> GetString(const json& j, const std::string& field) {
  if (!j.is_string()) return Invalid(field, "must be a string, got " + JsonBrief(j));
  return j.get<std::string>();
}

StatusOr<std::vector<int>> GetDims(const json& j, const std::string& field, size_t min_rank, size_t max_rank,
                                   const char* form) {
  if (!j.is_array() || j.size() < min_rank || j.size() > max_rank) {
    return Invalid(field, std::string("must be ") + form + ", got " + JsonBrief(j));
  }
  std::vector<int> dims;
  int64_t n = 1;
  for (size_t i = 0; i < j.size(); ++i) {
    const auto d = JsonInt(j[i], 1, kMaxDim);
    if (!d) return Invalid(field + "[" + std::to_string(i) + "]", "must be an integer in [1, 65536], got " + JsonBrief(j[i]));
    dims.push_back(static_cast<int>(*d));
    n *= *d;
    if (n > kMaxExampleFloats) return Invalid(field, "describes more than 2^28 values per example");
  }
  return dims;
}

// How messages name a file: relative to the job's directory when it lies below it.
std::string DisplayName(const std::string& abs, const std::string& base_dir) {
  if (base_dir.empty()) return abs;
  std::error_code ec;
  const fs::path base = fs::absolute(fs::path(base_dir), ec).lexically_normal();
  const fs::path rel = fs::path(abs).lexically_relative(base);
  if (ec || rel.empty() || *rel.begin() == "..") return abs;
  return rel.string();
}

bool HasGlobChars(const std::string& s) { return s.find_first_of("*?[") != std::string::npos; }

// One entry of "files": a path as it is, or a pattern expanded with glob(3), sorted.
Status AddFiles(const std::string& given, const std::string& field, const std::string& base_dir,
                TfRecordSpec* spec) {
  if (given.empty()) return Invalid(field, "must not be empty");
  const std::string path = ResolvePath(given, base_dir);
  if (!HasGlobChars(given)) {
    spec->paths.push_back(path);
    return Status::Ok();
  }
  glob_t g{};
  const int rc = ::glob(path.c_str(), GLOB_ERR, nullptr, &g);
  std::vector<std::string> found;
  for (size_t i = 0; rc == 0 && i < g.gl_pathc; ++i) found.emplace_back(g.gl_pathv[i]);
  ::globfree(&g);
  if (rc == GLOB_NOSPACE) return ResourceExhaustedError(field + ": out of memory expanding '" + path + "'");
  if (found.empty()) {
    return NotFoundError(field + ": no file matches '" + path + "'; check the pattern and the directory")
        .About(Subject::kData);
  }
  std::sort(found.begin(), found.end());  // glob(3) sorts by the locale; tf.io.gfile.glob's order is bytewise
  for (auto& f : found) {
    std::error_code ec;
    if (fs::is_directory(f, ec)) continue;  // a directory matched by the pattern is not a record file
    spec->paths.push_back(std::move(f));
  }
  if (spec->paths.empty()) return NotFoundError(field + ": only directories match '" + path + "'").About(Subject::kData);
  return Status::Ok();
}

Status ParseImageFeature(const json& j, const std::string& f, TfRecordSpec* spec) {
  if (!j.is_object()) return Invalid(f, "must be an object like {\"key\": \"image/encoded\", \"encoding\": \"jpeg\"}");
  RT_RETURN_IF_ERROR(CheckKeys(j, f, {"key", "encoding", "shape"}, "features.image"));
  if (j.contains("key")) {
    RT_ASSIGN_OR_RETURN(spec->image_key, GetString(j["key"], f + ".key"));
  }
  if (j.contains("encoding")) {
    RT_ASSIGN_OR_RETURN(const std::string e, GetString(j["encoding"], f + ".encoding"));
    using E = TfRecordSpec::Encoding;
    if (e == "auto") spec->encoding = E::kAuto;
    else if (e == "jpeg") spec->encoding = E::kJpeg;
    else if (e == "png") spec->encoding = E::kPng;
    else if (e == "raw_uint8") spec->encoding = E::kRawUint8;
    else if (e == "float") spec->encoding = E::kFloat;
    else return Invalid(f + ".encoding", "must be \"jpeg\", \"png\", \"auto\", \"raw_uint8\" or \"float\", got \"" + e + "\"");
  }
  if (j.contains("shape")) {
    if (spec->encoded()) {
      RT_ASSIGN_OR_RETURN(spec->shape, GetDims(j["shape"], f + ".shape", 3, 3, "[height, width, channels]"));
      if (spec->shape[2] != 1 && spec->shape[2] != 3 && spec->shape[2] != 4) {
        return Invalid(f + ".shape[2]", "channels of a decoded image must be 1, 3 or 4");
      }
    } else {
      RT_ASSIGN_OR_RETURN(spec->shape, GetDims(j["shape"], f + ".shape", 1, 4, "a list of 1 to 4 dimensions, e.g. [28, 28, 1]"));
    }
  } else if (!spec->encoded()) {
    return Invalid(f + ".shape", std::string("missing; encoding \"") + EncodingName(spec->encoding) +
                                     "\" needs the example's shape, e.g. [28, 28, 1]");
  }
  return Status::Ok();
}

Status ParseLabelFeature(const json& j, const std::string& f, TfRecordSpec* spec) {
  if (!j.is_object()) return Invalid(f, "must be an object like {\"key\": \"image/class/label\"}");
  RT_RETURN_IF_ERROR(CheckKeys(j, f, {"key", "num_classes", "shape", "dtype"}, "features.label"));
  if (j.contains("key")) {
    RT_ASSIGN_OR_RETURN(spec->label_key, GetString(j["key"], f + ".key"));
  }
  if (j.contains("shape")) {
    const json& sh = j["shape"];
    int64_t total = 1;
    bool ok = sh.is_array() && !sh.empty() && sh.size() <= 8;
    for (size_t k = 0; ok && k < sh.size(); ++k) {
      const auto d = JsonInt(sh[k], 1, 1 << 24);
      ok = d.has_value();
      if (ok) total *= *d, spec->label_shape.push_back(static_cast<int>(*d));
      ok = ok && total <= (1 << 24);
    }
    if (!ok) {
      return Invalid(f + ".shape", "must be a non-empty list of positive integers (the labels' per-example shape, as "
                                   "tf.io.FixedLenFeature's), got " + JsonBrief(sh));
    }
  }
  if (j.contains("dtype")) {
    const json& d = j["dtype"];
    if (!d.is_string() || (d != "int64" && d != "float32")) {
      return Invalid(f + ".dtype", "must be \"int64\" (class indices, integer targets) or \"float32\" (float "
                                   "targets), got " + JsonBrief(d));
    }
    spec->label_float = d == "float32";
    if (spec->label_float && spec->label_shape.empty()) spec->label_shape = {1};
  }
  if (spec->label_float && j.contains("num_classes")) {
    return Invalid(f + ".num_classes", "float32 labels are targets, not classes: leave num_classes out");
  }
  if (j.contains("num_classes")) {
    const auto n = JsonInt(j["num_classes"], 1, kMaxNumClasses);
    if (!n) {
      return Invalid(f + ".num_classes", "must be an integer in [1, " + std::to_string(kMaxNumClasses) +
                                             "], got " + JsonBrief(j["num_classes"]));
    }
    spec->num_classes = static_cast<int>(*n);
  }
  return Status::Ok();
}

Status ParseImageOptions(const json& s, const std::string& f, TfRecordSpec* spec) {
  const bool encoded = spec->encoded();
  for (const char* k : {"image_size", "color_mode", "interpolation", "crop_to_aspect_ratio"}) {
    if (s.contains(k) && !encoded) {
      return Invalid(f + "." + k, std::string("applies to encoded images only; encoding \"") +
                                      EncodingName(spec->encoding) + "\" keeps features.image.shape as it is");
    }
  }
  if (s.contains("image_size")) {
    RT_ASSIGN_OR_RETURN(const auto hw, GetDims(s["image_size"], f + ".image_size", 2, 2, "[height, width]"));
    spec->image_height = hw[0];
    spec->image_width = hw[1];
  }
  if (s.contains("color_mode")) {
    RT_ASSIGN_OR_RETURN(const std::string m, GetString(s["color_mode"], f + ".color_mode"));
    if (m == "grayscale") spec->channels = 1;
    else if (m == "rgb") spec->channels = 3;
    else if (m == "rgba") spec->channels = 4;
    else return Invalid(f + ".color_mode", "must be \"grayscale\", \"rgb\" or \"rgba\", got \"" + m + "\"");
    if (!spec->shape.empty() && spec->shape[2] != spec->channels) {
      return Invalid(f + ".color_mode", "gives " + std::to_string(spec->channels) +
                                            " channels but features.image.shape gives " + std::to_string(spec->shape[2]));
    }
  }
  if (s.contains("interpolation")) {
    RT_ASSIGN_OR_RETURN(const std::string m, GetString(s["interpolation"], f + ".interpolation"));
    auto in = image::ParseInterpolation(m);
    if (!in.ok()) return Invalid(f + ".interpolation", in.status().message());
    spec->interpolation = *in;
  }
  if (s.contains("crop_to_aspect_ratio")) {
    if (!s["crop_to_aspect_ratio"].is_boolean()) {
      return Invalid(f + ".crop_to_aspect_ratio", "must be true or false, got " + JsonBrief(s["crop_to_aspect_ratio"]));
    }
    spec->crop_to_aspect_ratio = s["crop_to_aspect_ratio"].get<bool>();
  }
  return Status::Ok();
}

Status Parse(const json& s, const std::string& base_dir, TfRecordSpec* spec) {
  const std::string& f = spec->field;
  RT_RETURN_IF_ERROR(CheckKeys(s, f,
                               {"format", "files", "compression_type", "features", "image_size", "color_mode",
                                "interpolation", "crop_to_aspect_ratio", "label_mode", "rescale", "first", "count"},
                               "format \"tfrecord\""));
  if (!s.contains("files")) return Invalid(f + ".files", "missing; name the TFRecord file(s): a path, a list or a glob");
  if (s.contains("compression_type")) {
    RT_ASSIGN_OR_RETURN(const std::string c, GetString(s["compression_type"], f + ".compression_type"));
    if (!tfrecord::ParseCompression(c, &spec->compression)) {
      return Invalid(f + ".compression_type", "must be \"\", \"GZIP\" or \"ZLIB\", got \"" + c + "\"");
    }
  }
  if (s.contains("features")) {
    const json& feats = s["features"];
    if (!feats.is_object()) return Invalid(f + ".features", "must be an object with \"image\" and \"label\"");
    RT_RETURN_IF_ERROR(CheckKeys(feats, f + ".features", {"image", "label"}, "features"));
    if (feats.contains("image")) RT_RETURN_IF_ERROR(ParseImageFeature(feats["image"], f + ".features.image", spec));
    if (feats.contains("label")) RT_RETURN_IF_ERROR(ParseLabelFeature(feats["label"], f + ".features.label", spec));
  }
  RT_RETURN_IF_ERROR(ParseImageOptions(s, f, spec));
  if (s.contains("label_mode")) {
    RT_ASSIGN_OR_RETURN(const std::string m, GetString(s["label_mode"], f + ".label_mode"));
    if (m != "int" && m != "categorical") {
      return Invalid(f + ".label_mode", "must be \"int\" or \"categorical\", got \"" + m + "\"");
    }
    spec->categorical = m == "categorical";
  }
  if (s.contains("rescale")) {
    const auto r = JsonNumber(s["rescale"]);
    if (!r || !std::isfinite(static_cast<float>(*r))) {
      return Invalid(f + ".rescale", "must be a finite number (e.g. 0.00392156862745098 for 1/255), got " +
                                         JsonBrief(s["rescale"]));
    }
    spec->rescale = static_cast<float>(*r);
  }
  // first/count are shard.cc's; only their presence is allowed here.
  const json& files = s["files"];
  if (files.is_string()) {
    RT_RETURN_IF_ERROR(AddFiles(files.get<std::string>(), f + ".files", base_dir, spec));
  } else if (files.is_array() && !files.empty()) {
    for (size_t i = 0; i < files.size(); ++i) {
      const std::string fi = f + ".files[" + std::to_string(i) + "]";
      if (!files[i].is_string()) return Invalid(fi, "must be a path string, got " + JsonBrief(files[i]));
      RT_RETURN_IF_ERROR(AddFiles(files[i].get<std::string>(), fi, base_dir, spec));
    }
  } else {
    return Invalid(f + ".files", "must be a path, a glob or a non-empty list of them, got " + JsonBrief(files));
  }
  for (const auto& p : spec->paths) spec->names.push_back(DisplayName(p, base_dir));
  return Status::Ok();
}

class TfRecordFormat : public SourceFormat {
 public:
  explicit TfRecordFormat(TfRecordSpec spec) : spec_(std::move(spec)) {}
  std::string format() const override { return "tfrecord"; }
  int64_t num_files() const override { return static_cast<int64_t>(spec_.paths.size()); }
  std::string FileName(int64_t f) const override { return spec_.names[static_cast<size_t>(f)]; }
  StatusOr<std::unique_ptr<Source>> Open(const std::vector<int64_t>& files) const override {
    return OpenTfRecordSource(spec_, files);
  }

 private:
  TfRecordSpec spec_;
};

}  // namespace

const char* EncodingName(TfRecordSpec::Encoding e) {
  switch (e) {
    case TfRecordSpec::Encoding::kAuto: return "auto";
    case TfRecordSpec::Encoding::kJpeg: return "jpeg";
    case TfRecordSpec::Encoding::kPng: return "png";
    case TfRecordSpec::Encoding::kRawUint8: return "raw_uint8";
    case TfRecordSpec::Encoding::kFloat: return "float";
  }
  return "?";
}

StatusOr<std::unique_ptr<SourceFormat>> ParseTfRecord(const json& s, const std::string& base_dir,
                                                      const std::string& field) {
  TfRecordSpec spec;
  spec.field = field;
  try {
    if (!s.is_object()) return Invalid(field, "must be an object, got " + JsonBrief(s));
    RT_RETURN_IF_ERROR(Parse(s, base_dir, &spec));
  } catch (const std::exception& e) {  // nlohmann::json::exception, std::bad_alloc, filesystem_error
    return Invalid(field, std::string("malformed source: ") + e.what());
  }
  return std::unique_ptr<SourceFormat>(new TfRecordFormat(std::move(spec)));
}

}  // namespace ringtrain::data
