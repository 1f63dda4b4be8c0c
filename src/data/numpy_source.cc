// ParseNumpy: the "npz" and "npy" formats (source.h), as tf.data.Dataset.from_tensor_slices
// takes the arrays np.load returns:
//   {"format": "npz", "path": "mnist.npz", "x": "x_train", "y": "y_train"}
//   {"format": "npy", "x": "x.npy", "y": "y.npy"}
// For a model with several inputs or outputs, "x" and "y" may name an array per input or
// output, as Keras' fit takes dicts: {"x": {"image": "x_image", "meta": "x_meta"},
// "y": {"digit": "y_digit", "parity": "y_parity"}} (array_source.h MakeNamedArraySource).
// plus "num_classes", "label_mode", "rescale" (array_source.h), "first", "count". One file:
// FILE sharding has one file to give.
#include <filesystem>
#include <set>

#include "common/json.h"
#include "data/entry_fields.h"
#include "data/array_source.h"
#include "data/source.h"
#include "numpy/npy.h"
#include "numpy/npz.h"

namespace ringtrain::data {
namespace {

using entry::Invalid;
using entry::CheckFormatKeys;
using entry::ResolvePath;

namespace fs = std::filesystem;

// "x" or "y": one array's name (npz) or file (npy), or an object of them by the model
// input's or output's name. Returned in the order of the names ("" for the one unnamed).
using ArrayNames = std::vector<std::pair<std::string, std::string>>;

StatusOr<ArrayNames> GetNames(const nlohmann::json& s, const std::string& key, const std::string& field,
                         const std::string& what) {
  if (!s.contains(key)) return Invalid(field + "." + key, "missing; " + what);
  const nlohmann::json& v = s[key];
  if (v.is_string() && !v.get<std::string>().empty()) return ArrayNames{{"", v.get<std::string>()}};
  if (v.is_object() && !v.empty() && v.size() <= 64) {
    ArrayNames out;
    for (const auto& [name, array] : v.items()) {  // nlohmann's objects iterate in name order
      if (name.empty() || !array.is_string() || array.get<std::string>().empty()) {
        return Invalid(field + "." + key, "an object must map each model " +
                                              std::string(key == "x" ? "input" : "output") +
                                              " name to a non-empty string (" + what + "), got " + JsonBrief(v));
      }
      out.emplace_back(name, array.get<std::string>());
    }
    return out;
  }
  return Invalid(field + "." + key, "must be a non-empty string (" + what + "), or an object of them by model " +
                                        (key == "x" ? "input" : "output") + " name, got " + JsonBrief(v));
}

// One array per name, opened by `open`, into the source.
template <typename Open>
StatusOr<std::unique_ptr<Source>> OpenNamed(const ArrayNames& x, const ArrayNames& y, const ArrayOptions& options,
                                            const std::string& where, Open open) {
  if (x.size() == 1 && y.size() == 1 && x[0].first.empty() && y[0].first.empty()) {
    RT_ASSIGN_OR_RETURN(numpy::NpyArray xa, open(x[0].second));
    RT_ASSIGN_OR_RETURN(numpy::NpyArray ya, open(y[0].second));
    return MakeArraySource(std::move(xa), ya, options, where);
  }
  NamedArrays xs, ys;
  for (const auto& [name, array] : x) {
    RT_ASSIGN_OR_RETURN(numpy::NpyArray a, open(array));
    xs.emplace_back(name, std::move(a));
  }
  for (const auto& [name, array] : y) {
    RT_ASSIGN_OR_RETURN(numpy::NpyArray a, open(array));
    ys.emplace_back(name, std::move(a));
  }
  return MakeNamedArraySource(std::move(xs), ys, options, where);
}

class NpzFormat : public SourceFormat {
 public:
  NpzFormat(std::string path, ArrayNames x, ArrayNames y, ArrayOptions options)
      : path_(std::move(path)), x_(std::move(x)), y_(std::move(y)), options_(options) {}
  std::string format() const override { return "npz"; }
  int64_t num_files() const override { return 1; }
  std::string FileName(int64_t) const override { return fs::path(path_).filename().string(); }
  StatusOr<std::unique_ptr<Source>> Open(const std::vector<int64_t>& files) const override {
    if (files != std::vector<int64_t>{0}) return InternalError("an npz source has exactly one file, 0");
    RT_ASSIGN_OR_RETURN(numpy::NpzFile npz, numpy::NpzFile::Open(path_));
    return OpenNamed(x_, y_, options_, x_.size() == 1 ? x_[0].second : fs::path(path_).filename().string(),
                     [&](const std::string& name) { return npz.Array(name); });
  }

