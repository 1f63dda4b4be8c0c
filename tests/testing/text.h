// Small string checks the tests share.
#pragma once

#include <string_view>

namespace ringtrain::testing {

// Whether `needle` occurs in `haystack`.
inline bool Contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

}  // namespace ringtrain::testing
