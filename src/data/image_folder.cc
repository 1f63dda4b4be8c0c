// The "image_folder" source: keras.utils.image_dataset_from_directory's listing, split
// and decoding (src/image) behind the Source interface.
//
// Listing, as Keras' index_directory: the class folders are the sub-folders of
// `directory` in sorted order (or `class_names`, in its order); each is walked
// recursively, folders in sorted path order and the files of each in sorted order,
// keeping the extensions .jpeg .jpg .png .bmp .gif in any case; files directly in
// `directory` are ignored. With validation_split the list is (when shuffle is on)
// permuted with `seed` by data/random.h's Rng -- not numpy's, so which files fall in
// which subset differs from Keras' -- and the last int(validation_split * n) files are
// the validation subset, the rest training; each subset is then kept in listing order
// (the pipeline shuffles).
//
// With "masks" (segmentation): the images are every image file under `directory` (no
// class folders), each paired by its path without the extension with one image file under
// `masks` (images/a/001.jpg with masks/a/001.png); a mask's pixel values are class indices
// in [0, num_classes), resized with the images' crop and nearest-neighbour sampling to
// image_size, one label per pixel (ExampleSpec::label_shape {h, w}).
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <utility>

#include "common/file.h"
#include "common/json.h"
#include "data/entry_fields.h"
#include "data/random.h"
#include "data/source.h"
#include "image/image.h"

