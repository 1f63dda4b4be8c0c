// NumPy's .npy format (numpy.lib.format, versions 1.0, 2.0 and 3.0): the magic
// "\x93NUMPY", a version, a little-endian header length, a Python dict literal
// {'descr': '<f4', 'fortran_order': False, 'shape': (N, 28, 28), } and the raw C-order
// elements. Arrays are read memory-mapped (read-only, MAP_PRIVATE) or from a buffer on
// the heap (a deflated npz entry); an NpyArray keeps what it points into alive.
//
// Accepted element types: little-endian (or byte-order-free) bool, signed and unsigned
// integers of 1, 2, 4 and 8 bytes, float32 and float64. Refused, with one line saying what
// to do: big-endian data, object (pickled) and structured dtypes, strings, complex,
// float16, and fortran_order True.
//
// Bounds: every size a header declares is checked (with overflow checks) against the
// bytes actually there before anything is read; no input makes these functions abort,
// read out of bounds or allocate more than the file holds.
//
// Thread-safety: an NpyArray is immutable after Open; its data may be read from any
// number of threads. Errors: NOT_FOUND for a missing file, DATA_LOSS for a malformed or
// truncated array, INVALID_ARGUMENT for a well-formed array of a kind not supported;
// all about Subject::kData and naming the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace ringtrain::numpy {

enum class DType { kBool, kInt8, kUint8, kInt16, kUint16, kInt32, kUint32, kInt64, kUint64, kFloat32, kFloat64 };

size_t ItemSize(DType t);
bool IsInteger(DType t);  // bool counts as an integer type (0/1)
// NumPy's name: "uint8", "float32", ...
const char* DTypeName(DType t);

// Bytes that stay readable as long as some NpyArray points into them: a read-only
// memory mapping of a whole file, or a heap buffer. Destructors unmap/free; never throw.
class Region {
 public:
  virtual ~Region() = default;
  virtual const uint8_t* data() const = 0;
  virtual size_t size() const = 0;
};

// Maps `path` read-only. NOT_FOUND if absent, INVALID_ARGUMENT if not a regular file,
// DATA_LOSS if empty, INTERNAL for other errors (all about kData).
StatusOr<std::shared_ptr<const Region>> MapFile(const std::string& path);
// Wraps an owned buffer.
std::shared_ptr<const Region> HeapRegion(std::string bytes);

struct NpyHeader {
  DType dtype = DType::kUint8;
  std::string descr;           // as written: "<f4"
  std::vector<int64_t> shape;  // () for a scalar
  uint64_t data_offset = 0;    // bytes from the start of the .npy to the first element
  uint64_t num_elements = 0;   // product of shape
  uint64_t data_bytes = 0;     // num_elements * ItemSize(dtype)
};

// Parses the header at the start of `bytes` (an .npy file or npz entry of bytes.size()
// bytes) and checks that exactly data_bytes follow it. `name` names it in errors.
StatusOr<NpyHeader> ParseNpyHeader(std::string_view bytes, const std::string& name);

// "(10000, 28, 28)", as NumPy prints shapes.
std::string ShapeString(const std::vector<int64_t>& shape);

class NpyArray {
 public:
  NpyArray() = default;
  // The array whose .npy bytes are region[offset, offset + size).
  static StatusOr<NpyArray> FromNpyBytes(std::shared_ptr<const Region> region, uint64_t offset, uint64_t size,
                                         const std::string& name);
  // A raw C-order array (no .npy header) of `dtype` and `shape` at region[offset...].
  // INVALID_ARGUMENT (a bug in the caller) if it does not fit.
  static StatusOr<NpyArray> FromRaw(std::shared_ptr<const Region> region, uint64_t offset, DType dtype,
                                    std::vector<int64_t> shape, const std::string& name);

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  uint64_t num_elements() const { return num_elements_; }
  const uint8_t* data() const { return data_; }  // may be unaligned: read with memcpy
  const std::string& name() const { return name_; }
  // Element k converted to double / to int64 (integer and bool types only: an integer
  // too large for int64 (uint64 above 2^63) comes back as -1, which callers reject as negative).
  double AsDouble(uint64_t k) const;
  int64_t AsInt64(uint64_t k) const;

 private:
  std::shared_ptr<const Region> region_;
  const uint8_t* data_ = nullptr;
  DType dtype_ = DType::kUint8;
  std::vector<int64_t> shape_;
  uint64_t num_elements_ = 0;
  std::string name_;
};

// Memory-maps an .npy file.
StatusOr<NpyArray> OpenNpy(const std::string& path);

// The bytes of a version 1.0 .npy file of little-endian float32 `data` (C order) with
// `shape` (product(shape) floats), as numpy.save writes it: the header padded with
// spaces to a multiple of 64 bytes, ending in a newline. What `ringtrain predict
// --output` writes; numpy.load reads it.
std::string EncodeNpyFloat32(const std::vector<int64_t>& shape, const float* data);

}  // namespace ringtrain::numpy
