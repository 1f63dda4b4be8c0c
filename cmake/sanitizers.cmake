# Sanitizer and fuzzing builds (included from the top-level CMakeLists.txt);
# docs/dev/fuzzing-and-sanitizers.md has the commands.
#
# RINGTRAIN_SANITIZE: a -fsanitize= list for every target, e.g. "address,undefined" or
#   "thread" (they cannot be combined). Build it in its own directory (build-tsan;
#   tests/sanitize.sh builds ASan+UBSan with RINGTRAIN_FUZZ instead, in build-asan)
#   with -DRINGTRAIN_CUDA=OFF: the CUDA runtime and NCCL are uninstrumented binaries
#   that ASan's shadow memory and TSan's thread tracking do not cover, and these
#   machines have no GPU to run them anyway. UBSan findings abort the process
#   (-fno-sanitize-recover), so they fail the test that triggers them.
#   float-cast-overflow (a double too large for the integer it is converted to: the
#   family of bugs 1e30 or 1e400 in a job file leads to) is added: gcc leaves it out
#   of "undefined" (clang counts it in).
# RINGTRAIN_FUZZ: the libFuzzer targets of tests/fuzz, built with clang (Debian's
#   clang-14 and libclang-rt-14-dev): every target compiled with
#   -fsanitize=fuzzer-no-link,address,undefined,float-cast-overflow, the fuzz targets
#   linked with -fsanitize=fuzzer, the tests with ASan+UBSan alone, so one build
#   (tests/sanitized_build.sh: build-asan) serves the fuzzers and tests/sanitize.sh.
set(RINGTRAIN_SANITIZE "" CACHE STRING "Sanitizers for every target: address,undefined or thread (empty: none)")
option(RINGTRAIN_FUZZ "Build the libFuzzer targets of tests/fuzz (needs clang)" OFF)

set(_rt_sanitize_flags "")
if(RINGTRAIN_SANITIZE)
  if(RINGTRAIN_SANITIZE MATCHES "thread" AND RINGTRAIN_SANITIZE MATCHES "address")
    message(FATAL_ERROR "RINGTRAIN_SANITIZE: thread and address cannot be combined; build them separately")
  endif()
  list(APPEND _rt_sanitize_flags -fsanitize=${RINGTRAIN_SANITIZE} -fno-omit-frame-pointer)
  if(RINGTRAIN_SANITIZE MATCHES "undefined")
    list(APPEND _rt_sanitize_flags -fno-sanitize-recover=undefined -fsanitize=float-cast-overflow
         -fno-sanitize-recover=float-cast-overflow)
  endif()
endif()
if(RINGTRAIN_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "RINGTRAIN_FUZZ=ON needs clang: cmake -S . -B build-asan -DCMAKE_CXX_COMPILER=clang++-14 "
                        "-DRINGTRAIN_FUZZ=ON -DRINGTRAIN_CUDA=OFF (or tests/sanitized_build.sh address,undefined)")
  endif()
  if(RINGTRAIN_SANITIZE)
    message(FATAL_ERROR "RINGTRAIN_FUZZ already builds with address,undefined; leave RINGTRAIN_SANITIZE empty")
  endif()
  list(APPEND _rt_sanitize_flags -fsanitize=fuzzer-no-link,address,undefined,float-cast-overflow
       -fno-sanitize-recover=undefined,float-cast-overflow -fno-omit-frame-pointer)
endif()
foreach(_rt_flag IN LISTS _rt_sanitize_flags)
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:${_rt_flag}>)
endforeach()
if(RINGTRAIN_SANITIZE)
  add_link_options(-fsanitize=${RINGTRAIN_SANITIZE})
elseif(RINGTRAIN_FUZZ)
  add_link_options(-fsanitize=address,undefined)
endif()