namespace ringtrain::data {
namespace {

using entry::Invalid;

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr int kMaxImageSide = 16384;
// An image file larger than this is refused before reading (a 24-bit 8192x8192 BMP is
// 192 MiB).
constexpr uint64_t kMaxImageFileBytes = uint64_t{256} << 20;
// Header bytes read per file at Open; a JPEG whose frame header lies further (big EXIF
// or ICC segments) is retried with kLongHeaderBytes, then whole.
constexpr size_t kHeaderBytes = 4096;
constexpr size_t kLongHeaderBytes = 256 * 1024;

struct Options {
  std::string directory;
  std::vector<std::string> class_names;  // given, or empty: inferred
  bool categorical = false;
  int channels = 3;
  int height = 256, width = 256;
  image::Interpolation interpolation = image::Interpolation::kBilinear;
  bool crop = false;
  double validation_split = 0;
  std::string subset;
  std::optional<uint64_t> seed;
  bool shuffle = true;
  bool follow_links = false;
  std::optional<float> rescale;
  bool unlabeled = false;  // "labels": null (Keras' labels=None): every image under directory, label 0
  std::string masks;       // "masks": the folder of per-pixel class masks ("" for none)
  int mask_classes = 0;    // "num_classes" with masks
};

struct Entry {
  std::string rel;  // path relative to `directory`
  int32_t label;
  std::string mask;  // with masks: its mask's path relative to `masks`
};

StatusOr<std::string> GetString(const json& s, const char* key, const std::string& field,
                                const std::vector<std::string>& allowed) {
  const json& v = s[key];
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "\"" : ", \"") + a + "\"";
  if (!v.is_string()) return Invalid(field + "." + key, "must be one of " + list + ", got " + JsonBrief(v));
  const std::string str = v.get<std::string>();
  if (std::find(allowed.begin(), allowed.end(), str) == allowed.end()) {
    return Invalid(field + "." + key, "must be one of " + list + ", got " + JsonBrief(v));
  }
  return str;
}

StatusOr<bool> GetBool(const json& s, const char* key, const std::string& field) {
  if (!s[key].is_boolean()) return Invalid(field + "." + key, "must be true or false, got " + JsonBrief(s[key]));
  return s[key].get<bool>();
}

StatusOr<Options> ParseOptions(const json& s, const std::string& base_dir, const std::string& f) {
  static const std::set<std::string> kKeys = {
      "format",  "directory", "labels",     "class_names", "label_mode",       "color_mode",
      "image_size", "interpolation", "crop_to_aspect_ratio", "validation_split", "subset", "seed",
      "shuffle", "follow_links", "rescale", "masks", "num_classes", "first", "count"};
  for (const auto& item : s.items()) {
    if (!kKeys.count(item.key())) {
      std::string list;
      for (const auto& k : kKeys) list += (list.empty() ? "" : ", ") + k;
      return Invalid(f + "." + item.key(), "unknown key for format \"image_folder\" (a typo?); valid keys: " + list);
    }
  }
  Options o;
  if (!s.contains("directory") || !s["directory"].is_string() || s["directory"].get<std::string>().empty()) {
    return Invalid(f + ".directory", "missing or not a path; name the folder holding one sub-folder per class");
  }
  fs::path dir(s["directory"].get<std::string>());
  if (dir.is_relative() && !base_dir.empty()) dir = fs::path(base_dir) / dir;
  o.directory = dir.lexically_normal().string();
  if (o.directory.size() > 1 && o.directory.back() == '/') o.directory.pop_back();
  if (s.contains("labels") && s["labels"].is_null()) {
    o.unlabeled = true;
  } else if (s.contains("labels") && s["labels"] != "inferred") {
    return Invalid(f + ".labels", "must be \"inferred\" (labels from the class folders) or null (images only, "
                                  "for predict), got " + JsonBrief(s["labels"]));
  }
  if (s.contains("class_names")) {
    const json& c = s["class_names"];
    if (!c.is_array() || c.empty()) return Invalid(f + ".class_names", "must be a non-empty list of folder names");
    std::set<std::string> seen;
    for (size_t i = 0; i < c.size(); ++i) {
      const std::string fi = f + ".class_names[" + std::to_string(i) + "]";
      if (!c[i].is_string() || c[i].get<std::string>().empty()) return Invalid(fi, "must be a folder name");
      const std::string name = c[i].get<std::string>();
      if (name.find('/') != std::string::npos || name == "." || name == "..") {
        return Invalid(fi, "must name a sub-folder of directory, got " + JsonBrief(c[i]));
      }
      if (!seen.insert(name).second) return Invalid(fi, "names \"" + name + "\" twice");
      o.class_names.push_back(name);
    }
  }
  if (s.contains("label_mode")) {
    RT_ASSIGN_OR_RETURN(std::string m, GetString(s, "label_mode", f, {"int", "categorical"}));
    o.categorical = m == "categorical";
  }
  if (s.contains("color_mode")) {
    RT_ASSIGN_OR_RETURN(std::string m, GetString(s, "color_mode", f, {"grayscale", "rgb", "rgba"}));
    o.channels = m == "grayscale" ? 1 : m == "rgb" ? 3 : 4;
  }
  if (s.contains("image_size")) {
    const json& v = s["image_size"];
    std::optional<int64_t> h, w;
    if (v.is_array() && v.size() == 2) h = JsonInt(v[0], 1, kMaxImageSide), w = JsonInt(v[1], 1, kMaxImageSide);
    if (!h || !w) {
      return Invalid(f + ".image_size", "must be [height, width], each in [1, " + std::to_string(kMaxImageSide) +
                                            "], got " + JsonBrief(v));
    }
    o.height = static_cast<int>(*h);
    o.width = static_cast<int>(*w);
  }
  if (s.contains("interpolation")) {
    if (!s["interpolation"].is_string()) return Invalid(f + ".interpolation", "must be a string");
    auto interp = image::ParseInterpolation(s["interpolation"].get<std::string>());
    if (!interp.ok()) return Invalid(f + ".interpolation", interp.status().message());
    o.interpolation = *interp;
  }
  if (s.contains("crop_to_aspect_ratio")) {
    RT_ASSIGN_OR_RETURN(o.crop, GetBool(s, "crop_to_aspect_ratio", f));
  }
  if (s.contains("shuffle")) {
    RT_ASSIGN_OR_RETURN(o.shuffle, GetBool(s, "shuffle", f));
  }
  if (s.contains("follow_links")) {
    RT_ASSIGN_OR_RETURN(o.follow_links, GetBool(s, "follow_links", f));
  }
  if (s.contains("seed")) {
    o.seed = JsonUint(s["seed"]);
    if (!o.seed) return Invalid(f + ".seed", "must be a non-negative integer, got " + JsonBrief(s["seed"]));
  }
  if (s.contains("rescale")) {
    const std::optional<double> r = JsonNumber(s["rescale"]);
    if (!r) return Invalid(f + ".rescale", "must be a number (every pixel value is multiplied by it), got " +
                                               JsonBrief(s["rescale"]));
    o.rescale = static_cast<float>(*r);
  }
  if (s.contains("masks")) {
    if (!s["masks"].is_string() || s["masks"].get<std::string>().empty()) {
      return Invalid(f + ".masks", "must be the path of the folder of masks (one per image, same file names)");
    }
    fs::path m(s["masks"].get<std::string>());
    if (m.is_relative() && !base_dir.empty()) m = fs::path(base_dir) / m;
    o.masks = m.lexically_normal().string();
    if (o.masks.size() > 1 && o.masks.back() == '/') o.masks.pop_back();
    const std::optional<int64_t> n = s.contains("num_classes") ? JsonInt(s["num_classes"], 2, 65536) : std::nullopt;
    if (!n) {
      return Invalid(f + ".num_classes", "with masks, must give the number of classes (2 to 65536: the masks' pixel "
                                         "values are class indices below it), got " +
                                             (s.contains("num_classes") ? JsonBrief(s["num_classes"]) : "nothing"));
    }
    o.mask_classes = static_cast<int>(*n);
    if (s.contains("labels") || s.contains("class_names") || s.contains("label_mode")) {
      return Invalid(f + ".masks", "takes its labels from the masks: leave out labels, class_names and label_mode");
    }
  } else if (s.contains("num_classes")) {
    return Invalid(f + ".num_classes", "goes with masks (segmentation); a class-folder source counts its folders");
  }
  // Keras' rules for the split: both keys or neither, and a seed when shuffling.
  if (s.contains("validation_split")) {
    const std::optional<double> v = JsonNumber(s["validation_split"]);
    if (!v || !(*v > 0 && *v < 1)) {
      return Invalid(f + ".validation_split", "must be a number between 0 and 1 (exclusive), got " +
                                                  JsonBrief(s["validation_split"]));
    }
    o.validation_split = *v;
  }
  if (s.contains("subset")) {
    if (s["subset"] == "both") {
      return Invalid(f + ".subset", "\"both\" is not supported: give data.train \"training\" and data.eval "
                                    "\"validation\" with the same seed");
    }
    RT_ASSIGN_OR_RETURN(o.subset, GetString(s, "subset", f, {"training", "validation"}));
  }
  if (o.subset.empty() != (o.validation_split == 0)) {
    return Invalid(f + (o.subset.empty() ? ".subset" : ".validation_split"),
                   "validation_split and subset go together (as in Keras): give both or neither");
  }
  if (o.validation_split > 0 && o.shuffle && !o.seed) {
    return Invalid(f + ".seed", "missing: with validation_split and shuffling (the default), a seed is required so "
                                "that the training and validation subsets do not overlap (as in Keras)");
  }
  return o;
}

std::string Quote(const std::string& p) { return "'" + p + "'"; }

// Keras' os.walk(followlinks=follow_links) of one class folder, sorted by folder path,
// then by file name within a folder.
Status WalkClass(const std::string& root, const std::string& rel_root, bool follow_links, int32_t label,
                 std::vector<Entry>* out) {
  std::vector<std::pair<std::string, std::string>> dirs = {{root, rel_root}};  // (absolute, relative)
  std::set<std::pair<dev_t, ino_t>> visited;
  std::vector<std::pair<std::string, std::vector<std::string>>> listing;  // relative folder -> files
  for (size_t d = 0; d < dirs.size(); ++d) {
    const auto [abs, rel] = dirs[d];
    struct stat st;
    if (::stat(abs.c_str(), &st) == 0 && !visited.insert({st.st_dev, st.st_ino}).second) continue;  // a link loop
    std::error_code ec;
    fs::directory_iterator it(abs, ec);
    if (ec) return NotFoundError("cannot list " + Quote(abs) + ": " + ec.message()).About(Subject::kData);
    std::vector<std::string> files;
    for (; it != fs::directory_iterator(); it.increment(ec)) {
      const std::string name = it->path().filename().string();
      std::error_code e2;
      if (it->is_directory(e2)) {
        if (follow_links || !it->is_symlink(e2)) dirs.push_back({it->path().string(), rel + "/" + name});
      } else if (image::HasImageExtension(name)) {
        files.push_back(name);
      }
    }
    if (ec) return NotFoundError("cannot list " + Quote(abs) + ": " + ec.message()).About(Subject::kData);
    std::sort(files.begin(), files.end());
    listing.push_back({rel, std::move(files)});
  }
  std::sort(listing.begin(), listing.end());
  for (const auto& [rel, files] : listing) {
    for (const auto& name : files) out->push_back({rel + "/" + name, label, {}});
  }
  return Status::Ok();
}

class ImageFolderSource : public Source {
 public:
  ImageFolderSource(const Options& o, ExampleSpec spec, std::vector<Entry> entries)
      : o_(o), spec_(std::move(spec)), entries_(std::move(entries)) {}

