# Build speed, without any change to what is built (included from the top-level
# CMakeLists.txt; docs/dev/build.md has the measurements):
#
# RINGTRAIN_MOLD (ON): link with mold where it is installed (Debian's `mold`;
#   deploy/ringtrain.sh installs it). About 90 test executables link the project's
#   static libraries, gRPC and protobuf; GNU ld spends most of a no-op-compile rebuild
#   there.
# RINGTRAIN_PCH (ON): precompiled headers. Most files of the project include the same
#   standard headers and nlohmann/json (2.4 s of parsing per file on its own), and the
#   tests GoogleTest on top. Three holder targets precompile them once each -- one for
#   the libraries (-fPIC), one for executables (-fPIE) and one for the tests (with
#   GoogleTest) -- and ringtrain_precompile_all() makes every other C++ target reuse the
#   matching one (CMake's REUSE_FROM). A source with its own compile options (the
#   AVX-512 kernels, the files with -ffp-contract=off) or in CUDA keeps its own
#   headers: a precompiled header is only valid under the options it was made with.
# RINGTRAIN_UNITY (ON): unity builds. CMake compiles each target's sources eight at a
#   time as one translation unit, so the headers they share (gRPC, protobuf, the
#   project's own) are parsed and their templates instantiated once per eight files,
#   not once per file. Sources with their own compile options (the AVX-512 kernels,
#   the -ffp-contract=off files) still compile alone, under those options. A file's
#   file-local names (anonymous namespace, static) must therefore differ from those of
#   the other files of its library. An edit recompiles its whole batch; for a day of
#   edits to one library, -DRINGTRAIN_UNITY=OFF rebuilds only the file.
option(RINGTRAIN_MOLD "Link with mold where it is installed" ON)
option(RINGTRAIN_PCH "Precompile the common standard, nlohmann/json and GoogleTest headers" ON)
option(RINGTRAIN_UNITY "Compile each target's sources eight at a time (unity builds)" ON)

if(RINGTRAIN_UNITY)
  set(CMAKE_UNITY_BUILD ON)
  set(CMAKE_UNITY_BUILD_BATCH_SIZE 8)
endif()

# Every C++ file compiles with -pthread, as the targets that link gRPC already do: a
# precompiled header is only valid where -pthread (the macro _REENTRANT it defines)
# is the same, and gcc silently skipped it for those targets while clang refused to
# compile. With glibc the macro changes nothing (_GNU_SOURCE already selects more).
if(RINGTRAIN_PCH)
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-pthread>)
endif()

if(RINGTRAIN_MOLD)
  find_program(RINGTRAIN_MOLD_PATH NAMES ld.mold mold)
  if(RINGTRAIN_MOLD_PATH)
    add_link_options(-fuse-ld=mold)
    message(STATUS "ringtrain: linking with mold (${RINGTRAIN_MOLD_PATH})")
  endif()
endif()

set(RINGTRAIN_PCH_HEADERS
    <algorithm> <atomic> <chrono> <cmath> <cstddef> <cstdint> <cstdio> <cstdlib> <cstring> <filesystem>
    <fstream> <functional> <limits> <map> <memory> <mutex> <optional> <set> <sstream> <string>
    <string_view> <thread> <unordered_map> <utility> <vector> <nlohmann/json.hpp>)

function(_ringtrain_precompile_holders)
  add_library(ringtrain_pch_lib OBJECT ${PROJECT_SOURCE_DIR}/cmake/pch_holder.cc)
  target_link_libraries(ringtrain_pch_lib PRIVATE nlohmann_json::nlohmann_json)
  target_precompile_headers(ringtrain_pch_lib PRIVATE ${RINGTRAIN_PCH_HEADERS})
  add_executable(ringtrain_pch_exe ${PROJECT_SOURCE_DIR}/cmake/pch_holder_main.cc)
  target_link_libraries(ringtrain_pch_exe PRIVATE nlohmann_json::nlohmann_json)
  target_precompile_headers(ringtrain_pch_exe PRIVATE ${RINGTRAIN_PCH_HEADERS})
  if(TARGET GTest::gtest)
    add_executable(ringtrain_pch_test ${PROJECT_SOURCE_DIR}/cmake/pch_holder_main.cc)
    target_link_libraries(ringtrain_pch_test PRIVATE nlohmann_json::nlohmann_json GTest::gtest)
    target_precompile_headers(ringtrain_pch_test PRIVATE ${RINGTRAIN_PCH_HEADERS} <gtest/gtest.h>)
    if(COMMAND ringtrain_test_optimization)
      ringtrain_test_optimization(ringtrain_pch_test)  # the tests' flags (tests/CMakeLists.txt)
    endif()
  endif()
endfunction()

function(_ringtrain_targets_in dir out)
  get_property(_targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(_subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(_sub IN LISTS _subdirs)
    _ringtrain_targets_in(${_sub} _more)
    list(APPEND _targets ${_more})
  endforeach()
  set(${out} ${_targets} PARENT_SCOPE)
endfunction()

# Makes the holders, then every C++ library and executable of the project reuses its
# holder's precompiled headers; call after every target is defined.
function(ringtrain_precompile_all)
  if(NOT RINGTRAIN_PCH)
    return()
  endif()
  _ringtrain_targets_in(${PROJECT_SOURCE_DIR} _targets)
  _ringtrain_precompile_holders()
  foreach(_t IN LISTS _targets)
    if(_t MATCHES "^ringtrain_pch_")
      continue()
    endif()
    get_target_property(_type ${_t} TYPE)
    get_target_property(_sources ${_t} SOURCES)
    get_target_property(_dir ${_t} SOURCE_DIR)
    set(_cxx FALSE)
    foreach(_s IN LISTS _sources)
      get_filename_component(_abs ${_s} ABSOLUTE BASE_DIR ${_dir})
      if(_s MATCHES "\\.cu$")
        set_source_files_properties(${_abs} TARGET_DIRECTORY ${_t} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
        continue()
      endif()
      if(_s MATCHES "\\.(cc|cpp|cxx)$")
        get_source_file_property(_opts ${_abs} TARGET_DIRECTORY ${_t} COMPILE_OPTIONS)
        if(_opts)
          set_source_files_properties(${_abs} TARGET_DIRECTORY ${_t} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
        else()
          set(_cxx TRUE)
        endif()
      endif()
    endforeach()
    if(NOT _cxx)
      continue()
    endif()
    if(_type STREQUAL "STATIC_LIBRARY" OR _type STREQUAL "OBJECT_LIBRARY" OR _type STREQUAL "SHARED_LIBRARY")
      target_precompile_headers(${_t} REUSE_FROM ringtrain_pch_lib)
    elseif(_type STREQUAL "EXECUTABLE")
      get_target_property(_libs ${_t} LINK_LIBRARIES)
      if(TARGET ringtrain_pch_test AND "GTest::gtest" IN_LIST _libs)
        target_precompile_headers(${_t} REUSE_FROM ringtrain_pch_test)
      else()
        target_precompile_headers(${_t} REUSE_FROM ringtrain_pch_exe)
      endif()
    endif()
  endforeach()
endfunction()
