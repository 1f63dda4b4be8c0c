# CUDA + NCCL detection for ringtrain_collective (included from this folder's
# CMakeLists.txt). RINGTRAIN_CUDA (top-level option): AUTO uses them when found,
# ON fails the configure when they are not, OFF does not look.
#
# Only the CUDA runtime API and NCCL are used, from plain C++: no nvcc, no
# enable_language(CUDA). Both libraries are linked by full path, so CMake's build
# RPATH lets the binaries find them without LD_LIBRARY_PATH. Neither needs a GPU
# driver to load; without one, CUDA calls fail at run time and the GPU path is off.
#
# Sets RINGTRAIN_HAVE_NCCL (TRUE/FALSE) and, when TRUE, RINGTRAIN_NCCL_INCLUDE_DIR
# and RINGTRAIN_NCCL_LIBRARY.

set_property(CACHE RINGTRAIN_CUDA PROPERTY STRINGS AUTO ON OFF)
string(TOUPPER "${RINGTRAIN_CUDA}" _rt_cuda_mode)
if(NOT _rt_cuda_mode MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "RINGTRAIN_CUDA must be AUTO, ON or OFF, got '${RINGTRAIN_CUDA}'")
endif()

set(RINGTRAIN_HAVE_NCCL FALSE)
if(_rt_cuda_mode STREQUAL "OFF")
  message(STATUS "ringtrain: CUDA/NCCL off (RINGTRAIN_CUDA=OFF): collectives are RING only")
  return()
endif()

# The default toolkit location, used only when CMake's own search (nvcc on PATH,
# CUDA_PATH, CUDAToolkit_ROOT) finds nothing.
if(NOT DEFINED CUDAToolkit_ROOT AND NOT DEFINED ENV{CUDAToolkit_ROOT} AND EXISTS /usr/local/cuda)
  set(CUDAToolkit_ROOT /usr/local/cuda)
endif()
find_package(CUDAToolkit QUIET)

set(_rt_cuda_missing "")
if(CUDAToolkit_FOUND)
  # NCCL ships with the toolkit on some machines (lib/ rather than lib64/), in the
  # system directories on others (libnccl-dev), or at NCCL_ROOT / NCCL_HOME.
  set(_rt_nccl_hints $ENV{NCCL_ROOT} $ENV{NCCL_HOME} ${NCCL_ROOT} ${CUDAToolkit_LIBRARY_ROOT}
                     ${CUDAToolkit_TARGET_DIR} /usr/local/cuda)
  find_path(RINGTRAIN_NCCL_INCLUDE_DIR nccl.h HINTS ${_rt_nccl_hints} ${CUDAToolkit_INCLUDE_DIRS}
            PATH_SUFFIXES include)
  find_library(RINGTRAIN_NCCL_LIBRARY nccl HINTS ${_rt_nccl_hints} ${CUDAToolkit_LIBRARY_DIR}
               PATH_SUFFIXES lib lib64)
  if(NOT RINGTRAIN_NCCL_INCLUDE_DIR OR NOT RINGTRAIN_NCCL_LIBRARY)
    set(_rt_cuda_missing "NCCL (nccl.h and libnccl; set NCCL_ROOT to its install prefix)")
  endif()
else()
  set(_rt_cuda_missing "the CUDA toolkit (set CUDAToolkit_ROOT, e.g. /usr/local/cuda)")
endif()

if(_rt_cuda_missing)
  if(_rt_cuda_mode STREQUAL "ON")
    message(FATAL_ERROR "RINGTRAIN_CUDA=ON but ${_rt_cuda_missing} was not found; "
                        "install it, point CMake at it, or configure with -DRINGTRAIN_CUDA=AUTO or OFF")
  endif()
  message(STATUS "ringtrain: ${_rt_cuda_missing} not found: building without NCCL (collectives are RING only)")
  return()
endif()

set(_rt_nccl_version "")
file(STRINGS "${RINGTRAIN_NCCL_INCLUDE_DIR}/nccl.h" _rt_nccl_defines
     REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) +[0-9]+")
foreach(_rt_line IN LISTS _rt_nccl_defines)
  string(REGEX MATCH "[0-9]+$" _rt_num "${_rt_line}")
  list(APPEND _rt_nccl_version ${_rt_num})
endforeach()
list(JOIN _rt_nccl_version "." _rt_nccl_version)

set(RINGTRAIN_HAVE_NCCL TRUE)
message(STATUS "ringtrain: NCCL ${_rt_nccl_version} (${RINGTRAIN_NCCL_LIBRARY}) with CUDA runtime "
               "${CUDAToolkit_VERSION} (${CUDAToolkit_LIBRARY_DIR}): the NCCL backend is built")
