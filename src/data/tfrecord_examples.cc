// The Source over opened TFRecord files: example i is found through the files' record
// indices, read with one pread, its CRC checked, parsed as a tf.train.Example, and its
// image and label features decoded into floats.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "data/tfrecord_source.h"
#include "tfrecord/example_parse.h"
#include "tfrecord/example_scan.h"

namespace ringtrain::data {
namespace {

using tfrecord::RecordFile;
using Encoding = TfRecordSpec::Encoding;

// Labels above this (when num_classes is inferred) are taken as corruption, not as a
// model with millions of outputs.
constexpr int64_t kMaxInferredClasses = 1 << 20;

class TfRecordSource : public Source {
 public:
  explicit TfRecordSource(const TfRecordSpec& spec) : s_(spec), keys_{spec.image_key, spec.label_key} {
    spec_.categorical = spec.categorical;
    spec_.label_shape = spec.label_shape;
    spec_.float_targets = spec.label_float;
  }

  const ExampleSpec& spec() const override { return spec_; }
  int64_t size() const override { return starts_.back(); }
  Status Read(int64_t i, float* x, int32_t* label) const override;
  StatusOr<int32_t> Label(int64_t i) const override;
  std::string Where(int64_t i) const override {
    const auto [f, r] = Locate(i);
    return f->name() + " record " + std::to_string(r) + " (byte " + std::to_string(f->offset(r)) + ")";
  }

  Status OpenFiles(const std::vector<int64_t>& files);
  Status SettleClasses(const std::vector<int64_t>& files);
  Status SettleShape();

 private:
  std::pair<const RecordFile*, int64_t> Locate(int64_t i) const {
    const size_t k = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), i) - starts_.begin()) - 1;
    return {files_[k].get(), i - starts_[k]};
  }
  // Record r of f, parsed (the calling thread's message).
  static StatusOr<const tensorflow::Example*> ParseRecord(const RecordFile& f, int64_t r);
  // "name: byte N: record r: <s's message>", s's code, about kData.
  static Status At(const RecordFile& f, int64_t r, const Status& s) {
    return Status(s.code(), f.name() + ": byte " + std::to_string(f.offset(r)) + ": record " + std::to_string(r) +
                                ": " + s.message())
        .About(Subject::kData);
  }
  StatusOr<int64_t> CheckLabel(int64_t v) const;
  StatusOr<int64_t> LabelOf(const tensorflow::Example& ex) const;
  // features.label with a shape: its label_size() values into out (float targets as their
  // float32 bits); the largest integer label into *max (when not null).
  bool shaped() const { return !s_.label_shape.empty(); }
  Status LabelsOf(const tensorflow::Example& ex, int32_t* out, int64_t* max) const;
  // The image from one bytes value (raw_uint8 or encoded), or from `count` little-endian
  // floats at `floats` (which need not be aligned).
  Status FillBytes(std::string_view bytes, float* x) const;
  Status FillFloats(const char* floats, size_t count, float* x) const;
  Status FillImage(const tensorflow::Example& ex, float* x) const;
  // The fast path (tfrecord/example_scan.h): false when the record is not in the
  // scanned form or its features not of the expected kinds; the protobuf path then
  // reads it (and words any error).
  bool FastRead(std::string_view record, float* x, int32_t* label, Status* status) const;
  bool FastLabel(std::string_view record, int64_t* label) const;
  StatusOr<int32_t> LabelAt(const RecordFile& f, int64_t r) const;

  TfRecordSpec s_;
  const std::string keys_[2];  // image key, label key: what the fast path looks for
  ExampleSpec spec_;
  std::vector<std::unique_ptr<RecordFile>> files_;
  std::vector<int64_t> starts_{0};  // example index of each file's first record; then the total
  std::vector<int32_t> labels_;     // every example's label when the scan for num_classes read them
  int height_ = 0, width_ = 0, channels_ = 0;  // encoded images: the output size
  bool resize_ = false;                        // image_size was given
};

StatusOr<const tensorflow::Example*> TfRecordSource::ParseRecord(const RecordFile& f, int64_t r) {
  RT_ASSIGN_OR_RETURN(const std::string_view bytes, f.Read(r));  // the CRC again: errors come rarely
  auto ex = tfrecord::ParseExample(bytes);
  if (!ex.ok()) return At(f, r, ex.status());
  return *ex;
}

