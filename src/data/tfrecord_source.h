// The "tfrecord" source (tf.data.TFRecordDataset + tf.io.parse_single_example of
// tf.train.Example records), inside src/data: the parsed entry (tfrecord_source.cc,
// which also holds ParseTfRecord, source.h) and the Source over opened files
// (tfrecord_examples.cc).
//
//   {"format": "tfrecord", "files": "train-*-of-*.tfrecord" | "a.tfrecord" | [..],
//    "compression_type": "" | "GZIP" | "ZLIB",
//    "features": {"image": {"key": "image/encoded", "encoding": "auto", "shape": [h, w, c]},
//                 "label": {"key": "image/class/label", "num_classes": N}},
//    "image_size": [h, w], "color_mode": "rgb", "interpolation": "bilinear",
//    "crop_to_aspect_ratio": false, "label_mode": "int", "rescale": r,
//    "first": 0, "count": N}
//
// encoding: "jpeg" | "png" | "auto" (any image tf.io.decode_image reads) are decoded
// (image/image.h) to color_mode's channels and resized to image_size when given, keeping
// pixel values in [0, 255] (Keras); without image_size every image must have the size
// of `shape`, or of the first record of the first file. "raw_uint8": a bytes feature of
// h*w*c bytes, scaled x / 255.f; "float": a float_list of h*w*c values, taken as they
// are; both need "shape". "rescale" multiplies every value by r instead. Labels: the
// first value of an int64_list; with features.label "shape" (and "dtype": "int64" or
// "float32") exactly that many values of an int64_list or float_list per example, as
// tf.io.FixedLenFeature reads them (a target per output value, float targets). Without num_classes it is the largest label + 1 over
// ALL the source's files (every worker must build the same model, so a worker that
// reads a few files under FILE sharding still scans all labels once at Open; give
// num_classes to skip the scan).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "data/source.h"
#include "image/image.h"
#include "tfrecord/record_reader.h"

namespace ringtrain::data {

struct TfRecordSpec {
  std::string field;                       // "data.train"
  std::vector<std::string> paths;          // absolute, in source order
  std::vector<std::string> names;          // as messages name them (relative to base_dir when under it)
  tfrecord::Compression compression = tfrecord::Compression::kNone;

  enum class Encoding { kAuto, kJpeg, kPng, kRawUint8, kFloat };
  std::string image_key = "image/encoded";
  Encoding encoding = Encoding::kAuto;
  std::vector<int> shape;                  // as given ("shape"), empty if not
  int image_height = 0, image_width = 0;   // image_size; 0: not given
  int channels = 0;                        // color_mode (1, 3, 4); 0: not given
  image::Interpolation interpolation = image::Interpolation::kBilinear;
  bool crop_to_aspect_ratio = false;

  std::string label_key = "image/class/label";
  std::optional<int> num_classes;
  // features.label.shape / dtype, as tf.io.FixedLenFeature(shape, dtype): several labels
  // per example (an int64_list of exactly that many class indices or integer targets), or
  // float targets (a float_list, dtype "float32"). Empty shape: one int64 class index.
  std::vector<int> label_shape;
  bool label_float = false;
  bool categorical = false;
  std::optional<float> rescale;

  bool encoded() const { return encoding == Encoding::kAuto || encoding == Encoding::kJpeg || encoding == Encoding::kPng; }
};

const char* EncodingName(TfRecordSpec::Encoding e);

// Opens files `files` (indices into spec.paths) as one Source: indexes each file, scans
// labels when num_classes is not given, and settles the example shape. Errors as
// SourceFormat::Open.
StatusOr<std::unique_ptr<Source>> OpenTfRecordSource(const TfRecordSpec& spec, const std::vector<int64_t>& files);

}  // namespace ringtrain::data
