// Checks and renderings shared by the loaders of weight files (saved_model.h,
// weights_by_name.h). Pure functions; nothing here blocks or throws.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "checkpoint/safetensors.h"
#include "common/status.h"

namespace ringtrain::inference {

// "[3, 3, 1, 4]".
std::string ShapeText(const std::vector<int64_t>& shape);

// DATA_LOSS about Subject::kStorage for the first NaN or infinity in `t`:
// "<source>: tensor '<name>' holds NaN at index i (of n values); <advice>". OK when finite.
Status CheckTensorFinite(const std::string& name, const checkpoint::Tensor& t, const std::string& source,
                         const std::string& advice);

}  // namespace ringtrain::inference