StatusOr<int64_t> TfRecordSource::LabelOf(const tensorflow::Example& ex) const {
  RT_ASSIGN_OR_RETURN(const tensorflow::Feature* feat, tfrecord::FindFeature(ex, s_.label_key));
  if (!feat->has_int64_list()) {
    return DataLossError("feature \"" + s_.label_key + "\" is " + tfrecord::FeatureKind(*feat) +
                         "; a label must be an int64_list (class indices)");
  }
  if (feat->int64_list().value_size() == 0) return DataLossError("feature \"" + s_.label_key + "\" has no value");
  return CheckLabel(feat->int64_list().value(0));
}

Status TfRecordSource::LabelsOf(const tensorflow::Example& ex, int32_t* out, int64_t* max) const {
  RT_ASSIGN_OR_RETURN(const tensorflow::Feature* feat, tfrecord::FindFeature(ex, s_.label_key));
  const size_t n = spec_.label_size();
  const std::string& key = s_.label_key;
  if (s_.label_float) {
    if (!feat->has_float_list()) {
      return DataLossError("feature \"" + key + "\" is " + tfrecord::FeatureKind(*feat) +
                           "; features.label.dtype \"float32\" needs a float_list");
    }
    const auto& v = feat->float_list().value();
    if (static_cast<size_t>(v.size()) != n) {
      return DataLossError("feature \"" + key + "\" has " + std::to_string(v.size()) + " floats but features.label.shape "
                           "needs " + std::to_string(n));
    }
    for (size_t k = 0; k < n; ++k) {
      if (!std::isfinite(v[static_cast<int>(k)])) {
        return DataLossError("feature \"" + key + "\" value " + std::to_string(k) + " is not finite; float targets "
                             "must be finite");
      }
      std::memcpy(&out[k], &v[static_cast<int>(k)], sizeof(float));
    }
    return Status::Ok();
  }
  if (!feat->has_int64_list()) {
    return DataLossError("feature \"" + key + "\" is " + tfrecord::FeatureKind(*feat) +
                         "; features.label.dtype \"int64\" needs an int64_list");
  }
  const auto& v = feat->int64_list().value();
  if (static_cast<size_t>(v.size()) != n) {
    return DataLossError("feature \"" + key + "\" has " + std::to_string(v.size()) + " values but features.label.shape "
                         "needs " + std::to_string(n));
  }
  for (size_t k = 0; k < n; ++k) {
    RT_ASSIGN_OR_RETURN(const int64_t label, CheckLabel(v[static_cast<int>(k)]));
    out[k] = static_cast<int32_t>(label);
    if (max != nullptr) *max = std::max(*max, label);
  }
  return Status::Ok();
}

StatusOr<int64_t> TfRecordSource::CheckLabel(int64_t v) const {
  if (v < 0) return DataLossError("label " + std::to_string(v) + " is negative; labels are class indices");
  if (spec_.num_classes > 0 && v >= spec_.num_classes) {
    return DataLossError("label " + std::to_string(v) + " is not below num_classes " +
                         std::to_string(spec_.num_classes) + " (features.label.num_classes)");
  }
  if (v >= kMaxInferredClasses) {
    return DataLossError("label " + std::to_string(v) + " is not below 2^20 (corrupt, or not a class index)");
  }
  return v;
}

Status TfRecordSource::FillFloats(const char* floats, size_t count, float* x) const {
  const size_t n = spec_.size();
  if (count != n) {
    return DataLossError("feature \"" + s_.image_key + "\" has " + std::to_string(count) +
                         " floats but shape needs " + std::to_string(n) + " (check features.image.shape)");
  }
  std::memcpy(x, floats, n * sizeof(float));  // little-endian on the wire, as on the hosts ringtrain runs on
  if (s_.rescale) {
    const float r = *s_.rescale;
    for (size_t p = 0; p < n; ++p) x[p] *= r;
  }
  return Status::Ok();
}

