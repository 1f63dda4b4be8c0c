// A Source over NumPy-style arrays: x of shape [N, ...] (any C-order shape; each example
// is x[i], shape[1:]) and labels y of shape [N], both read in place (memory-mapped .npy or
// npz entries, or bytes on the heap). Shared by the npz/npy source (numpy_source.cc) and
// keras_dataset (keras_dataset.cc), so the two read arrays the same way.
//
// Values: uint8 x becomes x / 255.f (bit-identical to the mnist_idx source), other types
// are converted to float as they are; "rescale": r multiplies every value by r instead
// (Keras' Rescaling(scale=r)). Labels: integer arrays, each in [0, num_classes).
//
// Thread-safety: the Source is immutable after MakeArraySource; Read/Label from any thread.
#pragma once

#include <memory>
#include <optional>
#include <utility>
#include <vector>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "data/source.h"
#include "numpy/npy.h"

namespace ringtrain::data {

// The keys every array source shares: "num_classes", "label_mode", "rescale".
struct ArrayOptions {
  std::optional<int> num_classes;  // default: max label + 1
  bool categorical = false;        // label_mode "categorical"
  std::optional<float> rescale;
};

// Reads the shared keys of entry `s` (INVALID_ARGUMENT about kConfig naming field.key).
Status ParseArrayOptions(const nlohmann::json& s, const std::string& field, ArrayOptions* out);

// Checks x and y (dtype, shape, equal length, labels non-negative and below num_classes)
// and builds the Source. `where` prefixes Where(i) ("x_train" -> "x_train[17]").
// INVALID_ARGUMENT about kData naming the arrays for a wrong dtype or shape, a length
// mismatch, or a bad label (naming its index).
StatusOr<std::unique_ptr<Source>> MakeArraySource(numpy::NpyArray x, const numpy::NpyArray& y,
                                                  const ArrayOptions& options, const std::string& where);

// Arrays named for a model's inputs and outputs (ExampleSpec::inputs and ::targets): an
// example is the x arrays' rows side by side and its labels the y arrays', each list in
// the order of the names (as given: the caller sorts them). The same checks as above, per
// array, and every array the same length.
using NamedArrays = std::vector<std::pair<std::string, numpy::NpyArray>>;
StatusOr<std::unique_ptr<Source>> MakeNamedArraySource(NamedArrays xs, const NamedArrays& ys,
                                                       const ArrayOptions& options, const std::string& where);

}  // namespace ringtrain::data
