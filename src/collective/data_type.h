// The element types a collective moves, as NCCL's ncclDataType_t and Gloo's templates:
// every collective takes one, so nothing travels smuggled through floats.
//
// Reduction semantics (every backend): kSum adds element-wise; on integer types it wraps
// modulo 2^bits as NCCL's does (int32/int64 in two's complement, uint8 at 256), so the
// result is exact and the same on every rank. kMean is defined for float32 and float64
// only (the sum divided by the number of ranks); on integer types it is INVALID_ARGUMENT.
//
// The numeric values travel in collective headers (ring) and op descriptors (shared
// memory): never renumber them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace ringtrain::collective {

enum class DataType : uint8_t { kFloat32 = 1, kFloat64 = 2, kInt32 = 3, kInt64 = 4, kUint8 = 5 };

// True for the five values above; false for anything else a cast could produce.
constexpr bool IsKnownDataType(DataType type) {
  return type == DataType::kFloat32 || type == DataType::kFloat64 || type == DataType::kInt32 ||
         type == DataType::kInt64 || type == DataType::kUint8;
}

// Bytes per element; 0 for an unknown type.
constexpr size_t DataTypeSize(DataType type) {
  switch (type) {
    case DataType::kFloat32: return 4;
    case DataType::kFloat64: return 8;
    case DataType::kInt32: return 4;
    case DataType::kInt64: return 8;
    case DataType::kUint8: return 1;
  }
  return 0;
}

constexpr bool IsFloatingPoint(DataType type) { return type == DataType::kFloat32 || type == DataType::kFloat64; }

// "float32", "float64", "int32", "int64", "uint8" (NumPy's and TensorFlow's names), or
// "unknown" for a value that is none of them.
constexpr const char* DataTypeName(DataType type) {
  switch (type) {
    case DataType::kFloat32: return "float32";
    case DataType::kFloat64: return "float64";
    case DataType::kInt32: return "int32";
    case DataType::kInt64: return "int64";
    case DataType::kUint8: return "uint8";
  }
  return "unknown";
}

// The DataType of a C++ element type, for the typed conveniences on Communicator:
// DataTypeOf<double>() == DataType::kFloat64. Other types do not compile.
template <typename T>
constexpr DataType DataTypeOf() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, float>) {
    return DataType::kFloat32;
  } else if constexpr (std::is_same_v<U, double>) {
    return DataType::kFloat64;
  } else if constexpr (std::is_same_v<U, int32_t>) {
    return DataType::kInt32;
  } else if constexpr (std::is_same_v<U, int64_t>) {
    return DataType::kInt64;
  } else if constexpr (std::is_same_v<U, uint8_t>) {
    return DataType::kUint8;
  } else {
    static_assert(!sizeof(U), "collectives move float, double, int32_t, int64_t or uint8_t elements");
  }
}

}  // namespace ringtrain::collective