  const ExampleSpec& spec() const override { return spec_; }
  int64_t size() const override { return static_cast<int64_t>(entries_.size()); }
  std::string Where(int64_t i) const override { return entries_[i].rel; }
  StatusOr<int32_t> Label(int64_t i) const override { return entries_[i].label; }

  Status Read(int64_t i, float* x, int32_t* label) const override {
    const std::string path = Path(i);
    auto bytes = ReadFile(path, kMaxImageFileBytes, "an image file");
    if (!bytes.ok()) return bytes.status().About(Subject::kData);
    auto img = image::Decode(reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size(), o_.channels, o_.height,
                             o_.width);
    if (!img.ok()) return Bad(path, img.status().message());
    image::Resize(*img, o_.height, o_.width, o_.interpolation, o_.crop, x);
    if (o_.rescale) {
      const float r = *o_.rescale;
      for (size_t k = 0, n = spec_.size(); k < n; ++k) x[k] *= r;
    }
    if (o_.masks.empty()) {
      *label = entries_[i].label;
      return Status::Ok();
    }
    return ReadMask(i, label);
  }

  // Example i's mask into label[h * w]: decoded to one channel, cropped as the image,
  // resized by nearest neighbour; every value must be a class index.
  Status ReadMask(int64_t i, int32_t* label) const {
    const std::string path = o_.masks + "/" + entries_[i].mask;
    auto bytes = ReadFile(path, kMaxImageFileBytes, "a mask file");
    if (!bytes.ok()) return bytes.status().About(Subject::kData);
    auto img = image::Decode(reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size(), 1);
    if (!img.ok()) return BadMask(path, img.status().message());
    const size_t n = spec_.label_size();
    std::vector<float> values(n);
    image::Resize(*img, o_.height, o_.width, image::Interpolation::kNearest, o_.crop, values.data());
    for (size_t k = 0; k < n; ++k) {
      const int32_t c = static_cast<int32_t>(values[k]);
      if (c >= o_.mask_classes) {
        return BadMask(path, "pixel (" + std::to_string(k / static_cast<size_t>(o_.width)) + ", " +
                                 std::to_string(k % static_cast<size_t>(o_.width)) + ") after resizing holds " +
                                 std::to_string(c) + ", not a class index below num_classes " +
                                 std::to_string(o_.mask_classes) + "; fix the mask or raise num_classes");
      }
      label[k] = c;
    }
    return Status::Ok();
  }

