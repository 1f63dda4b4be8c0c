// Shared by the fuzz targets of tests/fuzz: libFuzzer's entry point, and a check that
// crashes (so the fuzzer reports it, and the corpus replay test fails) when a property
// the target asserts does not hold. Each target lives in one <name>_fuzz.cc; it is
// linked either with libFuzzer (-DRINGTRAIN_FUZZ=ON, clang) or with replay_main.cc,
// which runs it over the committed corpus as an ordinary test.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

#define FUZZ_CHECK(cond)                                                         \
  do {                                                                           \
    if (!(cond)) {                                                               \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                              \
    }                                                                            \
  } while (0)