Status TfRecordSource::FillBytes(std::string_view bytes, float* x) const {
  const std::string& key = s_.image_key;
  const size_t n = spec_.size();
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  if (s_.encoding == Encoding::kRawUint8) {
    if (bytes.size() != n) {
      return DataLossError("feature \"" + key + "\" has " + std::to_string(bytes.size()) +
                           " bytes but shape needs " + std::to_string(n) + " (check features.image.shape)");
    }
    if (s_.rescale) {
      const float r = *s_.rescale;
      for (size_t p = 0; p < n; ++p) x[p] = data[p] * r;
    } else {
      for (size_t p = 0; p < n; ++p) x[p] = data[p] / 255.f;  // as the mnist_idx source: bit for bit
    }
    return Status::Ok();
  }
  const image::Codec codec = image::SniffCodec(data, bytes.size());
  if ((s_.encoding == Encoding::kJpeg && codec != image::Codec::kJpeg) ||
      (s_.encoding == Encoding::kPng && codec != image::Codec::kPng)) {
    return DataLossError("feature \"" + key + "\" is not a " + (s_.encoding == Encoding::kJpeg ? "JPEG" : "PNG") +
                         " image (it looks like " +
                         (codec == image::Codec::kUnknown ? std::string("no image format") : image::CodecName(codec)) +
                         "); set features.image.encoding to \"auto\" or to what the records hold");
  }
  auto img = image::Decode(data, bytes.size(), channels_, resize_ ? height_ : 0, resize_ ? width_ : 0);
  if (!img.ok()) return img.status().WithContext("feature \"" + key + "\"");
  if (!resize_ && (img->height != height_ || img->width != width_)) {
    return DataLossError("feature \"" + key + "\" is a " + std::to_string(img->height) + "x" +
                         std::to_string(img->width) + " image but the source's images are " +
                         std::to_string(height_) + "x" + std::to_string(width_) +
                         "; give image_size to resize them all to one size");
  }
  image::Resize(*img, height_, width_, s_.interpolation, s_.crop_to_aspect_ratio, x);
  if (s_.rescale) {
    const float r = *s_.rescale;
    for (size_t p = 0; p < n; ++p) x[p] *= r;
  }
  return Status::Ok();
}

Status TfRecordSource::FillImage(const tensorflow::Example& ex, float* x) const {
  RT_ASSIGN_OR_RETURN(const tensorflow::Feature* feat, tfrecord::FindFeature(ex, s_.image_key));
  const std::string& key = s_.image_key;
  if (s_.encoding == Encoding::kFloat) {
    if (!feat->has_float_list()) {
      return DataLossError("feature \"" + key + "\" is " + tfrecord::FeatureKind(*feat) +
                           "; encoding \"float\" needs a float_list");
    }
    const auto& v = feat->float_list().value();
    return FillFloats(reinterpret_cast<const char*>(v.data()), static_cast<size_t>(v.size()), x);
  }
  if (!feat->has_bytes_list()) {
    return DataLossError("feature \"" + key + "\" is " + tfrecord::FeatureKind(*feat) + "; encoding \"" +
                         EncodingName(s_.encoding) + "\" needs a bytes_list");
  }
  if (feat->bytes_list().value_size() != 1) {
    return DataLossError("feature \"" + key + "\" holds " + std::to_string(feat->bytes_list().value_size()) +
                         " byte strings; expected 1");
  }
  return FillBytes(feat->bytes_list().value(0), x);
}

bool TfRecordSource::FastRead(std::string_view record, float* x, int32_t* label, Status* status) const {
  using Kind = tfrecord::ScannedFeature::Kind;
  tfrecord::ScannedFeature f[2];
  if (!tfrecord::ScanExample(record, keys_, 2, f)) return false;
  const tfrecord::ScannedFeature& img = f[0];
  const tfrecord::ScannedFeature& lab = f[1];
  if (lab.kind != Kind::kInt64 || lab.count < 1) return false;
  if (s_.encoding == Encoding::kFloat ? (img.kind != Kind::kFloat || img.floats == nullptr)
                                      : (img.kind != Kind::kBytes || img.count != 1)) {
    return false;
  }
  *status = s_.encoding == Encoding::kFloat ? FillFloats(img.floats, static_cast<size_t>(img.count), x)
                                            : FillBytes(img.bytes, x);
  if (!status->ok()) return true;
  auto v = CheckLabel(lab.first_int);
  if (!v.ok()) {
    *status = v.status();
    return true;
  }
  *label = static_cast<int32_t>(*v);
  return true;
}

