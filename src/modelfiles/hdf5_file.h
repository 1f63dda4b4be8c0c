// A small HDF5 file: the groups, datasets and string attributes that Keras' weight files
// use, over HDF5's C library (Debian libhdf5-dev). Read from a path or from bytes in memory
// (a member of a .keras zip archive), or built in memory and returned as bytes.
//
// Paths are '/'-separated from the root ("layers/dense/vars/0"); a component may hold ':'
// ("dense/kernel:0", Keras 2's names).
//
// Errors: DATA_LOSS naming the object for anything missing or malformed (a file that is not
// HDF5, a missing group or dataset, a dataset of a non-numeric type, more values than the
// budget allows); INTERNAL for a failure to build a file in memory. No Subject is set: the
// callers add the file's path and kStorage. Nothing throws.
//
// Trust: HDF5's C library is not hardened against crafted files. Mutated test files run
// under ASan read without a fault in this code, but libhdf5 1.10.8 itself overran a heap
// buffer (H5HG_read) on a corrupt variable-length string attribute, and asks for huge
// allocations on corrupt sizes (refused by malloc, then an error). Keras writes fixed-length
// strings; read .h5 and .keras files from sources trusted as much as Keras trusts them.
//
// Threading: HDF5's serial library is not thread-safe, so every call into it holds one
// process-wide mutex; an H5File may be used from one thread at a time. Blocking: reads the
// file (disk I/O) for a file opened by path.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/safetensors.h"
#include "common/status.h"

namespace ringtrain::modelfiles {

// The HDF5 signature that begins every HDF5 file (at offset 0 in the files Keras writes).
inline constexpr char kHdf5Magic[] = "\x89HDF\r\n\x1a\n";

class H5File {
 public:
  // Opens a file read-only. `what` names it in errors ("'model.h5'").
  static StatusOr<std::unique_ptr<H5File>> OpenPath(const std::string& path, const std::string& what);
  // Opens an image of a file held in memory (copied), read-only.
  static StatusOr<std::unique_ptr<H5File>> OpenImage(const std::string& bytes, const std::string& what);
  // A new, empty file in memory, for Create*/Write* and then Image().
  static StatusOr<std::unique_ptr<H5File>> CreateInMemory(const std::string& what);
  ~H5File();
  H5File(const H5File&) = delete;
  H5File& operator=(const H5File&) = delete;

  // Whether a group or dataset is at `path` ("" is the root group).
  bool Exists(const std::string& path) const;
  bool IsGroup(const std::string& path) const;
  bool IsDataset(const std::string& path) const;
  // Whether the object at `path` has the attribute `name`.
  bool HasAttribute(const std::string& path, const std::string& name) const;
  // A string attribute (one string, or an array of fixed- or variable-length strings).
  StatusOr<std::vector<std::string>> ReadStrings(const std::string& path, const std::string& name) const;
  // The names of a group's members in HDF5's name order.
  StatusOr<std::vector<std::string>> Members(const std::string& path) const;
  // A dataset of any integer or floating-point type, converted to float32 by HDF5. At most
  // *budget values are read; *budget is decreased by the number read.
  StatusOr<checkpoint::Tensor> ReadFloats(const std::string& path, uint64_t* budget) const;

  // Creates the group at `path` and any missing parents.
  Status CreateGroup(const std::string& path);
  // A float32 dataset (little-endian IEEE) at `path`, whose group must exist.
  Status WriteFloats(const std::string& path, const std::vector<int64_t>& shape, const float* data);
  // The file's bytes (CreateInMemory files only).
  StatusOr<std::string> Image();

 private:
  H5File(int64_t file, std::string what) : file_(file), what_(std::move(what)) {}
  int64_t file_;  // an hid_t
  std::string what_;
};

}  // namespace ringtrain::modelfiles
