// Sources that decode examples on demand: image folders, TFRecord files, NumPy arrays,
// Keras' datasets, and (wrapped) the in-memory MNIST IDX and synthetic sources. A job's
// "train"/"eval" entry is parsed into a SourceFormat (cheap: it lists files, reads no
// example), sharded (shard.h), and the worker's files opened as one Source that the input
// pipeline (pipeline.h) reads from several threads.
//
// Labels: always class indices in [0, num_classes). label_mode "categorical" (Keras'
// one-hot labels) is recorded in ExampleSpec::categorical: a one-hot vector over
// num_classes holds exactly the information of its index, and the loss
// (categorical_crossentropy) takes the index.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace ringtrain::data {

// What one example is, after decoding.
struct ExampleSpec {
  std::vector<int> shape;                // channels last: {h, w, c} for images, {28, 28} for MNIST
  int num_classes = 0;                   // labels are in [0, num_classes)
  std::vector<std::string> class_names;  // index -> name, when the source has names (image folders)
  bool categorical = false;              // label_mode "categorical"
  // Labels per example: empty for one class index per example; {h, w} for a mask of one
  // class index per pixel (an image folder with "masks").
  std::vector<int> label_shape;
  // The labels are float targets (npz/npy "y" of a float dtype: regression, soft
  // targets), each label word holding a float32's bits; num_classes is then 0.
  bool float_targets = false;
  // A source that names its arrays for a model's several inputs or outputs (npz/npy "x"
  // and "y" as objects): each named part's per-example shape and where it sits in the
  // example's row (inputs: in `shape`'s floats; targets: in the labels), in the order of
  // the names. `shape` and `label_shape` are then one axis, the row. Empty otherwise.
  struct Part {
    std::string name;
    std::vector<int> shape;
    size_t offset = 0;
    size_t size = 0;
    int num_classes = 0;  // a target's: its largest label + 1 (or the source's num_classes)
    bool float_targets = false;  // a target's labels are float targets (below)
  };
  std::vector<Part> inputs, targets;
  size_t size() const {  // floats per example
    size_t n = 1;
    for (int d : shape) n *= static_cast<size_t>(d);
    return n;
  }
  size_t label_size() const {  // labels per example
    size_t n = 1;
    for (int d : label_shape) n *= static_cast<size_t>(d);
    return n;
  }
};

// The examples of some opened files, 0..size()-1, file by file in the order they were
// opened. Thread-safe: Read and Label may be called from several threads at once.
class Source {
 public:
  virtual ~Source() = default;
  virtual const ExampleSpec& spec() const = 0;
  virtual int64_t size() const = 0;
  // Decodes example i (0 <= i < size()) into x[spec().size()] floats and
  // label[spec().label_size()] class indices.
  // DATA_LOSS about Subject::kData, naming the file (and for records the byte offset),
  // for data that cannot be decoded. Blocks on file reads.
  virtual Status Read(int64_t i, float* x, int32_t* label) const = 0;
  // The label of example i alone (for counts and checks; cheaper than Read where the
  // format allows; a per-pixel source gives its first pixel's). Errors as Read.
  virtual StatusOr<int32_t> Label(int64_t i) const = 0;
  // Where example i lives, for messages and `data inspect`: "cat/001.jpg",
  // "train-00003-of-00010.tfrecord record 17 (byte 40960)", "x_train[17]".
  virtual std::string Where(int64_t i) const = 0;
  // True when Read is a copy from memory (nothing to decode): the pipeline then reads
  // on the training thread instead of its pool.
  virtual bool in_memory() const { return false; }
};

// A source entry of the job, parsed and validated; nothing read but directory listings,
// globs and file headers the format needs to count its files.
class SourceFormat {
 public:
  virtual ~SourceFormat() = default;
  // "image_folder", "tfrecord", ...
  virtual std::string format() const = 0;
  // The source's files in order: FILE sharding gives file j to worker j mod n. An image
  // folder's files are its images, a TFRecord source's its record files, an npz/npy source
  // has 1.
  virtual int64_t num_files() const = 0;
  // A file's name for messages and `data inspect` (relative to the source's directory
  // where it has one).
  virtual std::string FileName(int64_t f) const = 0;
  // Opens files `files` (ascending indices into 0..num_files()-1) as one Source, their
  // examples concatenated in that order. NOT_FOUND / DATA_LOSS about kData naming the
  // file for what cannot be read; a keras_dataset downloads here.
  virtual StatusOr<std::unique_ptr<Source>> Open(const std::vector<int64_t>& files) const = 0;
};

// Parsers of one format each: `s` is the source entry (an object whose "format" names the
// format), `field` where it is in the job ("data.train"). Each accepts, besides its own
// keys, "format", "first" and "count" (read by shard.cc), and rejects unknown keys naming
// them. INVALID_ARGUMENT about kConfig for a bad entry; NOT_FOUND / DATA_LOSS about kData
// for a directory or file that is missing or unreadable when listing needs it.
// Relative paths resolve against base_dir.
StatusOr<std::unique_ptr<SourceFormat>> ParseImageFolder(const nlohmann::json& s, const std::string& base_dir,
                                                         const std::string& field);  // image_folder.cc
StatusOr<std::unique_ptr<SourceFormat>> ParseTfRecord(const nlohmann::json& s, const std::string& base_dir,
                                                      const std::string& field);  // tfrecord_source.cc
StatusOr<std::unique_ptr<SourceFormat>> ParseNumpy(const nlohmann::json& s, const std::string& base_dir,
                                                   const std::string& field);  // numpy_source.cc ("npz", "npy")
StatusOr<std::unique_ptr<SourceFormat>> ParseKerasDataset(const nlohmann::json& s, const std::string& base_dir,
                                                          const std::string& field);  // keras_dataset.cc

}  // namespace ringtrain::data