  // The header of every file: a file that is no image fails before training starts.
  Status CheckHeaders() const {
    for (size_t i = 0; i < entries_.size(); ++i) {
      const std::string path = Path(static_cast<int64_t>(i));
      uint64_t file_size = 0;
      auto head = ReadFilePrefix(path, kHeaderBytes, &file_size);
      if (!head.ok()) return head.status().About(Subject::kData);
      auto info = image::ReadInfo(reinterpret_cast<const uint8_t*>(head->data()), head->size());
      for (size_t more : {kLongHeaderBytes, static_cast<size_t>(kMaxImageFileBytes)}) {
        const bool jpeg =
            image::SniffCodec(reinterpret_cast<const uint8_t*>(head->data()), head->size()) == image::Codec::kJpeg;
        if (info.ok() || !jpeg || file_size <= head->size()) break;
        head = ReadFilePrefix(path, more, &file_size);
        if (!head.ok()) return head.status().About(Subject::kData);
        info = image::ReadInfo(reinterpret_cast<const uint8_t*>(head->data()), head->size());
      }
      if (!info.ok()) return Bad(path, info.status().message());
    }
    return Status::Ok();
  }

 private:
  std::string Path(int64_t i) const { return o_.directory + "/" + entries_[i].rel; }
  static Status Bad(const std::string& path, const std::string& what) {
    return DataLossError("image " + Quote(path) + ": " + what + "; replace or remove the file")
        .About(Subject::kData);
  }
  static Status BadMask(const std::string& path, const std::string& what) {
    return DataLossError("mask " + Quote(path) + ": " + what).About(Subject::kData);
  }

  Options o_;
  ExampleSpec spec_;
  std::vector<Entry> entries_;
};

class ImageFolderFormat : public SourceFormat {
 public:
  ImageFolderFormat(Options o, ExampleSpec spec, std::vector<Entry> entries)
      : o_(std::move(o)), spec_(std::move(spec)), entries_(std::move(entries)) {}
  std::string format() const override { return "image_folder"; }
  int64_t num_files() const override { return static_cast<int64_t>(entries_.size()); }
  std::string FileName(int64_t f) const override { return entries_[f].rel; }