bool TfRecordSource::FastLabel(std::string_view record, int64_t* label) const {
  tfrecord::ScannedFeature f;
  if (!tfrecord::ScanExample(record, &keys_[1], 1, &f)) return false;
  if (f.kind != tfrecord::ScannedFeature::Kind::kInt64 || f.count < 1) return false;
  auto v = CheckLabel(f.first_int);
  if (!v.ok()) return false;  // the protobuf path words the error
  *label = *v;
  return true;
}

Status TfRecordSource::Read(int64_t i, float* x, int32_t* label) const {
  const auto [f, r] = Locate(i);
  RT_ASSIGN_OR_RETURN(const std::string_view record, f->Read(r));
  Status st;
  if (!shaped() && FastRead(record, x, label, &st)) return st.ok() ? st : At(*f, r, st);
  RT_ASSIGN_OR_RETURN(const tensorflow::Example* ex, ParseRecord(*f, r));
  st = FillImage(*ex, x);
  if (!st.ok()) return At(*f, r, st);
  if (shaped()) {
    st = LabelsOf(*ex, label, nullptr);
    return st.ok() ? st : At(*f, r, st);
  }
  auto v = LabelOf(*ex);
  if (!v.ok()) return At(*f, r, v.status());
  *label = static_cast<int32_t>(*v);
  return Status::Ok();
}

StatusOr<int32_t> TfRecordSource::LabelAt(const RecordFile& f, int64_t r) const {
  RT_ASSIGN_OR_RETURN(const std::string_view record, f.Read(r));
  int64_t fast;
  if (!shaped() && FastLabel(record, &fast)) return static_cast<int32_t>(fast);
  RT_ASSIGN_OR_RETURN(const tensorflow::Example* ex, ParseRecord(f, r));
  if (shaped()) {  // the first of the example's labels
    std::vector<int32_t> labels(spec_.label_size());
    const Status st = LabelsOf(*ex, labels.data(), nullptr);
    if (!st.ok()) return At(f, r, st);
    return labels[0];
  }
  auto v = LabelOf(*ex);
  if (!v.ok()) return At(f, r, v.status());
  return static_cast<int32_t>(*v);
}

StatusOr<int32_t> TfRecordSource::Label(int64_t i) const {
  if (!labels_.empty()) return labels_[static_cast<size_t>(i)];
  const auto [f, r] = Locate(i);
  return LabelAt(*f, r);
}

Status TfRecordSource::OpenFiles(const std::vector<int64_t>& files) {
  const tfrecord::RecordFileOptions options{s_.compression};
  for (int64_t j : files) {
    if (j < 0 || j >= static_cast<int64_t>(s_.paths.size())) {
      return InternalError(s_.field + ": file index " + std::to_string(j) + " out of range");
    }
    RT_ASSIGN_OR_RETURN(auto f, RecordFile::Open(s_.paths[j], s_.names[j], options));
    starts_.push_back(starts_.back() + f->size());
    files_.push_back(std::move(f));
  }
  return Status::Ok();
}

