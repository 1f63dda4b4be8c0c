// Reading whole files, with errors converted to Status at this edge.
#pragma once

#include <string>

#include "common/status.h"

namespace ringtrain {

// The file's bytes. NOT_FOUND names a missing path; other errors carry errno's text.
StatusOr<std::string> ReadFile(const std::string& path);

}  // namespace ringtrain
