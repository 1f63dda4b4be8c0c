// Whether this test binary was built with AddressSanitizer (gcc defines
// __SANITIZE_ADDRESS__, clang answers __has_feature). The sanitized builds build the
// ringtrain binary the same way, so a test that bounds the binary's memory, or takes
// every descriptor (UBSan's vptr check then reports falsely), can tell and skip.
#pragma once

namespace ringtrain::testing {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif

}  // namespace ringtrain::testing