  StatusOr<std::unique_ptr<Source>> Open(const std::vector<int64_t>& files) const override {
    std::vector<Entry> mine;
    mine.reserve(files.size());
    for (int64_t f : files) {
      if (f < 0 || f >= num_files()) return InvalidArgumentError("image_folder: no file " + std::to_string(f));
      mine.push_back(entries_[f]);
    }
    auto source = std::make_unique<ImageFolderSource>(o_, spec_, std::move(mine));
    RT_RETURN_IF_ERROR(source->CheckHeaders());
    return std::unique_ptr<Source>(std::move(source));
  }

 private:
  Options o_;
  ExampleSpec spec_;
  std::vector<Entry> entries_;
};

// The path without its extension: what pairs an image with its mask.
std::string Stem(const std::string& rel) {
  const size_t slash = rel.rfind('/'), dot = rel.rfind('.');
  return dot != std::string::npos && (slash == std::string::npos || dot > slash) ? rel.substr(0, dot) : rel;
}

// An image folder with masks: every image under directory, each with its mask.
StatusOr<std::unique_ptr<SourceFormat>> ParseSegmentation(Options o, const std::string& field) {
  std::error_code ec;
  if (!fs::is_directory(o.masks, ec)) {
    return NotFoundError(field + ".masks: " + Quote(o.masks) + " is not a directory; name the folder of masks")
        .About(Subject::kData);
  }
  std::vector<Entry> entries, masks;
  RT_RETURN_IF_ERROR(WalkClass(o.directory, ".", o.follow_links, 0, &entries));
  RT_RETURN_IF_ERROR(WalkClass(o.masks, ".", o.follow_links, 0, &masks));
  if (entries.empty()) {
    return NotFoundError(field + ".directory: " + Quote(o.directory) + " holds no .jpeg, .jpg, .png, .bmp or .gif file")
        .About(Subject::kData);
  }
  std::map<std::string, std::string> mask_of;  // stem -> mask path relative to masks
  for (Entry& m : masks) {
    m.rel = m.rel.substr(2);  // "./a/b.png" -> "a/b.png"
    auto [it, fresh] = mask_of.emplace(Stem(m.rel), m.rel);
    if (!fresh) {
      return InvalidArgumentError(field + ".masks: " + Quote(it->second) + " and " + Quote(m.rel) + " in " +
                                  Quote(o.masks) + " are both the mask of '" + it->first +
                                  ".*'; keep one of them")
          .About(Subject::kData);
    }
  }
  for (Entry& e : entries) {
    e.rel = e.rel.substr(2);
    auto it = mask_of.find(Stem(e.rel));
    if (it == mask_of.end()) {
      return NotFoundError(field + ".masks: no mask for image " + Quote(o.directory + "/" + e.rel) + " (looked for " +
                           Quote(o.masks + "/" + Stem(e.rel) + ".*") + "); add its mask or remove the image")
          .About(Subject::kData);
    }
    e.mask = it->second;
  }
  if (o.validation_split > 0) {
    return Invalid(field + ".validation_split", "is not supported with masks; give data.eval its own folders");
  }
  ExampleSpec spec;
  spec.shape = {o.height, o.width, o.channels};
  spec.num_classes = o.mask_classes;
  spec.label_shape = {o.height, o.width};
  return std::unique_ptr<SourceFormat>(new ImageFolderFormat(std::move(o), std::move(spec), std::move(entries)));
}

}  // namespace