// num_classes as given, or the largest label + 1 over all the source's files (so every
// worker agrees whichever files it reads), keeping the opened files' labels.
Status TfRecordSource::SettleClasses(const std::vector<int64_t>& files) {
  if (s_.num_classes) {
    spec_.num_classes = *s_.num_classes;
    return Status::Ok();
  }
  if (s_.label_float) return Status::Ok();  // targets, not classes
  if (shaped()) {
    // The largest of every example's labels, over all the source's files.
    int64_t max_label = -1;
    std::vector<int32_t> labels(spec_.label_size());
    for (int64_t j = 0; j < static_cast<int64_t>(s_.paths.size()); ++j) {
      RT_ASSIGN_OR_RETURN(auto f, RecordFile::Open(s_.paths[j], s_.names[j], {s_.compression}));
      for (int64_t r = 0; r < f->size(); ++r) {
        RT_ASSIGN_OR_RETURN(const tensorflow::Example* ex, ParseRecord(*f, r));
        const Status st = LabelsOf(*ex, labels.data(), &max_label);
        if (!st.ok()) return At(*f, r, st);
      }
    }
    if (max_label < 0) {
      return DataLossError(s_.field + ": the files hold no records, so num_classes cannot be inferred")
          .About(Subject::kData);
    }
    spec_.num_classes = static_cast<int>(max_label + 1);
    return Status::Ok();
  }
  int64_t max_label = -1;
  labels_.reserve(static_cast<size_t>(size()));
  for (int64_t j = 0; j < static_cast<int64_t>(s_.paths.size()); ++j) {
    const auto opened = std::find(files.begin(), files.end(), j);
    std::unique_ptr<RecordFile> other;
    const RecordFile* f;
    if (opened != files.end()) {
      f = files_[static_cast<size_t>(opened - files.begin())].get();
    } else {
      RT_ASSIGN_OR_RETURN(other, RecordFile::Open(s_.paths[j], s_.names[j], {s_.compression}));
      f = other.get();
    }
    for (int64_t r = 0; r < f->size(); ++r) {
      RT_ASSIGN_OR_RETURN(const int32_t v, LabelAt(*f, r));
      max_label = std::max<int64_t>(max_label, v);
      if (opened != files.end()) labels_.push_back(v);
    }
  }
  if (max_label < 0) {
    return DataLossError(s_.field + ": the files hold no records, so num_classes cannot be inferred")
        .About(Subject::kData);
  }
  spec_.num_classes = static_cast<int>(max_label + 1);
  // labels_ was filled file by file in index order; the files were opened in `files`
  // order, which is ascending (source.h), so the two agree.
  return Status::Ok();
}

Status TfRecordSource::SettleShape() {
  if (!s_.encoded()) {
    spec_.shape = s_.shape;
    return Status::Ok();
  }
  channels_ = s_.channels ? s_.channels : (s_.shape.empty() ? 3 : s_.shape[2]);  // Keras' default "rgb"
  if (s_.image_height > 0) {
    height_ = s_.image_height;
    width_ = s_.image_width;
    resize_ = true;
  } else if (!s_.shape.empty()) {
    height_ = s_.shape[0];
    width_ = s_.shape[1];
  } else {
    // The size of the first image of the source's first file, whichever files this
    // worker reads, so that every worker settles on the same shape.
    RT_ASSIGN_OR_RETURN(auto first, RecordFile::Open(s_.paths[0], s_.names[0], {s_.compression}));
    if (first->size() == 0) {
      return DataLossError(s_.names[0] + ": holds no records; give image_size or features.image.shape")
          .About(Subject::kData);
    }
    RT_ASSIGN_OR_RETURN(const tensorflow::Example* ex, ParseRecord(*first, 0));
    auto feat = tfrecord::FindFeature(*ex, s_.image_key);
    if (!feat.ok()) return At(*first, 0, feat.status());
    if (!(*feat)->has_bytes_list() || (*feat)->bytes_list().value_size() != 1) {
      return At(*first, 0, DataLossError("feature \"" + s_.image_key + "\" is not one encoded image (a bytes_list of 1)"));
    }
    const std::string& b = (*feat)->bytes_list().value(0);
    auto info = image::ReadInfo(reinterpret_cast<const uint8_t*>(b.data()), b.size());
    if (!info.ok()) return At(*first, 0, info.status().WithContext("feature \"" + s_.image_key + "\""));
    height_ = info->height;
    width_ = info->width;
  }
  spec_.shape = {height_, width_, channels_};
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<Source>> OpenTfRecordSource(const TfRecordSpec& spec, const std::vector<int64_t>& files) {
  if (!std::is_sorted(files.begin(), files.end())) {
    return InternalError(spec.field + ": files must be opened in ascending order");
  }
  auto source = std::make_unique<TfRecordSource>(spec);
  RT_RETURN_IF_ERROR(source->OpenFiles(files));
  RT_RETURN_IF_ERROR(source->SettleClasses(files));
  RT_RETURN_IF_ERROR(source->SettleShape());
  return std::unique_ptr<Source>(std::move(source));
}

}  // namespace ringtrain::data
