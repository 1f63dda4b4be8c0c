// Hand-encoded tensorflow.Event protobufs, enough for TensorBoard's scalar dashboard:
//   Event   { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; }
//   Summary { repeated Value value = 1; }
//   Value   { string tag = 1; float simple_value = 2; }
// Encoding by hand keeps protobuf out of the library's dependencies; the output is the
// canonical proto3 serialization (zero-valued scalars omitted, simple_value always written
// because it sits in a oneof in TensorFlow's summary.proto).
// Pure functions; safe to call from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ringtrain::summary {

// What the first record of every event file says; TensorBoard checks it.
inline constexpr char kFileVersion[] = "brain.Event:2";

using Scalars = std::vector<std::pair<std::string, float>>;

// An Event holding only wall_time and file_version (step 0).
std::string EncodeFileVersionEvent(double wall_time, const std::string& file_version = kFileVersion);

// An Event with one Summary holding one simple_value Value per entry, in order.
std::string EncodeScalarEvent(double wall_time, int64_t step, const Scalars& values);

}  // namespace ringtrain::summary