StatusOr<std::unique_ptr<SourceFormat>> ParseImageFolder(const json& s, const std::string& base_dir,
                                                         const std::string& field) {
  RT_ASSIGN_OR_RETURN(Options o, ParseOptions(s, base_dir, field));
  std::error_code ec;
  if (!fs::is_directory(o.directory, ec)) {
    const bool exists = fs::exists(o.directory, ec);
    return NotFoundError(field + ".directory: " + Quote(o.directory) +
                         (exists ? " is not a directory" : " does not exist") +
                         "; name a folder holding one sub-folder of images per class")
        .About(Subject::kData);
  }
  if (!o.masks.empty()) return ParseSegmentation(std::move(o), field);
  if (o.unlabeled) {
    // Keras' labels=None: every image file under directory, walked as one class folder.
    if (!o.class_names.empty()) return Invalid(field + ".class_names", "needs labels \"inferred\", not null");
    std::vector<Entry> entries;
    RT_RETURN_IF_ERROR(WalkClass(o.directory, ".", o.follow_links, 0, &entries));
    for (Entry& e : entries) e.rel = e.rel.substr(2);  // "./a/b.png" -> "a/b.png"
    if (entries.empty()) {
      return NotFoundError(field + ".directory: " + Quote(o.directory) +
                           " holds no .jpeg, .jpg, .png, .bmp or .gif file")
          .About(Subject::kData);
    }
    ExampleSpec spec;
    spec.shape = {o.height, o.width, o.channels};
    spec.num_classes = 1;
    return std::unique_ptr<SourceFormat>(new ImageFolderFormat(std::move(o), std::move(spec), std::move(entries)));
  }
  // The class folders (Keras' isdir follows links here whatever follow_links says).
  std::vector<std::string> subdirs;
  fs::directory_iterator it(o.directory, ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::error_code e2;
    if (it->is_directory(e2)) subdirs.push_back(it->path().filename().string());
  }
  if (ec) return NotFoundError("cannot list " + Quote(o.directory) + ": " + ec.message()).About(Subject::kData);
  std::sort(subdirs.begin(), subdirs.end());
  if (subdirs.empty()) {
    return NotFoundError(field + ".directory: " + Quote(o.directory) +
                         " has no sub-folders; put each class's images in a sub-folder named for the class")
        .About(Subject::kData);
  }
  if (!o.class_names.empty()) {
    for (size_t i = 0; i < o.class_names.size(); ++i) {
      if (!std::binary_search(subdirs.begin(), subdirs.end(), o.class_names[i])) {
        std::string list;
        for (const auto& d : subdirs) list += (list.empty() ? "" : ", ") + d;
        return Invalid(field + ".class_names[" + std::to_string(i) + "]",
                       "\"" + o.class_names[i] + "\" is not a sub-folder of " + Quote(o.directory) +
                           "; the sub-folders are: " + list);
      }
    }
    subdirs = o.class_names;
  }
  std::vector<Entry> entries;
  for (size_t c = 0; c < subdirs.size(); ++c) {
    const size_t before = entries.size();
    RT_RETURN_IF_ERROR(WalkClass(o.directory + "/" + subdirs[c], subdirs[c], o.follow_links,
                                 static_cast<int32_t>(c), &entries));
    if (entries.size() == before) {
      return NotFoundError("class folder " + Quote(o.directory + "/" + subdirs[c]) +
                           " holds no .jpeg, .jpg, .png, .bmp or .gif file; add images or remove the folder "
                           "(or leave it out of class_names)")
          .About(Subject::kData);
    }
  }
  if (o.validation_split > 0) {
    const size_t n = entries.size();
    std::vector<size_t> order(n);
    for (size_t i = 0; i < n; ++i) order[i] = i;
    if (o.shuffle) {  // Fisher-Yates with the project's RNG (not numpy's: membership differs from Keras')
      Rng rng(*o.seed);
      for (size_t i = n; i > 1; --i) std::swap(order[i - 1], order[rng.Below(i)]);
    }
    const size_t num_val = static_cast<size_t>(o.validation_split * static_cast<double>(n));
    std::vector<size_t> keep = o.subset == "validation" ? std::vector<size_t>(order.end() - num_val, order.end())
                                                        : std::vector<size_t>(order.begin(), order.end() - num_val);
    std::sort(keep.begin(), keep.end());  // listing order: the pipeline shuffles
    if (keep.empty()) {
      return Invalid(field + ".validation_split",
                     "leaves the " + o.subset + " subset empty (" + std::to_string(n) + " images in all)");
    }
    std::vector<Entry> subset;
    subset.reserve(keep.size());
    for (size_t k : keep) subset.push_back(std::move(entries[k]));
    entries = std::move(subset);
  }
  ExampleSpec spec;
  spec.shape = {o.height, o.width, o.channels};
  spec.num_classes = static_cast<int>(subdirs.size());
  spec.class_names = subdirs;
  spec.categorical = o.categorical;
  return std::unique_ptr<SourceFormat>(new ImageFolderFormat(std::move(o), std::move(spec), std::move(entries)));
}

}  // namespace ringtrain::data