 private:
  std::string path_;
  ArrayNames x_, y_;
  ArrayOptions options_;
};

class NpyFormat : public SourceFormat {
 public:
  NpyFormat(ArrayNames x, ArrayNames y, ArrayOptions options) : x_(std::move(x)), y_(std::move(y)), options_(options) {}
  std::string format() const override { return "npy"; }
  int64_t num_files() const override { return 1; }
  std::string FileName(int64_t) const override { return fs::path(x_[0].second).filename().string(); }
  StatusOr<std::unique_ptr<Source>> Open(const std::vector<int64_t>& files) const override {
    if (files != std::vector<int64_t>{0}) return InternalError("an npy source has exactly one file, 0");
    return OpenNamed(x_, y_, options_, fs::path(x_[0].second).filename().string(),
                     [](const std::string& path) { return numpy::OpenNpy(path); });
  }

 private:
  ArrayNames x_, y_;
  ArrayOptions options_;
};

}  // namespace

StatusOr<std::unique_ptr<SourceFormat>> ParseNumpy(const nlohmann::json& s, const std::string& base_dir,
                                                   const std::string& field) {
  try {
    if (!s.is_object() || !s.contains("format") || !s["format"].is_string()) {
      return Invalid(field, "must be an object with \"format\": \"npz\" or \"npy\"");
    }
    const std::string format = s["format"].get<std::string>();
    ArrayOptions options;
    if (format == "npz") {
      RT_RETURN_IF_ERROR(CheckFormatKeys(
          s, field, {"format", "path", "x", "y", "num_classes", "label_mode", "rescale", "first", "count"}, "npz"));
      if (!s.contains("path")) return Invalid(field + ".path", "missing; name the .npz file");
      if (!s["path"].is_string() || s["path"].get<std::string>().empty()) {
        return Invalid(field + ".path", "must be a non-empty string (name the .npz file), got " + JsonBrief(s["path"]));
      }
      const std::string path = s["path"].get<std::string>();
      RT_ASSIGN_OR_RETURN(ArrayNames x, GetNames(s, "x", field, "the array of examples, e.g. \"x_train\""));
      RT_ASSIGN_OR_RETURN(ArrayNames y, GetNames(s, "y", field, "the array of labels, e.g. \"y_train\""));
      RT_RETURN_IF_ERROR(ParseArrayOptions(s, field, &options));
      return std::unique_ptr<SourceFormat>(
          std::make_unique<NpzFormat>(ResolvePath(path, base_dir), std::move(x), std::move(y), options));
    }
    if (format == "npy") {
      RT_RETURN_IF_ERROR(
          CheckFormatKeys(s, field, {"format", "x", "y", "num_classes", "label_mode", "rescale", "first", "count"}, "npy"));
      RT_ASSIGN_OR_RETURN(ArrayNames x, GetNames(s, "x", field, "the .npy file of examples"));
      RT_ASSIGN_OR_RETURN(ArrayNames y, GetNames(s, "y", field, "the .npy file of labels"));
      RT_RETURN_IF_ERROR(ParseArrayOptions(s, field, &options));
      for (auto* names : {&x, &y}) {
        for (auto& [name, file] : *names) file = ResolvePath(file, base_dir);
      }
      return std::unique_ptr<SourceFormat>(std::make_unique<NpyFormat>(std::move(x), std::move(y), options));
    }
    return Invalid(field + ".format", "ParseNumpy reads \"npz\" and \"npy\", not " + JsonBrief(s["format"]));
  } catch (const std::exception& e) {
    return Invalid(field, std::string("malformed source: ") + e.what());
  }
}

}  // namespace ringtrain::data
